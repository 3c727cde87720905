"""Curated mutants of the forward_levels suite's area: forward-mode AD levels: tangents and their
lifetime, level indices, nesting, jvp of custom Functions.

Importing the module registers them; the package imports the areas in a fixed order.
"""
from __future__ import annotations

import weakref

from conformance.mutants import edit, mutant, replace, single_edit
from conformance.mutants.catalogue.shared import accepted_or_raised, fw, fwad_module, new_dual


def _probe_tangent_after_exit():
    fwad = fwad_module()
    with fwad.dual_level():
        dual = new_dual()
    with fwad.dual_level():
        return fwad.unpack_dual(dual).tangent is None


single_edit("forward_levels.tangents-kept-after-exit", "reference.autograd.forward_ad:_LevelRegistry.exit",
            "dropped.append(grads.pop(level))", "pass",
            models="a level that does not clear its tangents on exit (PyTorch's ForwardADLevel destructor "
                   "resets every registered forward grad; a framework without that registry keeps them)",
            rules=("forward_levels.tangents-cleared-at-exit", "forward_levels.new-level-starts-clean"),
            probe=_probe_tangent_after_exit)


def _probe_level_index():
    fwad = fwad_module()
    with fwad.dual_level() as first:
        pass
    with fwad.dual_level() as second:
        pass
    return first, second


_LEVELS = iter(range(10**9))


single_edit("forward_levels.level-index-not-reused", "reference.autograd.forward_ad:_LevelRegistry.enter",
            "self.current = 0\n        return 0", "self.current = next(_LEVELS)\nreturn self.current",
            models="level indices handed out by an ever-growing counter (functorch's interpreter stack "
                   "levels; PyTorch's forward AD reuses index 0 for its single level)",
            rules=("forward_levels.level-index-reused", "forward_levels.dual-level-yields-zero"),
            probe=_probe_level_index)


def _probe_nesting():
    fwad = fwad_module()
    with fwad.dual_level():
        return accepted_or_raised(lambda: fwad.enter_dual_level(), accepted="nested")


single_edit("forward_levels.nesting-allowed", "reference.autograd.forward_ad:_LevelRegistry.enter",
            "if self.current is not None:", "if False:",
            models="nested levels accepted although tangents are kept for one level only (the second enter "
                   "silently takes over the first)",
            rules="forward_levels.nesting-is-error", probe=_probe_nesting)


def _probe_exit_wrong_level():
    fwad = fwad_module()
    level = fwad.enter_dual_level()
    try:
        fwad.exit_dual_level(level=level + 3)
        return "accepted"
    except RuntimeError:
        fwad.exit_dual_level(level=level)
        return "raised"


single_edit("forward_levels.exit-any-level", "reference.autograd.forward_ad:_LevelRegistry.exit",
            "if self.current is None or level != self.current:", "if self.current is None:",
            models="exit_dual_level ignoring which level it is given (closes the open one)",
            rules="forward_levels.exit-not-current-errors", probe=_probe_exit_wrong_level)


def _probe_exit_none_open():
    return accepted_or_raised(lambda: fwad_module().exit_dual_level(level=0))


single_edit("forward_levels.exit-without-open-level", "reference.autograd.forward_ad:_LevelRegistry.exit",
            "if self.current is None or level != self.current:",
            "if self.current is not None and level != self.current:",
            models="exiting when no level is open treated as a no-op (unbalanced enter/exit goes unnoticed)",
            rules="forward_levels.exit-none-open-errors", probe=_probe_exit_none_open)


_HELD_TANGENTS: list = []


def _probe_tangent_owned():
    fwad = fwad_module()
    with fwad.dual_level():
        tangent = fw().tensor([2.0])
        ref = weakref.ref(tangent)
        dual = fwad.make_dual(fw().tensor([1.0]), tangent)
        del tangent, dual
        return ref() is None


@mutant("forward_levels.level-owns-tangents",
        models="a level that keeps strong references to the tangents it hands out (PyTorch's "
               "ForwardADLevel holds its grads weakly so a tangent lives as long as its dual)",
        rules="forward_levels.tangent-owned-by-dual", probe=_probe_tangent_owned)
