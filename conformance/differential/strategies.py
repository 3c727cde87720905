"""Hypothesis strategies: valid programs, built step by step against a model of the state.

``programs(features)`` is the equivalent of a ``RuleBasedStateMachine`` whose rules append
steps instead of executing them: each rule has a precondition on the model (which tensors
exist, their shapes, whether they require grad, are leaves or views, which hooks, kept
gradients, weakrefs, stashed ctx objects and dual levels exist), draws its arguments, and
updates the model. Drawing the whole program first lets it run unchanged on two engines
(one of them possibly in another process) and be rendered as one script.

The model is deliberately approximate: it only keeps programs away from constructs where the
reference differs from torch on purpose (README, "Where the reference deliberately
differs"): no in-place op on a view (torch rewrites the base's history with CopySlices), no
weakref to a node, no hook that closes over its own tensor. An in-place op on a tensor that
has views is generated (its views must follow it: ``ObserveValue``, gradients through them)
where that tensor is not a leaf requiring grad and no forward-AD level is open.
Everything else, errors included, is compared.

``features`` (``ALL_FEATURES``: the feature registry's names and the language's three) are
what the framework offers: a variant is generated only where every feature its rendered
source needs (``gate.variant_needs``) is among them, so a feature the adapter declares
missing is never asked for; ``excluded`` variants (``Step.variant``: a step
kind with its operation, ``View.t``, ``Unary.sin+no_grad``) switch single operations off once
the framework turned out to lack them (the search learns these while it runs).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace

import hypothesis.strategies as st

from conformance.differential import gate, program as P

# every feature a step can need: the registry's names (conformance/features.toml) and three of
# the language's own (autograd.grad, weak references to tensors, in-place changes through
# adapter.inplace); what each step variant needs is read from its rendered source (gate.py)
ALL_FEATURES = gate.all_features()


# A divergence found once is reported once; a framework that shows it in every tenth program
# would keep hiding rarer causes behind it. Once a signature with one of these parts is known,
# the search stops generating the construct that shows it (signature part -> construct).
AVOID = {
    "error:leaf-inplace/": "leaf-inplace",   # no in-place change of a leaf requiring grad
    "error:freed/": "freed",                 # every backward / grad retains the graph
    "error:unused/": "unused",               # grad only for inputs the output depends on
    "error:version/": "version",             # no in-place change of a non-leaf requiring grad
    "grad:none": "nonleaf-grad",             # .grad read on leaves only
    "value:view": "view-inplace",            # no in-place change of a tensor that has views
    "value:detach": "detach-value",          # no values read of a detach() alias
}


def avoid_for(signatures) -> frozenset:
    """The constructs to stop generating once ``signatures`` are known (see AVOID)."""
    return frozenset(tag for sig in signatures for part, tag in AVOID.items() if part in sig)


def variant_needs(variant: str) -> frozenset:
    """The features (ALL_FEATURES names) a step variant needs (``gate.variant_needs``)."""
    return gate.variant_needs(variant)


SHAPES = ((3,), (2, 3), (1, 3), (3, 2))


@dataclass(frozen=True)
class Slot:
    shape: tuple
    rg: bool            # requires_grad
    leaf: bool
    view: bool = False
    had_view: bool = False
    deps: frozenset = frozenset()   # slots (requiring grad) this one's history reaches
    tan: bool = False               # carries a tangent of the open level
    aliased: bool = False           # a result of autograd.grad (see r_grad)
    base: int = -1                  # a View step's result: the tensor whose memory it shares
    viewed: bool = False            # a View step made a view of this tensor
    detached: bool = False          # a detach() result (shares its source's memory)
    stale: bool = False             # a view whose base changed in place (its node not regenerated yet)


def _broadcast(a: tuple, b: tuple):
    out = []
    for x, y in zip(reversed((1,) * (len(b) - len(a)) + a), reversed((1,) * (len(a) - len(b)) + b)):
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return tuple(reversed(out))


@dataclass
class Model:
    dtype: str
    features: frozenset
    slots: dict = field(default_factory=dict)
    counters: dict = field(default_factory=lambda: {"t": 0, "h": 0, "k": 0, "w": 0, "f": 0, "u": 0})
    hooks: list = field(default_factory=list)
    kept: list = field(default_factory=list)       # (kid, slot)
    weakrefs: list = field(default_factory=list)
    stashed: list = field(default_factory=list)    # (k, fid)
    duals: list = field(default_factory=list)      # (slot, tid)
    level_open: bool = False
    level_used: bool = False
    excluded: frozenset = frozenset()              # variants the framework lacks
    avoid: frozenset = frozenset()                 # constructs of known divergences (AVOID)

    def allowed(self, variant: str) -> bool:
        """The framework offers ``variant`` (:func:`_offered`)."""
        return _offered(variant, self.features, self.excluded)

    def ops(self, kind: str, ops) -> list:
        return [op for op in ops if self.allowed(f"{kind}.{op}")]

    def flag(self, draw, variant: str, flag: str, chance) -> bool:
        """Draw a flag (``chance``: a strategy of bools) only where the framework offers it."""
        return self.allowed(f"{variant}+{flag}") and draw(chance)

    def new(self, kind: str) -> int:
        n = self.counters[kind]
        self.counters[kind] = n + 1
        return n

    def add(self, slot: Slot) -> int:
        n = self.new("t")
        self.slots[n] = slot
        return n

    def where(self, pred) -> list[int]:
        return sorted(n for n, s in self.slots.items() if pred(s))

    def has(self, pred) -> bool:
        """Some slot satisfies ``pred`` (``where`` without building and sorting the list)."""
        return any(pred(s) for s in self.slots.values())


@functools.lru_cache(maxsize=1 << 16)
def _offered(variant: str, features: frozenset, excluded: frozenset) -> bool:
    """A framework with ``features`` that lacks the ``excluded`` variants offers ``variant``:
    all it needs is among ``features``, and no excluded variant is it or it with fewer flags
    (``Backward+retain`` excludes ``Backward+retain+create``). Cached: the generator asks
    this of every rule at every step of every program, two million times in a search of 300
    programs, always for the same few hundred variants of one framework."""
    if variant_needs(variant) - features:
        return False
    base, *flags = variant.split("+")
    return not any(e == variant or (e.split("+")[0] == base and set(e.split("+")[1:]) <= set(flags))
                   for e in excluded)


def _pick(draw, items):
    """One of ``items``; half the time the newest (chains, several hooks on one tensor)."""
    items = sorted(items)
    if len(items) > 1 and draw(st.booleans()):
        return items[-1]
    return draw(st.sampled_from(items))


# -- rules: (name, weight, precondition, build) ------------------------------------------
def r_leaf(draw, m):
    shape = draw(st.sampled_from(SHAPES))
    seed = draw(st.integers(0, 8))
    rg = draw(st.integers(0, 3)) > 0
    out = m.add(Slot(shape, rg, True, deps=frozenset()))
    if rg:
        m.slots[out] = replace(m.slots[out], deps=frozenset({out}))
    return P.Leaf(out, shape, seed, rg, m.dtype)


def _result(m, shape, srcs, no_grad=False) -> Slot:
    rg = not no_grad and any(m.slots[s].rg for s in srcs)
    deps = frozenset().union(*(m.slots[s].deps for s in srcs)) if rg else frozenset()
    tan = m.level_open and any(m.slots[s].tan for s in srcs)
    return Slot(shape, rg, not rg, deps=deps, tan=tan)


def _with_self(m, n):
    s = m.slots[n]
    if s.rg:
        m.slots[n] = replace(s, deps=s.deps | {n})
    return n


def r_unary(draw, m):
    src = _pick(draw, m.slots)
    op = draw(st.sampled_from(m.ops("Unary", sorted(P.UNARY))))
    no_grad = m.flag(draw, f"Unary.{op}", "no_grad", st.integers(0, 5).map(lambda i: i == 0))
    res = _result(m, m.slots[src].shape, [src], no_grad or op == "detach")
    if op == "detach":  # shares the array: a gradient's aliasing carries over (see r_grad)
        res = replace(res, aliased=m.slots[src].aliased, detached=True)
    return P.Unary(_with_self(m, m.add(res)), src, op, no_grad)


def r_binary(draw, m):
    a = _pick(draw, m.slots)
    partners = m.where(lambda s: _broadcast(s.shape, m.slots[a].shape) is not None)
    b = _pick(draw, partners)
    op = draw(st.sampled_from(m.ops("Binary", sorted(P.BINARY))))
    shape = _broadcast(m.slots[a].shape, m.slots[b].shape)
    return P.Binary(_with_self(m, m.add(_result(m, shape, [a, b]))), a, b, op)


def r_reduce(draw, m):
    src = _pick(draw, m.slots)
    shape = m.slots[src].shape
    ops = m.ops("Reduce", ["sum"] + (["sum0"] if shape else []))
    op = draw(st.sampled_from(ops))
    out_shape = shape[1:] if op == "sum0" else ()
    return P.Reduce(_with_self(m, m.add(_result(m, out_shape, [src]))), src, op)


def _matmul_pairs(m):
    pairs = []
    for a, sa in m.slots.items():
        if len(sa.shape) != 2:
            continue
        for b, sb in m.slots.items():
            if 1 <= len(sb.shape) <= 2 and sb.shape[0] == sa.shape[1]:
                pairs.append((a, b))
    return sorted(pairs)


def r_matmul(draw, m):
    a, b = draw(st.sampled_from(_matmul_pairs(m)))
    shape = m.slots[a].shape[:1] + m.slots[b].shape[1:]
    return P.Matmul(_with_self(m, m.add(_result(m, shape, [a, b]))), a, b)


def _view_ops(m, shape):
    return m.ops("View", ["flat", "unsqueeze"] + (["index"] if shape else [])
                 + (["t"] if len(shape) == 2 else []))


def r_view(draw, m):
    sources = m.where(lambda s: bool(_view_ops(m, s.shape)))
    # half the time of a tensor that may later change in place (not a leaf requiring grad)
    changeable = [n for n in sources if not (m.slots[n].rg and m.slots[n].leaf)]
    src = _pick(draw, changeable if changeable and draw(st.booleans()) else sources)
    shape = m.slots[src].shape
    op = draw(st.sampled_from(_view_ops(m, shape)))
    new_shape = {"flat": (max(1, Slot_numel(shape)),), "unsqueeze": (1,) + shape,
                 "index": shape[1:], "t": shape[::-1]}[op]
    root = m.slots[src].base if m.slots[src].base >= 0 else src
    res = replace(_result(m, new_shape, [src]), view=True, aliased=m.slots[src].aliased, base=root)
    if root in m.slots:
        m.slots[root] = replace(m.slots[root], viewed=True)
    return P.View(_with_self(m, m.add(res)), src, op)


def Slot_numel(shape) -> int:  # noqa: N802
    n = 1
    for s in shape:
        n *= s
    return n


def _views_of(m, n) -> list[int]:
    return m.where(lambda s: s.view and s.base == n)


def _viewed_ok(m, n, s) -> bool:
    """An in-place change of a tensor that has views: not of a leaf requiring grad (torch
    regenerates its views' nodes even under no_grad), not with forward AD in play."""
    return ("view-inplace" not in m.avoid and not (s.rg and s.leaf) and not m.level_open
            and not s.tan and not any(m.slots[v].tan for v in _views_of(m, n)))


def _inplace_targets(m):
    leaf_rg_ok = "leaf-inplace" not in m.avoid or m.allowed("Inplace.mul_+no_grad")
    return [n for n, s in sorted(m.slots.items())
            if not s.view and not s.had_view and not s.aliased
            and (not s.viewed or _viewed_ok(m, n, s))
            and bool(_inplace_ops(m, s.shape, n)[1])
            and (leaf_rg_ok or not (s.rg and s.leaf))
            and ("version" not in m.avoid or not (s.rg and not s.leaf))]


def _inplace_ops(m, shape, dst=-1):
    # a source sharing dst's memory (one of its views) would be a partial overlap: left out
    srcs = [n for n in m.where(lambda s: _broadcast(s.shape, shape) == shape)
            if not (dst >= 0 and m.slots[n].view and m.slots[n].base == dst)]
    return srcs, m.ops("Inplace", ["mul_", "add_", "zero_"] + (["add_t"] if srcs else []))


def r_inplace(draw, m):
    targets = _inplace_targets(m)
    if not m.allowed("Inplace.mul_+no_grad"):
        # without grad modes a leaf that requires grad is changed as it is: torch refuses it,
        # which ends the program; a quarter of the time is enough to hold a framework to it
        others = [n for n in targets if not (m.slots[n].rg and m.slots[n].leaf)]
        if others and draw(st.integers(0, 3)) > 0:
            targets = others
    viewed = [n for n in targets if m.slots[n].viewed]
    dst = _pick(draw, viewed if viewed and draw(st.booleans()) else targets)
    d = m.slots[dst]
    srcs, ops = _inplace_ops(m, d.shape, dst)
    op = draw(st.sampled_from(ops))
    # a leaf that requires grad is changed under no_grad where the framework has grad modes
    # (torch refuses it otherwise: the program would end there); without grad modes the
    # change is made as it is, and the reference's refusal is what the framework is held to
    if m.allowed(f"Inplace.{op}+no_grad"):
        no_grad = (d.rg and d.leaf) or draw(st.integers(0, 5)) == 0
    else:
        no_grad = False
    src = _pick(draw, srcs) if op == "add_t" else -1
    if not no_grad:
        inputs = [dst] + ([src] if src >= 0 else [])
        res = _result(m, d.shape, inputs)
        views = _views_of(m, dst)
        if res.rg:
            # the tensor in dst (and each of its views) now has a new grad_fn: results
            # computed before the change reached the old node, so grad(earlier, dst) is an
            # unused input
            changed = {dst} | set(views) if d.rg else set()
            for n, other in list(m.slots.items()):
                if n not in changed and changed & other.deps:
                    m.slots[n] = replace(other, deps=other.deps - changed)
            deps = res.deps - set(views)
            m.slots[dst] = replace(d, rg=True, leaf=False, deps=deps | {dst})
            for v in views:   # a view follows its base's history: torch regenerates its node
                m.slots[v] = replace(m.slots[v], rg=True, leaf=False, deps=deps | {dst, v},
                                     stale=True)
        if res.tan:
            m.slots[dst] = replace(m.slots[dst], tan=True)
    return P.Inplace(dst, op, src, no_grad)


def _hook_kinds(m):
    kinds = ["tensor"] if m.allowed("Hook.tensor") and m.where(lambda s: s.rg and not s.stale) else []
    if m.allowed("Hook.post") and m.where(lambda s: s.rg and s.leaf):
        kinds.append("post")
    nonleaf = m.where(lambda s: s.rg and not s.leaf)
    if nonleaf and m.allowed("Hook.node"):
        kinds.append("node")
    if nonleaf and m.allowed("Hook.prehook"):
        kinds.append("prehook")
    return kinds


def r_hook(draw, m):
    kinds = _hook_kinds(m)
    nonleaf = m.where(lambda s: s.rg and not s.leaf)
    kind = draw(st.sampled_from(kinds))
    # no tensor hook on a view whose base changed in place: torch 2.13.0 segfaults in
    # register_hook there (docs/differential.md, "Found against torch 2.13.0")
    pool = {"tensor": m.where(lambda s: s.rg and not s.stale),
            "post": m.where(lambda s: s.rg and s.leaf)}.get(kind, nonleaf)
    slot = _pick(draw, pool)
    scale = kind == "tensor" and draw(st.integers(0, 3)) == 0
    hid = m.new("h")
    m.hooks.append(hid)
    return P.Hook(hid, slot, kind, scale)


def r_remove_hook(draw, m):
    hid = _pick(draw, m.hooks)
    m.hooks.remove(hid)
    return P.RemoveHook(hid)


def r_retain_grad(draw, m):
    return P.RetainGrad(_pick(draw, m.where(lambda s: s.rg)))


def r_function(draw, m):
    src = _pick(draw, m.slots)
    save = draw(st.sampled_from(["input", "output"]))
    # (a ctx of a Function whose inputs need no grad keeps no saved tensors, in torch and
    # in the reference alike: saved_tensors is empty)
    stash = draw(st.booleans())
    fid = m.new("f")
    if stash:
        m.stashed.append((len(m.stashed), fid))
    res = _result(m, m.slots[src].shape, [src])
    return P.FunctionApply(_with_self(m, m.add(res)), src, fid, save, stash)


def r_observe_ctx(draw, m):
    k, fid = draw(st.sampled_from(m.stashed))
    return P.ObserveCtx(k, fid)


def r_backward(draw, m):
    slot = _pick(draw, m.where(lambda s: s.rg))
    retain = m.allowed("Backward+retain") and ("freed" in m.avoid or draw(st.booleans()))
    create = m.flag(draw, "Backward", "create", st.integers(0, 4).map(lambda i: i == 0))
    if create and retain and not m.allowed("Backward+retain+create"):
        create = False
    return P.Backward(slot, retain, create)


def _grad_pairs(m):
    return sorted((r, i) for r, s in m.slots.items() if s.rg for i in s.deps if i in m.slots)


def _unused_pairs(m):
    """(root, input) where the input requires grad but is not in the root's history: the
    engine refuses (an unused input) unless told allow_unused."""
    return sorted((r, i) for r, s in m.slots.items() if s.rg
                  for i, t in m.slots.items() if t.rg and i not in s.deps)


def r_grad(draw, m):
    unused = _unused_pairs(m) if "unused" not in m.avoid else []
    pairs = unused if unused and draw(st.integers(0, 7)) == 0 else _grad_pairs(m)
    root, inp = draw(st.sampled_from(pairs))
    retain = m.allowed("Grad+retain") and ("freed" in m.avoid or draw(st.booleans()))
    create = m.flag(draw, "Grad", "create", st.integers(0, 3).map(lambda i: i == 0))
    if create and retain and not m.allowed("Grad+retain+create"):
        create = False
    shape = m.slots[inp].shape
    # aliased: no in-place op and no make_dual on a result of autograd.grad. The gradient of
    # a broadcast (x.sum()) is a stride-0 expanded tensor in torch (make_dual refuses it:
    # "more than one element of the written-to tensor refers to a single memory location")
    # while the reference returns a writable array of its own, so the two would differ on
    # make_dual for a reason no rule is about.
    res = Slot(shape, create, not create, aliased=True,
               deps=(m.slots[root].deps if create else frozenset()))
    return P.Grad(m.add(res), root, inp, retain, create)


def _grad_readable(m):
    leaves = m.where(lambda s: s.leaf) if "nonleaf-grad" in m.avoid else []
    return leaves or sorted(m.slots)


def r_observe_grad(draw, m):
    return P.ObserveGrad(_pick(draw, _grad_readable(m)))


def _value_slots(m):
    """Views and detach() aliases first (what an in-place change must reach), then the rest."""
    shared = m.where(lambda s: (s.view and s.base >= 0)
                     or (s.detached and "detach-value" not in m.avoid))
    rest = m.where(lambda s: not (s.detached and "detach-value" in m.avoid))
    return shared, rest


def r_observe_value(draw, m):
    shared, rest = _value_slots(m)
    slot = _pick(draw, shared if shared and draw(st.booleans()) else rest)
    s = m.slots[slot]
    alias = "view" if s.view and s.base >= 0 else "detach" if s.detached else "tensor"
    return P.ObserveValue(slot, alias)


def r_meta(draw, m):
    return P.ObserveMeta(_pick(draw, m.slots), draw(st.sampled_from(m.ops("ObserveMeta", sorted(P.META)))))


def r_identity(draw, m):
    return P.Identity(_pick(draw, m.slots), draw(st.sampled_from(m.ops("Identity", ["grad", "grad_fn"]))))


def r_keep_grad(draw, m):
    slot = _pick(draw, _grad_readable(m))
    kid = m.new("k")
    m.kept.append((kid, slot))
    return P.KeepGrad(kid, slot)


def r_observe_kept(draw, m):
    kid, slot = draw(st.sampled_from(m.kept))
    return P.ObserveKept(kid, slot)


def r_set_grad_none(draw, m):
    return P.SetGradNone(_pick(draw, m.where(lambda s: s.leaf)))


def r_set_grad(draw, m):
    return P.SetGrad(_pick(draw, m.where(lambda s: s.leaf)))


def r_weakref(draw, m):
    wid = m.new("w")
    m.weakrefs.append(wid)
    return P.Weakref(wid, _pick(draw, m.slots))


def r_observe_alive(draw, m):
    return P.ObserveAlive(_pick(draw, m.weakrefs))


def r_delete(draw, m):
    slot = _pick(draw, m.slots)
    del m.slots[slot]
    m.kept = [(k, s) for k, s in m.kept if s != slot]
    m.duals = [(s, u) for s, u in m.duals if s != slot]
    return P.Delete(slot)


def r_collect(draw, m):
    return P.Collect()


def r_enter(draw, m):
    m.level_open = m.level_used = True
    return P.EnterLevel()


def r_exit(draw, m):
    m.level_open = False
    m.slots = {n: replace(s, tan=False) for n, s in m.slots.items()}
    return P.ExitLevel()


def _dual_sources(m):
    # a tensor that already has a tangent at the level is a source too: torch and the
    # reference both refuse make_dual of it (the same error category)
    return m.where(lambda s: not s.aliased)


def r_make_dual(draw, m):
    src = _pick(draw, _dual_sources(m))
    tid = m.new("u")
    res = replace(_result(m, m.slots[src].shape, [src]), view=True, tan=True)
    m.slots[src] = replace(m.slots[src], had_view=True)
    out = _with_self(m, m.add(res))
    m.duals.append((out, tid))
    return P.MakeDual(out, src, tid)


def r_unpack_dual(draw, m):
    return P.UnpackDual(_pick(draw, m.slots))


def r_tangent_identity(draw, m):
    slot, tid = draw(st.sampled_from(m.duals))
    return P.TangentIdentity(slot, tid)


# (rule, weight, precondition). Ordered simplest first: hypothesis shrinks towards the front.
RULES = (
    (r_leaf, 2, lambda m: m.allowed(f"Leaf.{m.dtype}")),
    (r_unary, 4, lambda m: bool(m.slots) and bool(m.ops("Unary", P.UNARY))),
    (r_binary, 3, lambda m: bool(m.slots) and bool(m.ops("Binary", P.BINARY))),
    (r_reduce, 2, lambda m: bool(m.slots) and bool(m.ops("Reduce", ["sum"]))),
    (r_backward, 6, lambda m: m.allowed("Backward") and m.has(lambda s: s.rg)),
    (r_hook, 8, lambda m: m.has(lambda s: s.rg) and bool(_hook_kinds(m))),
    (r_observe_grad, 4, lambda m: m.allowed("ObserveGrad") and bool(m.slots)),
    (r_observe_value, 2, lambda m: m.allowed("ObserveValue") and bool(_value_slots(m)[1])),
    (r_remove_hook, 2, lambda m: m.allowed("RemoveHook") and bool(m.hooks)),
    (r_retain_grad, 2, lambda m: m.allowed("RetainGrad") and m.has(lambda s: s.rg)),
    (r_matmul, 2, lambda m: m.allowed("Matmul") and bool(_matmul_pairs(m))),
    (r_view, 2, lambda m: m.has(lambda s: bool(_view_ops(m, s.shape)))),
    (r_inplace, 3, lambda m: bool(_inplace_targets(m))),
    (r_grad, 3, lambda m: m.allowed("Grad") and bool(_grad_pairs(m))),
    (r_function, 2, lambda m: m.allowed("FunctionApply") and bool(m.slots)),
    (r_observe_ctx, 2, lambda m: m.allowed("ObserveCtx") and bool(m.stashed)),
    (r_meta, 1, lambda m: bool(m.slots) and bool(m.ops("ObserveMeta", P.META))),
    (r_identity, 1, lambda m: bool(m.slots) and bool(m.ops("Identity", ["grad", "grad_fn"]))),
    (r_keep_grad, 1, lambda m: m.allowed("KeepGrad") and bool(m.slots)),
    (r_observe_kept, 2, lambda m: m.allowed("ObserveKept") and bool(m.kept)),
    (r_set_grad_none, 1, lambda m: m.allowed("SetGradNone") and m.has(lambda s: s.leaf)),
    (r_set_grad, 1, lambda m: m.allowed("SetGrad") and m.has(lambda s: s.leaf)),
    (r_weakref, 1, lambda m: m.allowed("Weakref") and bool(m.slots)),
    (r_observe_alive, 3, lambda m: m.allowed("ObserveAlive") and bool(m.weakrefs)),
    (r_delete, 1, lambda m: bool(m.slots)),
    (r_collect, 2, lambda m: bool(m.weakrefs)),
    (r_enter, 1, lambda m: m.allowed("EnterLevel") and not m.level_open and bool(m.slots)),
    (r_exit, 1, lambda m: m.level_open),
    (r_make_dual, 3, lambda m: m.level_open and m.allowed("MakeDual") and bool(_dual_sources(m))),
    (r_unpack_dual, 2, lambda m: m.level_used and m.allowed("UnpackDual") and bool(m.slots)),
    (r_tangent_identity, 1, lambda m: m.allowed("TangentIdentity") and bool(m.duals)),
)


@st.composite
def programs(draw, features=ALL_FEATURES, max_steps: int = 16, dtypes=("float64", "float32"),
             excluded=frozenset(), avoid=frozenset()):
    """A valid program of 2..max_steps steps using only ``features``, no ``excluded``
    variant and none of the ``avoid`` constructs (AVOID)."""
    features = frozenset(features)
    dtype = draw(st.sampled_from([d for d in dtypes if f"Leaf.{d}" not in excluded] or dtypes))
    model = Model(dtype, features, excluded=frozenset(excluded), avoid=frozenset(avoid))
    n = draw(st.integers(2, max_steps))
    steps = []
    for _ in range(n):
        enabled = [rule for rule, weight, pre in RULES if pre(model) for _ in range(weight)]
        if not enabled:  # the framework lacks everything that could come next
            break
        rule = draw(st.sampled_from(enabled))
        steps.append(rule(draw, model))
    return P.Program(dtype, tuple(steps))
