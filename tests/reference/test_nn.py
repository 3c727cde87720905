"""reference.nn: Parameters register on assignment, Linear computes x @ W.T + b with its
gradients, functional.relu (in place or not)."""
from __future__ import annotations

import copy
import gc

import numpy as np
import pytest

import reference as R
from reference import nn
from tests.reference.helpers import arr, leaf


class Two(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = nn.Linear(3, 2)
        self.second = nn.Linear(2, 1, bias=False)
        self.again = self.first  # the same module twice: its parameters count once

    def forward(self, x):
        return self.second(nn.functional.relu(self.first(x)))


def test_a_parameter_is_a_leaf_sharing_memory_and_version_with_its_data():
    data = R.ones(2, requires_grad=True) * 2
    p = nn.Parameter(data)
    assert isinstance(p, R.Tensor) and p.is_leaf and p.requires_grad and p.grad_fn is None
    assert p.data_ptr() == data.data_ptr() and p._version_counter is data._version_counter
    assert not nn.Parameter(R.ones(1), requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,) and repr(nn.Parameter(R.ones(1))).startswith("Parameter containing:\n")
    with pytest.raises(RuntimeError):
        nn.Parameter(R.ones(1, dtype=R.int64))


def test_assigned_parameters_and_submodules_are_registered_in_order_each_once():
    model = Two()
    assert [name for name, _ in model.named_parameters()] == ["first.weight", "first.bias", "second.weight"]
    assert [name for name, _ in model.named_modules()] == ["", "first", "second"]
    assert list(model.children()) == [model.first, model.second] and model.again is model.first
    assert model.second.bias is None and "bias" in model.second._parameters
    assert len(list(model.parameters())) == 3 and list(model.parameters(recurse=False)) == []
    assert model.first.weight.shape == (2, 3) and model.first.bias.shape == (2,)
    bound = 1 / np.sqrt(3)
    assert np.abs(arr(model.first.weight)).max() <= bound and np.abs(arr(model.first.bias)).max() <= bound
    del model.first
    assert [name for name, _ in model.named_parameters()] == ["second.weight", "again.weight", "again.bias"]


def test_registration_errors_are_torchs():
    module = nn.Module()
    module.w = nn.Parameter(R.ones(1))
    with pytest.raises(TypeError, match="cannot assign .* as parameter 'w'"):
        module.w = R.ones(1)
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        module.nope
    with pytest.raises(NotImplementedError, match='missing the required "forward" function'):
        module(1)

    class NoInit(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(R.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        NoInit()


def test_linear_computes_x_wt_plus_b_and_backpropagates_into_its_parameters():
    layer = nn.Linear(3, 2)
    layer.weight.data = R.tensor([[1.0, 2.0, 3.0], [0.0, -1.0, 1.0]])
    layer.bias.data = R.tensor([0.5, -0.5])
    x = R.tensor([[1.0, 1.0, 1.0], [2.0, 0.0, 1.0]], requires_grad=True)
    out = layer(x)
    np.testing.assert_allclose(arr(out), [[6.5, -0.5], [5.5, 0.5]])
    out.sum().backward()
    np.testing.assert_allclose(arr(layer.weight.grad), [[3.0, 1.0, 2.0]] * 2)
    np.testing.assert_allclose(arr(layer.bias.grad), [2.0, 2.0])
    np.testing.assert_allclose(arr(x.grad), [[1.0, 1.0, 4.0]] * 2)
    layer.zero_grad()
    assert layer.weight.grad is None and layer.bias.grad is None


def _tree(node, depth=0):
    if node is None or depth > 3:
        return None
    return (node.name(), [_tree(n, depth + 1) for n, _ in node.next_functions])


# Observed on torch 2.13: a Linear with a bias is one addmm; other inputs than matrices are
# viewed as one and the result viewed back; without a bias it is a matrix product.
@pytest.mark.parametrize("shape, tree", [
    ((2, 3), ("AddmmBackward0", [("AccumulateGrad", []), ("AccumulateGrad", []),
                                 ("TBackward0", [("AccumulateGrad", [])])])),
    ((4, 2, 3), ("ViewBackward0", [("AddmmBackward0", [
        ("AccumulateGrad", []), ("ViewBackward0", [("AccumulateGrad", [])]),
        ("TBackward0", [("AccumulateGrad", [])])])])),
])
def test_linear_records_addmm_as_torch(shape, tree):
    layer = nn.Linear(3, 5)
    x = R.ones(*shape, requires_grad=True)
    out = layer(x)
    assert _tree(out.grad_fn) == tree and tuple(out.shape) == shape[:-1] + (5,)
    node = out.grad_fn if len(shape) == 2 else out.grad_fn.next_functions[0][0]
    assert tuple(node._saved_mat1.shape) == (int(np.prod(shape[:-1])), 3)
    assert tuple(node._saved_mat2.shape) == (3, 5)


def test_linear_gradients_match_the_product_and_sum_for_every_input_shape():
    for shape in [(3,), (2, 3), (4, 2, 3)]:
        layer = nn.Linear(3, 2)
        x = R.tensor(np.arange(np.prod(shape), dtype=np.float64).reshape(shape) / 7,
                     requires_grad=True)
        w, b = layer.weight, layer.bias
        (layer(x) ** 2).sum().backward()
        x2, w2, b2 = (R.tensor(arr(t), requires_grad=True) for t in (x, w, b))
        ((x2.matmul(w2.t()) + b2) ** 2).sum().backward()
        for got, want in ((x, x2), (w, w2), (b, b2)):
            np.testing.assert_allclose(arr(got.grad), arr(want.grad), rtol=1e-6)


def test_addmm_saves_only_what_the_other_gradient_needs():
    x, w = R.ones(2, 3, requires_grad=True), R.ones(3, 4)
    out = nn.functional.linear(x, w.t(), R.zeros(4, requires_grad=True))
    assert out.grad_fn.name() == "AddmmBackward0"
    assert out.grad_fn._saved_mat1 is None and out.grad_fn._saved_mat2 is not None


def test_relu_in_place_writes_its_input_and_out_of_place_does_not():
    x = leaf([-1.0, 2.0]).clone()
    y = nn.functional.relu(x)
    np.testing.assert_array_equal(arr(x), [-1.0, 2.0])
    assert nn.functional.relu(x, inplace=True) is x and x._version == 1
    np.testing.assert_array_equal(arr(x), arr(y))


def test_relu_in_place_on_a_view_leaves_no_cycle_behind():
    freed = []

    class Mark:
        def __del__(self):
            freed.append(True)

    def run():
        root = R.randn(3, 3, requires_grad=True)
        copied = root.clone()
        copied.grad_fn.register_hook(Mark())
        nn.functional.relu(copied.view(9), inplace=True)

    gc.disable()
    try:
        run()
        assert freed == [True]
    finally:
        gc.enable()


def test_train_eval_and_deepcopy():
    model = Two()
    assert model.training and not model.eval().second.training and model.train().first.training
    clone = copy.deepcopy(model)
    assert clone.first.weight is not model.first.weight and clone.again is clone.first
    np.testing.assert_array_equal(arr(clone.first.weight), arr(model.first.weight))
    assert isinstance(clone.first.weight, nn.Parameter)
    assert repr(model).startswith("Two(\n  (first): Linear(in_features=3, out_features=2, bias=True)")


def test_full_backward_hook_when_no_input_requires_grad_runs_on_the_outputs_node():
    class Scale(R.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = R.nn.Parameter(R.ones(2))

        def forward(self, x):
            return x * self.w

    m = Scale()
    got = []
    m.register_full_backward_hook(lambda mod, gi, go: got.append((gi, go[0].tolist())))
    with pytest.warns(UserWarning, match="Full backward hook is firing when gradients are computed"):
        m(R.ones(2)).sum().backward()
    assert got == [((None,), [1.0, 1.0])]
    m.register_full_backward_hook(lambda mod, gi, go: (R.ones(2),))
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="should always return None"):
        m(R.ones(2)).sum().backward()


def test_full_backward_hooks_record_nothing_without_grad_and_refuse_inplace_outputs():
    class Double(R.nn.Module):
        def forward(self, x):
            return x * 2

    m = Double()
    m.register_full_backward_pre_hook(lambda mod, go: None)
    with R.no_grad():
        assert m(R.ones(2, requires_grad=True)).grad_fn is None
    out = m(R.ones(2, requires_grad=True))
    assert out.grad_fn.name() == "BackwardHookFunctionBackward"
    with pytest.raises(RuntimeError, match="Output 0 of BackwardHookFunction is a view and is being modified inplace"):
        out.add_(1)
