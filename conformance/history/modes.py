"""History per mode: since which release a framework's mode (torch under ``torch.compile``)
differs from the framework's eager runs, rule by rule.

Why from runs, not snippets: eager's history runs each rule's evidence snippet under old
releases. What a mode changes is a verdict of the suites run in the mode beside eager on the
same release (the report's "Eager vs compile" view), and a snippet written for eager torch
compiles nothing. So for every release where both columns could run, ``python -m
conformance.history modes RESULTS_DIR`` reads each mode's results file with the eager results
file of the same framework version and writes ``conformance/history/modes/<mode>/<version>.json``:
the rules compared, and each rule whose outcome differs (both outcomes, the cause the mode's
expectations file names, whether that cause's witness reproduced in the run). Data only,
committed like the evidence history; a release whose columns were not run is not recorded.

``timelines`` reads them back (mode -> rule -> one step per recorded release: ``differs``,
``same`` or ``not run``); ``since`` answers "since which recorded release does the difference
exist"; the report's eager-vs-compile view and the spec page show it.
"""
from __future__ import annotations

import dataclasses
import html
from pathlib import Path
from typing import Any, Callable

from conformance import history
from conformance.versions import version_key

DIRECTORY = history.DIRECTORY / "modes"
DIFFERS, SAME, NOT_RUN = "differs", "same", "not run"
#: what a recorded difference holds (``kind``: broken only in the mode, held only in it, or
#: broken differently: conformance.report.aggregate.mode_changes)
DIFFERENCE_FIELDS = ("kind", "eager", "mode", "cause", "reason", "upstream", "witness")
KINDS = {"regressed": "broken only in the mode", "fixed": "held only in the mode",
         "changed": "broken differently"}


def base_version(version: str | None) -> str:
    """``2.15.0`` of ``2.15.0+cu132``: a release, whatever build of it ran."""
    return history.release_version((version or "").split("+")[0])


def data_path(mode: str, version: str, directory: Path = DIRECTORY) -> Path:
    return Path(directory) / mode / f"{history.release_version(version)}.json"


# -- recording ------------------------------------------------------------------------------
def compare(eager, mode, entries, expected=None) -> dict[str, Any]:
    """One release's record of ``mode`` (a results column of the framework in a mode) against
    ``eager`` (the framework's own column of the same version): what the page's eager-vs-mode
    view shows, kept. ``entries``: the catalogue's rule entries; ``expected``: the mode's
    expectations for that version (an ExpectationSet), which name the cause of a difference
    the run's own expectations did not (a run made before the entry was written)."""
    from conformance.outcomes import NOT_RUN as CELL_NOT_RUN
    from conformance.report import aggregate
    from conformance.results import naming
    from conformance.results.combined import Combined

    if not mode.mode or eager.mode or eager.framework != mode.framework:
        raise history.HistoryError(f"{mode.label} is no mode of {eager.label}'s framework")
    version = base_version(mode.framework_version)
    if base_version(eager.framework_version) != version:
        raise history.HistoryError(f"{eager.label} ran {eager.framework} "
                                   f"{eager.framework_version}, {mode.label} ran "
                                   f"{mode.framework_version}: compare runs of one release")
    data = Combined(catalogue=list(entries), runs=[eager, mode])
    table = aggregate.cells(data)
    changes = aggregate.mode_changes(data, table)[0]
    witnesses = {w.cause: w.status or "" for w in mode.witnesses}
    differences = {}
    for kind in KINDS:
        for change in changes[kind]:
            if not change["cause"] and expected is not None:
                exp = next((e for t in table[(change["rule"], mode.label)].tests
                            if (e := expected.get(change["rule"], naming.test_name(t.nodeid)))),
                           None)
                if exp is not None:
                    change.update(cause=exp.root_cause, reason=exp.reason, upstream=exp.upstream)
            differences[change["rule"]] = {
                "kind": kind, "eager": change["old"], "mode": change["new"],
                "cause": change["cause"], "reason": change["reason"],
                "upstream": change["upstream"], "witness": witnesses.get(change["cause"], "")}
    # a rule BLOCKED by a prerequisite that differs needs no entry of its own: its cause is
    # the prerequisite's (legacy_function.grad-fn-name behind identity.custom-function-node-name)
    for rule, diff in differences.items():
        if diff["mode"] == "BLOCKED" and not diff["cause"]:
            blocked_by = next((t.blocked_by for t in table[(rule, mode.label)].tests
                               if t.blocked_by), "")
            behind = differences.get(blocked_by, {})
            diff.update(cause=behind.get("cause", ""), upstream=behind.get("upstream", ""),
                        reason=f"blocked by {blocked_by or 'a prerequisite'}, which differs",
                        witness=behind.get("witness", ""))
    compared = [e.id for e in data.catalogue
                if CELL_NOT_RUN not in (table[(e.id, eager.label)].actual,
                                        table[(e.id, mode.label)].actual)]
    return {"mode": mode.mode, "framework": mode.framework, "version": version,
            "framework_version": mode.framework_version or "",
            "python": mode.header.python or "",
            "runs": {side: {"label": run.label, "started": run.header.started or "",
                            "suite_revision": run.header.suite_revision or ""}
                     for side, run in (("eager", eager), ("mode", mode))},
            "compared": compared,
            "differences": dict(sorted(differences.items()))}


