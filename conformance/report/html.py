"""reports/index.html: one self-contained page (inline CSS and JS, no network), from jinja2.

The page opens on each run's ranked root causes (each with its witness script and what it
printed in the run, "fixed?" where it no longer reproduces its cause), then what changed between versions of a
framework, counts per suite (a stacked bar per outcome), and the matrix whose cells show what
the framework really did (an "expected" badge where its expectations file says so). All of it
is rendered by the template (autoescaped); the details of a cell are filled in by the page's
script from a JSON block (``<script type="application/json">`` with ``<``, ``>`` and ``&``
escaped as ``\\u003c`` etc., so no message can end the block) and always through
``textContent``, so a message containing ``<script>`` shows as text.

Weight: the details (tests, messages, leak chains, reproduction scripts) are gzip-compressed
and base64-encoded in the block's ``details`` key and inflated in the page with the browser's
own ``DecompressionStream``; nothing is fetched.
"""
from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import jinja2

from conformance import upstream
from conformance.outputs import write_text
from conformance.report import aggregate, rootcause
from conformance.repro import cells as repro_cells
from conformance.repro import derive as repro
from conformance.results.combined import SCHEMA, Combined
from conformance.results.naming import test_name
from conformance.report.svg import chain_svg
from conformance.versions import version_key

TEMPLATES = Path(__file__).parent / "templates"


