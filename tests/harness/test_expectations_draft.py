"""conformance.expectations_draft: what it drafts is TOML that says what the runs said, whatever
a results file holds (issue 28, third round: a rule id with a quote and a newline drafted a key
of its own, DEL made the file unreadable, a lone surrogate was a traceback, and a --header
without '#' was TOML)."""
from __future__ import annotations

import sys

import pytest

from conformance.expectations_draft import comment, render, toml_string

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


@pytest.mark.parametrize("text", [
    'engine.x"]]\nevil = 1\n[["engine.y', "tab\tdel\x7f nul\x00 esc\x1b", "back\\slash \"q\"",
    "line\u2028sep", "caf\u00e9 \u4e2d",
])
def test_any_text_is_one_toml_string_of_itself(text):
    assert tomllib.loads(f"x = {toml_string(text)}") == {"x": text}


def test_a_lone_surrogate_has_no_toml_form_and_becomes_the_replacement_character():
    assert tomllib.loads("x = " + toml_string("a\udc80b")) == {"x": "a\ufffdb"}


def test_a_rule_id_or_message_never_becomes_toml_structure():
    rule = 'engine.x"]]\nevil = 1\n[["engine.y'
    drafted = tomllib.loads(render([(rule, "DIVERGES", ["1.0"], ["test_a"], "msg\x7f\udc80")], ""))
    assert list(drafted) == [rule]
    entry = drafted[rule][0]
    assert entry["reason"] == "msg\x7f\ufffd" and entry["category"] == "engine"
    assert entry["versions"] == ["1.0"] and entry["tests"] == ["test_a"]


def test_the_header_is_comments_whatever_it_holds():
    header = "my draft\n[[x]]\n# already a comment\n\n\x01 odd"
    assert tomllib.loads(comment(header)) == {}
    assert comment(header).splitlines()[:3] == ["# my draft", "# [[x]]", "# already a comment"]


def _results(path, tests):
    import json

    from conformance.results import SCHEMA_VERSION

    lines = [{"type": "run", "schema": SCHEMA_VERSION, "adapter": "myfw", "framework_version": "1.0"}]
    for nodeid, rule, actual, message in tests:
        lines.append({"type": "test", "nodeid": nodeid, "rule": rule, "suite": rule.split(".")[0],
                      "level": "MUST", "outcome": actual, "actual": actual, "message": message})
    lines.append({"type": "end", "exitstatus": 1})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_a_draft_gives_root_cause_slugs_and_the_rules_words_never_the_message(tmp_path):
    """Two rules failing with one message share a slug named after the first; the reason is
    the rule's statement, the message only a comment; a crash has its own slug."""
    from conformance.expectations_draft import draft_entries, read_runs
    from conformance.rules import load_catalogue
    from pathlib import Path

    rules = list(load_catalogue(Path(__file__).resolve().parents[2] / "conformance" / "catalogue").rules.values())
    a, b, c = rules[0], rules[1], rules[2]
    message = "AssertionError: the wrapper object changed between two reads of the gradient"
    path = _results(tmp_path / "r.jsonl", [
        ("s.py::test_a", a.id, "DIVERGES", message), ("s.py::test_b", b.id, "DIVERGES", message),
        ("s.py::test_c", c.id, "CRASH", "Fatal Python error: Segmentation fault")])
    entries = draft_entries(read_runs([path]))
    by_rule = {e[0]: e for e in entries}
    slug = a.id.split(".", 1)[1]
    assert by_rule[a.id][5] == slug and by_rule[b.id][5] == slug
    assert by_rule[c.id][5] == "crash-" + c.id.split(".", 1)[1]
    assert by_rule[a.id][4].startswith("does not hold: " + " ".join(a.statement.split())[:40])
    assert all("wrapper object" not in e[4] for e in entries)
    text = render(entries, "# draft")
    drafted = tomllib.loads(text)
    assert drafted[a.id][0]["root_cause"] == slug and "reason" in drafted[a.id][0]
    assert f"# observed (not a reason): {message}" in text
