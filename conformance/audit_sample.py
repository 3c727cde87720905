"""A seeded random sample of a run's cells for judging by hand (issue 33: "of 12 UNSUPPORTED
and 12 BLOCKED cells per column, at most 1 hides a judgeable divergence").

Why a tool: a hand audit is only worth its number when the cells were not picked by the person
judging them. The sample is a function of the results file and the seed alone, so anyone can
draw the same cells again and check each judgement (docs/hand-judged-sample.md).

    python -m conformance.audit_sample reports/results/tinygrad.jsonl --seed 3302
    python -m conformance.audit_sample RESULTS --seed N --outcome UNSUPPORTED --count 12 --json
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from conformance import cli

#: the outcomes an audit samples by default: the cells that judge nothing
DEFAULT_OUTCOMES = ("UNSUPPORTED", "BLOCKED")


def sample(tests, outcome: str, count: int, seed: int) -> list:
    """``count`` of ``tests`` whose verdict before expectations is ``outcome``, drawn with
    ``seed`` from them sorted by node id (the same seed gives the same cells whatever order
    the run wrote them in, ``-n 2`` included), listed by node id."""
    pool = sorted((t for t in tests if (t.actual or t.outcome) == outcome), key=lambda t: t.nodeid)
    chosen = random.Random(f"{seed}:{outcome}").sample(pool, min(count, len(pool)))
    return sorted(chosen, key=lambda t: t.nodeid)


def _cell(test) -> dict:
    """A sampled cell as one JSON object (``--json``)."""
    return {"nodeid": test.nodeid, "rule": test.rule, "outcome": test.actual or test.outcome,
            "missing_feature": test.missing_feature, "blocked_by": test.blocked_by,
            "message": _first_line(test.message)}


def _first_line(message: str | None) -> str:
    return message.splitlines()[0][:300] if message else ""


def main(argv=None) -> int:
    parser = cli.Parser("python -m conformance.audit_sample", __doc__)
    parser.add_argument("results", help="a results file (--results of a run)")
    parser.add_argument("--seed", type=int, required=True,
                        help="the seed of the draw (say it beside the judgements)")
    parser.add_argument("--outcome", action="append", choices=("UNSUPPORTED", "BLOCKED", "PASS",
                                                              "DIVERGES", "OBSERVED", "ERROR"),
                        help="an outcome to sample (repeatable; default UNSUPPORTED and BLOCKED)")
    parser.add_argument("--count", type=cli.positive_int, default=12,
                        help="cells per outcome (default 12)")
    parser.add_argument("--json", action="store_true", help="one JSON object per cell")
    args = parser.parse_args(argv)
    from conformance.results import ResultsSchemaError, read_run

    path = Path(args.results)
    if not path.is_file():
        return parser.fail(f"{path}: no such file; give the results file of a run (--results=...)")
    try:
        run = read_run(path)
    except (ResultsSchemaError, OSError, UnicodeDecodeError) as exc:
        return parser.fail(str(exc).splitlines()[0])
    header = run.header
    print(f"# {header.adapter} {header.framework_version} ({path}), seed {args.seed}")
    for outcome in args.outcome or DEFAULT_OUTCOMES:
        cells = sample(run.tests, outcome, args.count, args.seed)
        pool = sum(1 for t in run.tests if (t.actual or t.outcome) == outcome)
        print(f"## {outcome}: {len(cells)} of {pool}")
        for test in cells:
            if args.json:
                print(json.dumps(_cell(test)))
                continue
            why = test.missing_feature or test.blocked_by or ""
            print(f"- {test.nodeid}  [{test.rule}]  {why}: {_first_line(test.message)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