def pairs(runs) -> list[tuple[Any, Any]]:
    """(eager column, mode column) for every mode column of ``runs`` that has an eager column
    of the same framework and release beside it (complete or interrupted runs only)."""
    eager = {}
    for run in runs:
        if run.has_results and not run.mode and run.framework_version:
            eager.setdefault((run.framework, base_version(run.framework_version)), run)
    return [(eager[key], run) for run in runs
            if run.has_results and run.mode and run.framework_version
            and (key := (run.framework, base_version(run.framework_version))) in eager]


def record_dir(results_dir: Path, directory: Path = DIRECTORY,
               log: Callable[[str], None] = print) -> list[Path]:
    """Record every mode column of ``results_dir`` (its ``*.jsonl`` results files) that has
    an eager column of its release there; HistoryError when there is none to record."""
    from conformance.model.catalogue import load_catalogue
    from conformance.results import ResultsSchemaError, combined, findings, read_run
    from conformance.results.labels import SUFFIX, label_of

    if not Path(results_dir).is_dir():
        raise history.HistoryError(f"{results_dir}: no such directory; give the folder of "
                                   f"the runs' results files (reports/results)")
    runs = []
    try:
        for path in sorted(Path(results_dir).glob(f"*{SUFFIX}")):
            if findings.is_explore(path):   # differential findings are no runs
                continue
            label = label_of(path)
            header = read_run(path).header
            framework = _framework_of(header.adapter or label)
            runs.append(combined.column_of(path, label, framework))
    except (OSError, ResultsSchemaError) as exc:
        raise history.HistoryError(str(exc)) from None
    found = pairs(runs)
    if not found:
        raise history.HistoryError(
            f"{results_dir}: no results file of a mode (torch-compile...) with an eager run "
            f"of the same release beside it; run both columns first (docs/compile-modes.md)")
    from adapters.base import builtin_adapter_classes
    from conformance.model.expectations import load_expectations

    entries = combined.catalogue_entries(load_catalogue(history.DIRECTORY.parent / "catalogue"))
    classes = builtin_adapter_classes()
    written = []
    for eager, mode in found:
        cls = classes.get(mode.mode)
        expected = (load_expectations(cls().expectations_file(), [e.id for e in entries],
                                      mode.framework_version)
                    if cls is not None and cls().expectations_file().is_file() else None)
        data = compare(eager, mode, entries, expected)
        path = data_path(data["mode"], data["version"], directory)
        history.write(path, data)
        log(f"{data['mode']} {data['version']}: {len(data['differences'])} rule(s) differ "
            f"from {eager.label} of {len(data['compared'])} compared -> {path}")
        written.append(path)
    return written


def _framework_of(adapter: str) -> str:
    """The framework a results file's adapter runs (``torch`` for ``torch-compile``)."""
    from adapters.base import framework_module

    return framework_module(adapter)


