"""The suite index: which tests check which rule, what each test uses, read once from the source.

Why one reader: "the tests of a rule" is asked by the expectations check at collection
(:mod:`conformance.traceability`), the specification page (:mod:`conformance.spec`), the
reproduction scripts (:mod:`conformance.repro.derive`) and the ``fw`` surface listing
(:mod:`conformance.fw_surface`). Read by four matchers they disagreed at the edges (a nested
function, ``api.rule(...)``); read here they cannot.

The index is built from the suites' *source* (their ASTs), never by importing them: the harness
checks expectations before any test module is imported, and a reproduction script for an older
run reads that run's suite revision through ``git show`` (a :class:`conformance.model.suite_source.Tree`).
One index per tree and revision (:func:`index_of`, cached by the tree's key).

A test is a top-level ``def test_*`` (or a method ``test_*`` of a top-level ``Test*`` class) of
a ``test_<suite>.py`` module, as pytest collects them; its rule is the string argument of its
``@rule(...)`` (or ``@api.rule(...)``) decorator. :class:`ModuleSource` is the one parse of a
module's top-level definitions and imports, which the scripts copy definitions from.
"""
from __future__ import annotations

import ast
import dataclasses
import textwrap
from collections import defaultdict
from pathlib import Path
from typing import Any

from conformance.model.suite_source import SUITES, SourceUnavailable, Tree, WorkingTree

#: Fixture parameters a suite test may take besides its own parametrize arguments.
FIXTURES = ("fw", "adapter", "device", "observe")
#: The names whose attribute chains are the framework surface the suites use (fw_surface).
SURFACE_ROOTS = ("fw", "adapter")
#: The decorators whose string arguments the index reads, by what they say about a test.
MARKERS = {"needs": ("needs", "features.needs"),
           "without": ("judged_without", "features.judged_without"),
           "subjects": ("subject", "spelling.subject")}


#: Modules under this dotted prefix are the suites' own (tests and helpers), not the harness.
_SUITES_PACKAGE = "conformance.suites"


class SuiteSourceError(Exception):
    """A suite or helper module cannot be read or parsed."""


# -- one module's top-level definitions and imports ------------------------------------------
@dataclasses.dataclass
class Definition:
    name: str
    source: str      # the statement's text, without the harness's own decorators
    node: ast.AST
    module: str
    order: int


@dataclasses.dataclass
class ModuleSource:
    """The top-level definitions and imports of one module, as text and AST."""

    name: str
    relpath: str
    text: str
    definitions: dict[str, Definition]
    imports: dict[str, tuple[str, str | None, str]]  # alias -> (module, attribute or None, stmt)
    tree: ast.Module

    @classmethod
    def parse(cls, name: str, text: str, relpath: str = "") -> "ModuleSource":
        tree = ast.parse(text, relpath or name)
        lines = text.splitlines(keepends=True)
        definitions: dict[str, Definition] = {}
        imports: dict[str, tuple[str, str | None, str]] = {}
        for order, node in enumerate(tree.body):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    stmt = (f"import {alias.name} as {alias.asname}" if alias.asname
                            else f"import {alias.name}")
                    imports[local] = (alias.name, None, stmt)
            elif isinstance(node, ast.ImportFrom):
                if node.module == "__future__":
                    continue
                for alias in node.names:
                    local = alias.asname or alias.name
                    stmt = f"from {node.module} import {alias.name}" + (
                        f" as {alias.asname}" if alias.asname else "")
                    imports[local] = (node.module or "", alias.name, stmt)
            else:
                names = _defined_names(node)
                if not names:
                    continue
                source = _segment(lines, node)
                for n in names:
                    definitions[n] = Definition(n, source, node, name, order)
        return cls(name, relpath, text, definitions, imports, tree)


def module_name_of(relpath: str) -> str:
    """``conformance/suites/_helpers.py`` -> ``conformance.suites._helpers``."""
    path = relpath[:-3] if relpath.endswith(".py") else relpath
    if Path(path).is_absolute():  # a suites directory outside a tree (a test project)
        return "conformance.suites." + Path(path).name
    name = path.replace("/", ".")
    return name[:-len(".__init__")] if name.endswith(".__init__") else name


def relpaths_of(module: str) -> tuple[str, str]:
    """Where module ``module`` can live in a tree: ``a/b.py`` or ``a/b/__init__.py``."""
    base = module.replace(".", "/")
    return f"{base}.py", f"{base}/__init__.py"


