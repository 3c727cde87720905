"""Expected outcomes of one adapter: data next to the tests, never inside them.

Why a data file: a framework's known divergences are facts about the framework (with a
reason and an upstream link), reviewable as a diff, and strict: an expected divergence that
starts passing fails the run, so the file cannot rot.

Format (``adapters/expectations/<adapter>.toml``; no file means no expectations)::

    ["identity.grad-stable-id"]          # a rule id from the catalogue (quoted or dotted)
    outcome = "DIVERGES"                 # DIVERGES | UNSUPPORTED | ERROR | CRASH | TIMEOUT | LEAK,
                                         # or a list for a flaky framework: the usual outcome
                                         # first, then others seen in some runs (["TIMEOUT", "PASS"])
    reason = "id(a.grad) changes between reads"      # required: one line an author recognises
    root_cause = "grad-wrapper-per-read"  # optional slug shared by every entry one cause breaks
    category = "identity"                # optional, free text for grouping
    upstream = "https://github.com/..."  # optional
    versions = ["0.8.*"]                 # optional fnmatch patterns on the framework version
    tests = ["test_name*"]               # optional fnmatch patterns on the test names
    witness = '''...'''                  # optional: a standalone script (<= 15 lines, the framework
                                         # only, bound as ``fw`` after the adapter's preamble) that
                                         # exits non-zero where the framework shows the root cause
                                         # (conformance/witness.py runs them)
    home = true                          # this entry's rule is the root cause's home rule
    independent = "why"                  # a DIVERGES on another rule with the same cause that is
                                         # not a cascade of the home rule says why

A top-level ``written_for = ["2.13.*", "2.15.*"]`` names the framework versions whose runs
the file was written from (fnmatch patterns, like ``versions``); a run of any other version
says so in its results header and on the page (``coverage_note``), since its outcomes were
never reviewed. A file without it makes no such claim.

A top-level ``[[differential]]`` array names the differential search's divergences the file
explains (``python -m conformance.differential``): a divergence whose signature starts with
``signature`` is the root cause ``root_cause`` of rule ``rule``, whose entry in this file (with
that ``root_cause``) gives the reason::

    [[differential]]
    signature = "engine|Backward/Grad|error:freed/none"
    rule = "engine.second-backward-error"
    root_cause = "graph-never-freed"

The file is read once per run (:func:`read`, cached per file): the plugin, the witnesses, the
cascades check and the differential tester all take its typed :class:`ExpectationsFile`.

A rule whose expectation differs between versions, or between its tests, uses an array of
tables, ``[["identity.grad-stable-id"]]``, one entry per version set (and test set). For a
test, an entry naming it in ``tests`` wins over an entry for the whole rule; at most one of
each kind may apply.
"""
from __future__ import annotations

import collections
import dataclasses
import difflib
import fnmatch
import os
import re
from pathlib import Path
from typing import Any, Iterable, Iterator

from conformance.outcomes import EXPECTABLE, HELD, Outcome
from conformance.results import naming
from conformance.tomlfile import FileError, read_toml

FIELDS = {"outcome", "reason", "root_cause", "category", "upstream", "versions", "tests",
          "witness", "home", "independent"}
#: A root cause slug: lower-case words joined by hyphens ("register-hook-returns-none").
ROOT_CAUSE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


class ExpectationsError(FileError):
    """An expectations file is malformed or names a rule that does not exist."""


@dataclasses.dataclass(frozen=True)
class Expectation:
    rule: str
    outcome: Outcome
    reason: str
    file: Path
    category: str = ""
    upstream: str = ""
    root_cause: str = ""
    versions: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()
    flaky: tuple[Outcome, ...] = ()  # other outcomes accepted in some runs
    witness: str = ""        # a script that reproduces the root cause (conformance/witness.py)
    home: bool = False       # the root cause's home rule
    independent: str = ""    # why a DIVERGES here is no cascade of the home rule

    def applies_to(self, version: str) -> bool:
        return not self.versions or any(fnmatch.fnmatchcase(version, v) for v in self.versions)

    def names_test(self, test_name: str) -> bool:
        """Exact names first: a parametrized name's ``[...]`` is not a pattern class here."""
        return any(test_name == pattern or fnmatch.fnmatchcase(test_name, pattern)
                   for pattern in self.tests)

    def where(self) -> str:
        return f"{self.file} [{self.rule}]"

    def as_json(self) -> dict[str, Any]:
        return {"outcome": str(self.outcome), "flaky": [str(o) for o in self.flaky],
                "reason": self.reason, "root_cause": self.root_cause, "category": self.category,
                "upstream": self.upstream, "versions": list(self.versions),
                "tests": list(self.tests), "file": str(self.file)}


