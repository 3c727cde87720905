"""The backward engine: from root gradients to leaf ``.grad`` (or to returned gradients).

One call is one *graph task*:
  1. discover the nodes reachable from the roots (iteratively: graphs may be 100,000
     nodes deep) and, when ``inputs`` are given, keep only the nodes that lead to them;
  2. count, per node, the edges that will deliver a gradient to it;
  3. run ready nodes from a heap keyed by creation order, newest first (a leaf's
     accumulator as soon as it is ready; ties in the order nodes became ready; a node is
     ready once every edge into it has delivered), each exactly once, gradients summed.
Running a node: tensor hooks per output (then retain_grad), node pre-hooks, ``apply``,
node post-hooks; then its saved tensors are released unless ``retain_graph``. Each node
starts from the saved-tensor hooks state the backward started with, whatever blocks the
previous one entered or left.

Gradients travel as raw arrays, so a plain backward builds no graph and allocates no
tensor objects; only hooks and custom Functions see tensors. Under ``create_graph=True``
they travel as tensors and the formulas record a graph of their own.

A backward started by a hook or a custom backward while one runs is a graph task of its
own, run to completion before the outer one goes on; every ``NESTED_PER_THREAD``-th level
of such nesting runs on a fresh thread, so that depth is bounded by memory, not by the
interpreter's recursion limit.
"""
from __future__ import annotations

import heapq
import itertools
import threading

from reference import grad_mode
from reference.array_backend import namespace_of
from reference.grad_mode import _anomaly
from reference.autograd import forward_ad, graph
from reference.autograd.accumulate import store_grad
from reference.autograd.graph import AccumulateGrad
from reference.autograd.hooks import run_leaf_hooks, run_node_with_hooks, run_post_hooks, run_tensor_pre_hooks
from reference.ops.backward_ops import RAW_OPS, TENSOR_OPS


#: a backward started inside a backward (a hook's, a custom backward's) runs on this thread
#: up to this nesting depth; the next level runs on a fresh thread (with this thread's grad
#: mode, saved-tensor hooks and forward-AD state), so nesting is bounded by memory, not by
#: Python's recursion limit (PyTorch hands deep reentrant backwards to a worker thread too)
NESTED_PER_THREAD = 16


def _on_fresh_thread(fn, args):
    """``fn(*args)`` on a new thread that starts with this thread's autograd state; waits for
    it and returns its result or raises its exception."""
    grad_enabled = grad_mode._state.enabled
    hooks_stack, hooks_disabled = list(graph._saved_hooks.stack), graph._saved_hooks.disabled
    suppressed = forward_ad._suppressed.depth
    outcome = []

    def run():
        grad_mode._state.enabled = grad_enabled
        graph._saved_hooks.stack[:] = hooks_stack
        graph._saved_hooks.disabled = hooks_disabled
        forward_ad._suppressed.depth = suppressed
        try:
            outcome.append((True, fn(*args)))
        except BaseException as exc:  # handed to the waiting thread
            outcome.append((False, exc))

    worker = threading.Thread(target=run, name="reference-nested-backward", daemon=True)
    worker.start()
    worker.join()
    ok, value = outcome.pop()
    if ok:
        return value
    try:
        raise value
    finally:
        del value