def _json_for_script(obj: Any) -> str:
    return (json.dumps(obj, default=repr, separators=(",", ":"))
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


class _Rule:
    """A catalogue entry with what the page adds to it (``diverges``, ``outcomes``)."""

    def __init__(self, entry, **extra):
        self.__dict__.update(entry.to_json(), **extra)


def declared_missing(cell, unsupported: dict | None) -> dict[str, str]:
    """The features (-> the adapter's reason) of an UNSUPPORTED cell whose every UNSUPPORTED
    test lacks a feature the adapter declares missing (``unsupported``: the run header's
    table); {} for any other cell. Such a cell is expected without an expectation entry."""
    if cell.outcome != "UNSUPPORTED":
        return {}
    missing = [t for t in cell.tests if t.actual_outcome == "UNSUPPORTED"]
    if not missing or not all(t.declared_missing(unsupported) for t in missing):
        return {}
    return {t.missing_feature: str(unsupported[t.missing_feature]) for t in missing}


def context(data: Combined) -> dict[str, Any]:
    table = aggregate.cells(data)
    unsupported = {run.label: run.header.unsupported or {} for run in data.runs}
    declared = {key: found for key, cell in table.items()
                if (found := declared_missing(cell, unsupported.get(key[1])))}
    counts = aggregate.suite_counts(data, table)
    suites = sorted({e.suite for e in data.catalogue})
    columns = []
    for run in data.runs:
        header = run.header
        columns.append({"label": run.label, "status": run.status, "detail": run.detail,
                        "framework": run.framework, "framework_version": header.framework_version,
                        "python": header.python, "device": header.device,
                        "suite_revision": header.suite_revision,
                        "suite_dirty": header.suite_dirty, "started": header.started,
                        "expectations_note": header.expectations_note,
                        "declarations": [str(line) for line in header.declarations or []],
                        "adapter": run.framework, "title": run.title})
    rules_by_suite: dict[str, list] = {s: [] for s in suites}
    for e in data.catalogue:
        row_cells = [table[(e.id, c["label"])] for c in columns]
        rules_by_suite[e.suite].append(_Rule(
            e, diverges=any(c.broken for c in row_cells),
            outcomes=sorted({c.outcome for c in row_cells}
                            | {str(t.actual_outcome) for c in row_cells for t in c.tests})))
    totals = {}
    for c in columns:
        parts = [counts[(s, c["label"])] for s in suites]
        totals[c["label"]] = {k: sum(p[k] for p in parts)
                              for k in ("held", "rules", "tests", "tests_expected")}
    scripts, script_errors = repro_cells.scripts_for(data)
    js_cells: dict[str, dict[str, Any]] = {}
    for (rid, label), cell in table.items():
        tests = []
        for t in cell.tests:
            tests.append({"name": test_name(t.nodeid), "outcome": t.outcome,
                          "actual": t.actual, "message": t.message or "",
                          "blocked_by": t.blocked_by, "missing_feature": t.missing_feature,
                          "not_checked": list(t.not_checked or []),
                          "duration": t.duration, "observed": t.observed,
                          "chain": t.chain,
                          "chain_svg": chain_svg(t.chain) if t.chain else None})
        js_cells.setdefault(rid, {})[label] = {"outcome": cell.outcome,
                                               "actual": cell.actual, "tests": tests,
                                               "expectation": cell.expectation,
                                               "declared": declared.get((rid, label))}
    chunks, script_refs, modules = _share_paragraphs(
        scripts, {r.label: _script_name(repro.RunInfo.of(r).adapter_spec) for r in data.runs})
    details = {"cells": js_cells, "chunks": chunks, "scripts": script_refs, "modules": modules,
               "script_errors": script_errors, "rules": {e.id: e.to_json() for e in data.catalogue}}
    js = {"schema": SCHEMA, "version": data.version,
          "columns": {c["label"]: c for c in columns},
          "column_order": [c["label"] for c in columns],
          "details": _pack(details),
          "styles": {k: list(v) for k, v in aggregate.STYLE.items()}}
    judged = [_judged(run) for run in data.runs]
    causes = []
    issues = []  # per run, an upstream-ready report per cause that has a witness script
    for run in data.runs:
        reports = [{"id": c.id, "summary": c.summary, "text": text}
                   for c in run.root_causes if c.kind == "breaks"
                   and (text := upstream.page_report(run, c, data.catalogue))]
        if reports:
            issues.append({"label": run.label, "title": run.title, "reports": reports})
    for run in data.runs:
        unranked = rootcause.unranked_witnesses(run)  # their witness records
        if run.root_causes or unranked:
            causes.append({"label": run.label, "title": run.title,
                           "adapter": run.framework, "causes": run.root_causes,
                           "tests": sum(len(c.tests) for c in run.root_causes),
                           "fixed": [w.cause for w in run.fixed],
                           "witnessed": len([w for w in run.witnesses if w.status != "no witness"]),
                           "unranked": unranked})
    # the newest version of each framework first (most causes first), older versions after
    newest = {}
    for run in data.runs:
        key = version_key(run.framework_version)
        if run.framework not in newest or key > newest[run.framework][0]:
            newest[run.framework] = (key, run.label)
    latest = {label for _, label in newest.values()}
    causes.sort(key=lambda r: (r["label"] not in latest, -len(r["causes"])))
    bars = {key: aggregate.bar_svg(k["actual"]) for key, k in counts.items()}
    return {"columns": columns, "suites": suites, "rules_by_suite": rules_by_suite,
            "cells": table, "declared": declared, "counts": counts, "totals": totals, "bars": bars,
            "only_one": aggregate.only_one(data, table), "causes": causes, "issues": issues,
            "judged": judged,
            "column_of": {c["label"]: c for c in columns},
            "versions": aggregate.version_changes(data, table),
            "modes": aggregate.mode_changes(data, table, _mode_history()),
            "mixed": aggregate.mixed, "bar_colours": aggregate.BAR_COLOURS, "mutants": data.mutants,
            "findings": data.findings or [],
            "styles": list(aggregate.STYLE.items()),
            "style_of": lambda o: aggregate.STYLE.get(o, aggregate.STYLE["ERROR"]),
            "generated": data.generated, "schema_version": data.version,
            "catalogue_size": len(data.catalogue), "data_json": _json_for_script(js)}


#: framework outcomes that do not judge a test's subject: the test never reached its verdict
NOT_JUDGED = ("UNSUPPORTED", "BLOCKED", "ERROR", "CRASH", "TIMEOUT")


def _judged(run) -> dict[str, Any]:
    """How much of a run judged what its tests are about (issue 33): the tests that reached a
    verdict on their subject (the framework's outcome PASS, OBSERVED, DIVERGES or LEAK, as
    expected or not), the UNSUPPORTED ones by the feature their record names, and the side
    observations skipped for a missing feature ("not checked: F") by feature."""
    from collections import Counter

    verdicts = sum(1 for t in run.tests if (t.actual_outcome or "ERROR") not in NOT_JUDGED)
    missing = Counter(t.missing_feature or "(no feature recorded)" for t in run.tests
                      if t.actual_outcome == "UNSUPPORTED")
    skipped = Counter(note.split(":", 1)[0].strip() for t in run.tests
                      for note in (t.not_checked or []))
    partial = sum(1 for t in run.tests if t.not_checked)
    return {"label": run.label, "title": run.title, "status": run.status, "tests": len(run.tests),
            "judged": verdicts, "unsupported": missing.most_common(),
            "not_checked": skipped.most_common(), "partial": partial}


def _script_name(adapter_spec: str) -> str | None:
    """The name a run's scripts call the framework by: its module where the adapter's ``fw``
    is that module, else ``fw`` (scripts through the adapter: conformance/repro/derive.py)."""
    if repro.through_adapter(adapter_spec):
        return "fw"
    return repro.framework_of(adapter_spec)[0]


#: Stands for a script's framework module name in the shared paragraphs (never in a script).
MODULE_MARK = "\u0001"


def _share_paragraphs(scripts: dict[str, dict[str, str]], module_of: dict[str, str] | None = None):
    """Scripts (run label -> rule -> script) as lists of paragraph numbers into one list of
    distinct paragraphs, with the framework's module name (``torch``, ``oneflow``...; label ->
    name in ``module_of``) replaced by :data:`MODULE_MARK`: the test bodies and helpers every
    run's script of a rule shares are stored once (the page joins the paragraphs and puts the
    name back). Lossless: returns the chunks, the references per label and rule, and the
    module name per label."""
    module_of = module_of or {}
    number: dict[str, int] = {}
    refs: dict[str, dict[str, list[int]]] = {}
    modules: dict[str, str] = {}
    for label, by_rule in scripts.items():
        module = module_of.get(label) or ""
        if any(MODULE_MARK in script for script in by_rule.values()) or not module:
            module = ""
        modules[label] = module
        refs[label] = {}
        for rule, script in by_rule.items():
            if module:
                script = script.replace(module, MODULE_MARK)
            refs[label][rule] = [number.setdefault(p, len(number)) for p in script.split("\n\n")]
    chunks = [""] * len(number)
    for p, i in number.items():
        chunks[i] = p
    return chunks, refs, modules


def _join_paragraphs(chunks, refs, module) -> str:
    text = "\n\n".join(chunks[i] for i in refs)
    return text.replace(MODULE_MARK, module) if module else text


def _pack(obj: Any) -> str:
    """gzip + base64 of the JSON of ``obj`` (the page inflates it with DecompressionStream)."""
    raw = json.dumps(obj, default=repr, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, 9, mtime=0)).decode("ascii")