#: (tree key, relpath) -> the parsed module, or the error reading it gave. Errors are kept
#: too: deriving a script asks of every name it meets whether the tree has it as a module, and
#: each miss in a git revision was a ``git show`` of its own (3,800 of them for 30 report builds).
_MODULES: dict[tuple, ModuleSource | SuiteSourceError] = {}


def load_module(tree: Tree, relpath: str, name: str | None = None) -> ModuleSource:
    """The parsed module at ``relpath`` of ``tree`` (cached per tree and revision)."""
    key = (tree.key, relpath)
    if key not in _MODULES:
        if len(_MODULES) > 1024:
            _MODULES.clear()
        _MODULES[key] = _parse(tree, relpath, name)
    found = _MODULES[key]
    if isinstance(found, SuiteSourceError):
        raise SuiteSourceError(*found.args)
    return found


def _parse(tree: Tree, relpath: str, name: str | None) -> ModuleSource | SuiteSourceError:
    try:
        text = tree.read(relpath)
    except (OSError, SourceUnavailable) as exc:
        return SuiteSourceError(f"{relpath} ({tree.describe()}): {exc}")
    try:
        return ModuleSource.parse(name or module_name_of(relpath), text, relpath)
    except (SyntaxError, ValueError) as exc:
        return SuiteSourceError(f"{relpath} ({tree.describe()}): {exc}")


def find_module(tree: Tree, module: str) -> ModuleSource | None:
    """Module ``module`` (dotted) of ``tree``, or None when the tree has no such file."""
    for relpath in relpaths_of(module):
        try:
            return load_module(tree, relpath, module)
        except SuiteSourceError:
            continue
    return None


def _defined_names(node: ast.AST) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def is_harness_decorator(dec: ast.AST) -> bool:
    """Decorators that belong to the harness: @rule(...), @needs(...), @subject(...),
    @pytest.mark.*, @pytest.fixture."""
    target = dec.func if isinstance(dec, ast.Call) else dec
    text = ast.unparse(target)
    return (text in ("rule", "api.rule", *(n for names in MARKERS.values() for n in names))
            or text.startswith(("pytest.mark.", "pytest.fixture")))


def _segment(lines: list[str], node: ast.AST) -> str:
    """The node's source, keeping decorators that are not the harness's own."""
    kept: list[str] = []
    for dec in getattr(node, "decorator_list", []):
        if not is_harness_decorator(dec):
            kept.append("".join(lines[dec.lineno - 1:dec.end_lineno]))
    body_start = node.lineno
    if getattr(node, "decorator_list", None):
        # the def/class line follows the last decorator
        body_start = max(d.end_lineno for d in node.decorator_list) + 1
    text = "".join(kept) + "".join(lines[body_start - 1:node.end_lineno])
    return textwrap.dedent(text)


# -- the tests --------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class SuiteTest:
    """One test function of a suite module."""

    name: str
    rule: str | None
    suite: str
    file: str                     # its module's path in the tree
    line: int
    module: str                   # dotted module name
    params: tuple[str, ...]       # the function's parameters (fixtures and parametrize args)
    parametrize: tuple[tuple[str, tuple], ...]  # (argnames, values) per @pytest.mark.parametrize
    ids: tuple[str, ...]          # pytest's parameter ids ("" alone: not parametrized)
    uses: frozenset[tuple[str, str]]  # (module, name) it reads: its suite's and imported helpers
    #: what of ``uses`` it reads outside its side observations and parametrize cases (needs)
    judged_uses: frozenset[tuple[str, str]]
    surface: frozenset[str]       # dotted fw.* / adapter.* names its body touches
    #: attribute names its body uses on framework objects (tensors, graph nodes, contexts):
    #: ``y.grad_fn``, ``t.register_hook(...)``; see :func:`attributes_of`
    attributes: frozenset[str] = frozenset()
    needs: tuple[str, ...] = ()   # the features its ``@needs(...)`` decorators name
    #: the features its ``@judged_without(...)`` decorators name (guarded by the test itself)
    without: tuple[str, ...] = ()
    #: what its ``@subject(...)`` decorators name (``"view"``, ``"grad="``): the methods and
    #: assignments it uses as themselves, which a feature of the registry may name
    subjects: tuple[str, ...] = ()
    #: per ``@pytest.mark.parametrize``: (its first argname, per case (by index) the surface
    #: chains and attribute names that case's values touch). A case's values are needs of that
    #: case alone (``x.view`` in one lambda of the list makes one case need ``view_method``).
    cases: tuple[tuple[str, tuple[tuple[frozenset, frozenset], ...]], ...] = ()


