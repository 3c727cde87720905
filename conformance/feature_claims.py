"""Whether what an adapter declares missing is really missing from its framework.

    python -m conformance.feature_claims --adapter tinygrad     # one line per declared feature

Why: a feature in an adapter's ``unsupported`` table turns every test that needs it into
UNSUPPORTED before it runs, and nothing else checks the declaration. A wrong one (a feature
the framework has after all) silently keeps its tests from judging the framework. So for each
declared feature the registry's surface names (``conformance/features.toml``) are looked up on
the framework:

- ``fw.<dotted>`` on the adapter's namespace, and on the framework's own module under the same
  path (a name the adapter's namespace hides is still the framework's);
- a bare attribute name on what the suites use it on: a small tensor that requires grad, the
  result of one op on it, that result's ``grad_fn`` and the first node it links to, and a
  Function ``ctx`` where ``fw.autograd.Function`` exists (one custom op is applied to get one;
  the names are looked up inside its forward, the ctx itself is not kept);
- ``method(keyword=)`` (the registry's ``keywords``) in the signature of that method of the
  tensor's class (read, not called);
- ``adapter.<method>`` by reading, not calling: the adapter implements it when a class of its
  own (below :class:`adapters.base.Adapter`) defines it with a body that does more than
  ``self.require(...)`` / ``raise Unsupported(...)``; the base's defaults are torch's spelling,
  which the bare names already probe.

Each declared feature is then ``absent`` (the declaration holds), ``present`` (a name it implies
exists: the declaration is contradicted), ``explained`` (every present name has the adapter's
reason why it is not the feature: ``Adapter.unsupported_although_present``), or ``unprobed``
(the registry lists no surface name nor keyword, only ``adapter.require``/``@needs``). An explanation for a
name that is not present is stale, and counts as a contradiction too (the adapter's words must
stay true).

Nothing is called beyond attribute lookup, one tensor, one op and one custom op, and no
property runs: a name is read statically on the object's class, and only a name the class
lacks is asked of the object (its own attributes, or its class's ``__getattr__``). The command runs the check in a child interpreter
(:func:`conformance.isolation.probe`, which also reports it to the pytest plugin for the run's
terminal summary), so a framework that hangs or crashes there is one line, not this tool's end.
Exit: 0 every declaration holds, 1 one is contradicted, 4 bad input.
"""
from __future__ import annotations

import ast
import dataclasses
import inspect
import sys
import textwrap
from typing import Any

from conformance import cli

# the record of one declaration's check (its own module: the start-up probe carries it back from
# its child, and this tool runs that probe; one defined below the other would import in a circle)
from conformance.claims import ABSENT, EXPLAINED, PRESENT, UNPROBED, Claim  # noqa: E402,F401


@dataclasses.dataclass
class Subjects:
    """What the names are looked up on: (where, object) pairs, and why one could not be made."""

    fw: Any
    module: Any                                   # the framework's own module, or None
    objects: list[tuple[str, Any]]
    notes: list[str]


def subjects(adapter, names=()) -> Subjects:
    """The framework objects a bare name is looked up on, made with the adapter's ``fw``: a
    tensor that requires grad, a result of one op on it, its grad_fn and the first node that
    links to, and a custom Function's ctx (which of ``names`` it has: :class:`_SeenCtx`).
    Whatever cannot be made is left out, with a note."""
    fw = adapter.fw
    module = sys.modules.get(getattr(adapter, "module", "") or "")
    objects: list[tuple[str, Any]] = []
    notes: list[str] = []
    try:
        leaf = fw.ones(2, requires_grad=True)
        objects.append(("a tensor that requires grad", leaf))
    except Exception as exc:  # noqa: BLE001 - a framework (or fake) that cannot make one
        notes.append(f"a tensor (fw.ones(2, requires_grad=True) raised {type(exc).__name__})")
        return Subjects(fw, module, objects, notes)
    try:
        result = leaf * 2
        objects.append(("the result of an op", result))
    except Exception as exc:  # noqa: BLE001
        notes.append(f"a result of an op (tensor * 2 raised {type(exc).__name__})")
        result = None
    node = _lookup(result, "grad_fn") if result is not None else None
    if node is not None:
        objects.append(("its grad_fn", node))
        linked = _first_linked(node)
        if linked is not None:
            objects.append(("the node grad_fn links to", linked))
    ctx = _function_ctx(fw, leaf, names, notes)
    if ctx is not None:
        objects.append(("a Function ctx", ctx))
    return Subjects(fw, module, objects, notes)


@dataclasses.dataclass(frozen=True)
class _SeenCtx:
    """Which names a Function ctx had, looked up inside the forward that received it: the ctx
    itself is not kept past it (a framework may not expect a ctx to outlive its Function)."""

    names: frozenset


