"""From tests to the matrix: one cell per (rule, run), counts per (suite, run).

A rule has one or more tests; its cell shows the most severe outcome of them, so one diverging
test makes the rule diverge. Denominators come from the catalogue (rules) and from the largest
number of tests any run recorded for a suite, so a run that lost tests shows them as NOT RUN
instead of looking green.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from conformance import outcomes
from conformance.outcomes import NOT_INSTALLED, NOT_RUN, SEVERITY, worst

#: Final outcomes, most severe first (the cell of a rule shows the first that occurs); the
#: order is conformance.outcomes'; a missing test (NOT RUN) comes before all.
FINAL_SEVERITY = (NOT_RUN, *(o.value for o in SEVERITY))
#: What the framework did (before expectations), most severe first.
ACTUAL_SEVERITY = (NOT_RUN, *(o.value for o in outcomes.ACTUAL_SEVERITY))
#: Actual outcomes that count as breaking a rule.
BROKEN = tuple(o.value for o in outcomes.BROKEN)
HELD = tuple(o.value for o in outcomes.HELD)

STYLE = {  # outcome -> (symbol, css class, meaning)
    "PASS": ("✓", "pass", "the rule holds"),
    "OBSERVED": ("◉", "observed", "implementation-defined: recorded what the framework does"),
    "DIVERGES": ("✗", "diverges", "the framework breaks the rule"),
    "XFAIL": ("≈", "xfail", "breaks the rule, as its expectations file says"),
    "XPASS": ("★", "xpass", "expected to break the rule but it held: remove the expectation"),
    "UNSUPPORTED": ("∅", "unsupported", "the framework lacks a feature the rule needs"),
    "ERROR": ("!", "error", "the test broke (not a verdict on the rule)"),
    "CRASH": ("☠", "crash", "the process died running the test"),
    "BLOCKED": ("⊘", "blocked", "a prerequisite rule failed first (blocked_by names it)"),
    "TIMEOUT": ("⌛", "timeout", "the test ran out of time"),
    "LEAK": ("♒", "leak", "held, but left objects or memory behind on every run"),
    NOT_RUN: ("·", "notrun", "no result: the test did not run in this run"),
    NOT_INSTALLED: ("—", "notinstalled", "the framework could not be installed"),
}


def column_title(run: dict[str, Any]) -> str:
    version = run.get("framework_version")
    return f"{run['framework']} {version}" if version and run["framework"] != "reference" \
        else run["framework"]


def expected_tests(data: dict[str, Any]) -> dict[str, set[str]]:
    """rule -> the test names (nodeid after the file) any run recorded for it."""
    out: dict[str, set[str]] = defaultdict(set)
    for run in data["runs"]:
        for t in run["tests"]:
            if t.get("rule"):
                out[t["rule"]].add(t["nodeid"].split("::", 1)[-1])
    return out


def cells(data: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(rule id, run label) -> {outcome, actual, tests, expectation}."""
    expected = expected_tests(data)
    out = {}
    for run in data["runs"]:
        by_rule: dict[str, list] = defaultdict(list)
        for t in run["tests"]:
            by_rule[t.get("rule") or "?"].append(t)
        for entry in data["catalogue"]:
            rid = entry["id"]
            if run["status"] in ("not-installed", "missing"):
                out[(rid, run["label"])] = {"outcome": "NOT INSTALLED" if run["status"] ==
                                            "not-installed" else "NOT RUN",
                                            "actual": "NOT RUN", "tests": [], "expectation": None}
                continue
            tests = list(by_rule.get(rid, []))
            have = {t["nodeid"].split("::", 1)[-1] for t in tests}
            for name in sorted(expected.get(rid, set()) - have):
                tests.append({"nodeid": name, "rule": rid, "outcome": "NOT RUN",
                              "actual": "NOT RUN", "message": "this run has no result for the "
                              "test (other runs do)", "expectation": None, "duration": 0,
                              "observed": None})
            if not tests:
                tests = [{"nodeid": "(none)", "rule": rid, "outcome": "NOT RUN",
                          "actual": "NOT RUN", "message": "no test of this rule ran",
                          "expectation": None, "duration": 0, "observed": None}]
            outcome = worst({t["outcome"] or "ERROR" for t in tests}, SEVERITY)
            actual = worst({t["actual"] or t["outcome"] or "ERROR" for t in tests},
                           outcomes.ACTUAL_SEVERITY)
            expectation = next((t["expectation"] for t in tests if t.get("expectation")), None)
            out[(rid, run["label"])] = {"outcome": outcome, "actual": actual, "tests": tests,
                                        "expectation": expectation}
    return out


def broken(cell: dict[str, Any]) -> bool:
    return cell["actual"] in BROKEN


def suite_counts(data, table) -> dict[tuple[str, str], dict[str, Any]]:
    """(suite, run label) -> rule outcome counts, rules held / rules, tests recorded / tests."""
    expected = expected_tests(data)
    out = {}
    suites = sorted({e["suite"] for e in data["catalogue"]})
    for run in data["runs"]:
        for suite in suites:
            rules = [e["id"] for e in data["catalogue"] if e["suite"] == suite]
            counts = Counter(table[(r, run["label"])]["outcome"] for r in rules)
            held = sum(table[(r, run["label"])]["actual"] in HELD for r in rules)
            n_tests = sum(max(len(expected.get(r, ())), 1) for r in rules)
            recorded = sum(1 for t in run["tests"] if t.get("suite") == suite)
            out[(suite, run["label"])] = {"counts": dict(counts), "held": held,
                                          "rules": len(rules), "tests": recorded,
                                          "tests_expected": n_tests}
    return out


def only_one(data, table) -> list[dict[str, Any]]:
    """Rules that exactly one column breaks, and rules that only one framework (any of its
    versions) breaks, with who."""
    out = []
    for entry in data["catalogue"]:
        who = [run for run in data["runs"] if broken(table[(entry["id"], run["label"])])]
        frameworks = {run["framework"] for run in who}
        if len(who) == 1:
            out.append({"rule": entry["id"], "suite": entry["suite"], "scope": "column",
                        "who": column_title(who[0]), "label": who[0]["label"]})
        elif len(frameworks) == 1 and who:
            out.append({"rule": entry["id"], "suite": entry["suite"], "scope": "framework",
                        "who": who[0]["framework"] + " (all versions tested: "
                        + ", ".join(column_title(r) for r in who) + ")",
                        "label": who[0]["label"]})
    return out
