"""Draft an expectations file from results runs, so that the diff is the review.

    python -m conformance.expectations_draft reports/results/oneflow-0.9.0.jsonl \\
        reports/results/oneflow-0.8.0.jsonl > adapters/expectations/oneflow.toml

Each rule that did not hold in some run gets entries saying what happened instead, with
the observed message as the reason (review and sharpen it before committing), limited
to the framework versions (``versions``) and the tests (``tests``) where it happened.
Outcomes are read from the ``actual`` field, so a run made with an older expectations file
drafts the same entries as a run made with none. Rules that held everywhere get nothing,
and neither does a BLOCKED test (a cascade from its prerequisite rule needs no entry) nor an
UNSUPPORTED test whose missing feature the adapter declares (the declaration is its cause).
"""
from __future__ import annotations

import sys
from collections import defaultdict

from conformance import cli
from conformance.outcomes import ACTUAL, EXPECTABLE, HELD as _HELD, Outcome
from conformance.results import ResultsSchemaError, read_run, test_name

#: What drafting does with each outcome a test can actually have: an entry, or nothing.
DRAFTED = frozenset(o.value for o in EXPECTABLE)
NOT_DRAFTED = frozenset({*(o.value for o in _HELD), Outcome.BLOCKED.value})
HELD = NOT_DRAFTED  # (name kept for callers: outcomes that get no entry)
#: What :func:`read_runs` records for an UNSUPPORTED test on a feature the adapter declares
#: missing (the run header's ``unsupported``): it gets no entry either.
DECLARED = "UNSUPPORTED (declared)"
assert DRAFTED | NOT_DRAFTED == {o.value for o in ACTUAL}, "an outcome drafting does not handle"


def read_runs(paths):
    """[(framework version, {rule: {test name: (outcome, message)}})] per results file."""
    runs = []
    for path in paths:
        run = read_run(path)  # OSError, ResultsSchemaError: main says which file, exit 4
        tests = defaultdict(dict)
        for record in run.tests:
            if record.rule:
                outcome = (DECLARED if record.declared_missing(run.header.unsupported)
                           else record.actual_outcome)
                tests[record.rule][test_name(record.nodeid)] = (outcome, record.message or "")
        runs.append((run.header.framework_version, tests))
    return runs


def draft_entries(runs):
    """(rule, outcome, versions or None, tests or None, reason) for every rule that did not hold."""
    all_versions = [version for version, _ in runs]
    rules = sorted({rule for _, tests in runs for rule in tests})
    entries = []
    for rule in rules:
        groups = defaultdict(lambda: {"versions": set(), "tests": set(), "message": ""})
        names = set()
        for version, tests in runs:
            for name, (outcome, message) in tests.get(rule, {}).items():
                names.add(name)
                if outcome in HELD or outcome == DECLARED:
                    continue
                group = groups[(outcome, name)]
                group["versions"].add(version)
                group["message"] = group["message"] or message
        # merge tests that failed the same way on the same versions
        merged = defaultdict(lambda: {"tests": set(), "message": ""})
        for (outcome, name), group in groups.items():
            key = (outcome, tuple(sorted(group["versions"])))
            merged[key]["tests"].add(name)
            merged[key]["message"] = merged[key]["message"] or group["message"]
        for (outcome, versions), group in sorted(merged.items()):
            whole_rule = group["tests"] == names
            entries.append((
                rule, outcome,
                None if set(versions) == set(all_versions) else list(versions),
                None if whole_rule else sorted(group["tests"]),
                _reason(outcome, group["message"]),
            ))
    return entries


def _reason(outcome: str, message: str) -> str:
    if outcome == "CRASH":
        return "the process died (segfault) while running the test"
    if outcome == "UNSUPPORTED":
        return message.splitlines()[0] if message else "the framework lacks the feature"
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    text = " ".join(lines[:2]) if lines else outcome.lower()
    return text[:300]


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string. Why not ``json.dumps``: a results file's rule id or
    message (data) must never become TOML structure (a quote and a newline in a rule id
    drafted a key of its own), and JSON's escapes are not all TOML's: DEL must be escaped,
    and a lone surrogate (from an undecodable byte) has no TOML form, so it becomes U+FFFD."""
    out = []
    for c in str(text):
        if c in '"\\':
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\u{ord(c):04x}")
        elif 0xD800 <= ord(c) <= 0xDFFF:
            out.append("\ufffd")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def _toml_list(items) -> str:
    return "[" + ", ".join(toml_string(i) for i in items) + "]"


def comment(header: str) -> str:
    """``--header`` as TOML comment lines: a line without ``#`` is prefixed with one (it would
    be TOML), and what a comment cannot hold (control characters but tab, lone surrogates)
    becomes U+FFFD."""
    def clean(line: str) -> str:
        return "".join("\ufffd" if (ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F
                       or 0xD800 <= ord(c) <= 0xDFFF else c for c in line)

    return "\n".join(line if not line.strip() or line.lstrip().startswith("#") else f"# {line}"
                     for line in map(clean, header.splitlines()))


def render(entries, header: str) -> str:
    out = [comment(header).rstrip(), ""]
    for rule, outcome, versions, tests, reason in entries:
        out.append(f"[[{toml_string(rule)}]]")
        out.append(f"outcome = {toml_string(outcome)}")
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
    header = args.header or "# Drafted by python -m conformance.expectations_draft; review the reasons."
    try:
        runs = read_runs(args.results)
    except (OSError, ResultsSchemaError) as exc:
        return parser.fail(exc)
    sys.stdout.write(render(draft_entries(runs), header))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