def _lookup(obj: Any, name: str) -> Any:
    """``obj.name`` or None: attribute lookup only (its value, if a plain one)."""
    try:
        return getattr(obj, name, None)
    except Exception:  # noqa: BLE001 - a property that fails: nothing to follow
        return None


def _first_linked(node: Any) -> Any:
    """The first node ``node.next_functions`` names (torch: (node, input_nr) pairs; Paddle:
    nodes), or None."""
    links = _lookup(node, "next_functions")
    try:
        for entry in list(links or ()):
            entry = entry[0] if isinstance(entry, tuple) and entry else entry
            if entry is not None:
                return entry
    except Exception:  # noqa: BLE001 - a method rather than a list, or anything else
        return None
    return None


def _function_ctx(fw: Any, tensor: Any, names, notes: list[str]) -> _SeenCtx | None:
    """Which of ``names`` the ctx a custom Function's forward receives has, from one
    application to ``tensor``; None where ``fw.autograd.Function`` is missing or applying it
    fails."""
    try:
        base = fw.autograd.Function
    except AttributeError:
        return None
    seen = []

    def forward(ctx, x):
        seen.append(_SeenCtx(frozenset(name for name in names if _has_name(ctx, name))))
        return x * 1

    def backward(ctx, grad):
        return grad

    try:
        probe = type(base)("FeatureClaimsProbe", (base,), {
            "forward": staticmethod(forward), "backward": staticmethod(backward)})
        probe.apply(tensor)
    except Exception as exc:  # noqa: BLE001
        notes.append(f"a Function ctx (applying a custom Function raised {type(exc).__name__})")
    return seen[0] if seen else None


def _has_name(obj: Any, name: str) -> bool:
    """Whether ``obj`` has attribute ``name``, without running a property: the class is read
    statically (descriptors included); a name the class lacks is asked of the object, which
    finds only its own attributes or its class's ``__getattr__`` (a lookup that fails other
    than with AttributeError still means the name is there).

    Why not ``inspect.getattr_static(obj, name)``: it reads the instance's ``__dict__``
    through the framework's getter, which is framework code (on one real framework each read
    loses a reference: adapters/oneflow_adapter.py)."""
    if isinstance(obj, _SeenCtx):
        return name in obj.names
    try:
        inspect.getattr_static(type(obj), name)
        return True
    except AttributeError:
        pass
    try:
        getattr(obj, name)
    except AttributeError:
        return False
    except Exception:  # noqa: BLE001
        return True
    return True


def _takes_keyword(obj: Any, method: str, keyword: str) -> str | None:
    """"" where ``obj``'s class has ``method`` taking ``keyword`` (read from its signature, the
    method not called), a note where it may ("(takes **kwargs)", "(signature unreadable)": a
    declaration must then say why), None where it does not or there is no such method."""
    if isinstance(obj, _SeenCtx):
        return None
    try:
        function = inspect.getattr_static(type(obj), method)
    except AttributeError:
        return None
    function = getattr(function, "__func__", function)   # a staticmethod or classmethod
    if not callable(function):
        return None
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return " (signature unreadable)"
    for p in parameters:
        if p.name == keyword and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            return ""
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return " (takes **kwargs)"
    return None


def _resolve(root: Any, dotted: str) -> bool:
    """Whether ``root.<dotted>`` resolves (attribute lookups along the path)."""
    obj = root
    for part in dotted.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            return False
        except Exception:  # noqa: BLE001 - a lazy submodule that fails to import: it is there
            return True
    return True


def implements(adapter, method: str) -> bool:
    """Whether ``adapter``'s own classes define ``method`` with more than ``self.require(...)``
    or ``raise Unsupported(...)`` (read from the source; not called)."""
    from adapters.base import Adapter

    for klass in type(adapter).__mro__:
        if klass is Adapter or not issubclass(klass, Adapter):
            return False
        if method in vars(klass):
            return not _only_refuses(vars(klass)[method])
    return False


