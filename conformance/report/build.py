"""Gather the runs in reports/results/ and write results.json, junit/ and index.html.

``reports/`` is the checkout's when the package runs from one, else the current directory's
(:func:`conformance.outputs.reports_dir`): an installed package never writes into itself.

``python -m conformance.report [--results-dir DIR] [--out DIR] [--column LABEL=FRAMEWORK[:VERSION]]
[--exclude LABEL] [--builtin-columns]``

Columns: the runs it is given: every results file ``<label>.jsonl`` in the results directory
(the built-in adapters' runs first, in their declared order, then the others; framework and
version from the header; an interrupted one shows as interrupted), minus ``--exclude``;
``--column`` adds a column or relabels one. A third party's report shows its own runs only.
``--builtin-columns`` (``nox -s report``) makes every run the built-in adapters declare
(adapters/*.py ``runs``) a column: one whose results file is absent gets a placeholder,
``not-installed`` when ``<label>.status.json`` says the framework could not be installed, else
``missing``, so that no framework of the project's report silently disappears from its page.
A results file that cannot be read is refused (one line naming its line and field;
``--exclude`` it to go on).

Beside the page it writes ``spec.html`` (``conformance.spec``), which the page links.

Each run's root causes carry what their witnesses did in it (``witness`` lines of the results
file); a run with a witness that no longer reproduces its cause ("fixed?") is named in the
lines this prints.

Outputs (results.json, junit/<label>.xml, index.html) are all rendered in memory first and
replaced together (:class:`conformance.outputs.Outputs`): a failure, or Ctrl-C, leaves the
previous report whole. JUnit files of runs the new report lacks go with the replacement.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
from pathlib import Path

from conformance import cli
from conformance.outputs import OutputError, Outputs, regenerate_advice, reports_dir
from conformance.results import (ResultsSchemaError, combined, findings as _findings,
                                 first_wrong, first_wrong_item, read_run)
from conformance.results import json_text
from conformance.results.labels import SUFFIX, is_label, label_of
from conformance.results.locks import locked
from conformance.results.column_status import MISSING, read_status
from conformance.model.catalogue import load_catalogue
from conformance.report import html, junit, rootcause

ROOT = Path(__file__).resolve().parents[2]
def _default_columns() -> dict[str, tuple[str, str | None]]:
    from adapters.base import builtin_adapter_classes, runs_of

    return {run.label: (cls.module or name, run.version)
            for name, cls in builtin_adapter_classes().items() for run in runs_of(cls)}


#: label -> (framework, version): the columns of the README's report, in page order (the
#: runs the built-in adapters declare).
DEFAULT_COLUMNS = _default_columns()


def collect_runs(results_dir: Path, columns: dict[str, tuple[str, str | None]]
                 ) -> list[combined.Column]:
    runs = []
    for label, (framework, version) in columns.items():
        lines = Path(results_dir) / f"{label}.jsonl"
        status = read_status(results_dir, label)
        if status is not None and status.not_installed:
            runs.append(combined.placeholder(label, framework, version, status.status,
                                             status.detail))
        elif os.path.lexists(lines):  # a FIFO or a dangling link is refused, never "missing"
            run = combined.column_of(lines, label, framework)
            if status is not None and status.detail and run.status != "complete":
                run.detail = status.detail
            runs.append(run)
        else:
            runs.append(combined.placeholder(
                label, framework, version, MISSING,
                (status.detail if status else "")
                or f"no results file {lines.name}; {regenerate_advice()}"))
    return runs


def results_files(results_dir: Path) -> list[tuple[str, Path]]:
    """(label, path) of each conformance results file in ``results_dir`` (differential
    findings are not columns); a name that makes no label (an escape sequence, a newline,
    a bare ``.jsonl``) is refused, ResultsSchemaError naming it, not shown raw or as a column."""
    return [(label_of(path), path) for path in sorted(Path(results_dir).glob(f"*{SUFFIX}"))
            if not _findings.is_explore(path)]


def discover_columns(results_dir: Path, extra=None, exclude=(), builtin: bool = False) -> dict:
    """The built-in runs that have a results (or status) file, in their declared order (with
    ``builtin``: all of them, absent ones as placeholders), then every other conformance
    results file in ``results_dir`` (complete or interrupted; differential findings are not
    columns), then ``extra`` (``--column``: adds, or relabels a column already there), minus
    ``exclude``. A results file that cannot be read is refused (ResultsSchemaError naming it),
    never left out silently; ``--exclude`` its label to go on without it."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise ResultsSchemaError(f"--results-dir {results_dir}: no such directory; name the "
                                 f"directory of your --results files (or run "
                                 f"{regenerate_advice()})")
    columns = {label: spec for label, spec in DEFAULT_COLUMNS.items()
               if builtin or os.path.lexists(results_dir / f"{label}{SUFFIX}")
               or read_status(results_dir, label) is not None}
    skip = set(exclude) | set(extra or {})
    for label, path in results_files(results_dir):
        if label in columns or label in skip:
            continue
        try:
            run = read_run(path)
        except OSError as exc:
            raise ResultsSchemaError(f"{path}: cannot read it ({exc.strerror or exc}); "
                                     f"--exclude {label} to leave it out") from None
        except ResultsSchemaError as exc:
            raise ResultsSchemaError(f"{exc} (or --exclude {label} to leave it out)") from None
        columns[label] = (run.header.adapter or label, run.header.framework_version)
    for label, spec in (extra or {}).items():
        columns[label] = spec
    return {k: v for k, v in columns.items() if k not in set(exclude)}


