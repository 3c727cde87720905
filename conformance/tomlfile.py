"""Read a TOML file so that every error names the file (and line, where TOML gives one).

Python 3.10 (OneFlow's interpreter) has no ``tomllib``; ``tomli`` is the same parser.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised in the Python 3.10 OneFlow environments
    import tomli as tomllib


class FileError(ValueError):
    """A data file of the harness is malformed; the message names the file and what to fix."""


def read_toml(path: Path, error: type[FileError] = FileError) -> dict[str, Any]:
    """The parsed file; a syntax error becomes ``error`` naming the file, line and column."""
    from conformance.results.json_text import read_bytes  # a FIFO is refused, never waited on

    try:
        data = read_bytes(path)
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror or exc}); give a readable TOML "
                    f"file") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise error(f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}); "
                    f"save it as UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise error(f"{path}: not valid TOML: arrays or tables nested too deeply") from None
