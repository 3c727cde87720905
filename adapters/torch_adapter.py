"""PyTorch 2.13: the framework whose observed behaviour most rules were written from."""
from adapters.base import Adapter


class TorchAdapter(Adapter):
    name = "torch"
    install_hint = "pip install torch==2.13.0"
    devices = ("cpu", "cuda")

    def _import(self):
        import torch

        return torch