def build(results_dir: Path, out_dir: Path, columns=None, catalogue_dir: Path | None = None,
          builtin: bool = False):
    """Write results.json, junit/, index.html and spec.html into ``out_dir``: all rendered in
    memory, then replaced together (OutputError, ResultsSchemaError: nothing was replaced).
    ``builtin``: every built-in run is a column (:func:`discover_columns`)."""
    columns = columns or discover_columns(results_dir, builtin=builtin)
    catalogue = load_catalogue(catalogue_dir or ROOT / "conformance" / "catalogue")
    runs = collect_runs(results_dir, columns)
    entries = combined.catalogue_entries(catalogue)
    for run in runs:
        run.root_causes = rootcause.root_causes(run, entries)
    data = combined.build(runs, catalogue)
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputError(f"--out {out_dir}: is a file; name a directory for the report")
    data.mutants = mutants_summary(out_dir / "mutants.json")
    data.findings = findings_summary(results_dir) or None
    outputs = Outputs()
    outputs.add(out_dir / "results.json", data.dumps())
    junit.add_all(data, out_dir / "junit", outputs)
    page = outputs.add(out_dir / "index.html", html.render(data))
    outputs.add(out_dir / "spec.html", _spec_page(out_dir, data))  # the page links it
    with _one_report_at_a_time(out_dir):
        for stale in sorted((out_dir / "junit").glob("*.xml")):  # runs no longer in the report
            outputs.remove(stale)
        outputs.commit()
    return data, page


def _spec_page(out_dir: Path, data) -> str:
    """spec.html beside the page, its statuses from this report's runs."""
    from conformance import spec

    return spec.render(out_dir / "spec.html", data=data)


def _one_report_at_a_time(out_dir: Path):
    """An exclusive lock per ``--out`` directory, kept outside it (a refused run adds nothing
    there). Why: two reports into one directory each listed the stale JUnit files, then
    renamed their sets over each other, leaving one run's results.json beside the other's
    JUnit files."""
    key = hashlib.sha256(str(Path(out_dir).resolve()).encode("utf-8", "surrogateescape"))
    return locked(Path(tempfile.gettempdir()) / f"autograd-conformance-report-{key.hexdigest()[:16]}")


