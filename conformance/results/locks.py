"""Locks next to a results file (``<file>.lock``), so that writers never interleave lines.

Two kinds: :func:`locked` waits for an exclusive lock (the differential findings file, which
several processes append to, each whole lines under the lock); :class:`OwnerLock` is taken
once, without waiting, by the one run that writes a ``--results`` file, and names that run's
pid to a second run that tries, which refuses instead of interleaving (two runs writing one
file both exited 0 and left a file the report refused).

The lock is keyed on the file a path resolves to (:func:`lock_path`), not on the path as
typed. The lock file is left in place: removing it while another process has it open would let two
processes each lock a different inode of the same name.
"""
from __future__ import annotations

import os
from pathlib import Path


def lock_path(path: Path) -> Path:
    """``<file>.lock`` beside the file ``path`` resolves to (symbolic links followed, the
    file itself need not exist): keyed on the path as typed, two runs reaching one file
    through a link each took a lock of their own, both wrote, and the file was corrupt."""
    return Path(f"{os.path.realpath(path)}.lock")


class _Locked:
    """An exclusive ``flock`` on ``<path>.lock`` for the ``with`` block (waits for it)."""

    def __init__(self, path: Path) -> None:
        self.lock_path = lock_path(path)

    def __enter__(self):
        import fcntl

        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.lock_path, "a")  # noqa: SIM115 - closed in __exit__
        fcntl.flock(self._fh, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc) -> None:
        import fcntl

        fcntl.flock(self._fh, fcntl.LOCK_UN)
        self._fh.close()


def locked(path: Path) -> _Locked:
    """``with locked(path):`` appends to ``path`` from several processes stay whole lines."""
    return _Locked(path)


class InUse(Exception):
    """Another process holds the file's lock; the message names it and what to do."""


class OwnerLock:
    """The one writer of a file: an exclusive ``flock`` on ``<path>.lock`` holding its pid."""

    def __init__(self, path: Path) -> None:
        import fcntl

        self.path = Path(path)
        self.lock_path = lock_path(path)
        self._fh = open(self.lock_path, "a+", encoding="utf-8")  # noqa: SIM115 - release()
        try:
            fcntl.flock(self._fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._fh.seek(0)
            owner = self._fh.read().strip() or "?"
            self._fh.close()
            raise InUse(f"{self.path}: another run (pid {owner}) is writing it; wait for it to "
                        f"end or choose another file") from None
        self._fh.seek(0)
        self._fh.truncate()
        self._fh.write(f"{os.getpid()}\n")
        self._fh.flush()

    def release(self) -> None:
        import fcntl

        if self._fh.closed:
            return
        fcntl.flock(self._fh, fcntl.LOCK_UN)
        self._fh.close()
