"""Standalone reproduction scripts: one per (rule, framework), plain code, no project imports.

Why derived from the suites: a script written by hand next to each of ~160 tests would drift
from the test it claims to reproduce. A script is therefore assembled from the very source of
the rule's tests (``conformance/suites/test_<suite>.py``):

* the test functions of the rule, without their ``@rule`` / ``@pytest.mark.parametrize``
  decorators;
* every module-level helper they use, transitively, from the suite module and from the
  harness modules a suite may import (``conformance.api``, ``conformance.liveness``,
  ``adapters.base``), copied verbatim; ``liveness.x`` becomes ``x``;
* the fixtures as plain code: ``fw`` becomes the framework's own name (``torch``,
  ``oneflow``, ``reference``), ``device`` a module variable, ``adapter`` a small class with the
  adapter's feature table, ``observe`` a list;
* a runner that calls each test, classifies what happened as the harness does (an
  ``AssertionError`` is DIVERGES, ``Unsupported`` UNSUPPORTED, anything else ERROR) and ends
  with ``RESULT: <OUTCOME>[: message]``: the rule's outcome on that framework.

Where a derived script would not be standalone or would not say what an upstream issue needs
(the ``id(a.grad)`` seed bug should print the alternating ids), a hand-written template in
``conformance/repro/templates/<rule id>.py`` takes precedence (see that package).
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import io
import re
import sys
import textwrap
import tokenize
from pathlib import Path
from typing import Iterable

from conformance import outcomes as _outcomes

ROOT = Path(__file__).resolve().parents[2]
SUITES_DIR = ROOT / "conformance" / "suites"
TEMPLATES_DIR = Path(__file__).parent / "templates"

#: Modules a suite may import whose definitions are copied into a script.
INLINED_MODULES = {
    "conformance.api": ROOT / "conformance" / "api.py",
    "conformance.liveness": ROOT / "conformance" / "liveness.py",
    "conformance.outcomes": ROOT / "conformance" / "outcomes.py",
    "conformance.suites._helpers": ROOT / "conformance" / "suites" / "_helpers.py",
    "adapters.base": ROOT / "adapters" / "base.py",
}
#: Fixture parameters a suite test may take besides its own parametrize arguments.
FIXTURES = ("fw", "adapter", "device", "observe")
#: Severity of outcomes when a rule's tests disagree (first wins): what the rule shows
#: (conformance.outcomes owns the order).
SEVERITY = tuple(o.value for o in _outcomes.ACTUAL_SEVERITY)
#: The import name of each built-in adapter's framework.
from adapters.base import builtin_adapter_classes  # noqa: E402

FRAMEWORK_MODULES = {name: cls.module or name for name, cls in builtin_adapter_classes().items()}
#: Imports a script may contain: the standard library plus these.
ALLOWED_THIRD_PARTY = {"numpy", "objgraph", *FRAMEWORK_MODULES.values()}


class ReproError(Exception):
    """A rule's tests cannot be turned into a standalone script."""


def worst(outcomes: Iterable[str]) -> str:
    """The outcome a rule shows when its tests have ``outcomes`` (by :data:`SEVERITY`)."""
    outcomes = list(outcomes)
    for outcome in SEVERITY:
        if outcome in outcomes:
            return outcome
    return outcomes[0] if outcomes else "PASS"


# -- source model -----------------------------------------------------------------------------
@dataclasses.dataclass
class Definition:
    name: str
    source: str
    node: ast.AST
    module: str
    order: int


@dataclasses.dataclass
class ModuleSource:
    """The top-level definitions and imports of one module."""

    name: str
    text: str
    definitions: dict[str, Definition]
    imports: dict[str, tuple[str, str | None, str]]  # alias -> (module, attribute or None, stmt)
    tree: ast.Module

    @classmethod
    def load(cls, name: str, path: Path) -> "ModuleSource":
        path = Path(path).resolve()
        return _load_module(name, path, path.stat().st_mtime_ns)

    @classmethod
    def parse(cls, name: str, path: Path) -> "ModuleSource":
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
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
        return cls(name, text, definitions, imports, tree)


