"""Reproduction scripts: one per (rule, run), from the run itself.

Why derived from the suites: a script written by hand next to each of ~200 tests would drift
from the test it claims to reproduce. A script is therefore assembled from the source of the
rule's tests **at the suite revision the run recorded** (:mod:`conformance.model.suite_source`:
the working tree when its digest matches, else ``git show <revision>:<path>``):

* the test functions of the rule (which :mod:`conformance.model.suite_index` finds), without their
  ``@rule`` / ``@pytest.mark.parametrize`` decorators, the suite's autouse fixtures and every
  module-level definition of the suite module they use, transitively, copied verbatim;
  ``fw`` becomes the framework's own name (``torch``, ``reference``) where the adapter's
  ``fw`` is that module itself (``Adapter.fw_is_module``), so the tests read like user code;
  elsewhere (Paddle, OneFlow, tinygrad, torch.compile, third-party adapters) it stays ``fw``
  and the script's header says plainly that it runs through the adapter, and that the root
  cause's witness is the code that imports the framework alone;
* everything else they use from the project is imported from the installed harness, never
  copied: ``conformance.api`` (``raises``, ``prerequisite``...), ``conformance.liveness``, the
  suites' helper modules (``conformance.suites._helpers`` or any new one) and
  :class:`conformance.repro.runtime.Repro`, which loads the adapter by the run's recorded spec
  (built-in, entry point or ``package.module:Class``) on the run's device and classifies each
  test with the harness's own :func:`conformance.outcomes.test_outcome` (and the run's timeout
  and leak check), each test after checking the features it needs (listed per test in the
  script, from the suite index: a ``@judged_without`` of one test drops no need of another).
  The one exception: a helper module of the suites package whose source at
  the run's revision differs from the installed one (a run of an older revision) has the
  definitions the tests use copied from that revision, as the tests are. No list of modules
  says which is which. The script ends with ``RESULT: <OUTCOME>[: why]``: the outcome of the
  rule's cell for that run.

A script runs with ``python script.py`` wherever autograd-conformance and the framework are
installed. Where a derived script would not say what an upstream issue needs (the
``id(a.grad)`` seed bug should print the alternating ids), a hand-written template in
``conformance/repro/templates/<rule id>.py`` replaces the tests (see that package); it goes
through the same runtime.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import io
import re
import sys
import textwrap
import tokenize
from pathlib import Path
from typing import Any, Iterable

from conformance.model import features, suite_index
from conformance.model import suite_source as _source
from conformance.model.suite_index import FIXTURES, Definition, ModuleSource, SuiteSourceError
from conformance.model.suite_source import SourceUnavailable, Tree, WorkingTree

TEMPLATES_DIR = Path(__file__).parent / "templates"

#: The package of the suites: its non-test modules are the suites' own helpers, whose source
#: belongs to the suite revision a run recorded (everything else is the harness).
SUITES_PACKAGE = suite_index.module_name_of(_source.SUITES)
#: Imports a script may contain: the standard library, these, and the framework's module.
ALLOWED_THIRD_PARTY = {"numpy", "objgraph", "conformance", "adapters"}
#: What a project module is: the harness (imported by a script) or the suites' helpers.
PROJECT_PACKAGES = ("conformance", "adapters")


class ReproError(Exception):
    """A rule's tests cannot be turned into a reproduction script."""


def _is_suite_module(module: str) -> bool:
    return module.startswith(SUITES_PACKAGE + ".") and \
        module.rsplit(".", 1)[-1].startswith("test_")


def _used_names(node: ast.AST, module_aliases: set[str]) -> tuple[set[str], set[tuple[str, str]]]:
    """Names a definition reads (decorators that are dropped excluded), and module.attr pairs."""
    names: set[str] = set()
    attrs: set[tuple[str, str]] = set()
    roots = [node]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        roots = [d for d in node.decorator_list if not suite_index.is_harness_decorator(d)]
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


