"""The rule catalogue: every ``<suite>.toml`` file, loaded and validated.

Why validate strictly: a rule is the unit a framework author reads in a report; a typo'd
level or a rule filed under the wrong suite would silently change what a result means.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from conformance.tomlfile import FileError, read_toml

LEVELS = ("MUST", "SHOULD", "IMPLEMENTATION-DEFINED")
FIELDS = ("id", "level", "statement", "rationale", "source")
ID_PATTERN = re.compile(r"^(?P<suite>[a-z][a-z0-9_]*)\.[a-z0-9]+(-[a-z0-9]+)*$")


class CatalogueError(FileError):
    """A catalogue file breaks the format of docs/writing-rules.md."""


@dataclasses.dataclass(frozen=True)
class Rule:
    id: str
    level: str
    statement: str
    rationale: str
    source: str
    file: Path
    #: the features the rule's behaviour is about (names of conformance/features.toml): a
    #: framework that lacks one cannot be judged on it (UNSUPPORTED); any other feature its
    #: tests touch is a side observation (``conformance.api.aside``), skipped and recorded
    subject: tuple[str, ...] = ()

    @property
    def suite(self) -> str:
        return self.id.partition(".")[0]


@dataclasses.dataclass
class Catalogue:
    """All rules by id, and the suites (file stems) they came from."""

    directory: Path
    rules: dict[str, Rule]
    suites: tuple[str, ...]

    def __contains__(self, rule_id: object) -> bool:
        return rule_id in self.rules

    def get(self, rule_id: str) -> Rule | None:
        return self.rules.get(rule_id)

    def of_suite(self, suite: str) -> list[Rule]:
        return [r for r in self.rules.values() if r.suite == suite]


def _parse_rule(path: Path, index: int, entry: object, suite: str) -> Rule:
    where = f"{path}: rule #{index + 1}"
    if not isinstance(entry, dict):
        raise CatalogueError(f"{where}: must be a [[rule]] table")
    rule_id = entry.get("id")
    if isinstance(rule_id, str):
        where = f"{path}: rule {rule_id!r}"
    unknown = sorted(set(entry) - set(FIELDS) - {"subject"})
    if unknown:
        raise CatalogueError(f"{where}: unknown field(s) {', '.join(unknown)}; "
                             f"a rule has exactly: {', '.join(FIELDS)} (and may have subject)")
    subject = entry.get("subject", [])
    if not isinstance(subject, list) or not all(isinstance(f, str) and f for f in subject):
        raise CatalogueError(f"{where}: subject must be a list of feature names "
                             f"(conformance/features.toml), e.g. subject = [\"graph_nodes\"]")
    for field in FIELDS:
        value = entry.get(field)
        if not isinstance(value, str) or not value.strip():
            raise CatalogueError(f"{where}: field {field!r} is missing or not a non-empty string")
    match = ID_PATTERN.match(rule_id)
    if not match:
        raise CatalogueError(f"{where}: id must look like <suite>.<kebab-case-name>, "
                             f"e.g. {suite}.grad-stable-id")
    if match["suite"] != suite:
        raise CatalogueError(f"{where}: id prefix {match['suite']!r} must equal the file's "
                             f"suite name {suite!r}; move the rule or rename it")
    if entry["level"] not in LEVELS:
        raise CatalogueError(f"{where}: level {entry['level']!r} is not one of {', '.join(LEVELS)}")
    return Rule(file=path, subject=tuple(subject), **{f: entry[f] for f in FIELDS})


def load_catalogue(directory: Path) -> Catalogue:
    """Load and validate every ``*.toml`` in ``directory`` (raises CatalogueError)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise CatalogueError(f"{directory}: rule catalogue directory not found; set the ini "
                             f"option conformance_catalogue to where <suite>.toml files are")
    rules: dict[str, Rule] = {}
    suites = []
    for path in sorted(directory.glob("*.toml")):
        suite = path.stem
        suites.append(suite)
        data = read_toml(path, CatalogueError)
        extra = sorted(set(data) - {"rule"})
        if extra:
            raise CatalogueError(f"{path}: unexpected top-level key(s) {', '.join(extra)}; "
                                 f"rules go in [[rule]] tables")
        entries = data.get("rule", [])
        if not isinstance(entries, list):
            raise CatalogueError(f"{path}: 'rule' must be an array of tables ([[rule]])")
        for index, entry in enumerate(entries):
            rule = _parse_rule(path, index, entry, suite)
            if rule.id in rules:
                raise CatalogueError(f"{path}: rule {rule.id!r} is defined twice "
                                     f"(also in {rules[rule.id].file})")
            rules[rule.id] = rule
    return Catalogue(directory=directory, rules=rules, suites=tuple(suites))