def _unpack(text: str) -> Any:
    return json.loads(gzip.decompress(base64.b64decode(text)).decode("utf-8"))


def render(data: Combined) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    return env.get_template("index.html.j2").render(**context(data), history_section=_history_section(),
                                                   mode_history_section=_mode_history_section(data))


def _history_section() -> str:
    """The "lifetime changes by release" section (conformance/history/render.py)."""
    from conformance import evidence
    from conformance.history import render as history

    return history.report_section(evidence.load())


def _mode_history_section(data: Combined) -> str:
    """What each mode changes against eager, release by release (conformance/history/modes.py),
    under the eager-vs-compile view: for the frameworks with a run on the page (a third-party
    report shows none of torch's modes)."""
    from conformance.history import modes

    return modes.report_section(frameworks={run.framework for run in data.runs})


def _mode_history():
    """Since which recorded release a mode's difference exists (conformance/history/modes/),
    for the eager-vs-compile view: ``since(mode, rule, version)``."""
    import functools

    from conformance.history import modes

    return functools.partial(modes.since_for, modes.timelines())


def write(data: Combined, path: Path) -> Path:
    """The page alone, written whole or not at all (the report writes it with the rest:
    conformance.report.build)."""
    return write_text(path, render(data))


def embedded_data(page: str) -> dict[str, Any]:
    """The JSON block of a rendered page (what its script shows), for tests and tools."""
    start = page.index('<script type="application/json" id="report-data">')
    start = page.index(">", start) + 1
    end = page.index("</script>", start)
    data = json.loads(page[start:end])
    if isinstance(data.get("details"), str):
        data.update(_unpack(data.pop("details")))
        chunks, modules = data.pop("chunks"), data.pop("modules")
        data["scripts"] = {a: {r: _join_paragraphs(chunks, refs, modules[a])
                               for r, refs in by.items()}
                           for a, by in data["scripts"].items()}
    return data