def _():
    """The registry keeps every tangent set at a level alive until exit."""
    replace("reference.autograd.forward_ad:_HELD_TANGENTS", _HELD_TANGENTS)
    edit("reference.autograd.forward_ad:_LevelRegistry.set_tangent", "tensor._fw_grads[level] = tangent",
         "tensor._fw_grads[level] = tangent\n_HELD_TANGENTS.append(tangent)")


def _probe_unpack_fresh():
    fwad = fwad_module()
    with fwad.dual_level():
        dual = new_dual()
        return fwad.unpack_dual(dual).primal is dual


single_edit("forward_levels.unpack-returns-dual", "reference.autograd.forward_ad:unpack_dual",
            "return UnpackedDualTensor(_views.unpack_primal_view(tensor), tangent)",
            "return UnpackedDualTensor(tensor, tangent)",
            models="unpack_dual returning the dual itself as the primal (its tangent then leaks into "
                   "computations meant to be tangent-free)",
            rules="forward_levels.unpack-primal-fresh-view", probe=_probe_unpack_fresh)


def _probe_make_dual_alias():
    fwad = fwad_module()
    primal = fw().tensor([1.0])
    with fwad.dual_level():
        dual = fwad.make_dual(primal, fw().tensor([2.0]))
        primal.add_(1)
        return fwad.unpack_dual(dual).primal.tolist()


single_edit("forward_levels.make-dual-copies-primal", "reference.autograd.forward_ad:make_dual",
            "dual = _views.make_dual_view(tensor)", "dual = _views.make_dual_view(tensor.clone())",
            models="make_dual copying the primal (JAX-style value semantics) instead of viewing it",
            rules="forward_levels.make-dual-aliases-primal", probe=_probe_make_dual_alias)


def _probe_detach_tangent():
    fwad = fwad_module()
    with fwad.dual_level():
        dual = new_dual()
        return fwad.unpack_dual(dual.detach()).tangent is None


single_edit("forward_levels.detach-keeps-tangent", "reference.tensor:Tensor.detach",
            "out._version_counter = self._version_counter",
            "out._version_counter = self._version_counter\nout._fw_grads = self._fw_grads",
            models="detach() sharing the autograd meta that holds forward grads (the tangent leaks through "
                   "a tensor that must be outside autograd)",
            rules="forward_levels.detach-drops-tangent", probe=_probe_detach_tangent)


def _probe_detach_inplace_tangent():
    fwad = fwad_module()
    with fwad.dual_level():
        out = new_dual() * 3
        out.detach_()
        return fwad.unpack_dual(out).tangent is None


single_edit("forward_levels.detach-inplace-keeps-tangent", "reference.tensor:Tensor.detach_",
            "self._fw_grads = None", "pass",
            models="detach_() clearing the reverse-mode history only (requires_grad and grad_fn), leaving "
                   "the forward grads in the autograd meta it does not reset",
            rules="forward_levels.detach-inplace-drops-tangent", probe=_probe_detach_inplace_tangent)


def _probe_dual_tangent():
    fwad = fwad_module()
    with fwad.dual_level():
        tangent = fwad.make_dual(fw().tensor([2.0]), fw().tensor([3.0]))
        return accepted_or_raised(lambda: fwad.make_dual(fw().tensor([1.0]), tangent))


single_edit("forward_levels.dual-tangent-accepted", "reference.autograd.forward_ad:make_dual",
            "if get_tangent(tangent, level) is not None:", "if False:",
            models="make_dual storing whatever tensor it is given as the tangent, a dual of the same level "
                   "included (its own tangent then rides along as a hidden second-order term)",
            rules="forward_levels.dual-tangent-refused", probe=_probe_dual_tangent)