def _only_refuses(function: Any) -> bool:
    """Whether ``function``'s body (past its docstring) only calls ``self.require`` or raises
    ``Unsupported``; unreadable source counts as doing more."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return False
    body = tree.body[0].body if tree.body and hasattr(tree.body[0], "body") else []
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]

    def refuses(stmt) -> bool:
        value = stmt.value if isinstance(stmt, (ast.Expr, ast.Return)) else None
        if isinstance(stmt, ast.Raise) and stmt.exc is not None:
            target = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
            if isinstance(target, ast.Attribute) and target.attr == "missing":  # Unsupported.missing
                target = target.value
            return getattr(target, "id", getattr(target, "attr", "")) == "Unsupported"
        return (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                and value.func.attr == "require")

    return bool(body) and all(refuses(stmt) for stmt in body)


def check(adapter, registry=None, made: Subjects | None = None) -> list[Claim]:
    """A :class:`Claim` per feature ``adapter`` declares unsupported, in its table's order."""
    from conformance.model import features

    registry = registry if registry is not None else features.registry()
    declared = dict(getattr(adapter, "unsupported", None) or {})
    reasons = dict(getattr(adapter, "unsupported_although_present", None) or {})
    on_device = dict(getattr(adapter, "device_declared", None) or {})   # Adapter.declare_device
    bare = sorted({n for f in declared if f in registry for n in registry[f].names
                   if not n.startswith(("fw.", "adapter.")) and not n.endswith("=")})
    made = made if made is not None else (subjects(adapter, bare) if declared else None)
    out = []
    for feature in declared:
        names = (registry[feature].names + registry[feature].keywords
                 if feature in registry else ())
        present = {}
        for name in names:
            where = _where(adapter, made, name)
            if where:
                present[name] = where
        why = {str(k): str(v) for k, v in dict(reasons.get(feature) or {}).items()}
        if feature in on_device:   # missing on the run's device only: the framework has it
            why = {**{n: on_device[feature] for n in present}, **why}
        explained = {n: why[n] for n in present if n in why}
        stale = {n: w for n, w in why.items() if n not in present}
        status = (UNPROBED if not names else ABSENT if not present
                  else EXPLAINED if len(explained) == len(present) else PRESENT)
        bare_names = any(not n.startswith(("fw.", "adapter.")) and not n.endswith("=")
                         for n in names)
        missed = tuple(made.notes) if bare_names and made is not None else ()
        out.append(Claim(feature, status, present, explained, stale, missed))
    return out


def _where(adapter, made: Subjects, name: str) -> str:
    """Where the framework has surface name ``name`` ("" where it does not)."""
    if name.startswith("adapter."):
        method = name[len("adapter."):]
        return f"the adapter ({type(adapter).__name__}.{method})" if implements(adapter, method) else ""
    if name.startswith("fw."):
        dotted = name[len("fw."):]
        if _resolve(made.fw, dotted):
            return "fw"
        module = made.module
        if module is not None and _resolve(module, dotted):
            return f"{module.__name__}.{dotted} (the framework's module; fw hides it)"
        return ""
    if name.endswith("=)"):  # a keyword of a method: method(keyword=)
        method, keyword = name[:-2].split("(")
        return ", ".join(f"{where}{note}" for where, obj in made.objects
                         if (note := _takes_keyword(obj, method, keyword)) is not None)
    if name.endswith("="):   # a @subject such as "grad=" (assigning a field): not a name to look up
        return ""
    return ", ".join(where for where, obj in made.objects if _has_name(obj, name))


def contradictions(claims: list[Claim]) -> list[str]:
    """The lines of the claims an adapter's declarations do not survive."""
    return [c.line() for c in claims if c.contradicted]


def main(argv=None) -> int:
    parser = cli.Parser("python -m conformance.feature_claims", __doc__)
    parser.add_argument("--adapter", required=True,
                        help="a built-in adapter, an entry point, or package.module:ClassName")
    parser.add_argument("--timeout", type=cli.positive_float, default=300.0,
                        help="seconds the child interpreter may take (default 300; times this "
                        "machine's time-limit scale, conformance/time_scale.py)")
    args = parser.parse_args(argv)
    from conformance import isolation, time_scale

    try:
        facts = isolation.probe(args.adapter, "cpu", time_scale.scaled(args.timeout),
                                timeout_option="--timeout")
    except isolation.ProbeFailed as exc:
        return parser.fail(str(exc))
    if facts is None:   # no child can be started here: the check runs in this process
        from adapters.base import FrameworkNotInstalled, load_adapter
        from conformance.model import features

        try:
            adapter = load_adapter(args.adapter)
            problem = features.unknown_keys_problem(adapter)
            if problem:
                return parser.fail(problem)
            claims, error = check(adapter), ""
        except (ValueError, FrameworkNotInstalled) as exc:
            return parser.fail(isolation.first_line(exc))
        name, version = adapter.name, adapter.framework_version()
    else:
        claims, error = facts.claims, facts.claims_error
        name, version = facts.name, facts.version
    if error:
        return parser.fail(error)
    print(f"adapter {name} {version}: {len(claims)} features declared unsupported")
    for claim in claims:
        print(f"  {claim.line()}")
    bad = contradictions(claims)
    if bad:
        print(f"{len(bad)} declaration(s) contradicted: support the feature in the adapter, split "
              f"it in conformance/features.toml, or say why the name is not the feature in "
              f"unsupported_although_present", file=sys.stderr)
        return cli.FOUND_PROBLEMS
    return cli.OK


if __name__ == "__main__":
    sys.exit(main())
