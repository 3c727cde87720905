"""PyTorch: 2.13 is the release most rules were written from; any other release runs too.

``runs`` are the report's torch columns: 2.13.0 (pinned, the CPU wheel) and the newest release
are required, 1.13.1 (the last 1.x, Python 3.10 with numpy < 2) optional. ``releases`` are the
ones whose evidence output the history records (conformance/history), each with the Python it
needs; another version is named at run time (docs/running.md, "Another torch release").
"""
from adapters.base import Adapter, Run

NEWEST = "2.15.0"  # the newest release the package index had when the columns were last set


def _release(version: str, python: str) -> dict:
    # torch 1.x was built against numpy 1: with numpy 2 every tensor.numpy() raises
    # "Numpy is not available" (check_device names it before a run)
    pins = ["numpy<2"] if version.startswith("1.") else []
    return {"version": version, "python": python, "install": [f"torch=={version}", *pins]}


class TorchAdapter(Adapter):
    name = "torch"
    install_hint = "pip install torch==2.13.0"
    devices = ("cpu", "cuda")   # examples only: check_device takes any device torch accepts
    module = "torch"
    fw_is_module = True  # fw is the module itself
    runs = (
        Run(label="torch", version="2.13.0", install=("torch==2.13.0",), python="3.11"),
        Run(label=f"torch-{NEWEST}", version=NEWEST, install=(f"torch=={NEWEST}",), python="3.11"),
        Run(label="torch-1.13.1", version="1.13.1", install=("torch==1.13.1", "numpy<2"),
            python="3.10", required=False),
    )
    # oldest first; 1.1.0 is here because PR 22983 (custom Function ownership) is in 1.2.0,
    # 1.8.0 as the first release with torch.autograd.forward_ad, 1.10.2 to date the changes
    # seen between 1.9.0 and 1.11.0 (a ctx attribute cycle collected, among others)
    releases = tuple(_release(v, py) for v, py in (
        ("1.1.0", "3.7"), ("1.2.0", "3.7"), ("1.3.0", "3.7"), ("1.4.0", "3.7"), ("1.5.0", "3.7"),
        ("1.7.1", "3.8"), ("1.8.0", "3.8"), ("1.9.0", "3.8"), ("1.10.2", "3.8"), ("1.11.0", "3.8"),
        ("1.13.1", "3.8"), ("2.0.1", "3.8"), ("2.4.1", "3.8"), ("2.6.0", "3.11"), ("2.9.1", "3.11"),
        ("2.13.0", "3.11"), (NEWEST, "3.11"),
    ))

    def _import(self):
        import torch

        return torch

    def close_forward_levels(self) -> None:
        """torch's ``forward_ad.enter_dual_level`` keeps the current level in an unsynchronised
        module global (``_current_level``) beside the C++ registry: two threads entering and
        exiting at once can leave level 0 registered with the global back at -1 (seen on 1.13.1
        and 2.13.0), after which every ``dual_level()`` raises "Nested forward mode AD is not
        supported". So the registry's level 0 is closed directly and the global reset."""
        super().close_forward_levels()
        fwad = getattr(getattr(self.fw, "autograd", None), "forward_ad", None)
        exit_level = getattr(self.fw._C, "_exit_dual_level", None)
        if fwad is None or exit_level is None:
            return
        try:
            exit_level(level=0)
        except RuntimeError:  # no level registered: the usual case
            return
        fwad._current_level = -1

    def check_device(self, device: str) -> None:
        """Also the environment: torch 1.x beside numpy 2 fails every tensor.numpy() call
        ("Numpy is not available"), which would make most tests ERROR with no hint."""
        try:
            self.fw.zeros(1).numpy()
        except Exception as exc:  # noqa: BLE001 - whatever breaks, say it in one line
            import numpy

            text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ValueError(
                f"adapter 'torch': torch {self.framework_version()} cannot use numpy "
                f"{numpy.__version__} here ({text}); torch 1.x needs numpy < 2: "
                f"pip install 'numpy<2'") from None
        try:
            wanted = self.fw.device(device)
        except Exception as exc:  # noqa: BLE001 - RuntimeError today; say it in one line
            text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ValueError(
                f"adapter 'torch': --device {device!r} is not a device string torch accepts "
                f"({text}); give cpu, cuda, cuda:N, mps, or the device an out-of-tree back end "
                f"registers (docs/devices.md)") from None
        if wanted.type == "cuda" and not self.fw.cuda.is_available():
            raise ValueError(f"adapter 'torch': --device {device} but torch.cuda.is_available() "
                             "is False (a CPU build or no GPU); use --device cpu")
        made = self.try_device(device)
        if made is not None and made.device.type != wanted.type:
            raise ValueError(
                f"adapter 'torch': a tensor created with device={device!r} reports device "
                f"{str(made.device)!r}; the back end does not create tensors on its device, "
                f"so the suites cannot run there")
        self.declare_device(wanted.type)