def execute(root_edges, root_grads, retain_graph, create_graph, captures=None, accumulate_leaves=True):
    """Run one graph task (nested deep inside other backwards, on a fresh thread).

    ``root_edges``: (node, output_nr) per root; ``root_grads``: matching arrays/tensors.
    ``captures``: optional {(node, output_nr): callback(grad)} for autograd.grad and
    non-leaf ``backward(inputs=...)``: the gradient flowing into that edge, after the
    tensor hooks, is handed to the callback. With captures, only the nodes on a path to
    a captured edge (or to a node in the set ``accumulate_leaves``) run.
    """
    stack = getattr(_tasks, "stack", None)
    if stack and not len(stack) % NESTED_PER_THREAD:
        # rule: engine.nested-backward-depth
        return _on_fresh_thread(execute, (root_edges, root_grads, retain_graph, create_graph, captures,
                                          accumulate_leaves))
    ops = TENSOR_OPS if create_graph else RAW_OPS
    targets = None
    if captures is not None:
        targets = accumulate_leaves if isinstance(accumulate_leaves, set) else set()
    executable, dependencies = _plan(root_edges, captures, targets)

    buffers: dict = {}
    ready: list = []
    order = itertools.count()  # ties run in the order they became ready
    push, pop = heapq.heappush, heapq.heappop
    for (node, nr), grad in zip(root_edges, root_grads):
        _deliver(buffers, node, nr, grad)
        remaining = dependencies[node] - 1
        dependencies[node] = remaining
        if remaining == 0:
            push(ready, (_priority(node), next(order), node))

    # rules: engine.create-graph-double-backward, engine.grads-detached-without-create-graph
    task = GraphTask(dependencies, bool(retain_graph))
    # as in torch (which runs them under the thread-local state captured with the graph task),
    # each node (its hooks, its unpack hooks, its backward) and the callbacks start from, and
    # leave behind, this thread's saved-tensor hooks state as the backward found it
    hooks_state, hooks_changes = graph.saved_hooks_snapshot(), graph._hooks_changes
    # the one node that became ready while running the previous one, when no other node is
    # ready: it would be the heap's next pop, so it runs next without a trip through the heap
    # (a chain's nodes never touch it); a second ready node sends both to the heap, in the
    # order they became ready (rule: engine.ready-newest-first)
    following = None
    with _running(task), grad_mode.set_grad_enabled(create_graph), _Restoring(hooks_state, hooks_changes):
        while following is not None or ready:
            if graph._hooks_changes != hooks_changes:  # the last node entered or left a block
                graph.restore_saved_hooks(hooks_state)
                hooks_changes = graph._hooks_changes
            if following is not None:
                node = task.node = following
                following = None
            else:
                node = task.node = pop(ready)[2]
            grads = buffers.pop(node)
            extras = node._extras
            if extras is not None or type(node) is AccumulateGrad:
                # stale names of the loop would count as holders of a leaf's gradient
                # (rule: identity.grad-takes-over-unshared-buffer)
                grad_inputs = grad = previous = None
                # rules: engine.backward-call-chain, hooks.tensor-prehooks-before-node-prehooks
                _run_tensor_hooks(node, extras, grads, ops)
            if captures is not None:
                for nr, grad in enumerate(grads):
                    callback = captures.get((node, nr))
                    if callback is not None:
                        callback(grad)
                # rules: engine.backward-inputs-restricts, hooks.off-path-never-fire, hooks.inputs-nonleaf-grad-excludes-node-prehooks
                if node not in executable:
                    continue
            if extras is None:
                # rule: legacy_function.none-grads-leave-grad-unset -- no gradient in, none out
                grad_inputs = node.apply(ops, grads) if grads[0] is not None or not node._none_passes \
                    else (None,) * len(node._next_functions)
                if node._extras is not None and node._extras.post_hooks:
                    # a post-hook registered while the node ran (by its own unpack hook) runs now,
                    # seeing None for the gradients it arrived too late to see
                    grad_inputs = run_post_hooks(node, node._extras.post_hooks, grad_inputs,
                                                 (None,) * len(grads), ops, None)
            else:
                grad_inputs = run_node_with_hooks(node, extras, grads, ops,
                                                  dependencies if captures is not None else None)
            if _anomaly[0] and _anomaly[1]:
                _refuse_nan(node, grad_inputs)
            # rules: engine.backward-frees-saved-tensors, gc_cycles.backward-releases-saved-tensors, engine.retain-graph-keeps-saved, gc_cycles.retained-graph-keeps-saved-until-graph-dies
            if not retain_graph and node._saved:
                # rule: saved_tensors.packed-released-after-backward -- with the SavedTensors
                # goes what pack returned (retain_graph keeps both: saved_tensors.packed-kept-after-retain-graph)
                node._saved = None
            for (child, nr), grad in zip(node._next_functions, grad_inputs):
                if child is None:
                    continue
                remaining = dependencies.get(child)
                if remaining is None:
                    continue
                buffer = buffers.get(child)
                if buffer is None:
                    buffer = buffers[child] = [None] * child.num_outputs
                if grad is not None:
                    previous = buffer[nr]
                    # rules: engine.node-runs-once-with-summed-grads, engine.duplicate-roots
                    buffer[nr] = grad if previous is None else previous + grad
                remaining -= 1
                dependencies[child] = remaining
                # rule: engine.node-runs-after-consumers
                if remaining == 0:
                    if following is None and not ready:
                        following = child
                    else:
                        if following is not None:
                            push(ready, (_priority(following), next(order), following))
                            following = None
                        push(ready, (_priority(child), next(order), child))
        task.node = None
        if graph._hooks_changes != hooks_changes:
            graph.restore_saved_hooks(hooks_state)
        _run_callbacks(task)


def _refuse_nan(node, grad_inputs):
    """Anomaly mode (``detect_anomaly``): a node that returned NaN stops the backward."""
    for index, grad in enumerate(grad_inputs):
        data = getattr(grad, "_array", grad)
        if data is not None and data.dtype.kind == "f" and bool(namespace_of(data).isnan(data).any()):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {index}th output.")


class GraphTask:
    """What one running backward exposes to the code it calls (hooks, custom backwards):
    the nodes it will run, and the callbacks queued to run once at its end."""

    __slots__ = ("nodes", "callbacks", "multi_hooks", "keep_graph", "node", "__weakref__")

    def __init__(self, nodes, keep_graph=False):
        self.nodes = nodes
        self.callbacks = []
        self.multi_hooks = None  # {handle id: state} for register_multi_grad_hook
        self.keep_graph = keep_graph  # retain_graph: the nodes keep their saved tensors
        self.node = None  # the node running now (its hooks, its backward, its unpack hooks)


