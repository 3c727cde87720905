"""Reading a JSON file the harness wrote, or someone edited: a regular file only, strict
values, bounded nesting; every failure an ``OSError`` or ``ValueError`` the reader turns into
one line (issue 28).

Why one module: each reader of the harness's files (results lines, findings, status files,
``mutants.json``, ``results.json``, history files) called ``json.loads`` on ``read_text()``,
and the same three inputs beat all of them: a FIFO named like the file blocked the tool
forever; ``NaN`` and ``Infinity``, which Python's json reads and no other JSON reader does,
went through into ``results.json`` (a file browsers and CI tools then refuse); and a document
nested deeper than the interpreter's recursion limit raised ``RecursionError``, a traceback.
:func:`read_bytes` is the TOML files' reader too (conformance.tomlfile). Standard library
only (the noxfile and ``.ci/`` read results with a bare Python).
"""
from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any


class NotARegularFile(OSError):
    """The path is a FIFO, a device or a socket: reading it could wait forever."""


def read_bytes(path: Path) -> bytes:
    """The content of the regular file ``path``; IsADirectoryError for a directory and
    :class:`NotARegularFile` for anything else that is not a file, found without blocking."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "a directory, not a file", str(path))
        if not stat.S_ISREG(mode):
            raise NotARegularFile(errno.EINVAL, "not a regular file (a FIFO, device or socket)",
                                  str(path))
        return fh.read()


def read_text(path: Path, errors: str = "strict") -> str:
    """:func:`read_bytes` decoded as UTF-8 (UnicodeDecodeError unless ``errors`` says)."""
    return read_bytes(path).decode("utf-8", errors)


def _constant(name: str) -> str:
    """``NaN``, ``Infinity``, ``-Infinity``: kept as their names, so that a number field
    holding one is refused by the type check (conformance.results.json_fields) and a field of
    any value still writes out as JSON."""
    return name


def loads(text: str | bytes) -> Any:
    """``json.loads`` that never yields a non-finite float and refuses deep nesting with a
    ValueError (as it refuses any other bad JSON)."""
    try:
        return json.loads(text, parse_constant=_constant)
    except RecursionError:
        raise ValueError("arrays or objects nested too deeply") from None
