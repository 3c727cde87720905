"""The program language: a program is a dtype plus a list of steps; each step is a dataclass.

One source of truth: a step's ``render()`` is the Python it means, written against the
documented surface only (docs/fw-surface.md): ``fw`` is the adapter's torch-shaped namespace
(``adapter.fw``, which an adapter can translate: computations are ``fw.exp(x)``,
``fw.sum(x)``, never ``x.exp()``), ``adapter`` the adapter itself, whose methods carry what
frameworks spell or hold differently on their own objects (``adapter.backward``,
``adapter.inplace``, ``adapter.retain_grad``, ``adapter.saved_tensors``, node hooks, and the
translations ``adapter.grad`` / ``clear_grad`` / ``grad_fn`` / ``is_leaf`` /
``requires_grad`` / ``is_recorded``; values are read with ``adapter.to_numpy(x).tolist()``).
On the framework's own objects a program uses only Python's operators, ``.shape``, the hook
registrations of the feature it needs (``t.register_hook``), a handle's ``remove()`` and a
ctx's ``save_for_backward``: ``tests/differential/test_search.py`` holds every rendered step
to that. What a step needs of the framework is read from this source
(``conformance/differential/gate.py``), so a step and its feature gate cannot drift apart. The
interpreter executes exactly these lines with ``fw`` and ``adapter`` bound, and a standalone
script is the adapter's preamble, two lines that load the adapter, then the same lines, so a
shrunk program and its script cannot drift apart, for a built-in adapter or a third-party one.

``variant`` names what a step asks of the framework (``View.t``, ``Hook.node``): a framework
that lacks it gets UNSUPPORTED for that variant and the search stops generating it;
``FEATURES`` maps variants to the feature registry's names (conformance/features.toml) so an
adapter's declared ``unsupported`` features switch them off before the search starts.

Names the rendered code uses: ``t<n>`` tensors, ``h<n>`` hook handles, ``u<n>`` tangents,
``g<n>`` kept gradients, ``w<n>`` weakrefs, ``F<n>`` custom Function classes, ``ev`` the list
of observations (plain lists of str / int / bool / None / nested float lists, so a record
survives a JSON round trip unchanged) and ``keep`` (stashed ctx objects).

Records (``ev`` entries), first field the kind:
  ['hook', h, shape|None]            a tensor hook ran with a gradient of that shape
  ['post', h, shape]                 a post-accumulate-grad hook ran (shape of p.grad)
  ['node', h, n, [shape|None]]       a node (post) hook: len(grad_inputs), grad_outputs shapes
  ['prehook', h, [shape|None]]       a node pre-hook: grad_outputs shapes
  ['grad', 't<n>', values|None]      t.grad
  ['agrad', 't<n>', values]          the result of autograd.grad
  ['kept', g, same, values|None]     a .grad read earlier: still `is` t.grad?, its values now
  ['is', what, bool]                 an identity check (t.grad is t.grad, ...)
  ['meta', 't<n>', attr, value]      requires_grad / is_leaf / (grad_fn is None) / recorded
  ['alive', w, bool]                 weakref w still resolves
  ['tangent', 't<n>', values|None]   unpack_dual(t).tangent
  ['ctx', f, [shape]]                shapes of a stashed ctx's saved_tensors
  ['value', 't<n>', alias, values]   t's values; alias: 'view' (a View step's result), 'detach'
                                     (a detach() result) or 'tensor' (splits the signature by cause)
Numeric payloads (``NUMERIC_KINDS``) are always the last field.
"""
from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import ClassVar

VALUES = (0.5, -1.25, 2.0, 1.5, -0.75, 1.0, -2.0, 0.25, 1.75)
NUMERIC_KINDS = frozenset({"grad", "agrad", "kept", "tangent", "value"})
FWAD = "autograd.forward_ad"


def _shape_expr(var: str) -> str:
    return f"None if {var} is None else list({var}.shape)"


