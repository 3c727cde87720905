"""The reference's import structure, measured from its source with ``ast``.

``reference/`` is meant to read top to bottom in dependency order (``reference/__init__.py``
gives the order). Two numbers say how far it is from that, and must not grow:

* the largest import circle: the biggest strongly connected component of the graph whose
  edges are every import of one reference module by another, function-local ones included
  (a function-local import hides a circle from Python, not from a reader);
* the number of function-local imports (``import`` statements inside a function body).

A package's ``__init__`` running before its submodules is not counted as an edge.
The backward path (``Tensor.backward`` -> engine -> node apply -> hooks -> accumulate) has
no function-local import at all.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[2] / "reference"

#: ceilings: lower them when the structure improves, never raise them
MAX_CIRCLE = 1  # no circle: the reading order of reference/__init__.py is the dependency order
MAX_LOCAL_IMPORTS = 1  # array_backend's cupy: an optional dependency, loaded on first CUDA use

#: the modules the backward path runs through: none of them imports inside a function
BACKWARD_PATH = (
    "reference.tensor",  # Tensor.backward
    "reference.autograd",  # autograd.backward / grad: roots, captures
    "reference.autograd.engine",  # the graph task
    "reference.autograd.graph",  # Node, AccumulateGrad, saved tensors
    "reference.ops.backward_ops",  # the op-set node formulas run on
    "reference.autograd.hooks",  # tensor, node and post-accumulate hooks
    "reference.autograd.accumulate",  # .grad
    "reference.handles",  # the hook tables
)


def _modules(root: Path = REFERENCE) -> dict[str, Path]:
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imports(name: str, path: Path, modules) -> list[tuple[str, bool, int]]:
    """(imported module, inside a function, line) for each import statement of ``path``;
    a ``from package import name`` of a submodule counts as an import of the submodule."""
    found = []
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]

    def targets(node):
        if isinstance(node, ast.Import):
            return [alias.name for alias in node.names]
        base = node.module or ""
        if node.level:
            parent = package[: len(package) - node.level + 1]
            base = ".".join(parent + ([base] if base else []))
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        return list(dict.fromkeys(names))

    def walk(node, local):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.extend((target, local, child.lineno) for target in targets(child))
            walk(child, local or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    walk(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def local_imports(root: Path = REFERENCE) -> list[tuple[str, int]]:
    """(module, line) of every function-local import statement under ``root``."""
    modules = _modules(root)
    return sorted({(name, line) for name, path in modules.items()
                   for _, local, line in _imports(name, path, modules) if local})


def largest_circle(root: Path = REFERENCE, *, module_level_only: bool = False) -> list[str]:
    """The modules of the largest strongly connected component of the import graph."""
    modules = _modules(root)
    graph = {name: sorted({target for target, local, _ in _imports(name, path, modules)
                           if target in modules and target != name and not (local and module_level_only)})
             for name, path in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(v):  # Tarjan's algorithm (the graph is small: recursion is fine)
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            components.append(sorted(component))

    for v in graph:
        if v not in index:
            connect(v)
    return max(components, key=len)


def test_largest_import_circle_does_not_grow():
    circle = largest_circle()
    assert len(circle) <= MAX_CIRCLE, f"the largest import circle grew to {len(circle)} modules: {circle}"


def test_no_circle_among_module_level_imports():
    assert len(largest_circle(module_level_only=True)) == 1


def test_function_local_imports_do_not_grow():
    found = local_imports()
    assert len(found) <= MAX_LOCAL_IMPORTS, (
        f"{len(found)} function-local imports in reference/ (ceiling {MAX_LOCAL_IMPORTS}): {found}")


def test_backward_path_has_no_function_local_import():
    found = [(name, line) for name, line in local_imports() if name in BACKWARD_PATH]
    assert found == [], f"function-local imports on the backward path: {found}"


def test_backward_path_modules_exist():
    assert sorted(set(BACKWARD_PATH) - set(_modules())) == []


def reading_order(root: Path = REFERENCE) -> list[str]:
    """The modules named in ``reference/__init__.py``'s docstring, in order."""
    doc = ast.get_docstring(ast.parse((root / "__init__.py").read_text(encoding="utf-8")))
    modules = _modules(root)
    names = [f"reference.{name}" for name in re.findall(r"``([a-z_.]+)``", doc)]
    return [name for name in dict.fromkeys(names) if name in modules]


def test_reading_order_is_the_dependency_order():
    order = reading_order()
    modules = _modules()
    packages = {name for name, path in modules.items() if path.name == "__init__.py"}
    unlisted = sorted(set(modules) - set(order) - packages)  # a package is listed when it has code
    assert unlisted == [], f"modules missing from the reading order of reference/__init__.py: {unlisted}"
    position = {name: index for index, name in enumerate(order)}
    upward = [(name, line, target) for name in order for target, _, line in _imports(name, modules[name], modules)
              if target in position and position[target] > position[name]]
    assert upward == [], f"imports of a module later in the reading order (module, line, imported): {upward}"
