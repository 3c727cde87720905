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
  ``self.require(...)`` / ``raise Unsupported(...)``; where the adapter leaves it to the base's
  default, that default's torch spelling (read from its source: ``node.register_hook(hook)``) is
  looked up on the objects of its kind, and a binding that cannot take the arguments the
  default passes is no support.

The objects are made through the adapter's translations: the node is ``adapter.grad_fn(result)``
and the linked node ``adapter.next_nodes(node)`` where the adapter implements them.

Each declared feature is then ``absent`` (the declaration holds), ``present`` (a name it implies
exists: the declaration is contradicted), ``lookalike`` (none of its names is there, but
something the framework has looks like it: its own modules define the name under the same
subsystem, a class attribute is spelled alike, torch's spelling is there while the adapter
refuses it, or the feature's shape probe (:data:`SHAPES`) finds it: a contradiction too),
``explained`` (every present name and lookalike has the adapter's reason why it is not the
feature: ``Adapter.unsupported_although_present``), or ``unprobed`` (the registry lists no
surface name nor keyword, only ``adapter.require``/``@needs``). What is there but is no support
is said beside the verdict (``refused``): a binding that refuses the translation's arguments, a
``**kwargs`` stub that never names the keyword. An explanation for a name that is not present is
stale, and counts as a contradiction too (the adapter's words must stay true).

Nothing is called beyond attribute lookup, one tensor, one op and one custom op, the
adapter's node translations, and the shape probes (a subclass made from a fresh tensor, a
``.grad`` assigned on a fresh leaf); no property runs: a name is read statically on the object's class, and only a name the class
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
from conformance.model import features as features_model
from conformance.model.features import Spelling  # noqa: F401 - part of this tool's answer

# the record of one declaration's check (its own module: the start-up probe carries it back from
# its child, and this tool runs that probe; one defined below the other would import in a circle)
from conformance.claims import (  # noqa: E402,F401
    ABSENT, EXPLAINED, LOOKALIKE, PRESENT, UNPROBED, Claim)


@dataclasses.dataclass
class Subjects:
    """What the names are looked up on: (where, object) pairs, and why one could not be made."""

    fw: Any
    module: Any                                   # the framework's own module, or None
    objects: list[tuple[str, Any]]
    notes: list[str]
    #: what each shape probe (:data:`SHAPES`) saw: probe key -> where and what, for the present ones
    shapes: dict[str, str] = dataclasses.field(default_factory=dict)


#: what kind of framework object each of :func:`subjects`' objects is (an adapter method's
#: torch spelling names its parameter: ``tensor``, ``node`` or ``ctx``)
KINDS = {"a tensor that requires grad": "tensor", "the result of an op": "tensor",
         "its grad_fn": "node", "the node grad_fn links to": "node", "a Function ctx": "ctx"}


def subjects(adapter, names=(), shapes=None) -> Subjects:
    """The framework objects a bare name is looked up on, made with the adapter's ``fw``: a
    tensor that requires grad, a result of one op on it, its grad_fn and the first node that
    links to, and a custom Function's ctx (which of ``names`` it has: :class:`_SeenCtx`);
    then the shape probes of the features ``shapes`` (None: all). Whatever cannot be made is
    left out, with a note."""
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
    node = _translated_node(adapter, result) if result is not None else None
    if node is not None:
        objects.append(("its grad_fn", node))
        linked = _first_linked(adapter, node)
        if linked is not None:
            objects.append(("the node grad_fn links to", linked))
    ctx = _function_ctx(fw, leaf, names, notes)
    if ctx is not None:
        objects.append(("a Function ctx", ctx))
    made = Subjects(fw, module, objects, notes)
    for key, probe in SHAPES.items():
        if shapes is not None and key not in shapes:
            continue   # only the declared features' shapes are tried
        try:
            seen = probe(adapter, fw)
        except Exception:  # noqa: BLE001 - the other shape is not there either
            seen = ""
        if seen:
            made.shapes[key] = seen
    return made


def _translated_node(adapter, result: Any) -> Any:
    """``result``'s graph node through the adapter's translation (``adapter.grad_fn``) where
    the adapter implements one, else torch's spelling (``result.grad_fn``); None if neither."""
    if implements(adapter, "grad_fn"):
        try:
            return adapter.grad_fn(result)
        except Exception:  # noqa: BLE001 - a translation that refuses: no node to look at
            return None
    return _lookup(result, "grad_fn")


@dataclasses.dataclass(frozen=True)
class _SeenCtx:
    """Which names a Function ctx had, looked up inside the forward that received it: the ctx
    itself is not kept past it (a framework may not expect a ctx to outlive its Function)."""

    names: frozenset
    attributes: frozenset = frozenset()    # the ctx class's attribute names (read statically)


def _lookup(obj: Any, name: str) -> Any:
    """``obj.name`` or None: attribute lookup only (its value, if a plain one)."""
    try:
        return getattr(obj, name, None)
    except Exception:  # noqa: BLE001 - a property that fails: nothing to follow
        return None


def _first_linked(adapter, node: Any) -> Any:
    """The first node ``node`` links to: through the adapter's ``next_nodes`` where it
    implements one, else ``node.next_functions`` (torch: (node, input_nr) pairs; Paddle:
    nodes); None if none."""
    if implements(adapter, "next_nodes"):
        try:
            return next((n for n in adapter.next_nodes(node) if n is not None), None)
        except Exception:  # noqa: BLE001
            return None
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
        seen.append(_SeenCtx(frozenset(name for name in names if _has_name(ctx, name)),
                             frozenset(_class_attributes(ctx))))
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
    method not called; a ``**kwargs`` counts only where the method's own source reads
    ``keyword`` from it: " (reads it from **kwargs)"), " (signature unreadable)" where it may
    (a declaration must then say why), None where it does not or there is no such method.
    A ``**kwargs`` that never names the keyword is not support: :func:`_kwargs_stub` says so."""
    function = _method(obj, method)
    if function is None:
        return None
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return " (signature unreadable)"
    for p in parameters:
        if p.name == keyword and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            return ""
    if any(p.kind is p.VAR_KEYWORD for p in parameters) and keyword in _string_constants(function):
        return " (reads it from **kwargs)"
    return None


def _kwargs_stub(obj: Any, method: str, keyword: str) -> bool:
    """Whether ``obj``'s ``method`` takes ``**kwargs`` without its source naming ``keyword``:
    a stub that swallows the keyword, not support for it."""
    function = _method(obj, method)
    try:
        parameters = inspect.signature(function).parameters.values() if function else ()
    except (TypeError, ValueError):
        return False
    return (any(p.kind is p.VAR_KEYWORD for p in parameters)
            and not any(p.name == keyword for p in parameters)
            and keyword not in _string_constants(function))


def _method(obj: Any, method: str) -> Any:
    """The function ``method`` of ``obj``'s class (unwrapped from a static or class method),
    read statically; None where there is none."""
    if isinstance(obj, _SeenCtx):
        return None
    try:
        function = inspect.getattr_static(type(obj), method)
    except AttributeError:
        return None
    function = getattr(function, "__func__", function)   # a staticmethod or classmethod
    return function if callable(function) else None


def _string_constants(function: Any) -> set[str]:
    """The string constants in ``function``'s source (``kwargs.get("create_graph")``); empty
    where the source cannot be read."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return set()
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def _class_attributes(obj: Any) -> list[str]:
    """The attribute names ``obj``'s class defines (its MRO's, read statically: no property
    runs and no instance ``__dict__`` is read)."""
    names = set()
    for klass in getattr(type(obj), "__mro__", ()):
        try:
            names.update(vars(klass))
        except TypeError:
            pass
    return sorted(n for n in names if isinstance(n, str))


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