def _shapes_expr(var: str) -> str:
    return f"[None if x is None else list(x.shape) for x in {var}]"


def _values_expr(expr: str) -> str:
    """The values of what ``expr`` gives (a tensor, or an array where the framework holds
    ``.grad`` as one), None for None: read through ``adapter.to_numpy``, never ``.tolist()``."""
    return f"None if {expr} is None else adapter.to_numpy({expr}).tolist()"


def _grad_expr(t: str) -> str:
    """``t.grad`` as the framework holds it (``adapter.grad``: the object itself, never a copy)."""
    return f"adapter.grad({t})"


def leaf_values(shape: tuple, seed: int):
    """Deterministic, well-conditioned values (no zeros) for a leaf of ``shape``."""
    n = 1
    for s in shape:
        n *= s
    flat = [VALUES[(seed + 3 * i) % len(VALUES)] for i in range(n)]

    def nest(items, dims):
        if not dims:
            return items[0]
        step = len(items) // dims[0]
        return [nest(items[i * step:(i + 1) * step], dims[1:]) for i in range(dims[0])]

    return nest(flat, list(shape))


@dataclass(frozen=True)
class Step:
    """Base class. ``suite``: the catalogue suite an error raised by this step belongs to."""

    suite: ClassVar[str] = "engine"
    imports: ClassVar[tuple[str, ...]] = ()

    def render(self, fw: str = "fw") -> list[str]:
        raise NotImplementedError

    @property
    def kind(self) -> str:
        return type(self).__name__

    @property
    def family(self) -> str:
        """The steps an error divergence's signature does not tell apart (one engine check)."""
        return "Backward/Grad" if self.kind in ("Backward", "Grad") else self.kind

    @property
    def variant(self) -> str:
        """What this step asks of the framework: its kind, plus the operation / hook kind /
        attribute it uses, plus ``+no_grad`` / ``+retain`` / ``+create`` when those are set
        (a framework whose backward cannot retain its graph loses only ``Backward+retain``)."""
        parts = [self.kind]
        for name in ("op", "hook", "attr", "dtype"):
            if hasattr(self, name):
                parts.append(str(getattr(self, name)))
        name = ".".join(parts)
        for flag in ("no_grad", "retain", "create"):
            if getattr(self, flag, False):
                name += f"+{flag}"
        return name

    def to_json(self) -> dict:
        return {"step": self.kind, **dataclasses.asdict(self)}


# -- tensors ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Leaf(Step):
    out: int
    shape: tuple
    seed: int
    requires_grad: bool
    dtype: str = "float64"

    def render(self, fw="fw"):
        rg = ", requires_grad=True" if self.requires_grad else ""
        values = leaf_values(self.shape, self.seed)
        return [f"t{self.out} = fw.tensor({values!r}, dtype=fw.{self.dtype}{rg})"]


# computations through the namespace (``fw.exp(x)``, never ``x.exp()``: an adapter translates
# fw's functions, not the framework's tensor methods) or Python's operators; only the ``fw``
# names of docs/fw-surface.md, which every adapter must give torch's meaning (a framework's own
# function of the same name and another meaning, MyGrad's numpy-style transpose, passes
# through a namespace untranslated where no suite asks for it)
UNARY = {
    "mul2": "{x} * 2", "add1": "{x} + 1", "neg": "-{x}", "square": "{x} * {x}",
    "exp": "fw.exp({x})", "sigmoid": "fw.sigmoid({x})", "sin": "fw.sin({x})",
    "clone": "fw.clone({x})", "detach": "fw.detach({x})",
}
BINARY = {"add": "{a} + {b}", "sub": "{a} - {b}", "mul": "{a} * {b}"}
REDUCE = {"sum": "fw.sum({x})", "sum0": "fw.sum({x}, 0)"}
# "unsqueeze": a view with a new leading dimension, spelled with the listed fw.reshape
VIEW = {"t": "fw.t({x})", "flat": "fw.reshape({x}, (-1,))",
        "unsqueeze": "fw.reshape({x}, (1,) + tuple({x}.shape))", "index": "{x}[0]"}


