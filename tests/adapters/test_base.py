"""adapters/base.py's Adapter.namespace: a torch-shaped namespace over a framework module whose
missing names are UNSUPPORTED (naming the feature) and still AttributeError."""
from __future__ import annotations

import types

import pytest

from adapters.base import Adapter, MissingName, Unsupported


class Demo(Adapter):
    name = "demo"

    def _import(self):
        module = types.SimpleNamespace(__name__="demofw", __version__="2.0", ones=lambda n: [1] * n)
        autograd = self.namespace(None, {"grad": "translated grad"}, path="fw.autograd")
        return self.namespace(module, {"zeros": lambda n: [0] * n, "autograd": autograd})


def test_renames_come_first_then_the_module():
    fw = Demo().fw
    assert fw.zeros(2) == [0, 0] and fw.ones(2) == [1, 1]
    assert fw.autograd.grad == "translated grad"
    assert fw.__version__ == "2.0" and Demo().framework_version() == "2.0"


def test_a_missing_name_is_unsupported_and_attribute_error_naming_the_registry_feature():
    fw = Demo().fw
    with pytest.raises(MissingName) as info:
        fw.no_grad
    exc = info.value
    assert isinstance(exc, Unsupported) and isinstance(exc, AttributeError)
    assert exc.feature == "grad_modes" and "grad_modes" in str(exc) and "fw.no_grad" in str(exc)
    assert not hasattr(fw, "enable_grad") and getattr(fw, "set_grad_enabled", None) is None
    with pytest.raises(MissingName, match="custom_function"):
        fw.autograd.Function
    with pytest.raises(MissingName, match="forward_ad"):
        fw.autograd.forward_ad


def test_a_name_no_feature_claims_is_named_by_its_dotted_path():
    with pytest.raises(MissingName) as info:
        Demo().fw.linspace
    assert info.value.feature == "fw.linspace"


def test_the_adapter_may_name_the_feature_itself():
    adapter = Demo()
    one = adapter.namespace(None, missing_feature="graph_nodes")
    by_name = adapter.namespace(None, missing_feature={"foo": "tensor_hooks"})
    with pytest.raises(MissingName, match="graph_nodes"):
        one.anything
    with pytest.raises(MissingName, match="tensor_hooks"):
        by_name.foo


def test_missing_dunders_are_plain_attribute_errors():
    """copy, pickle and inspect probe __dunders__: never a missing feature."""
    fw = Demo().fw
    with pytest.raises(AttributeError) as info:
        fw.__wrapped__
    assert not isinstance(info.value, Unsupported)


def test_a_test_reaching_a_missing_name_is_unsupported_not_error(conformance_project):
    project = conformance_project
    project.rules("demo", "a")
    project.suite("demo", '@rule("demo.a")\ndef test_a(fw):\n    with fw.no_grad():\n        pass\n')
    project.pytester.makepyfile(nsfw='''
import types
from adapters.base import Adapter


class NsAdapter(Adapter):
    name = "ns"

    def _import(self):
        return self.namespace(types.SimpleNamespace(__version__="1"))
''')
    project.run("suites", "--results=results.jsonl", adapter="nsfw:NsAdapter")
    (line,) = [r for r in project.results() if r.get("nodeid")]
    assert line["outcome"] == "UNSUPPORTED" and "grad_modes" in line["message"]


class GradModeFramework(Adapter):
    """A framework whose grad mode a test (or a framework bug) can leave off."""

    name = "gradmode"

    def _import(self):
        state = {"on": True, "sets": []}

        def set_grad_enabled(mode):
            state["on"] = mode
            state["sets"].append(mode)
        self.state = state
        module = types.SimpleNamespace(__name__="gradmodefw", __version__="1.0",
                                       is_grad_enabled=lambda: state["on"],
                                       set_grad_enabled=set_grad_enabled)
        return self.namespace(module, {})


def test_restore_grad_mode_turns_it_back_on_only_when_it_was_left_off():
    adapter = GradModeFramework()
    fw = adapter.fw
    adapter.restore_grad_mode()
    assert adapter.state["sets"] == []  # on already: nothing is called
    fw.set_grad_enabled(False)
    adapter.restore_grad_mode()
    assert fw.is_grad_enabled() and adapter.state["sets"] == [False, True]


def test_restore_grad_mode_does_nothing_without_grad_modes():
    class NoModes(GradModeFramework):
        unsupported = {"grad_modes": "no grad modes"}

    adapter = NoModes()
    adapter.fw.set_grad_enabled(False)
    adapter.restore_grad_mode()
    assert adapter.state["sets"] == [False]


def test_the_harness_restores_grad_mode_after_every_suite_test(conformance_project):
    """A test leaving grad mode off (Paddle 3.3.1 after a pack hook raised) must not turn the
    next test's ops into untracked ones."""
    project = conformance_project
    project.rules("demo", "a", "b")
    project.suite("demo", '@rule("demo.a")\ndef test_a(fw):\n    fw.set_grad_enabled(False)\n\n\n'
                          '@rule("demo.b")\ndef test_b(fw):\n    assert fw.is_grad_enabled()\n')
    project.pytester.makepyfile(gmfw='''
import types
from adapters.base import Adapter

STATE = {"on": True}


class GradModeAdapter(Adapter):
    name = "gm"

    def _import(self):
        return self.namespace(types.SimpleNamespace(
            __version__="1", is_grad_enabled=lambda: STATE["on"],
            set_grad_enabled=lambda mode: STATE.update(on=mode)))
''')
    project.run("suites", "--results=results.jsonl", adapter="gmfw:GradModeAdapter")
    outcomes = {r["nodeid"].split("::")[-1]: r["outcome"] for r in project.results()
                if r.get("nodeid")}
    assert outcomes == {"test_a": "PASS", "test_b": "PASS"}


# -- features a device lacks (docs/devices.md) -------------------------------------------------
class TwoDevices(Adapter):
    name = "twodev"
    devices = ("cpu", "dev")
    unsupported = {"forward_ad": "no dual numbers"}
    device_unsupported = {"dev": {"save_on_cpu": "no host offloading"}}

    def try_device(self, device):
        return None


@pytest.mark.parametrize("device, expected", [
    ("cpu", {"forward_ad": "no dual numbers"}),
    ("dev", {"forward_ad": "no dual numbers", "save_on_cpu": "on device dev: no host offloading"}),
])
def test_a_device_adds_what_it_lacks_to_unsupported_only_on_that_device(device, expected):
    adapter = TwoDevices()
    adapter.check_device(device)
    assert adapter.unsupported == expected
    assert TwoDevices.unsupported == {"forward_ad": "no dual numbers"}   # the class is untouched
    if device == "dev":
        with pytest.raises(Unsupported, match="save_on_cpu: on device dev: no host offloading"):
            adapter.require("save_on_cpu")
    else:
        adapter.require("save_on_cpu")   # the cpu has it
