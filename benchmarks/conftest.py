"""Benchmark session setup: torch on one thread, and the ratio summary at the end.

The chain itself, and how it is measured, is in bench_chain.py.
"""
from __future__ import annotations

import math

import pytest

from bench_chain import N_OPS, TARGETS, _results


@pytest.fixture(scope="session", autouse=True)
def _single_threaded_torch():
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)


# -- the summary ------------------------------------------------------------------------
def _ratio(a, b):
    return a / b if a is not None and b else math.nan


def pytest_terminal_summary(terminalreporter):
    from test_bench_report_size import summary

    report_lines = summary()
    if report_lines:
        terminalreporter.section("report of a large results file (CPU, peak memory, page)")
        for line in report_lines:
            terminalreporter.write_line(line)
    if not _results:
        return
    tr = terminalreporter
    tr.section("1000-op chain: reference vs numpy floor vs torch (1 thread)")
    tr.write_line(f"{'engine':<10} {'size':>5} {'median s':>10} {'min s':>10} {'us/op (median)':>15} "
                  f"{'peak MB':>9} {'rounds':>6}")
    for (engine, size), entry in sorted(_results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        peak = entry.get("peak")
        tr.write_line(
            f"{engine:<10} {size:>5} {entry['median']:>10.4f} {entry['min']:>10.4f} "
            f"{entry['median'] / N_OPS * 1e6:>15.2f} {'' if peak is None else f'{peak / 2**20:>9.1f}':>9} "
            f"{entry['rounds']:>6}")

    def get(engine, size, key):
        return _results.get((engine, size), {}).get(key)

    def both(a, b, size):
        return tuple(_ratio(get(a, size, key), get(b, size, key)) for key in ("min", "median"))

    ratios = {
        "reference/torch per op at 10 elements": both("reference", "torch", "10"),
        "reference/numpy per op at 10 elements": both("reference", "numpy", "10"),
        "reference/numpy time at 1e6": both("reference", "numpy", "1e6"),
        "torch/numpy time at 1e6": both("torch", "numpy", "1e6"),
    }
    peak = _ratio(get("reference", "1e6", "peak"), get("numpy", "1e6", "peak"))
    tr.write_line("")
    tr.write_line(f"{'ratio':<40} {'of min':>7} {'of median':>9}   (targets are judged on the ratio of minima:")
    tr.write_line(f"{'':<40} {'':>7} {'':>9}    noise from other processes only adds time)")
    for name, (by_min, by_median) in ratios.items():
        tr.write_line(f"{name:<40} {by_min:>7.3f} {by_median:>9.3f}{_verdict(name, by_min)}")
    name = "reference/numpy peak memory at 1e6"
    tr.write_line(f"{name:<40} {peak:>7.3f} {'':>9}{_verdict(name, peak)}")


def _verdict(name, value):
    target = TARGETS.get(name)
    if target is None:
        return ""
    if math.isnan(value):
        return "  (not measured)"
    return f"  target <= {target}: {'met' if value <= target else 'MISSED'}"