def overrides(adapter, method: str) -> bool:
    """Whether ``adapter``'s own classes (below :class:`adapters.base.Adapter`) define ``method``."""
    from adapters.base import Adapter

    return any(method in vars(klass) for klass in type(adapter).__mro__
               if klass is not Adapter and issubclass(klass, Adapter))


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


def torch_spellings(method: str) -> tuple[Spelling, ...]:
    """torch's spelling inside :class:`adapters.base.Adapter`'s default ``method``
    (:func:`conformance.model.features.torch_spellings`)."""
    from adapters.base import Adapter

    return features_model.torch_spellings(Adapter, method)


def default_requires(method: str) -> bool:
    """Whether the base's default ``method`` asks ``self.require``/``self.feature`` first
    (:func:`conformance.model.features.default_requires`)."""
    from adapters.base import Adapter

    return features_model.default_requires(Adapter, method)


def _refusal(binding: Any, arguments: int | None) -> str:
    """Why ``binding`` (a bound method) cannot take ``arguments`` positional arguments, from
    its signature or, for a compiled binding, its docstring's first line
    (``name(self: T, arg0: object) -> R``); "" where it can or nothing says."""
    if arguments is None or arguments < 0 or not callable(binding):
        return ""
    try:
        signature = inspect.signature(binding)
    except (TypeError, ValueError):
        signature = None
    if signature is not None:
        try:
            signature.bind(*([None] * arguments))
        except TypeError as exc:
            return f"refuses {arguments} argument(s): {exc}"
        return ""
    doc = (getattr(binding, "__doc__", None) or "").strip().splitlines()
    name = getattr(binding, "__name__", "")
    head = doc[0] if doc else ""
    if not name or not head.startswith(name + "(") or ")" not in head:
        return ""
    inside = head[len(name) + 1:head.index(")")].strip()
    params = [p.strip() for p in inside.split(",") if p.strip()] if inside else []
    if any(p.startswith("*") for p in params):
        return ""
    bound_self = getattr(binding, "__self__", None) is not None
    # pybind11 lists self as "self: T" when it takes it; a bound call passes it all the same
    takes = len([p for p in params if not p.startswith("self")])
    passes = arguments + (1 if bound_self and not any(p.startswith("self") for p in params) else 0)
    if passes != takes:
        return (f"its binding is {head.split(' ->')[0]!s}: a call with {arguments} argument(s) "
                f"passes {passes} where it takes {takes}")
    return ""


