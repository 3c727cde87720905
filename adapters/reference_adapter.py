"""The reference engine of this repository: the oracle every rule is checked against."""
from adapters.base import Adapter, FrameworkNotInstalled, Run


class ReferenceAdapter(Adapter):
    name = "reference"
    install_hint = "pip install -e .  (the reference ships with this repository)"
    devices = ("cpu", "cuda")
    module = "reference"
    fw_is_module = True  # fw is the module itself
    runs = (Run(label="reference", version=None, python="3.11"),)

    def _import(self):
        import os

        import reference

        mutant = os.environ.get("AUTOGRAD_CONFORMANCE_MUTANT", "").strip()
        if mutant:  # planted bugs are the mutants tool's own adapter; this one stays clean
            raise FrameworkNotInstalled(
                f"AUTOGRAD_CONFORMANCE_MUTANT={mutant!r} is set, but --adapter=reference runs "
                f"the clean reference: plant it with --adapter=conformance.mutants.adapter:"
                f"PlantedReference, or unset the variable")
        return reference

    def framework_version(self) -> str:
        import reference

        return str(getattr(reference, "__version__", "unknown"))

    def to_numpy(self, tensor):
        return tensor.detach().numpy()
