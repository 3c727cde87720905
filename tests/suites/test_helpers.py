"""conformance/suites/_helpers.py: the refusal helpers judge that a call is refused, of any
class, and tell a refusal from a missing method and from no refusal at all."""
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
