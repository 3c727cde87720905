"""The ``fw`` surface: every name the suites use on the framework namespace, on the adapter, and
on the framework's own objects (tensors, graph nodes, Function contexts: the tensor-level names).

    python -m conformance.fw_surface            # print docs/fw-surface.md
    python -m conformance.fw_surface --write    # rewrite docs/fw-surface.md
    python -m conformance.fw_surface --check    # exit 1 if docs/fw-surface.md is stale

Generated from the suites' source (their ASTs, read by :mod:`conformance.model.suite_index`), so the list cannot drift from what the tests
call; tests/harness/test_fw_surface.py keeps the committed page in sync.
"""
from __future__ import annotations

import sys
from pathlib import Path

import ast
import threading
import types
import warnings

from conformance import cli
from conformance.model import features, suite_index
from conformance.outputs import needs_checkout, write_text

ROOT = Path(__file__).resolve().parents[1]
SUITES = ROOT / "conformance" / "suites"
DOC = ROOT / "docs" / "fw-surface.md"


def scan(suites_dir: Path = SUITES) -> dict[str, dict[str, set[str]]]:
    """{"fw": {dotted name: {suite, ...}}, "adapter": {...}} over every suite file (the suite
    index's reading of their source)."""
    return suite_index.index_of_dir(suites_dir).surface_by_suite()


#: Attribute names of the plain Python objects the suites also use (lists, dicts, strings,
#: exceptions, threads, warnings): static reading cannot tell them from a tensor's, so they are
#: left out of the tensor-level names (``split`` stays: tensors have it too).
_PLAIN = (set().union(*(dir(t) for t in (list, dict, str, set, tuple, int, float, BaseException,
                                         threading.Thread, threading.Event,
                                         warnings.WarningMessage, types.SimpleNamespace)))
          | {"message", "category", "filename", "lineno", "exc_type", "exc_value", "exc_traceback"}
          - {"split"})
#: Tensor fields torch lets user code assign (``x.grad = g``): framework names although stored.
_ASSIGNABLE = {"grad", "data", "requires_grad"}


def _harness_names() -> set[str]:
    """Methods of the harness objects the suites use (``conformance.liveness`` watchers)."""
    import inspect

    from conformance import liveness

    return {n for _, cls in inspect.getmembers(liveness, inspect.isclass)
            if cls.__module__ == liveness.__name__ for n in vars(cls) if not n.startswith("_")}


def _stored(mod: suite_index.ModuleSource) -> set[str]:
    """Attributes the suites set on objects themselves (``ctx.two = 2.0``, ``node.tag = "x"``):
    names of the test's choosing, not the framework's (except :data:`_ASSIGNABLE`)."""
    return {n.attr for n in ast.walk(mod.tree)
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)} - _ASSIGNABLE


def _own_names(mod: suite_index.ModuleSource) -> set[str]:
    """Attributes the suites' own helper classes define (``self.alive = ...``, methods of a
    ``class Box``): not the framework's. Subclasses of framework classes (``fw.autograd.Function``)
    keep theirs: ``forward``/``backward`` are the framework's protocol."""
    own = set()
    for node in ast.walk(mod.tree):
        if not isinstance(node, ast.ClassDef):
            continue
        if any(suite_index.attribute_chain(b) and suite_index.attribute_chain(b)[0] in ("fw", "base") or
               not isinstance(b, ast.Name) for b in node.bases):
            continue
        for sub in ast.walk(node):
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and sub is not node:
                own.add(sub.name)
            elif isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store) \
                    and isinstance(sub.value, ast.Name) and sub.value.id == "self":
                own.add(sub.attr)
    return own


def tensor_names(suites_dir: Path = SUITES) -> dict[str, set[str]]:
    """attribute name -> suites using it on a framework object (a tensor, graph node or
    Function context), as read from the suites' source by the suite index."""
    index = suite_index.index_of_dir(suites_dir)
    own = _harness_names().union(*(_own_names(m) | _stored(m) for m in index.modules.values()))
    return {name: suites for name, suites in index.attributes_by_suite().items()
            if name not in _PLAIN and name not in own and not name.startswith("__")}


