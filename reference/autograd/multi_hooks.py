"""Hooks over several tensors: ``torch.autograd.graph``'s ``register_multi_grad_hook``.

A multi-grad hook is one tensor hook per tensor, sharing per-backward state kept on the
running graph task (reference.autograd.engine.GraphTask), so it never outlives that backward.
The hooks reach their tensors' graph positions through weak references only: a hook stored
on a node (or a leaf) that held the node (or the leaf) would be a reference cycle.
"""
from __future__ import annotations

import itertools
import weakref

from reference.autograd.engine import current_task
from reference.tensor import Tensor

_ids = itertools.count()


class MultiHandle:
    """Removes every per-tensor hook of one ``register_multi_grad_hook`` call."""

    __slots__ = ("_handles",)

    def __init__(self, handles):
        self._handles = tuple(handles)

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def _position(tensor):
    """A weak way back to where ``tensor`` receives its gradient: its node, or the leaf."""
    if tensor._node is not None:
        return (weakref.ref(tensor._node), False)
    return (weakref.ref(tensor), True)


def _will_receive(position, task) -> bool:
    ref, is_leaf = position
    target = ref()
    if target is None:
        return False
    if is_leaf:
        accumulator = target._grad_accumulator
        target = accumulator() if accumulator is not None else None
        if target is None:
            return False
    return target in task.nodes


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Run ``fn`` once per backward that reaches ``tensors``.

    mode "all": after every tensor that this backward gives a gradient has got it, with the
    tuple of their gradients (None for the others). rule: hooks.multi-grad-hook-all
    mode "any": on the first gradient computed for any of them, with that gradient.
    rule: hooks.multi-grad-hook-any
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"register_multi_grad_hook expects tensors, got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    key = next(_ids)
    positions = tuple(_position(t) for t in tensors)
    count = len(tensors)

    def state_of(task):
        if task.multi_hooks is None:
            task.multi_hooks = {}
        state = task.multi_hooks.get(key)
        if state is None:
            state = task.multi_hooks[key] = {"grads": [None] * count, "left": None, "done": False}
        return state

    def make_hook(index):
        def hook(grad):
            task = current_task()
            if task is None:
                return None
            state = state_of(task)
            if state["done"]:
                return None
            if mode == "any":  # rule: hooks.multi-grad-hook-any
                state["done"] = True
                fn(grad)
                return None
            if state["left"] is None:
                state["left"] = sum(1 for p in positions if _will_receive(p, task))
            state["grads"][index] = grad
            state["left"] -= 1
            if state["left"] <= 0:  # rule: hooks.multi-grad-hook-all
                state["done"] = True
                grads, state["grads"] = tuple(state["grads"]), None
                fn(grads)
            return None

        return hook

    # rule: hooks.multi-grad-hook-handle-lifetime -- the tensors' hooks own fn; the handle only removes them
    return MultiHandle(t.register_hook(make_hook(i)) for i, t in enumerate(tensors))
