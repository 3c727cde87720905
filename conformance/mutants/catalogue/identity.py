"""Curated mutants of the identity suite's area: object identity: the same tensor, gradient, node or
saved object comes back, not a new wrapper.

Importing the module registers them; the package imports the areas in a fixed order.
"""
from __future__ import annotations

import gc

from conformance.mutants import edit, mutant, original, replace, single_edit
from conformance.mutants.catalogue.shared import double_function, fresh_alias, fw, leaf


def _probe_grad_is_grad():
    x = leaf()
    (x * 2).sum().backward()
    return x.grad is x.grad


@mutant("identity.fresh-grad-wrapper-per-read",
        models="PyTorch before PyObject preservation (pytorch#22884) and OneFlow's pybind11 tensor "
               "wrapper: every read of .grad wraps the C++ gradient in a new Python object",
        rules=("identity.grad-same-object", "identity.grad-stable-id"), probe=_probe_grad_is_grad)
def _():
    """`.grad` returns a new tensor object sharing the gradient's storage on each read."""
    edit("reference.tensor:Tensor.grad", "return self._grad",
         "return None if self._grad is None else Tensor._wrap(self._grad._array)")


def _probe_saved_self_attr():
    x = leaf()
    x.tag = "mine"
    y = x * x
    return getattr(y.grad_fn._saved_self, "tag", None)


@mutant("identity.saved-input-rewrapped",
        models="PyTorch < 1.9 SavedVariable::unpack building a new Variable (and a new PyObject) "
               "for a saved leaf: user attributes, subclass and weakrefs are lost",
        rules=("identity.saved-input-same-object", "identity.attributes-survive-framework-ownership"),
        probe=_probe_saved_self_attr)
def _():
    """A saved input is unpacked as a new tensor sharing data and version counter."""
    edit("reference.autograd.graph:SavedTensor.unpack", "return tensor if as_tensor else tensor._array",
         "return _fresh_alias(tensor) if as_tensor else tensor._array")
    replace("reference.autograd.graph:_fresh_alias", fresh_alias)




def _probe_grad_fn_is():
    y = leaf() * 2
    return y.grad_fn is y.grad_fn


@mutant("identity.grad-fn-fresh-per-read",
        models="OneFlow's and MXNet's Python grad_fn/FunctionNode proxies, created per attribute read",
        rules=("identity.grad-fn-same-object", "identity.grad-fn-stable-id"), probe=_probe_grad_fn_is)
def _():
    """`grad_fn` returns a shallow copy of the node on each read."""
    edit("reference.tensor:Tensor.grad_fn", "return self._node",
         "import copy\nreturn None if self._node is None else copy.copy(self._node)")


def _probe_grad_assign():
    x = leaf()
    g = fw().ones(2)
    x.grad = g
    return x.grad is g


@mutant("identity.grad-assignment-copies",
        models="MXNet's attach_grad buffers and frameworks that copy an assigned gradient into "
               "their own storage instead of keeping the user's tensor",
        rules="identity.grad-assignment-keeps-object", probe=_probe_grad_assign)
def _():
    """Assigning `.grad` stores a copy of the tensor."""
    edit("reference.tensor:Tensor.grad", "self._grad = value",
         "self._grad = value if value is None else value.clone()", setter=True)


def _probe_accumulate_in_place():
    x = leaf()
    (x * 2).sum().backward()
    first = x.grad
    (x * 2).sum().backward()
    return first is x.grad, first.tolist()


@mutant("identity.accumulate-out-of-place",
        models="functional gradient accumulation (JAX-style `grad = grad + g`, OneFlow's "
               "AccumulateGrad replacing the grad tensor): references to the old .grad go stale",
        rules="identity.grad-accumulates-in-place", probe=_probe_accumulate_in_place)
def _():
    """A later gradient replaces `.grad` with a new tensor instead of adding in place."""
    edit("reference.autograd.accumulate:_store_grad_locked",
         "current._array += ops.raw(grad)\n        current._version_counter[0] += 1",
         "variable._grad = ops.as_tensor(current._array + ops.raw(grad))")


def _probe_create_graph_accumulate():
    x = leaf()
    (x * x).sum().backward(create_graph=True)
    first = x.grad
    before = first.detach().numpy().copy().tolist()
    (x * x).sum().backward(create_graph=True)
    return first is x.grad, before == first.detach().numpy().tolist()


@mutant("identity.create-graph-accumulates-in-place",
        models="an engine that always accumulates in place, also when the gradient has history "
               "(PyTorch's AccumulateGrad takes the out-of-place path under create_graph)",
        rules="identity.create-graph-accumulates-out-of-place", probe=_probe_create_graph_accumulate)
def _():
    """Under create_graph, the next gradient is added into the old `.grad` object."""
    edit("reference.autograd.accumulate:_store_grad_locked", "variable._grad = current + grad",
         "current._array += grad._array; current._version_counter[0] += 1")


def _probe_del_grad():
    x = leaf()
    (x * 2).sum().backward()
    del x.grad
    return x.grad is None


@mutant("identity.del-grad-ignored",
        models="a `.grad` deleter that is a no-op (C-extension getset tables without a deleter "
               "that silently accept del), as in early OneFlow",
        rules="identity.del-grad-resets", probe=_probe_del_grad)
def _():
    """`del x.grad` leaves the gradient in place."""
    replace("reference.tensor:Tensor.grad",
            property(original("reference.tensor:Tensor.grad").fget,
                     original("reference.tensor:Tensor.grad").fset, lambda self: None))


