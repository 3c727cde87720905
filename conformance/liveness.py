"""Liveness checks for the conformance suites: is an object freed, and if not, what holds it?

Two ways an object can be freed, and the rules care which one:

* by **reference counting** alone: the check runs with the cycle collector switched off
  (:func:`gc_disabled`), so only objects that are not part of a reference cycle die;
* by the **cycle collector**: :func:`collect` runs ``gc.collect()`` until nothing more is freed.

How the suites watch an object (a :class:`Probe`):

* :func:`weak` takes a ``weakref.ref`` to the object itself (tensors on torch and the reference
  engine, grad_fn nodes, ctx objects);
* where the framework refuses weak references (OneFlow tensors and ctx objects have neither
  ``__weakref__`` nor ``__dict__``), a **sentinel** is planted: a plain Python object stored somewhere
  the framework object owns (:func:`sentinel_in_hook`: a tensor hook's closure;
  :func:`sentinel_attr`: an attribute of a ctx; :func:`sentinel_in_metadata`: ``node.metadata``).
  The sentinel dies when its owner drops it, so its weak reference stands for the owner.
  :func:`tensor_probe` picks a weak reference and falls back to a hook sentinel; a hook that returns
  None never changes a gradient, and its closure holds only the sentinel, so it adds no cycle.

Every probe on a framework tensor carries a **positive control** (:func:`watch`): before a test
trusts a channel to say "freed", the same channel is shown to say "alive" for a tensor the
framework is known to hold (a tensor saved by a live graph, whose Python reference the control
dropped). A channel that reports such a tensor dead (Paddle drops a tensor's Python wrapper while
its graph still uses the tensor) observes nothing: the next channel is tried (the adapter's own
:meth:`~adapters.base.Adapter.liveness`, a weak reference, a hook sentinel), and when none passes
the test is BLOCKED by the rule that owns the channel (``identity.weakref-survives-framework-
ownership`` for a weak reference), never DIVERGES and never a vacuous PASS.
:func:`assert_freed` warns on a tensor probe that never passed a control (a test bug).

When an object that should be dead is alive, :func:`assert_freed` raises :class:`StillAlive` (an
``AssertionError``, so the outcome is DIVERGES) whose message names the chain of references that
keeps it alive, found with objgraph (``find_backref_chain``) and rendered as text (type names and the
attribute, key or index on each edge). The chain is also attached as data
(:attr:`StillAlive.chain`, a :class:`KeepAliveChain` with ``types``, ``edges`` and ``as_data()``) so a
report can draw it.
"""
from __future__ import annotations

import contextlib
import gc
import sys
import types
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from conformance import gc_freeze
from conformance.api import Blocked, Diverges, Unsupported

#: The rule that owns the weak-reference channel on a tensor: a weakref stays valid while the
#: framework holds the tensor.
WEAKREF_CHANNEL_RULE = "identity.weakref-survives-framework-ownership"

__all__ = [
    "Sentinel", "Probe", "weak", "watch", "control_weakref", "WEAKREF_CHANNEL_RULE", "sentinel_attr", "sentinel_in_metadata", "sentinel_in_hook",
    "tensor_probe", "gc_disabled", "UncontrolledObservation", "collect", "assert_freed", "assert_alive", "StillAlive",
    "KeepAliveChain", "keep_alive_chain",
]


# --------------------------------------------------------------------------------------------
# probes
# --------------------------------------------------------------------------------------------
class Sentinel:
    """A plain Python object planted inside a framework object; its death stands for the owner's."""

    __slots__ = ("label", "__weakref__")

    def __init__(self, label: str) -> None:
        self.label = label

    def __repr__(self) -> str:
        return f"Sentinel({self.label!r})"


class Probe:
    """Watches one object. ``alive()`` asks whether it (or, for a sentinel, its owner) still lives."""

    def __init__(self, what: str, ref: Callable[[], Any], how: str, control: str = "",
                 stand_in: bool = False) -> None:
        self.what = what
        self.how = how
        self._ref = ref
        #: the positive control this channel passed ("" for a probe on a framework tensor that
        #: passed none: :func:`assert_freed` refuses it)
        self.control = control
        #: ``get()`` returns a stand-in (the adapter's liveness check answers True), not the
        #: watched object: it is alive by design, so no keep-alive chain is looked for from it
        self.stand_in = stand_in

    def alive(self) -> bool:
        return self._ref() is not None

    def get(self) -> Any:
        """The watched object (or the sentinel), or None once it died."""
        return self._ref()

    def __repr__(self) -> str:
        state = "alive" if self.alive() else "dead"
        return f"<Probe {self.what} via {self.how}: {state}>"