class SuiteIndex:
    """The tests of one suite source tree, by rule and by module."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self.tests: list[SuiteTest] = []
        self.modules: dict[str, ModuleSource] = {}   # relpath -> parsed test module
        self.errors: dict[str, str] = {}             # relpath -> why it could not be read
        for relpath in tree.suite_files():
            if not relpath.rsplit("/", 1)[-1].startswith("test_"):
                continue
            try:
                mod = load_module(tree, relpath)
            except SuiteSourceError as exc:
                self.errors[relpath] = str(exc)
                continue
            self.modules[relpath] = mod
            self.tests.extend(_tests_of(mod, relpath))
        self.by_rule: dict[str, list[SuiteTest]] = defaultdict(list)
        for test in self.tests:
            if test.rule is not None:
                self.by_rule[test.rule].append(test)
        self.by_rule = dict(self.by_rule)

    def rules(self) -> dict[str, list[SuiteTest]]:
        return self.by_rule

    def names_by_rule(self) -> dict[str, set[str]]:
        """rule id -> names of its test functions."""
        return {rule: {t.name for t in tests} for rule, tests in self.by_rule.items()}

    def module(self, name: str) -> ModuleSource | None:
        """Module ``name`` (dotted) of this tree: a suite module or a helper module."""
        return next((m for m in self.modules.values() if m.name == name), None) \
            or find_module(self.tree, name)

    def helpers_of(self, test: SuiteTest) -> list[tuple[ModuleSource, Definition]]:
        """The suite definitions ``test`` reads, followed transitively: its own module's and the
        suites package's helper modules' (``conformance.suites._helpers``), not the harness's.
        What it touches through them is what it touches (conformance.features): what it calls
        only inside a side observation (``if aside(...):``) or a parametrize case is left out."""
        out, seen, todo = [], set(), sorted(test.judged_uses)
        while todo:
            module, name = todo.pop()
            if (module, name) in seen or not module.startswith(_SUITES_PACKAGE):
                continue
            seen.add((module, name))
            mod = self.module(module)
            if mod is None or name not in mod.definitions:
                continue
            out.append((mod, mod.definitions[name]))
            todo.extend(sorted(uses_of(mod.definitions[name].node, mod, judged=True)))
        return out

    def attributes_by_suite(self) -> dict[str, set[str]]:
        """attribute name -> suites whose module uses it on a non-namespace object
        (:func:`attributes_of` over each whole suite module)."""
        found: dict[str, set[str]] = defaultdict(set)
        for relpath, mod in self.modules.items():
            suite = Path(relpath).stem[len("test_"):]
            for name in attributes_of(mod.tree, mod):
                found[name].add(suite)
        return dict(found)

    def surface_by_suite(self) -> dict[str, dict[str, set[str]]]:
        """{"fw": {dotted name: {suite, ...}}, "adapter": {...}}: every chain rooted at ``fw``
        or ``adapter`` anywhere in a suite module (its tests, fixtures and local helpers)."""
        found: dict[str, dict[str, set[str]]] = {root: defaultdict(set) for root in SURFACE_ROOTS}
        for relpath, mod in self.modules.items():
            suite = Path(relpath).stem[len("test_"):]
            for name in surface_of(mod.tree):
                found[name.split(".")[0]][name].add(suite)
        return found


def _tests_of(mod: ModuleSource, relpath: str) -> list[SuiteTest]:
    """The module's tests; a method of a ``Test*`` class also carries the class's markers
    (``@rule``, ``@needs``, ``@judged_without``, ``@subject``), as pytest's items do."""
    suite = Path(relpath).stem[len("test_"):]
    functions = []  # (test function, its class or None)
    for node in mod.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
            functions.append((node, None))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            functions.extend((n, node) for n in node.body
                             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                             and n.name.startswith("test_"))
    out = []
    for node, owner in functions:
        marked = (owner, node) if owner is not None else (node,)
        out.append(SuiteTest(
            name=node.name, rule=rule_of(node) or (rule_of(owner) if owner else None),
            suite=suite, file=relpath, line=node.lineno,
            module=mod.name, params=tuple(a.arg for a in node.args.args if a.arg != "self"),
            parametrize=parametrize_of(node), ids=_ids(node),
            uses=frozenset(uses_of(node, mod)), judged_uses=frozenset(uses_of(node, mod, judged=True)),
            surface=frozenset(surface_of(node, judged=True)),
            attributes=frozenset(attributes_of(node, mod, judged=True)),
            cases=cases_of(node, mod),
            needs=tuple(f for n in marked for f in needs_of(n)),
            without=tuple(f for n in marked for f in judged_without_of(n)),
            subjects=tuple(f for n in marked for f in subjects_of(n))))
    return out