_tasks = threading.local()


def current_task():
    """The innermost backward running on this thread, or None."""
    stack = getattr(_tasks, "stack", None)
    return stack[-1] if stack else None


def current_node():
    """The node whose hooks or backward run now on this thread (None outside a backward, and
    during the end-of-backward callbacks): lets an unpack hook reach the node unpacking it."""
    task = current_task()
    return None if task is None else task.node


def queue_callback(callback) -> None:
    """Run ``callback()`` once, after the current backward's last node."""
    # rule: engine.queued-callbacks-run-at-end
    task = current_task()
    if task is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    task.callbacks.append(callback)


class _running:
    """Makes ``task`` the current graph task of this thread for the ``with`` block."""

    __slots__ = ("_task",)

    def __init__(self, task):
        self._task = task

    def __enter__(self):
        stack = _tasks.__dict__.setdefault("stack", [])
        stack.append(self._task)

    def __exit__(self, *exc):
        _tasks.stack.pop()
        return False


class _Restoring:
    """Puts the saved-tensor hooks state back when the ``with`` block ends (a callback, or a node
    that raised, may have left a block entered)."""

    __slots__ = ("_state", "_changes")

    def __init__(self, state, changes):
        self._state = state
        self._changes = changes

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if graph._hooks_changes != self._changes:
            graph.restore_saved_hooks(self._state)
        return False


def _run_callbacks(task):
    """The callbacks queued during the task, in order; one queued by a callback runs too."""
    # rule: engine.callbacks-reentrant -- by index over the live list: one queued by a callback runs too
    callbacks = task.callbacks
    index = 0
    while index < len(callbacks):
        callbacks[index]()
        index += 1


def _priority(node) -> float:
    """Heap key: newest node first; a leaf's AccumulateGrad as soon as it is ready (as in
    PyTorch, whose accumulators carry the largest sequence number), so gradients land and
    their buffers are freed early."""
    # rule: engine.ready-newest-first
    return _ACCUMULATE_FIRST if type(node) is AccumulateGrad else -node._seq


_ACCUMULATE_FIRST = float("-inf")


def _plan(root_edges, captures, targets):
    """The nodes to execute and, for every node that receives gradients, its in-degree."""
    if captures is None:
        return _plan_all(root_edges)
    reachable = []
    seen = set()
    # rule: engine.deep-graph-backward
    stack = [node for node, _ in root_edges]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        reachable.append(node)
        for child, _ in node._next_functions:
            if child is not None and child not in seen:
                stack.append(child)

    if captures is None:
        executable = seen
    else:
        captured_nodes = {node for node, _ in captures}
        executable = set()
        # children before parents: reverse of a topological order by sequence number
        for node in sorted(reachable, key=lambda n: n._seq):
            if node in targets or any(
                child is not None and (child in executable or child in captured_nodes)
                for child, _ in node._next_functions
            ):
                executable.add(node)
        seen = executable | captured_nodes

    dependencies = dict.fromkeys(seen, 0)
    for node, _ in root_edges:
        dependencies[node] = dependencies.get(node, 0) + 1
    for node in executable:
        for child, _ in node._next_functions:
            if child is not None and child in dependencies:
                dependencies[child] += 1
    return executable, dependencies


def _plan_all(root_edges):
    """``_plan`` without captures: every reachable node runs, and its in-degree is counted in
    the same walk that finds it (one pass over the graph, the common backward's cost)."""
    # rule: engine.deep-graph-backward -- iterative, however deep the graph
    dependencies: dict = {}
    for node, _ in root_edges:
        dependencies[node] = dependencies.get(node, 0) + 1
    stack = list(dependencies)
    while stack:
        for child, _ in stack.pop()._next_functions:
            if child is not None:
                count = dependencies.get(child)
                if count is None:
                    dependencies[child] = 1
                    stack.append(child)
                else:
                    dependencies[child] = count + 1
    return dependencies.keys(), dependencies


def _deliver(buffers, node, nr, grad):
    buffer = buffers.get(node)
    if buffer is None:
        buffer = buffers[node] = [None] * node.num_outputs
    previous = buffer[nr]
    buffer[nr] = grad if previous is None else previous + grad


def _run_tensor_hooks(node, extras, grads, ops):
    """Hooks registered through tensors (before any node hook), then retain_grad."""
    if type(node) is AccumulateGrad:
        run_leaf_hooks(node.variable, grads, ops)
        return
    if extras.tensor_pre_hooks:
        run_tensor_pre_hooks(extras.tensor_pre_hooks, grads, ops)
    if extras.retains_grad:
        # rules: engine.retain-grad, hooks.retain-grad-sees-all-tensor-hooks, hooks.retain-grad-latest-version
        for nr, tensor_ref in extras.retains_grad.items():
            tensor = tensor_ref()
            if tensor is not None and grads[nr] is not None:
                store_grad(tensor, grads[nr], ops)