# -- assembly ---------------------------------------------------------------------------------
@dataclasses.dataclass
class TestCase:
    name: str
    params: list[str]
    parametrize: list[tuple[str, list]]  # (argnames, values) from @pytest.mark.parametrize
    #: the features this test needs (conformance.features.needed_by): the script's runtime
    #: makes it UNSUPPORTED where the adapter lacks one, before it runs, as the plugin does
    needs: tuple[str, ...] = ()
    #: pytest's ids of its parameter sets, in :func:`_call_lines`' order (empty: built from
    #: the values, as for literal parameters)
    ids: tuple[str, ...] = ()


@dataclasses.dataclass
class Assembly:
    imports: list[str]          # standard library, third-party and harness imports of the code
    harness: list[str]          # ``from conformance.api import raises, ...``: imported, not copied
    blocks: list[Definition]
    tests: list[TestCase]
    fixtures_autouse: list[str]
    suite_file: str
    identifiers: frozenset = frozenset()
    inlined: dict[str, str] = dataclasses.field(default_factory=dict)  # module -> its relpath
    dropped_prefixes: tuple[str, ...] = ()  # aliases of inlined modules (``_helpers.x`` -> ``x``)


class _Collector:
    """The definitions a rule's tests need, each either copied from the run's tree or imported.

    A project module the suites use is the installed harness's, imported by the script, with
    one exception: a helper module of the suites package (``conformance/suites/<not test_>.py``)
    whose source in the run's tree differs from the installed one (an older revision, or a
    helper the installed harness lacks): its definitions are copied from the tree."""

    def __init__(self, tree: Tree, installed: Tree) -> None:
        self.tree, self.installed = tree, installed
        self.chosen: dict[tuple[str, str], Definition] = {}
        self.imports: dict[str, str] = {}  # statement -> local name
        self.harness: dict[str, set[str]] = {}  # harness module -> names imported from it
        self.names_taken: dict[str, tuple[str, str]] = {}
        self.dropped: set[str] = set()
        self._inlined: dict[str, ModuleSource | None] = {}
        self._modules: dict[str, bool] = {}

    def inlined(self, module: str) -> ModuleSource | None:
        """The tree's source of ``module`` when the script must copy from it, else None."""
        if module not in self._inlined:
            found = None
            if module.startswith(SUITES_PACKAGE + ".") and not _is_suite_module(module):
                mine = suite_index.find_module(self.tree, module)
                if mine is not None:
                    theirs = (mine if self.tree.key == self.installed.key
                              else suite_index.find_module(self.installed, module))
                    if theirs is None or theirs.text != mine.text:
                        found = mine
            self._inlined[module] = found
        return self._inlined[module]

    def is_module(self, module: str) -> bool:
        if module not in self._modules:
            self._modules[module] = any(suite_index.find_module(t, module) is not None
                                        for t in (self.tree, self.installed))
        return self._modules[module]

    def module_alias(self, mod: ModuleSource, alias: str) -> str | None:
        """The project module ``alias`` names in ``mod`` (``from conformance import liveness``)."""
        module, attr, _ = mod.imports[alias]
        if module.split(".")[0] not in PROJECT_PACKAGES:
            return None
        if attr is None:
            return module
        return f"{module}.{attr}" if self.is_module(f"{module}.{attr}") else None

    def take(self, local: str, source: tuple[str, str]) -> None:
        taken = self.names_taken.get(local)
        if taken is not None and taken != source:
            raise ReproError(f"name {local!r} is both {'.'.join(taken)} and {'.'.join(source)}")
        self.names_taken[local] = source

    def check_harness(self, module: str, attr: str | None = None) -> None:
        """ReproError unless the installed harness has ``module`` (and its ``attr``)."""
        if _is_suite_module(module):
            raise ReproError(f"the suites of {self.tree.describe()} use the test module "
                             f"{module}; move what they share to a helper module of the suites")
        try:
            present = attr is None or hasattr(importlib.import_module(module), attr)
        except ImportError:
            present = False
        if not present:
            raise ReproError(f"the suites of {self.tree.describe()} use {module}"
                             f"{'.' + attr if attr else ''}, which this installed harness does "
                             f"not have")

    def import_from_harness(self, module: str, attr: str, local: str | None = None) -> None:
        self.check_harness(module, attr)
        local = local or attr
        self.take(local, (module, attr))
        self.harness.setdefault(module, set()).add(attr if local == attr else f"{attr} as {local}")

    def add_definition(self, mod: ModuleSource, name: str) -> None:
        key = (mod.name, name)
        if key in self.chosen:
            return
        if name not in mod.definitions and name in mod.imports:
            return self.resolve_name(mod, name)  # a name the copied module imports itself
        if name not in mod.definitions:
            raise ReproError(f"{mod.name} defines no {name!r} ({self.tree.describe()})")
        d = mod.definitions[name]
        self.take(name, key)
        # every name of the same statement (a, b = ...) counts as chosen
        for n, other in mod.definitions.items():
            if other.node is d.node:
                self.chosen[(mod.name, n)] = other
        self.resolve(mod, d.node, local_scope=set())

    def resolve(self, mod: ModuleSource, node: ast.AST, local_scope: set[str]) -> None:
        aliases = {a: m for a in mod.imports if (m := self.module_alias(mod, a)) is not None}
        names, attrs = _used_names(node, set(aliases))
        for name in sorted(names - local_scope):
            self.resolve_name(mod, name)
        for alias, attr in sorted(attrs):
            source = self.inlined(aliases[alias])
            if source is not None:
                self.dropped.add(alias)
                self.add_definition(source, attr)
            else:
                self.check_harness(aliases[alias], attr)

    def resolve_name(self, mod: ModuleSource, name: str) -> None:
        if name in FIXTURES:
            return
        if name in mod.definitions:
            self.add_definition(mod, name)
            return
        if name not in mod.imports:
            return  # a builtin or a local of the definition: nothing to copy
        module, attr, stmt = mod.imports[name]
        top = module.split(".")[0]
        if top == "pytest":
            raise ReproError(f"uses pytest ({stmt}) beyond the dropped decorators")
        if top in PROJECT_PACKAGES:
            target = self.module_alias(mod, name)
            if target is not None:  # a module: its attributes are resolved one by one (resolve)
                if self.inlined(target) is None:
                    self.check_harness(target)
                    self.take(name, (target, ""))
                    self.imports.setdefault(stmt, name)
                return
            source = self.inlined(module)
            if source is not None:
                if name != attr:
                    raise ReproError(f"{mod.name} imports {stmt!r}: a copied helper cannot be renamed")
                self.add_definition(source, attr)
            else:
                self.import_from_harness(module, attr, local=name)
            return
        if top not in sys.stdlib_module_names and top not in ALLOWED_THIRD_PARTY:
            raise ReproError(f"imports {stmt!r}, which a script cannot")
        self.imports.setdefault(stmt, name)


