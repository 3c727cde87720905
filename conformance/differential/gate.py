"""The differential tester's feature gate: what each step needs of a framework, which steps a
run leaves out and why, and whether a missing API was declared or is an artefact.

Why read from the rendered source: a step's ``render()`` is the only spelling of what it asks of
the framework (``adapter.grad_fn(t)``, ``t.register_hook``, ``with fw.no_grad()``,
``adapter.backward(..., create_graph=True)``). Its ``fw.*`` / ``adapter.*`` chains, the
attribute names it uses on the framework's objects and the keywords it passes to
``adapter.backward`` are read through the feature registry (``conformance/features.toml``), as
the suite index reads the suites, so a step and its gate cannot drift apart, and an adapter's
``unsupported`` table means the same to the tester as to the suites.

Three of the language's features have no registry name: ``autograd_grad``
(``fw.autograd.grad``), ``weakref`` (weak references to tensors) and ``inplace``
(``adapter.inplace``); they are found by a one-line try (``interpreter.probe_features``).

A missing API met while a program runs (``Unsupported``, ``MissingName``, an attribute the
framework object lacks) is *unsupported* where the adapter declares its feature missing, and
a *missing-API artefact* otherwise: the adapter (or this language) asks for a name the
framework lacks without saying so. Neither is ever a divergence; the run counts both.
"""
from __future__ import annotations

import ast
import functools

from conformance.differential import program as P
from conformance.model import features as registry
from conformance.model.suite_index import SURFACE_ROOTS, attribute_chain

#: the language's features that the registry does not name: feature -> the surface chain
LANGUAGE = {"autograd_grad": "fw.autograd.grad", "weakref": "weakref.ref", "inplace": "adapter.inplace"}

#: names a program binds that are never the framework's objects (their attributes imply nothing)
_PLAIN = frozenset({"ev", "keep", "gc", "weakref", "list", "len"})


@functools.lru_cache(maxsize=None)
def all_features() -> frozenset:
    """Every feature a step can need: the registry's names and the language's own."""
    return frozenset(registry.registry()) | frozenset(LANGUAGE)


def _keyword_features(call: ast.Call) -> set[str]:
    """Features a keyword passed to a tensor method through the adapter adds
    (``adapter.backward(y, create_graph=True)`` -> ``create_graph_backward``: the registry's
    ``keywords = ["backward(create_graph=)"]``). A keyword given as False asks for nothing."""
    chain = attribute_chain(call.func)
    if not chain or chain[0] not in SURFACE_ROOTS:
        return set()
    method = chain[-1]
    found = set()
    for kw in call.keywords:
        if kw.arg is None or (isinstance(kw.value, ast.Constant) and kw.value.value in (False, None)):
            continue
        spelled = f"{method}({kw.arg}=)"
        found |= {f.name for f in registry.registry().values() if spelled in f.keywords}
    return found


def needs_of_source(source: str) -> frozenset:
    """The features (registry and language names) the Python ``source`` needs of a framework."""
    tree = ast.parse(source)
    inner = {id(n.value) for n in ast.walk(tree)
             if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute)}
    surface, attributes, found = set(), set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain = attribute_chain(node)
            if chain is None or chain[0] not in SURFACE_ROOTS + tuple(_PLAIN):
                attributes.add(node.attr)   # on a framework object (a tensor, ctx, handle)
            if chain and id(node) not in inner:
                surface.add(".".join(chain))
        elif isinstance(node, ast.Call):
            found |= _keyword_features(node)
    found |= registry.implied(surface, attributes)
    found |= {name for name, chain in LANGUAGE.items()
              if any(s == chain or s.startswith(chain + ".") for s in surface)}
    return frozenset(found)


@functools.lru_cache(maxsize=4096)
def step_needs(step: P.Step) -> frozenset:
    """What ``step`` needs of the framework, read from its ``render()``."""
    return needs_of_source("\n".join(step.render()))


@functools.lru_cache(maxsize=1)
def catalogue() -> dict[str, frozenset]:
    """variant -> the features its steps need (the union over the catalogue's samples)."""
    out: dict[str, frozenset] = {}
    for step in P.samples():
        out[step.variant] = out.get(step.variant, frozenset()) | step_needs(step)
    return out


def variant_needs(variant: str) -> frozenset:
    """The features a step variant needs; KeyError for a variant the catalogue lacks (a step
    the strategies generate that ``program.samples`` does not list: a test holds them
    together)."""
    return catalogue()[variant]


