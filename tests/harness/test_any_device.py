"""Any torch device string (issue 34 item 4): ``--device`` takes what the adapter's device check
accepts, and the torch suites run whole on an out-of-tree device: here the pure-Python
wrapper-subclass stand-in of tests/adapters/fake_device.py (``fakedev``).

The suites run in one subprocess, all but test_engine.py and test_gc_cycles.py: on the stand-in
(every operator a Python call) those two take 7 of the 10 minutes of a whole run on 2 cores, and
they need nothing of a device the others do not exercise (their whole run on fakedev: no ERROR,
docs/devices.md). The device-check tests are quick.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.torch_adapter import TorchAdapter
from conformance import features
from conformance.child_interpreter import environment
from tests.hang import hang_limit

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
FAKE = "tests.adapters.fake_device:FakeDeviceTorchAdapter"
SUITES = [f"conformance/suites/test_{name}.py" for name in (
    "hooks", "saved_tensors", "identity", "views", "legacy_function", "forward_levels")]
# A hook that raises during backward on the device aborts the process (torch's Python back
# end; tests/adapters/fake_device_witness.py shows it with torch alone). These four tests meet
# it: CRASH every time, each a worker restarted. The run leaves them out and allows no CRASH.
ABORTING = [
    "conformance/suites/test_hooks.py::test_hook_returning_non_tensor_raises_type_error",
    "conformance/suites/test_hooks.py::test_hook_returning_non_tensor_is_a_type_error",
    "conformance/suites/test_hooks.py::test_module_full_backward_hooks_replace_gradients",
    "conformance/suites/test_saved_tensors.py::test_allow_mutation_graph_needs_its_block",
]
needs_python_backends = pytest.mark.skipif(
    not hasattr(torch._C, "_acc"), reason="this torch has no Python back-end hooks (torch._C._acc)")


# -- the device check -----------------------------------------------------------------------
@pytest.mark.parametrize("device, words", [
    ("tpu", ["--device 'tpu' is not a device string torch accepts", "docs/devices.md"]),
    ("cuda:x", ["--device 'cuda:x' is not a device string torch accepts"]),
    ("meta", ["cannot use device 'meta' here", "use --device cpu"]),   # parses, holds no values
])
def test_torch_refuses_a_device_it_cannot_use_in_one_line(device, words):
    with pytest.raises(ValueError) as caught:
        TorchAdapter().check_device(device)
    text = str(caught.value)
    assert "\n" not in text and all(w in text for w in words), text


@pytest.mark.parametrize("device", ["cpu", "cpu:0"])
def test_torch_takes_any_cpu_spelling(device):
    TorchAdapter().check_device(device)


@needs_python_backends
def test_an_out_of_tree_device_is_accepted_once_registered_and_declares_what_it_lacks():
    from tests.adapters import fake_device

    adapter = fake_device.FakeDeviceTorchAdapter()
    adapter.check_device("fakedev")
    assert "tensor_subclass" in adapter.unsupported
    assert adapter.unsupported["tensor_subclass"].startswith("on device fakedev: ")
    assert "tensor_subclass" not in TorchAdapter().unsupported   # the device's, not torch's
    tensor = adapter.fw.ones(2, device="fakedev")
    assert tensor.device.type == "fakedev" and type(tensor).__name__ == "FakeDeviceTensor"
    # torch has as_subclass: the device's reason explains it, the declaration is not contradicted
    from conformance import feature_claims

    claim = {c.feature: c for c in feature_claims.check(adapter)}["tensor_subclass"]
    assert claim.status == feature_claims.EXPLAINED, claim
    assert set(claim.explained.values()) == {adapter.unsupported["tensor_subclass"]}


def test_a_back_end_that_leaves_tensors_on_the_cpu_is_refused():
    """A device string torch parses but whose tensors report another device would make the
    run claim a device it never used."""
    class CpuAnyway(TorchAdapter):
        def try_device(self, device):
            return self.fw.zeros(1)

    with pytest.raises(ValueError, match="reports device 'cpu'; the back end does not create"):
        CpuAnyway().check_device("lazy")


def test_a_device_string_torch_rejects_is_a_usage_error(conformance_project):
    result = conformance_project.run("suites", "--device", "npu:0", adapter="torch")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.errlines if line.strip()]
    assert len(lines) == 1 and "--device 'npu:0' is not a device string torch accepts" in lines[0]


# -- the suites on the wrapper-subclass device ------------------------------------------------
@needs_python_backends
def test_a_hook_that_raises_during_backward_on_the_python_back_end_aborts():
    """The witness of the four tests ABORTING: while it reproduces, they stay out of the run
    below; once a torch release fixes it, this fails and they go back in."""
    witness = ROOT / "tests" / "adapters" / "fake_device_witness.py"
    ran = subprocess.run([sys.executable, str(witness)], cwd=ROOT, env=environment(),
                         capture_output=True, text=True, timeout=hang_limit(60))
    assert ran.stdout.splitlines() == ["cpu: the hook's error reached the caller: raised by the hook"], \
        ran.stdout + ran.stderr[-2000:]
    assert ran.returncode == -signal.SIGABRT, (ran.returncode, ran.stderr[-2000:])


@needs_python_backends
def test_the_torch_suites_run_on_a_wrapper_subclass_device(tmp_path):
    results, evidence, page = tmp_path / "results" / "fakedev.jsonl", tmp_path / "made", tmp_path / "page"
    results.parent.mkdir()
    evidence.mkdir()
    env = environment(base={**os.environ, "FAKEDEV_EVIDENCE": str(evidence)})
    done = subprocess.run(
        # one process (no xdist): the run's own crash survival would still give a crashing
        # test its CRASH, and a second worker only added its start-up and collection
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
         f"--adapter={FAKE}", "--device=fakedev", f"--results={results}", "--no-witnesses",
         *SUITES, *(f"--deselect={nodeid}" for nodeid in ABORTING)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=hang_limit(400))
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    header, tests = lines[0], [r for r in lines if r.get("type") == "test"]
    assert header["device"] == "fakedev" and header["adapter_spec"] == FAKE, done.stdout[-2000:]
    assert lines[-1]["type"] == "end" and len(tests) > 200, done.stdout[-2000:]
    assert all(r["device"] == "fakedev" for r in tests)
    # the tensors really were on the device: the workers made thousands there
    made = sum(int(p.read_text()) for p in evidence.glob("*.count"))   # counted to the 500th
    assert made > 1000, made
    errors = [(r["nodeid"], r["message"]) for r in tests if r["actual"] in ("ERROR", "CRASH")]
    assert not errors, errors
    registry = features.registry()
    unsupported = [r for r in tests if r["actual"] == "UNSUPPORTED"]
    assert unsupported, "the device's declared tensor_subclass gap made no test UNSUPPORTED"
    for r in unsupported:  # the feature is recorded by name (issue 32), a registry name
        assert r.get("missing_feature") in registry, (r["nodeid"], r["message"])
    # offloading saved tensors to the CPU is torch's feature on any device: it runs and holds
    outcome = {r["nodeid"].split("::")[-1]: r["actual"] for r in tests}
    assert outcome["test_save_on_cpu_round_trip"] == "PASS"

    # the page names the device in its runs table, and a cell's reproduction script runs there
    built = subprocess.run(
        [sys.executable, "-m", "conformance.report", "--results-dir", str(results.parent),
         "--out", str(page), "--column", "fakedev=torch"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=hang_limit(20))
    assert built.returncode == 0, built.stderr[-2000:]
    html = (page / "index.html").read_text()
    assert re.search(r"<td>fakedev</td>", html), "the runs table does not name the device"
    # a cell's reproduction script names the device and runs there: .data assignment, which
    # holds on the cpu, diverges on the wrapper device (docs/devices.md)
    from conformance.repro import derive
    from conformance.results import read_run
    from conformance.spec import load_catalogue

    rule = load_catalogue(ROOT / "conformance" / "catalogue").rules["identity.data-assign-keeps-object"]
    script = derive.generate(rule, derive.RunInfo.of(read_run(results).header, "fakedev"))
    assert "on fakedev" in script and "device='fakedev'" in script
    (tmp_path / "repro.py").write_text(script)
    ran = subprocess.run([sys.executable, str(tmp_path / "repro.py")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=hang_limit(10))
    assert "RESULT: DIVERGES" in ran.stdout, ran.stdout[-2000:] + ran.stderr[-2000:]
