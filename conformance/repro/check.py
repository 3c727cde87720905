"""Do the reproduction scripts of a run reproduce the outcomes its cells show?

``python -m conformance.repro.check RESULTS.jsonl [...] [--sample N] [--rules ID,...]
[--python PYTHON] [--include-timeouts] [--out DIR]``

For each results file: the cells (rule -> the worst framework outcome of its tests, as the
report's cell) of a sample of rules, one of each outcome the run has first, then others up to
``--sample`` (chosen by a hash of the file's label, so the same sample each time; cells whose
expectation says the framework is flaky there are left out of a sample); their
scripts, generated from the run itself (its recorded suite revision, adapter spec, framework
version and device: :mod:`conformance.repro.derive`), run in ``--python`` (default: the
interpreter the run recorded, when it still exists, else this one) and must end with the
cell's outcome. A cell that CRASHed in the suite run but not in its script (a crash that needs
what ran before it in that process) is reported, not failed. TIMEOUT cells cost the run's whole
timeout each and are left out unless ``--include-timeouts``.

Exit status: 0 all reproduced, 1 a script gave another outcome (or none could be made),
4 bad input (one line, as the harness's usage errors).
"""
from __future__ import annotations

import hashlib
import os
import re
import sys
import tempfile
from pathlib import Path

from conformance import cli, outcomes
from conformance.model import suite_source as source
from conformance.repro import derive
from conformance.repro.run import RunnerFailed, run_all
from conformance.results import ResultsSchemaError, RunHeader, cells as _cells, read_run
from conformance.results.cells import Cell

HISTORY = "history"  # a crash in the suite run that its script alone does not show


def cells(tests) -> dict[str, Cell]:
    """rule -> its cell (conformance.results.cells, as the report's) for the test records of
    one run."""
    return _cells.of_run(tests)


def sample(table: dict[str, Cell], size: int, seed: str, include_timeouts: bool = False) -> list[str]:
    """Rules to check: one per outcome present (in severity order), then others by a hash of
    ``seed``, up to ``size`` (at least one per outcome)."""
    def key(rule: str) -> str:
        return hashlib.sha256(f"{seed}:{rule}".encode()).hexdigest()

    rules = sorted((r for r, c in table.items() if not c.flaky
                    and (include_timeouts or c.actual != outcomes.Outcome.TIMEOUT.value)),
                   key=key)
    chosen: list[str] = []
    for outcome in outcomes.ACTUAL_SEVERITY:
        first = next((r for r in rules if table[r].actual == outcome.value), None)
        if first is not None:
            chosen.append(first)
    for rule in rules:
        if len(chosen) >= size:
            break
        if rule not in chosen:
            chosen.append(rule)
    return chosen


#: What a run's recorded interpreter is called (the run wrote its own ``sys.executable``).
_PYTHON_NAME = re.compile(r"(python|pypy)[0-9.]*(\.exe)?", re.IGNORECASE)


def _interpreter(header: RunHeader, given: str | None) -> str:
    """``--python``, else the run's interpreter where it exists here and is named as a
    Python (the header is data: a results file naming ``/tmp/x.sh`` must not run it), else
    this one."""
    if given:
        return given
    recorded = header.python_executable
    if recorded and _PYTHON_NAME.fullmatch(os.path.basename(recorded)) \
            and os.path.isfile(recorded):
        return recorded
    return sys.executable


