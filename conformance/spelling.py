"""The torch spellings a suite may not use on the framework's own objects, and what it writes instead.

    python -m conformance.spelling          # every torch spelling in the suites (exit 1 if any)

Why: a suite reaches the framework only through the documented ``fw`` surface and the adapter
(docs/fw-surface.md). A framework whose tensors are not torch-shaped (no ``.sum()`` method,
``backward`` without ``retain_graph=``, in-place methods that take no tensors) would otherwise fail
a test on the suite's own spelling, not on the rule: an ERROR, or worse a DIVERGES, that says
nothing about its engine. So a computation goes through ``fw.<function>(t, ...)``, which an
adapter's namespace translates, and the calls frameworks spell differently through adapter
methods. A method of a framework object is called as itself only where it is the subject of the
rule: the test says so with ``@subject("view")``, and the features registry names what it needs.

The check reads the suites' source (static: it cannot know types), so a receiver that is plainly
not the framework's (``np``, a literal, ``adapter.to_numpy(...)`` or a name bound to one) is left
alone. tests/harness/test_spelling.py keeps the suites clean.
"""
from __future__ import annotations

import ast
import dataclasses
import sys
from pathlib import Path

from conformance import cli
from conformance.model import suite_index

ROOT = Path(__file__).resolve().parents[1]
SUITES = ROOT / "conformance" / "suites"

#: tensor methods with a namespace function of the same name: ``t.sum()`` -> ``fw.sum(t)``
THROUGH_FW = frozenset({
    "sum", "mean", "clone", "detach", "exp", "log", "pow", "sin", "cos", "sigmoid", "tanh", "relu",
    "abs", "neg", "mul", "add", "sub", "div", "matmul", "reshape", "t", "unbind", "narrow",
    "select", "squeeze", "unsqueeze", "transpose", "permute", "flatten", "chunk", "cumsum", "prod", "norm", "dot", "square", "sqrt", "gather",
})
#: in-place methods: ``t.add_(u)`` -> ``adapter.inplace(t, "add_", u)``
IN_PLACE = frozenset({
    "add_", "sub_", "mul_", "div_", "copy_", "zero_", "fill_", "clamp_", "exp_", "pow_",
    "detach_", "requires_grad_", "uniform_", "normal_", "masked_fill_", "index_add_",
})
#: the rest, each with its adapter spelling
THROUGH_ADAPTER = {
    "backward": "adapter.backward(t, ...)",
    "retain_grad": "adapter.retain_grad(t)",
    "tolist": "adapter.to_numpy(t).tolist()",
    "item": "adapter.to_numpy(t).item()",
    "numpy": "adapter.to_numpy(t)",
    "view": "fw.reshape(t, ...) (or @subject(\"view\") where views are the rule's subject)",
}
#: fields torch lets user code assign: assigned only where the assignment is the subject
ASSIGNED = frozenset({"grad", "data", "requires_grad"})
#: fields read only where they are the subject (``.data`` is its own feature, ``tensor_data``)
READ = frozenset({"data"})
#: fields frameworks hold under another shape (MyGrad: ``creator``, ``constant``), read through
#: the adapter's translation: ``t.grad_fn`` -> ``adapter.grad_fn(t)``
READ_THROUGH_ADAPTER = {
    "grad_fn": "adapter.grad_fn(t)",
    "is_leaf": "adapter.is_leaf(t)",
    "requires_grad": "adapter.requires_grad(t)",
}

#: receivers that are never the framework's objects
_PLAIN_NAMES = frozenset({"fw", "adapter", "np", "numpy", "re", "math", "os", "sys", "gc",
                          "weakref", "threading", "self", "json", "random", "pytest", "liveness"})


def subject(*names: str):
    """Mark a test whose rule is about these methods or fields of the framework's objects
    (``@subject("view")``, ``@subject("grad=")`` for assigning ``.grad``): the test calls them
    as themselves, where any other test writes the ``fw``/adapter spelling. Marker ``subject``."""
    import pytest

    return pytest.mark.subject(*names)


@dataclasses.dataclass(frozen=True)
class Spelling:
    """One torch spelling in a suite: where, what, and what to write instead."""

    path: str
    line: int
    name: str          # the method, or ``grad=`` / ``.data`` for a field
    instead: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.name} on a framework object; write {self.instead}"