def _arg_kind(node: ast.AST) -> str:
    """What a positional argument of an ``fw`` call is, as an adapter author must accept it."""
    if isinstance(node, ast.Constant):
        return type(node.value).__name__
    if isinstance(node, (ast.Tuple, ast.List)):
        inner = sorted({_arg_kind(e) for e in node.elts})
        return f"{'tuple' if isinstance(node, ast.Tuple) else 'list'} of {'/'.join(inner) or 'nothing'}"
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return type(node.operand.value).__name__
    if isinstance(node, ast.Starred):
        return "*args"
    return "tensor or value"


def call_forms(suites_dir: Path = SUITES) -> dict[str, dict]:
    """dotted ``fw`` name -> {"keywords": {keyword: count}, "forms": {signature: example}}: how
    the suites call each ``fw`` function, read from their source (the signature is the kinds of
    the positional arguments and the keyword names; the example is the shortest such call)."""
    index = suite_index.index_of_dir(suites_dir)
    found: dict[str, dict] = {}
    for mod in index.modules.values():
        for node in ast.walk(mod.tree):
            if not isinstance(node, ast.Call):
                continue
            chain = suite_index.attribute_chain(node.func)
            if not chain or chain[0] != "fw" or len(chain) < 2:
                continue
            name = ".".join(chain)
            entry = found.setdefault(name, {"keywords": {}, "forms": {}})
            words = sorted(k.arg or "**kwargs" for k in node.keywords)
            for word in words:
                entry["keywords"][word] = entry["keywords"].get(word, 0) + 1
            signature = (tuple(_arg_kind(a) for a in node.args), tuple(words))
            text = ast.unparse(node)
            if signature not in entry["forms"] or len(text) < len(entry["forms"][signature]):
                entry["forms"][signature] = text
    return found