def tests_by_rule(tree: Tree | None = None) -> dict[str, tuple[str, list[str]]]:
    """rule id -> (suite module path in the tree, names of its test functions): the suite
    index's (:mod:`conformance.model.suite_index`)."""
    return {rule: (tests[0].file, [t.name for t in tests])
            for rule, tests in suite_index.index_of(tree).rules().items()}


def assemble(rule_id: str, tree: Tree | None = None,
             names: Iterable[str] | None = None) -> Assembly:
    """Everything a script for ``rule_id`` needs, in the order it is written; ``names``: the
    test functions the run recorded for the rule (default: every test of the rule)."""
    tree = tree or WorkingTree()
    return _assemble(rule_id, tree, tree.key, tuple(sorted(names)) if names else None)


_ASSEMBLED: dict[tuple, Assembly] = {}


def _assemble(rule_id: str, tree: Tree, key: tuple, names: tuple | None) -> Assembly:
    cache_key = (rule_id, key, names)
    if cache_key in _ASSEMBLED:
        return _ASSEMBLED[cache_key]
    index = suite_index.index_of(tree)
    if rule_id not in index.rules():
        raise ReproError(f"rule {rule_id!r} has no test in the suites of {tree.describe()}")
    found = index.rules()[rule_id]
    if names:
        missing = sorted(set(names) - {t.name for t in found})
        if missing:
            raise ReproError(f"the run recorded test(s) {missing} of {rule_id}, which the suites "
                             f"of {tree.describe()} do not have")
        found = [t for t in found if t.name in names]
    relpath = found[0].file
    collector = _Collector(tree, WorkingTree(_source.ROOT))
    try:
        mod = index.modules[relpath]
        tests: list[TestCase] = []
        autouse = list(suite_index.autouse_fixtures(mod))
        for test in found:
            own = {n.strip() for argnames, _ in test.parametrize for n in argnames.split(",")}
            unknown = [p for p in test.params if p not in FIXTURES and p not in own]
            if unknown:
                raise ReproError(f"{test.name} takes fixture(s) {unknown} a script cannot provide")
            collector.add_definition(mod, test.name)
            tests.append(TestCase(test.name, list(test.params),
                                  [(a, list(v)) for a, v in test.parametrize],
                                  features.needed_by(test, index),
                                  test.ids if len(test.parametrize) == 1 else ()))
        for name in autouse:
            collector.add_definition(mod, name)
    except SuiteSourceError as exc:
        raise ReproError(str(exc)) from None
    # copied helpers first (by module), then the suite, each in source order
    seen_nodes: set[int] = set()
    blocks = []
    for d in sorted(collector.chosen.values(), key=lambda d: (d.module == mod.name, d.module, d.order)):
        if id(d.node) not in seen_nodes:
            seen_nodes.add(id(d.node))
            blocks.append(d)
    identifiers = frozenset(n for d in blocks for n in _identifiers(d.node))
    harness = [f"from {m} import {', '.join(sorted(names))}"
               for m, names in sorted(collector.harness.items())]
    inlined = {m: src.relpath for m, src in sorted(collector._inlined.items())
               if src is not None and any(d.module == m for d in blocks)}
    out = Assembly(_merge_imports(collector.imports), harness, blocks, tests, autouse, relpath,
                   identifiers, inlined, tuple(sorted(collector.dropped)))
    if len(_ASSEMBLED) > 4096:
        _ASSEMBLED.clear()
    _ASSEMBLED[cache_key] = out
    return out


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
def rewrite(source: str, framework_module: str, drop_prefixes: tuple[str, ...] = ()) -> str:
    """``fw`` -> the framework's name; ``<prefix>.x`` -> ``x`` for the aliases of modules whose
    definitions were copied (tokens, so strings stay intact)."""
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


