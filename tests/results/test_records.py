"""The typed records: the file format unchanged, field types checked with file:line and field,
every other list of fields derived from the record classes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.results import (ResultsSchemaError, RunEnd, RunHeader, TestRecord,
                                 WitnessRecord, combined, read_run)
from conformance.results.records import BY_TYPE

ROOT = Path(__file__).resolve().parents[2]
OLD_RUN = ROOT / "tests" / "report" / "data" / "torch-at-b301759.jsonl"


def test_every_test_and_end_line_of_an_older_run_writes_back_as_it_was_read():
    for line in OLD_RUN.read_text().splitlines()[1:]:
        obj = json.loads(line)
        assert BY_TYPE[obj["type"]].from_json(obj, "old").to_json() == obj


def test_the_header_keeps_every_key_it_read_and_adds_only_what_that_harness_lacked():
    obj = json.loads(OLD_RUN.read_text().splitlines()[0])
    written = RunHeader.from_json(obj, "old").to_json()
    assert {k: written[k] for k in obj} == obj
    assert {k for k in written if k not in obj} == {"suite_digest", "adapter_spec",
                                                   "conformance_timeout", "leak_check",
                                                   "python_executable"}
    assert all(written[k] is None for k in written if k not in obj)


def test_keys_this_version_does_not_know_are_kept():
    obj = {"type": "test", "nodeid": "t.py::test_a", "outcome": "PASS", "future": [1, 2]}
    record = TestRecord.from_json(obj, "f:2")
    assert record.extra == {"future": [1, 2]} and record.to_json()["future"] == [1, 2]


@pytest.mark.parametrize("cls, obj, field, expected", [
    (TestRecord, {"nodeid": "t.py::a", "message": ["not", "text"]}, "message", "a string"),
    (TestRecord, {"nodeid": "t.py::a", "duration": "1s"}, "duration", "a number"),
    (TestRecord, {"nodeid": "t.py::a", "duration": True}, "duration", "a number"),
    (TestRecord, {"nodeid": 7}, "nodeid", "a string"),
    (TestRecord, {"nodeid": "t.py::a", "expectation": "DIVERGES"}, "expectation", "an object"),
    (RunHeader, {"schema": 1, "suite_dirty": "no"}, "suite_dirty", "true/false"),
    (RunHeader, {"schema": 1, "leak_check": 3}, "leak_check", "a list"),
    (RunEnd, {"exitstatus": "0"}, "exitstatus", "an integer"),
    (RunEnd, {"not_run": {}}, "not_run", "a list"),
])
def test_a_field_of_the_wrong_type_names_the_place_and_the_field(cls, obj, field, expected):
    with pytest.raises(ResultsSchemaError) as info:
        cls.from_json({"type": cls.TYPE, **obj}, "r.jsonl:3")
    message = str(info.value)
    assert message.startswith(f"r.jsonl:3: field {field!r} is ") and expected in message
    assert "\n" not in message


def test_a_test_line_without_a_node_id_is_refused():
    with pytest.raises(ResultsSchemaError, match="r.jsonl:2: a test line without 'nodeid'"):
        TestRecord.from_json({"type": "test", "outcome": "PASS"}, "r.jsonl:2")


def test_observed_holds_any_json_value():
    for value in (None, 1, "x", [1, {"a": 2}], {"k": [None]}, True):
        assert TestRecord.from_json({"nodeid": "t::a", "observed": value}, "x").observed == value


def test_the_other_lists_of_fields_derive_from_the_test_record():
    """results.json's test keys, the per-phase info's fields and the NOT RUN rows come from the
    record class: adding a field there reaches all of them."""
    fields = TestRecord.field_names()
    assert combined.TEST_KEYS == tuple(f for f in fields if f not in TestRecord.CONTEXT
                                       and f != "chain")
    assert set(TestRecord.phase_fields()) == set(fields) - set(TestRecord.CONTEXT) - \
        set(TestRecord.ASSEMBLED)
    assert set(TestRecord.not_run("test_a", "r.x", "m").to_entry()) == set(combined.TEST_KEYS)
    chained = TestRecord(nodeid="t::a", chain={"kind": "cycle"})
    assert chained.to_entry()["chain"] == {"kind": "cycle"} and "chain" not in \
        TestRecord(nodeid="t::a").to_json()



# -- witness lines -----------------------------------------------------------------------------
WITNESS = {"type": "witness", "cause": "grad-wrapper-per-read", "kind": "breaks",
           "status": "does not reproduce", "output": "ids equal", "script": "print(1)",
           "rules": ["identity.grad-stable-id"], "duration": 1.5}


def test_a_witness_line_writes_back_as_it_was_read_and_says_fixed():
    record = WitnessRecord.from_json(WITNESS, "r.jsonl:4")
    assert record.to_json() == WITNESS and BY_TYPE["witness"] is WitnessRecord
    assert record.fixed and record.label == "does not reproduce (fixed?)"
    reproduces = WitnessRecord.from_json({**WITNESS, "status": "reproduces"}, "x")
    assert not reproduces.fixed and reproduces.label == "reproduces"
    assert not WitnessRecord.from_json({**WITNESS, "status": "error"}, "x").fixed


@pytest.mark.parametrize("field, value, expected", [
    ("rules", "identity.grad-stable-id", "a list"), ("output", ["x"], "a string"),
    ("cause", 3, "a string"), ("duration", "1s", "a number")])
def test_a_witness_field_of_the_wrong_type_names_the_place_and_the_field(field, value, expected):
    with pytest.raises(ResultsSchemaError) as info:
        WitnessRecord.from_json({**WITNESS, field: value}, "r.jsonl:4")
    assert str(info.value).startswith(f"r.jsonl:4: field {field!r} is ") and expected in str(info.value)
    with pytest.raises(ResultsSchemaError, match="a witness line without 'cause'"):
        WitnessRecord.from_json({"type": "witness", "status": "error"}, "r.jsonl:4")


def test_witness_lines_reach_the_run_and_its_column_and_an_older_run_has_none(tmp_path):
    lines = OLD_RUN.read_text().splitlines()
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join([*lines[:-1], json.dumps(WITNESS), lines[-1]]) + "\n")
    run = read_run(path)
    assert [w.cause for w in run.witnesses] == ["grad-wrapper-per-read"] and run.complete
    assert len(run.tests) == len(read_run(OLD_RUN).tests) and read_run(OLD_RUN).witnesses == []
    column = combined.column_of(path)
    assert [w.cause for w in column.fixed] == ["grad-wrapper-per-read"]
    entry = column.to_json()
    assert entry["witnesses"] == [{k: v for k, v in WITNESS.items() if k != "type"}]
    again = combined.Column.from_json(json.loads(json.dumps(entry)), "results.json")
    assert again.witnesses == column.witnesses
    old = combined.column_of(OLD_RUN).to_json()
    assert "witnesses" not in old and combined.Column.from_json(old, "x").witnesses == []
