"""Compares the reference's run of a program with a framework's and names the first divergence.

Both runs are ``{"trace": [[step, record], ...], "error": None | {...}}`` (see
``interpreter``). Walking the steps in order, the first step where the two differ decides:
its records (structure exactly, numeric payloads with the program dtype's tolerances) or
its error (error vs no error, then the category). A divergence carries a ``suite`` (the
rule category: the catalogue suite the observation belongs to) and a ``signature`` that
groups divergences with the same cause for deduplication: ``<suite>|<step kind>|<detail>``,
where an error divergence names the step's ``family`` (``Backward/Grad`` for both ways of
running backward: a missing check is one cause whichever of the two meets it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from conformance.differential.program import NUMERIC_KINDS

# (rtol, atol) per dtype: float32 results of a few chained ops, float64 near round-off.
TOLERANCES = {"float32": (1e-4, 1e-5), "float64": (1e-7, 1e-9)}

RECORD_SUITES = {
    "hook": "hooks", "post": "hooks", "node": "hooks", "prehook": "hooks",
    "grad": "engine", "agrad": "engine", "meta": "engine", "ctx": "engine",
    "is": "identity", "kept": "identity", "alive": "gc_cycles", "tangent": "forward_levels",
    "value": "views",
}


@dataclass
class Divergence:
    step: int                      # index of the step where the runs part
    kind: str                      # "record" | "error"
    suite: str                     # rule category (catalogue suite)
    signature: str                 # groups divergences of one cause
    summary: str                   # one line for people
    expected: list = field(default_factory=list)   # reference's records of that step
    actual: list = field(default_factory=list)     # framework's records of that step
    expected_error: dict | None = None
    actual_error: dict | None = None

    def to_json(self) -> dict:
        return dict(self.__dict__)


def _close(a, b, rtol, atol) -> bool:
    if isinstance(a, list) or isinstance(b, list):
        if not (isinstance(a, list) and isinstance(b, list)) or len(a) != len(b):
            return False
        return all(_close(x, y, rtol, atol) for x, y in zip(a, b))
    if a is None or b is None:
        return a is b
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return abs(a - b) <= atol + rtol * abs(b)
    return a == b


def same_record(expected, actual, dtype: str) -> bool:
    rtol, atol = TOLERANCES.get(dtype, TOLERANCES["float32"])
    if not (isinstance(expected, list) and isinstance(actual, list)) or len(expected) != len(actual):
        return False
    if expected[:1] != actual[:1]:
        return False
    if expected[0] in NUMERIC_KINDS:
        return expected[:-1] == actual[:-1] and _close(expected[-1], actual[-1], rtol, atol)
    return expected == actual


def _grad_appeared(e: list, a: list) -> bool:
    """The framework has a ``.grad`` where the reference has None, seen by reading it
    (``grad``, ``kept`` values) or by its identity with an earlier None (``kept``): one cause,
    one signature (``engine|ObserveGrad|grad:none``), whichever observation met it."""
    if e[0] != a[0] or e[0] not in ("grad", "kept") or e[-1] is not None:
        return False
    if a[-1] is not None:
        return True
    return e[0] == "kept" and e[2] is True and a[2] is False


def _by_step(trace) -> dict[int, list]:
    out: dict[int, list] = {}
    for step, record in trace:
        out.setdefault(step, []).append(record)
    return out


def _record_difference(expected: list, actual: list, dtype: str) -> tuple[str, str, str]:
    """(suite, signature detail, summary) of the first differing record of one step."""
    for i in range(max(len(expected), len(actual))):
        e = expected[i] if i < len(expected) else None
        a = actual[i] if i < len(actual) else None
        if e is not None and a is not None and same_record(e, a, dtype):
            continue
        kind = (e or a)[0]
        suite = RECORD_SUITES.get(kind, "engine")
        if e is None:
            return suite, f"extra:{kind}", f"the framework recorded {a} where the reference recorded nothing"
        if a is None:
            return suite, f"missing:{kind}", f"the framework did not record {e}"
        if e[0] != a[0]:
            return suite, f"order:{e[0]}/{a[0]}", f"expected {e}, the framework recorded {a}"
        if _grad_appeared(e, a):
            return "engine", "grad:none", f"expected {e}, got {a} (a .grad where the reference has none)"
        if kind == "kept" and e[2] != a[2]:
            return "identity", "kept:is", f"expected {e}, got {a}"
        if kind in NUMERIC_KINDS:
            ev, av = e[-1], a[-1]
            detail = "none" if (ev is None) != (av is None) else "values"
            if kind == "value":  # a view and a detach() alias not following are two causes
                detail = e[2]
            return suite, f"{kind}:{detail}", f"expected {e}, got {a}"
        if kind in ("hook", "post", "node", "prehook") and e[1] != a[1]:
            return suite, f"order:{kind}", f"expected {e}, got {a}"
        return suite, f"{kind}:value", f"expected {e}, got {a}"
    raise AssertionError("records do not differ")


def _family(step, detail: str) -> str:
    """The step named in a record divergence's signature (see ``_grad_appeared``)."""
    return "ObserveGrad" if detail == "grad:none" and step.kind in ("ObserveGrad", "ObserveKept") else step.kind


def compare(program, expected: dict, actual: dict) -> Divergence | None:
    """The first divergence between the reference's run and the framework's, or None."""
    dtype = program.dtype
    exp_steps, act_steps = _by_step(expected["trace"]), _by_step(actual["trace"])
    exp_err, act_err = expected["error"], actual["error"]
    last = len(program.steps)
    for index in range(last):
        e_recs, a_recs = exp_steps.get(index, []), act_steps.get(index, [])
        e_err = exp_err if exp_err and exp_err["step"] == index else None
        a_err = act_err if act_err and act_err["step"] == index else None
        step = program.steps[index]
        records_differ = len(e_recs) != len(a_recs) or not all(
            same_record(e, a, dtype) for e, a in zip(e_recs, a_recs))
        if records_differ and not (e_err or a_err):
            suite, detail, summary = _record_difference(e_recs, a_recs, dtype)
            return Divergence(index, "record", suite, f"{suite}|{_family(step, detail)}|{detail}", summary,
                              e_recs, a_recs)
        if e_err or a_err:
            e_cat = e_err["category"] if e_err else "none"
            a_cat = a_err["category"] if a_err else "none"
            if e_cat == a_cat:
                if records_differ:  # both failed here, after recording different things
                    suite, detail, summary = _record_difference(e_recs, a_recs, dtype)
                    return Divergence(index, "record", suite, f"{suite}|{_family(step, detail)}|{detail}",
                                      summary, e_recs, a_recs)
                return None  # both stopped here with the same kind of error
            suite = step.suite
            if a_cat in ("crash", "timeout"):
                suite = step.suite
            if e_err is None:
                summary = f"{step.kind}: the framework raised {a_err['type']} ({a_cat}): {a_err['message'][:160]}; the reference did not"
            elif a_err is None:
                summary = f"{step.kind}: the reference raised {e_err['type']} ({e_cat}): {e_err['message'][:160]}; the framework did not"
            else:
                summary = (f"{step.kind}: the reference raised {e_cat} ({e_err['message'][:100]}), "
                           f"the framework {a_cat} ({a_err['message'][:100]})")
            return Divergence(index, "error", suite, f"{suite}|{step.family}|error:{e_cat}/{a_cat}",
                              summary, e_recs, a_recs, e_err, a_err)
    return None