def left_out(available, declared: dict, probe_failed: dict | None = None) -> dict:
    """The variants a run cannot generate, and why: variant -> ``{"features": [...], "why":
    {feature: reason}}``, the reason being the adapter's declaration (``declared``: feature ->
    reason, its ``unsupported``), the failed one-line try (``probe_failed``: feature ->
    message), or that the reference lacks it."""
    available = frozenset(available)
    probe_failed = probe_failed or {}
    out = {}
    for variant, needs in sorted(catalogue().items()):
        missing = sorted(needs - available)
        if not missing:
            continue
        why = {}
        for feature in missing:
            if feature in declared:
                why[feature] = f"declared missing: {declared[feature]}"
            elif feature in probe_failed:
                why[feature] = f"not declared, but its one-line try failed: {probe_failed[feature]}"
            else:
                why[feature] = "the reference (the oracle) lacks it"
        out[variant] = {"features": missing, "why": why}
    return out


def available_features(declared, probe_failed=()) -> frozenset:
    """The features a run may generate steps for: all of them, less those the adapter declares
    missing (``declared``: its ``unsupported``) and those whose one-line try failed."""
    return all_features() - frozenset(declared) - frozenset(probe_failed)


def declared_in(program_steps, declared) -> set[str]:
    """The declared-missing features the steps need (what no finding may rest on)."""
    return {f for step in program_steps for f in step_needs(step) if f in declared}


def probe_programs(available, dtype: str = "float64") -> dict[str, P.Program]:
    """variant -> a short program whose last step is that variant, for every variant whose
    features are ``available``: run on the framework before the search, a missing API at that
    step says the variant cannot run (a name the namespace lacks, a translation that raises
    ``Unsupported``), so it is left out before any program asks for it."""
    t0 = P.Leaf(0, (2, 3), 0, True, dtype)        # a leaf that requires grad
    t1 = P.Leaf(1, (3, 2), 1, False, dtype)       # a leaf that does not
    t2 = P.Unary(2, 0, "mul2")                    # a recorded result
    t3 = P.Leaf(3, (2,), 2, False, dtype)         # broadcasts into t1
    base = (t0, t1, t2, t3)
    fn = P.FunctionApply(4, 0, 0, "input", True)
    dual = (P.EnterLevel(), P.MakeDual(4, 1, 0))
    by_kind = {
        "Leaf": lambda s: (P.Leaf(4, (3,), 0, True, s.dtype),),
        "Unary": lambda s: (P.Unary(4, 0, s.op, s.no_grad),),
        "Binary": lambda s: (P.Binary(4, 0, 2, s.op),),
        "Reduce": lambda s: (P.Reduce(4, 0, s.op),),
        "Matmul": lambda s: (P.Matmul(4, 0, 1),),
        "View": lambda s: (P.View(4, 0, s.op),),
        "Inplace": lambda s: (P.Inplace(1, s.op, 3 if s.op == "add_t" else -1, s.no_grad),),
        "Hook": lambda s: (P.Hook(0, 0 if s.hook in ("tensor", "post") else 2, s.hook, s.scale),),
        "RemoveHook": lambda s: (P.Hook(0, 0, "tensor"), P.RemoveHook(0)),
        "RetainGrad": lambda s: (P.RetainGrad(2),),
        "FunctionApply": lambda s: (P.FunctionApply(4, 0, 0, s.save, s.stash),),
        "ObserveCtx": lambda s: (fn, P.ObserveCtx(0, 0)),
        "Backward": lambda s: (P.Backward(2, s.retain, s.create),),
        "Grad": lambda s: (P.Grad(4, 2, 0, s.retain, s.create),),
        "ObserveGrad": lambda s: (P.ObserveGrad(0),),
        "ObserveValue": lambda s: (P.ObserveValue(2),),
        "ObserveMeta": lambda s: (P.ObserveMeta(2, s.attr),),
        "Identity": lambda s: (P.Identity(2 if s.attr == "grad_fn" else 0, s.attr),),
        "KeepGrad": lambda s: (P.KeepGrad(0, 0),),
        "ObserveKept": lambda s: (P.KeepGrad(0, 0), P.ObserveKept(0, 0)),
        "SetGradNone": lambda s: (P.SetGradNone(0),),
        "SetGrad": lambda s: (P.SetGrad(0),),
        "Weakref": lambda s: (P.Weakref(0, 2),),
        "ObserveAlive": lambda s: (P.Weakref(0, 2), P.ObserveAlive(0)),
        "Delete": lambda s: (P.Delete(2),),
        "Collect": lambda s: (P.Collect(),),
        "EnterLevel": lambda s: (P.EnterLevel(),),
        "ExitLevel": lambda s: (P.EnterLevel(), P.ExitLevel()),
        "MakeDual": lambda s: dual,
        "UnpackDual": lambda s: dual + (P.UnpackDual(4),),
        "TangentIdentity": lambda s: dual + (P.TangentIdentity(4, 0),),
    }
    available = frozenset(available)
    out = {}
    for sample in P.samples():
        if sample.variant in out or not variant_needs(sample.variant) <= available:
            continue
        steps = base + by_kind[sample.kind](sample)
        assert steps[-1].variant == sample.variant, (steps[-1].variant, sample.variant)
        out[sample.variant] = P.Program(dtype, steps)
    return out