# -- the run a script is for ----------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class RunInfo:
    """What a script needs of its run: from a results header, or a run of results.json."""

    adapter_spec: str
    device: str = "cpu"
    framework_version: str | None = None
    suite_revision: str | None = None
    suite_dirty: bool | None = None
    suite_digest: str | None = None
    timeout: float = 0
    leak_check: tuple[int, int] | None = None
    label: str | None = None

    @classmethod
    def of(cls, run, label: str | None = None) -> "RunInfo":
        """From a results header (:class:`conformance.results.RunHeader`) or a column of
        results.json (:class:`conformance.results.combined.Column`); the adapter spec is the
        one the run recorded (older files: its adapter name)."""
        header = getattr(run, "header", run)
        leak = header.leak_check
        return cls(adapter_spec=run.adapter_to_load, device=header.device or "cpu",
                   framework_version=header.framework_version,
                   suite_revision=header.suite_revision, suite_dirty=header.suite_dirty,
                   suite_digest=header.suite_digest,
                   timeout=float(header.conformance_timeout or 0),
                   leak_check=tuple(leak) if leak else None,
                   label=label or getattr(run, "label", None))

    def header(self) -> dict[str, Any]:
        """The fields :func:`conformance.model.suite_source.tree_for` reads."""
        return {"suite_revision": self.suite_revision, "suite_dirty": self.suite_dirty,
                "suite_digest": self.suite_digest}

    def tree(self, root: Path = _source.ROOT) -> Tree:
        """The suite source of this run (ReproError when it cannot be found)."""
        try:
            return _source.tree_for(self.header(), root)
        except SourceUnavailable as exc:
            raise ReproError(str(exc)) from None