def _marker_args(node: ast.AST, kind: str) -> tuple[str, ...]:
    """The string literals given to ``node``'s decorators of ``kind`` (a key of MARKERS)."""
    found: list[str] = []
    for dec in getattr(node, "decorator_list", []):
        if isinstance(dec, ast.Call) and ast.unparse(dec.func) in MARKERS[kind]:
            found += [a.value for a in dec.args
                      if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return tuple(found)


def needs_of(node: ast.AST) -> tuple[str, ...]:
    """The feature names of ``@needs("a", "b")`` decorators of ``node`` (string literals)."""
    return _marker_args(node, "needs")


def autouse_fixtures(mod: ModuleSource) -> tuple[str, ...]:
    """The names of ``mod``'s top-level ``@pytest.fixture(autouse=True)`` functions: what runs
    around each of its tests (a reproduction script calls them around each test too)."""
    out = []
    for node in mod.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for dec in node.decorator_list:
                if (isinstance(dec, ast.Call) and ast.unparse(dec.func) == "pytest.fixture"
                        and any(k.arg == "autouse" and isinstance(k.value, ast.Constant)
                                and k.value.value is True for k in dec.keywords)):
                    out.append(node.name)
    return tuple(out)


def judged_without_of(node: ast.AST) -> tuple[str, ...]:
    """The feature names of ``@judged_without(...)`` decorators of ``node``: features the test
    touches but guards itself, so they are not needs (conformance.features)."""
    return _marker_args(node, "without")


def subjects_of(node: ast.AST) -> tuple[str, ...]:
    """The names a test's ``@subject(...)`` decorators give (``"grad="`` for assigning
    ``.grad``): an assignment reads as a plain attribute statically, so only the marker tells a
    test about assigning ``.grad`` from one that reads it."""
    return _marker_args(node, "subjects")


# -- what a test judges: its body less its side observations and its parametrize cases ----------
#: the call that opens a side observation (``if aside(adapter, "graph_nodes", what=...):``)
ASIDE = ("aside", "api.aside")


def aside_features(test: ast.AST) -> tuple[str, ...] | None:
    """The features named by ``test`` when it is a call ``aside(adapter, "f", ..., what=...)``
    (string literals after the adapter), or an ``and`` of conditions one of which is (the
    body then runs only where ``aside`` said yes), else None."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        for value in test.values:
            found = aside_features(value)
            if found is not None:
                return found
        return None
    if isinstance(test, ast.Call) and ast.unparse(test.func) in ASIDE:
        return tuple(a.value for a in test.args[1:]
                     if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return None


def asides_of(root: ast.AST) -> list[tuple[ast.If, tuple[str, ...]]]:
    """Every ``if aside(...):`` under ``root`` with the features it names."""
    return [(n, aside_features(n.test)) for n in ast.walk(root)
            if isinstance(n, ast.If) and aside_features(n.test) is not None]


def _is_parametrize(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and ast.unparse(node.func) == "pytest.mark.parametrize"


def walk_judged(root: ast.AST):
    """``ast.walk`` of what a test judges: it skips the bodies of its side observations
    (``if aside(...):``, whose features the call names and the harness checks at run time) and
    the values of its ``@pytest.mark.parametrize`` lists (needs of each case: :func:`cases_of`)."""
    todo = [root]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and aside_features(node.test) is not None:
            todo.extend([node.test, *node.orelse])
        elif _is_parametrize(node) and len(node.args) >= 2:
            todo.extend([node.func, node.args[0], *node.args[2:], *node.keywords])
        else:
            todo.extend(ast.iter_child_nodes(node))


def _case_values(dec: ast.Call) -> list[ast.AST] | None:
    """The case nodes of a parametrize decorator's argvalues (a literal list or tuple), else None."""
    values = dec.args[1] if len(dec.args) >= 2 else None
    if isinstance(values, (ast.List, ast.Tuple)):
        return list(values.elts)
    return None


def cases_of(node: ast.AST, mod: "ModuleSource") -> tuple:
    """Per parametrize decorator of ``node``: (its first argname, per case the surface chains
    and attribute names its values touch); see :attr:`SuiteTest.cases`."""
    out = []
    for dec in getattr(node, "decorator_list", []):
        if not _is_parametrize(dec):
            continue
        values = _case_values(dec)
        try:
            argnames = ast.literal_eval(dec.args[0])
        except (ValueError, IndexError, TypeError, SyntaxError):
            continue
        first = (argnames.split(",")[0] if isinstance(argnames, str) else argnames[0]).strip()
        if values is None:
            continue
        out.append((first, tuple((frozenset(surface_of(v)), frozenset(attributes_of(v, mod)))
                                 for v in values)))
    return tuple(out)


def attributes_of(root: ast.AST, mod: ModuleSource, judged: bool = False) -> set[str]:
    """Attribute names used under ``root`` on objects that are not the ``fw``/``adapter``
    namespaces, an imported module, or a local alias of one of them (``fwad =
    fw.autograd.forward_ad``): what the code reads or calls on the framework's own objects
    (``y.grad_fn``, ``fw.ones(2).register_hook``, ``ctx.save_for_backward``), and, as static
    reading cannot know types, on plain Python objects too (``log.append``). ``judged``: only
    what :func:`walk_judged` reaches."""
    walk = walk_judged if judged else ast.walk
    namespaces = set(SURFACE_ROOTS) | set(mod.imports)
    for node in ast.walk(root):  # local aliases of a namespace chain
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)):
            chain = attribute_chain(node.value)
            if chain and chain[0] in namespaces:
                namespaces.add(node.targets[0].id)
    found = set()
    for node in walk(root):
        if isinstance(node, ast.Attribute):
            chain = attribute_chain(node)
            if chain is None or chain[0] not in namespaces:
                found.add(node.attr)
    return found


