"""all / any: bool reductions that never join the graph."""
from __future__ import annotations

import reference as R


def test_all_and_any_reduce_to_bool_tensors_without_history():
    x = R.tensor([[1.0, 0.0], [2.0, 3.0]], requires_grad=True)
    assert x.all().tolist() is False and R.any(x).tolist() is True
    assert x.all(dim=1).tolist() == [False, True] and x.any(0, keepdim=True).tolist() == [[True, True]]
    assert x.all().grad_fn is None and not x.all().requires_grad
    assert (x * 0 == 0).all().tolist() is True


def test_var_mean_is_one_node_with_two_outputs():
    import numpy as np

    x = np.array([[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]])
    a = R.tensor(x, requires_grad=True)
    var, mean = R.var_mean(a, dim=1)
    np.testing.assert_allclose(var.detach().numpy(), x.var(axis=1, ddof=1), rtol=1e-6)
    np.testing.assert_allclose(mean.detach().numpy(), x.mean(axis=1), rtol=1e-6)
    assert var.grad_fn is mean.grad_fn and (var.output_nr, mean.output_nr) == (0, 1)
    mean.sum().backward(retain_graph=True)  # only the mean's gradient arrives
    np.testing.assert_allclose(a.grad.numpy(), np.full((2, 3), 1 / 3), rtol=1e-6)
    a.grad = None
    var.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * (x - x.mean(axis=1, keepdims=True)) / 2, rtol=1e-6)


def test_prod_and_its_gradients_match_finite_differences_with_and_without_zeros():
    import numpy as np

    from reference.autograd import gradcheck, gradgradcheck

    for x in (np.array([[1.5, -2.0, 0.5], [3.0, 0.25, -1.0]]), np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]])):
        np.testing.assert_allclose(R.tensor(x).prod().numpy(), x.prod())
        np.testing.assert_allclose(R.prod(R.tensor(x), 1, keepdim=True).numpy(), x.prod(axis=1, keepdims=True))
        a = R.tensor(x, requires_grad=True)
        (g,) = R.autograd.grad(a.prod(dim=0).sum(), a)
        others = x[::-1]  # two rows: each element's gradient is the other row
        np.testing.assert_allclose(g.numpy(), others)
        for fn in (lambda t: t.prod(), lambda t: t.prod(-1), lambda t: t.prod(0, keepdim=True)):
            assert gradcheck(fn, (a,)) and gradgradcheck(fn, (a,))
    assert R.tensor([2.0, 3.0], requires_grad=True).prod().grad_fn.name() == "ProdBackward0"
