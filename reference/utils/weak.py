"""Weak tensor references as ``torch.utils.weak`` has them: keyed and compared by identity.

``weakref.WeakKeyDictionary`` compares keys with ``==``, which a tensor answers elementwise,
and hashes them with ``hash``; these classes use the object's identity instead. Nothing here
owns a tensor: a dictionary holds its keys through ``WeakIdRef`` and drops an entry when the
key dies (the removal callback holds the dictionary weakly, so no cycle is made), and a
tensor the engine still holds (saved for backward, another tensor's ``.grad``) is the same
Python object when it comes back, so its entry is found again.
"""
from __future__ import annotations

import weakref
from collections.abc import MutableMapping

from reference.tensor import Tensor

__all__ = ["TensorWeakRef", "WeakIdRef", "WeakIdKeyDictionary", "WeakTensorKeyDictionary"]


# rule: identity.tensor-weak-ref
class WeakIdRef(weakref.ref):
    """A weak reference that hashes as ``id(obj)`` and compares by identity.

    Two references are equal when both objects live and are the same object; once either
    died, only a reference equals itself (a new object reusing the id is another key).
    """

    __slots__ = ("_id",)

    def __init__(self, obj, callback=None):
        super().__init__(obj, callback)
        self._id = id(obj)

    def __hash__(self):
        return self._id

    def __eq__(self, other):
        if not isinstance(other, WeakIdRef):
            return NotImplemented
        mine, theirs = self(), other()
        if mine is not None and theirs is not None:
            return mine is theirs
        return self is other

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal


class TensorWeakRef:
    """``TensorWeakRef(t)()`` is ``t`` while it lives, None after."""

    __slots__ = ("ref",)

    def __init__(self, tensor):
        if not isinstance(tensor, Tensor):
            raise AssertionError(f"expected reference.Tensor, got {type(tensor)}.")
        self.ref = weakref.ref(tensor)

    def __call__(self):
        return self.ref()


# rules: identity.weak-id-key-dictionary-entry-dies-with-tensor, identity.weak-id-key-dictionary-survives-framework-ownership
class WeakIdKeyDictionary(MutableMapping):
    """A mapping whose keys are held weakly and compared by identity (tensors included)."""

    def __init__(self, dict=None, ref_type=WeakIdRef):  # noqa: A002 - torch's parameter name
        self.data = {}
        self.ref_type = ref_type
        self_ref = weakref.ref(self)

        def remove(ref, self_ref=self_ref):
            mapping = self_ref()
            if mapping is not None:
                mapping.data.pop(ref, None)

        self._remove = remove
        if dict is not None:
            self.update(dict)

    def _ref(self, key):
        try:
            return self.ref_type(key)
        except TypeError:
            return None  # an object that cannot be weakly referenced is never a key

    def __setitem__(self, key, value):
        self.data[self.ref_type(key, self._remove)] = value

    def __getitem__(self, key):
        ref = self._ref(key)
        if ref is None:
            raise KeyError(key)
        return self.data[ref]

    def __delitem__(self, key):
        ref = self._ref(key)
        if ref is None:
            raise KeyError(key)
        del self.data[ref]

    def __contains__(self, key):
        ref = self._ref(key)
        return ref is not None and ref in self.data

    def __iter__(self):
        for ref in list(self.data):  # a snapshot: keys may die while the caller iterates
            key = ref()
            if key is not None:
                yield key

    def __len__(self):
        return sum(1 for ref in list(self.data) if ref() is not None)

    def keyrefs(self):
        """The weak references to the keys (some may have died since)."""
        return list(self.data)

    def copy(self):
        new = type(self)(ref_type=self.ref_type)
        for key, value in list(self.items()):
            new[key] = value
        return new

    __copy__ = copy

    def __repr__(self):
        return f"<{type(self).__name__} at {id(self):#x}>"


WeakTensorKeyDictionary = WeakIdKeyDictionary
