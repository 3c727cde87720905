"""TOML files: read so that every error names the file (and line, where TOML gives one), and
the one writer of TOML values the project's tools use (:func:`string`, :func:`array`,
:func:`comment`).

Python 3.10 (OneFlow's interpreter) has no ``tomllib``; ``tomli`` is the same parser. Why a
writer of our own rather than ``tomli_w``: the tools write a few flat files (drafted
expectations, recorded evidence) whose values are strings and lists of strings, and the base
dependencies stay numpy, pytest, packaging, jinja2 and objgraph; a value is data and must never
become TOML structure, whatever it holds (tests/harness/test_tomlfile.py reads every form back).
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


def _surrogate(c: str) -> bool:
    return 0xD800 <= ord(c) <= 0xDFFF


def string(text: str, multiline: bool = False) -> str:
    """``text`` as a TOML string that reads back as ``text``. A basic string (``"..."``) with
    every quote, backslash and control character escaped (DEL too, which JSON leaves as is);
    a lone surrogate (an undecodable byte, as ``os.fsdecode`` makes) has no TOML form and
    becomes U+FFFD. ``multiline``: a multi-line literal string (``'''``, the text verbatim,
    for code and program output) where the text allows one: no ``'''`` in it, no control
    character but newline and tab, and not ending in a quote."""
    text = "".join("\ufffd" if _surrogate(c) else c for c in str(text))
    if (multiline and "'''" not in text and not text.endswith("'")
            and all(c in "\n\t" or (c >= " " and c != "\x7f") for c in text)):
        return "'''\n" + text + "'''"  # TOML drops the newline after the opening quotes
    out = []
    for c in text:
        if c in '"\\':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def array(items) -> str:
    """A TOML array of strings, on one line."""
    return "[" + ", ".join(string(i) for i in items) + "]"


def comment(text: str) -> str:
    """``text`` as TOML comment lines: a line without ``#`` is prefixed with one (it would be
    TOML), and what a comment cannot hold (control characters but tab, lone surrogates)
    becomes U+FFFD."""
    def clean(line: str) -> str:
        return "".join("\ufffd" if (ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F
                       or _surrogate(c) else c for c in line)

    return "\n".join(line if not line.strip() or line.lstrip().startswith("#") else f"# {line}"
                     for line in map(clean, str(text).splitlines()))