def weak(obj: Any, what: str | None = None) -> Probe:
    """Probe ``obj`` through a weak reference. Raises TypeError if ``obj`` refuses weakrefs.

    For a plain Python object (a hook function, a tracker, a sentinel) the interpreter's weak
    reference is exact and is its own control; a framework tensor is watched with :func:`watch`.
    """
    ref = weakref.ref(obj)
    control = "" if _is_framework_object(obj) else "a weak reference to a plain Python object"
    return Probe(what or type(obj).__name__, ref, "weakref", control)


def _is_framework_object(obj: Any) -> bool:
    """Whether ``obj`` is an object of a framework (its class comes from outside the standard
    library and this harness): its Python wrapper may not stand for the object itself."""
    module = type(obj).__module__ or ""
    return not (module.split(".")[0] in ("builtins", "__main__", "types", "functools", "collections",
                                         "conformance", "tests")
                or module.rsplit(".", 1)[-1].startswith("test_"))


def _framework_held(adapter: Any, device: str):
    """A tensor the framework is known to hold, whose Python reference is already dropped: the
    input ``b`` of ``c = b * b`` (saved by the product) while ``c`` is alive. Returns
    ``(keep, plant)``: ``keep`` holds the graph, ``plant(channel)`` runs ``channel`` on ``b``
    and then drops the control's own reference to ``b``."""
    fw = adapter.fw
    leaf = fw.ones(2, requires_grad=True, device=device)
    box = [leaf * 2]
    keep = box[0] * box[0]

    def plant(channel):
        try:
            return channel(box[0])
        finally:
            box.clear()
    return keep, plant


def _controlled(adapter: Any, device: str, channel: Callable[[Any], Probe]) -> tuple[bool, str]:
    """Whether ``channel`` reports a framework-held tensor alive (the positive control)."""
    keep, plant = _framework_held(adapter, device)
    probe = plant(channel)
    if gc.isenabled():
        gc.collect()
    ok = probe.alive()
    del keep
    return ok, probe.how


def control_weakref(adapter: Any, device: str = "cpu", what: str = "a weak reference") -> None:
    """The positive control of a test that watches tensors through ``weakref.ref`` itself: a
    weak reference reports a tensor alive that the framework holds (saved by a live graph) after
    its Python reference was dropped. Else BLOCKED by the weak-reference rule: a weakref that
    dies with the Python wrapper cannot tell that the framework let the tensor go."""
    try:
        ok, _ = _controlled(adapter, device, lambda t: Probe(what, weakref.ref(t), "weakref"))
    except TypeError as exc:
        raise Blocked(WEAKREF_CHANNEL_RULE, f"{what}: tensors refuse weak references ({exc})") from exc
    if not ok:
        raise Blocked(WEAKREF_CHANNEL_RULE, f"{what} to a tensor died while a live graph still "
                      "saved the tensor: a weakref observes the Python wrapper, not the tensor")


def watch(tensor: Any, what: str, adapter: Any, device: str = "cpu", *,
          allow_hook: bool = True) -> Probe:
    """A controlled probe on a framework tensor.

    Channels, in order: the adapter's own liveness check (:meth:`Adapter.liveness`), a weak
    reference, a sentinel in a hook closure (only with ``allow_hook``: it stands for the node
    that holds the tensor's hooks, see :func:`tensor_probe`). The first channel whose positive
    control passes (it reports a tensor alive that the framework holds after the control dropped
    its Python reference) is used. If none does, the test ends BLOCKED by the rule that owns the
    weak-reference channel (or the hook channel when only hooks were possible).
    """
    failures: list[str] = []

    def adapter_channel(t):
        check = adapter.liveness(t)
        return Probe(what, lambda: True if check() else None, "the adapter's liveness check",
                     stand_in=True)

    def weak_channel(t):
        return Probe(what, weakref.ref(t), "weakref")

    def hook_channel(t):
        return sentinel_in_hook(t, what)

    channels = [("adapter", adapter_channel), ("weakref", weak_channel)]
    if allow_hook and getattr(tensor, "requires_grad", False):
        channels.append(("hook", hook_channel))
    for name, channel in channels:
        try:
            ok, how = _controlled(adapter, device, channel)
        except Unsupported as exc:
            failures.append(f"{name}: unsupported ({exc})")
            continue
        except (TypeError, AttributeError) as exc:
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        if not ok:
            failures.append(f"{name}: reported a tensor dead that a live graph still saves "
                            f"(watched via {how})")
            continue
        try:
            probe = channel(tensor)
        except (TypeError, AttributeError) as exc:
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        probe.control = f"{how} reported a tensor saved by a live graph alive"
        return probe
    raise Blocked(WEAKREF_CHANNEL_RULE, f"cannot watch {what}: no channel passed its positive control ("
                  + "; ".join(failures) + ")")


