"""reports/results.json: every run of the suites in one versioned file, typed.

Why one file with a version: the page, CI dashboards and the repro tests all read it; a reader
that meets a layout it does not know must refuse it with a message saying what to do, never
misread it. The JSON-lines files of single runs (:mod:`conformance.results.run_file`) are
the input; :func:`column_of` turns one into a column of this file.

Layout (version 4)::

    {"schema": "autograd-conformance/results", "version": 4, "generated": ISO time,
     "catalogue": [{"id", "suite", "level", "statement", "rationale", "source"}, ...],
     "runs": [{"label", "framework", "status", "detail",
               "suite_revision", "suite_dirty", "suite_digest", "adapter", "adapter_spec",
               "framework_version", "python", "python_executable", "device", "platform",
               "started", "conformance_timeout", "leak_check", "unsupported", "finished",
               "exitstatus", "counts", "not_run",
               "tests": [{"nodeid", "rule", "suite", "level", "outcome", "actual", "message",
                          "observed", "expectation", "blocked_by", "missing_feature", "not_checked", "duration",
                          "chain"?}],
               "root_causes": [{"id", "summary", "rules", "tests", "blocks", "rank",
                                "kind", "source", "outcomes", "level", "message", "witness"}],
               "witnesses"?: [{"cause", "kind", "status", "output", "script", "rules",
                               "duration"}]}],
     "mutants"?: {...}, "findings"?: [...]}

A run's keys from ``suite_revision`` to ``leak_check`` are its results header's
(:data:`RUN_KEYS`, None where an older harness did not record them), its tests' keys are
:meth:`conformance.results.records.TestRecord.entry_fields`. ``root_causes``
(conformance.report.rootcause): per run, ranked; ``id`` is the expectations' ``root_cause``
slug or ``auto-<hash>`` for a cluster; ``blocks`` the rules whose tests are BLOCKED by it;
``kind`` "breaks" or "unsupported", every "breaks" cause ranked before every "unsupported" one;
``witness`` what the cause's witness did in the run (``{"status", "output", "script", "fixed"}``,
None where the run recorded none). ``witnesses``: the run's witness lines
(:class:`conformance.results.records.WitnessRecord`), absent for runs that recorded none (an
older harness, ``--no-witnesses``); an optional key, so version 2 still reads both.

Version 2 added ``blocked_by`` and ``root_causes``, version 3 ``missing_feature`` (the
feature an UNSUPPORTED test lacks), version 4 ``not_checked`` (the side observations a test
skipped); older files are migrated through
:mod:`conformance.results.migrations`. ``unsupported``: the adapter's declared-missing features
and their reasons (None where an older harness did not record them).

``status``: ``complete`` (every collected test ran and the end line was written),
``interrupted`` (the run died without its end line, or its end line says it was interrupted;
``detail`` says which), ``not-installed`` (the framework could not be installed; ``detail``
says why) or ``missing`` (no results were produced, or the run stopped before any test;
``detail`` says why).
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
from pathlib import Path
from typing import Any, Iterable

from conformance.results import json_text, migrations
from conformance.results.errors import ResultsSchemaError
from conformance.results.labels import ALLOWED, is_label, label_of
from conformance.results.records import RunEnd, RunHeader, TestRecord, WitnessRecord
from conformance.results.root_causes import RankedCause
from conformance.results.run_file import read_run

SCHEMA = "autograd-conformance/results"
VERSION = migrations.COMBINED_VERSION
STATUSES = ("complete", "interrupted", "not-installed", "missing")
#: The header fields a column of results.json keeps (what its reproduction scripts need).
RUN_KEYS = ("suite_revision", "suite_dirty", "suite_digest", "adapter", "adapter_spec",
            "framework_version", "python", "python_executable", "device", "platform", "started",
            "conformance_timeout", "leak_check", "expectations_note", "unsupported")
#: The end-line fields a column keeps.
END_KEYS = ("finished", "exitstatus", "counts", "not_run")
#: Keys every entry of a run's ``root_causes`` has (:class:`RankedCause`; older files: these).
ROOT_CAUSE_KEYS = RankedCause.REQUIRED
#: Keys every test entry of a run has (derived from the test record).
TEST_KEYS = TestRecord.entry_fields()


@dataclasses.dataclass
class Column:
    """One run in results.json: a column of the page."""

    label: str
    framework: str
    status: str
    detail: str
    header: RunHeader
    end: RunEnd | None
    tests: list[TestRecord]
    root_causes: list[RankedCause] = dataclasses.field(default_factory=list)
    witnesses: list[WitnessRecord] = dataclasses.field(default_factory=list)

    # what the page and the scripts read of the header, by name
    @property
    def framework_version(self) -> str | None:
        return self.header.framework_version

    @property
    def adapter_to_load(self) -> str:
        """How the run named its adapter (older files: its adapter name; a placeholder: the
        column's framework)."""
        return self.header.adapter_to_load or self.framework

    @property
    def mode(self) -> str:
        """The mode the framework ran in, "" for its own (eager) one: the run's adapter where
        it is not the framework's own (``torch-compile`` runs torch under torch.compile)."""
        adapter = self.header.adapter
        return adapter if adapter and adapter != self.framework else ""

    @property
    def title(self) -> str:
        """The column's heading: the framework, with its version unless it is the reference,
        and its mode where it is not the framework's own."""
        version = self.framework_version
        title = f"{self.framework} {version}" if version and self.framework != "reference" \
            else self.framework
        return f"{title} ({self.mode})" if self.mode else title

    @property
    def has_results(self) -> bool:
        return self.status in ("complete", "interrupted")

    def to_json(self) -> dict[str, Any]:
        header = {k: getattr(self.header, k) for k in RUN_KEYS}
        end = {k: getattr(self.end, k) if self.end is not None else None for k in END_KEYS}
        end["not_run"] = end["not_run"] or []
        out = {"label": self.label, "framework": self.framework, "status": self.status,
               "detail": self.detail, **header, **end,
               "tests": [t.to_entry() for t in self.tests], "root_causes": [c.to_json() for c in self.root_causes]}
        if self.witnesses:
            out["witnesses"] = [w.to_entry() for w in self.witnesses]
        return out

    @property
    def fixed(self) -> list[WitnessRecord]:
        """The witnesses of this run that did not reproduce their cause ("fixed?")."""
        return [w for w in self.witnesses if w.fixed]

    @classmethod
    def from_json(cls, obj: dict[str, Any], where: str) -> "Column":
        label = obj.get("label")
        here = f"{where}: run {label!r}"
        header = RunHeader.from_json({k: obj.get(k) for k in RUN_KEYS}, here)
        end = None
        if obj.get("finished") is not None or obj.get("exitstatus") is not None:
            end = RunEnd.from_json({k: obj.get(k) for k in END_KEYS}, here)
        tests = [TestRecord.from_json(t, f"{here}, test {i}") for i, t in
                 enumerate(obj["tests"], 1)]
        witnesses = [WitnessRecord.from_json(w, f"{here}, witness {i}") for i, w in
                     enumerate(obj.get("witnesses") or [], 1)]
        return cls(label=label, framework=obj.get("framework") or "?", status=obj["status"],
                   detail=obj.get("detail") or "", header=header, end=end, tests=tests,
                   root_causes=[RankedCause.from_json(c, f"{here}, root cause {i}") for i, c
                                in enumerate(obj.get("root_causes") or [], 1)],
                   witnesses=witnesses)


def column_of(path: Path, label: str | None = None, framework: str | None = None) -> Column:
    """One column from a ``--results`` JSON-lines file (ResultsSchemaError when it cannot be
    read: named by file, line and field)."""
    path = Path(path)
    try:
        run = read_run(path)
    except OSError as exc:
        raise ResultsSchemaError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if run.end is not None and run.end.error is not None and not run.tests:
        status, detail = "missing", f"the run stopped before any test: {run.end.error}"
    else:
        status, detail = ("complete" if run.complete else "interrupted"), run.interruption
    return Column(label=label or label_of(path), framework=framework or run.header.adapter or "?",
                  status=status, detail=detail, header=run.header, end=run.end,
                  tests=run.tests, witnesses=run.witnesses)


def placeholder(label: str, framework: str, version: str | None, status: str,
                detail: str) -> Column:
    """A column for a framework that produced no results (not installable, or not run)."""
    if status not in ("not-installed", "missing"):
        raise ValueError(f"placeholder status {status!r}")
    return Column(label=label, framework=framework, status=status, detail=detail,
                  header=RunHeader(adapter=framework, framework_version=version), end=None,
                  tests=[])


@dataclasses.dataclass(frozen=True)
class RuleEntry:
    """A rule as the ``catalogue`` of results.json has it: what the page, the root causes and
    the scripts' headers show of it (the catalogue itself is conformance/catalogue/*.toml)."""

    id: str
    suite: str = ""
    level: str = ""
    statement: str = ""
    rationale: str = ""
    source: str = ""

    @classmethod
    def of(cls, rule) -> "RuleEntry":
        """The entry of a catalogue rule (:class:`conformance.model.catalogue.Rule`)."""
        return cls(**{f.name: getattr(rule, f.name) for f in dataclasses.fields(cls)})

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "RuleEntry":
        return cls(**{f.name: str(obj.get(f.name) or "") for f in dataclasses.fields(cls)})

    def to_json(self) -> dict[str, str]:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Combined:
    """results.json: the catalogue (rule entries) and one column per run."""

    catalogue: list[RuleEntry]
    runs: list[Column]
    generated: str = ""
    version: int = VERSION
    mutants: dict[str, Any] | None = None
    findings: list[dict[str, Any]] | None = None

    @property
    def rule_ids(self) -> list[str]:
        return [entry.id for entry in self.catalogue]

    def to_json(self) -> dict[str, Any]:
        out = {"schema": SCHEMA, "version": self.version, "generated": self.generated,
               "catalogue": [e.to_json() for e in self.catalogue],
               "runs": [r.to_json() for r in self.runs]}
        if self.mutants:
            out["mutants"] = self.mutants
        if self.findings:
            out["findings"] = self.findings
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "results.json") -> "Combined":
        """``data`` (any version this reader can migrate) checked and typed; ResultsSchemaError
        saying what is wrong and what to do."""
        data = migrate(data, where)
        return cls(catalogue=[RuleEntry.from_json(e) for e in data["catalogue"]],
                   runs=[Column.from_json(r, where) for r in data["runs"]],
                   generated=str(data.get("generated") or ""), version=data["version"],
                   mutants=data.get("mutants"), findings=data.get("findings"))

    def dumps(self) -> str:
        """The file's text (validated first)."""
        data = self.to_json()
        validate(data)
        # one line, no indent: the indenting encoder is pure Python, a fifth of the time of a
        # report of a 200 MB results file (python -m json.tool shows it indented)
        return json.dumps(data, default=repr) + "\n"


