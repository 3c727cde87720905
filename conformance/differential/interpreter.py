"""Runs a program's steps on one framework and returns what could be observed.

``run_steps`` executes each step's source (``Step.render()``) in a fresh namespace with
``fw`` bound to the adapter's namespace (``adapter.fw``) and ``adapter`` to the adapter, moving the records the step appended to ``ev`` into
the trace tagged with the step's index. The first exception ends the program; it is kept as
``{"step", "type", "category", "marker", "message"}``; a missing API (category
``missing-api``) also carries ``feature`` (the registry feature the adapter or its namespace
named, if any) and ``name`` (the attribute that was missing, if any). The garbage collector is disabled
while a program runs, so liveness depends on reference counting and the program's own
``gc.collect()`` steps only; objects older than the program are frozen (``gc.freeze``), which
keeps a collection cheap in a process that imported a large framework.

Pure standard library: the subprocess worker imports this module under other Pythons.
"""
from __future__ import annotations

import gc
import re
import warnings
import weakref

# (category, substrings of the message, any of which puts an error in the category);
# the first match wins. ``marker`` is the substring that matched (the script checks it).
ERROR_CATEGORIES = (
    ("version", ("modified by an inplace operation", "modified by an in-place operation")),
    ("freed", ("backward through the graph a second time", "already been freed",
               "after they have already been freed", "has been released")),
    ("leaf-inplace", ("leaf Variable that requires grad", "leaf variable that requires grad")),
    ("no-grad", ("does not require grad", "doesn't require grad", "does not have a grad_fn",
                 "requires_grad` should be true",
                 "does not require gradient", "doesn't require gradient")),
    ("unused", ("appears to not have been used",)),
    ("jvp", ("jvp",)),
    ("forward-ad", ("forward AD", "forward-mode", "dual", "forward gradient")),
    ("non-leaf", ("non-leaf",)),
    ("none-grad", ("None gradient", "NoneType")),
    ("shape", ("size", "shape", "broadcast")),
)
MISSING_API = "missing-api"
CRASH = "crash"
TIMEOUT = "timeout"

_code_cache: dict[str, object] = {}


# Python's words for assigning or deleting an attribute that has no setter / deleter (a
# read-only property: MyGrad's Tensor.grad), 3.7 to 3.13
_READ_ONLY = re.compile(r"(?:property (?:'(\w+)' )?of '[^']*' object has no (?:setter|deleter)"
                        r"|can't (?:set|delete) attribute(?: '(\w+)')?"
                        r"|object attribute '(\w+)' is read-only)")


def read_only_attribute(exc: BaseException) -> str | None:
    """``"grad="`` for an ``AttributeError`` that says the attribute cannot be assigned or
    deleted (the registry spells assigning a field ``<name>=``); None otherwise."""
    if not isinstance(exc, AttributeError):
        return None
    match = _READ_ONLY.search(str(exc))
    if match is None:
        return None
    name = next((g for g in match.groups() if g), None) or getattr(exc, "name", None)
    return f"{name}=" if name else "="


def is_missing_api(exc: BaseException) -> bool:
    """The framework lacks what the step asked for: the adapter said so (``Unsupported``,
    ``MissingName``), a framework object has no such attribute, an attribute cannot be
    assigned there (a read-only property), or a call takes no such keyword. An
    ``AttributeError`` on ``None`` (a gradient that is None) is behaviour."""
    if any(cls.__name__ == "Unsupported" for cls in type(exc).__mro__):
        return True
    if isinstance(exc, AttributeError):
        if read_only_attribute(exc) is not None:
            return True
        return getattr(exc, "obj", object()) is not None
    return isinstance(exc, TypeError) and "unexpected keyword" in str(exc)


def missing_name(exc: BaseException) -> str | None:
    """The attribute a missing-API error names: ``grad=`` for a read-only one, else the
    ``AttributeError``'s ``name`` (3.10+), else the one its message quotes."""
    assigned = read_only_attribute(exc)
    if assigned is not None:
        return assigned
    name = getattr(exc, "name", None)
    if isinstance(name, str) and name:
        return name
    if isinstance(exc, AttributeError):
        match = re.search(r"has no attribute '(\w+)'", str(exc))
        if match:
            return match.group(1)
    return None


def missing_feature(exc: BaseException) -> str | None:
    """The feature an ``Unsupported`` (``Adapter.require``, ``MissingName``...) names in its
    ``feature``; None for any other error, or an ``Unsupported`` that names none."""
    feature = getattr(exc, "feature", None)
    return feature if isinstance(feature, str) and feature else None


