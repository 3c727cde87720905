"""The reference engine of this repository: the oracle every rule is checked against."""
from adapters.base import Adapter


class ReferenceAdapter(Adapter):
    name = "reference"
    install_hint = "pip install -e .  (the reference ships with this repository)"
    devices = ("cpu", "cuda")
    module = "reference"
    runs = ({"label": "reference", "version": None, "install": [], "python": "3.11",
             "required": True},)

    def _import(self):
        import os

        import reference

        if os.environ.get("AUTOGRAD_CONFORMANCE_MUTANT"):  # a planted bug (conformance/mutants)
            from conformance.mutants import activate_from_env

            activate_from_env()
        return reference

    def framework_version(self) -> str:
        import reference

        return str(getattr(reference, "__version__", "unknown"))

    def to_numpy(self, tensor):
        return tensor.detach().numpy()
