"""Every error (and warning) the engine gives, with PyTorch 2.13's text where it has one.

Messages are compared exactly. Where torch names its own types ("torch.FloatTensor",
"torch.Size") the reference says "reference." instead; everything else is torch's text.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import reference as R
from reference.autograd import Function, once_differentiable
from tests.reference.helpers import FREED, INPLACE_HINT, arr, caught_warnings, error_of, leaf


def version_error(what, now, expected):
    return (
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: {what} is at version {now}; expected version {expected} instead. {INPLACE_HINT}"
    )


# -- tensor attributes --------------------------------------------------------------------
def test_data_assignment_errors():  # rule: identity.data-assign-keeps-object
    t = R.tensor(1.0, requires_grad=True)
    assert error_of(lambda: setattr(t, "data", R.tensor(3))) == (
        RuntimeError, "data set to a tensor that requires gradients must be floating point or complex dtype")
    assert error_of(lambda: setattr(t, "data", None)) == (
        TypeError, "Variable data has to be a tensor, but got NoneType")


def test_requires_grad_false_on_non_leaf():  # rule: engine.requires-grad-flag-leaf-only
    z = R.randn(3).requires_grad_() * 2
    msg = ("you can only change requires_grad flags of leaf variables. If you want to use a computed "
           "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().")
    assert error_of(lambda: z.requires_grad_(False)) == (RuntimeError, msg)
    assert error_of(lambda: setattr(z, "requires_grad", False)) == (RuntimeError, msg)


@pytest.mark.parametrize("name, message", [
    ("data", "Deleting tensor data is not allowed. Delete tensor instead!"),
    ("requires_grad", "requires_grad must be a bool"),
    ("_grad_fn", "Deletion of _grad_fn not allowed. Detach tensor instead!"),
    ("_backward_hooks", "Deletion of _backwards_hooks not allowed!"),
])
def test_attribute_deletions_refused(name, message):  # rule: identity.del-grad-resets
    x = R.randn(5, 5, requires_grad=True)
    assert error_of(lambda: delattr(x, name)) == (RuntimeError, message)


def test_non_leaf_grad_warning_text():  # rule: engine.nonleaf-grad-warning
    nl = R.empty(1).requires_grad_().clone()
    (category, message), = caught_warnings(lambda: nl.grad)
    assert category is UserWarning
    assert message.startswith(
        "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
        "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
        "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor "
        "by mistake, make sure you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 "
        "for more information.")


def test_retain_grad_requires_grad():
    assert error_of(lambda: R.ones(2).retain_grad()) == (
        RuntimeError, "can't retain_grad on Tensor that has requires_grad=False")


# -- hooks ---------------------------------------------------------------------------------
def test_register_hook_errors():  # rule: hooks.register-hook-needs-requires-grad
    assert error_of(lambda: R.randn(3).register_hook(lambda g: g)) == (
        RuntimeError, "cannot register a hook on a tensor that doesn't require gradient")
    lf = R.rand(3, requires_grad=True)
    assert error_of(lambda: (2.0 * lf).register_post_accumulate_grad_hook(lambda t: None)) == (
        RuntimeError, "post accumulate grad hooks cannot be registered on non-leaf tensors")


def test_hook_replacing_none_gradient():  # torch 2.13 behaviour; no rule of its own yet
    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1

    x = leaf([1.0, 2.0])
    p, q = Two.apply(x)
    q.register_hook(lambda g: R.ones(2, dtype=R.float64))
    assert error_of(lambda: p.sum().backward()) == (
        RuntimeError, "can't replace a None gradient with a non-None value")


def _hook_error(hook):
    x = R.randn(3, requires_grad=True)
    y = x * 2
    y.register_hook(hook)
    return error_of(lambda: y.sum().backward())


def hook_named(g):
    return R.ones(2, 2)


def test_tensor_hook_result_validation():  # rules: hooks.return-type-validated, hooks.return-metadata-validated
    assert _hook_error(lambda g: 1) == (TypeError, "expected Variable, but hook returned 'int'")
    assert _hook_error(lambda g: R.ones(4)) == (RuntimeError, "hook '<lambda>' has changed the size of value")
    assert _hook_error(lambda g: R.ones(3, dtype=R.float64)) == (
        RuntimeError, "hook '<lambda>' has changed the type of value (was reference.FloatTensor got reference.DoubleTensor)")
    assert _hook_error(hook_named) == (RuntimeError, "hook 'hook_named' has changed the size of value")


def test_callable_hook_without_name_is_fine():
    class Scale:
        def __call__(self, g):
            return g * 2

    x = leaf([1.0])
    y = x * 1
    y.register_hook(Scale())
    y.sum().backward()
    np.testing.assert_allclose(arr(x.grad), [2.0])


def _post_accumulate_error(hook):
    u = R.rand(2, 3, requires_grad=True)
    u.register_post_accumulate_grad_hook(hook)
    return error_of(lambda: u.sum().backward())


def test_post_accumulate_hook_must_return_none():  # rule: hooks.post-accumulate-must-return-none
    msg = "Tensor post accumulate grad hooks should return None."
    assert _post_accumulate_error(lambda p: p.grad) == (RuntimeError, msg)
    assert _post_accumulate_error(lambda p: p.detach()) == (RuntimeError, msg)
    assert _post_accumulate_error(lambda p: "s") == (TypeError, "expected Variable, but hook returned 'str'")


def test_node_prehook_must_return_a_tuple():
    y = R.ones(3, requires_grad=True) * 2
    y.grad_fn.register_prehook(lambda g: 5)
    assert error_of(lambda: y.sum().backward()) == (TypeError, "expected tuple, but hook returned 'int'")


# -- backward / grad arguments ----------------------------------------------------------------
def test_backward_argument_errors():
    x = R.ones(3, requires_grad=True)
    assert error_of(lambda: (x * 2).backward()) == (
        RuntimeError, "grad can be implicitly created only for scalar outputs")
    assert error_of(lambda: R.ones(3).sum().backward()) == (
        RuntimeError, "element 0 of tensors does not require grad and does not have a grad_fn")
    assert error_of(lambda: R.autograd.grad((x * 2).sum(), R.ones(3))) == (
        RuntimeError, "One of the differentiated Tensors does not require grad")
    assert error_of(lambda: (x * 2).backward(R.ones(2))) == (
        RuntimeError,
        "Mismatch in shape: grad_output[0] has a shape of reference.Size([2]) and output[0] has a shape of "
        "reference.Size([3]).")


def test_backward_inputs_cannot_be_empty():
    x = R.ones(3, requires_grad=True)
    assert error_of(lambda: (x * 2).sum().backward(inputs=[])) == (
        RuntimeError, "`inputs` argument to `backward()` cannot be empty.")


def test_backward_gradient_of_another_float_dtype_is_accepted():
    # torch 2.13 accepts a float64 gradient for a float32 output (no error)
    x = R.ones(3, requires_grad=True)
    (x * 2).backward(R.ones(3, dtype=R.float64))
    assert x.grad.dtype is R.float32
    np.testing.assert_allclose(arr(x.grad), [2.0, 2.0, 2.0])


def test_second_backward_errors_only_if_something_was_saved():  # rules: engine.second-backward-error, legacy_function.second-backward-without-retain-graph
    b = R.randn(3, requires_grad=True)
    c = b * b
    c.sum().backward()
    assert error_of(lambda: c.sum().backward()) == (RuntimeError, FREED)
    d = b + 1
    d.backward(R.ones(3))
    d.backward(R.ones(3))
    e = R.zeros(3)
    e[1:] = b[1:] * b[1:]
    e.backward(R.ones(3), retain_graph=True)
    e.backward(R.ones(3))
    assert error_of(lambda: e.backward(R.ones(3))) == (RuntimeError, FREED)


def test_version_counter_errors():  # rules: engine.version-counter-error, engine.version-counter-error-detail
    x = R.ones(3, requires_grad=True)
    a = x.clone()
    y = a * a
    a.add_(1)
    assert error_of(lambda: y.sum().backward()) == (
        RuntimeError, version_error("[reference.FloatTensor [3]], which is output 0 of Add,", 1, 0))
    x2 = R.randn(5, requires_grad=True)
    w = R.randn(5, requires_grad=True)
    z = (x2 * w).sum()
    with R.no_grad():
        x2 *= 2
    assert error_of(lambda: z.backward()) == (RuntimeError, version_error("[reference.FloatTensor [5]]", 1, 0))
    x3 = R.randn((), requires_grad=True)
    y3 = x3 ** 2
    x3.detach().zero_()
    assert error_of(lambda: y3.backward()) == (RuntimeError, version_error("[reference.FloatTensor []]", 1, 0))


def test_version_error_for_saved_output():  # rule: identity.saved-unpack-version-checked
    x = R.randn(3, requires_grad=True)
    z = R.exp(x)
    with R.no_grad():
        z += 1
    assert error_of(lambda: z.sum().backward()) == (
        RuntimeError, version_error("[reference.FloatTensor [3]], which is output 0 of Exp,", 1, 0))


def test_autograd_grad_unused_input():  # rule: engine.grad-unused-inputs
    x = R.ones(2, requires_grad=True)
    y = R.ones(2, requires_grad=True)
    assert error_of(lambda: R.autograd.grad((x * 2).sum(), [x, y])) == (
        RuntimeError,
        "The differentiated Tensor at index 1 appears to not have been used in the graph. "
        "Set allow_unused=True if this is the desired behavior.")
    gx, gy = R.autograd.grad((x * 2).sum(), [x, y], allow_unused=True)
    assert gy is None
    np.testing.assert_allclose(arr(gx), [2.0, 2.0])
    gx, gy = R.autograd.grad((x * 2).sum(), [x, y], allow_unused=True, materialize_grads=True)
    np.testing.assert_allclose(arr(gy), [0.0, 0.0])


def test_inplace_on_leaf_errors():  # rule: engine.leaf-inplace-error
    x = R.zeros(3, requires_grad=True)
    assert error_of(lambda: x.add_(1)) == (
        RuntimeError, "a leaf Variable that requires grad is being used in an in-place operation.")
    assert error_of(lambda: x.view_as(x).add_(1)) == (
        RuntimeError, "a view of a leaf Variable that requires grad is being used in an in-place operation.")
    with R.no_grad():
        x[0] = 5
    assert x.is_leaf and x.grad_fn is None and x.requires_grad
    np.testing.assert_allclose(arr(x), [5.0, 0.0, 0.0])
    assert error_of(lambda: R.ones(1, dtype=R.long).requires_grad_()) == (
        RuntimeError, "only Tensors of floating point dtype can require gradients")
    a = R.randn(2, 3)
    b = a[:]
    a.requires_grad = True
    assert error_of(lambda: b.add_(5)) == (
        RuntimeError, "a view of a leaf Variable that requires grad is being used in an in-place operation.")


def test_grad_assignment_validation():  # rule: engine.grad-assignment-validated
    x = R.randn(5, 5)
    assert error_of(lambda: setattr(x, "grad", 0)) == (
        TypeError, "assigned grad expected to be a Tensor or None but got grad of type int")
    assert error_of(lambda: setattr(x, "grad", R.randn(2, 2))) == (
        RuntimeError,
        "attempting to assign a gradient of size '[2, 2]' to a tensor of size '[5, 5]'. Please ensure that "
        "the gradient and the tensor are the same size")
    assert error_of(lambda: setattr(x, "grad", x)) == (RuntimeError, "can't assign Variable as its own grad")


def test_grad_assignment_dtype_message():  # rule: engine.grad-assignment-validated
    x = R.randn(5, 5)
    assert error_of(lambda: setattr(x, "grad", R.ones(5, 5, dtype=R.long))) == (
        RuntimeError,
        "attempting to assign a gradient with dtype 'long int' to a tensor with grad_dtype 'Float'. The gradient "
        "must match the tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype "
        "attribute with a specific dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the "
        "dtypes of a tensor and its gradient may break downstream systems that assume they match.")


# -- custom Functions (4.x) ----------------------------------------------------------------
LEGACY = ("Legacy autograd function with non-static forward method is deprecated. Please use new-style "
          "autograd function with static forward method. (Example: "
          "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")


def test_legacy_call_and_instantiation_warning():  # rules: legacy_function.instance-call-raises, legacy_function.instantiation-warns
    class Legacy(Function):
        def forward(self, x):
            return x

        def backward(self, g):
            return g

    box = []
    got = caught_warnings(lambda: box.append(Legacy()))
    assert got == [(DeprecationWarning,
                    f"{Legacy!r} should not be instantiated. Methods on autograd functions are all static, so you "
                    "should invoke them on the class itself. Instantiating an autograd function will raise an "
                    "error in a future version of PyTorch.")]
    assert isinstance(box[0], Legacy)
    assert error_of(lambda: box[0](R.randn(3, 4))) == (RuntimeError, LEGACY)


def test_missing_forward_backward_and_both():  # rules: legacy_function.missing-forward-raises, legacy_function.missing-backward-raises-at-backward
    class BadFw(Function):
        @staticmethod
        def backward(ctx, foo):
            return foo

    class BadBw(Function):
        @staticmethod
        def forward(ctx, foo):
            return foo.clone()

    class BadBw2(Function):
        @staticmethod
        def forward(ctx, foo):
            return foo.clone()

        @staticmethod
        def backward(ctx, foo):
            return foo

        @staticmethod
        def vjp(ctx, foo):
            return foo

    inp = R.rand(1, requires_grad=True)
    assert error_of(lambda: BadFw.apply(inp)) == (
        NotImplementedError, "You must implement the forward function for custom autograd.Function.")
    out = BadBw.apply(inp)
    assert out.grad_fn.name() == "BadBwBackward"
    assert error_of(lambda: out.sum().backward()) == (
        NotImplementedError,
        "You must implement either the backward or vjp method for your custom autograd.Function to use it with "
        "backward mode AD.")
    assert error_of(lambda: BadBw2.apply(inp).sum().backward()) == (
        RuntimeError,
        "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You should only implement "
        "one of them.")


def test_saved_tensors_after_free():  # rule: legacy_function.saved-tensors-after-free-message
    class MyFn(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, None)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    a = R.randn(5, requires_grad=True)
    y = MyFn.apply(a)
    saved = y.grad_fn.saved_tensors
    assert saved[0] is a and saved[1] is None
    y.sum().backward()
    assert error_of(lambda: y.grad_fn.saved_tensors) == (RuntimeError, FREED)
    assert error_of(lambda: y.grad_fn._raw_saved_tensors) == (RuntimeError, FREED)

    class Sq(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = R.tensor([3.0], requires_grad=True)
    y = Sq.apply(x)
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(arr(x.grad), [12.0])
    assert error_of(lambda: y.backward()) == (RuntimeError, FREED)


def test_custom_function_saved_tensor_version_check():  # rule: legacy_function.saved-tensors-version-check
    class Sq(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    a = R.ones(3, requires_grad=True)
    b = a.clone()
    y = Sq.apply(b)
    b.add_(1)
    assert error_of(lambda: y.sum().backward()) == (
        RuntimeError, version_error("[reference.FloatTensor [3]], which is output 0 of Add,", 1, 0))


class Dirty(Function):
    @staticmethod
    def forward(ctx, inp):
        inp.add_(1)
        ctx.mark_dirty(inp)
        return inp

    @staticmethod
    def backward(ctx, g):
        return g


def test_mark_dirty_errors():  # rules: legacy_function.mark-dirty-leaf-raises, legacy_function.mark-dirty-not-returned-raises, legacy_function.mark-dirty-non-input-reported
    lf = R.tensor([1.0, 2.0], requires_grad=True)
    assert error_of(lambda: Dirty.apply(lf)) == (
        RuntimeError, "a leaf Variable that requires grad has been used in an in-place operation.")
    assert error_of(lambda: Dirty.apply(lf.view_as(lf))) == (
        RuntimeError, "a view of a leaf Variable that requires grad is being used in an in-place operation.")

    class NotReturned(Function):
        @staticmethod
        def forward(ctx, a, b):
            a.add_(b)
            ctx.mark_dirty(a)
            return a.clone(), a + b

        @staticmethod
        def backward(ctx, ga, gab):
            return ga + gab, ga + 2 * gab

    a = R.ones(2, requires_grad=True)
    b = R.ones(2, requires_grad=True)
    assert error_of(lambda: NotReturned.apply(a.clone(), b)) == (
        RuntimeError,
        "Some elements marked as dirty during the forward method were not returned as output. The inputs that "
        "are modified inplace must all be outputs of the Function.")

    class ViewOfIntermediate(Function):
        @staticmethod
        def forward(ctx, inp):
            out = inp.clone().view_as(inp)
            ctx.mark_dirty(out)
            return out

        @staticmethod
        def backward(ctx, g):
            return g

    assert error_of(lambda: ViewOfIntermediate.apply(a.clone())) == (
        RuntimeError,
        "ctx.mark_dirty() received a tensor that was not an input. Only input Tensors that have been mutated "
        "should be passed to ctx.mark_dirty().")


def test_mark_dirty_non_input_that_is_not_a_view_only_warns():  # rule: legacy_function.mark-dirty-non-input-reported
    class NonInput(Function):
        @staticmethod
        def forward(ctx, a, b):
            c = 3 * a
            c.add_(b)
            ctx.mark_dirty(c)
            return c

        @staticmethod
        def backward(ctx, g):
            return 3 * g, 3 * g

    a = R.ones(2, requires_grad=True)
    b = R.ones(2, requires_grad=True)
    got = caught_warnings(lambda: NonInput.apply(a.clone(), b))
    assert len(got) == 1 and got[0][0] is UserWarning
    assert got[0][1].startswith("ctx.mark_dirty() received a tensor that was not an input.")


def test_custom_function_gradient_count_and_shape_errors():
    x = R.ones(3, requires_grad=True)

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    class G(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return R.ones(5)

    class H(Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, R.ones(1)

    assert error_of(lambda: F.apply(x).sum().backward()) == (
        RuntimeError, "function FBackward returned an incorrect number of gradients (expected 1, got 2)")
    assert error_of(lambda: G.apply(x).sum().backward()) == (
        RuntimeError, "Function GBackward returned an invalid gradient at index 0 - got [5] but expected shape "
                      "compatible with [3]")
    assert error_of(lambda: H.apply(x, 2).sum().backward()) == (
        RuntimeError, "function HBackward returned a gradient different than None at position 2, but the "
                      "corresponding forward input was not a Variable")


def test_once_differentiable_double_backward_error():  # rule: legacy_function.once-differentiable-double-backward-raises
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = R.tensor([3.0], requires_grad=True)
    go = R.ones(1, requires_grad=True)
    (g,) = R.autograd.grad(F.apply(x), x, grad_outputs=go, create_graph=True)
    assert g.requires_grad and g.grad_fn.name() == "reference::autograd::Error"
    assert error_of(lambda: g.backward()) == (
        RuntimeError, "trying to differentiate twice a function that was marked with @once_differentiable")


def test_saved_variables_is_deprecated():  # torch 2.13 behaviour (ctx.saved_variables); no rule of its own
    class F(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a + b

        @staticmethod
        def backward(ctx, g):
            v1, v2 = ctx.saved_variables
            return g, g

    x = R.randn(3, requires_grad=True)
    y = R.randn(3, requires_grad=True)
    got = caught_warnings(lambda: F.apply(x, y).sum().backward())
    assert got == [(DeprecationWarning, "'saved_variables' is deprecated; use 'saved_tensors'")]


def test_create_graph_warning_text():  # rule: gc_cycles.create-graph-backward-warns-cycle
    b = R.randn(3, requires_grad=True, dtype=R.float64)
    c = b * b
    (category, message), = caught_warnings(lambda: c.backward(R.ones_like(c), create_graph=True))
    b.grad = None
    assert category is UserWarning
    assert message.startswith(
        "Using backward() with create_graph=True will create a reference cycle between the parameter and its "
        "gradient which can cause a memory leak. We recommend using autograd.grad when creating the graph to "
        "avoid this. If you have to use this function, make sure to reset the .grad fields of your parameters to "
        "None after use to break the cycle and avoid the leak.")


def test_warnings_are_not_errors_by_default():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = leaf([1.0])
        (x * 2).sum().backward()
        assert x.grad is not None
