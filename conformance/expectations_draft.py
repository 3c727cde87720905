"""Draft an expectations file from results runs, so that the diff is the review.

    python -m conformance.expectations_draft reports/results/oneflow-0.9.0.jsonl \\
        reports/results/oneflow-0.8.0.jsonl > adapters/expectations/oneflow.toml

Each rule that did not hold in some run gets entries saying what happened instead, limited to
the framework versions (``versions``) and the tests (``tests``) where it happened, each with a
``root_cause`` slug: the tests the page would rank as one root cause (the same expectation
slug, missing feature, or outcome and normalised message: conformance.report.rootcause) share
one, named after the first rule it breaks (``crash-`` / ``timeout-`` / ``leak-`` for those
outcomes, ``unsupported-<feature>`` for a missing feature). The ``reason`` is never a pasted
failure message (the docs forbid it: a message says what an assertion saw, not what the
framework does): it is the rule's own words, "does not hold: <the rule's statement>", for the
reviewer to replace with the cause; the observed message is a comment above the entry.
Outcomes are read from the ``actual`` field, so a run made with an older expectations file
drafts the same entries as a run made with none. Rules that held everywhere get nothing,
and neither does a BLOCKED test (a cascade from its prerequisite rule needs no entry) nor an
UNSUPPORTED test whose missing feature the adapter declares (the declaration is its cause).
TOML is written by :mod:`conformance.tomlfile`, the project's one TOML writer.
"""
from __future__ import annotations

import sys
from collections import defaultdict

import re
from pathlib import Path

from conformance import cli
from conformance.outcomes import ACTUAL, EXPECTABLE, HELD as _HELD, Outcome
from conformance.results import ResultsSchemaError, read_run, test_name
from conformance.tomlfile import array as _toml_list, comment, string as toml_string

#: What drafting does with each outcome a test can actually have: an entry, or nothing.
DRAFTED = frozenset(o.value for o in EXPECTABLE)
NOT_DRAFTED = frozenset({*(o.value for o in _HELD), Outcome.BLOCKED.value})
HELD = NOT_DRAFTED  # (name kept for callers: outcomes that get no entry)
#: What :func:`read_runs` records for an UNSUPPORTED test on a feature the adapter declares
#: missing (the run header's ``unsupported``): it gets no entry either.
DECLARED = "UNSUPPORTED (declared)"
assert DRAFTED | NOT_DRAFTED == {o.value for o in ACTUAL}, "an outcome drafting does not handle"


def _statements() -> dict[str, str]:
    """rule id -> its statement, from the installed catalogue."""
    from conformance.model.catalogue import load_catalogue

    catalogue = load_catalogue(Path(__file__).resolve().parent / "catalogue")
    return {rid: rule.statement for rid, rule in catalogue.rules.items()}


_PREFIX = {"CRASH": "crash-", "TIMEOUT": "timeout-", "LEAK": "leak-"}


def _slug_of(cause, taken: dict[str, str]) -> str:
    """A readable root-cause slug for a ranked cause: its own id where it has one (an
    expectation's slug, ``unsupported-<feature>``), else the first rule it breaks (its name
    after the suite), prefixed by the outcome where that says more; unique per draft."""
    if not cause.id.startswith("auto-"):
        return cause.id
    if cause.id in taken:
        return taken[cause.id]
    rule = (cause.rules or cause.blocks or ["unknown"])[0]
    outcome = (cause.outcomes or [""])[0]
    base = _PREFIX.get(outcome, "") + re.sub(r"[^a-z0-9]+", "-", rule.split(".", 1)[-1].lower()).strip("-")
    slug, n = base, 2
    while slug in taken.values():
        slug, n = f"{base}-{n}", n + 1
    taken[cause.id] = slug
    return slug


def read_runs(paths):
    """[(framework version, {rule: {test name: (outcome, message, root cause slug)}})] per
    results file; the slugs are the root causes the page ranks (one per cause across files)."""
    from conformance.report.rootcause import root_causes
    from conformance.results.combined import Column, RuleEntry

    entries = None
    taken: dict[str, str] = {}
    runs = []
    for path in paths:
        run = read_run(path)  # OSError, ResultsSchemaError: main says which file, exit 4
        if entries is None:
            from conformance.model.catalogue import load_catalogue

            catalogue = load_catalogue(Path(__file__).resolve().parent / "catalogue")
            entries = [RuleEntry.of(r) for r in catalogue.rules.values()]
        column = Column(label="draft", framework=run.header.adapter or "?", status="complete",
                        detail="", header=run.header, end=run.end, tests=run.tests)
        slug_of = {}
        for cause in root_causes(column, entries):
            slug = _slug_of(cause, taken)
            for nodeid in cause.tests:
                slug_of.setdefault(nodeid, slug)
        tests = defaultdict(dict)
        for record in run.tests:
            if record.rule:
                outcome = (DECLARED if record.declared_missing(run.header.unsupported)
                           else record.actual_outcome)
                tests[record.rule][test_name(record.nodeid)] = (
                    outcome, record.message or "", slug_of.get(record.nodeid, ""))
        runs.append((run.header.framework_version, tests))
    return runs


