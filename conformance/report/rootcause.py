"""Root causes of one run, ranked: what a framework author fixes first.

A root cause gathers the tests that fail for one reason:

* the expectations' ``root_cause`` slug, where the test's expectation entry has one (its
  ``reason`` is the one-line statement, shared by every entry of that slug);
* an UNSUPPORTED test without one: its record's ``missing_feature`` (``unsupported-<feature>``);
  for a feature the adapter declares missing (the run header's ``unsupported`` table) the
  declaration's reason is the statement (``source`` "declaration"): the adapter's declaration
  is the cause, with no expectation entry restating it;
* otherwise a cluster: tests whose framework outcome and normalised message agree (numbers,
  addresses and quoted values blanked out; a message too short to tell causes apart is
  clustered per rule).

A BLOCKED test belongs to the root cause of the rule named in its ``blocked_by``: that cause
*blocks* the test's rule. Rank: causes that break rules (DIVERGES, ERROR, CRASH, TIMEOUT, LEAK)
come first (``kind`` "breaks": what an author fixes first; a cause known only from the tests it
blocks too), causes whose tests are only UNSUPPORTED (a missing feature, ``kind``
"unsupported") after them, even when they block other rules; within each kind,
the number of rules a cause breaks plus those it blocks (most first), then MUST before SHOULD,
then suite order of its first rule.

A cause carries what its witness (conformance/witness.py) did in the run, where the run
recorded one (``witness``: status, output, script, ``fixed``): a witness that no longer
reproduces its cause marks it "fixed?" (the cause is wrong until someone looks); older runs,
and causes found by clustering, have None.
"""
from __future__ import annotations

import hashlib
import re
from typing import Any, Iterable

from conformance.model.causes import KINDS, kind_of
from conformance.outcomes import HELD, Outcome
from conformance.results.combined import Column, RuleEntry
from conformance.results.root_causes import CauseWitness, RankedCause

LEVELS = ("MUST", "SHOULD", "IMPLEMENTATION-DEFINED")
#: Actual outcomes that start a root cause (held and BLOCKED tests never do).
CAUSES = tuple(o.value for o in Outcome if o not in HELD and o is not Outcome.BLOCKED
               and o not in (Outcome.XFAIL, Outcome.XPASS))

_NOISE = [
    (re.compile(r"0x[0-9a-fA-F]+"), "0x…"),
    (re.compile(r"'[^']{0,80}'|\"[^\"]{0,80}\""), "'…'"),
    (re.compile(r"(?<![A-Za-z_])[-+]?\d+(\.\d+)?(e[-+]?\d+)?"), "N"),
    (re.compile(r"\s+"), " "),
]


def normalise(message: str) -> str:
    """The first line of a message with what varies from test to test blanked out."""
    line = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    for pattern, repl in _NOISE:
        line = pattern.sub(repl, line)
    return line.strip()[:200]


_NO_ATTRIBUTE = re.compile(r"has no attribute '([^']+)'")


def missing_attribute(message: str) -> str | None:
    """The attribute an AttributeError's message says is missing: distinct missing attributes
    are distinct causes, which the blanking of quoted names by :func:`normalise` would
    otherwise merge into one. (An UNSUPPORTED test's feature is its record's
    ``missing_feature``, never read from the message.)"""
    first = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    found = _NO_ATTRIBUTE.search(first)
    return found.group(1) if found else None


def _informative(text: str) -> bool:
    """Whether a normalised message says enough to join tests of different rules."""
    body = text.split(":", 1)[1] if ":" in text else text
    return len(re.findall(r"[A-Za-z_]{3,}", body)) >= 3


def _level_rank(level: str | None) -> int:
    return LEVELS.index(level) if level in LEVELS else len(LEVELS)