def mutants_summary(path: Path) -> dict | None:
    """The score of ``nox -s mutants`` (reports/mutants.json), its survivors and date, if run;
    a file that is there but cannot be read is refused (ResultsSchemaError), not dropped."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        found = json_text.loads(json_text.read_text(path))
    except OSError as exc:
        problem: str | None = f"cannot be read ({exc.strerror or type(exc).__name__})"
    except ValueError as exc:
        problem = f"not JSON ({type(exc).__name__})"
    else:
        problem = _mutants_problem(found)
    if problem:
        raise ResultsSchemaError(f"{path}: {problem}; not a mutants.json written by nox -s "
                                 f"mutants: remove it or run nox -s mutants again")
    curated = found.get("curated") or {}
    keep = ("id", "expected_rules", "reason")
    return {"date": found.get("date"), "killed": curated.get("killed"), "total": curated.get("total"),
            "score": curated.get("score"), "partial": found.get("partial", False),
            "survivors": [{k: e.get(k) for k in keep} for e in curated.get("survivors") or []],
            "baseline": {k: baseline.get(k) for k in ("killed", "total", "date")}
            if isinstance(baseline := found.get("baseline"), dict) else None,
            "generic": _generic_summary(found.get("generic"))}


def _mutants_problem(found) -> str | None:
    """Why ``found`` (mutants.json) cannot be shown: the first field of a type the page does
    not expect, or None. Checked in order, so a field is looked into only once it is known
    to be a list or an object."""
    if not isinstance(found, dict):
        return f"a JSON {type(found).__name__}, not an object"
    curated, generic = found.get("curated"), found.get("generic")
    return (first_wrong(found, {"date": (str,), "partial": (bool,), "baseline": (dict,),
                                "curated": (dict,), "generic": (dict,)})
            or (curated and (
                first_wrong(curated, {"killed": (int,), "total": (int,), "score": (int, float),
                                      "survivors": (list,)}, "curated.")
                or first_wrong_item("curated.survivors", curated.get("survivors"),
                                    {"id": (str,), "expected_rules": (list,), "reason": (str,)})))
            or (generic and (
                first_wrong(generic, {"summary": (str,), "survivors_by_function": (dict,),
                                      "not_reached_by_function": (dict,), "survivors": (list,)},
                            "generic.")
                or first_wrong_item("generic.survivors", generic.get("survivors"),
                                    {"function": (str,), "change": (list,), "kind": (str,)})))
            or None)


def _generic_summary(generic) -> dict | None:
    """The long mode's result (mutmut over reference/) without its full survivor list."""
    if not isinstance(generic, dict):
        return None
    kept = {k: v for k, v in generic.items() if k not in ("survivors", "detail")}
    kept["survivors_by_function"] = dict(list((generic.get("survivors_by_function") or {}).items())[:10])
    kept["survivors_shown"] = [{"function": s.get("function"), "change": s.get("change"),
                                "kind": s.get("kind")}
                               for s in generic.get("survivors") or [] if s.get("kind") != "text"][:20]
    kept.setdefault("summary", None)  # the page reads it (its template's undefined is strict)
    return kept


def findings_summary(results_dir: Path, per_adapter: int = 40) -> list[dict]:
    """The differential search's findings (``explore-<adapter>.jsonl``, random and HypoFuzz
    searches): per adapter its searches and each divergence signature once, with the shortest
    script that shows it."""
    found = []
    for path in sorted(Path(results_dir).glob(f"{_findings.EXPLORE_PREFIX}*.jsonl")):
        try:  # one that cannot be read is refused, never left out silently
            searches = _findings.read_findings(path)
        except OSError as exc:
            raise ResultsSchemaError(f"{path}: cannot read it ({exc.strerror or exc}); remove "
                                     f"it or move it out of the results directory") from None
        if not searches:
            continue
        by_signature: dict = {}
        for search in searches:
            engine = search["run"].get("engine") or "random"
            for d in search["divergences"]:
                if not isinstance(d.get("signature"), str):
                    continue
                entry = by_signature.setdefault(d["signature"], {"times": 0, "engines": set()})
                entry["times"] += 1
                entry["engines"].add(engine)
                best = entry.get("record")
                if best is None or (d.get("script_lines") or 1e9) < (best.get("script_lines") or 1e9):
                    entry["record"] = d
        keep = ("signature", "category", "summary", "expectation", "script", "script_lines", "found",
                "framework_version", "worker")
        divergences = [{**{k: e["record"].get(k) for k in keep}, "times_found": e["times"],
                        "engines": sorted(e["engines"])} for e in by_signature.values()]
        divergences.sort(key=lambda d: (bool(d["expectation"]), d["category"] or "", d["signature"]))
        runs = [{"engine": s["run"].get("engine") or "random", "started": s["run"].get("started"),
                 "workers": s["run"].get("workers", 1), "host": s["run"].get("host"),
                 "programs": (s["end"] or {}).get("examples", sum(w.get("examples") or 0 for w in s["workers"])),
                 "seconds": (s["end"] or {}).get("duration"), "divergences": len(s["divergences"]),
                 "complete": s["end"] is not None} for s in searches]
        found.append({"adapter": path.stem[len(_findings.EXPLORE_PREFIX):], "file": path.name,
                      "searches": len(runs), "programs": sum(r["programs"] or 0 for r in runs),
                      "last_searches": runs[-5:], "divergences": divergences[:per_adapter],
                      "signatures": len(divergences),
                      "unexpected": sum(1 for d in divergences if not d["expectation"])})
    return found


