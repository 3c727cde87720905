"""conformance/suites/_helpers.py: the refusal helpers judge that a call is refused, of any
class, and tell a refusal from a missing method and from no refusal at all; every script a
suite runs in a fresh interpreter is a suites helper's function (``fresh_script_calling``)."""
import ast
from pathlib import Path

import pytest

from conformance.api import Diverges, Unsupported
from conformance.suites._helpers import expect_refusal
from conformance.suites._refusals import refusal_of


class _Framework:
    def refuse(self, exc):
        raise exc

    def accept(self):
        return 1


def test_expect_refusal_accepts_any_class_and_returns_the_exception():
    fw = _Framework()
    for exc in (RuntimeError("no"), ValueError("no"), TypeError("no"), NotImplementedError("no")):
        assert expect_refusal(lambda: fw.refuse(exc), "refuse") is exc


def test_expect_refusal_of_nothing_diverges():
    with pytest.raises(Diverges, match="accept raised nothing"):
        expect_refusal(_Framework().accept, "accept")


def test_expect_refusal_of_a_missing_method_is_unsupported():
    class Tensor:  # a framework's object, not the project's: its missing method is no refusal
        __module__ = "someframework"

    with pytest.raises(Unsupported, match="no 'register_hook'"):
        expect_refusal(lambda: Tensor().register_hook, "register_hook")


def test_refusal_of_gives_the_exception_or_none():
    fw = _Framework()
    exc = KeyError("k")
    assert refusal_of(lambda: fw.refuse(exc)) is exc
    assert refusal_of(fw.accept) is None


def test_refusal_of_never_takes_the_harness_outcomes_for_a_refusal():
    """An adapter's ``Unsupported`` (a translation it lacks) or a missing method is no refusal
    of the framework: a class or wording rule would judge the harness's own exception."""
    fw = _Framework()
    missing = Unsupported("no translation", feature="graph_nodes")
    with pytest.raises(Unsupported) as info:
        refusal_of(lambda: fw.refuse(missing))
    assert info.value is missing

    class Tensor:
        __module__ = "someframework"

    with pytest.raises(Unsupported, match="register_hook"):
        refusal_of(lambda: Tensor().register_hook)
    with pytest.raises(Diverges):
        refusal_of(lambda: fw.refuse(Diverges("judged already")))


SUITES = Path(__file__).resolve().parents[2] / "conformance" / "suites"


def _name(node) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def scripts_not_through_helpers(source: str) -> list[int]:
    """The lines where ``source`` runs a fresh interpreter on a script that is not
    ``fresh_script_calling(fn)``, or hands ``in_fresh_interpreter`` on (where its calls are not seen)."""
    tree = ast.parse(source)
    calls = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func) == "in_fresh_interpreter":
            script = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "script"), None)
            if not (isinstance(script, ast.Call) and _name(script.func) == "fresh_script_calling"):
                bad.append(node.lineno)
        elif _name(node) == "in_fresh_interpreter" and isinstance(getattr(node, "ctx", None), ast.Load) \
                and id(node) not in calls:
            bad.append(node.lineno)
    return bad


def test_every_fresh_interpreter_script_is_a_suites_helpers_function():
    """A script in a string is invisible to the spelling check and the feature gate (issue 33
    item 5: the threads script spelt ``.backward()``, gc_cycles' ``b.grad = None``): what a
    suite runs in a fresh interpreter is a helper module's function, read like suite code."""
    found = {path.name: lines for path in sorted(SUITES.glob("*.py"))
             if (lines := scripts_not_through_helpers(path.read_text()))}
    assert not found, f"in_fresh_interpreter given a script that is not fresh_script_calling(fn): {found}"


def test_a_literal_or_built_script_is_found():
    assert scripts_not_through_helpers(
        "in_fresh_interpreter(adapter, 'print(1)', device)\n"
        "api.in_fresh_interpreter(adapter, SCRIPT + 'x', device)\n"
        "in_fresh_interpreter(adapter, script=textwrap.dedent(S))\n"
        "run = in_fresh_interpreter\n"
        "in_fresh_interpreter(adapter, fresh_script_calling(work), device, timeout=9)\n") == [1, 2, 3, 4]
