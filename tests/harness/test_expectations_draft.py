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
