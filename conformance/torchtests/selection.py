"""Which tests of PyTorch's test file are lifetime tests, and which lifetime concept each covers.

A selection is a TOML file next to this module (``<name>.toml``): ``[tests]`` maps
``"Class.test_name"`` to one concept of ``CONCEPTS``, ``[excluded]`` maps a test name to why it
is left out although it touches lifetimes (so a reader sees the boundary was drawn on purpose).
"""
from __future__ import annotations

from pathlib import Path

from conformance.tomlfile import FileError, read_toml

CONCEPTS = {
    "hooks": "tensor, node, post-accumulate and multi-grad hooks, engine callbacks, hook handles",
    "saved_tensors": "what a node saves, when it is freed, saved-tensor hooks",
    "gc_cycles": "what the garbage collector must free, graph destruction",
    "weakrefs": "objects observed through weak references",
    "identity": "which Python object a user gets back (.grad, saved tensors, outputs)",
    "version_counters": "version counters and the in-place checks built on them",
    "retain_graph": "running backward more than once, freed buffers",
    "views_inplace": "views, in-place operations on them, the base's history",
    "forward_ad_levels": "dual levels, tangents and their lifetime",
    "custom_function": "who owns the ctx, the node and the outputs of a custom Function",
}

_HERE = Path(__file__).parent


class SelectionError(FileError):
    """A selection name or file is wrong; the message says what is accepted."""


def available() -> list[str]:
    return sorted(p.stem for p in _HERE.glob("*.toml"))


def load(name: str) -> dict[str, str]:
    """``{"Class.test_name": concept}`` of the selection ``name`` (a bundled name or a TOML path)."""
    path = Path(name) if name.endswith(".toml") else _HERE / f"{name}.toml"
    if not path.is_file():
        raise SelectionError(f"unknown selection {name!r}: use one of {', '.join(available())} or a .toml path")
    data = read_toml(path, SelectionError)
    tests = data.get("tests")
    if not isinstance(tests, dict) or not tests:
        raise SelectionError(f"{path}: needs a non-empty [tests] table of \"Class.test_name\" = \"concept\"")
    for key, concept in tests.items():
        if key.count(".") != 1 or not key.split(".")[1].startswith("test"):
            raise SelectionError(f"{path}: {key!r} is not \"Class.test_name\"")
        if concept not in CONCEPTS:
            raise SelectionError(f"{path}: {key}: unknown concept {concept!r}; known: {', '.join(CONCEPTS)}")
    return dict(tests)


def excluded(name: str) -> dict[str, str]:
    path = Path(name) if name.endswith(".toml") else _HERE / f"{name}.toml"
    return dict(read_toml(path, SelectionError).get("excluded", {}))
