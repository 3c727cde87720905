"""PyTorch 2.13: the framework whose observed behaviour most rules were written from."""
from adapters.base import Adapter


class TorchAdapter(Adapter):
    name = "torch"
    install_hint = "pip install torch==2.13.0"
    devices = ("cpu", "cuda")
    module = "torch"
    runs = ({"label": "torch", "version": "2.13.0", "install": ["torch==2.13.0"], "python": "3.11",
             "required": True},)

    def _import(self):
        import torch

        return torch

    def check_device(self, device: str) -> None:
        if device == "cuda" and not self.fw.cuda.is_available():
            raise ValueError("adapter 'torch': --device cuda but torch.cuda.is_available() is "
                             "False (a CPU build or no GPU); use --device cpu")
        super().check_device(device)