def categorize(exc: BaseException) -> tuple[str, str]:
    """(category, marker) of an exception raised by a step."""
    message = str(exc)
    # the adapter says the framework lacks the feature: never a divergence
    if is_missing_api(exc):
        return MISSING_API, type(exc).__name__
    lowered = message.lower()
    for category, needles in ERROR_CATEGORIES:
        for needle in needles:
            if needle.lower() in lowered:
                return category, needle
    return f"other:{type(exc).__name__}", type(exc).__name__


def _compile(source: str):
    code = _code_cache.get(source)
    if code is None:
        if len(_code_cache) > 20000:
            _code_cache.clear()
        code = _code_cache[source] = compile(source, "<step>", "exec")
    return code


def run_steps(adapter, steps: list[list[str]], forward_ad: bool = False, on_step=None) -> dict:
    """Run ``steps`` (lists of source lines) through ``adapter``; see the module doc.

    ``on_step(i)`` is called before step ``i`` runs (the worker reports progress with it,
    so that a crash is attributed to its step).
    """
    fw = adapter.fw
    ev: list = []
    env = {"fw": fw, "adapter": adapter, "ev": ev, "keep": [], "gc": gc, "weakref": weakref}
    trace: list = []
    error = None
    was_enabled = gc.isenabled()
    gc.disable()
    gc.freeze()  # everything older than this program: gc.collect() scans only what it creates
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for index, lines in enumerate(steps):
                if on_step is not None:
                    on_step(index)
                try:
                    exec(_compile("\n".join(lines)), env)
                except Exception as exc:  # noqa: BLE001 - every error is an observation
                    category, marker = categorize(exc)
                    error = {"step": index, "type": type(exc).__name__, "category": category,
                             "marker": marker, "message": str(exc)[:300]}
                    if category == MISSING_API:
                        error["feature"] = missing_feature(exc)
                        error["name"] = missing_name(exc)
                finally:
                    trace.extend([index, _plain(record)] for record in ev)
                    ev.clear()
                if error is not None:
                    break
    finally:
        env.clear()
        if forward_ad:
            try:
                fw.autograd.forward_ad.exit_dual_level()
            except Exception:  # noqa: BLE001 - no level was open
                pass
        if was_enabled:
            gc.enable()
        gc.collect()
    return {"trace": trace, "error": error}


def _plain(value):
    """Records as JSON would give them back (tuples -> lists, numpy scalars -> floats)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return repr(value)


def probe_features(adapter) -> dict:
    """One-line tries of the families of steps whose absence a framework may not declare:
    ``{"available": [...], "failed": {feature: message}}`` over the features below that the
    adapter does not declare missing in ``adapter.unsupported`` (registry names; the three
    language features, ``autograd_grad``, ``weakref`` and ``inplace``, cannot be declared).
    What the adapter declares is never tried: declared missing is missing. (Each step variant
    is tried too, by a program of its own: ``gate.probe_programs``.)"""
    fw = adapter.fw
    declared = set(getattr(adapter, "unsupported", {}) or {})
    t = fw.tensor([1.0, 2.0], requires_grad=True)
    y = t * 2
    checks = {
        "tensor_hooks": lambda: t.register_hook(lambda g: None).remove(),
        "post_accumulate_grad_hooks":
            lambda: t.register_post_accumulate_grad_hook(lambda p: None).remove(),
        "graph_nodes": lambda: adapter.grad_fn(y).__class__,
        "node_hooks": lambda: (adapter.register_node_hook(adapter.grad_fn(y), lambda gi, go: None).remove(),
                               adapter.register_node_prehook(adapter.grad_fn(y), lambda go: None).remove()),
        "retain_grad": lambda: adapter.retain_grad(t * 1),
        "custom_function": lambda: fw.autograd.Function,
        "autograd_grad": lambda: fw.autograd.grad,
        "forward_ad": lambda: (fw.autograd.forward_ad.make_dual, fw.autograd.forward_ad.enter_dual_level),
        "weakref": lambda: weakref.ref(t),
        "grad_modes": lambda: fw.no_grad,
        "is_leaf": lambda: adapter.is_leaf(t),
        "inplace": lambda: adapter.inplace,
    }
    available, failed = [], {}
    for name, check in checks.items():
        if name in declared:
            continue
        try:
            check()
        except Exception as exc:  # noqa: BLE001 - the feature is missing
            failed[name] = f"{type(exc).__name__}: {str(exc)[:160]}"
            continue
        available.append(name)
    return {"available": sorted(available), "failed": failed}