#: Answers to what adapter authors asked (issue 36): the facts the suites rely on that the
#: tables below cannot show.
QUESTIONS = """## What the suites assume of `fw`

**Call forms and keywords.** The table below lists, per `fw` function, every keyword the
suites pass and each distinct call form (the kinds of its positional arguments, then its
keywords) with the shortest example from the suites. Sizes come as separate ints
(`fw.ones(3)`, `fw.ones(5, 5)`, `fw.randn(2, 3)`), as a tuple for `fw.full((2,), 5.0)` and
`fw.reshape(d, (1, 3))`; `fw.tensor` takes a Python number or nested lists. Creation calls
pass `requires_grad=`, `device=` (the run's `--device` string, `"cpu"` by default) and
`dtype=` (one of the `fw` dtypes below) as keywords, never positionally. An adapter whose
framework spells a call differently (a shape only as a list, `stop_gradient` for
`requires_grad`) translates it in its namespace (`Adapter.namespace(module, renames={...})`),
never by changing what the call means.

**Default dtypes.** torch's: a floating tensor made without `dtype=` (`fw.ones`, `fw.zeros`,
`fw.randn`, `fw.full`, `fw.tensor([1.0])`) is the framework's default floating type, which
must take gradients (torch: float32); `fw.tensor([1, 2])` of Python ints is an integer type
that cannot require gradients (torch: int64; `engine.requires-grad-float-only` refuses
`requires_grad` on it). The suites name `fw.float32`, `fw.float64`, `fw.int64` and `fw.bool`
where a test needs a particular type; values are compared through `adapter.to_numpy` in
float64, so float32 rounding never decides a verdict.

**`fw.detach(t)`** means `torch.detach`: a new tensor object on every call (never `t`
itself), with no history (`requires_grad` False, no `grad_fn`), that *aliases* `t`: a write
through it changes `t`, and it shares `t`'s version counter, so a saved tensor written
through a detached alias makes backward refuse (`engine.version-counter-error`), and
`identity.data-detach-new-objects` holds it to a new object per call. A
framework whose detach copies breaks those rules; that is a finding, not something the
adapter hides. The suites also call `fw.detach` to read a tensor's values without recording.

**`fw.no_grad`, `fw.enable_grad`** are callables that return a context manager: the suites
write `with fw.no_grad():` (21 times), never `with fw.no_grad:`; a framework whose `no_grad`
is itself a context manager object is wrapped in the namespace (`renames={"no_grad":
lambda: module.no_grad}`). `fw.set_grad_enabled(False)` is used as a context manager
(`with fw.set_grad_enabled(False):`); `fw.is_grad_enabled()` returns a bool.

**The adapter methods** (`adapters/base.py`, each with torch's spelling as its default):
`adapter.backward(t, gradient=None, **keywords)` runs backward (`retain_graph=`,
`create_graph=`, `inputs=` as torch names them); `adapter.clear_grad(t)` drops an
accumulated gradient so that the gradient reads None again: the suites call it in `finally:`
blocks to leave no state behind, so it must not raise where `.grad` is already None;
`adapter.retain_grad(t)` keeps a non-leaf's gradient after backward (a framework that keeps
every gradient makes it a no-op, and the rules that say an unretained non-leaf has none then
record what it does); `adapter.liveness(t)` is the framework's own way to tell that a tensor
object is still alive, without keeping it alive, for frameworks whose tensors refuse weak
references: `conformance.liveness.watch` asks it first, and the default raises
`Unsupported` (not a registry feature: the watch falls back), after which a weak reference or a hook sentinel,
each with its positive control, watches the tensor;
`adapter.inplace(t, "add_", 1.0)` applies an in-place method with Python numbers;
`adapter.version(t)` reads the version counter; `adapter.saved_tensors(ctx)` reads a custom
Function's saved tensors. Where a framework's tensors lack a torch-named attribute or hold it
under another shape, override the translation method rather than adding the attribute to the
framework's class: `adapter.grad_fn(t)` (None for a leaf), `adapter.grad(t)` (the object the
framework holds, tensor or array, never a copy; `adapter.to_numpy` must accept it),
`adapter.set_grad(t, value)`, `adapter.is_leaf(t)`, `adapter.requires_grad(t)`,
`adapter.is_recorded(t)` (observed, never inferred from `requires_grad`) and
`adapter.node_name(node)`; one that cannot answer raises `Unsupported` naming the feature.
A translation renames and reshapes; it never computes the behaviour a rule judges.

**Registry names** (`conformance/features.toml`, the names an adapter's `unsupported` table
takes; docs/writing-rules.md lists them, `python -m conformance.features` shows which tests
need which): `detach_` and the other in-place
methods are `inplace_methods`; `retain_grad` is `retain_grad`; a differentiable backward is
`create_graph_backward`, `backward(inputs=)` is `backward_inputs`; node hooks `node_hooks`;
tensor hooks `tensor_hooks`. `retain_graph`, `fw.autograd.grad`, backward from several roots
(`fw.autograd.backward([a, b])`), a `.grad` read that raises, and slices that are copies have
no feature of their own: they are the engine behaviour the rules judge, so a framework that
lacks or differs in them gets DIVERGES (or ERROR naming what failed), not UNSUPPORTED.
Multi-grad hooks have no registry name either: the hooks suite looks for
`fw.autograd.graph.register_multi_grad_hook` itself, and a framework without it gets
UNSUPPORTED naming that name, with nothing to declare. A name the registry does not know
stops the run with one line naming the nearest known one.

**Before the first run**: `python -m conformance.feature_claims --adapter myfw` checks the
adapter's `unsupported` table against the framework (a declared-missing feature whose names the
framework has is a contradiction); every run's terminal summary repeats it. A third-party
adapter keeps its expected outcomes in its own package: override `Adapter.expectations_file()`
(the default points into this package's `adapters/expectations/`, in site-packages once
installed), or pass `--expectations PATH`. `python -m conformance.expectations_draft` drafts
that file from a run's results. The one-home-rule convention (`home = true`, `independent =
"..."`) and the witness checks (at most 15 lines, importing only the framework) are checked by
this project's tests on its own files; a third-party file is read the same way at run time
(`root_cause`, `reason`, `witness`), and `conformance.cascades.problems(path)` and
`conformance.witness.problems(text, module)` check it on request. Writing an adapter and its
witnesses for a framework that is not torch-shaped: docs/adapters-not-torch-shaped.md.
"""


