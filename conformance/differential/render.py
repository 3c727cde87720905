"""A divergence as a standalone script for the diverging framework, through its adapter.

The script starts with the adapter's preamble (``Adapter.preamble()``: what makes the
framework importable, as user code would write it), loads the adapter by the spec the search
used (a built-in name, an entry point or ``package.module:Class``) and binds ``fw =
adapter.fw``; the program's lines follow, written against the documented surface only
(docs/fw-surface.md), so the same script runs for torch, tinygrad or a third-party adapter.

Contract: the script runs the program up to the step where the runs part and then checks
what the reference observed there. Run with the reference adapter it exits cleanly; run with
the diverging framework's it fails: an ``AssertionError`` that shows what the framework
observed, or the framework's own exception where it raised and the reference did not.
"""
from __future__ import annotations

from conformance.differential.compare import TOLERANCES, Divergence, same_record
from conformance.differential.program import NUMERIC_KINDS, Program


def prologue(adapter, imports: list[str]) -> list[str]:
    """The lines before the program: the adapter's preamble, the standard-library imports the
    steps use, and the adapter loaded by its spec with ``fw`` bound to its namespace."""
    lines = [line for line in adapter.preamble().splitlines()
             if line.strip() and line.strip() != "import"]   # a preamble of a nameless module
    if imports:
        lines.append("import " + ", ".join(imports))
    lines.append("from adapters.base import load_adapter")
    lines.append(f"adapter = load_adapter({adapter.spec!r}); fw = adapter.fw")
    return lines


def _shape(value):
    dims = []
    while isinstance(value, list):
        dims.append(len(value))
        value = value[0] if value else None
    return tuple(dims)


def _check_record(index: int, expected: list, dtype: str) -> str:
    """One line asserting that ev[index] is ``expected`` (numeric payloads within tolerance)."""
    if expected[0] in NUMERIC_KINDS and expected[-1] is not None:
        rtol, atol = TOLERANCES[dtype]
        payload = expected[-1]
        return (f"assert len(ev) > {index} and ev[{index}][:-1] == {expected[:-1]!r} and "
                f"numpy.shape(ev[{index}][-1]) == {_shape(payload)!r} and numpy.allclose("
                f"ev[{index}][-1], {payload!r}, rtol={rtol}, atol={atol}, equal_nan=True), ev[{index}:]")
    return f"assert ev[{index}:{index + 1}] == [{expected!r}], ev[{index}:]"


def _first_difference(divergence: Divergence, dtype: str):
    """The reference's record the script checks (None: none, or an error divergence)."""
    for e, a in zip(divergence.expected, divergence.actual + [None] * len(divergence.expected)):
        if a is None or not same_record(e, a, dtype):
            return e
    return None


def render_script(program: Program, divergence: Divergence, reference_run: dict, adapter,
                  header: list[str] | None = None) -> str:
    """The standalone script reproducing ``divergence`` through ``adapter`` (an Adapter
    whose ``spec`` says how the search loaded it)."""
    module = adapter.name
    stop = divergence.step
    steps = program.steps[:stop + 1]
    lines = [f"# {' '.join(line.split())}" for line in (header or [])]
    imports = sorted({name for step in steps for name in step.imports})
    first = _first_difference(divergence, program.dtype)
    if first is not None and first[0] in NUMERIC_KINDS and first[-1] is not None:
        imports.append("numpy")
    lines.extend(prologue(adapter, imports))
    if "weakref" in imports:
        lines.append("gc.disable()" if "gc" in imports else "import gc; gc.disable()")
    lines.append("ev, keep = [], []")
    for step in steps[:-1]:
        lines.extend(step.render())
    last = steps[-1].render()
    # records of the reference before the diverging step
    before = sum(1 for step, _ in reference_run["trace"] if step < stop)
    if divergence.kind == "error" and divergence.expected_error is not None:
        err = divergence.expected_error
        lines.append("try:")
        lines.extend("    " + line for line in last)
        lines.append(f"except Exception as e:  # the reference: {err['type']}: {err['message'][:70]!r}")
        lines.append(f"    assert {err['marker']!r} in str(e) or type(e).__name__ == {err['type']!r}, e")
        lines.append("else:")
        lines.append(f"    raise AssertionError('the reference raises {err['type']} ({err['category']}) here')")
        return "\n".join(lines) + "\n"
    ref_error = reference_run.get("error")
    if ref_error is not None and ref_error["step"] == stop:  # both raised here, records differ
        lines.append("try:")
        lines.extend("    " + line for line in last)
        lines.append(f"except Exception:  # both raise {ref_error['type']} here")
        lines.append("    pass")
    else:
        lines.extend(last)
    if divergence.kind == "error":  # the framework raised, the reference did not
        actual = divergence.actual_error or {}
        lines[-1] += f"  # {module} raises {actual.get('type')} ({actual.get('category')}) here"
    expected = divergence.expected
    actual = divergence.actual
    for offset in range(max(len(expected), len(actual))):
        e = expected[offset] if offset < len(expected) else None
        a = actual[offset] if offset < len(actual) else None
        if e is not None and a is not None and same_record(e, a, program.dtype):
            continue
        if e is None:
            lines.append(f"assert len(ev) == {before + offset}, ev[{before + offset}:]")
        else:
            lines.append(_check_record(before + offset, e, program.dtype))
        break
    return "\n".join(lines) + "\n"
