"""``python -m conformance.torchtests`` on a small test file of its own (no PyTorch checkout needed).

The fake file has one test per outcome the tool must tell apart: passing on both engines, an
API the reference lacks, a behaviour that differs, a crash of the reference's worker (the run
goes on), a test failing on torch (not counted), a CUDA-only test (not applicable) and a
selected test absent from the file.
"""
from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from conformance.torchtests import aliasing, classify, selection
from conformance.torchtests.testcase import TestCase
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]

FAKE_TESTS = '''
import os
import unittest
import weakref

import torch
import torch.nn as nn
from torch.autograd import Function
from torch.testing._internal.common_device_type import onlyCUDA
from torch.testing._internal.common_utils import TestCase, disable_gc


def engine_is_torch():
    return type(torch.ones(1)).__module__.startswith("torch")


class TestFake(TestCase):
    def test_hook_runs(self):
        seen = []
        x = torch.ones(2, requires_grad=True)
        x.register_hook(lambda g: seen.append(g))
        (x * 2).sum().backward()
        self.assertEqual(len(seen), 1)
        self.assertEqual(x.grad, torch.ones(2) * 2)
        self.assertEqual(x.grad.tolist(), [2.0, 2.0])

    def test_graph_freed(self):
        class Box:
            pass

        with disable_gc():
            x = torch.ones(2, requires_grad=True)
            y = x * 2
            box = Box()
            ref = weakref.ref(box)
            y.register_hook(lambda grad, box=box: grad)
            del box, y
            self.assertIsNone(ref())

    def test_needs_nn(self):
        nn.Conv2d(1, 1, 1)

    def test_needs_private_name(self):
        torch._C._this_name_is_nowhere_on_the_reference(torch.ones(1))

    def test_engine_differs(self):
        self.assertTrue(engine_is_torch(), "built on another engine")

    def test_worker_crashes_on_reference(self):
        if not engine_is_torch():
            os._exit(3)

    def test_after_the_crash(self, device):
        self.assertEqual(device, "cpu")
        self.assertEqual(torch.ones(2, device=device).sum().item(), 2.0)

    def test_fails_on_torch_too(self):
        self.assertEqual(torch.ones(1), torch.zeros(1))

    @onlyCUDA
    def test_cuda_only(self):
        pass
'''

SELECTION = '''
[tests]
"TestFake.test_hook_runs" = "hooks"
"TestFake.test_graph_freed" = "gc_cycles"
"TestFake.test_needs_nn" = "hooks"
"TestFake.test_needs_private_name" = "identity"
"TestFake.test_engine_differs" = "identity"
"TestFake.test_worker_crashes_on_reference" = "gc_cycles"
"TestFake.test_after_the_crash" = "views_inplace"
"TestFake.test_fails_on_torch_too" = "hooks"
"TestFake.test_cuda_only" = "hooks"
"TestFake.test_not_in_this_file" = "hooks"
'''


