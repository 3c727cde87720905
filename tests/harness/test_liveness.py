"""Controlled observation: a channel that watches a tensor must first show it can see a tensor
the framework holds alive (the positive control), else the test is BLOCKED, never a verdict."""
import gc
import types
import weakref

import pytest

from adapters.base import Adapter, Unsupported
from conformance import liveness
from conformance.outcomes import Blocked


class _Impl:
    """The framework's own tensor, which its graph holds."""


class Wrapper:
    """A framework whose Python tensor is a wrapper made per access (Paddle's way): a graph
    saves the wrapped ``_Impl``, never the Python object, so the wrapper dies with its last
    Python reference while the tensor lives on."""
    __module__ = "wrapperfw"

    def __init__(self, impl=None, requires_grad=False, saved=()):
        self.impl = impl or _Impl()
        self.requires_grad = requires_grad
        self.saved = tuple(s.impl for s in saved if isinstance(s, Wrapper))

    def __mul__(self, other):
        return Wrapper(requires_grad=True, saved=(self, other))


class Keeper(Wrapper):
    """A framework that keeps the Python object of a saved tensor (torch's way)."""
    __module__ = "keeperfw"

    def __mul__(self, other):
        out = Keeper(requires_grad=True)
        out.saved = (self, other)
        return out


def _adapter(cls, liveness_check=None):
    class Demo(Adapter):
        name = "demo"

        def _import(self):
            return types.SimpleNamespace(ones=lambda n, requires_grad=False, device="cpu":
                                         cls(requires_grad=requires_grad))

        def liveness(self, tensor):
            if liveness_check is None:
                return super().liveness(tensor)
            return liveness_check(tensor)
    return Demo()


def test_a_weakref_that_dies_with_the_wrapper_blocks_by_the_weakref_rule():
    adapter = _adapter(Wrapper)
    t = Wrapper(requires_grad=False)
    with pytest.raises(Blocked) as info:
        liveness.watch(t, "t", adapter, allow_hook=False)
    assert info.value.rule_id == liveness.WEAKREF_CHANNEL_RULE
    assert "a live graph still saves" in str(info.value)
    with pytest.raises(Blocked):
        liveness.control_weakref(adapter)


def test_a_channel_that_passes_its_control_watches_and_judges():
    adapter = _adapter(Keeper)
    t = Keeper()
    probe = liveness.watch(t, "t", adapter, allow_hook=False)
    assert probe.control and probe.how == "weakref"
    liveness.control_weakref(adapter)           # passes: no exception
    del t
    liveness.assert_freed(probe, by="gc")


def test_the_adapter_channel_is_tried_first():
    impls = weakref.WeakSet()

    def check(tensor):
        impl = weakref.ref(tensor.impl)
        impls.add(tensor.impl)
        return lambda: impl() is not None
    adapter = _adapter(Wrapper, check)
    probe = liveness.watch(Wrapper(), "t", adapter, allow_hook=False)
    assert probe.how == "the adapter's liveness check"
    gc.collect()
    assert not probe.alive()


def test_a_stand_in_still_alive_is_reported_without_searching_the_heap(monkeypatch):
    """The adapter channel's probe holds a stand-in (True), alive by design: a keep-alive
    search from it would walk every module (it ran 300 s into a TIMEOUT); the failure names
    the channel instead, at once."""
    keep = []

    def check(tensor):
        keep.append(tensor.impl)        # the framework keeps it: never freed
        return lambda: True
    adapter = _adapter(Wrapper, check)
    probe = liveness.watch(Wrapper(), "t", adapter, allow_hook=False)
    assert probe.stand_in and probe.get() is True

    def no_search(obj, max_depth=12):
        raise AssertionError("searched a keep-alive chain from a stand-in")
    monkeypatch.setattr(liveness, "keep_alive_chain", no_search)
    with pytest.raises(liveness.StillAlive) as info:
        liveness.assert_freed(probe, by="gc")
    assert "the adapter's liveness check" in str(info.value)
    for by_design in (True, 1, "s", int, liveness):
        assert liveness._alive_by_design(by_design)
    assert not liveness._alive_by_design(Wrapper())


def test_assert_freed_warns_on_a_framework_tensor_watched_without_a_control():
    probe = liveness.weak(Keeper(), "t")
    with pytest.warns(liveness.UncontrolledObservation, match="without a positive control"):
        liveness.assert_freed(probe, by="gc")
    plain = liveness.weak(_Impl(), "a plain object")    # the harness's own objects need none
    liveness.assert_freed(plain, by="gc")


def test_the_default_adapter_offers_no_liveness_check():
    with pytest.raises(Unsupported):
        _adapter(Keeper).liveness(Keeper())


def test_the_suites_watch_framework_tensors_only_through_controlled_channels():
    """No suite calls the uncontrolled tensor channels directly (the warning above is for
    scripts from older suite revisions, not for the suites)."""
    import ast
    from pathlib import Path

    suites = Path(__file__).resolve().parents[2] / "conformance" / "suites"
    direct = sorted(f"{path.name}:{node.lineno}" for path in suites.glob("*.py")
                    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                    if isinstance(node, ast.Call)
                    and getattr(node.func, "attr", getattr(node.func, "id", None))
                    in ("tensor_probe", "sentinel_in_hook"))
    assert not direct, f"tensors watched without a positive control: {direct}"
