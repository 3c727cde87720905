"""PyTorch's test file, parsed: its module-level statements and its test classes.

Nothing is imported or executed here; ``worker`` executes what it needs.
"""
from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from pathlib import Path


class SourceError(ValueError):
    """The file cannot be read as a Python test file; the message says why."""


@dataclass
class TestFile:
    path: Path
    text: str
    tree: ast.Module

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def classes(self) -> dict[str, ast.ClassDef]:
        return {node.name: node for node in self.tree.body if isinstance(node, ast.ClassDef)}

    def tests(self) -> list[str]:
        """Every ``Class.test_name`` defined directly in a top-level class, in file order."""
        return [f"{cls.name}.{fn.name}" for cls in self.classes().values() for fn in cls.body
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name.startswith("test")]


def read(path: str | Path) -> TestFile:
    path = Path(path)
    if not path.is_file():
        raise SourceError(f"{path}: no such file (give the path of PyTorch's test/test_autograd.py)")
    try:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, filename=str(path))
    except (UnicodeDecodeError, SyntaxError, ValueError) as exc:
        raise SourceError(f"{path}: not a Python source file ({type(exc).__name__}: {exc})") from None
    test_file = TestFile(path, text, tree)
    if not test_file.tests():
        raise SourceError(f"{path}: defines no test classes with test_* methods")
    return test_file