def _column(text: str) -> tuple[str, tuple[str, str | None]]:
    label, sep, rest = text.partition("=")
    framework, _, version = (rest if sep else label).partition(":")
    if not is_label(label):
        raise argparse.ArgumentTypeError(
            f"{text!r}: the label {label!r} must be a results file's name without .jsonl "
            f"(letters, digits, . _ + -), as in torch-nightly=torch:2.14")
    if not framework.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: no framework after '='; write "
                                         f"LABEL=FRAMEWORK[:VERSION], as in torch-nightly=torch")
    return label, (framework, version or None)


def _labels(results_dir: Path, extra: dict) -> list[str]:
    """The labels :func:`discover_columns` can give, without reading any results file (so
    that ``--exclude`` of a file that cannot be read is checked, and then leaves it unread)."""
    found = [label for label, _ in results_files(results_dir)] \
        if Path(results_dir).is_dir() else []
    return list(dict.fromkeys([*DEFAULT_COLUMNS, *found, *extra]))


def _results_dir(text: str) -> Path:
    """``--results-dir``: not empty (``--results-dir=`` from an unset CI variable read the
    current directory and wrote an all-"missing" page); a missing one is refused later."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path (an unset variable?); give the "
                                         "directory of the --results files")
    return Path(text)


def main(argv=None) -> int:
    parser = cli.Parser("python -m conformance.report", __doc__)
    reports = reports_dir()  # the checkout's reports/, or ./reports when installed
    parser.add_argument("--results-dir", type=_results_dir, default=reports / "results",
                        help=f"the runs' --results files (default: {reports / 'results'})")
    parser.add_argument("--out", type=cli.output_dir, default=reports,
                        help="directory to write results.json, junit/ and index.html into "
                             f"(default: {reports})")
    parser.add_argument("--column", action="append", type=_column, default=[],
                        help="LABEL=FRAMEWORK[:VERSION]: add the column of LABEL.jsonl, or "
                             "relabel it (repeat). Default columns: every results file in the "
                             "results directory, the built-in adapters' runs (" +
                             ", ".join(DEFAULT_COLUMNS) + ") first")
    parser.add_argument("--exclude", action="append", default=[], metavar="LABEL",
                        help="leave the column LABEL out (repeat)")
    parser.add_argument("--builtin-columns", action="store_true",
                        help="make every run the built-in adapters declare a column, one "
                             "without results as 'missing' (nox -s report); without it the "
                             "page shows the runs in the results directory only")
    args = parser.parse_args(argv)
    try:
        known = _labels(args.results_dir, dict(args.column))
        unknown = [label for label in args.exclude if label not in known]
        if unknown and args.results_dir.is_dir():
            parser.error(f"--exclude {unknown[0]}: no such column (the columns: "
                         f"{', '.join(known)})")
        columns = discover_columns(args.results_dir, dict(args.column), args.exclude,
                                   builtin=args.builtin_columns)
        if not columns:
            raise ResultsSchemaError(f"--results-dir {args.results_dir}: no results files "
                                     f"(<label>.jsonl) in it; run "
                                     f"{regenerate_advice()}")
        data, page = build(args.results_dir, args.out, columns)
    except (ResultsSchemaError, OutputError) as exc:
        return cli.usage_error(parser.prog, exc)  # bad input: one line, exit 4
    for run in data.runs:
        n = len(run.tests)
        print(f"  {run.label:<16} {run.status:<14} {n:4d} tests  {run.detail or ''}")
        if run.fixed:  # a root cause whose witness no longer reproduces is wrong: say so
            print(f"  {'':<16} fixed? {len(run.fixed)} witness(es) do not reproduce their "
                  f"cause: {', '.join(w.cause for w in run.fixed)}")
    print(f"results: {(args.out / 'results.json').resolve()}")
    print(f"junit:   {(args.out / 'junit').resolve()}/")
    print(f"report:  {page.resolve()}")
    print(f"         file://{page.resolve()}")
    print(f"spec:    {(args.out / 'spec.html').resolve()}")
    return 0