def sentinel_attr(owner: Any, what: str, name: str = "_liveness_sentinel") -> Probe:
    """Probe ``owner`` (a ctx, a Function instance, any object with attributes) by an attribute."""
    s = Sentinel(what)
    try:
        setattr(owner, name, s)
    except (AttributeError, TypeError) as exc:
        raise Unsupported(f"cannot watch {what}: {type(owner).__name__} refuses attributes ({exc})",
                          feature="object_attributes") from exc
    control = "the attribute kept the sentinel" if getattr(owner, name, None) is s else ""
    return Probe(what, weakref.ref(s), f"sentinel in attribute {name!r}", control)


def sentinel_in_metadata(node: Any, what: str, key: str = "_liveness_sentinel") -> Probe:
    """Probe a graph node through its ``metadata`` dict (torch's check_graph_dies technique)."""
    s = Sentinel(what)
    node.metadata[key] = s
    control = ("the node's metadata kept the sentinel" if node.metadata.get(key) is s else "")
    return Probe(what, weakref.ref(s), f"sentinel in node.metadata[{key!r}]", control)


def _sentinel_hook(s: Sentinel) -> Callable[[Any], None]:
    def liveness_hook(grad):  # returns None: never changes a gradient
        return None if s is None else None
    return liveness_hook


def sentinel_in_hook(tensor: Any, what: str) -> Probe:
    """Probe a tensor that requires grad through the closure of a no-op hook registered on it.

    The sentinel lives as long as whatever owns the tensor's hooks: the tensor's autograd state,
    which is what a lifetime rule about the tensor cares about.
    """
    s = Sentinel(what)
    tensor.register_hook(_sentinel_hook(s))
    return Probe(what, weakref.ref(s), "sentinel in a hook closure")


def tensor_probe(tensor: Any, what: str, allow_hook: bool = True) -> Probe:
    """A weak reference to ``tensor`` if the framework allows one, else a hook sentinel.

    A hook sentinel stands for "the tensor, or the graph node that holds its hooks" (OneFlow keeps
    a non-leaf's hooks on its producing node, so they live as long as the graph): pass
    ``allow_hook=False`` when the rule separates a tensor's life from its graph's (a saved tensor
    freed by backward while the graph is alive).

    Raises TypeError when neither is possible (no weakref and the tensor does not require grad);
    wrap the call in ``diverges_if_raises(TypeError, ...)`` if that should count against the rule.
    """
    try:
        return weak(tensor, what)
    except TypeError as exc:
        if not allow_hook:
            raise TypeError(f"cannot watch {what}: {exc} (a hook sentinel would outlive it "
                            "with the graph)") from exc
        if not getattr(tensor, "requires_grad", False):
            raise TypeError(f"cannot watch {what}: {exc}, and it has no hooks") from exc
        return sentinel_in_hook(tensor, what)