def render(found=None, tensor=None, forms=None) -> str:
    found = found or scan()
    tensor = tensor if tensor is not None else tensor_names()
    forms = forms if forms is not None else call_forms()
    feature_of = {n: f.name for f in features.registry().values() for n in f.names if "." not in n}
    lines = [
        "# The `fw` surface the suites use",
        "",
        "<!-- generated by `python -m conformance.fw_surface --write`; do not edit by hand -->",
        "",
        "An adapter's `fw` (its torch-shaped namespace) must offer these names, with torch's",
        "meaning, for the suites to reach their checks; the tensors, graph nodes and contexts they",
        "return are then used as user code would (`x.grad`, `y.grad_fn`, `ctx.save_for_backward`).",
        "A missing name is a finding, not a harness error, only where the rule is about it: declare",
        "the feature in the adapter's `unsupported` table instead (its registry name,",
        "`conformance/features.toml`; the tests that need it are then UNSUPPORTED before they run).",
        "",
        "A framework whose module is not torch-shaped builds `fw` with `Adapter.namespace(module,",
        "renames={...}, missing_feature=None, path=\"fw\")` (`adapters/base.py`): the translated",
        "names in `renames` first, then the module's own; any other name raises `MissingName`, both",
        "`Unsupported` (the test is UNSUPPORTED, naming the feature the registry gives that name,",
        "`fw.no_grad` -> `grad_modes`, or `missing_feature`) and `AttributeError` (so `hasattr`",
        "still answers). Nest one per submodule (`path=\"fw.autograd\"`).",
        "",
        "Where frameworks legitimately spell something differently on their own objects, the",
        "suites call the adapter method below, whose default is torch's spelling",
        "(`adapters/base.py`); an adapter overrides it to translate, never by patching the",
        "framework's classes.",
        "",
        *QUESTIONS.splitlines(),
        "",
        "## `fw`",
        "",
        "| name | suites | keywords passed (times) | call forms (positional kinds; keywords): shortest example |",
        "|---|---|---|---|",
    ]
    for name in sorted(found["fw"]):
        entry = forms.get(name, {"keywords": {}, "forms": {}})
        keywords = ", ".join(f"`{k}=` ({n})" for k, n in sorted(entry["keywords"].items()))
        shown = "<br>".join(
            f"({', '.join(args) or 'none'}; {', '.join(words) or 'none'}): `{example}`"
            for (args, words), example in sorted(entry["forms"].items(), key=lambda kv: kv[1])[:6])
        more = len(entry["forms"]) - 6
        shown += f"<br>... {more} more" if more > 0 else ""
        shown = shown.replace("|", "\\|")
        lines.append(f"| `{name}` | {', '.join(sorted(found['fw'][name]))} | {keywords} | {shown} |")
    lines += ["", "## `adapter`", "", "| method | suites |", "|---|---|"]
    for name in sorted(found["adapter"]):
        lines.append(f"| `{name}` | {', '.join(sorted(found['adapter'][name]))} |")
    lines += ["", "## Tensor-level names", "",
              "Attributes and methods the suites use on the framework's own objects (tensors, graph",
              "nodes, Function contexts, handles), read statically from the suites' source, so a",
              "name that plain Python objects also have (a list's `append`) is left out. A name",
              "with a feature belongs to it (`conformance/features.toml`): an adapter that",
              "declares the feature missing gets UNSUPPORTED for the tests using the name; any",
              "other name the framework must offer with torch's meaning.", "",
              "| name | feature | suites |", "|---|---|---|"]
    for name in sorted(tensor):
        lines.append(f"| `{name}` | {feature_of.get(name, '')} | {', '.join(sorted(tensor[name]))} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = cli.Parser("python -m conformance.fw_surface", __doc__)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help=f"rewrite {DOC.relative_to(ROOT)}")
    group.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.write and needs_checkout("--write"):
        return cli.usage_error(parser.prog, needs_checkout("--write"))
    if args.write:
        write_text(DOC, text)  # whole or not at all
        return 0
    if args.check:
        current = DOC.read_text(encoding="utf-8") if DOC.is_file() else ""
        if current != text:
            print(f"{DOC.relative_to(ROOT)} is stale: run python -m conformance.fw_surface --write",
                  file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