def _maybe_no_grad(fw: str, line: str, no_grad: bool) -> str:
    return f"with fw.no_grad(): {line}" if no_grad else line


@dataclass(frozen=True)
class Unary(Step):
    out: int
    src: int
    op: str
    no_grad: bool = False

    def render(self, fw="fw"):
        expr = UNARY[self.op].format(x=f"t{self.src}")
        return [_maybe_no_grad(fw, f"t{self.out} = {expr}", self.no_grad)]


@dataclass(frozen=True)
class Binary(Step):
    out: int
    a: int
    b: int
    op: str

    def render(self, fw="fw"):
        return [f"t{self.out} = " + BINARY[self.op].format(a=f"t{self.a}", b=f"t{self.b}")]


@dataclass(frozen=True)
class Reduce(Step):
    out: int
    src: int
    op: str

    def render(self, fw="fw"):
        return [f"t{self.out} = " + REDUCE[self.op].format(x=f"t{self.src}")]


@dataclass(frozen=True)
class Matmul(Step):
    out: int
    a: int
    b: int

    def render(self, fw="fw"):
        return [f"t{self.out} = t{self.a} @ t{self.b}"]


@dataclass(frozen=True)
class View(Step):
    out: int
    src: int
    op: str

    def render(self, fw="fw"):
        return [f"t{self.out} = " + VIEW[self.op].format(x=f"t{self.src}")]


# in-place changes go through adapter.inplace (frameworks spell them differently)
INPLACE = {"mul_": "adapter.inplace(t{d}, 'mul_', 2)", "add_": "adapter.inplace(t{d}, 'add_', 1)",
           "add_t": "adapter.inplace(t{d}, 'add_', t{s})", "zero_": "adapter.inplace(t{d}, 'zero_')"}


@dataclass(frozen=True)
class Inplace(Step):
    dst: int
    op: str
    src: int = -1
    no_grad: bool = False

    def render(self, fw="fw"):
        return [_maybe_no_grad(fw, INPLACE[self.op].format(d=self.dst, s=self.src), self.no_grad)]


# -- hooks ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Hook(Step):
    """kind: tensor (t.register_hook), post (register_post_accumulate_grad_hook),
    node (t.grad_fn.register_hook), prehook (t.grad_fn.register_prehook)."""

    suite: ClassVar[str] = "hooks"
    hid: int
    slot: int
    hook: str
    scale: bool = False

    def render(self, fw="fw"):
        h, t = self.hid, f"t{self.slot}"
        if self.hook == "tensor":
            body = f"ev.append(['hook', {h}, {_shape_expr('g')}])"
            if self.scale:
                body += " or g * 2"
            return [f"h{h} = {t}.register_hook(lambda g: {body})"]
        if self.hook == "post":
            return [f"h{h} = {t}.register_post_accumulate_grad_hook("
                    f"lambda p: ev.append(['post', {h}, list({_grad_expr('p')}.shape)]))"]
        if self.hook == "node":
            # grad_inputs: only their number. torch leaves the ones autograd.grad does not
            # need None (its input mask); the reference computes them all.
            return [f"h{h} = adapter.register_node_hook(adapter.grad_fn({t}), lambda gi, go: ev.append("
                    f"['node', {h}, len(gi), {_shapes_expr('go')}]))"]
        if self.hook == "prehook":
            return [f"h{h} = adapter.register_node_prehook(adapter.grad_fn({t}), "
                    f"lambda go: ev.append(['prehook', {h}, {_shapes_expr('go')}]))"]
        raise ValueError(self.hook)


@dataclass(frozen=True)
class RemoveHook(Step):
    suite: ClassVar[str] = "hooks"
    hid: int

    def render(self, fw="fw"):
        return [f"h{self.hid}.remove()"]