@functools.lru_cache(maxsize=64)
def _load_module(name: str, path: Path, mtime: int) -> ModuleSource:
    return ModuleSource.parse(name, path)


def _defined_names(node: ast.AST) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def _is_dropped_decorator(dec: ast.AST) -> bool:
    """Decorators that belong to the harness: @rule(...), @pytest.mark.*, @pytest.fixture."""
    target = dec.func if isinstance(dec, ast.Call) else dec
    text = ast.unparse(target)
    return text == "rule" or text.startswith(("pytest.mark.", "pytest.fixture"))


def _segment(lines: list[str], node: ast.AST) -> str:
    """The node's source, keeping decorators that are not the harness's own."""
    start = node.lineno
    kept: list[str] = []
    for dec in getattr(node, "decorator_list", []):
        if not _is_dropped_decorator(dec):
            kept.append("".join(lines[dec.lineno - 1:dec.end_lineno]))
        start = min(start, dec.lineno)
    body_start = node.lineno
    if getattr(node, "decorator_list", None):
        # the def/class line follows the last decorator
        body_start = max(d.end_lineno for d in node.decorator_list) + 1
    text = "".join(kept) + "".join(lines[body_start - 1:node.end_lineno])
    return textwrap.dedent(text)


def _used_names(node: ast.AST, module_aliases: set[str]) -> tuple[set[str], set[tuple[str, str]]]:
    """Names a definition reads (decorators that are dropped excluded), and module.attr pairs."""
    names: set[str] = set()
    attrs: set[tuple[str, str]] = set()
    roots = [node]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        roots = [d for d in node.decorator_list if not _is_dropped_decorator(d)]
        if isinstance(node, ast.ClassDef):
            roots += node.bases + node.keywords + node.body
        else:
            roots += [node.args] + node.body + ([node.returns] if node.returns else [])
    for root in roots:
        for sub in ast.walk(root):
            if isinstance(sub, ast.Name):
                names.add(sub.id)
            elif (isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name)
                  and sub.value.id in module_aliases):
                attrs.add((sub.value.id, sub.attr))
    return names, attrs


def _module_name_of(path: Path) -> str:
    return f"conformance.suites.{path.stem}"


# -- assembly ---------------------------------------------------------------------------------
@dataclasses.dataclass
class TestCase:
    name: str
    params: list[str]
    parametrize: list[tuple[str, list]]  # (argnames, values) from @pytest.mark.parametrize


@dataclasses.dataclass
class Assembly:
    imports: list[str]
    blocks: list[Definition]
    tests: list[TestCase]
    fixtures_autouse: list[str]
    uses_adapter: bool
    identifiers: frozenset = frozenset()


