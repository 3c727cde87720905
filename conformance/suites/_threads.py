"""What engine.threads-independent-graphs runs in a fresh interpreter: threads that each build
and differentiate their own graph, with their own grad mode, all at once.

Why a module of the suites package and not a script in a string: the spelling check, the
feature gate (what a test needs, what ``aside`` skips) and the reproduction scripts read the
suites' source; a string is invisible to all three (it spelt ``.sum()``, ``.grad_fn`` and
``.backward()``, and gave a false DIVERGES on frameworks that spell them otherwise). The test
runs :func:`independent_graphs_in_threads` through
:func:`conformance.suites._helpers.fresh_script_calling`.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time

import numpy as np

from conformance import side_checks
from conformance.api import Unsupported, aside, progress, say, time_limit


#: how often the interpreter hands the GIL to another thread (seconds; Python's default is
#: 5 ms). A race in a framework's Python code shows only when a thread is switched out in the
#: middle of it: at the default it showed on a loaded machine and not on a quiet one (tinygrad's
#: backward iterating its registry of live tensors while another thread adds to it), so the
#: verdict depended on the machine's load. Switching this often shows it on any machine.
SWITCH_INTERVAL = 1e-6

#: the grad-mode half of each thread's round: a side observation of the threads rule
GRAD_MODE_SIDE = "each thread's no_grad and set_grad_enabled apply to it alone"


def grad_mode_round(fw, adapter, barrier, errors, i, r, x, w):
    """The grad-mode half of round ``r``, in lockstep: the even threads switch recording off
    and stay inside their block while the odd threads record (a process-wide flag shows
    here on every machine, not only when the scheduler happens to interleave them); then
    every thread switches its own mode and checks what it recorded."""
    inside = i % 2 == 0
    if inside:
        with fw.no_grad():
            barrier.wait(time_limit(30))   # every even thread is inside its no_grad now
            frozen = x * w
            barrier.wait(time_limit(30))   # the odd threads have recorded meanwhile
        if adapter.is_recorded(frozen) or fw.is_grad_enabled() is not True:
            errors.append(f"thread {i} round {r}: no_grad leaked (the product was recorded: "
                          f"{adapter.is_recorded(frozen)}, grad enabled after the block: "
                          f"{fw.is_grad_enabled()})")
    else:
        barrier.wait(time_limit(30))
        recorded = x * w
        barrier.wait(time_limit(30))
        if not adapter.is_recorded(recorded):
            errors.append(f"thread {i} round {r}: an op with grad enabled was not recorded while "
                          f"other threads were inside no_grad (grad mode crossed threads)")
    with fw.set_grad_enabled(r % 2 == 0):
        maybe = x * 3
    if adapter.is_recorded(maybe) is not (r % 2 == 0):
        errors.append(f"thread {i} round {r}: set_grad_enabled({r % 2 == 0}) gave a "
                      f"result recorded={adapter.is_recorded(maybe)} (grad mode crossed threads?)")


def independent_graphs_in_threads(fw, adapter, device, threads, rounds, grad_modes="1"):
    """Run ``threads`` threads of ``rounds`` rounds each and print one ``RESULT {json}`` line:
    ``stuck`` (threads still running after the wait), ``errors`` (what each thread saw go
    wrong), ``main_grad_enabled`` (None where grad modes are missing) and ``not_checked`` (the
    side observations skipped). ``grad_modes`` "0": the grad-mode half is left out (the test
    found grad modes not thread-local at all, another rule's cause, and says so itself)."""
    threads, rounds = int(threads), int(rounds)
    sys.setswitchinterval(SWITCH_INTERVAL)  # a fresh interpreter: nothing else runs in it
    side_checks.begin()
    barrier = threading.Barrier(threads)
    # set: the grad-mode half is skipped (the test said so, or a part of it raised Unsupported)
    grad_modes_missing = threading.Event()
    if str(grad_modes) == "0":
        grad_modes_missing.set()
    errors = []

    def work(i):
        scale = float(i + 1)
        try:
            barrier.wait(time_limit(30))
            for r in range(rounds):
                x = fw.full((4,), scale, requires_grad=True, device=device)
                w = fw.full((4,), float(r + 1), requires_grad=True, device=device)
                if not grad_modes_missing.is_set() and aside(adapter, "grad_modes", what=GRAD_MODE_SIDE):
                    try:
                        grad_mode_round(fw, adapter, barrier, errors, i, r, x, w)
                    except Unsupported as exc:  # a part the adapter does not declare missing
                        side_checks.note(exc.feature or "grad_modes", GRAD_MODE_SIDE)
                        grad_modes_missing.set()
                        barrier.abort()  # no thread waits for a lockstep that has ended
                    except threading.BrokenBarrierError:
                        if not grad_modes_missing.is_set():
                            raise
                y = fw.sum(x * x * w)  # dy/dx = 2 x w, dy/dw = x * x
                adapter.backward(y)
                gx = adapter.to_numpy(adapter.grad(x))
                gw = adapter.to_numpy(adapter.grad(w))
                if not (np.allclose(gx, 2 * scale * (r + 1)) and np.allclose(gw, scale * scale)):
                    errors.append(f"thread {i} round {r}: x.grad {gx.tolist()} w.grad {gw.tolist()}, "
                                  f"expected {2 * scale * (r + 1)} and {scale * scale} (lost or crossed gradient)")
                progress()   # a round done: the parent's CPU budget for a spin counts from here
        except threading.BrokenBarrierError:
            errors.append(f"thread {i}: stopped waiting for the others (one of them failed first)")
        except Exception as exc:  # noqa: BLE001 - reported to the test, which judges it
            errors.insert(0, f"thread {i}: {type(exc).__name__}: {exc}")
            barrier.abort()  # the others stop waiting for this thread

    workers = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(threads)]
    progress()   # the work starts: from here a spin (CPU used, no round done) is a hang
    for th in workers:
        th.start()
    deadline = time.monotonic() + time_limit(120)  # one wait for all: stuck threads cost 120 s, not 8 x 120 s
    for th in workers:
        th.join(max(0.0, deadline - time.monotonic()))
    main_enabled = None
    if aside(adapter, "grad_modes", what="the main thread's grad mode is unchanged"):
        main_enabled = fw.is_grad_enabled()
    stuck = sum(th.is_alive() for th in workers)
    say("RESULT " + json.dumps({"stuck": stuck, "errors": errors, "main_grad_enabled": main_enabled,
                                 "not_checked": list(side_checks.taken())}))
    if stuck:
        os._exit(0)   # daemon threads stuck in the framework would block the interpreter's exit
