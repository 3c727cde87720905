"""Ops on Tensor subclasses (reference/overrides.py), checked against what torch 2.13 does."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import reference as R
from reference import overrides
from reference.ops import pointwise


class MyT(R.Tensor):
    pass


class Sub(MyT):
    pass


def test_results_are_aliases_of_the_plain_result_over_the_op_node():
    x = R.ones(3, requires_grad=True)
    s = x.as_subclass(MyT)
    y = s * x
    assert type(y) is MyT and y.grad_fn.name() == "AliasBackward0"
    assert [n.name() for n, _ in y.grad_fn.next_functions] == ["MulBackward0"]
    e = s.exp()
    exp_node = e.grad_fn.next_functions[0][0]
    assert exp_node.name() == "ExpBackward0" and type(exp_node._saved_result) is R.Tensor  # the plain result's


def test_every_entry_point_converts():
    x = R.ones(2, 2)
    s = x.as_subclass(MyT)
    for result in (x * s, s * x, x.mul(s), R.mul(x, s), R.exp(s), s.sum(), s.T, s.data, s.detach(), s[0],
                   R.cat([x, s]), R.stack([x, s]), R.ones_like(s), s == x, x.add_(s), s.gather(0, R.tensor([[0, 1]]))):
        assert type(result) is MyT, result
    assert all(type(t) is MyT for t in s.unbind()) and type(s.var_mean()) is tuple


def test_inplace_on_the_instance_returns_it_and_on_a_plain_tensor_an_alias():
    t = R.ones(2).as_subclass(MyT)
    assert t.mul_(2) is t and t.to(R.float32) is t
    p = R.zeros(2)
    r = p.add_(t)
    assert type(r) is MyT and r is not p and r._base is p


def test_most_derived_class_wins_and_unrelated_classes_refuse():
    t = R.ones(2).as_subclass(MyT)
    d = R.ones(2).as_subclass(Sub)
    assert type(t + d) is Sub and type(d + t) is Sub and type(R.cat([t, d])) is Sub

    class Other(R.Tensor):
        pass

    o = R.ones(2).as_subclass(Other)
    with pytest.raises(TypeError, match="unsupported operand"):
        t + o
    with pytest.raises(TypeError, match="no implementation found for 'mul'"):
        t.mul(o)


def test_parameter_and_plain_tensors_take_no_part():
    p = R.nn.Parameter(R.ones(2))
    assert type(p * 2) is R.Tensor and type(p.exp()) is R.Tensor

    class MyParam(R.nn.Parameter):
        pass

    q = MyParam(R.ones(2))
    assert type(q * 2) is R.Tensor and "mul" not in MyParam.__dict__  # opted out with its base
    assert R.Tensor.__dict__["mul"] is pointwise.mul  # plain Tensor methods are unwrapped
    assert not hasattr(R.Tensor.mul, "_torch_function_wrapper") and MyT.mul._torch_function_wrapper


def test_a_subclass_own_methods_and_torch_function_are_used():
    calls = []

    class Logged(R.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            calls.append(func)
            return super().__torch_function__(func, types, args, kwargs)

        def exp(self):
            return "own"

    s = R.ones(2).as_subclass(Logged)
    assert s.exp() == "own"
    out = s * 2
    assert type(out) is Logged and calls == [R.Tensor.__mul__]  # the function as Tensor has it


def test_autograd_grad_converts_for_subclass_inputs():
    r = R.ones(2, requires_grad=True).as_subclass(MyT)
    (g,) = R.autograd.grad((r * 2).sum(), r)
    assert type(g) is MyT
    np.testing.assert_allclose(g.detach().numpy(), [2.0, 2.0])
    x = R.ones(2, requires_grad=True)
    (gx,) = R.autograd.grad((x * 2).sum(), x)
    assert type(gx) is R.Tensor


def test_dispatch_switch_is_per_thread():
    seen = []
    s = R.ones(2).as_subclass(MyT)
    with overrides.DisableTorchFunctionSubclass():
        assert type(s * 2) is R.Tensor
        worker = threading.Thread(target=lambda: seen.append(type(s * 2)))
        worker.start()
        worker.join()
    assert seen == [MyT] and type(s * 2) is MyT


def test_super_in_a_subclass_method_dispatches_as_torch():
    class Logged(R.Tensor):
        def __add__(self, other):
            return super().__add__(other)

        def exp(self):
            return super().exp()

    s = R.ones(2).as_subclass(Logged)
    assert type(s + 1) is Logged and type(s.exp()) is Logged and type(s * 2) is Logged
    assert issubclass(Logged, R.Tensor) and Logged.__dict__.get("mul") is None  # the wrappers live in one base


def test_subclass_with_other_bases_and_kwargs():
    class Mixin:
        def tag(self):
            return "mixin"

    class Tagged(R.Tensor, Mixin):
        def __init_subclass__(cls, flag=None, **kwargs):
            super().__init_subclass__(**kwargs)
            cls.flag = flag

    class Flagged(Tagged, flag=True):
        pass

    t = R.ones(2).as_subclass(Flagged)
    assert type(t * 2) is Flagged and t.tag() == "mixin" and Flagged.flag is True


def test_subclass_prints_its_class_name_and_parameter_prints_tensor():
    # torch 2.13: MyT([1., 1.], grad_fn=<AliasBackward0>); a Parameter shows tensor(...)
    s = R.ones(2, requires_grad=True).as_subclass(MyT)
    assert repr(s) == "MyT([1., 1.], grad_fn=<AliasBackward0>)"
    assert repr(R.ones(2).as_subclass(Sub)) == "Sub([1., 1.])"
    assert repr(R.ones(2)) == "tensor([1., 1.])"
    assert repr(R.nn.Parameter(R.ones(2))) == "Parameter containing:\ntensor([1., 1.], requires_grad=True)"


def test_type_as_a_subclass_dispatches():
    # identity.subclass-op-results-are-subclass: torch 2.13 gives MyT for plain.type_as(subclass)
    s = R.ones(2).as_subclass(MyT)
    assert type(R.zeros(2).type_as(s)) is MyT
    assert type(R.zeros(2).type_as(R.ones(2))) is R.Tensor
    assert type(R.zeros(2).type_as(R.nn.Parameter(R.ones(2)))) is R.Tensor