# -- reading --------------------------------------------------------------------------------
def read(path: Path) -> dict:
    """One mode's release file; a malformed one is a HistoryError naming it."""
    from conformance.results import json_text

    try:
        data = json_text.loads(json_text.read_text(Path(path)))
    except OSError as exc:
        raise history.HistoryError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise history.HistoryError(f"{path}: not a readable mode history file ({exc}); "
                                   f"record it again (python -m conformance.history modes)") from None
    problem = None
    if not isinstance(data, dict):
        problem = "is no object"
    elif not all(isinstance(data.get(k), str) for k in ("mode", "framework", "version")):
        problem = "has no 'mode', 'framework' or 'version'"
    elif not isinstance(data.get("compared"), list) or not isinstance(data.get("differences"), dict):
        problem = "has no 'compared' list or 'differences' object"
    elif data["version"] != Path(path).stem:
        problem = f"holds release {data['version']!r}, not {Path(path).stem!r} as its name says"
    else:
        for rule, diff in data["differences"].items():
            if not isinstance(diff, dict) or diff.get("kind") not in KINDS or not all(
                    isinstance(diff.get(k), str) for k in DIFFERENCE_FIELDS):
                problem = f"difference {rule!r} lacks one of {', '.join(DIFFERENCE_FIELDS)}"
                break
    if problem:
        raise history.HistoryError(f"{path}: {problem}; record it again "
                                   f"(python -m conformance.history modes RESULTS_DIR)")
    return data


def load(directory: Path = DIRECTORY) -> dict[str, list[dict]]:
    """mode -> its recorded releases, oldest first."""
    folder = Path(directory)
    found: dict[str, list[dict]] = {}
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []:
        releases = [read(p) for p in sorted(sub.glob("*.json"))]
        if releases:
            found[sub.name] = sorted(releases, key=lambda d: version_key(d["version"]))
    return found


@dataclasses.dataclass(frozen=True)
class Step:
    """One rule under one mode in one recorded release."""

    version: str
    status: str                         # DIFFERS | SAME | NOT_RUN
    difference: dict | None = None      # the recorded difference where it differs


@dataclasses.dataclass(frozen=True)
class Timeline:
    """One mode's recorded releases: per rule that differs in any of them, one step each."""

    mode: str
    framework: str
    versions: tuple[str, ...]
    rules: dict[str, list[Step]]


def timelines(directory: Path = DIRECTORY) -> dict[str, Timeline]:
    """mode -> its timeline (releases oldest first; every rule that differs in one of them)."""
    out: dict[str, Timeline] = {}
    for mode, releases in load(directory).items():
        rules = sorted({r for d in releases for r in d["differences"]})
        out[mode] = Timeline(mode, releases[-1]["framework"],
                             tuple(d["version"] for d in releases), {rule: [
            Step(d["version"], DIFFERS, d["differences"][rule]) if rule in d["differences"]
            else Step(d["version"], SAME if rule in d["compared"] else NOT_RUN)
            for d in releases] for rule in rules})
    return out


def since_for(found: dict[str, Timeline], mode: str, rule: str, version: str | None) -> str:
    """:func:`since_text` of ``rule`` under ``mode`` up to ``version`` ("" unrecorded, or a
    version no release file could be named after)."""
    timeline = found.get(mode)
    steps = timeline.rules.get(rule) if timeline else None
    try:
        return since_text(steps, timeline.framework, version) if steps else ""
    except history.HistoryError:
        return ""


def since(steps: list[Step], version: str | None = None) -> tuple[Step | None, Step | None]:
    """(the oldest recorded release from which the rule differs in every recorded release up
    to ``version`` (the newest when None), the recorded release before it): (None, step at
    ``version``) when it does not differ there; (first, None) when it differs in every
    recorded release up to it."""
    upto = [s for s in steps if version is None
            or version_key(s.version) <= version_key(base_version(version))]
    if not upto or upto[-1].status != DIFFERS:
        return None, (upto[-1] if upto else None)
    first = None
    for step in reversed(upto):
        if step.status != DIFFERS:
            return first, step
        first = step
    return first, None


def since_text(steps: list[Step], framework: str, version: str | None = None) -> str:
    """``since torch 2.13.0 (the oldest release recorded)`` / ``since torch 2.15.0 (not in
    2.13.0)``, or "" where it does not differ at ``version``."""
    first, before = since(steps, version)
    if first is None:
        return ""
    if before is None:
        return f"since {framework} {first.version} (the oldest release recorded)"
    was = "not run" if before.status == NOT_RUN else "not in"
    return f"since {framework} {first.version} ({was} {before.version})"


# -- HTML -----------------------------------------------------------------------------------
SYMBOL = {DIFFERS: "≠", SAME: "=", NOT_RUN: "·"}
CSS = ".m-differs{background:#fdd;text-align:center} .m-same{background:#dfd;text-align:center} " \
      ".m-notrun{color:#888;text-align:center}"