@functools.lru_cache(maxsize=32)
def framework_of(adapter_spec: str) -> tuple[str | None, str]:
    """(the framework's import name, the lines that import it as user code would) for an
    adapter spec; (None, "") for one that is not a built-in adapter.

    Read from the built-in adapter classes (``adapters/*.py``, whose import loads no
    framework) and nothing else: a spec comes from a results file, and rendering a report
    must run nothing a results file names (``"os:abort"``). A script for another adapter
    loads it by its spec when the user runs the script (:mod:`conformance.repro.runtime`)."""
    from adapters.base import builtin_adapter_classes

    for name, cls in builtin_adapter_classes().items():
        if adapter_spec in (name, f"{cls.__module__}:{cls.__qualname__}"):
            break
    else:
        return None, ""
    module = getattr(cls, "module", "") or None
    if module is None or not module.isidentifier():
        return None, ""
    return module, cls().preamble()


@functools.lru_cache(maxsize=32)
def through_adapter(adapter_spec: str) -> bool:
    """Whether a script for ``adapter_spec`` calls the framework through the adapter's ``fw``
    (a translation: a namespace over the framework, compiled ops) rather than the framework's
    module itself. True for any adapter that is not built in: its ``fw`` is unknown until it
    is loaded, and rendering loads nothing a results file names."""
    from adapters.base import builtin_adapter_classes

    for name, cls in builtin_adapter_classes().items():
        if adapter_spec in (name, f"{cls.__module__}:{cls.__qualname__}"):
            return not getattr(cls, "fw_is_module", False)
    return True


# -- the public entry points ------------------------------------------------------------------
def template_path(rule_id: str) -> Path:
    return TEMPLATES_DIR / f"{rule_id}.py"


def header(rule_id: str, level: str, statement: str, run: RunInfo, tree: Tree | None) -> str:
    """Two comment paragraphs: the rule (the same in every run's script of it), then the run
    (the same in every script of that run), so that the report stores each once."""
    what = run.adapter_spec + (f" {run.framework_version}" if run.framework_version else "")
    if isinstance(tree, _source.GitTree):
        suites = f"suite revision {tree.revision[:12]} (git show)"
    elif run.suite_revision:
        suites = f"suite revision {run.suite_revision[:12]} (as in this checkout)"
    else:
        suites = "this checkout's suites"
    text = textwrap.fill(statement, 92, initial_indent="# ", subsequent_indent="# ")
    return (f"# Reproduces conformance rule {rule_id} [{level}]:\n{text}\n\n"
            f"# Run: {what} on {run.device}" + (f" (report column {run.label!r})" if run.label else "")
            + f", with the tests of\n# {suites}.\n"
            + (_through_note(run) if through_adapter(run.adapter_spec) else "") +
            f"# Run it with `python this_file.py` where autograd-conformance and the framework are\n"
            f"# installed; the last line says RESULT: PASS (the rule holds) or RESULT: <OUTCOME>: <why>,\n"
            f"# decided by the harness's own classification (conformance.repro.runtime).\n")


