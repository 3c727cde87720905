"""Curated mutants of the gc_cycles suite's area: the graph's ownership: what a graph, a node, a
handle or a retained tensor keeps alive (no cycles that only the collector frees).

Importing the module registers them; the package imports the areas in a fixed order.
"""
from __future__ import annotations

import weakref

from conformance.mutants import edit, mutant, replace
from conformance.mutants.catalogue.shared import collected, fw, leaf


def _probe_graph_freed():
    def make():
        x = leaf()
        y = (x * x).exp()
        return y.grad_fn

    return collected(make)


@mutant("gc_cycles.node-holds-own-output",
        models="a node keeping a strong reference to the tensor it produced (Chainer-style "
               "retained outputs, OneFlow's FunctionNode holding output tensors): every graph is "
               "a cycle that only the cycle collector frees",
        rules="gc_cycles.plain-graph-freed-by-refcount", probe=_probe_graph_freed)
def _():
    """`attach` gives the node a do-nothing hook closing over the output (node -> output)."""
    edit("reference.ops.recording:attach", "out._requires_grad = True",
         "out._requires_grad = True\nnode._tensor_hooks_for(output_nr)[-1] = lambda grad, out=out: None")


def _probe_ctx_output_freed():
    class Exp(fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x.exp()
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * out

    def make():
        return Exp.apply(leaf())

    return collected(make)


@mutant("gc_cycles.ctx-holds-outputs-strongly",
        models="a custom Function's ctx saving its outputs as ordinary (owning) references, "
               "the output -> ctx -> output cycle PyTorch breaks with SavedVariable(is_output)",
        rules="gc_cycles.save-for-backward-output-cycle-free", probe=_probe_ctx_output_freed)
def _():
    """save_for_backward keeps a Function's own outputs as the tensors themselves."""
    edit("reference.autograd.function:_save", "saved.append(SavedTensor(tensor, True))",
         "saved.append(SavedTensor(tensor, False))")


def _probe_leaf_accumulator():
    def make():
        x = leaf()
        (x * 2).sum()
        return x

    return collected(make)


@mutant("gc_cycles.leaf-owns-accumulator",
        models="a leaf holding its AccumulateGrad node strongly (PyTorch keeps grad_accumulator_ "
               "as a weak_ptr precisely to avoid this leaf <-> node cycle)",
        rules=("hooks.accumulate-grad-node-hooks-die-with-node", "gc_cycles.plain-graph-freed-by-refcount"),
        probe=_probe_leaf_accumulator)
def _():
    """The leaf caches its accumulator in a strong reference (a leaf <-> node cycle)."""
    edit("reference.autograd.graph:grad_accumulator", "leaf._grad_accumulator = weakref.ref(node)",
         "leaf._grad_accumulator = (lambda node=node: node)")


def _probe_grad_keeps_graph():
    x = leaf()
    y = (x * x).sum()
    fw().autograd.grad(y, x)
    try:
        fw().autograd.grad(y, x)
        return "second grad ran"
    except RuntimeError:
        return "freed"


@mutant("gc_cycles.grad-retains-graph",
        models="autograd.grad defaulting to retain_graph=True (TensorFlow's persistent tape, "
               "OneFlow's grad keeping saved tensors): every grad call pins its graph's buffers",
        rules=("engine.grad-frees-saved-tensors",), probe=_probe_grad_keeps_graph)
def _():
    """`autograd.grad` keeps the saved tensors unless told otherwise."""
    edit("reference.autograd:grad", "        retain_graph = create_graph\n    root_edges",
         "retain_graph = True\nroot_edges")


def _probe_hook_dict_kept():
    x = leaf()
    handle = x.register_hook(lambda g: None)
    hooks = x._leaf_hooks
    ref = weakref.ref(hooks)
    del hooks
    x._leaf_hooks = None
    return ref() is None and handle is not None


@mutant("gc_cycles.handle-owns-hook-dict",
        models="RemovableHandle holding its hooks dict strongly (PyTorch's handle was made weak "
               "so a handle kept by user code does not keep the module's/tensor's hooks alive)",
        rules=("hooks.handle-does-not-own-hooks",), probe=_probe_hook_dict_kept)
def _():
    """A handle keeps its hook dict alive."""
    edit("reference.handles:RemovableHandle.__init__", "self._dict_ref = weakref.ref(hooks)",
         "self._dict_ref = (lambda hooks=hooks: hooks)")


def _probe_retain_grad_freed():
    def make():
        x = leaf()
        y = x * 2
        y.retain_grad()
        return y.grad_fn

    return collected(make)


@mutant("gc_cycles.retained-tensor-held-strongly",
        models="retain_grad implemented as a hook closing over the tensor (PyTorch's Python "
               "retain_grad before 1.13 leaked the tensor through its own grad_fn's hook)",
        rules=("engine.retain-grad-does-not-own-tensor",), probe=_probe_retain_grad_freed)
def _():
    """The node keeps a strong reference to each tensor that retains its grad."""
    edit("reference.tensor:Tensor.retain_grad", "extras.retains_grad[self._output_nr] = weakref.ref(self)",
         "extras.retains_grad[self._output_nr] = (lambda t=self: t)")


def _probe_global_registry():
    def make():
        y = leaf() * 3
        return y.grad_fn

    return collected(make)


_EVERY_NODE: list = []


@mutant("gc_cycles.nodes-kept-in-global-registry",
        models="a process-wide tape or anomaly-mode registry keeping every node alive "
               "(TensorFlow eager's global tape, PyTorch anomaly mode's traceback store done wrong)",
        rules=("gc_cycles.plain-graph-freed-by-refcount", "gc_cycles.saved-tensors-freed-with-graph"),
        probe=_probe_global_registry)
def _():
    """Every node created is appended to a module-level list."""
    replace("reference.autograd.graph:_EVERY_NODE", _EVERY_NODE)
    edit("reference.autograd.graph:NodeBase.__init__", "self._extras = None",
         "self._extras = None\n_EVERY_NODE.append(self)")


@mutant("gc_cycles.unpack-caches-saved-output",
        models="a saved output cached on its first unpack (an optimisation of SavedVariable that "
               "re-creates the output -> node -> output cycle PyTorch avoids)",
        rules=("identity.saved-output-unpack-not-kept",), probe=lambda: _saved_result_twice())
def _():
    """`SavedTensor.unpack` of an output caches the tensor it builds."""
    edit("reference.autograd.graph:SavedTensor.unpack", "return out", "self._tensor = out\nreturn out")


def _saved_result_twice():
    y = leaf().exp()
    return y.grad_fn._saved_result is y.grad_fn._saved_result