@dataclass(frozen=True)
class RetainGrad(Step):
    suite: ClassVar[str] = "hooks"
    slot: int

    def render(self, fw="fw"):
        return [f"adapter.retain_grad(t{self.slot})"]


# -- custom Function ----------------------------------------------------------------------
@dataclass(frozen=True)
class FunctionApply(Step):
    """y = x*x saving the input, or y = exp(x) saving the output; ctx optionally stashed in keep."""

    out: int
    src: int
    fid: int
    save: str  # "input" | "output"
    stash: bool = False

    def render(self, fw="fw"):
        stash = " keep.append(ctx);" if self.stash else ""
        if self.save == "input":
            fwd = f"ctx.save_for_backward(x);{stash} return x * x"
            bwd = "return g * 2 * adapter.saved_tensors(ctx)[0]"
        else:
            fwd = f"y = fw.exp(x); ctx.save_for_backward(y);{stash} return y"
            bwd = "return g * adapter.saved_tensors(ctx)[0]"
        return [
            f"class F{self.fid}(fw.autograd.Function):",
            "    @staticmethod",
            f"    def forward(ctx, x): {fwd}",
            "    @staticmethod",
            f"    def backward(ctx, g): {bwd}",
            f"t{self.out} = F{self.fid}.apply(t{self.src})",
        ]


@dataclass(frozen=True)
class ObserveCtx(Step):
    """Shapes of the saved tensors of the k-th stashed ctx (raises once they are freed)."""

    k: int
    fid: int

    def render(self, fw="fw"):
        return [f"ev.append(['ctx', {self.fid}, [list(s.shape) for s in adapter.saved_tensors(keep[{self.k}])]])"]


# -- running backward ---------------------------------------------------------------------
def _flags(retain: bool, create: bool) -> str:
    return (", retain_graph=True" if retain else "") + (", create_graph=True" if create else "")


@dataclass(frozen=True)
class Backward(Step):
    slot: int
    retain: bool = False
    create: bool = False

    def render(self, fw="fw"):
        return [f"adapter.backward(fw.sum(t{self.slot}){_flags(self.retain, self.create)})"]


@dataclass(frozen=True)
class Grad(Step):
    """t<out>, = autograd.grad(t<root>.sum(), t<inp>, ...) and its value observed."""

    out: int
    root: int
    inp: int
    retain: bool = False
    create: bool = False

    def render(self, fw="fw"):
        return [
            f"t{self.out}, = fw.autograd.grad(fw.sum(t{self.root}), t{self.inp}"
            f"{_flags(self.retain, self.create)})",
            f"ev.append(['agrad', 't{self.out}', adapter.to_numpy(t{self.out}).tolist()])",
        ]


# -- observations -------------------------------------------------------------------------
@dataclass(frozen=True)
class ObserveGrad(Step):
    slot: int

    def render(self, fw="fw"):
        t = f"t{self.slot}"
        return [f"ev.append(['grad', '{t}', {_values_expr(_grad_expr(t))}])"]


# through the adapter's translations (GUIDE: adapter.requires_grad / is_leaf / grad_fn)
META = {"requires_grad": "adapter.requires_grad({t})", "is_leaf": "adapter.is_leaf({t})",
        "grad_fn": "adapter.grad_fn({t}) is None", "recorded": "adapter.is_recorded({t})"}


@dataclass(frozen=True)
class ObserveValue(Step):
    """t's values: whether a view or a ``detach()`` alias follows an in-place change of the
    tensor it shares memory with (torch: always, whatever the framework has computed yet)."""

    suite: ClassVar[str] = "views"
    slot: int
    alias: str = "tensor"  # "view" | "detach" | "tensor": what t is, recorded for the signature

    def render(self, fw="fw"):
        t = f"t{self.slot}"
        return [f"ev.append(['value', '{t}', '{self.alias}', adapter.to_numpy({t}).tolist()])"]


