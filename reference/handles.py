"""Hook tables and their handles: where registered hooks are kept, and what removes one.

A tensor (leaf hooks, post-accumulate hooks) or a node (pre-hooks, post-hooks, tensor
hooks of a non-leaf) keeps its hooks in a ``HookDict``, in registration order. The
``RemovableHandle`` returned by each registration refers to its dict weakly, so a handle
kept by the user never keeps hooks (or what they close over) alive.
"""
from __future__ import annotations

import itertools
import weakref

_hook_ids = itertools.count()


class HookDict(dict):
    """An ordered id -> hook mapping that a RemovableHandle can reference weakly."""

    __slots__ = ("__weakref__",)


class RemovableHandle:
    """Removes one hook from the dict it was added to; removing twice is harmless."""

    __slots__ = ("_dict_ref", "id")

    def __init__(self, hooks: HookDict):
        self.id = next(_hook_ids)
        # rule: hooks.handle-does-not-own-hooks -- the handle refers to the hook dict weakly
        self._dict_ref = weakref.ref(hooks)

    def remove(self) -> None:
        hooks = self._dict_ref()
        if hooks is not None:
            # rule: hooks.handle-remove-idempotent
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def add_hook(hooks: HookDict, fn) -> RemovableHandle:
    handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    return handle