def _through_note(run: RunInfo) -> str:
    """What a script run through an adapter says plainly: ``fw`` is not the framework."""
    module = framework_of(run.adapter_spec)[0] or "the framework"
    return (f"# THROUGH THE ADAPTER: these tests call `fw`, adapter {run.adapter_spec!r}'s torch-shaped\n"
            f"# translation over {module}, not `import {module}` itself; code a {module} developer can\n"
            f"# run with {module} alone is the root cause's witness:\n"
            f"# python -m conformance.witness --adapter {run.adapter_spec} --issue CAUSE\n")


def _run_args(run: RunInfo) -> str:
    args = [f"adapter_spec={run.adapter_spec!r}", f"device={run.device!r}"]
    if run.framework_version:
        args.append(f"framework_version={run.framework_version!r}")
    if run.suite_revision:
        args.append(f"suite_revision={run.suite_revision!r}")
    if run.timeout:
        args.append(f"timeout={run.timeout:g}")
    if run.leak_check:
        args.append(f"leak_check={list(run.leak_check)!r}")
    return "RUN = dict(" + ", ".join(args) + ")\n"


def _head(rule_id: str, level: str, run: RunInfo, name: str, preamble: str,
          imports: list[str], harness: list[str]) -> str:
    parts = ["from __future__ import annotations\n\n"]
    if imports:
        parts.append("\n".join(i for i in imports if i + "\n" not in preamble) + "\n\n")
    parts.append("\n".join([*harness, "from conformance.repro.runtime import Repro"]) + "\n\n")
    if preamble:
        parts.append(preamble.rstrip("\n") + "\n\n")
    parts.append(f"RULE, LEVEL = {rule_id!r}, {level!r}\n\n")
    parts.append("# the run this script reproduces: its adapter (by the spec it used), device, "
                 "options\n" + _run_args(run) + "\n")
    binding = (f"{name} = repro.fw  # the namespace the suites call `fw`: {name} itself"
               if name != "fw" else "fw = repro.fw  # the adapter's namespace (through the adapter)")
    parts.append("repro = Repro(RULE, LEVEL, **RUN)\n" + binding +
                 "\nadapter, device, observe = repro.adapter, repro.device, repro.observe\n")
    return "".join(parts)


def generate(rule, run: RunInfo | str, tree: Tree | None = None,
             names: Iterable[str] | None = None) -> str:
    """The script reproducing ``rule`` (a catalogue Rule, or anything with ``id``, ``level``
    and ``statement``) for ``run`` (a :class:`RunInfo`, or an adapter spec for the working
    tree on the cpu). ``tree``: the suite source (default: the run's, see
    :meth:`RunInfo.tree`); ``names``: the test functions the run recorded for the rule."""
    if isinstance(run, str):
        run = RunInfo(adapter_spec=run)
    tree = tree if tree is not None else run.tree()
    module, preamble = framework_of(run.adapter_spec)
    head = header(rule.id, rule.level, rule.statement, run, tree)
    direct = not through_adapter(run.adapter_spec)
    if template_path(rule.id).is_file():
        name = module if module and direct else "fw"
        body = render_template(rule.id, name, preamble)
        return (head + "# (hand-written: conformance/repro/templates/" + rule.id + ".py)\n"
                + _head(rule.id, rule.level, run, name, preamble, [], []) + "\n\n" + body.rstrip()
                + "\n\n\nrepro.check('test_script', test_script)\nrepro.finish()\n")
    asm = assemble(rule.id, tree, names)
    name = module if module and direct and module not in asm.identifiers else "fw"
    parts = [head, _head(rule.id, rule.level, run, name, preamble, asm.imports, asm.harness)]
    copied = [d for d in asm.blocks if d.module in asm.inlined]
    suite = [d for d in asm.blocks if d.module not in asm.inlined]
    if copied:
        parts.append(f"\n\n# -- test helpers as at that revision ({', '.join(asm.inlined.values())}) --\n\n")
        parts.append("\n\n".join(rewrite(d.source, name, asm.dropped_prefixes).rstrip()
                                   for d in copied) + "\n")
    parts.append(f"\n\n# -- the test(s) of the rule ({asm.suite_file}) --\n\n")
    parts.append("\n\n".join(rewrite(d.source, name, asm.dropped_prefixes).rstrip()
                               for d in suite) + "\n\n\n")
    parts.append("# -- run them as the harness does: each test's outcome, then the rule's --\n")
    fixtures = "".join(f"lambda: {f}(" + ", ".join(_fixture_args(asm, f, name)) + "), "
                       for f in asm.fixtures_autouse)
    for test in asm.tests:
        parts.extend(_call_lines(test, name, f"({fixtures})" if fixtures else ""))
    parts.append("repro.finish()\n")
    return "".join(parts)


