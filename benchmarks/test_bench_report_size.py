"""The report (``python -m conformance.report``) of a large results file: CPU time, peak
memory and page size at several sizes, and whether the cost grows linearly with the input.

Run with ``python -m pytest benchmarks/test_bench_report_size.py --benchmark-only``; sizes
5, 20 and 50 MB by default, ``AUTOGRAD_CONFORMANCE_REPORT_MB=5,20,50,200`` for others (the
200 MB of issue 35: about a minute of CPU and 2 GB of memory per round). The input is
``benchmarks/big_results.py``'s long run of today's suites. Each round is the whole tool in
a child process, measured by the kernel (its user + system CPU seconds and its peak resident
memory): wall time on a shared machine measures the other jobs too.

Targets (the terminal summary says met or MISSED; numbers in docs/performance.md):
* the marginal CPU cost per MB (between two sizes) of the largest pair within
  :data:`LINEAR` times that of the smallest pair: linear, not quadratic;
* CPU seconds per MB at the largest size at most :data:`CPU_PER_MB`;
* peak memory at most :data:`MEMORY_PER_MB` times the input, plus a fixed 300 MB.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from big_results import write

ROOT = Path(__file__).resolve().parents[1]
SIZES_MB = [float(x) for x in os.environ.get("AUTOGRAD_CONFORMANCE_REPORT_MB", "5,20,50").split(",")]
LINEAR = 1.5          # largest pair's marginal cost per MB / smallest pair's
CPU_PER_MB = 0.35     # CPU seconds per MB of results at the largest size
MEMORY_PER_MB = 9.0   # peak resident MB per MB of results (plus a fixed 300 MB)

#: size -> {"cpu": [seconds per round], "peak": [bytes], "page": bytes}
MEASURED: dict[float, dict] = {}


def _report(results_dir: Path, out: Path) -> tuple[float, int]:
    """The report tool run once in a child: (its CPU seconds, its peak resident bytes)."""
    proc = subprocess.Popen([sys.executable, "-m", "conformance.report", "--results-dir",
                             str(results_dir), "--out", str(out)], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.returncode == 0, err
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024  # Linux: kilobytes


@pytest.fixture(scope="module", params=SIZES_MB, ids=lambda mb: f"{mb:g}MB")
def results_dir(request, tmp_path_factory):
    directory = tmp_path_factory.mktemp(f"report-{request.param:g}mb")
    write(directory / "torch.jsonl", request.param)
    return request.param, directory


def test_bench_report_of_a_large_results_file(benchmark, results_dir, tmp_path):
    mb, directory = results_dir
    entry = MEASURED.setdefault(mb, {"cpu": [], "peak": []})

    def once():
        cpu, peak = _report(directory, tmp_path / "out")
        entry["cpu"].append(cpu)
        entry["peak"].append(peak)

    benchmark.group = "report-size"
    benchmark.pedantic(once, rounds=2, iterations=1, warmup_rounds=0)
    entry["page"] = (tmp_path / "out" / "index.html").stat().st_size
    benchmark.extra_info.update(input_mb=mb, cpu_seconds=min(entry["cpu"]),
                                peak_mb=max(entry["peak"]) / 2**20,
                                page_mb=entry["page"] / 1e6)


def summary() -> list[str]:
    """The lines conftest.py prints at the end of the session (empty when nothing ran)."""
    if not MEASURED:
        return []
    lines = [f"{'input MB':>9} {'CPU s (min)':>12} {'CPU s/MB':>9} {'peak MB':>8} {'page MB':>8}"]
    sizes = sorted(MEASURED)
    cpu = {mb: min(MEASURED[mb]["cpu"]) for mb in sizes}
    for mb in sizes:
        peak = max(MEASURED[mb]["peak"]) / 2**20
        lines.append(f"{mb:>9g} {cpu[mb]:>12.2f} {cpu[mb] / mb:>9.3f} {peak:>8.0f} "
                     f"{MEASURED[mb].get('page', 0) / 1e6:>8.2f}")
    largest = sizes[-1]
    per_mb = cpu[largest] / largest
    lines.append(f"CPU s per MB at {largest:g} MB: {per_mb:.3f}  target <= {CPU_PER_MB}: "
                 f"{'met' if per_mb <= CPU_PER_MB else 'MISSED'}")
    peak = max(MEASURED[largest]["peak"]) / 2**20
    bound = 300 + MEMORY_PER_MB * largest
    lines.append(f"peak memory at {largest:g} MB: {peak:.0f} MB  target <= {bound:.0f}: "
                 f"{'met' if peak <= bound else 'MISSED'}")
    if len(sizes) >= 3:
        first = (cpu[sizes[1]] - cpu[sizes[0]]) / (sizes[1] - sizes[0])
        last = (cpu[sizes[-1]] - cpu[sizes[-2]]) / (sizes[-1] - sizes[-2])
        ratio = last / first if first > 0 else float("nan")
        lines.append(f"marginal CPU s/MB: {first:.3f} ({sizes[0]:g}-{sizes[1]:g} MB), {last:.3f} "
                     f"({sizes[-2]:g}-{sizes[-1]:g} MB), ratio {ratio:.2f}  target <= {LINEAR}: "
                     f"{'met' if ratio <= LINEAR else 'MISSED'}")
    return lines


