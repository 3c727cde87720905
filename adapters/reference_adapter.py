"""The reference engine of this repository: the oracle every rule is checked against."""
from adapters.base import Adapter, FrameworkNotInstalled


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

        mutant = os.environ.get("AUTOGRAD_CONFORMANCE_MUTANT", "").strip()
        if mutant:  # a planted bug (conformance/mutants)
            from conformance import mutants

            if mutant not in mutants.load():
                raise FrameworkNotInstalled(
                    f"AUTOGRAD_CONFORMANCE_MUTANT={mutant!r}: no mutant has this id; list the "
                    f"ids with python -m conformance.mutants --list, or unset the variable")
            mutants.activate_from_env()
        return reference

    def framework_version(self) -> str:
        import reference

        return str(getattr(reference, "__version__", "unknown"))

    def to_numpy(self, tensor):
        return tensor.detach().numpy()