def root_causes(run: Column, catalogue: Iterable[RuleEntry]) -> list[RankedCause]:
    """The ranked root causes of ``run`` (a column of results.json), typed
    (:class:`conformance.results.root_causes.RankedCause`); ``catalogue``: its rules, in suite
    order."""
    entries = list(catalogue)
    order = {e.id: i for i, e in enumerate(entries)}
    level_of = {e.id: e.level or None for e in entries}
    groups: dict[tuple, dict[str, Any]] = {}
    cause_of_rule: dict[str, tuple] = {}
    blocked = []
    declared = run.header.unsupported or {}
    for t in run.tests:
        actual = t.actual_outcome
        rule = t.rule or "?"
        if actual == Outcome.BLOCKED.value:
            blocked.append(t)
            continue
        if actual not in CAUSES:
            continue
        if t.expected_cause:
            key = ("expectation", t.expected_cause)
            summary, source, slug = t.expected_reason or t.expected_cause, "expectation", \
                t.expected_cause
        elif actual == Outcome.UNSUPPORTED.value and t.missing_feature:
            # a missing feature is a cause of its own, named by the test record; one the
            # adapter declares has the declaration's reason as its statement
            feature = t.missing_feature
            key = ("missing", feature)
            if feature in declared:
                summary, source = (f"{run.framework} does not support {feature}: "
                                   f"{declared[feature]} (declared in the adapter)"), "declaration"
            else:
                summary, source = _summary(actual, t.message or "", rule), "cluster"
            slug = f"unsupported-{feature}"
        else:
            text = normalise(t.message or "")
            missing = missing_attribute(t.message or "")
            key = (("missing", actual, missing) if missing else
                   ("cluster", actual, text) if _informative(text) else ("cluster", actual, text,
                                                                         rule))
            summary = t.expected_reason or _summary(actual, t.message or "", rule)
            source, slug = "cluster", None
        group = groups.setdefault(key, {"slug": slug, "summary": summary, "source": source,
                                        "outcomes": set(), "rules": [], "tests": [],
                                        "blocks": [], "messages": []})
        group["outcomes"].add(actual)
        if rule not in group["rules"]:
            group["rules"].append(rule)
        group["tests"].append(t.nodeid)
        if t.message and t.message.strip() and len(group["messages"]) < 1:
            group["messages"].append(t.message.strip().splitlines()[0][:300])
        cause_of_rule.setdefault(rule, key)
    for t in blocked:
        by = t.blocked_by or "?"
        key = cause_of_rule.get(by)
        if key is None:  # the prerequisite did not fail here with a cause of its own
            key = ("blocked", by)
            groups.setdefault(key, {"slug": None, "source": "cluster", "outcomes": set(),
                                    "summary": f"prerequisite {by} fails (no result of its own "
                                               f"in this run)", "rules": [], "tests": [],
                                    "blocks": [], "messages": []})
        group = groups[key]
        rule = t.rule or "?"
        if rule not in group["blocks"] and rule not in group["rules"]:
            group["blocks"].append(rule)
        group["tests"].append(t.nodeid)
    out: list[tuple[tuple, RankedCause]] = []
    witnesses = {w.cause: w for w in run.witnesses}
    for key, g in groups.items():
        rules = sorted(g["rules"], key=lambda r: order.get(r, len(order)))
        blocks = sorted(g["blocks"], key=lambda r: order.get(r, len(order)))
        level = min((_level_rank(level_of.get(r)) for r in rules + blocks), default=len(LEVELS))
        first = min((order.get(r, len(order)) for r in rules + blocks), default=len(order))
        ident = g["slug"] or "auto-" + hashlib.sha1(repr(key).encode()).hexdigest()[:8]
        # only a missing feature: ranked after every cause that breaks or blocks a rule
        kind = kind_of(g["outcomes"])
        cause = RankedCause(id=ident, summary=g["summary"], source=g["source"], kind=kind,
                            outcomes=sorted(g["outcomes"]), rules=rules, tests=g["tests"],
                            blocks=blocks, level=LEVELS[level] if level < len(LEVELS) else None,
                            message=g["messages"][0] if g["messages"] else "",
                            witness=CauseWitness.of(witnesses.get(ident)))
        out.append(((KINDS.index(kind), -(len(rules) + len(blocks)), level, first), cause))
    out.sort(key=lambda ranked: ranked[0])
    for rank, (_, cause) in enumerate(out, 1):
        cause.rank = rank
    return [cause for _, cause in out]


def unranked_witnesses(run: Column) -> list[Any]:
    """The run's witness records of causes that are not among its ranked root causes (no
    test of theirs failed in this run), ``no witness`` left out."""
    ranked = {c.id for c in run.root_causes}
    return [w for w in run.witnesses if w.cause not in ranked and w.status != "no witness"]


def _summary(actual: str, message: str, rule: str) -> str:
    first = message.strip().splitlines()[0] if message.strip() else ""
    if actual == Outcome.CRASH.value:
        return f"the process dies running {rule}" + (f": {first}" if first else "")
    if actual == Outcome.TIMEOUT.value:
        return f"{rule} does not finish (deadlock or hang)"
    if actual == Outcome.LEAK.value:
        return f"{rule} leaves objects or memory behind on every run"
    return first[:200] or f"{rule}: {actual}"
