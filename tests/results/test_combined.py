"""results.json typed: its catalogue entries are records too, and the file reads back as written."""
from __future__ import annotations

import json
from pathlib import Path

from conformance.results import combined
from conformance.results.records import TestRecord
from conformance.rules import load_catalogue

ROOT = Path(__file__).resolve().parents[2]
OLD_RUN = ROOT / "tests" / "report" / "data" / "torch-at-b301759.jsonl"


def test_results_json_writes_back_as_it_was_read_with_the_catalogue_layout_unchanged(tmp_path):
    catalogue = load_catalogue(ROOT / "conformance" / "catalogue")
    data = combined.build([combined.column_of(OLD_RUN, "torch-old", "torch")], catalogue)
    text = data.dumps()
    written = json.loads(text)
    first = written["catalogue"][0]
    assert list(first) == ["id", "suite", "level", "statement", "rationale", "source"]
    rule = catalogue.rules[first["id"]]
    assert first == {"id": rule.id, "suite": rule.suite, "level": rule.level,
                     "statement": rule.statement, "rationale": rule.rationale,
                     "source": rule.source}
    path = tmp_path / "results.json"
    path.write_text(text)
    again = combined.load(path)
    assert again.catalogue == data.catalogue and again.rule_ids == list(catalogue.rules)
    assert again.dumps() == text


def test_the_expectation_a_test_carries_is_read_through_the_record():
    record = TestRecord(nodeid="f.py::test_a", expectation={"outcome": "DIVERGES",
                                                             "reason": "why", "root_cause": "slug"})
    assert (record.expected_cause, record.expected_reason) == ("slug", "why")
    assert (TestRecord(nodeid="f.py::test_a").expected_cause, TestRecord(nodeid="x").expected_reason) \
        == ("", "")
