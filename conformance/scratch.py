"""Scratch directories of a run: removed when it ends, swept by a later run when it was killed.

Why: a run ended by SIGKILL (a CI job's time limit, the OOM killer, ``kill -9``) never reaches
its own cleanup, and its directory of timeout markers or supervised-child files stayed in the
temporary directory for good (43 of them on one development machine). Each directory's name
carries the pid of the process that made it. Before making one, a run removes those of the same
kind whose process is gone *and* that nothing has touched for :data:`STALE_SECONDS`: a pid
alone is not proof, since a temporary directory shared between pid namespaces (containers) can
name a live process this one cannot see, while a live run touches its directory with every
test. Directories of other users, and anything that is not a plain directory, are left alone.

A live run's directory can vanish too (a temporary-directory cleaner such as tmpreaper or
systemd-tmpfiles with a short age, or a person's ``rm``): :func:`open_entry` makes it again
instead of letting the run end on an INTERNALERROR.
"""
from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

#: A directory untouched for a day, whose process is gone, belongs to no run.
STALE_SECONDS = 24 * 3600


def make(prefix: str) -> Path:
    """A new directory ``<prefix><pid>-<random>`` in the temporary directory, after sweeping
    the stale ones of ``prefix``."""
    sweep(prefix)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-"))


def open_entry(path: Path, mode: str = "w", **kwargs):
    """``open(path, mode)`` for a file in a run's scratch directory, making the directory
    again (private, as :func:`make` made it) if something removed it while the run went on."""
    try:
        return open(path, mode, **kwargs)
    except FileNotFoundError:
        Path(path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        return open(path, mode, **kwargs)


def sweep(prefix: str, root: Path | None = None, now: float | None = None) -> list[Path]:
    """Remove the stale directories of ``prefix`` under ``root`` (the temporary directory);
    return what was removed. Names without a pid (made before pids were named) go on age
    alone."""
    root = Path(root or tempfile.gettempdir())
    now = time.time() if now is None else now
    removed = []
    for path in sorted(root.glob(f"{prefix}*")):
        try:
            info = path.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():   # lstat: no link
            continue
        if now - info.st_mtime < STALE_SECONDS:
            continue
        pid = path.name[len(prefix):].partition("-")[0]
        if pid.isdigit() and _alive(int(pid)):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # another user's process: alive
        return True
    except (OverflowError, ValueError):   # no such pid can exist
        return False
    return True
