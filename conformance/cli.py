"""The command-line convention every ``python -m conformance.*`` tool follows.

Why one module: the tools grew their own argument handling, and a user met exit 2 from
seven of them, 4 from two, and one that ignored its arguments. The convention, the same as
the pytest plugin's usage errors: ``--help`` prints the usage (exit 0); an unknown option, a
bad value or a bad path is ONE line on stderr, ``<tool>: <problem>; <what to do>``, exit 4,
never a traceback; a tool that ran and found a problem (a stale page, a mismatch) exits 1;
Ctrl-C is one line as well (the process still ends as interrupted).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

OK, FOUND_PROBLEMS, USAGE_ERROR = 0, 1, 4


class UsageError(Exception):
    """Bad input found after parsing (a path that is a file, a value no tool can use)."""


def one_line(text: object) -> str:
    """``text`` on one line (a message from an exception may span several)."""
    return " ".join(str(text).split())


#: the tool whose Parser was made last: the one Ctrl-C interrupts (see :func:`_excepthook`)
_TOOL = {"prog": None}


def _excepthook(kind, value, traceback) -> None:
    """Ctrl-C in a tool is one line, not a traceback (its outputs are replaced whole or not
    at all: conformance.outputs); the interpreter still ends as interrupted. Any other
    uncaught exception is shown as Python shows it."""
    if issubclass(kind, KeyboardInterrupt) and _TOOL["prog"]:
        print(f"{_TOOL['prog']}: interrupted (Ctrl-C); every output is whole: the previous one "
              f"or the new one", file=sys.stderr)
    else:
        sys.__excepthook__(kind, value, traceback)


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line and exit 4 (see the module doc)."""

    def __init__(self, prog: str, description: str | None = None, **kwargs) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(prog=prog, description=description, **kwargs)
        _TOOL["prog"] = " ".join(prog.split()[:3])  # a subcommand's parser: its tool's name
        if sys.excepthook is sys.__excepthook__:
            sys.excepthook = _excepthook

    def error(self, message: str):  # noqa: D401 - argparse's hook
        self.exit(USAGE_ERROR, f"{self.prog}: {one_line(message)}; see {self.prog} --help\n")

    def fail(self, message: str) -> int:
        """Print ``message`` as this tool's one-line usage error; return 4 for ``main``."""
        return usage_error(self.prog, message)


def usage_error(prog: str, message: object) -> int:
    """One line on stderr naming ``prog``; returns 4 (for a tool without its parser at hand)."""
    print(f"{prog}: {one_line(message)}", file=sys.stderr)
    return USAGE_ERROR


# -- value types: each raises ArgumentTypeError, which the parser turns into one line --------
def _whole_number(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= {minimum}")
    return value


def positive_int(text: str) -> int:
    return _whole_number(text, 1)


#: The longest time limit a tool or the plugin takes (a year): the alarms and subprocess
#: waits that enforce one overflow near 1e10 s (``--conformance-timeout=9e18`` was a traceback).
MAX_SECONDS = 365 * 24 * 3600


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds > 0 (at most "
                                         f"{MAX_SECONDS}, a year)")
    return value


def share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a share within 0..1")
    return value


def existing_file(text: str) -> Path:
    path = Path(text)
    if not text or not path.is_file():
        raise argparse.ArgumentTypeError(
            f"{text!r} is a directory, not a file" if text and path.is_dir()
            else f"{text!r} is not a regular file (a FIFO, device or socket)"
            if text and path.exists() else f"{text!r}: no such file")
    return path


def existing_dir(text: str) -> Path:
    path = Path(text)
    if not text or not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory" if text and path.exists()
                                         else f"{text!r}: no such directory")
    return path


def executable(text: str) -> str:
    """An interpreter to run: a path to an executable file, or a name on the PATH."""
    import shutil

    if not text:
        raise argparse.ArgumentTypeError("an empty path (an unset variable?); give an interpreter")
    found = shutil.which(text) if os.sep not in text else (
        text if os.path.isfile(text) and os.access(text, os.X_OK) else None)
    if found is None:
        raise argparse.ArgumentTypeError(f"{text!r}: no such interpreter (not an executable "
                                         f"file, nor a name on the PATH)")
    return text


def output_file(text: str) -> Path:
    """A file the tool will write: not empty, not a directory, not under a file."""
    path = Path(text)
    if not text:
        raise argparse.ArgumentTypeError("an empty path; give a file name")
    if path.is_dir() or text.endswith(("/", os.sep)):
        raise argparse.ArgumentTypeError(f"{text!r} is a directory; give a file name")
    if path.exists() and not path.is_file():  # a FIFO would block, a device be replaced
        raise argparse.ArgumentTypeError(f"{text!r} is not a regular file (a FIFO, device or "
                                         f"socket); give a file name")
    _parent_is_a_directory(text, path.parent)
    return path


def output_dir(text: str) -> Path:
    """A directory the tool will write into: not empty, not an existing file, not under one."""
    path = Path(text)
    if not text:
        raise argparse.ArgumentTypeError("an empty path; give a directory")
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file; give a directory")
    _parent_is_a_directory(text, path)
    return path


def _parent_is_a_directory(text: str, parent: Path) -> None:
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r}: {parent} is a file, not a directory")
