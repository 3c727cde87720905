"""Module full backward hooks: the identity Function they stand on, and the object joining both ends.

``module.register_full_backward_hook(hook)`` runs ``hook(module, grad_input, grad_output)``
once the gradients w.r.t. the module's tensor inputs are known; ``register_full_backward_pre_hook``
runs ``hook(module, grad_output)`` when those w.r.t. its outputs arrive. As in torch, a call of a
module with such hooks passes its tensor inputs, and then its tensor outputs, through
``BackwardHookFunction`` (an identity custom Function: its outputs are views of its inputs, so an
in-place write to them is refused as for any custom Function's view), and a ``BackwardHook``
object, made per call, is reached from both ``BackwardHookFunctionBackward`` nodes through their
post-hooks. So the graph owns the module (through that object) as long as the graph lives; the
hooks that run are those registered when the module was *called* (removing a handle afterwards
does not stop them for a graph already built).
"""
from __future__ import annotations

import warnings

from reference import grad_mode
from reference.autograd.function import Function
from reference.tensor import Tensor

NO_INPUT_REQUIRES_GRAD = (
    "Full backward hook is firing when gradients are computed with respect to module outputs since no "
    "inputs require gradients. See https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
    "#torch.nn.Module.register_full_backward_hook for more details."
)


class BackwardHookFunction(Function):
    """Identity on tensors; its backward node is where a module's backward hooks attach."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[arg for arg in args if not arg.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *args):
        return args


def _spread(indices, values, size) -> tuple:
    """``values`` at ``indices`` of a ``size``-tuple of Nones (non-tensor arguments stay None)."""
    out = [None] * size
    for index, value in zip(indices, values):
        out[index] = value
    return tuple(out)


class BackwardHook:
    """One module call's backward hooks: the gradients w.r.t. the outputs, caught on the outputs'
    node, are kept here until the inputs' node runs the user hooks with both."""

    def __init__(self, module, user_hooks, user_pre_hooks) -> None:
        # rule: hooks.module-full-backward-hook-lifetime -- lists copied at call time; the module is owned
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = -1
        self.input_tensors_index = self.output_tensors_index = None

    def _through_function(self, args, on_node):
        """``args`` with its tensors passed through BackwardHookFunction (when one requires grad
        and grad mode is on), ``on_node`` given that Function's node; and the tensors' indices."""
        indices = [i for i, arg in enumerate(args) if isinstance(arg, Tensor)]
        tensors = [args[i] for i in indices]
        if not (grad_mode.is_grad_enabled() and any(t.requires_grad for t in tensors)):
            return args, None
        new_tensors = BackwardHookFunction.apply(*tensors)
        node = next(t.grad_fn for t in new_tensors
                    if t.grad_fn is not None and t.grad_fn.name() == "BackwardHookFunctionBackward")
        on_node(node)
        replaced = list(args)
        for index, tensor in zip(indices, new_tensors):
            replaced[index] = tensor
        return (tuple(replaced) if type(args) is tuple else type(args)(*replaced)), indices

    def setup_input_hook(self, args):
        def run_user_hooks(grad_inputs, _grad_outputs):
            if self.grad_outputs is None:  # the gradient reached the inputs without passing the outputs
                return None
            grads = _spread(self.input_tensors_index, grad_inputs, self.n_inputs)
            for hook in self.user_hooks:
                out = hook(self.module, grads, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(grads):
                    raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                       f"got {len(out)}, but expected {len(grads)}")
                grads = out
            self.grad_outputs = None  # rule: hooks.module-full-backward-hook-lifetime -- not kept past its use
            return tuple(grads[i] for i in self.input_tensors_index)

        result, self.input_tensors_index = self._through_function(args, lambda node: node.register_hook(run_user_hooks))
        self.n_inputs = len(args)
        return result

    def setup_output_hook(self, result):
        def catch_grad_outputs(_grad_inputs, grad_outputs):
            # rule: hooks.module-full-backward-hook-order -- pre-hooks first, on the outputs' gradients
            self.grad_outputs = _spread(self.output_tensors_index, grad_outputs, self.n_outputs)
            for hook in self.user_pre_hooks:
                replaced = hook(self.module, self.grad_outputs)
                if replaced is None:
                    continue
                if len(replaced) != len(self.grad_outputs):
                    raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                       f"got {len(replaced)}, but expected {len(self.grad_outputs)}")
                self.grad_outputs = replaced
            grads = self.grad_outputs
            if self.input_tensors_index is None:  # no input requires grad: the hooks run here
                warnings.warn(NO_INPUT_REQUIRES_GRAD, UserWarning, stacklevel=2)
                nothing = _spread([], [], self.n_inputs)
                for hook in self.user_hooks:
                    out = hook(self.module, nothing, self.grad_outputs)
                    if out is not None and not (isinstance(out, tuple) and all(g is None for g in out)):
                        raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                           "always return None or None for all gradients.")
                self.grad_outputs = None
            return tuple(grads[i] for i in self.output_tensors_index)

        single = not isinstance(result, tuple)
        outputs = (result,) if single else result
        replaced, self.output_tensors_index = self._through_function(
            outputs, lambda node: node.register_hook(catch_grad_outputs))
        self.n_outputs = len(outputs)
        return replaced[0] if single else replaced
