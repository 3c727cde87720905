"""Every output written whole or not at all, and a set of outputs replaced together.

Why: the report writes results.json, one JUnit file per run and index.html. Written in place
one after the other, a failure while rendering the page (a message holding a lone surrogate,
as ``os.fsdecode`` makes, raised UnicodeEncodeError) left index.html at 0 bytes beside an
already replaced results.json and JUnit files, and Ctrl-C could do the same. Here:

* :func:`write_text` writes one file to a temporary file in the same directory and renames it
  over the target (a rename within one file system is atomic: readers see the old file or the
  new one, never a part);
* :class:`Outputs` collects a set of files rendered in memory, then writes every temporary file
  and only then renames them all, with Ctrl-C held back during the renames (it is raised after
  them), so the set is replaced together or, when anything fails before, not at all.

Where outputs go by default (:func:`reports_dir`): ``reports/`` at the root of the source
checkout the package runs from, as CI and the nox sessions expect; installed (a wheel in
site-packages) ``reports/`` under the current directory, never inside the installed package.
Tools that rewrite the project's own files (docs, recorded evidence) need a checkout
(:func:`checkout_root`).

Text is encoded as UTF-8 with ``backslashreplace``: a lone surrogate shows as ``\\udc80``
instead of failing the write. Failures are :class:`OutputError`, one line naming the path.
Standard library only (the noxfile writes its stamps with it).
"""
from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import threading
from pathlib import Path


class OutputError(Exception):
    """An output could not be written; the message names it and why (nothing was replaced)."""


#: the distribution's name as the checkout's pyproject.toml spells it
_PROJECT_LINE = 'name = "autograd-conformance"'


def checkout_root() -> Path | None:
    """The source checkout this package is imported from (its pyproject.toml names the
    project), or None when it runs installed: site-packages holds no pyproject.toml of ours."""
    root = Path(__file__).resolve().parents[1]
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return root if _PROJECT_LINE in text else None


def needs_checkout(what: str) -> str:
    """"" in a source checkout; else one line saying that ``what`` rewrites the project's own
    files, which an installed package must not do to itself."""
    if checkout_root() is not None:
        return ""
    return (f"{what} rewrites the project's own files; installed, the package is not changed: "
            f"run it in a clone of the repository")


def regenerate_advice() -> str:
    """The command that (re)makes the report's inputs, as this installation can run it: the
    checkout's ``nox -s report``, or for an installed wheel (which has no noxfile) a run that
    keeps its results, then the report."""
    if checkout_root() is not None:
        return "nox -s report"
    return ("pytest --adapter=NAME --results=reports/results/NAME.jsonl, then "
            "python -m conformance.report")


def reports_dir() -> Path:
    """Where outputs go by default: ``<checkout>/reports``, or ``./reports`` when installed."""
    return (checkout_root() or Path.cwd()) / "reports"


def encode(text: str | bytes) -> bytes:
    return text if isinstance(text, bytes) else text.encode("utf-8", "backslashreplace")


def _mode_for(path: Path) -> int:
    """The permissions of the file being replaced, or those a new file gets (the umask's)."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _temp_beside(path: Path, data: bytes) -> Path:
    """``data`` in a new temporary file in ``path``'s directory (created if missing)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write it ({exc.strerror or exc}); choose a writable "
                          f"directory") from None
    try:
        os.chmod(fd, _mode_for(path))  # mkstemp makes 0600; keep what the file would have had
        with os.fdopen(fd, "wb") as out:
            out.write(data)
    except OSError as exc:
        os.unlink(name)
        raise OutputError(f"{path}: cannot write it ({exc.strerror or exc})") from None
    return Path(name)


def write_text(path: Path, text: str | bytes) -> Path:
    """Write ``path`` whole or not at all (temporary file + rename)."""
    out = Outputs()
    out.add(path, text)
    out.commit()
    return Path(path)


@contextlib.contextmanager
def _sigint_held():
    """Ctrl-C during the block is raised after it (main thread only; elsewhere, as is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda *args: caught.append(args))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


class Outputs:
    """Files rendered in memory, replaced together by :meth:`commit`."""

    def __init__(self) -> None:
        self.files: dict[Path, bytes] = {}
        self.stale: list[Path] = []

    def add(self, path: Path, text: str | bytes) -> Path:
        self.files[Path(path)] = encode(text)
        return Path(path)

    def remove(self, path: Path) -> None:
        """Delete ``path`` with the renames (an output of the previous set this one lacks,
        such as the JUnit file of a run no longer reported), never before them."""
        self.stale.append(Path(path))

    def commit(self) -> list[Path]:
        """Write every file's temporary copy, then rename them all over their targets; on any
        failure before the renames, remove the copies and replace nothing."""
        for path in self.files:
            if path.is_dir():
                raise OutputError(f"{path}: is a directory; nothing was written")
            if path.exists() and not path.is_file():  # renamed over, a device would be lost
                raise OutputError(f"{path}: not a regular file (a FIFO, device or socket); "
                                  f"nothing was written")
        temps: dict[Path, Path] = {}
        try:
            for path, data in self.files.items():
                temps[path] = _temp_beside(path, data)
        except BaseException:
            for temp in temps.values():
                with contextlib.suppress(OSError):
                    temp.unlink()
            raise
        with _sigint_held():
            for path, temp in temps.items():
                os.replace(temp, path)
            for path in self.stale:
                if path not in temps:
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
        return list(self.files)
