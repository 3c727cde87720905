"""Node hooks (``node.register_prehook`` / ``node.register_hook`` through the adapter) where a
framework's binding may be missing or refuse every hook.

Why its own module: a binding that exists but cannot take a hook at all (OneFlow 0.9.0's
``FunctionNode.register_hook`` takes no arguments; it has no ``register_prehook``) is a missing
feature, UNSUPPORTED, not a refusal of the hook a test registered: judged as a refusal it made
``hooks.node-hooks-builtin`` DIVERGE and every test needing node hooks BLOCKED by it. Which one it
is, is observed: a binding that refuses a hook accepting any arguments refuses every hook.
"""
from __future__ import annotations

from conformance.api import Unsupported, missing_method, prerequisite

#: ``node.register_prehook`` / ``node.register_hook`` on a built-in node.
NODE_HOOKS = "hooks.node-hooks-builtin"


def _any_hook(*args, **kwargs):
    """A hook that accepts whatever it is called with and changes nothing."""
    return None


def _refuses_every_hook(register, node) -> bool:
    """Whether ``register(node, hook)`` refuses even a hook taking any arguments (a binding
    that cannot take a hook); one it accepts is removed again (it returns None: no change)."""
    try:
        handle = register(node, _any_hook)
    except Unsupported:
        raise
    except Exception:  # noqa: BLE001 - any refusal of the most permissive hook
        return True
    remove = getattr(handle, "remove", None)
    if callable(remove):
        try:
            remove()
        except Exception:  # noqa: BLE001 - a no-op hook left behind changes nothing
            pass
    return False


def register_on_node(adapter, node, hook, kind: str):
    """``adapter.register_node_prehook`` (``kind`` "pre") or ``register_node_hook`` ("post"):
    its handle, or ``Unsupported`` (feature ``node_hooks``) when the node has no such method or
    its binding refuses every hook; a refusal of this particular hook propagates as raised."""
    method = adapter.register_node_prehook if kind == "pre" else adapter.register_node_hook
    spelled = "register_prehook" if kind == "pre" else "register_hook"
    try:
        return method(node, hook)
    except Unsupported:
        raise
    except Exception as exc:
        if missing_method(exc):
            raise Unsupported(f"graph nodes have no {spelled} ({type(exc).__name__}: {exc})",
                              feature="node_hooks") from exc
        if _refuses_every_hook(method, node):
            raise Unsupported(f"node.{spelled} refuses every hook, even one taking any arguments "
                              f"({type(exc).__name__}: {exc})", feature="node_hooks") from exc
        raise


def node_prehook(adapter, node, fn, what: str = "grad_fn.register_prehook"):
    """A node pre-hook's handle (with ``remove()``, else BLOCKED by the node-hooks rule)."""
    with prerequisite(NODE_HOOKS, what=what) as pre:
        handle = register_on_node(adapter, node, fn, "pre")
        pre.check(callable(getattr(handle, "remove", None)),
                  f"register_prehook returned a handle with remove() (it returned {handle!r})")
    return handle


def node_hook(adapter, node, fn, what: str = "grad_fn.register_hook"):
    """A node post-hook's handle (with ``remove()``, else BLOCKED by the node-hooks rule)."""
    with prerequisite(NODE_HOOKS, what=what) as pre:
        handle = register_on_node(adapter, node, fn, "post")
        pre.check(callable(getattr(handle, "remove", None)),
                  f"register_hook returned a handle with remove() (it returned {handle!r})")
    return handle


def node_hooks_run(adapter, fw, device):
    """Check, before a test judges node hooks on another kind of node, that a pre-hook and a
    post-hook on a built-in node each run once in a plain backward."""
    with prerequisite(NODE_HOOKS, what="node hooks on a built-in node") as pre:
        a = fw.ones(1, requires_grad=True, device=device)
        b = a * 2
        calls = []
        node = adapter.grad_fn(b)
        node_prehook(adapter, node, lambda grad_outputs: calls.append("pre"))
        node_hook(adapter, node, lambda grad_inputs, grad_outputs: calls.append("post"))
        adapter.backward(fw.sum(b))
        pre.check(calls == ["pre", "post"],
                  f"a node pre-hook then post-hook ran once each in one backward (calls: {calls})")