def rule_of(node: ast.AST) -> str | None:
    """The rule id of a ``@rule("<id>")`` (or ``@api.rule``) decorator of ``node``."""
    for dec in getattr(node, "decorator_list", []):
        if (isinstance(dec, ast.Call) and ast.unparse(dec.func) in ("rule", "api.rule")
                and dec.args and isinstance(dec.args[0], ast.Constant)
                and isinstance(dec.args[0].value, str)):
            return dec.args[0].value
    return None


def parametrize_of(node: ast.AST) -> tuple[tuple[str, tuple], ...]:
    """(argnames, values) of each ``@pytest.mark.parametrize`` with literal arguments."""
    return tuple((argnames, values) for argnames, values, _ in _parametrize(node))


def _parametrize(node: ast.AST) -> list[tuple[str, tuple, list[str]]]:
    return [entry for dec in getattr(node, "decorator_list", []) for entry in _parametrize_decorator(dec)]


class Code:
    """A parametrize value that is code, not a literal (``lambda a: a.view(2, 2)``), kept as
    its source: a reproduction script writes it as itself (``repr``); ``str`` is its part of
    pytest's id (``<argname><index>``)."""

    def __init__(self, source: str, id: str) -> None:
        self.source, self.id = source, id

    def __repr__(self) -> str:
        return self.source

    def __str__(self) -> str:
        return self.id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Code) and (self.source, self.id) == (other.source, other.id)

    def __hash__(self) -> int:
        return hash((self.source, self.id))


