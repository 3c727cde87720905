"""Planted bugs (mutants) in the reference engine: the suites measure their own detection power.

A mutant is a small patch of ``reference`` applied inside the running process before any test
runs: an edit of one function's source (``edit``: replace the one match of a short token pattern
by another snippet (:mod:`conformance.mutants.anchor`: reformatting the engine does not break
it), recompile, swap the function's code object, so every module that imported the function
sees the change) or a replaced attribute (``replace``). The curated mutants are in
``conformance/mutants/catalogue/``, one module per suite area. Each mutant names the real
framework bug or mechanism it models, the rules expected to catch it, and a *probe*: a few lines
whose result differs between the mutant and the clean reference (the proof that the mutant is
not an equivalent one). tests/mutants checks that every mutant still applies to the reference
(and to a reformatted one), that its probe differs and that ``deactivate`` undoes it.

Activation:
  * ``AUTOGRAD_CONFORMANCE_MUTANT=<id>`` in the environment: this package's own adapter
    (:mod:`conformance.mutants.adapter`) applies the mutant when it imports the reference, so
    ``pytest --adapter=conformance.mutants.adapter:PlantedReference conformance/suites`` runs
    the suites against the buggy engine (``python -m conformance.mutants`` does this for every
    mutant); the reference adapter itself never imports this package;
  * ``activate(id)`` / ``deactivate()`` in-process (the probes, the differential tester's
    ``planted.py``, a test that shows one rule can fail).
"""
from __future__ import annotations

import importlib
import inspect
import os
import textwrap
from dataclasses import dataclass, field
from typing import Callable

from conformance.mutants.anchor import AnchorError, substitute

ENV = "AUTOGRAD_CONFORMANCE_MUTANT"
AREAS = ("identity", "gc_cycles", "hooks", "legacy_function", "forward_levels", "engine", "saved_tensors",
         "views")


@dataclass(frozen=True)
class Mutant:
    id: str  # "<area>.<kebab-name>"
    area: str  # the suite whose area the bug belongs to (or "harness": not scored)
    models: str  # the real framework bug or mechanism it models (framework named)
    rules: tuple[str, ...]  # rule ids expected to catch it
    patch: Callable[[], None]  # applies the bug (through edit/replace)
    probe: Callable[[], object]  # a value that differs on the mutant
    scored: bool = True  # False: a planted bug for the harness's own tests, not in the score
    survivor_reason: str = ""  # why a survivor may stay (an equivalent behaviour torch shows)
    description: str = field(default="")


REGISTRY: dict[str, Mutant] = {}
_undo: list[Callable[[], None]] = []
_edited: dict[Callable, tuple[str, str]] = {}  # edited function -> (its edited source, where it is defined)
_active: list[str] = []


def mutant(id: str, *, models: str, rules, probe, scored: bool = True, survivor_reason: str = ""):
    """Decorator: register the decorated patch function as mutant ``id``."""

    def register(patch):
        if id in REGISTRY:
            raise ValueError(f"mutant {id!r} registered twice")
        area = id.partition(".")[0]
        REGISTRY[id] = Mutant(id, area, models, tuple([rules] if isinstance(rules, str) else rules),
                              patch, probe, scored, survivor_reason,
                              textwrap.dedent(patch.__doc__ or "").strip())
        return patch

    return register


# -- patching primitives ---------------------------------------------------------------------
def _resolve(target: str):
    """``"pkg.module:Name.attr"`` -> (owner, attribute name, value)."""
    module_name, _, path = target.partition(":")
    owner = importlib.import_module(module_name)
    parts = path.split(".")
    for part in parts[:-1]:
        owner = getattr(owner, part)
    name = parts[-1]
    value = inspect.getattr_static(owner, name, _MISSING)
    return owner, name, value


_MISSING = object()


def _function_of(value):
    if isinstance(value, property):
        return value.fget
    if isinstance(value, (staticmethod, classmethod)):
        return value.__func__
    return value