# --------------------------------------------------------------------------------------------
# gc control
# --------------------------------------------------------------------------------------------
@contextlib.contextmanager
def gc_disabled() -> Iterator[None]:
    """Run the block with the cycle collector off (reference counting only); restores its state."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def collect(rounds: int = 4) -> int:
    """``gc.collect()`` until a round frees nothing (at most ``rounds``); returns objects found."""
    total = 0
    for _ in range(rounds):
        n = gc.collect()
        total += n
        if n == 0:
            break
    return total


# --------------------------------------------------------------------------------------------
# keep-alive chains
# --------------------------------------------------------------------------------------------
@dataclass
class KeepAliveChain:
    """The references that keep an object alive, root first, the object last.

    ``kind``: ``"root"`` (reachable from a module or a frame), ``"cycle"`` (garbage cycle through
    the object: ``types[0]`` and ``types[-1]`` are the same object), ``"external"`` (no Python
    referrer found: held by framework-internal state (C/C++) or a local variable), or ``"dead"``.
    ``edges``: ``(from_index, to_index, label)`` with label an attribute (``.name``), key
    (``['k']``), index (``[0]``), closure variable or ``?`` when it could not be named.
    """

    kind: str
    types: list[str] = field(default_factory=list)
    edges: list[tuple[int, int, str]] = field(default_factory=list)
    note: str = ""

    def as_data(self) -> dict:
        return {"kind": self.kind, "types": list(self.types),
                "edges": [list(e) for e in self.edges], "note": self.note}

    def render(self) -> str:
        if not self.types:
            return self.note or self.kind
        parts = [self.types[0]]
        for (_, j, label) in self.edges:
            parts.append(f" -[{label}]-> {self.types[j]}")
        text = "".join(parts)
        head = {"root": "reachable from a root: ", "cycle": "in a reference cycle: ",
                "external": ""}.get(self.kind, "")
        tail = f" ({self.note})" if self.note else ""
        return head + text + tail


def _type_label(obj: Any) -> str:
    if isinstance(obj, types.ModuleType):
        return f"module {obj.__name__}"
    if isinstance(obj, types.FrameType):
        return f"frame {obj.f_code.co_name}"
    if isinstance(obj, types.FunctionType):
        return f"function {obj.__qualname__}"
    if isinstance(obj, Sentinel):
        return f"Sentinel({obj.label})"
    return type(obj).__name__


# Attributes that autograd objects expose as descriptors (not in __dict__) and that commonly hold
# references worth naming in a chain.
_KNOWN_ATTRS = ("_backward_hooks", "_post_accumulate_grad_hooks", "grad", "grad_fn", "metadata",
                "variable", "next_functions", "saved_tensors", "_forward_cls", "ctx")


def _edge_label(source: Any, target: Any) -> str:
    try:
        if isinstance(source, dict):
            for k, v in source.items():
                if v is target:
                    return f"[{k!r}]"
        if isinstance(source, (list, tuple)):
            for i, v in enumerate(source):
                if v is target:
                    return f"[{i}]"
        if isinstance(source, types.CellType):
            return "cell_contents"
        if isinstance(source, types.FunctionType):
            if source.__closure__ is target:
                return "__closure__"
            if source.__globals__ is target:
                return "__globals__"
            for name, cell in zip(source.__code__.co_freevars, source.__closure__ or ()):
                if cell is target:
                    return f"closure {name!r}"
            if source.__defaults__ is target:
                return "__defaults__"
        if isinstance(source, types.MethodType):
            if source.__self__ is target:
                return "__self__"
            if source.__func__ is target:
                return "__func__"
        if isinstance(source, types.FrameType):
            if source.f_globals is target:
                return "f_globals"
            for k, v in source.f_locals.items():
                if v is target:
                    return f"local {k!r}"
        if getattr(source, "__dict__", None) is target:
            return "__dict__"
        d = getattr(source, "__dict__", None)
        if isinstance(d, dict):
            for k, v in d.items():
                if v is target:
                    return f".{k}"
        for slot in getattr(type(source), "__slots__", ()) or ():
            if isinstance(slot, str) and getattr(source, slot, None) is target:
                return f".{slot}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name in _KNOWN_ATTRS:
                if getattr(source, name, None) is target:
                    return f".{name}"
    except Exception:  # labelling is best effort; framework objects may refuse introspection
        pass
    return "?"


def _chain_from(objs: list[Any], kind: str, note: str = "") -> KeepAliveChain:
    types_ = [_type_label(o) for o in objs]
    edges = [(i, i + 1, _edge_label(objs[i], objs[i + 1])) for i in range(len(objs) - 1)]
    return KeepAliveChain(kind, types_, edges, note)


def _is_root(obj: Any) -> bool:
    import objgraph

    return objgraph.is_proper_module(obj) or isinstance(obj, types.FrameType)


def _identity_predicate(target: Any) -> Callable[[Any], bool]:
    # Built in its own scope so that keep_alive_chain's frame holds no closure cell over obj
    # (such a cell would be reported as a referrer).
    return lambda o: o is target


def keep_alive_chain(obj: Any, max_depth: int = 12) -> KeepAliveChain:
    """Find what keeps ``obj`` alive, with objgraph's ``find_backref_chain``.

    First a chain from a root (a module or a frame); failing that, the shortest reference cycle
    through ``obj``; failing that, ``kind="external"``: no Python object refers to it, so it is
    held by the framework's internal state or by a local variable of a running function.
    """
    try:
        import objgraph
    except ImportError:  # pragma: no cover - objgraph is a test dependency
        return KeepAliveChain("external", [_type_label(obj)], [],
                              "objgraph not installed: cannot name the keep-alive chain")
    gc_freeze.thaw()  # frozen objects (a module, say) are invisible to gc.get_referrers
    here = sys._getframe()
    ignore = [id(here)]
    chain = objgraph.find_backref_chain(obj, _is_root, max_depth=max_depth, extra_ignore=ignore)
    if len(chain) > 1:
        return _chain_from(chain, "root")
    del chain  # the [obj] list objgraph returns would otherwise show up as a referrer
    # A garbage cycle: from each direct referrer, walk back to obj itself.
    referrers = [r for r in gc.get_referrers(obj) if r is not here and id(r) not in ignore]
    ignore.append(id(referrers))
    best: list[Any] | None = None
    for r in referrers[:8]:
        if isinstance(r, types.FrameType):
            continue
        sub = objgraph.find_backref_chain(r, _identity_predicate(obj), max_depth=max_depth,
                                          extra_ignore=ignore)
        if len(sub) > 1 and sub[0] is obj:
            cyc = sub + [obj]
            if best is None or len(cyc) < len(best):
                best = cyc
    if best is not None:
        return _chain_from(best, "cycle")
    if referrers:
        first = [r for r in referrers if not isinstance(r, types.FrameType)][:1]
        if first:
            return _chain_from([first[0], obj], "external",
                               "referrer not reachable from a module, and not in a cycle")
    return KeepAliveChain("external", [_type_label(obj)], [],
                          "no Python object refers to it: held by the framework's internal "
                          "(C/C++) state, e.g. a live graph node or saved tensor, or by a local "
                          "variable")


# --------------------------------------------------------------------------------------------
# assertions
# --------------------------------------------------------------------------------------------
class UncontrolledObservation(UserWarning):
    """A lifetime check read a channel that never showed it can see a framework-held tensor."""


class StillAlive(Diverges):
    """An object that a rule says is freed is alive. ``chain`` holds what keeps it alive."""

    def __init__(self, message: str, chain: KeepAliveChain) -> None:
        super().__init__(message)
        self.chain = chain


def assert_freed(probe: Probe, *, by: str, context: str = "") -> None:
    """Assert the probed object is dead.

    ``by="refcount"``: must already be dead; call it inside :func:`gc_disabled` (a test bug
    otherwise). ``by="gc"``: runs :func:`collect` first. A probe that passed no positive
    control (a bare weak reference to a framework tensor) is a test bug (:class:`UncontrolledObservation`
    warning): use :func:`watch`.
    """
    if not probe.control:
        # a warning, not an error: scripts made from older suite revisions (repro) watch tensors
        # without a control; the suites themselves watch through watch() (a project test checks)
        warnings.warn(f"assert_freed on {probe.what} watched via {probe.how} without a positive "
                      "control: watch a framework tensor with liveness.watch()",
                      UncontrolledObservation, stacklevel=2)
    if by == "refcount":
        if gc.isenabled():
            raise RuntimeError("assert_freed(by='refcount') must run inside gc_disabled()")
    elif by == "gc":
        collect()
    else:
        raise ValueError(f"by must be 'refcount' or 'gc', not {by!r}")
    obj = probe.get()
    if obj is None:
        return
    how = "reference counting alone (gc disabled)" if by == "refcount" else "gc.collect()"
    if getattr(probe, "stand_in", False) or _alive_by_design(obj):
        # the object the probe holds is no tensor of the test (True, None-like singletons, a
        # module's constant): every module refers to it, and a back-reference search from it
        # would walk the whole heap (an adapter's stand-in ran 300 s into a TIMEOUT)
        del obj
        chain = KeepAliveChain("external", [probe.what], [],
                               f"watched through {probe.how}, which names no Python object to "
                               "follow back: held by the framework's own state")
    else:
        chain = keep_alive_chain(obj)
        del obj
    ctx = f" {context}" if context else ""
    raise StillAlive(
        f"{probe.what} (watched via {probe.how}) is still alive after {how}{ctx}; "
        f"kept alive by: {chain.render()}",
        chain,
    )


def _alive_by_design(obj: Any) -> bool:
    """Objects that live for the whole process (singletons, small ints, interned values, types,
    modules): never a tensor a test watches, and a keep-alive search from them never ends."""
    return (obj is True or obj is False or obj is Ellipsis or obj is NotImplemented
            or isinstance(obj, (int, float, str, bytes, type, types.ModuleType)))


def assert_alive(probe: Probe, context: str = "") -> None:
    """Assert the probed object is still alive (it must not be freed from under its owner)."""
    if not probe.alive():
        ctx = f" {context}" if context else ""
        raise AssertionError(f"{probe.what} (watched via {probe.how}) was freed{ctx}, "
                             "but something that is still alive needs it")