def _objects_of(made: Subjects, kind: str) -> list[tuple[str, Any]]:
    return [(where, obj) for where, obj in made.objects if KINDS.get(where) == kind]


def _framework_names(made: Subjects, dotted: str) -> dict[str, str]:
    """Where the framework's own modules (those already imported under its package) define
    ``dotted``'s last part elsewhere than at ``dotted``: dotted path -> what it is, one path per
    object (the shortest). A name under a subsystem (``autograd.function.x``) is looked for in
    that subsystem's modules (``<framework>.autograd.*``), a top-level name anywhere."""
    module = made.module
    if module is None:
        return {}
    parts = dotted.split(".")
    last, skip = parts[-1], f"{module.__name__}.{dotted}"
    root = module.__name__ if len(parts) == 1 else f"{module.__name__}.{parts[0]}"
    seen: dict[int, str] = {}
    for name, mod in sorted(list(sys.modules.items()), key=lambda item: len(item[0])):
        if mod is None or not (name == root or name.startswith(root + ".")):
            continue
        try:
            value = vars(mod).get(last)
        except TypeError:
            continue
        if value is None or inspect.ismodule(value):
            continue
        path = f"{name}.{last}"
        if path != skip and id(value) not in seen:
            seen[id(value)] = path
    return {path: "the framework's own name, outside fw's torch-shaped path" for path in seen.values()}


def _normal(name: str) -> str:
    """A name without its inner underscores, case or a plural ``s`` (``retain_grads`` ~
    ``retain_grad``); leading and trailing underscores stay (``add_`` is in place, ``add`` is
    not; ``_data`` is private)."""
    core = name.strip("_")
    start = name[:len(name) - len(name.lstrip("_"))]
    end = name[len(name.rstrip("_")):] if core else ""
    core = core.replace("_", "").lower()
    return start + (core[:-1] if core.endswith("s") else core) + end