def edit(target: str, old: str, new: str, *more: str, setter: bool = False) -> None:
    """Replace the one match of the token pattern ``old`` by ``new`` (and of each further
    old/new pair in ``more``, in turn) in the source of ``target``'s function (a property's
    getter, or its setter with ``setter=True``) and give that function object the recompiled
    code, so every reference to it runs the edited code.

    ``old`` matches whatever the formatting (:mod:`conformance.mutants.anchor`); ``new``'s
    lines after the first are indented relative to the matched line. A pattern that matches
    zero or several times raises :class:`AnchorError` naming the function and the pattern."""
    owner, name, value = _resolve(target)
    if value is _MISSING:
        raise AttributeError(f"mutant edit of {target}: no such function")
    func = value.fset if setter else _function_of(value)
    previous = _edited.get(func)  # a function edited before in this process: edit its edited text
    if previous is None:
        code_at = func.__code__
        source = textwrap.dedent(inspect.getsource(func))
        where = f"{os.path.relpath(code_at.co_filename)}:{code_at.co_firstlineno}"
    else:
        source, where = previous
    pairs = [(old, new), *zip(more[::2], more[1::2])]
    for before, after in pairs:
        source = substitute(source, before, after, target, where)
    bare = source
    while bare.startswith("@"):  # decorators were applied already: compile the bare def
        bare = bare.split("\n", 1)[1]
    namespace: dict = {}
    code = compile(bare, inspect.getsourcefile(func) or "<mutant>", "exec")
    exec(code, func.__globals__, namespace)
    fresh = namespace[func.__name__]
    if len(fresh.__code__.co_freevars) != len(func.__code__.co_freevars):
        raise ValueError(f"mutant edit of {target} changes the closure of {func.__name__}")
    original = func.__code__
    func.__code__ = fresh.__code__
    _edited[func] = (source, where)

    def undo() -> None:
        func.__code__ = original
        if previous is None:
            _edited.pop(func, None)
        else:
            _edited[func] = previous

    _undo.append(undo)


def single_edit(id: str, target: str, old: str, new: str, *more: str, models: str, rules, probe,
                setter: bool = False, survivor_reason: str = "") -> None:
    """Register mutant ``id``: one ``edit`` of one function, described by the edit itself."""

    def patch():
        edit(target, old, new, *more, setter=setter)

    patch.__doc__ = f"In {target}: {old.strip()!r} -> {new.strip()!r}"
    mutant(id, models=models, rules=rules, probe=probe, survivor_reason=survivor_reason)(patch)


def replace(target: str, value) -> None:
    """Set attribute ``target`` to ``value`` (restored by ``deactivate``)."""
    owner, name, old = _resolve(target)
    had = name in vars(owner)
    setattr(owner, name, value)
    if had:
        _undo.append(lambda: setattr(owner, name, old))
    else:
        _undo.append(lambda: delattr(owner, name))


def original(target: str):
    """The current value of ``target`` (a function to wrap in ``replace``)."""
    return getattr(*_resolve(target)[:2])


# -- activation ------------------------------------------------------------------------------
def load() -> dict[str, Mutant]:
    """Every registered mutant (importing the area modules registers them)."""
    from conformance.mutants import catalogue, tests_can_fail  # noqa: F401

    return REGISTRY


def get(mutant_id: str) -> Mutant:
    mutants = load()
    if mutant_id not in mutants:
        raise KeyError(f"unknown mutant {mutant_id!r} (python -m conformance.mutants --list)")
    return mutants[mutant_id]


def activate(mutant_id: str) -> Mutant:
    """Apply mutant ``mutant_id`` to the reference in this process."""
    import reference  # noqa: F401  (the patch edits the loaded modules)

    m = get(mutant_id)
    applied = len(_undo)
    try:
        m.patch()
    except AnchorError as exc:
        while len(_undo) > applied:  # the mutant's edits made before the failing one
            _undo.pop()()
        raise exc.naming(mutant_id) from None
    _active.append(mutant_id)
    return m


def deactivate() -> None:
    """Undo every patch applied in this process, newest first."""
    while _undo:
        _undo.pop()()
    _active.clear()


def active() -> tuple[str, ...]:
    return tuple(_active)


def activate_from_env() -> str | None:
    """Apply the mutant named by ``$AUTOGRAD_CONFORMANCE_MUTANT`` (once per process)."""
    mutant_id = os.environ.get(ENV, "").strip()
    if not mutant_id or mutant_id in _active:
        return None
    activate(mutant_id)
    return mutant_id


def probe_differs(mutant_id: str) -> tuple[bool, object, object]:
    """(differs, clean value, mutant value) of the mutant's probe, in this process."""
    m = get(mutant_id)
    deactivate()
    clean = run_probe(m)
    activate(mutant_id)
    try:
        mutated = run_probe(m)
    finally:
        deactivate()
    return clean != mutated, clean, mutated


def run_probe(m: Mutant):
    """The value of mutant ``m``'s probe in this process (a raised exception's type, as text)."""
    try:
        return m.probe()
    except BaseException as exc:  # noqa: BLE001 - a raise is a result too
        return f"raises {type(exc).__name__}"
