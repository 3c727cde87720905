"""How an op joins the autograd graph: edges to its inputs, saved tensors, its outputs.

This is the hot path of every differentiable op, so it reads grad mode once, checks
``requires_grad`` on raw slots, and allocates one node per op with its saved tensors
in one tuple (no closures, no per-op dicts).
"""
from __future__ import annotations

from reference import grad_mode
from reference.autograd import forward_ad
from reference.autograd.graph import SavedTensor, grad_accumulator
from reference.tensor import Tensor


_grad_state = grad_mode._state


def needs_grad(a, b=None) -> bool:
    """Whether an op on ``a`` (and ``b``) must record a node: grad mode is on and an
    input requires grad. Operands other than tensors (numbers, None) never do."""
    return _grad_state.enabled and (
        getattr(a, "_requires_grad", False) or getattr(b, "_requires_grad", False)
    )


def has_tangent(a, b=None) -> bool:
    """Whether an op on ``a`` (and ``b``) must propagate forward-AD tangents."""
    if getattr(a, "_fw_grads", None) or getattr(b, "_fw_grads", None):
        return forward_ad.propagating()
    return False


_NO_EDGE = (None, 0)


def edge(value):
    """The (node, output_nr) through which a gradient reaches ``value``'s history."""
    node = getattr(value, "_node", None)
    if node is not None:
        return (node, value._output_nr)
    if getattr(value, "_requires_grad", False):
        return (grad_accumulator(value), 0)
    return _NO_EDGE


def edges(a, b=_NO_EDGE) -> tuple:
    """The edges of a one- or two-input op."""
    if b is _NO_EDGE:
        return (edge(a),)
    return (edge(a), edge(b))


def save_input(value):
    """Save an op input for backward: tensors as themselves (version-checked), else as is."""
    if value.__class__ is Tensor or isinstance(value, Tensor):
        # rule: identity.saved-input-same-object
        return SavedTensor(value, False)
    return value


def save_output(tensor: Tensor) -> SavedTensor:
    """Save an op's own output without owning it (see SavedTensor)."""
    # rules: identity.saved-output-aliases-output, identity.saved-output-distinct-object, gc_cycles.save-for-backward-output-cycle-free
    return SavedTensor(tensor, True)


def attach(out: Tensor, node, output_nr: int = 0) -> Tensor:
    """Make ``node`` the grad_fn of ``out``."""
    out._node = node
    out._output_nr = output_nr
    out._requires_grad = True
    return out


def rebase_history(tensor: Tensor, node) -> None:
    """Make ``node`` the new grad_fn of ``tensor``; retain_grad follows the newest version."""
    old = tensor._node
    if tensor._retains_grad and old is not None and old._extras is not None and old._extras.retains_grad:
        ref = old._extras.retains_grad.pop(tensor._output_nr, None)
        if ref is not None:
            extras = node._get_extras()
            if extras.retains_grad is None:
                extras.retains_grad = {}
            extras.retains_grad[0] = ref
    attach(tensor, node)


def raw(value):
    """The array behind a tensor; Python scalars pass through unchanged."""
    return getattr(value, "_array", value)


def shape_of(value) -> tuple:
    return value._array.shape if isinstance(value, Tensor) else ()


def requires_grad(value) -> bool:
    return isinstance(value, Tensor) and value._requires_grad


def propagate_tangent(out: Tensor, rule, *inputs) -> None:
    """Give ``out`` the tangent ``rule(*tangents_of(inputs))`` (forward-mode AD).

    Called only when ``has_tangent(...)`` holds; ``rule`` gets None for an input
    without a tangent and may return None (no tangent). The rule's own arithmetic does
    not propagate tangents further.
    """
    tangents = forward_ad.tangents_of(*inputs)
    with forward_ad.suppress_propagation():
        tangent = rule(*tangents)
    if tangent is not None:
        forward_ad.set_tangent(out, tangent)


def add_tangents(*terms):
    """Sum the non-None terms (None when all are None)."""
    total = None
    for term in terms:
        if term is not None:
            total = term if total is None else total + term
    return total
