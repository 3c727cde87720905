"""The lines of a results file as typed records: the run header, a test, a witness, the run end.

Why typed: a results line was an untyped dict whose keys were spelled out in the plugin (twice),
the file writer, the report's schema and its NOT-RUN rows, and read by string key in ten
modules; adding a field meant five edits, and a line with a field of the wrong type (a list
where a message should be) surfaced as a traceback in whichever reader touched it first. Here
each record class is the single list of its fields: :meth:`to_json` writes them (the file
format, unchanged: the same keys and values as before these classes existed), :meth:`from_json`
checks every field's type and names ``file:line`` and the field when one is wrong
(:class:`ResultsSchemaError`), and every other list of keys (the plugin's per-phase info,
``results.json``'s test entries, the report's NOT-RUN rows) is derived from the class.

Adding a field to the test record: add it to :class:`TestRecord` (with the JSON types it may
hold), set it where the plugin builds the phase info, read it where it is shown.

A ``witness`` line (:class:`WitnessRecord`, one per root cause of the run's expectations) came
later; files without any read as before (a run with ``--no-witnesses``, or an older harness).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, ClassVar

from conformance.results.errors import ResultsSchemaError
from conformance.results.json_fields import ANY, ListOf, Object, Row, wrong_shape

#: The ``--results`` file's format version (the header's ``schema``); readers migrate older
#: versions through :mod:`conformance.results.migrations`.
SCHEMA_VERSION = 2


def _field(*types, shape=None, default=None, factory=None, required: bool = False,
           omit_none: bool = False):
    """A record field: the JSON types it may hold (None is always allowed unless
    ``required``), or its ``shape`` (:mod:`conformance.results.json_fields`: what its entries
    hold, as deep as its readers look); ``omit_none``: not written while None (keys that only
    some lines have)."""
    meta = {"types": shape or types, "required": required, "omit_none": omit_none}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@functools.lru_cache(maxsize=None)
def _checks(cls) -> tuple[tuple[str, Any, bool, frozenset], ...]:
    """(name, JSON types or shape, required, the exact Python types that hold without a
    closer look) of each field of a record class, computed once: ``dataclasses.fields`` per
    line and per key, and a call per field, were most of the time of reading a 200 MB file.
    The exact types: a flat field's types themselves (``type(True)`` is bool, never int),
    None where it may be null; a shape's values always get the full check."""
    out = []
    for f in dataclasses.fields(cls):
        if f.name == "extra":
            continue
        types, required = f.metadata["types"], f.metadata["required"]
        flat = isinstance(types, tuple) and ANY not in types
        exact = frozenset(types if flat else ()) | (frozenset() if required else {type(None)})
        out.append((f.name, types, required, exact))
    return tuple(out)


@functools.lru_cache(maxsize=None)
def _field_names(cls) -> tuple[str, ...]:
    return tuple(name for name, *_ in _checks(cls))


@functools.lru_cache(maxsize=None)
def _names(cls) -> frozenset[str]:
    return frozenset(_field_names(cls))


#: A LEAK line's keep-alive chain (conformance.liveness.KeepAliveChain.as_data()), as deep
#: as the page draws it (conformance/report/svg.py): boxes, arrows ``[from, to, label]``.
CHAIN = Object(kind=(str,), types=ListOf((str,)), edges=ListOf(Row((int,), (int,), (str,))),
               note=(str,))
#: A test's expectation entry (conformance.expectations.Expectation.as_json()): the fields the
#: page, the root causes and the reproduction samples read (``flaky``: the outcomes it
#: flips between; older lines: true/false).
EXPECTATION = Object(outcome=(str,), reason=(str,), root_cause=(str,), flaky=(list, bool),
                     category=(str,))
#: A list of strings (command-line arguments, node ids, rule ids, lines shown on the page).
STRINGS = ListOf((str,))


class _Record:
    """What the three records share: fields with JSON types, checked when read."""

    TYPE: ClassVar[str] = ""

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return _field_names(cls)

    @classmethod
    def from_json(cls, obj: Any, where: str = "results"):
        """The record of one parsed JSON line; :class:`ResultsSchemaError` naming ``where``
        (``file:line``) and the field when a field has the wrong type. Keys this version does
        not know are kept (``extra``) and written back."""
        if not isinstance(obj, dict):
            raise ResultsSchemaError(f"{where}: not a JSON object; is it a --results file?")
        values = {}
        for name, types, required, exact in _checks(cls):
            if name not in obj:
                if required:
                    raise ResultsSchemaError(f"{where}: a {cls.TYPE or 'record'} line without "
                                             f"{name!r}; not a line this harness wrote: run "
                                             f"the suites again")
                continue  # the dataclass default
            value = obj[name]
            if type(value) in exact:  # the common case, decided without a call
                values[name] = value
                continue
            problem = wrong_shape(name, value, types, required)
            if problem:
                raise ResultsSchemaError(
                    f"{where}: {problem}; the line was not written by this harness (or was "
                    f"edited): run the suites again")
            values[name] = value
        extra = {k: v for k, v in obj.items() if k not in values and k != "type"
                 and k not in _names(cls)}
        return cls(**values, extra=extra)

    def to_json(self) -> dict[str, Any]:
        """The line as written to the file (``type`` first, fields in class order)."""
        out: dict[str, Any] = {"type": self.TYPE} if self.TYPE else {}
        for f in dataclasses.fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if value is None and f.metadata["omit_none"]:
                continue
            out[f.name] = value
        out.update(self.extra)
        return out