def _value(node: ast.AST, argname: str, index: int) -> Any:
    """A parametrize value: the literal, else its source as :class:`Code`."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        return Code(ast.unparse(node), f"{argname}{index}")


def _parametrize_decorator(dec: ast.AST) -> list[tuple[str, tuple, list[str]]]:
    """[(argnames, values, ids)] of a ``@pytest.mark.parametrize`` whose names, list and ids
    are written out in the source (a value that is code is kept as :class:`Code`), else []."""
    if not _is_parametrize(dec) or len(dec.args) < 2 \
            or not isinstance(dec.args[1], (ast.List, ast.Tuple)):
        return []
    try:
        argnames = ast.literal_eval(dec.args[0])
        given = next((k.value for k in dec.keywords if k.arg == "ids"), None)
        ids = [str(i) for i in ast.literal_eval(given)] if given is not None else None
    except (ValueError, IndexError, TypeError, SyntaxError):
        return []  # computed parameters: not known from the source
    if not isinstance(argnames, str):
        argnames = ",".join(argnames)
    names = [n.strip() for n in argnames.split(",")]
    multi = len(names) > 1
    values = []
    for index, case in enumerate(dec.args[1].elts):
        if multi:
            if not isinstance(case, (ast.Tuple, ast.List)) or len(case.elts) != len(names):
                return []
            values.append(tuple(_value(e, n, index) for e, n in zip(case.elts, names)))
        else:
            values.append(_value(case, names[0], index))
    values = tuple(values)
    if ids is None:
        ids = ["-".join(_id(v) for v in value) if multi else _id(value) for value in values]
    return [(argnames, values, ids)]


def _ids(node: ast.AST) -> tuple[str, ...]:
    """pytest's ids of the parameter sets, in its order: the decorator nearest the function
    gives the first part of an id and varies slowest."""
    combos = [""]
    for _, _, ids in reversed(_parametrize(node)):
        combos = [f"{c}-{i}" if c else i for c in combos for i in ids]
    return tuple(combos)


def _id(value: Any) -> str:
    if isinstance(value, Code):
        return str(value)
    return str(value) if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def uses_of(node: ast.AST, mod: ModuleSource, judged: bool = False) -> set[tuple[str, str]]:
    """(module, name) pairs a definition reads (a test, a helper function or class, an
    assignment): its own module's definitions, names it imports and attributes of imported
    modules (``liveness.weak`` -> ("conformance.liveness", "weak")). ``judged``: only what
    :func:`walk_judged` reaches (a helper called in a side observation is not a need)."""
    walk = walk_judged if judged else ast.walk
    found = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        roots = [d for d in node.decorator_list if not is_harness_decorator(d)] + [node.args, *node.body]
    elif isinstance(node, ast.ClassDef):
        roots = [*node.decorator_list, *node.bases, *node.keywords, *node.body]
    else:
        roots = [node]
    for sub in (s for root in roots for s in walk(root)):
        if isinstance(sub, ast.Name):
            if sub.id in mod.definitions and sub.id != getattr(node, "name", None):
                found.add((mod.name, sub.id))
            elif sub.id in mod.imports:
                module, attr, _ = mod.imports[sub.id]
                if attr is not None:
                    found.add((module, attr))
        elif (isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name)
              and sub.value.id in mod.imports):
            module, attr, _ = mod.imports[sub.value.id]
            found.add((module if attr is None else f"{module}.{attr}", sub.attr))
    return found


def attribute_chain(node: ast.AST) -> list[str] | None:
    """``fw.autograd.grad`` -> ["fw", "autograd", "grad"]; None if not rooted at a name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def surface_of(root: ast.AST, judged: bool = False) -> set[str]:
    """The longest ``fw.*`` / ``adapter.*`` attribute chains under ``root`` (``judged``: only
    what :func:`walk_judged` reaches)."""
    walk = walk_judged if judged else ast.walk
    inner = {id(n.value) for n in ast.walk(root)
             if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute)}
    found = set()
    for node in walk(root):
        if isinstance(node, ast.Attribute) and id(node) not in inner:
            chain = attribute_chain(node)
            if chain and chain[0] in SURFACE_ROOTS:
                found.add(".".join(chain))
    return found


# -- one index per tree -----------------------------------------------------------------------
_INDEXES: dict[tuple, SuiteIndex] = {}


def index_of(tree: Tree | None = None) -> SuiteIndex:
    """The index of ``tree`` (default: this checkout's suites), built once per tree key."""
    tree = tree if tree is not None else WorkingTree()
    if tree.key not in _INDEXES:
        if len(_INDEXES) > 32:
            _INDEXES.clear()
        _INDEXES[tree.key] = SuiteIndex(tree)
    return _INDEXES[tree.key]


def index_of_dir(suites_dir: Path) -> SuiteIndex:
    """The index of a suites directory (the one a pytest run collects, wherever it is)."""
    suites_dir = Path(suites_dir).resolve()
    if suites_dir.parent.name == "conformance" and suites_dir.name == Path(SUITES).name:
        return index_of(WorkingTree(suites_dir.parents[1]))
    return index_of(WorkingTree(suites_dir.parent, suites=suites_dir))
