"""conformance.tomlfile's writer, the project's one: every value reads back as itself (a lone
surrogate as U+FFFD), none becomes TOML structure, and the tools that write TOML use it."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conformance import tomlfile

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
TEXTS = ['engine.x"]]\nevil = 1\n[["engine.y', "tab\tdel\x7f nul\x00 esc\x1b cr\r", "back\\slash \"q\"",
         "line\u2028sep", "caf\u00e9 \u4e2d", "code\n  x = 1\n", "ends in a quote'", "has ''' inside",
         "", "\n\nleading newlines"]


@pytest.mark.parametrize("multiline", [False, True])
@pytest.mark.parametrize("text", TEXTS)
def test_every_string_reads_back_as_itself(text, multiline):
    assert tomllib.loads(f"x = {tomlfile.string(text, multiline)}") == {"x": text}


def test_code_is_written_verbatim_where_a_literal_string_can_hold_it():
    assert tomlfile.string("x = 1\nprint(x)\n", multiline=True) == "'''\nx = 1\nprint(x)\n'''"


def test_a_lone_surrogate_becomes_the_replacement_character():
    for multiline in (False, True):
        assert tomllib.loads("x = " + tomlfile.string("a\udc80b", multiline)) == {"x": "a\ufffdb"}


def test_arrays_and_comments():
    assert tomllib.loads("x = " + tomlfile.array(["a", 'b"\n'])) == {"x": ["a", 'b"\n']}
    assert tomllib.loads(tomlfile.comment("plain\n[[x]]\n# kept\n\x01 odd")) == {}


def test_no_other_module_escapes_toml_by_hand():
    """The escapers that were (expectations_draft's and evidence's) are gone: one writer."""
    offenders = []
    for path in sorted((ROOT / "conformance").rglob("*.py")):
        if path.name == "tomlfile.py":
            continue
        text = path.read_text(encoding="utf-8")
        if "'''\\n" in text and "toml" in text.lower() or "def toml_string" in text \
                or "def _toml_string" in text:
            offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, offenders