def catalogue_entries(catalogue) -> list[RuleEntry]:
    """The entries of every rule of a catalogue (:class:`conformance.model.catalogue.Catalogue`)."""
    return [RuleEntry.of(r) for r in catalogue.rules.values()]


def build(runs: Iterable[Column], catalogue) -> Combined:
    return Combined(catalogue=catalogue_entries(catalogue), runs=list(runs),
                    generated=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))


def migrate(data: Any, where: str = "results.json") -> dict[str, Any]:
    """Bring ``data`` to :data:`VERSION` and check its layout, or raise ResultsSchemaError
    saying what to do."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ResultsSchemaError(f"{where}: not an autograd-conformance results file "
                                 f"(expected \"schema\": {SCHEMA!r})")
    data = migrations.migrate_combined(data, where, VERSION)
    validate(data, where)
    return data


def load(path: Path) -> Combined:
    path = Path(path)
    try:
        data = json_text.loads(json_text.read_text(path))
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise ResultsSchemaError(f"{path}: not JSON ({exc})") from None
    except OSError as exc:
        raise ResultsSchemaError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return Combined.from_json(data, str(path))


def validate(data: dict[str, Any], where: str = "results.json") -> None:
    """Raise ResultsSchemaError if ``data`` does not have the current layout."""
    def need(cond: bool, what: str) -> None:
        if not cond:
            raise ResultsSchemaError(f"{where}: {what}")

    need(data.get("schema") == SCHEMA and data.get("version") == VERSION, "wrong schema/version")
    need(isinstance(data.get("catalogue"), list), "\"catalogue\" must be a list")
    need(all(isinstance(e, dict) and isinstance(e.get("id"), str) for e in data["catalogue"]),
         "every catalogue entry needs an \"id\"")
    need(isinstance(data.get("runs"), list), "\"runs\" must be a list")
    labels = set()
    for run in data["runs"]:
        need(isinstance(run, dict) and isinstance(run.get("label"), str), "a run without label")
        need(is_label(run["label"]), f"run label {ascii(run['label'])} is no column label "
                                     f"({ALLOWED})")
        need(run["label"] not in labels, f"run label {run['label']!r} twice")
        labels.add(run["label"])
        need(run.get("status") in STATUSES, f"run {run['label']}: status {run.get('status')!r}")
        need(isinstance(run.get("tests"), list), f"run {run['label']}: tests must be a list")
        need(isinstance(run.get("root_causes", []), list),
             f"run {run['label']}: root_causes must be a list")
        need(isinstance(run.get("witnesses", []), list),
             f"run {run['label']}: witnesses must be a list")
        for cause in run.get("root_causes", []):
            need(isinstance(cause, dict) and all(k in cause for k in ROOT_CAUSE_KEYS),
                 f"run {run['label']}: a root cause lacks one of {ROOT_CAUSE_KEYS}")
        for t in run["tests"]:
            need(isinstance(t, dict), f"run {run['label']}: a test is not an object")
            missing = [k for k in TEST_KEYS if k not in t]
            need(not missing, f"run {run['label']}: a test lacks {missing}")
