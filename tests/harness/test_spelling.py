"""conformance/spelling.py: the suites reach the framework through fw.* and the adapter only."""
import textwrap

import pytest

from adapters.base import Adapter
from conformance import spelling


def _found(tmp_path, body):
    path = tmp_path / "test_x.py"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return [(s.line, s.name) for s in spelling.spellings_in(path)]


def test_the_suites_use_no_torch_spelling_on_framework_objects():
    found = spelling.spellings()
    assert not found, "\n".join(map(str, found))


def test_computations_backward_and_in_place_methods_are_found(tmp_path):
    assert _found(tmp_path, """
        def test_a(fw, adapter, device):
            y = (x * 2).sum()
            y.backward(retain_graph=True)
            x.add_(y)
            print(x.grad.tolist())
    """) == [(3, "sum"), (4, "backward"), (5, "add_"), (6, "tolist")]


def test_assigning_and_reading_torch_fields_is_found(tmp_path):
    assert _found(tmp_path, """
        def test_a(fw, adapter, device):
            x.grad = None
            del y.grad
            x.requires_grad = True
            z = x.data
    """) == [(3, "grad="), (4, "grad="), (5, "requires_grad="), (6, ".data")]


def test_fields_held_under_another_shape_are_read_through_the_adapter(tmp_path):
    # MyGrad holds grad_fn as Tensor.creator and requires_grad as `not constant`: a torch-spelled
    # read is an AttributeError there, an ERROR that says nothing about its engine
    assert _found(tmp_path, """
        def test_a(fw, adapter, device):
            node = y.grad_fn
            assert x.is_leaf and (x * 2).requires_grad
            assert adapter.grad_fn(y) is not None and adapter.requires_grad(x)
            ok = fw.ones(2, requires_grad=True)
    """) == [(3, ".grad_fn"), (4, ".is_leaf"), (4, ".requires_grad")]


def test_a_subject_is_called_as_itself(tmp_path):
    assert _found(tmp_path, """
        @subject("view", "grad=")
        def test_a(fw, adapter, device):
            v = x.view(2)
            x.grad = v
            v.sum()
    """) == [(6, "sum")]


def test_plain_receivers_are_left_alone(tmp_path):
    assert _found(tmp_path, """
        class Box:
            def pack(self, t):
                return self.fw.clone(t)

        def test_a(fw, adapter, device):
            got = adapter.to_numpy(x)
            print(got.tolist(), adapter.to_numpy(y).sum(), np.ones(2).sum(), [1].copy_)
            adapter.backward(fw.sum(x))
            fw.autograd.backward(y)
    """) == []


def test_the_replacements_are_torch_functions():
    torch = pytest.importorskip("torch")
    assert [n for n in spelling.THROUGH_FW if not callable(getattr(torch, n, None))] == []
    assert spelling.instead_of("sum") == "fw.sum(t, ...)"
    assert spelling.instead_of("mul_") == 'adapter.inplace(t, "mul_", ...)'
    assert spelling.instead_of("backward") == "adapter.backward(t, ...)"
    assert spelling.instead_of("grad_fn") is None


def test_an_adapter_gets_functions_for_methods_only_where_its_module_lacks_them():
    class Tensor:
        def sum(self):
            return "summed"

        def detach(self):
            return "detached"

    class Module:
        @staticmethod
        def detach(t):
            return "module's own"

    renames = Adapter.functions_from_methods(Module, Tensor)
    assert sorted(renames) == ["sum"]                 # detach: the module's own; exp: neither has it
    assert renames["sum"](Tensor()) == "summed"


def test_the_command_lists_and_fails(capsys, monkeypatch, tmp_path):
    (tmp_path / "test_x.py").write_text("def test_a(fw, adapter):\n    y.sum()\n", encoding="utf-8")
    monkeypatch.setattr(spelling, "SUITES", tmp_path)
    monkeypatch.setattr(spelling, "ROOT", tmp_path.parent)
    assert spelling.main([]) == 1
    out = capsys.readouterr().out
    assert "test_x.py:2: sum on a framework object; write fw.sum(t, ...)" in out