def _probe_jvp_unchecked():
    fwad = fwad_module()

    class Wrong(fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def jvp(ctx, t):
            return fw().ones(4)

    with fwad.dual_level():
        return accepted_or_raised(lambda: Wrong.apply(new_dual()))


single_edit("forward_levels.jvp-results-unchecked", "reference.autograd.function:_forward_tangents",
            "_check_jvp_results(outputs, results, out_tangents, non_diff_ids)", "pass",
            models="a custom Function's jvp results set as the outputs' tangents without checking count, "
                   "shape or dtype (the user's mistake surfaces ops later as wrong derivatives)",
            rules="forward_levels.custom-function-jvp-validated", probe=_probe_jvp_unchecked)


def _probe_no_grad_tangent():
    fwad = fwad_module()
    with fwad.dual_level():
        dual = new_dual()
        with fw().no_grad():
            out = dual * 3
        t = fwad.unpack_dual(out).tangent
        return None if t is None else t.tolist()


single_edit("forward_levels.no-grad-stops-tangents", "reference.autograd.forward_ad:propagating",
            "return _suppressed.depth == 0 and _registry.current is not None",
            "from reference import grad_mode\nreturn _suppressed.depth == 0 and _registry.current is not None "
            "and grad_mode._state.enabled",
            models="forward AD switched off by no_grad (the reverse-mode recording switch reused for tangents; "
                   "PyTorch keeps propagating under no_grad)",
            rules="forward_levels.no-grad-keeps-tangent", probe=_probe_no_grad_tangent)


def _probe_inplace_tangent_object():
    fwad = fwad_module()
    with fwad.dual_level():
        tangent = fw().tensor([2.0])
        dual = fwad.make_dual(fw().tensor([1.0]), tangent)
        dual.add_(fwad.make_dual(fw().tensor([1.0]), fw().tensor([5.0])))
        return fwad.unpack_dual(dual).tangent is tangent


single_edit("forward_levels.inplace-replaces-tangent", "reference.ops.inplace:add_",
            "return t_self.add_(step)", "return t_self + step",
            models="in-place ops giving the dual a new tangent object instead of updating the tangent in "
                   "place (aliases of the old tangent go stale)",
            rules="forward_levels.inplace-keeps-tangent-object", probe=_probe_inplace_tangent_object)


def _probe_view_tangent():
    fwad = fwad_module()
    with fwad.dual_level():
        dual = fwad.make_dual(fw().tensor([1.0, 2.0]), fw().tensor([3.0, 4.0]))
        return fwad.unpack_dual(dual.view(2, 1)).tangent is None


single_edit("forward_levels.views-drop-tangent", "reference.ops.views:_make_view",
            "if has_tangent(self):", "if False:",
            models="view ops without a forward rule (tangents lost through reshape/transpose)",
            rules="forward_levels.views-propagate-tangent", probe=_probe_view_tangent)


def _probe_levels_threads():
    import threading

    fwad = fwad_module()
    seen = []
    with fwad.dual_level():
        t = threading.Thread(target=lambda: seen.append(fwad._current_level))
        t.start()
        t.join()
    return seen


_THREAD_LEVELS = __import__("threading").local()


@mutant("forward_levels.levels-thread-local",
        models="levels kept per thread (functorch/JAX-style per-thread interpreter stacks; PyTorch's "
               "forward-AD levels are process-wide under one mutex)",
        rules=("forward_levels.levels-process-global", "forward_levels.concurrent-duals-one-level"),
        probe=_probe_levels_threads)
def _():
    """The open level is stored per thread."""
    replace("reference.autograd.forward_ad:_LevelRegistry.current",
            property(lambda self: getattr(_THREAD_LEVELS, "current", None),
                     lambda self, value: setattr(_THREAD_LEVELS, "current", value)))


def _probe_make_dual_size():
    fwad = fwad_module()
    with fwad.dual_level():
        return accepted_or_raised(lambda: fwad.make_dual(fw().tensor([1.0, 2.0]), fw().tensor([1.0])))


single_edit("forward_levels.make-dual-size-unchecked", "reference.autograd.forward_ad:make_dual",
            "if tangent.shape != tensor.shape:", "if False:",
            models="make_dual accepting a tangent of another shape (broadcast later or failing in a jvp)",
            rules="forward_levels.make-dual-size-check", probe=_probe_make_dual_size)


def _probe_custom_jvp():
    class Double(fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def jvp(ctx, t):
            return t * 2

    fwad = fwad_module()
    with fwad.dual_level():
        dual = fwad.make_dual(fw().tensor([1.0]), fw().tensor([3.0]))
        t = fwad.unpack_dual(Double.apply(dual)).tangent
        return None if t is None else t.tolist()


single_edit("forward_levels.custom-function-jvp-unused", "reference.autograd.function:_apply",
            "    if forward:\n        _forward_tangents(", "if False:\n    _forward_tangents(",
            models="custom Functions opaque to forward AD (their jvp never called; outputs carry no tangent)",
            rules="forward_levels.custom-function-static-jvp", probe=_probe_custom_jvp)
