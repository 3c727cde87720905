"""Evidence: the observed torch 2.13 behaviour each rule rests on, kept beside the catalogue.

One file per suite, ``conformance/evidence/<suite>.toml``, holds ``[[evidence]]`` entries:

    [[evidence]]
    rule = "<suite>.<rule-name>"     # the rule this entry grounds (one entry per rule)
    snippet = '''...'''              # Python run after PRELUDE below, in a fresh namespace
    output = '''...'''               # what the snippet printed on torch 2.13 (recorded, not typed)
    notes = "..."                    # optional: what the output shows, in plain words
    race = "..."                     # optional: why the output can differ in some runs (a race in
                                     # the framework itself); a check re-runs such a snippet
                                     # before it reports a difference

A rule's ``source`` in the catalogue names its entry as ``evidence:<suite>#<rule id>`` (and/or
public URLs). ``python -m conformance.evidence --record`` runs every snippet and writes the
outputs back; ``--check`` (the project test does the same) re-runs them and compares.

Why snippets and recorded output rather than prose: a reader can run the snippet and see the
same thing; a torch upgrade that changes the behaviour shows up as a failing comparison.
Snippets print only stable facts (booleans, values, exception class and first message line),
never addresses or paths.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from conformance.evidence import runner
from conformance.tomlfile import FileError, read_toml

DIRECTORY = Path(__file__).resolve().parent
FIELDS = ("rule", "snippet", "output", "notes", "race")
TORCH_VERSION = "2.13"
SOURCE_PART = re.compile(r"^(?:evidence:(?P<suite>[a-z][a-z0-9_]*)#(?P<rule>\S+)|https://\S+)(?: .*)?$")

PRELUDE = '''\
import gc, sys, threading, warnings, weakref
import torch
try:
    import torch.autograd.forward_ad as fwAD
except ImportError as missing:  # a release before forward-mode AD: using fwAD raises this
    class _Absent:
        def __getattr__(self, name, _text=str(missing)):
            raise ImportError(_text)
    fwAD = _Absent()

def attempt(fn):
    """Call fn(); print 'ok' or 'raises <Class>: <first line of the message>'."""
    try:
        fn()
    except Exception as exc:
        print(f"raises {type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}")
    else:
        print("ok")

def warns(fn):
    """Call fn(); print each warning as '<Category>: <first line>', or 'no warning'."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    for w in caught:
        text = str(w.message).strip().splitlines()[0].split(" (Triggered internally at")[0]
        print(f"{w.category.__name__}: {text}")
    if not caught:
        print("no warning")
'''


#: how often a check runs a snippet with a ``race`` before it reports a difference
RERUNS = 4


class EvidenceError(FileError):
    """An evidence file breaks the format above."""


@dataclasses.dataclass(frozen=True)
class Evidence:
    rule: str
    snippet: str
    output: str
    notes: str
    file: Path
    race: str = ""          # why the output can differ in some runs (RERUNS before a difference)

    @property
    def suite(self) -> str:
        return self.rule.partition(".")[0]


def load(directory: Path = DIRECTORY) -> dict[str, Evidence]:
    """Every entry of every ``<suite>.toml`` in ``directory``, by rule id."""
    found: dict[str, Evidence] = {}
    for path in sorted(Path(directory).glob("*.toml")):
        data = read_toml(path, EvidenceError)
        extra = sorted(set(data) - {"evidence"})
        if extra:
            raise EvidenceError(f"{path}: unexpected top-level key(s) {', '.join(extra)}")
        for index, entry in enumerate(data.get("evidence", [])):
            where = f"{path}: entry #{index + 1}"
            unknown = sorted(set(entry) - set(FIELDS))
            if unknown:
                raise EvidenceError(f"{where}: unknown field(s) {', '.join(unknown)}")
            rule = entry.get("rule")
            if not isinstance(rule, str) or rule.partition(".")[0] != path.stem:
                raise EvidenceError(f"{where}: 'rule' must be a rule id of suite {path.stem!r}")
            if not isinstance(entry.get("snippet"), str) or not entry["snippet"].strip():
                raise EvidenceError(f"{where} ({rule}): 'snippet' is missing")
            if rule in found:
                raise EvidenceError(f"{where}: a second entry for {rule!r}")
            found[rule] = Evidence(rule=rule, snippet=entry["snippet"], output=entry.get("output", ""),
                                   notes=entry.get("notes", ""), file=path,
                                   race=entry.get("race", ""))
    return found


def source_problems(rule_id: str, source: str, evidence: dict[str, Evidence]) -> list[str]:
    """Why a rule's ``source`` does not point into this repository's evidence or to a public URL."""
    problems = []
    for part in (p.strip() for p in source.split(";")):
        match = SOURCE_PART.match(part)
        if not match:
            problems.append(f"{rule_id}: source part {part!r} is neither "
                            f"'evidence:<suite>#<rule id>' nor an https:// URL")
        elif match["rule"] and match["rule"] not in evidence:
            problems.append(f"{rule_id}: source names {match['rule']!r}, which has no entry in "
                            f"conformance/evidence/{match['suite']}.toml")
        elif match["rule"] and evidence[match["rule"]].suite != match["suite"]:
            problems.append(f"{rule_id}: source names the wrong suite file for {match['rule']!r}")
    return problems


def run_snippet(snippet: str) -> str:
    """What ``snippet`` prints after the prelude (conformance/evidence/runner.py runs it)."""
    return runner.run_snippet(PRELUDE, snippet)


def normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())