class ExpectationSet(dict):
    """rule id -> the whole-rule expectation; plus per-test entries, found by ``get``."""

    def __init__(self):
        super().__init__()
        self.per_test: dict[str, list[Expectation]] = {}

    def get(self, rule_id: str, test_name: str | None = None, default=None):
        """The expectation for ``test_name`` of ``rule_id`` (a per-test entry first)."""
        if test_name is not None:
            base, function = naming.test_name(test_name), naming.function_name(test_name)
            for exp in self.per_test.get(rule_id, ()):
                if exp.names_test(base) or exp.names_test(function):
                    return exp
        return super().get(rule_id, default)

    def __len__(self) -> int:
        return super().__len__() + sum(len(v) for v in self.per_test.values())


def _entries(data: dict, prefix: str = "") -> Iterable[tuple[str, Any]]:
    """(rule id, table or list of tables); dotted keys written bare become nested tables."""
    for key, value in data.items():
        rule_id = f"{prefix}{key}"
        if isinstance(value, dict) and not (set(value) & FIELDS):
            yield from _entries(value, prefix=f"{rule_id}.")
        else:
            yield rule_id, value


def _line_of(path: Path, rule_id: str, key: str | None = None) -> int | None:
    """The line of ``rule_id``'s table header (or of ``key`` inside it), for messages."""
    import re

    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    quoted = re.escape(rule_id)
    header = re.compile(rf'^\s*\[\[?\s*(?:"{quoted}"|\'{quoted}\'|{quoted})\s*\]\]?')
    for number, text in enumerate(lines, 1):
        if header.match(text):
            if key is None:
                return number
            for offset, inner in enumerate(lines[number:], number + 1):
                if inner.lstrip().startswith("["):
                    break
                if re.match(rf"^\s*{re.escape(key)}\s*=", inner):
                    return offset
            return number
    return None


def _at(path: Path, rule_id: str, key: str | None = None) -> str:
    """`` (line N)``, appended to a message about ``rule_id``'s entry (or its ``key``)."""
    line = _line_of(path, rule_id, key)
    return f" (line {line})" if line else ""


@dataclasses.dataclass(frozen=True)
class Differential:
    """A differential-search divergence the file explains: a signature starting with
    ``signature`` is the root cause ``root_cause`` of ``rule`` (``reason``: that entry's)."""

    signature: str
    rule: str
    root_cause: str
    reason: str


@dataclasses.dataclass(frozen=True)
class ExpectationsFile:
    """One expectations file, parsed and validated whole (every entry, every version)."""

    path: Path
    written_for: tuple[str, ...] = ()
    entries: tuple[Expectation, ...] = ()
    differential: tuple[Differential, ...] = ()

    def explaining(self, signature: str) -> Differential | None:
        """The ``[[differential]]`` entry whose signature prefix ``signature`` starts with."""
        return next((d for d in self.differential if signature.startswith(d.signature)), None)


#: How many times each expectations file was parsed in this process (a project test holds a
#: run to one per file).
READS: collections.Counter = collections.Counter()
_FILES: dict[tuple, ExpectationsFile] = {}