def check_file(path: Path, size: int = 8, rules: list[str] | None = None,
               python: str | None = None, include_timeouts: bool = False,
               out_dir: Path | None = None, catalogue=None) -> list[dict]:
    """One row per sampled cell: rule, recorded, got, status (ok / MISMATCH / history)."""
    run = read_run(path)
    if run.end is not None and run.end.error is not None:
        return []
    table = cells(run.tests)
    label = Path(path).stem
    chosen = rules or sample(table, size, label, include_timeouts)
    unknown = [r for r in chosen if r not in table]
    if unknown:
        raise ValueError(f"{path}: no result for rule(s) {', '.join(unknown)}")
    info = derive.RunInfo.of(run.header, label)
    tree = info.tree()  # ReproError: the recorded suite revision is not available here
    if catalogue is None:
        from conformance.model.catalogue import load_catalogue

        catalogue = load_catalogue(source.ROOT / "conformance" / "catalogue")
    work = Path(out_dir or tempfile.mkdtemp(prefix=f"repro-{label}-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for rule_id in chosen:
        rule = catalogue.rules.get(rule_id) or _Stub(rule_id, table[rule_id].level)
        script = derive.generate(rule, info, tree, table[rule_id].names)
        (work / f"{rule_id}.py").write_text(script, encoding="utf-8")
    interpreter = _interpreter(run.header, python)
    got = run_all(work, work / "results.jsonl", python=interpreter)
    differing = [r for r in chosen if got[f"{r}.py"]["outcome"] != table[r].actual]
    if differing:  # each in a fresh process: a crash can depend on what ran before it
        alone = work / "alone"
        alone.mkdir(exist_ok=True)
        for r in differing:
            (alone / f"{r}.py").write_text((work / f"{r}.py").read_text())
        got.update(run_all(alone, alone / "results.jsonl", python=interpreter, standalone=True))
    for rule_id in chosen:
        recorded, result = table[rule_id].actual, got[f"{rule_id}.py"]
        status = "ok" if result["outcome"] == recorded else (
            HISTORY if recorded == outcomes.Outcome.CRASH.value else "MISMATCH")
        said = next((t.message for t in table[rule_id].tests if t.actual == recorded and t.message), "")
        rows.append({"rule": rule_id, "recorded": recorded, "got": result["outcome"],
                     "status": status, "message": result["message"], "recorded_message": said,
                     "script": str(work / f"{rule_id}.py"), "python": interpreter,
                     "tree": tree.describe()})
    return rows


class _Stub:
    def __init__(self, rule_id: str, level: str | None) -> None:
        self.id, self.level = rule_id, level or "MUST"
        self.statement = "(a rule of the run's suites that this catalogue does not have)"


def main(argv=None) -> int:
    parser = cli.Parser("python -m conformance.repro.check", __doc__)
    parser.add_argument("results", nargs="+", type=cli.existing_file, help="--results files of runs")
    parser.add_argument("--sample", type=cli.positive_int, default=8, help="cells per file (default 8)")
    parser.add_argument("--rules", default="", help="comma-separated rule ids instead of a sample")
    parser.add_argument("--python", type=cli.executable, help="interpreter to run the scripts (default: the run's)")
    parser.add_argument("--include-timeouts", action="store_true")
    parser.add_argument("--out", type=cli.output_dir, help="keep the scripts here (one folder per file)")
    args = parser.parse_args(argv)
    failed = 0
    for path in args.results:
        try:
            rows = check_file(path, args.sample, [r for r in args.rules.split(",") if r] or None,
                              args.python, args.include_timeouts,
                              args.out / path.stem if args.out else None)
        except (OSError, ResultsSchemaError, ValueError, RunnerFailed) as exc:
            return parser.fail(str(exc))
        except derive.ReproError as exc:
            print(f"FAILED {path.name}: no scripts: {exc}")
            failed += 1
            continue
        if not rows:
            print(f"skip {path.name}: the run stopped before any test")
            continue
        bad = [r for r in rows if r["status"] == "MISMATCH"]
        failed += bool(bad)
        print(f"{'FAILED' if bad else 'ok'} {path.name}: {len(rows) - len(bad)}/{len(rows)} "
              f"cells reproduced ({rows[0]['tree']}; {rows[0]['python']})")
        for r in rows:
            mark = {"ok": "  ok      ", "MISMATCH": "  MISMATCH", HISTORY: "  history "}[r["status"]]
            extra = "" if r["status"] == "ok" else (
                f": script gave {r['got']} ({r['message'][:160]}); the run said: "
                f"{r['recorded_message'][:300] or '(no message)'}")
            print(f"{mark} {r['rule']}: {r['recorded']}{extra}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