def _fixture_args(asm: Assembly, fixture: str, name: str) -> list[str]:
    node = next(d.node for d in asm.blocks if d.name == fixture)
    return [name if a.arg == "fw" else a.arg for a in node.args.args]


def _call_lines(test: TestCase, module: str, fixtures: str) -> list[str]:
    """One ``repro.check(...)`` line per parameter set of the test."""
    def args(extra: dict) -> str:
        parts = []
        for p in test.params:
            if p == "fw":
                parts.append(module)
            elif p in ("device", "adapter", "observe"):
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
    ids = test.ids if len(test.ids) == len(combos) and any(test.ids) else None
    for number, combo in enumerate(combos):
        label = test.name + ("[" + (ids[number] if ids else "-".join(str(v) for v in combo.values()))
                             + "]" if combo else "")
        extra = (f", fixtures={fixtures}" if fixtures else "") + \
            (f", needs={test.needs!r}" if test.needs else "")
        lines.append(f"repro.check({label!r}, lambda: {test.name}({args(combo)}){extra})\n")
    return lines


def render_template(rule_id: str, name: str, preamble: str = "") -> str:
    """A hand-written template with ``{fw}`` (the framework's name in the script) and
    ``{preamble}`` (the lines importing it) filled in."""
    text = template_path(rule_id).read_text(encoding="utf-8")
    return text.replace("{preamble}", preamble.rstrip("\n")).replace("{fw}", name)


def _identifiers(node: ast.AST) -> set[str]:
    out = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.arg):
            out.add(sub.arg)
    return out


def check_script(script: str, module: str | None = None) -> None:
    """Raise ReproError unless the script compiles and imports only the standard library,
    numpy/objgraph, the framework and the harness modules it may (never pytest, never a copy
    of the harness's classification)."""
    try:
        tree = ast.parse(script)
    except SyntaxError as exc:
        raise ReproError(f"generated script does not compile: {exc}") from exc
    for node in ast.walk(tree):
        mods = []
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mods = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names
                                          if node.module == SUITES_PACKAGE]
        for m in mods:
            top = m.split(".")[0]
            if top in PROJECT_PACKAGES:
                if _is_suite_module(m):  # tests are copied; a test module imports pytest
                    raise ReproError(f"generated script imports {m!r}")
            elif top not in sys.stdlib_module_names and top not in ALLOWED_THIRD_PARTY \
                    and top != module:
                raise ReproError(f"generated script imports {m!r}")
    if "def classify" in script or "SEVERITY" in script:
        raise ReproError("generated script carries its own classification")


RESULT_LINE = re.compile(r"^RESULT: (?P<outcome>[A-Z]+)(?::\s*(?P<message>.*))?$", re.M)


def parse_result(output: str) -> tuple[str, str] | None:
    """The outcome and message of a script's last ``RESULT:`` line (None if it printed none)."""
    matches = list(RESULT_LINE.finditer(output))
    if not matches:
        return None
    m = matches[-1]
    return m["outcome"], (m["message"] or "")