#: the public names other record modules (results/root_causes.py) build on
Record = _Record
field = _field


@dataclasses.dataclass
class RunHeader(_Record):
    """The run line: what a reproduction script of any of the run's cells needs besides its
    test lines (conformance.repro): the suites' git revision and digest, the adapter spec,
    framework version and device, the interpreter, and the options that turn a test into
    TIMEOUT or LEAK."""

    TYPE: ClassVar[str] = "run"

    schema: int | None = _field(int)
    suite_revision: str | None = _field(str)
    suite_dirty: bool | None = _field(bool)
    suite_digest: str | None = _field(str)
    started: str | None = _field(str)
    adapter: str | None = _field(str)
    framework_version: str | None = _field(str)
    device: str | None = _field(str)
    python: str | None = _field(str)
    adapter_spec: str | None = _field(str)
    conformance_timeout: float | None = _field(int, float)
    leak_check: list | None = _field(shape=Row((int,), (int,)))  # [warm-ups, runs]
    python_executable: str | None = _field(str)
    platform: str | None = _field(str)
    rules: int | None = _field(int)
    argv: list | None = _field(shape=STRINGS)
    #: "" unless the expectations were not written for this framework version
    expectations_note: str | None = _field(str, omit_none=True)
    #: the adapter's declared-missing features the framework contradicts (a name the feature
    #: implies exists), or why they were not checked: the page shows them beside the run
    declarations: list | None = _field(shape=STRINGS, omit_none=True)
    #: the adapter's ``unsupported`` table (feature -> why the framework lacks it): a test
    #: UNSUPPORTED on one of these features is what the adapter declares, needing no
    #: expectation entry, and the declaration's reason is its cause on the page
    unsupported: dict | None = _field(dict, omit_none=True)
    extra: dict = dataclasses.field(default_factory=dict, repr=False)

    @property
    def adapter_to_load(self) -> str | None:
        """How the run named its adapter (older files: its adapter name)."""
        return self.adapter_spec or self.adapter


@dataclasses.dataclass
class TestRecord(_Record):
    """One finished test. ``adapter`` to ``python``: the run's context, repeated on every line
    (``results.json`` leaves them out); ``nodeid`` to ``blocked_by``: what the plugin learnt
    from the test's phases (:class:`conformance.results.phases.PhaseInfo`); ``duration`` and
    ``chain`` (a leak's keep-alive chain, only on LEAK lines) are added when assembling."""

    __test__: ClassVar[bool] = False  # a record, not a pytest test class
    TYPE: ClassVar[str] = "test"
    #: The run's context, copied onto every test line.
    CONTEXT: ClassVar[tuple[str, ...]] = ("adapter", "framework_version", "device", "python")
    #: Set when the phases are assembled, not by a phase.
    ASSEMBLED: ClassVar[tuple[str, ...]] = ("nodeid", "duration", "chain")

    adapter: str | None = _field(str)
    framework_version: str | None = _field(str)
    device: str | None = _field(str)
    python: str | None = _field(str)
    nodeid: str = _field(str, default="", required=True)
    rule: str | None = _field(str)
    suite: str | None = _field(str)
    level: str | None = _field(str)
    outcome: str | None = _field(str)
    actual: str | None = _field(str)
    message: str | None = _field(str)
    observed: Any = _field(ANY)
    expectation: dict | None = _field(shape=EXPECTATION)
    blocked_by: str | None = _field(str)
    #: the feature an UNSUPPORTED test lacks (``Unsupported.feature``), else None
    missing_feature: str | None = _field(str, omit_none=True)
    #: the side observations the test skipped because the framework lacks what they need
    #: ("feature: what", conformance.side_checks); the test still judged its subject
    not_checked: list | None = _field(shape=STRINGS, omit_none=True)
    duration: float | None = _field(int, float, default=0.0)
    chain: dict | None = _field(shape=CHAIN, omit_none=True)
    extra: dict = dataclasses.field(default_factory=dict, repr=False)

    @classmethod
    def phase_fields(cls) -> tuple[str, ...]:
        """The fields a test's phases decide (the plugin's per-phase info carries these)."""
        return tuple(n for n in cls.field_names() if n not in cls.CONTEXT + cls.ASSEMBLED)

    @classmethod
    def entry_fields(cls) -> tuple[str, ...]:
        """The fields of a test entry of ``results.json`` (``chain`` besides, where set)."""
        return tuple(n for n in cls.field_names() if n not in cls.CONTEXT and n != "chain")

    def to_entry(self) -> dict[str, Any]:
        """The test as an entry of a run in ``results.json`` (without the run's context)."""
        out = {n: getattr(self, n) for n in self.entry_fields()}
        if self.chain is not None:
            out["chain"] = self.chain
        return out

    @property
    def actual_outcome(self) -> str | None:
        """What the framework did (before expectations); older lines without ``actual``:
        the final outcome."""
        return self.actual or self.outcome

    def declared_missing(self, unsupported: dict | None) -> bool:
        """Whether the test is UNSUPPORTED on a feature the run's adapter declares missing
        (``unsupported``: the header's table): expected without an expectation entry."""
        return (self.actual_outcome == "UNSUPPORTED" and self.missing_feature is not None
                and self.missing_feature in (unsupported or {}))

    @property
    def expected_cause(self) -> str:
        """The ``root_cause`` slug of the test's expectation entry ("" where it has none)."""
        return str((self.expectation or {}).get("root_cause") or "")

    @property
    def expected_reason(self) -> str:
        """The ``reason`` of the test's expectation entry ("" where it has none)."""
        return str((self.expectation or {}).get("reason") or "")

    @property
    def flaky(self) -> bool:
        """Whether the test's expectation says the framework does not behave the same in
        every run (such cells are left out of reproduction samples)."""
        return bool((self.expectation or {}).get("flaky"))

    @classmethod
    def not_run(cls, name: str, rule: str, message: str) -> "TestRecord":
        """A row for a test this run has no result for (a cell's NOT-RUN padding)."""
        from conformance.outcomes import NOT_RUN

        return cls(nodeid=name, rule=rule, outcome=NOT_RUN, actual=NOT_RUN, message=message,
                   duration=0)


