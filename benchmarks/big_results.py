"""A large ``--results`` file for the report's benchmark: a long run of today's suites.

``python benchmarks/big_results.py OUT.jsonl --mb 200`` writes a results file of about that
size: the header of a run of this checkout's suites (its git revision and suite digest, so
the page's reproduction scripts are derived as for a real run), then the catalogue's tests
again and again, each round's node ids parametrized ``[round-N]`` (a long run: a suite
parametrized over many inputs, or many repetitions), with the outcomes of a framework that
breaks some rules: mostly PASS, some DIVERGES with a message, XFAIL with its expectation,
LEAK with a keep-alive chain, UNSUPPORTED and BLOCKED; then the end line. Deterministic: the
same size gives the same bytes (but for the header's revision).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from conformance import traceability  # noqa: E402
from conformance.repro import source  # noqa: E402
from conformance.results import RunEnd, RunHeader, TestRecord, git_revision  # noqa: E402
from conformance.rules import load_catalogue  # noqa: E402

CHAIN = {"kind": "cycle", "types": ["Tensor", "OrderedDict", "function hook.<locals>.<lambda>",
                                    "tuple", "cell", "Tensor"],
         "edges": [[0, 1, "._backward_hooks"], [1, 2, "[11]"], [2, 3, "__closure__"],
                   [3, 4, "[0]"], [4, 5, "cell_contents"]], "note": ""}


def _outcome(i: int) -> dict:
    """The i-th test's verdict: a fixed mix, so that every size has the same proportions."""
    kind = i % 50
    if kind < 40:
        return {"outcome": "PASS", "actual": "PASS", "message": ""}
    if kind < 44:
        return {"outcome": "DIVERGES", "actual": "DIVERGES",
                "message": f"expected the hook to run once per backward, it ran {i % 7} times "
                           f"(grad_fn AddBackward0 at step {i % 13}); observed order "
                           f"{list(range(i % 5))}"}
    if kind < 46:
        return {"outcome": "XFAIL", "actual": "DIVERGES", "message": "saved tensor freed late",
                "expectation": {"outcome": "DIVERGES", "flaky": [],
                                "reason": "the framework keeps saved tensors until the graph "
                                          "is collected", "root_cause": "saved-kept-alive",
                                "category": "lifetime", "upstream": "", "versions": [],
                                "tests": [], "file": "adapters/expectations/torch.toml"}}
    if kind < 47:
        return {"outcome": "LEAK", "actual": "LEAK", "message": "1 Tensor left alive per run",
                "chain": CHAIN}
    if kind < 49:
        return {"outcome": "UNSUPPORTED", "actual": "UNSUPPORTED",
                "message": "Unsupported: no forward-mode AD (fw.autograd.forward_ad)"}
    return {"outcome": "BLOCKED", "actual": "BLOCKED", "blocked_by": "hooks.handle",
            "message": "blocked by hooks.handle: remove() did not take effect"}


def write(path: Path, megabytes: float) -> int:
    """Write the file (about ``megabytes`` MB); returns its number of test lines."""
    catalogue = load_catalogue(ROOT / "conformance" / "catalogue")
    names = traceability.test_names_by_rule(ROOT / "conformance" / "suites")
    tests = [(rule, sorted(names.get(rule.id) or {f"test_{rule.id.split('.')[-1]}"}))
             for rule in catalogue.rules.values()]
    context = {"adapter": "torch", "framework_version": "2.13.0", "device": "cpu",
               "python": "3.11.7"}
    header = RunHeader(schema=1, **git_revision(ROOT), suite_digest=source.digest(ROOT),
                       started="2026-12-01T00:00:00+00:00", adapter_spec="torch",
                       conformance_timeout=300, python_executable=sys.executable,
                       platform="Linux", rules=len(catalogue.rules), argv=["--adapter=torch"],
                       **context)
    limit, written, i = megabytes * 1e6, 0, 0
    with open(path, "w", encoding="utf-8") as out:
        def line(record) -> None:
            nonlocal written
            text = json.dumps(record.to_json()) + "\n"
            out.write(text)
            written += len(text)

        line(header)
        rounds = 0
        while written < limit:
            for rule, functions in tests:
                for function in functions:
                    line(TestRecord(**context, nodeid=f"conformance/suites/test_{rule.suite}.py::"
                                                       f"{function}[round-{rounds}]",
                                    rule=rule.id, suite=rule.suite, level=rule.level,
                                    observed=None, duration=round(0.001 * (i % 97), 6),
                                    **_outcome(i)))
                    i += 1
            rounds += 1
        line(RunEnd(exitstatus=1, finished="2026-12-01T01:00:00+00:00", counts={}, not_run=[]))
    return i


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=float, default=200.0, help="size in MB (default 200)")
    args = parser.parse_args(argv)
    n = write(args.out, args.mb)
    print(f"{args.out}: {args.out.stat().st_size / 1e6:.1f} MB, {n} test lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