def _probe_data_object():
    x = leaf()
    d = x.data
    return d._version_counter is x._version_counter


@mutant("identity.data-shares-version-counter",
        models="PyTorch 0.4's `.data` vs `.detach()` distinction lost: a framework implementing "
               "`.data` as detach(), so writes through it bump the version the graph checks",
        rules=("identity.data-detach-new-objects", "engine.data-bypasses-autograd"), probe=_probe_data_object)
def _():
    """`.data` returns `detach()` (shared version counter) instead of a fresh counter."""
    edit("reference.tensor:Tensor.data", "return Tensor._wrap(self._array)", "return self.detach()")


def _probe_inplace_self():
    t = fw().tensor([1.0, 2.0])
    return t.add_(1.0) is t


@mutant("identity.inplace-returns-new-object",
        models="OneFlow/early MXNet in-place methods returning a new Python wrapper of the same "
               "storage instead of self",
        rules="identity.inplace-returns-self", probe=_probe_inplace_self)
def _():
    """In-place arithmetic returns a new alias object instead of `self`."""
    edit("reference.ops.inplace:_apply_inplace", "    return self\n",
         "    return _fresh_alias(self)\n")
    replace("reference.ops.inplace:_fresh_alias", fresh_alias)


def _probe_metadata():
    y = leaf() * 2
    y.grad_fn.metadata["k"] = 1
    return y.grad_fn.metadata.get("k")


@mutant("identity.node-metadata-not-stored",
        models="a node's metadata dict created per read (C++ nodes without a PyObject slot "
               "to keep it, as PyTorch's before Node::metadata moved into the node)",
        rules="identity.node-metadata-persistent", probe=_probe_metadata)
def _():
    """`node.metadata` is a new empty dict on every read."""
    edit("reference.autograd.graph:NodeBase.metadata", "return extras.metadata", "return {}")


def _probe_node_name():
    Double = double_function()

    return Double.apply(leaf()).grad_fn.name()


@mutant("identity.custom-function-generic-node-name",
        models="PyTorch < 1.3's custom-function nodes all named `CppFunction`/`PythonFunction` "
               "(and OneFlow's generic FunctionNode names)",
        rules=("identity.custom-function-node-name",), probe=_probe_node_name)
def _():
    """Custom Function nodes report a generic name instead of `<Name>Backward`."""
    replace("reference.autograd.function:BackwardCFunction.name", lambda self: "PythonFunction")


def _probe_saved_result_distinct():
    x = leaf()
    y = x.exp()
    return y.grad_fn._saved_result is y


@mutant("identity.saved-output-is-output",
        models="a node saving its output tensor itself (PyTorch's SavedVariable before the "
               "is_output split): unpack returns the output object, and output -> node -> output "
               "is a reference cycle",
        rules=("identity.saved-output-distinct-object", "gc_cycles.plain-graph-freed-by-refcount"),
        probe=_probe_saved_result_distinct)
def _():
    """Built-in ops save their own output as the tensor itself (strongly)."""
    edit("reference.ops.recording:save_output", "return SavedTensor(tensor, True)",
         "return SavedTensor(tensor, False)")


def _probe_weak_dict_equal_values():
    from reference.utils.weak import WeakIdKeyDictionary

    d = WeakIdKeyDictionary()
    a, b = fw().ones(2), fw().ones(2)
    d[a] = "first"
    d[b] = "second"
    return len(d)


@mutant("identity.weak-dict-keys-by-value",
        models="a weak-keyed table built on weakref.WeakKeyDictionary semantics (keys compared by value "
               "and hashed by contents): equal-valued tensors share one entry",
        rules="identity.weak-id-key-dictionary-entry-dies-with-tensor", probe=_probe_weak_dict_equal_values)
def _():
    """WeakIdRef hashes alike and compares by value."""
    edit("reference.utils.weak:WeakIdRef.__hash__", "return self._id", "return 0")
    edit("reference.utils.weak:WeakIdRef.__eq__", "return mine is theirs", "return bool((mine == theirs).all())")


_HELD_KEYS: list = []


def _probe_weak_dict_holds_keys():
    from reference.utils.weak import WeakIdKeyDictionary

    d = WeakIdKeyDictionary()
    d[fw().ones(2)] = "dead"
    gc.collect()
    return len(d)


@mutant("identity.weak-dict-holds-keys",
        models="a side table that keeps its keys alive (a plain dict keyed by id with the tensor kept "
               "as well): every tensor it ever saw leaks",
        rules="identity.weak-id-key-dictionary-entry-dies-with-tensor", probe=_probe_weak_dict_holds_keys)
def _():
    """WeakIdKeyDictionary keeps a strong reference to each key."""
    replace("reference.utils.weak:_HELD_KEYS", _HELD_KEYS)
    edit("reference.utils.weak:WeakIdKeyDictionary.__setitem__", "self.data[self.ref_type(key, self._remove)] = value",
         "self.data[self.ref_type(key, self._remove)] = value\n_HELD_KEYS.append(key)")


def _probe_kept_gradient():
    x = leaf()
    kept = []
    x.register_hook(lambda g: kept.append(g))
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    return kept[0].tolist()


single_edit("identity.grad-steals-held-buffer", "reference.autograd.accumulate:can_take_over",
            "if references > 1 or getattr(grad, \"base\", True) is not None:",
            "if getattr(grad, \"base\", True) is not None:",
            models="an engine that always makes the incoming gradient the leaf's .grad, without asking "
                   "whether anything else (a hook, the user) still holds it",
            rules="identity.grad-takes-over-unshared-buffer", probe=_probe_kept_gradient)