@dataclass(frozen=True)
class ObserveMeta(Step):
    slot: int
    attr: str = "requires_grad"  # a key of META

    def render(self, fw="fw"):
        t = f"t{self.slot}"
        return [f"ev.append(['meta', '{t}', '{self.attr}', {META[self.attr].format(t=t)}])"]


@dataclass(frozen=True)
class Identity(Step):
    suite: ClassVar[str] = "identity"
    slot: int
    attr: str  # "grad" | "grad_fn"

    def render(self, fw="fw"):
        label = f"t{self.slot}.{self.attr}"   # the record's label: torch's spelling
        e = f"adapter.{self.attr}(t{self.slot})"
        return [f"ev.append(['is', '{label}', {e} is {e}])"]


@dataclass(frozen=True)
class KeepGrad(Step):
    suite: ClassVar[str] = "identity"
    kid: int
    slot: int

    def render(self, fw="fw"):
        return [f"g{self.kid} = {_grad_expr(f't{self.slot}')}"]


@dataclass(frozen=True)
class ObserveKept(Step):
    suite: ClassVar[str] = "identity"
    kid: int
    slot: int

    def render(self, fw="fw"):
        g = f"g{self.kid}"
        return [f"ev.append(['kept', {self.kid}, {_grad_expr(f't{self.slot}')} is {g}, {_values_expr(g)}])"]


@dataclass(frozen=True)
class SetGradNone(Step):
    slot: int

    def render(self, fw="fw"):
        return [f"adapter.clear_grad(t{self.slot})"]


@dataclass(frozen=True)
class SetGrad(Step):
    """``t.grad = <a tensor of ones>`` through ``adapter.set_grad`` (feature grad_assignment):
    later backwards accumulate into the assigned tensor (torch: in place, the same object)."""

    suite: ClassVar[str] = "identity"
    slot: int

    def render(self, fw="fw"):
        t = f"t{self.slot}"
        return [f"adapter.set_grad({t}, fw.ones_like({t}))"]


# -- lifetimes ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Weakref(Step):
    suite: ClassVar[str] = "gc_cycles"
    imports: ClassVar[tuple[str, ...]] = ("weakref",)
    wid: int
    slot: int

    def render(self, fw="fw"):
        return [f"w{self.wid} = weakref.ref(t{self.slot})"]


@dataclass(frozen=True)
class ObserveAlive(Step):
    suite: ClassVar[str] = "gc_cycles"
    wid: int

    def render(self, fw="fw"):
        return [f"ev.append(['alive', {self.wid}, w{self.wid}() is not None])"]


@dataclass(frozen=True)
class Delete(Step):
    suite: ClassVar[str] = "gc_cycles"
    slot: int

    def render(self, fw="fw"):
        return [f"del t{self.slot}"]


@dataclass(frozen=True)
class Collect(Step):
    suite: ClassVar[str] = "gc_cycles"
    imports: ClassVar[tuple[str, ...]] = ("gc",)

    def render(self, fw="fw"):
        return ["gc.collect()"]


# -- forward AD ---------------------------------------------------------------------------
@dataclass(frozen=True)
class EnterLevel(Step):
    suite: ClassVar[str] = "forward_levels"

    def render(self, fw="fw"):
        return [f"fw.{FWAD}.enter_dual_level()"]


@dataclass(frozen=True)
class ExitLevel(Step):
    suite: ClassVar[str] = "forward_levels"

    def render(self, fw="fw"):
        return [f"fw.{FWAD}.exit_dual_level()"]


@dataclass(frozen=True)
class MakeDual(Step):
    suite: ClassVar[str] = "forward_levels"
    out: int
    src: int
    tid: int

    def render(self, fw="fw"):
        t = f"t{self.src}"
        return [f"u{self.tid} = fw.full(tuple({t}.shape), 0.5, dtype={t}.dtype)",
                f"t{self.out} = fw.{FWAD}.make_dual(t{self.src}, u{self.tid})"]