def read(path: Path) -> ExpectationsFile:
    """The expectations file ``path``, typed (ExpectationsError for a malformed one): parsed
    once per file, then served from a cache keyed by the file and its state (an edit between
    two calls is read again). A missing file is an empty one: no expectations."""
    path = Path(path)
    try:
        st = os.stat(path)
    except OSError:
        return ExpectationsFile(path)
    key = (str(path.resolve()), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if key not in _FILES:
        READS[key[0]] += 1
        for stale in [k for k in _FILES if k[0] == key[0]]:  # the file's earlier state
            del _FILES[stale]
        _FILES[key] = _read(path)
    found = _FILES[key]
    return found if found.path == path else dataclasses.replace(found, path=path)


def _read(path: Path) -> ExpectationsFile:
    data = read_toml(path, ExpectationsError)
    written_for = _written_for(path, data)  # the file's own keys, not entries
    differential = data.pop(DIFFERENTIAL, [])
    entries = []
    statements: dict[str, tuple[str, str]] = {}  # root cause -> (reason, rule of its first entry)
    for rule_id, value in _entries(data):
        for table in value if isinstance(value, list) else [value]:
            exp = _parse(path, rule_id, table)
            if exp.root_cause:
                first = statements.setdefault(exp.root_cause, (exp.reason, rule_id))
                if first[0] != exp.reason:
                    raise ExpectationsError(
                        f"{path}: [{rule_id}]: root_cause {exp.root_cause!r} has the reason "
                        f"{exp.reason!r} here but {first[0]!r} at [{first[1]}]; one root cause, "
                        f"one statement{_at(path, rule_id, 'reason')}")
            entries.append(exp)
    return ExpectationsFile(path, written_for, tuple(entries),
                            _differential(path, differential, entries))


DIFFERENTIAL = "differential"
_DIFFERENTIAL_KEYS = ("signature", "rule", "root_cause")


def _differential(path: Path, tables: Any, entries: list[Expectation]) -> tuple[Differential, ...]:
    """The ``[[differential]]`` tables, each naming an entry of this file by rule and cause."""
    if not isinstance(tables, list):
        raise ExpectationsError(f"{path}: {DIFFERENTIAL!r} must be an array of tables "
                                f"([[{DIFFERENTIAL}]]) with {', '.join(_DIFFERENTIAL_KEYS)}")
    out = []
    for number, table in enumerate(tables, 1):
        where = f"{path}: [[{DIFFERENTIAL}]] #{number}"
        if not isinstance(table, dict) or set(table) != set(_DIFFERENTIAL_KEYS) or not all(
                isinstance(table[k], str) and table[k] for k in _DIFFERENTIAL_KEYS):
            raise ExpectationsError(f"{where}: needs exactly {', '.join(_DIFFERENTIAL_KEYS)} "
                                    f"(non-empty strings)")
        entry = next((e for e in entries if e.rule == table["rule"]
                      and e.root_cause == table["root_cause"]), None)
        if entry is None:
            raise ExpectationsError(f"{where}: no entry [{table['rule']}] with root_cause "
                                    f"{table['root_cause']!r} in this file; the divergence's "
                                    f"reason is that entry's")
        out.append(Differential(table["signature"], entry.rule, entry.root_cause, entry.reason))
    return tuple(out)


def file_entries(path: Path) -> Iterator[Expectation]:
    """Every entry of expectations file ``path``, parsed, in file order (ExpectationsError
    for a malformed one): for tools that read a file's root causes (witnesses, cascades)
    without judging a run."""
    yield from read(path).entries


def _parse(path: Path, rule_id: str, table: Any) -> Expectation:
    where = f"{path}: [{rule_id}]"
    if not isinstance(table, dict):
        raise ExpectationsError(f"{where}: must be a table with outcome and reason"
                                f"{_at(path, rule_id)}")
    unknown = sorted(set(table) - FIELDS)
    if unknown:
        raise ExpectationsError(f"{where}: unknown key(s) {', '.join(unknown)}; "
                                f"allowed: {', '.join(sorted(FIELDS))}{_at(path, rule_id, unknown[0])}")
    outcome = table.get("outcome")
    allowed = ", ".join(o.value for o in EXPECTABLE)
    flaky: list = []
    if isinstance(outcome, list) and outcome:
        outcome, flaky = outcome[0], outcome[1:]
        if not all(isinstance(o, str) and o in {x.value for x in (*EXPECTABLE, *HELD)}
                   for o in flaky):
            raise ExpectationsError(f"{where}: key 'outcome': the further outcomes of a flaky entry "
                                    f"must each be one of {allowed}, PASS, OBSERVED"
                                    f"{_at(path, rule_id, 'outcome')}")
    if not isinstance(outcome, str) or outcome not in {o.value for o in EXPECTABLE}:
        raise ExpectationsError(f"{where}: key 'outcome' = {outcome!r} must be one of {allowed}"
                                f"{_at(path, rule_id, 'outcome')}")
    reason = table.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise ExpectationsError(f"{where}: key 'reason' is required (why the framework does this)"
                                f"{_at(path, rule_id, 'reason')}")
    if "\n" in reason.strip():
        raise ExpectationsError(f"{where}: key 'reason' must be one line (the root cause in words an "
                                f"author recognises, not a pasted message){_at(path, rule_id, 'reason')}")
    for key in ("category", "upstream", "root_cause", "witness", "independent"):
        if not isinstance(table.get(key, ""), str):
            raise ExpectationsError(f"{where}: key {key!r} must be a string{_at(path, rule_id, key)}")
    root_cause = table.get("root_cause", "")
    if root_cause and not ROOT_CAUSE.match(root_cause):
        raise ExpectationsError(f"{where}: key 'root_cause' = {root_cause!r} must be a slug of "
                                f"lower-case words joined by hyphens, such as "
                                f"\"register-hook-returns-none\"{_at(path, rule_id, 'root_cause')}")
    versions = table.get("versions", [])
    if not isinstance(versions, list) or not all(isinstance(v, str) and v for v in versions):
        raise ExpectationsError(f"{where}: key 'versions' must be a list of version patterns "
                                f"such as [\"0.8.0\", \"0.9.*\"]{_at(path, rule_id, 'versions')}")
    tests = table.get("tests", [])
    if not isinstance(tests, list) or not all(isinstance(t, str) and t for t in tests):
        raise ExpectationsError(f"{where}: key 'tests' must be a list of test name patterns "
                                f"such as [\"test_grad_*\"]")
    if not isinstance(table.get("home", False), bool):
        raise ExpectationsError(f"{where}: key 'home' must be true or false{_at(path, rule_id, 'home')}")
    return Expectation(rule=rule_id, outcome=Outcome(outcome), reason=reason, file=path,
                       category=table.get("category", ""), upstream=table.get("upstream", ""),
                       root_cause=root_cause,
                       versions=tuple(versions), tests=tuple(tests),
                       flaky=tuple(Outcome(o) for o in flaky),
                       witness=table.get("witness", ""), home=table.get("home", False),
                       independent=table.get("independent", ""))


def _pattern_names_a_test(pattern: str, names: Iterable[str]) -> bool:
    """Whether a ``tests`` pattern can match a test of one of these function names
    (``[...]`` parametrize ids are not known before collection: only the base is checked)."""
    base = pattern.split("[")[0]
    return any(fnmatch.fnmatchcase(name, pattern) or name == base
               or (base != pattern and fnmatch.fnmatchcase(name, base + "*"))
               for name in names)


WRITTEN_FOR = "written_for"


def _written_for(path: Path, data: dict) -> tuple[str, ...]:
    patterns = data.pop(WRITTEN_FOR, [])
    if not isinstance(patterns, list) or not all(isinstance(v, str) and v for v in patterns):
        raise ExpectationsError(f"{path}: key {WRITTEN_FOR!r} must be a list of version patterns "
                                f"such as [\"2.13.*\"]")
    return tuple(patterns)


def coverage_note(path: "Path | ExpectationsFile | None", version: str) -> str:
    """"" when the file's entries were written for ``version`` (its ``written_for`` or an
    entry's ``versions`` names it, or it makes no claim); else one line saying they were not."""
    if path is None:
        return ""
    found = path if isinstance(path, ExpectationsFile) else read(Path(path))
    patterns = found.written_for
    if not patterns:
        return ""
    entry_patterns = {v for exp in found.entries for v in exp.versions}
    if any(fnmatch.fnmatchcase(version, v) for v in (*patterns, *entry_patterns)):
        return ""
    return (f"no expectation entry was written for version {version} (the file covers "
            f"{', '.join(patterns)}): an outcome that differs from them is this version's, "
            f"not a regression")


def load_expectations(path: "Path | ExpectationsFile | None", rule_ids: Iterable[str],
                      version: str, test_names: dict[str, set[str]] | None = None) -> ExpectationSet:
    """The expectations in ``path`` (or an already read file) that apply to framework
    ``version``, by rule id.

    Every entry is validated, including those for other versions; an unknown rule id is an
    error (a renamed rule must not silently drop its expectation), and so is a ``tests``
    pattern that names none of the rule's tests (``test_names``: rule id -> test function
    names, where known).
    """
    if path is None:
        return ExpectationSet()
    found = path if isinstance(path, ExpectationsFile) else read(Path(path))
    path = found.path
    known = set(rule_ids)
    chosen = ExpectationSet()
    for exp in found.entries:
        rule_id = exp.rule
        if rule_id not in known:
            close = difflib.get_close_matches(rule_id, sorted(known), n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ExpectationsError(f"{path}: [{rule_id}]: no such rule in the catalogue; "
                                    f"{hint}fix the id or remove the entry{_at(path, rule_id)}")
        names = (test_names or {}).get(rule_id)
        stale = [t for t in exp.tests if names and not _pattern_names_a_test(t, names)]
        if stale:
            raise ExpectationsError(
                f"{path}: [{rule_id}]: tests pattern {stale[0]!r} matches no test of this "
                f"rule (its tests: {', '.join(sorted(names))}); fix the pattern or remove it"
                f"{_at(path, rule_id, 'tests')}")
        if not exp.applies_to(version):
            continue
        if exp.tests:
            chosen.per_test.setdefault(rule_id, []).append(exp)
            continue
        if rule_id in chosen:
            raise ExpectationsError(f"{path}: [{rule_id}]: two entries apply to version "
                                    f"{version}; make their 'versions' disjoint")
        chosen[rule_id] = exp
    return chosen
