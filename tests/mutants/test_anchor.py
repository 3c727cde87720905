"""Mutant anchors (conformance/mutants/anchor.py): a pattern survives reformatting, not a code change."""
from __future__ import annotations

import inspect
import io
import textwrap
import tokenize

import pytest

from conformance import mutants as M
from conformance.mutants.anchor import AnchorError, find, substitute

SOURCE = '''def f(node, grads):
    if not retain_graph and node._saved:
        node._saved = None
    total = sum(g for g in grads)
    return total
'''


def test_a_pattern_matches_whatever_the_spacing_line_breaks_quotes_and_comments():
    reformatted = '''def f(node, grads):
    if (not   retain_graph  # keep them?
            and node . _saved):
        node._saved = None
    return total
'''
    assert len(find(reformatted, "if not retain_graph and node._saved:")) == 0  # the brackets are code
    assert len(find(reformatted, "if (not retain_graph and node._saved):")) == 1
    assert len(find("x = {'a': 1}\n", 'x = {"a": 1}')) == 1  # a string compared by its value
    assert len(find("x = {'a': 1}\n", 'x = {"b": 1}')) == 0


def test_a_statement_end_in_the_pattern_is_kept():
    source = "def g(self):\n    return self\n    return self._x\n"
    assert len(find(source, "return self")) == 2
    assert len(find(source, "    return self\n")) == 1
    assert substitute(source, "    return self\n", "return other(self)\n") == \
        "def g(self):\n    return other(self)\n    return self._x\n"


def test_only_the_tokens_that_differ_are_rewritten():
    source = "def g(a):\n    if a:\n        x = a  # note\n    y = 2\n"
    # context across an indentation level in the pattern; the replacement's layout of it is ignored
    assert substitute(source, "x = a\ny = 2", "x = a + 1\ny = 2") == \
        "def g(a):\n    if a:\n        x = a + 1  # note\n    y = 2\n"


def test_further_lines_are_indented_like_the_matched_line():
    deep = "def g(a):\n    if a:\n        if a > 1:\n            x = a\n"
    got = substitute(deep, "x = a", "x = a\nif x:\n    x = 0")
    assert got == "def g(a):\n    if a:\n        if a > 1:\n            x = a\n            if x:\n                x = 0\n"
    ns: dict = {}
    exec(got, ns)  # still Python


def test_no_match_and_several_matches_are_refused_with_function_and_pattern():
    with pytest.raises(AnchorError, match=r"edit of m:f \(m.py:3\): pattern 'missing\(\)' matches 0 times"):
        substitute(SOURCE, "missing()", "x", "m:f", "m.py:3")
    with pytest.raises(AnchorError, match="pattern 'node._saved' matches 2 times, not once; lengthen"):
        substitute(SOURCE, "node._saved", "x", "m:f")
    assert str(AnchorError("m:f", "p", 0).naming("hooks.x")).startswith("mutant hooks.x: edit of m:f")


def _reformat(source: str) -> str:
    """The function as another formatter might write it: two-space indentation, a space between
    every two tokens, a line break after every comma inside brackets, the other quote character,
    a comment on every statement (the same code: it compiles to the same bytecode)."""
    out, depth, brackets, line_start = [], 0, 0, True
    for tok in tokenize.generate_tokens(io.StringIO(textwrap.dedent(source)).readline):
        kind, text = tok.type, tok.string
        if kind == tokenize.INDENT:
            depth += 1
            continue
        if kind == tokenize.DEDENT:
            depth -= 1
            continue
        if kind in (tokenize.COMMENT, tokenize.NL, tokenize.ENDMARKER, tokenize.ENCODING):
            continue
        if kind == tokenize.NEWLINE:
            out.append("  # reformatted\n")
            line_start = True
            continue
        if line_start:
            out.append("  " * depth)
            line_start = False
        elif out and not out[-1].endswith(("\n", " ")):
            out.append(" ")
        if kind == tokenize.STRING and text[:1] in "'\"" and "\\" not in text and text[:3] not in ('"""', "'''"):
            other = "'" if text[0] == '"' else '"'
            if other not in text[1:-1]:
                text = other + text[1:-1] + other
        out.append(text)
        if kind == tokenize.OP and text in "([{":
            brackets += 1
        elif kind == tokenize.OP and text in ")]}":
            brackets -= 1
        elif kind == tokenize.OP and text == "," and brackets:
            out.append("\n" + "  " * (depth + 2))
    return "".join(out)


def test_the_reformatter_keeps_the_code():
    from reference.autograd import engine

    source = textwrap.dedent(inspect.getsource(engine.execute))
    assert _reformat(source) != source
    def function_code(text):
        return next(c for c in compile(text, "f", "exec").co_consts if hasattr(c, "co_code")).co_code

    assert function_code(_reformat(source)) == function_code(source)


# Every mutant applies to a reference reformatted by another formatter, and still plants its bug.
def test_every_mutant_survives_a_reformatted_engine(monkeypatch):
    getsource = inspect.getsource
    monkeypatch.setattr(inspect, "getsource", lambda obj: _reformat(getsource(obj)))
    failures = []
    for mutant_id in M.load():
        try:
            if mutant_id == "harness.crash-on-sin":  # its probe kills the process
                M.activate(mutant_id)
            else:
                differs, clean, _ = M.probe_differs(mutant_id)
                if not differs:
                    failures.append(f"{mutant_id}: probe gives {clean!r} either way")
        except (AnchorError, SyntaxError) as exc:
            failures.append(str(exc))
        finally:
            M.deactivate()
    assert not failures, "\n".join(failures)