class _Collector:
    def __init__(self) -> None:
        self.modules: dict[str, ModuleSource] = {}
        self.chosen: dict[tuple[str, str], Definition] = {}
        self.imports: dict[str, str] = {}  # statement -> local name
        self.names_taken: dict[str, tuple[str, str]] = {}
        self.uses_adapter = False

    def module(self, name: str, path: Path | None = None) -> ModuleSource:
        if name not in self.modules:
            self.modules[name] = ModuleSource.load(name, path or INLINED_MODULES[name])
        return self.modules[name]

    def add_definition(self, mod: ModuleSource, name: str) -> None:
        key = (mod.name, name)
        if key in self.chosen:
            return
        if name not in mod.definitions and name in mod.imports:
            module, attr, stmt = mod.imports[name]
            if module in INLINED_MODULES and attr is not None:
                return self.add_definition(self.module(module), attr)
            raise ReproError(f"{mod.name}.{name} comes from {stmt!r}, which is not inlined")
        d = mod.definitions[name]
        taken = self.names_taken.get(name)
        if taken is not None and taken != key:
            raise ReproError(f"name {name!r} is defined both in {taken[0]} and {mod.name}")
        self.names_taken[name] = key
        # every name of the same statement (a, b = ...) counts as chosen
        for n, other in mod.definitions.items():
            if other.node is d.node:
                self.chosen[(mod.name, n)] = other
        self.resolve(mod, d.node, local_scope=set())

    def resolve(self, mod: ModuleSource, node: ast.AST, local_scope: set[str]) -> None:
        inlined_aliases = {a for a, (m, attr, _) in mod.imports.items()
                           if attr is None and m in INLINED_MODULES
                           or attr is not None and f"{m}.{attr}" in INLINED_MODULES}
        names, attrs = _used_names(node, inlined_aliases)
        for name in sorted(names - local_scope):
            self.resolve_name(mod, name)
        for alias, attr in sorted(attrs):
            module, sub, _ = mod.imports[alias]
            target = module if sub is None else f"{module}.{sub}"
            self.add_definition(self.module(target), attr)

    def resolve_name(self, mod: ModuleSource, name: str) -> None:
        if name in FIXTURES:
            if name == "adapter":
                self.uses_adapter = True
            return
        if name in mod.definitions:
            self.add_definition(mod, name)
            return
        if name in mod.imports:
            module, attr, stmt = mod.imports[name]
            if attr is None and module in INLINED_MODULES:
                return  # attribute uses (liveness.x) are resolved one by one
            if attr is not None and f"{module}.{attr}" in INLINED_MODULES:
                return
            if module in INLINED_MODULES:
                self.add_definition(self.module(module), attr)
                return
            top = module.split(".")[0]
            if top in ("conformance", "adapters") or (
                    top not in sys.stdlib_module_names and top not in ALLOWED_THIRD_PARTY):
                if top == "pytest":
                    raise ReproError(f"uses pytest ({stmt}) beyond the dropped decorators")
                raise ReproError(f"imports {stmt!r}, which a standalone script cannot")
            self.imports.setdefault(stmt, name)
            return
        # a builtin or a local of the definition: nothing to copy


def _parametrize(node: ast.FunctionDef) -> list[tuple[str, list]]:
    out = []
    for dec in node.decorator_list:
        if (isinstance(dec, ast.Call) and ast.unparse(dec.func) == "pytest.mark.parametrize"):
            argnames = ast.literal_eval(dec.args[0])
            values = ast.literal_eval(dec.args[1])
            out.append((argnames, values))
    return out


def _rule_of(node: ast.FunctionDef) -> str | None:
    for dec in node.decorator_list:
        if isinstance(dec, ast.Call) and ast.unparse(dec.func) == "rule":
            return ast.literal_eval(dec.args[0])
    return None


def _autouse_fixtures(mod: ModuleSource) -> list[str]:
    out = []
    for node in mod.tree.body:
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                if (isinstance(dec, ast.Call) and ast.unparse(dec.func) == "pytest.fixture"
                        and any(k.arg == "autouse" and ast.literal_eval(k.value)
                                for k in dec.keywords)):
                    out.append(node.name)
    return out


def tests_by_rule(suites_dir: Path = SUITES_DIR) -> dict[str, tuple[Path, list[str]]]:
    """rule id -> (suite module path, names of its test functions)."""
    return _tests_by_rule(Path(suites_dir).resolve())