def _cell(step: Step) -> str:
    css = {DIFFERS: "m-differs", SAME: "m-same", NOT_RUN: "m-notrun"}[step.status]
    title = (f"{step.difference['eager']} eager, {step.difference['mode']} in the mode"
             if step.difference else {SAME: "as eager", NOT_RUN: "not run in both"}[step.status])
    return f'<td class="{css}" title="{html.escape(title)}">{SYMBOL[step.status]}</td>'


def report_section(directory: Path = DIRECTORY, spec_href: str = "spec.html",
                   frameworks=None) -> str:
    """Per mode, the rules that differ from eager in a recorded release, grouped by cause and
    by where they differ (one column per release) with since when: compact, as the page has a
    size budget (three rules named per group, the count of the rest; "" without mode
    history). The spec page has one line per rule. ``frameworks``: only the modes of these
    frameworks (those with a run on the page; None: every mode)."""
    found = {mode: t for mode, t in timelines(directory).items()
             if frameworks is None or t.framework in frameworks}
    if not found:
        return ""
    out = [f'<section id="mode-history"><style>{CSS}</style><h3>Eager vs compile by release</h3>'
           "<p>Per mode, the rules whose outcome differs from the framework's eager run of the "
           "same release in a recorded release (<code>python -m conformance.history modes</code>, "
           "data in <code>conformance/history/modes/</code>), by cause: ≠ differs, = as eager, "
           f'· not run; since: the oldest recorded release of an unbroken run up to the newest. '
           f'The <a href="{spec_href}">spec page</a> has each rule\'s line.</p>']
    for mode, timeline in found.items():
        framework = timeline.framework
        groups: dict[tuple, list[str]] = {}
        for rule, steps in timeline.rules.items():
            last = next(s.difference for s in reversed(steps) if s.difference)
            key = (last["cause"], tuple(s.status for s in steps))
            groups.setdefault(key, []).append(rule)
        heads = "".join(f"<th>{html.escape(v)}</th>" for v in timeline.versions)
        rows = []
        for (cause, statuses), rules in sorted(groups.items()):
            first, before = since(timeline.rules[rules[0]])
            when = (first.version if first is not None else "") or \
                f"not in {timeline.versions[-1]}"
            cells = "".join(f'<td class="m-{s.replace(" ", "")}">{SYMBOL[s]}</td>' for s in statuses)
            rows.append(f"<tr><td><code>{html.escape(cause) or 'no cause recorded'}</code></td>"
                        f"{cells}<td>{html.escape(when)}</td><td>"
                        + ", ".join(html.escape(r) for r in rules[:3])
                        + (f" and {len(rules) - 3} more" if len(rules) > 3 else "") + "</td></tr>")
        out.append(f'<h4>{html.escape(mode)} ({html.escape(framework)})</h4><table class="history '
                   f'mode-history" data-mode="{html.escape(mode)}"><tr><th>cause</th>{heads}'
                   f"<th>since</th><th>rules</th></tr>" + "".join(rows) + "</table>")
    out.append("</section>")
    return "\n".join(out)


def spec_fragment(rule: str, found: dict[str, Timeline]) -> str:
    """``<dt>Under <mode></dt><dd>…</dd>`` for each mode in which ``rule`` differs from eager in
    a recorded release ("" where it never does)."""
    parts = []
    for mode, timeline in found.items():
        steps = timeline.rules.get(rule)
        if not steps:
            continue
        last = next(s.difference for s in reversed(steps) if s.difference)
        when = since_text(steps, timeline.framework) or f"no longer differs in {steps[-1].version}"
        cells = "".join(_cell(s) for s in steps)
        heads = "".join(f"<th>{html.escape(s.version)}</th>" for s in steps)
        parts.append(f"<dt>Under {html.escape(mode)}</dt><dd>differs from eager "
                     f"{html.escape(when)}: {html.escape(last['eager'])} eager, "
                     f"{html.escape(last['mode'])} under {html.escape(mode)}"
                     + (f" (<code>{html.escape(last['cause'])}</code>)" if last["cause"] else "")
                     + f'<table class="status"><tr>{heads}</tr><tr>{cells}</tr></table></dd>')
    return "\n".join(parts)
