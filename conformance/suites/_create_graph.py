"""What gc_cycles.create-graph-backward-warns-cycle runs in a fresh interpreter: a framework may
warn once per process (torch does), so each warning is looked for in a process that gave none.

Why a module of the suites package and not a script in a string: the spelling check and the
feature gate read the suites' source, and a string is invisible to both (it spelt
``b.grad = None`` and called ``fw.autograd.grad`` where neither saw it; its UNSUPPORTED cells
came from the child, never from the gate). The test runs :func:`create_graph_cycle_warnings`
through :func:`conformance.suites._helpers.fresh_script_calling`.
"""
from __future__ import annotations

import json
import warnings

from conformance.api import say


def _cycle_warnings(fn) -> list[str]:
    """The messages of the warnings ``fn()`` gave that mention a cycle."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in seen if "cycle" in str(w.message)]


def create_graph_cycle_warnings(fw, adapter, device):
    """Print one ``RESULT {json}`` line: the cycle warnings of ``autograd.grad(create_graph=True)``
    (``grad``, first: a warning given once per process shows there if it is given at all) and
    of ``backward(create_graph=True)`` (``backward``)."""
    b = fw.randn(3, requires_grad=True, dtype=fw.float64, device=device)
    c = b * b
    from_grad = _cycle_warnings(lambda: fw.autograd.grad(c, b, fw.ones_like(c), create_graph=True))
    c = b * b
    from_backward = _cycle_warnings(lambda: adapter.backward(c, fw.ones_like(c), create_graph=True))
    say("RESULT " + json.dumps({"grad": from_grad, "backward": from_backward}))
    adapter.clear_grad(b)   # the param <-> grad cycle is broken before the interpreter exits