@functools.lru_cache(maxsize=8)
def _tests_by_rule(suites_dir: Path) -> dict[str, tuple[Path, list[str]]]:
    found: dict[str, tuple[Path, list[str]]] = {}
    for path in sorted(suites_dir.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                rule_id = _rule_of(node)
                if rule_id:
                    found.setdefault(rule_id, (path, []))[1].append(node.name)
    return found


def assemble(rule_id: str, suites_dir: Path = SUITES_DIR) -> Assembly:
    """Everything a derived script for ``rule_id`` needs, in the order it is written."""
    suites_dir = Path(suites_dir).resolve()
    stamp = tuple(p.stat().st_mtime_ns for p in sorted(suites_dir.glob("test_*.py")))
    return _assemble(rule_id, suites_dir, stamp)


@functools.lru_cache(maxsize=1024)
def _assemble(rule_id: str, suites_dir: Path, stamp: tuple) -> Assembly:
    index = tests_by_rule(suites_dir)
    if rule_id not in index:
        raise ReproError(f"rule {rule_id!r} has no test in {suites_dir}")
    path, names = index[rule_id]
    collector = _Collector()
    mod = collector.module(_module_name_of(path), path)
    tests: list[TestCase] = []
    autouse = _autouse_fixtures(mod)
    for name in names:
        node = mod.definitions[name].node
        params = [a.arg for a in node.args.args]
        parametrize = _parametrize(node)
        own = {n.strip() for argnames, _ in parametrize for n in argnames.split(",")}
        unknown = [p for p in params if p not in FIXTURES and p not in own]
        if unknown:
            raise ReproError(f"{name} takes fixture(s) {unknown} a script cannot provide")
        collector.add_definition(mod, name)
        collector.uses_adapter = collector.uses_adapter or "adapter" in params
        tests.append(TestCase(name, params, parametrize))
    for name in autouse:
        collector.add_definition(mod, name)
    # the runner and the adapter stand-in raise and catch Unsupported
    collector.add_definition(collector.module("adapters.base"), "Unsupported")
    # library modules first (in a fixed order), then the suite, each in source order
    order = {m: i for i, m in enumerate(["adapters.base", "conformance.api",
                                         "conformance.liveness", mod.name])}
    seen_nodes: set[int] = set()
    blocks = []
    for d in sorted(collector.chosen.values(), key=lambda d: (order.get(d.module, 9), d.order)):
        if id(d.node) not in seen_nodes:
            seen_nodes.add(id(d.node))
            blocks.append(d)
    identifiers = frozenset(n for d in blocks for n in _identifiers(d.node))
    return Assembly(_merge_imports(collector.imports), blocks, tests, autouse,
                    collector.uses_adapter, identifiers)


def _merge_imports(statements: Iterable[str]) -> list[str]:
    """``from m import a`` + ``from m import b`` -> ``from m import a, b``; stdlib first."""
    plain, froms = set(), {}
    for stmt in statements:
        if stmt.startswith("from "):
            module, _, names = stmt[5:].partition(" import ")
            froms.setdefault(module, set()).add(names)
        else:
            plain.add(stmt)
    merged = list(plain) + [f"from {m} import {', '.join(sorted(n))}" for m, n in froms.items()]
    return sorted(merged, key=_import_sort_key)


def _import_sort_key(stmt: str) -> tuple:
    top = stmt.split()[1].split(".")[0]
    return (top not in sys.stdlib_module_names, stmt.startswith("from"), stmt)


# -- rewriting --------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4096)
def rewrite(source: str, framework_module: str, drop_prefixes: tuple[str, ...] = ("liveness",)) -> str:
    """``fw`` -> the framework's name; ``liveness.x`` -> ``x`` (tokens, so strings stay intact)."""
    drop = set(drop_prefixes)
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    out = []
    skip_dot = False
    for i, tok in enumerate(tokens):
        prev = tokens[i - 1] if i else None
        if skip_dot:
            skip_dot = False
            if tok.type == tokenize.OP and tok.string == ".":
                out.append(tok._replace(string=""))
                continue
        if tok.type == tokenize.NAME and not (prev and prev.type == tokenize.OP and prev.string == "."):
            if tok.string == "fw":
                out.append(tok._replace(string=framework_module))
                continue
            nxt = tokens[i + 1] if i + 1 < len(tokens) else None
            if tok.string in drop and nxt is not None and nxt.string == ".":
                out.append(tok._replace(string=""))
                skip_dot = True
                continue
        out.append(tok)
    return _untokenize(out)


def _untokenize(tokens: list[tokenize.TokenInfo]) -> str:
    """Rebuild source from tokens whose strings changed length, line by line."""
    lines: dict[int, list] = {}
    result_lines = []
    src_lines: dict[int, str] = {}
    for tok in tokens:
        for n, line in enumerate(tok.line.splitlines(keepends=True), start=tok.start[0]):
            src_lines.setdefault(n, line)
    edits: dict[int, list[tuple[int, int, str]]] = {}
    for tok in tokens:
        if tok.start[0] == tok.end[0] and tok.type in (tokenize.NAME, tokenize.OP):
            original = src_lines.get(tok.start[0], "")[tok.start[1]:tok.end[1]]
            if original != tok.string:
                edits.setdefault(tok.start[0], []).append((tok.start[1], tok.end[1], tok.string))
    del lines
    for n in sorted(src_lines):
        line = src_lines[n]
        for start, end, text in sorted(edits.get(n, []), reverse=True):
            line = line[:start] + text + line[end:]
        result_lines.append(line)
    return "".join(result_lines)


# -- preamble per framework -------------------------------------------------------------------
@functools.lru_cache(maxsize=16)
def framework_preamble(adapter_name: str) -> str:
    """The lines that import the framework as user code would (OneFlow: preload CUDA libs)."""
    from adapters.base import load_adapter

    return load_adapter(adapter_name).preamble()


@functools.lru_cache(maxsize=16)
def adapter_shim(adapter_name: str) -> str:
    """What the suites' ``adapter`` fixture offers, as a small class with its feature table."""
    from adapters.base import load_adapter

    adapter = load_adapter(adapter_name)
    unsupported = dict(adapter.unsupported)
    to_numpy = ("tensor.detach().numpy()" if adapter_name == "reference"
                else "tensor.detach().cpu().numpy()")
    table = "{\n" + "".join(f"        {k!r}: {v!r},\n" for k, v in sorted(unsupported.items())) + "    }"
    if not unsupported:
        table = "{}"
    return textwrap.dedent(f'''\
        class adapter:
            """What the conformance harness tells the tests about {adapter_name}."""

            name = {adapter_name!r}
            # features {adapter_name} lacks (the tests report them as UNSUPPORTED)
            unsupported = TABLE

            @staticmethod
            def require(feature):
                if feature in adapter.unsupported:
                    raise Unsupported(f"{{adapter.name}} does not support {{feature}}: "
                                      f"{{adapter.unsupported[feature]}}")

            @staticmethod
            def feature(feature, getter):
                adapter.require(feature)
                try:
                    return getter()
                except AttributeError as exc:
                    raise Unsupported(f"{{adapter.name}} does not support {{feature}}: {{exc}}") from exc

            @staticmethod
            def to_numpy(tensor):
                return {to_numpy}
        ''').replace("TABLE", table) + _contract_methods(adapter)


#: The adapter methods the suites call for what frameworks spell differently (adapters/base.py).
CONTRACT_METHODS = ("saved_tensors", "needs_input_grad", "retain_grad", "version", "inplace",
                    "backward", "register_node_hook", "register_node_prehook", "next_functions",
                    "subclass_instance")


def _contract_methods(adapter) -> str:
    """The adapter's own contract methods (its override or the torch-shaped default), copied
    from its source and attached to the shim class, so a script calls what the harness does."""
    import inspect

    out = ["\n# the adapter's methods for what frameworks spell differently (copied from its "
           "source)\n"]
    for name in CONTRACT_METHODS:
        method = getattr(type(adapter), name, None)
        if method is None:
            continue
        source = textwrap.dedent(inspect.getsource(method))
        out.append(source.replace(f"def {name}(self", f"def _adapter_{name}(self", 1))
        out.append(f"adapter.{name} = classmethod(_adapter_{name})\n\n")
    return "\n".join(out)


RUNNER = '''\
# -- run the rule's tests and say whether the rule holds ------------------------------------
RULE = {rule_id!r}
LEVEL = {level!r}
_observed = []
observe = _observed.append  # what an IMPLEMENTATION-DEFINED rule records


def check(name, call):
    """Call one test; classify what happened the way the conformance harness does."""
    _observed.clear()
    try:
{call_with_fixtures}
    except Unsupported as exc:
        outcome, message = "UNSUPPORTED", str(exc)
    except AssertionError as exc:
        outcome, message = "DIVERGES", f"{{type(exc).__name__}}: {{exc}}"
    except Exception as exc:
        # a prerequisite rule failed first (conformance.outcomes.Blocked): not this rule's verdict
        outcome = "BLOCKED" if type(exc).__name__ == "Blocked" else "ERROR"
        message = f"{{type(exc).__name__}}: {{exc}}"
    else:
        outcome, message = "PASS", ""
        if LEVEL == "IMPLEMENTATION-DEFINED":
            outcome = "OBSERVED" if _observed else "ERROR"
            message = repr(_observed[0] if len(_observed) == 1 else _observed)
    if LEVEL == "IMPLEMENTATION-DEFINED" and outcome == "DIVERGES":
        outcome = "ERROR"  # nothing can diverge from an implementation-defined rule
    print(f"{{name}}: {{outcome}}" + (f"\\n    " + message.replace("\\n", "\\n    ") if message else ""))
    return outcome, message


results = [
{calls}
]
SEVERITY = {severity!r}
outcome, message = min(results, key=lambda r: SEVERITY.index(r[0]))
first_line = message.strip().splitlines()[0] if message.strip() else ""
print(f"RESULT: {{outcome}}" + (f": {{first_line}}" if outcome != "PASS" and first_line else ""))
'''


def _call_expr(test: TestCase, module: str) -> list[str]:
    """One ``check(...)`` line per parameter set of the test."""
    def args(extra: dict) -> str:
        parts = []
        for p in test.params:
            if p == "fw":
                parts.append(module)
            elif p == "observe":
                parts.append("observe")
            elif p in ("device", "adapter"):
                parts.append(p)
            else:
                parts.append(f"{p}={extra[p]!r}")
        return ", ".join(parts)

    combos: list[dict] = [{}]
    for argnames, values in test.parametrize:
        names = [n.strip() for n in argnames.split(",")]
        new = []
        for combo in combos:
            for value in values:
                vals = value if len(names) > 1 else (value,)
                new.append({**combo, **dict(zip(names, vals))})
        combos = new
    lines = []
    for combo in combos:
        label = test.name + ("[" + "-".join(str(v) for v in combo.values()) + "]" if combo else "")
        lines.append(f"    check({label!r}, lambda: {test.name}({args(combo)})),")
    return lines


def _fixture_wrapper(autouse: list[str], module: str) -> str:
    """The try-body of ``check``: the call, inside the suite's autouse fixtures."""
    if not autouse:
        return "        call()"
    lines = []
    indent = "        "
    for name in autouse:
        lines.append(f"{indent}_{name} = {name}(adapter, {module})  # the suite's autouse fixture")
        lines.append(f"{indent}next(_{name})")
    lines.append(f"{indent}try:")
    lines.append(f"{indent}    call()")
    lines.append(f"{indent}finally:")
    for name in reversed(autouse):
        lines.append(f"{indent}    next(_{name}, None)")
    return "\n".join(lines)


# -- the public entry points ------------------------------------------------------------------
def template_path(rule_id: str) -> Path:
    return TEMPLATES_DIR / f"{rule_id}.py"


def header(rule, adapter_name: str, version: str | None, device: str) -> str:
    what = f"{adapter_name} {version}" if version else adapter_name
    statement = textwrap.fill(rule.statement, 92, initial_indent="# ", subsequent_indent="# ")
    return (f"# Reproduces conformance rule {rule.id} [{rule.level}] on {what} ({device}).\n"
            f"{statement}\n"
            f"# Standalone: run it with `python this_file.py`; the last line says\n"
            f"# RESULT: PASS (the rule holds) or RESULT: <OUTCOME>: <why>.\n")


def render_template(rule_id: str, adapter_name: str, device: str = "cpu") -> str:
    text = template_path(rule_id).read_text(encoding="utf-8")
    module = FRAMEWORK_MODULES.get(adapter_name, adapter_name)
    return (text.replace("{preamble}", framework_preamble(adapter_name).rstrip("\n"))
                .replace("{fw}", module).replace("{device}", device))


def generate(rule, adapter_name: str, version: str | None = None, device: str = "cpu",
             suites_dir: Path = SUITES_DIR) -> str:
    """The standalone script reproducing ``rule`` (a catalogue Rule) on ``adapter_name``."""
    head = header(rule, adapter_name, version, device)
    if template_path(rule.id).is_file():
        return head + "# (hand-written: conformance/repro/templates/" + rule.id + ".py)\n" + \
            render_template(rule.id, adapter_name, device)
    asm = assemble(rule.id, suites_dir)
    module = FRAMEWORK_MODULES.get(adapter_name, adapter_name)
    if module != "fw" and module in asm.identifiers:
        raise ReproError(f"the tests already use the name {module!r}")
    parts = [head, "from __future__ import annotations\n\n"]
    preamble = framework_preamble(adapter_name)
    imports = [i for i in asm.imports if i + "\n" not in preamble]
    parts.append("\n".join(imports) + "\n\n" if imports else "")
    parts.append(preamble + f"\ndevice = {device!r}\n\n")
    inlined = [d for d in asm.blocks if d.module in INLINED_MODULES]
    suite = [d for d in asm.blocks if d.module not in INLINED_MODULES]
    if inlined:
        parts.append("\n# -- from the conformance harness (conformance/api.py, liveness.py) ---------\n\n")
        parts.append("\n\n".join(rewrite(d.source, module).rstrip() for d in inlined) + "\n\n")
    if asm.uses_adapter or asm.fixtures_autouse:
        parts.append("\n" + adapter_shim(adapter_name) + "\n")
    parts.append(f"\n# -- the test(s) of the rule, from conformance/suites/{_suite_file(asm, suites_dir)} --\n\n")
    parts.append("\n\n".join(rewrite(d.source, module).rstrip() for d in suite) + "\n\n\n")
    calls = [line for t in asm.tests for line in _call_expr(t, module)]
    parts.append(RUNNER.format(rule_id=rule.id, level=rule.level, severity=SEVERITY, calls="\n".join(calls),
                               call_with_fixtures=_fixture_wrapper(asm.fixtures_autouse, module)))
    return "".join(parts)  # tests run check_standalone() on every script


def _suite_file(asm: Assembly, suites_dir: Path) -> str:
    mods = {d.module for d in asm.blocks if d.module not in INLINED_MODULES}
    return ", ".join(sorted(m.rsplit(".", 1)[-1] + ".py" for m in mods))


def _identifiers(node: ast.AST) -> set[str]:
    out = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.arg):
            out.add(sub.arg)
    return out


def check_standalone(script: str) -> None:
    """Raise ReproError if the script does not compile or imports anything of this project."""
    try:
        tree = ast.parse(script)
    except SyntaxError as exc:
        raise ReproError(f"generated script does not compile: {exc}") from exc
    for node in ast.walk(tree):
        mods = []
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mods = [node.module or ""]
        for m in mods:
            top = m.split(".")[0]
            if top not in sys.stdlib_module_names and top not in ALLOWED_THIRD_PARTY:
                raise ReproError(f"generated script imports {m!r}")
            if top in ("conformance", "adapters", "pytest"):
                raise ReproError(f"generated script imports {m!r}")


RESULT_LINE = re.compile(r"^RESULT: (?P<outcome>[A-Z]+)(?::\s*(?P<message>.*))?$", re.M)


def parse_result(output: str) -> tuple[str, str] | None:
    """The outcome and message of a script's last ``RESULT:`` line (None if it printed none)."""
    matches = list(RESULT_LINE.finditer(output))
    if not matches:
        return None
    m = matches[-1]
    return m["outcome"], (m["message"] or "")