@dataclasses.dataclass
class RunEnd(_Record):
    """The end line. ``interrupted``: the run stopped before every collected test ran (Ctrl-C,
    ``-x``, a collection error; ``not_run`` lists them): its results are incomplete, the page
    says so and ``nox -s report`` never reuses it. ``error``: the run stopped before any test."""

    TYPE: ClassVar[str] = "end"

    exitstatus: int | None = _field(int)
    finished: str | None = _field(str)
    counts: dict | None = _field(dict)
    not_run: list = _field(shape=STRINGS, factory=list)
    error: str | None = _field(str, omit_none=True)
    interrupted: bool | None = _field(bool, omit_none=True)
    extra: dict = dataclasses.field(default_factory=dict, repr=False)

    @property
    def complete(self) -> bool:
        """Every collected test ran, or the run stopped before any (``error``) as it would
        again: nothing to run again for."""
        return not self.interrupted

    def __post_init__(self) -> None:
        if self.not_run is None:
            self.not_run = []


@dataclasses.dataclass
class WitnessRecord(_Record):
    """What one root cause's witness (conformance/witness.py) did in the run: ``status``
    ``reproduces``, ``does not reproduce`` (the cause is "fixed?": the expectations entry is
    wrong until someone looks), ``error`` (it crashed in its own code or ran past the time
    limit) or ``no witness``; ``output`` what it printed (its end, trimmed); ``script`` the
    witness's text as its expectations entry has it; ``kind`` "breaks" or "unsupported"; the
    rules whose entries name the cause. Written as each witness finishes, before the end line."""

    TYPE: ClassVar[str] = "witness"
    #: What ``status`` may be; the second marks the cause "fixed?".
    STATUSES: ClassVar[tuple[str, ...]] = ("reproduces", "does not reproduce", "error",
                                           "no witness")

    cause: str = _field(str, default="", required=True)
    kind: str | None = _field(str)
    status: str | None = _field(str)
    output: str | None = _field(str)
    script: str | None = _field(str)
    rules: list = _field(shape=STRINGS, factory=list)
    duration: float | None = _field(int, float, default=0.0)
    extra: dict = dataclasses.field(default_factory=dict, repr=False)

    @property
    def fixed(self) -> bool:
        """The witness ran and did not reproduce its cause: "fixed?"."""
        return self.status == "does not reproduce"

    @property
    def label(self) -> str:
        """The status as people read it ("does not reproduce (fixed?)")."""
        return f"{self.status} (fixed?)" if self.fixed else (self.status or "?")

    def to_entry(self) -> dict[str, Any]:
        """The witness as an entry of a run in ``results.json``."""
        return {n: getattr(self, n) for n in self.field_names()}

    def __post_init__(self) -> None:
        if self.rules is None:
            self.rules = []


#: Record class of each line ``type``.
BY_TYPE: dict[str, type[_Record]] = {c.TYPE: c for c in (RunHeader, TestRecord, WitnessRecord,
                                                         RunEnd)}
