"""The evidence entries: the observed torch 2.13 behaviour each rule rests on, as declared in
``conformance/evidence/<suite>.toml`` (the format: :mod:`conformance.evidence`, which runs and
records the snippets; this module only reads the files).
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from conformance.tomlfile import FileError, read_toml

DIRECTORY = Path(__file__).resolve().parents[1] / "evidence"
FIELDS = ("rule", "snippet", "output", "notes", "race")
SOURCE_PART = re.compile(r"^(?:evidence:(?P<suite>[a-z][a-z0-9_]*)#(?P<rule>\S+)|https://\S+)(?: .*)?$")


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