def _tool(*args, cwd):
    return subprocess.run([sys.executable, "-m", "conformance.torchtests", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=hang_limit(150),
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_every_outcome_is_told_apart(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "test_fake.py").write_text(FAKE_TESTS)
    (tmp_path / "sel.toml").write_text(SELECTION)
    proc = _tool(tmp_path / "test_fake.py", "--select", tmp_path / "sel.toml", "--json", tmp_path / "out.json",
                 "--timeout", "60", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "out.json").read_text())
    by_name = {r["test"].split(".")[1]: r for r in result["tests"]}
    assert {name: r["category"] for name, r in by_name.items()} == {
        "test_hook_runs": "pass",
        "test_graph_freed": "pass",
        "test_needs_nn": "missing_api",
        "test_needs_private_name": "fails_on_torch",  # absent on torch too
        "test_engine_differs": "difference",
        "test_worker_crashes_on_reference": "difference",
        "test_after_the_crash": "pass",
        "test_fails_on_torch_too": "fails_on_torch",
        "test_cuda_only": "not_applicable",
        "test_not_in_this_file": "not_in_file",
    }
    assert by_name["test_needs_nn"]["reference"]["detail"] == "torch.nn.Conv2d"
    assert "built on another engine" in by_name["test_engine_differs"]["reference"]["detail"]
    assert by_name["test_worker_crashes_on_reference"]["reference"]["detail"].startswith("crash")
    assert (result["selected"], result["pass_on_torch"], result["pass_on_reference"]) == (10, 6, 3)
    assert result["ratio"] == pytest.approx(0.5)
    assert "pass on reference: 3 of 6 = 50.0%" in proc.stdout
    assert "1  torch.nn.Conv2d: test_needs_nn" in proc.stdout


@pytest.mark.parametrize("args, words", [
    (["/nonexistent/test_autograd.py"], "no such file"),
    (["{tmp}/not_python.py"], "not a Python source file"),
    (["{tmp}/test_fake.py", "--select", "nosuchselection"], "unknown selection"),
    (["{tmp}/test_fake.py", "--timeout", "0"], "--timeout"),
    (["{tmp}/test_fake.py", "--only", "test_nowhere"], "not in the selection"),
])
def test_bad_input_is_one_line_and_exit_4(tmp_path, args, words):
    (tmp_path / "not_python.py").write_text("def (:\n")
    (tmp_path / "test_fake.py").write_text(FAKE_TESTS)
    proc = _tool(*[a.format(tmp=tmp_path) for a in args], cwd=tmp_path)
    assert proc.returncode == 4
    assert words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_failures_are_named_as_torch_names_them():
    assert classify.classify(aliasing.MissingAPI("torch._C._functions.UndefinedGrad")) == (
        "missing", "torch._C._functions.UndefinedGrad")
    assert classify.classify(AttributeError("module 'reference.autograd' has no attribute 'graph2'")) == (
        "missing", "torch.autograd.graph2")
    assert classify.classify(AttributeError("'Tensor' object has no attribute 'narrow'")) == ("missing", "Tensor.narrow")
    assert classify.classify(TypeError("ones() got an unexpected keyword argument 'layout'")) == (
        "missing", "ones(layout=)")
    assert classify.classify(ModuleNotFoundError("no", name="reference.utils")) == ("missing", "torch.utils")
    assert classify.classify(AssertionError("1 != 2")) == ("difference", "AssertionError: 1 != 2")
    assert classify.classify(AssertionError('"view" does not match "a leaf"'))[0] == "message"
    assert classify.classify(TypeError("dtype must be a dtype, got <missing torch.int>")) == ("missing", "torch.int")
    assert classify.classify(AttributeError("property '_backward_hooks' of 'Tensor' object has no setter")) == (
        "missing", "Tensor._backward_hooks (assignment)")
    assert classify.classify(RuntimeError("in reference.autograd.engine: boom")) == (
        "difference", "RuntimeError: in torch.autograd.engine: boom")


def test_a_missing_name_fails_where_it_is_used():
    missing = aliasing.Missing("torch.nn")
    layer = missing.Linear  # looking it up is fine, as `from torch import nn` is
    for use in (lambda: layer(2, 2), lambda: bool(missing), lambda: isinstance(1, layer),
                lambda: types.new_class("Sub", (layer,)), lambda: list(missing)):
        with pytest.raises(aliasing.MissingAPI, match="torch.nn"):
            use()


def test_private_names_map_to_the_reference_or_stay_missing():
    import reference
    from reference.autograd import graph

    torch = aliasing.facade(reference)
    # a listed private name is the reference's stand-in, reached through namespaces
    assert torch._C._functions.AccumulateGrad is graph.AccumulateGrad
    assert torch._C._autograd._saved_tensors_hooks_is_enabled() is True
    t = reference.ones(2)
    ref = torch._C._WeakTensorRef(t)
    assert not ref.expired()
    del t
    assert ref.expired()
    # an unlisted one (in a listed namespace or not) is a placeholder that names itself
    for unlisted in (torch._C._functions.NotAThing, torch._C._nope, torch._C._autograd._nope):
        with pytest.raises(aliasing.MissingAPI, match=r"torch\._C\."):
            unlisted()


def test_assert_equal_compares_values_not_objects():
    case = TestCase()
    case.assertEqual([1.0, (2, 3)], [1.0 + 1e-9, [2, 3]])
    case.assertNotEqual(1.0, 1.1)
    with pytest.raises(AssertionError):
        case.assertEqual({"a": 1}, {"a": 2})


def test_the_bundled_selection_is_well_formed():
    tests = selection.load("lifetime")
    assert len(tests) >= 150
    assert set(tests.values()) <= set(selection.CONCEPTS)
    assert set(tests.values()) == set(selection.CONCEPTS), "every concept has a test"
    assert not set(selection.excluded("lifetime")) & set(tests)


def test_a_malformed_selection_names_the_problem(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[tests]\n"TestX.test_y" = "colour"\n')
    with pytest.raises(selection.SelectionError, match="unknown concept 'colour'"):
        selection.load(str(bad))
    bad.write_text('[tests]\n"no_class" = "hooks"\n')
    with pytest.raises(selection.SelectionError, match="not \"Class.test_name\""):
        selection.load(str(bad))