def _near_spellings(made: Subjects, name: str) -> dict[str, str]:
    """Attributes of the probed objects' classes spelled like ``name`` up to underscores, case
    and a plural ``s``, but not ``name`` itself: spelling -> where."""
    wanted = _normal(name)
    found: dict[str, list[str]] = {}
    for where, obj in made.objects:
        attributes = obj.attributes if isinstance(obj, _SeenCtx) else _class_attributes(obj)
        for attribute in attributes:
            if attribute != name and not attribute.startswith("__") and _normal(attribute) == wanted:
                found.setdefault(attribute, []).append(where)
    return {a: f"spelled like {name} on {', '.join(w)}" for a, w in found.items()}


def _shape_subclass(adapter, fw) -> str:
    """Tensor subclasses by plain subclassing: ``Sub(tensor)`` is a ``Sub``."""
    tensor = fw.ones(2)
    sub = type("FeatureClaimsSub", (type(tensor),), {})
    instance = sub(tensor)
    return ("Sub(tensor) of a class Sub(type(tensor)) is a Sub (plain subclassing)"
            if type(instance) is sub else "")


def _shape_grad_assignment(adapter, fw) -> str:
    """Assigning ``.grad``: through the adapter's ``set_grad`` where it implements one, else
    ``t.grad = g``; present where reading it back (``adapter.grad`` where implemented, else
    ``t.grad``) gives ``g`` or its values."""
    leaf, value = fw.ones(2, requires_grad=True), fw.ones(2) * 3
    through = implements(adapter, "set_grad")
    if through:
        adapter.set_grad(leaf, value)
    else:
        leaf.grad = value
    got = adapter.grad(leaf) if implements(adapter, "grad") else leaf.grad
    spelled = f"adapter.set_grad ({type(adapter).__name__})" if through else "t.grad = g"
    if got is value:
        return f"{spelled} keeps g: .grad reads it back"
    if got is not None and list(adapter.to_numpy(got).ravel()) == [3.0, 3.0]:
        return f"{spelled} keeps g's values: .grad reads them back"
    return ""


#: feature -> a probe of the feature under a shape no surface name shows (called with the
#: adapter and its fw; returns what it saw, "" for nothing); each probe's key is the name an
#: adapter's ``unsupported_although_present`` uses to say why it is not the feature
SHAPES = {"tensor_subclass": _shape_subclass, "grad_assignment": _shape_grad_assignment}


def lookalikes(adapter, made: Subjects, feature: str, names) -> tuple[dict, dict]:
    """What looks like ``feature`` though its ``names`` are absent, and what is there but
    refuses: ``(lookalikes, refused)``, each name -> where and what.

    - an ``adapter.<method>`` name the adapter refuses: torch's spelling the base's default
      uses (:func:`torch_spellings`) on the framework's objects; a binding that cannot take the
      arguments the default passes is refused (a missing or always-refusing binding is no
      feature), any other is a lookalike;
    - a ``fw.<dotted>`` name: the framework's own modules defining its last part elsewhere;
    - a bare name: near spellings on the same objects;
    - a keyword: a ``**kwargs`` stub is refused (it swallows the keyword, never reads it);
    - the feature's shape probe (:data:`SHAPES`)."""
    looks: dict[str, str] = {}
    refused: dict[str, str] = {}
    for name in names:
        if name.startswith("adapter."):
            method = name[len("adapter."):]
            if implements(adapter, method) or not (overrides(adapter, method)
                                                   or default_requires(method)):
                continue   # the adapter's translation, or the base's default (_where's)
            for spelling in torch_spellings(method):
                if spelling.arguments == -1:
                    continue   # an assignment: the feature's shape probe tries it (grad=)
                for where, obj in _objects_of(made, spelling.kind):
                    if not _has_name(obj, spelling.attribute):
                        continue
                    why = _refusal(_lookup(obj, spelling.attribute), spelling.arguments)
                    table = refused if why else looks
                    text = why or f"torch's spelling of {name}, which the adapter refuses"
                    wheres = table.pop(spelling.name, "on ").split(": ", 1)[0][3:]
                    table[spelling.name] = f"on {', '.join(filter(None, (wheres, where)))}: {text}"
        elif name.startswith("fw."):
            dotted = name[len("fw."):]
            looks.update(_framework_names(made, dotted))
        elif name.endswith("=)"):
            method, keyword = name[:-2].split("(")
            wheres = [where for where, obj in made.objects if _kwargs_stub(obj, method, keyword)]
            if wheres:
                refused[name] = (f"on {', '.join(wheres)}: {method} takes **kwargs, and its "
                                 f"source never names {keyword}")
        elif not name.endswith("="):
            looks.update(_near_spellings(made, name))
    if feature in made.shapes:
        looks[features_model.SHAPE_NAMES[feature]] = made.shapes[feature]
    return looks, refused


