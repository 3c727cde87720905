"""Curated mutants of the views suite's area: views: shared version counters, the base, history
renewed after an in-place op on the base.

Importing the module registers them; the package imports the areas in a fixed order.
"""
from __future__ import annotations

from conformance.mutants import single_edit
from conformance.mutants.catalogue.shared import collected, fw, leaf


def _probe_view_version():
    x = fw().tensor([1.0, 2.0])
    v = x.view(2, 1)
    v.add_(1)
    return x._version


single_edit("views.view-own-version-counter", "reference.ops.views:_make_view",
            "out._version_counter = self._version_counter", "out._version_counter = [self._version_counter[0]]",
            models="views with their own version counter (an in-place write through a view then escapes the "
                   "saved-tensor check of whatever saved the base)",
            rules="views.view-shares-version-counter", probe=_probe_view_version)


def _probe_view_base():
    x = fw().tensor([1.0, 2.0, 3.0, 4.0])
    return x.view(2, 2)[0]._base is x


single_edit("views.base-is-parent-view", "reference.ops.views:_make_view",
            "out._base = self._base if self._base is not None else self", "out._base = self",
            models="a view of a view reporting its parent as `_base` (PyTorch always points at the root "
                   "tensor that owns the storage)",
            rules="views.is-view-and-base", probe=_probe_view_base)


def _probe_view_history():
    x = leaf()
    b = x * 1
    v = b.view(2, 1)
    b.mul_(2)
    v.sum().backward()
    return x.grad.tolist()


single_edit("views.view-history-not-renewed", "reference.ops.views:refresh_views",
            "views = getattr(base, \"_views\", None)", "views = None",
            models="views whose grad_fn is not renewed after an in-place op on their base (gradients through "
                   "the view skip the in-place op)",
            rules="views.view-history-follows-base", probe=_probe_view_history)


def _probe_base_freed_with_view():
    def make():
        base = fw().zeros(4)
        view = base[1:3]
        del view
        return base
    return collected(make)


single_edit("views.base-holds-views-strongly", "reference.ops.views:_register_view",
            "views.append(weakref.ref(view))", "views.append(lambda view=view: view)",
            models="a base that remembers its views strongly (to renew their histories after an in-place op): "
                   "base -> its views -> view._base -> base is a cycle, so a dropped base and view wait for "
                   "the cycle collector",
            rules=("views.view-keeps-base-object", "views.inplace-on-view-graph-freed"),
            probe=_probe_base_freed_with_view)