def instead_of(name: str) -> str | None:
    """What a suite writes instead of calling method ``name`` on a framework object (None: the
    method is not one the suites translate)."""
    if name in THROUGH_FW:
        return f"fw.{name}(t, ...)"
    if name in IN_PLACE:
        return f'adapter.inplace(t, "{name}", ...)'
    return THROUGH_ADAPTER.get(name)


def _plain(receiver: ast.AST, plain_names: set[str]) -> bool:
    """A receiver that is plainly not a framework object."""
    if isinstance(receiver, ast.Name):
        return receiver.id in _PLAIN_NAMES or receiver.id in plain_names
    if isinstance(receiver, (ast.Constant, ast.List, ast.Dict, ast.Tuple, ast.JoinedStr, ast.Set,
                             ast.ListComp)):
        return True
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) \
            and isinstance(receiver.func.value, ast.Name):
        owner, attr = receiver.func.value.id, receiver.func.attr
        return owner == "np" or (owner == "adapter" and attr == "to_numpy") \
            or (owner in ("str", "line", "text") and attr in ("split", "strip"))
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name):
        return receiver.func.id in ("str", "repr", "list", "tuple", "dict", "set", "sorted")
    if isinstance(receiver, ast.Subscript):
        return _plain(receiver.value, plain_names)
    if isinstance(receiver, ast.Attribute):
        root = receiver
        while isinstance(root, ast.Attribute):
            root = root.value
        # a submodule of the namespaces (fw.autograd), or a helper's handle on them (self.fw)
        return (isinstance(root, ast.Name) and root.id in ("fw", "adapter", "np")) \
            or receiver.attr in ("fw", "adapter")
    return False


def _plain_names(scope: ast.AST) -> set[str]:
    """Names bound under ``scope`` to something plainly not the framework's (``got =
    adapter.to_numpy(g)``, ``lines = text.splitlines()``)."""
    names = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) and _plain(node.value, set()) \
                and not isinstance(node.value, ast.Name):
            names.add(node.targets[0].id)
    return names


def _scopes(tree: ast.Module):
    """(node, subjects, plain names) for each top-level definition (a test's decorators apply
    to everything in it) and the module's own statements."""
    for node in tree.body:
        yield node, set(suite_index.subjects_of(node)), _plain_names(node)


def spellings_in(path: Path, relpath: str | None = None) -> list[Spelling]:
    """Every torch spelling on a framework object in one suite file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    where = relpath or path.name
    out = []
    for scope, subjects, plain in _scopes(tree):
        for node in ast.walk(scope):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                name, receiver = node.func.attr, node.func.value
                hint = instead_of(name)
                if hint and name not in subjects and not _plain(receiver, plain):
                    out.append(Spelling(where, node.lineno, name, hint))
            elif isinstance(node, ast.Attribute) and not _plain(node.value, plain):
                if isinstance(node.ctx, (ast.Store, ast.Del)) and node.attr in ASSIGNED \
                        and f"{node.attr}=" not in subjects:
                    out.append(Spelling(where, node.lineno, f"{node.attr}=",
                                        f'@subject("{node.attr}=") on a test whose rule is about '
                                        f"assigning .{node.attr}, or the fw/adapter spelling"))
                elif isinstance(node.ctx, ast.Load) and node.attr in READ \
                        and node.attr not in subjects:
                    out.append(Spelling(where, node.lineno, f".{node.attr}",
                                        f'@subject("{node.attr}") on a test whose rule is about '
                                        f".{node.attr}"))
                elif isinstance(node.ctx, ast.Load) and node.attr in READ_THROUGH_ADAPTER \
                        and node.attr not in subjects:
                    out.append(Spelling(where, node.lineno, f".{node.attr}",
                                        READ_THROUGH_ADAPTER[node.attr]))
    return sorted(set(out), key=lambda s: (s.path, s.line, s.name))


def spellings(suites_dir: Path | None = None) -> list[Spelling]:
    """Every torch spelling on a framework object in every suite file (helpers included)."""
    suites_dir = suites_dir or SUITES
    found = []
    for path in sorted(suites_dir.glob("*.py")):
        found += spellings_in(path, str(path.relative_to(ROOT)) if path.is_relative_to(ROOT)
                              else path.name)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = cli.Parser(prog="python -m conformance.spelling",
                        description="List the torch spellings the suites use on framework objects.")
    parser.parse_args(argv)
    found = spellings(SUITES)
    for s in found:
        print(s)
    print(f"{len(found)} torch spelling(s) in {SUITES.relative_to(ROOT)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
