"""conformance/audit_sample.py: the cells of a hand audit are a function of the results file
and the seed alone (the same draw for anyone, whatever order the run wrote its lines in), per
outcome, and bad input is one line with exit 4."""
from __future__ import annotations

import json
import random

import pytest

from conformance import audit_sample
from conformance.results import RunHeader, TestRecord
from conformance.results.records import SCHEMA_VERSION


def _write(path, records):
    lines = [RunHeader(schema=SCHEMA_VERSION, adapter="demo", adapter_spec="demo",
                       framework_version="1.0").to_json()]
    lines += [r.to_json() for r in records]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _records():
    out = []
    for i in range(30):
        outcome = ("UNSUPPORTED", "BLOCKED", "PASS")[i % 3]
        out.append(TestRecord(nodeid=f"conformance/suites/test_demo.py::test_{i:02d}", rule=f"demo.r{i}",
                              actual=outcome, outcome=outcome, message=f"why {i}\nsecond line",
                              missing_feature="graph_nodes" if outcome == "UNSUPPORTED" else None))
    return out


def _drawn(capsys, *argv):
    assert audit_sample.main(list(argv)) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]


def test_the_same_seed_draws_the_same_cells_whatever_the_order_of_the_file(tmp_path, capsys):
    records = _records()
    first, shuffled = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _write(first, records)
    random.Random(1).shuffle(records)
    _write(shuffled, records)
    a = _drawn(capsys, str(first), "--seed", "7", "--count", "4", "--json")
    b = _drawn(capsys, str(shuffled), "--seed", "7", "--count", "4", "--json")
    assert a == b and len(a) == 8
    assert [c["outcome"] for c in a] == ["UNSUPPORTED"] * 4 + ["BLOCKED"] * 4
    assert all(c["message"] == c["message"].splitlines()[0] for c in a)
    assert {c["missing_feature"] for c in a[:4]} == {"graph_nodes"}
    other = _drawn(capsys, str(first), "--seed", "8", "--count", "4", "--json")
    assert other != a   # another seed, another draw (10 cells per outcome: 210 ways to pick 4)


def test_a_pool_smaller_than_the_count_gives_all_of_it(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    _write(path, _records())
    cells = _drawn(capsys, str(path), "--seed", "1", "--outcome", "PASS", "--count", "50", "--json")
    assert len(cells) == 10 and {c["outcome"] for c in cells} == {"PASS"}


@pytest.mark.parametrize("content", [None, "not json\n", '{"type": "test"}\n'])
def test_bad_input_is_one_line_and_exit_4(tmp_path, capsys, content):
    """No file, a line that is no JSON, a file with no run header."""
    path = tmp_path / "r.jsonl"
    if content is not None:
        path.write_text(content)
    assert audit_sample.main([str(path), "--seed", "1"]) == 4
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