@dataclass(frozen=True)
class UnpackDual(Step):
    suite: ClassVar[str] = "forward_levels"
    slot: int

    def render(self, fw="fw"):
        return [f"ev.append(['tangent', 't{self.slot}', "
                f"{_values_expr(f'fw.{FWAD}.unpack_dual(t{self.slot}).tangent')}])"]


@dataclass(frozen=True)
class TangentIdentity(Step):
    suite: ClassVar[str] = "forward_levels"
    slot: int
    tid: int

    def render(self, fw="fw"):
        return [f"ev.append(['is', 'tangent of t{self.slot} is u{self.tid}', "
                f"fw.{FWAD}.unpack_dual(t{self.slot}).tangent is u{self.tid}])"]


STEP_TYPES = {cls.__name__: cls for cls in Step.__subclasses__()}


def samples() -> list[Step]:
    """One step of every variant (``Step.variant``) the strategies can generate, with every
    flag combination: the catalogue the feature gate (gate.py) and the one-line tries
    (``interpreter.probe_features``) judge before a run."""
    out: list[Step] = [Leaf(0, (3,), 0, rg, dtype) for dtype in ("float64", "float32")
                       for rg in (False, True)]
    out += [Unary(1, 0, op, ng) for op in UNARY for ng in (False, True)]
    out += [Binary(2, 0, 1, op) for op in BINARY]
    out += [Reduce(1, 0, op) for op in REDUCE]
    out += [Matmul(2, 0, 1)]
    out += [View(1, 0, op) for op in VIEW]
    out += [Inplace(0, op, 1 if op == "add_t" else -1, ng) for op in INPLACE for ng in (False, True)]
    out += [Hook(0, 0, kind, scale) for kind in ("tensor", "post", "node", "prehook")
            for scale in (False, True)]
    out += [RemoveHook(0), RetainGrad(0)]
    out += [FunctionApply(1, 0, 0, save, stash) for save in ("input", "output") for stash in (False, True)]
    out += [ObserveCtx(0, 0)]
    out += [Backward(0, r, c) for r, c in itertools.product((False, True), repeat=2)]
    out += [Grad(2, 1, 0, r, c) for r, c in itertools.product((False, True), repeat=2)]
    out += [ObserveGrad(0)] + [ObserveValue(0, alias) for alias in ("tensor", "view", "detach")]
    out += [ObserveMeta(0, attr) for attr in META]
    out += [Identity(0, attr) for attr in ("grad", "grad_fn")]
    out += [KeepGrad(0, 0), ObserveKept(0, 0), SetGradNone(0), SetGrad(0)]
    out += [Weakref(0, 0), ObserveAlive(0), Delete(0), Collect()]
    out += [EnterLevel(), ExitLevel(), MakeDual(1, 0, 0), UnpackDual(0), TangentIdentity(1, 0)]
    return out



@dataclass(frozen=True)
class Program:
    dtype: str
    steps: tuple

    def render(self, fw: str = "fw") -> list[list[str]]:
        """Each step's lines (``fw``: the adapter's namespace, ``adapter``: the adapter)."""
        return [step.render(fw) for step in self.steps]

    def imports(self) -> list[str]:
        return sorted({name for step in self.steps for name in step.imports})

    def uses_forward_ad(self) -> bool:
        return any(isinstance(s, EnterLevel) for s in self.steps)

    def without(self, index: int) -> "Program":
        return Program(self.dtype, self.steps[:index] + self.steps[index + 1:])

    def to_json(self) -> dict:
        return {"dtype": self.dtype, "steps": [s.to_json() for s in self.steps]}

    @classmethod
    def from_json(cls, data: dict) -> "Program":
        steps = []
        for item in data["steps"]:
            item = dict(item)
            step_cls = STEP_TYPES[item.pop("step")]
            if "shape" in item:
                item["shape"] = tuple(item["shape"])
            steps.append(step_cls(**item))
        return cls(data["dtype"], tuple(steps))

    def __str__(self) -> str:
        return "\n".join(line for lines in self.render() for line in lines)