def draft_entries(runs, statements: dict[str, str] | None = None):
    """(rule, outcome, versions or None, tests or None, reason, root cause, observed message)
    for every rule that did not hold."""
    statements = _statements() if statements is None else statements
    all_versions = [version for version, _ in runs]
    rules = sorted({rule for _, tests in runs for rule in tests})
    entries = []
    for rule in rules:
        groups = defaultdict(lambda: {"versions": set(), "tests": set(), "message": "", "cause": ""})
        names = set()
        for version, tests in runs:
            for name, (outcome, message, *cause) in tests.get(rule, {}).items():
                names.add(name)
                if outcome in HELD or outcome == DECLARED:
                    continue
                group = groups[(outcome, name)]
                group["versions"].add(version)
                group["message"] = group["message"] or message
                group["cause"] = group["cause"] or (cause[0] if cause else "")
        # merge tests that failed the same way, for the same cause, on the same versions
        merged = defaultdict(lambda: {"tests": set(), "message": ""})
        for (outcome, name), group in groups.items():
            key = (outcome, tuple(sorted(group["versions"])), group["cause"])
            merged[key]["tests"].add(name)
            merged[key]["message"] = merged[key]["message"] or group["message"]
        for (outcome, versions, cause), group in sorted(merged.items()):
            whole_rule = group["tests"] == names
            entries.append((
                rule, outcome,
                None if set(versions) == set(all_versions) else list(versions),
                None if whole_rule else sorted(group["tests"]),
                _reason(outcome, statements.get(rule, ""), cause),
                cause or None, _first_line(group["message"]),
            ))
    return entries


def _first_line(message: str) -> str:
    lines = [line.strip() for line in (message or "").splitlines() if line.strip()]
    return lines[0][:300] if lines else ""


def _reason(outcome: str, statement: str, cause: str = "") -> str:
    """The draft's reason in the rule's words (never the failure message)."""
    if outcome == "CRASH":
        return "the process dies (segfault or abort) running the test"
    if outcome == "TIMEOUT":
        return "the test does not finish (a deadlock or hang)"
    if outcome == "UNSUPPORTED":
        feature = cause[len("unsupported-"):] if cause.startswith("unsupported-") else ""
        return (f"the framework lacks {feature}" if feature else "the framework lacks a feature "
                "the test needs") + " (declare it in the adapter's unsupported table if so)"
    if outcome == "LEAK":
        return "objects or memory are left behind on every run of the test"
    words = " ".join(statement.split())
    first = re.split(r"(?<=[.;])\s", words, maxsplit=1)[0] if words else ""
    return f"does not hold: {first}" if first else f"{outcome.lower()} (say what the framework does)"


def render(entries, header: str) -> str:
    out = [comment(header).rstrip(), ""]
    for entry in entries:
        rule, outcome, versions, tests, reason, *more = entry
        cause = more[0] if more else None
        observed = more[1] if len(more) > 1 else ""
        if observed:
            out.append(comment(f"observed (not a reason): {observed}"))
        out.append(f"[[{toml_string(rule)}]]")
        out.append(f"outcome = {toml_string(outcome)}")
        if cause:
            out.append(f"root_cause = {toml_string(cause)}")
        out.append(f"reason = {toml_string(reason)}")
        out.append(f"category = {toml_string(rule.split('.')[0])}")
        if versions:
            out.append(f"versions = {_toml_list(versions)}")
        if tests:
            out.append(f"tests = {_toml_list(tests)}")
        out.append("")
    return "\n".join(out)


def main(argv=None) -> int:
    parser = cli.Parser("python -m conformance.expectations_draft", __doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=cli.existing_file,
                        help="results files (--results) of one adapter")
    parser.add_argument("--header", default="", help="comment block to put first")
    args = parser.parse_args(argv)
    header = args.header or ("# Drafted by python -m conformance.expectations_draft: replace each reason\n"
                             "# (the rule's words) by what the framework does, and check the root_cause\n"
                             "# slugs group the entries that share a cause.")
    try:
        runs = read_runs(args.results)
    except (OSError, ResultsSchemaError) as exc:
        return parser.fail(exc)
    sys.stdout.write(render(draft_entries(runs), header))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