def check(adapter, registry=None, made: Subjects | None = None) -> list[Claim]:
    """A :class:`Claim` per feature ``adapter`` declares unsupported, in its table's order."""
    from conformance.model import features

    registry = registry if registry is not None else features.registry()
    declared = dict(getattr(adapter, "unsupported", None) or {})
    reasons = dict(getattr(adapter, "unsupported_although_present", None) or {})
    on_device = dict(getattr(adapter, "device_declared", None) or {})   # Adapter.declare_device
    bare = sorted({n for f in declared if f in registry for n in registry[f].names
                   if not n.startswith(("fw.", "adapter.")) and not n.endswith("=")}
                  | {s.attribute for f in declared if f in registry for n in registry[f].names
                     if n.startswith("adapter.") for s in torch_spellings(n[len("adapter."):])
                     if s.kind == "ctx"})
    made = made if made is not None else (subjects(adapter, bare, shapes=set(declared))
                                          if declared else None)
    out = []
    for feature in declared:
        names = (registry[feature].names + registry[feature].keywords
                 if feature in registry else ())
        present = {}
        for name in names:
            where = _where(adapter, made, name)
            if where:
                present[name] = where
        looks, refused = lookalikes(adapter, made, feature, names) if names else ({}, {})
        looks = {n: w for n, w in looks.items() if n not in present}
        why = {str(k): str(v) for k, v in dict(reasons.get(feature) or {}).items()}
        if feature in on_device:   # missing on the run's device only: the framework has it
            why = {**{n: on_device[feature] for n in {**present, **looks}}, **why}
        found = {**present, **looks}
        explained = {n: why[n] for n in found if n in why}
        stale = {n: w for n, w in why.items() if n not in found and n not in refused}
        status = (UNPROBED if not names and feature not in SHAPES
                  else EXPLAINED if found and len(explained) == len(found)
                  else PRESENT if any(n not in explained for n in present)
                  else LOOKALIKE if looks else ABSENT)
        bare_names = any(not n.startswith(("fw.", "adapter.")) and not n.endswith("=")
                         for n in names)
        missed = tuple(made.notes) if bare_names and made is not None else ()
        out.append(Claim(feature, status, present, explained, stale, missed, looks, refused))
    return out


def _where(adapter, made: Subjects, name: str) -> str:
    """Where the framework has surface name ``name`` ("" where it does not)."""
    if name.startswith("adapter."):
        method = name[len("adapter."):]
        if implements(adapter, method):
            return f"the adapter ({type(adapter).__name__}.{method})"
        if overrides(adapter, method) or default_requires(method):
            return ""
        # the base's default runs: torch's spelling, where the framework has it and takes
        # the arguments the default passes
        return ", ".join(
            f"{where} ({spelling.name}, the base's default)"
            for spelling in torch_spellings(method)
            for where, obj in _objects_of(made, spelling.kind)
            if _has_name(obj, spelling.attribute)
            and not _refusal(_lookup(obj, spelling.attribute), spelling.arguments))
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
