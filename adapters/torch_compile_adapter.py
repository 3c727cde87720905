"""PyTorch beyond eager: ``torch.compile`` and compiled autograd as columns beside eager.

Why modes of the torch adapter and not a harness switch: what a mode compiles is a fact about
how users run torch, so it lives here, and the suites stay the same for every column. Each mode
is an adapter whose ``fw`` sends the framework computation a user would compile through
``torch.compile`` and keeps everything else eager (docs/compile-modes.md says why):

* ``torch-compile`` (backend ``aot_eager``) and ``torch-compile-inductor`` (backend
  ``inductor``, C++ through gcc on the CPU): every differentiable ``fw.<op>`` the suites call
  (``conformance.spelling.THROUGH_FW``: ``fw.exp``, ``fw.sum``, ``fw.t``...) and every custom
  Function's ``apply`` run as a compiled region; AOTAutograd compiles their backward with them.
  Tensor operators (``x * 2``), factories, hooks, weak references, ``gc`` and threads stay
  eager: they are the harness observing, and tracing them would judge Dynamo's handling of the
  harness instead of compile's handling of autograd.
* ``torch-compiled-autograd``: the forward stays eager; every backward the suites start
  (``adapter.backward``, ``fw.autograd.backward``, ``fw.autograd.grad``) runs under compiled
  autograd (``torch._dynamo.compiled_autograd._enable``, graphs compiled with ``aot_eager``),
  which captures the whole backward graph, hooks included, and compiles it.

A computation the mode cannot compile is UNSUPPORTED naming why (Dynamo's or the backend's
own error, never an ERROR); a graph break is not that: Dynamo runs the part it cannot trace
eagerly, as it would for a user, and the rule judges what the user gets.
"""
from __future__ import annotations

import contextlib
import functools
import threading

from adapters.base import Run, Unsupported
from adapters.torch_adapter import NEWEST, TorchAdapter

#: the columns each mode adds: torch 2.13.0 (the CPU wheel the project pins) and the newest
#: release (its CUDA wheel, installed once for eager torch and the modes: `nox -s report` runs
#: a column in the session of an earlier column with the same pins)
VERSIONS = ("2.13.0", NEWEST)
#: the releases whose differences from eager are triaged for ``torch-compile`` and
#: ``torch-compile-inductor`` (each difference an expectations entry limited by ``versions``
#: where it holds on one release only): the columns they claim (docs/compile-modes.md)
TRIAGED = ("2.13.0", NEWEST)
#: Dynamo's limit on recompilations of one compiled region (8 by default): a suite calls the
#: same ``fw.exp`` with many shapes, dtypes and grad modes, and past the limit Dynamo silently
#: runs the region eagerly, which would make later tests judge eager torch under a compile label
RECOMPILE_LIMIT = 100_000

#: torch's refusal of forward-mode AD through a custom Function without ``jvp``
MISSING_JVP = "You must implement the jvp function"
#: What torch itself says a compiled region cannot do, raised when the graph is used rather
#: than compiled: (exception class, the stable part of torch's message, the named reason).
STATED_LIMITS = (
    (RuntimeError, "does not currently support double backward",
     "double backward through a compiled region (AOTAutograd's CompiledFunction: \"torch.compile "
     "with aot_autograd does not currently support double backward\")"),
    (RuntimeError, "does not currently support higher order gradients",
     "higher-order gradients under compiled autograd (\"torch.compile does not currently "
     "support higher order gradients\")"),
    (NotImplementedError, MISSING_JVP,
     "forward-mode AD through a compiled region (AOTAutograd's CompiledFunction is a custom "
     "Function without jvp)"),
    # Dynamo's own check, an AssertionError, when a hook traced by compiled autograd queues a
    # final callback and the backward is compiled without fullgraph (as this mode compiles it)
    (AssertionError, "queue_callback() is only supported when Compiled Autograd is enabled "
     "with fullgraph=True",
     "a final callback queued during a backward under compiled autograd without fullgraph "
     "(\"queue_callback() is only supported when Compiled Autograd is enabled with "
     "fullgraph=True\")"),
)

#: autograd's refusal of an in-place change of a leaf that requires grad: the computation's own
#: error, except where AOTAutograd's runtime makes it on its own tensor (:func:`_raised_by_aot_runtime`)
LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation"


def _raised_by_aot_runtime(exc: BaseException) -> bool:
    """Whether the innermost Python frame of ``exc`` is AOTAutograd's runtime wrapper code, not
    the test's and not a compiled graph's (torch 2.13 and 2.15, create_graph through a
    compiled region: ``coerce_to_expected_memory_format`` restrides a tangent that requires
    grad with ``empty_strided(requires_grad=True).copy_(x)``, which autograd refuses)."""
    tb, last = exc.__traceback__, None
    while tb is not None:
        last, tb = tb, tb.tb_next
    return last is not None and "_aot_autograd" in last.tb_frame.f_code.co_filename.replace("\\", "/")


_inside = threading.local()   # set while a compiled custom Function's apply is being traced


def _runs(label: str, timeout: int = 300, *select: str, versions=VERSIONS) -> tuple[Run, ...]:
    return tuple(
        Run(label=label if version == "2.13.0" else f"{label}-{version}", version=version,
            install=(f"torch=={version}",), python="3.11", required=version == "2.13.0",
            # compiling takes most of a test's time (a custom Function class is compiled per
            # test, inductor runs gcc): a longer limit than eager's 60 s, and for the slowest
            # mode a subset (docs/compile-modes.md, "Cost")
            pytest_args=(f"--conformance-timeout={timeout}", *select))
        for version in versions)


class TorchCompileAdapter(TorchAdapter):
    """``torch.compile(backend="aot_eager")`` around the suites' computation."""

    name = "torch-compile"
    fw_is_module = False  # fw compiles the suites' computation: not plain torch
    runs = _runs("torch-compile", versions=TRIAGED)
    #: no evidence snippets: a mode's history is recorded from its runs beside eager
    #: (conformance/history/modes.py: python -m conformance.history modes reports/results)
    releases = ()
    #: the torch.compile backend of the forward regions (None: the forward stays eager)
    backend: str | None = "aot_eager"
    #: whether backward runs under compiled autograd
    compiled_autograd = False

    # -- the namespace ------------------------------------------------------------------
    def _import(self):
        import torch
        import torch._dynamo

        config = torch._dynamo.config
        for limit in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                      "accumulated_cache_size_limit"):
            if limit in getattr(config, "_config", {}) or hasattr(config, limit):
                setattr(config, limit, RECOMPILE_LIMIT)
        # a compile that cannot proceed raises (UNSUPPORTED here) instead of printing a warning
        # and silently running eagerly: the column must never judge eager torch by accident
        config.suppress_errors = False
        self.torch = torch
        autograd = self.namespace(torch.autograd, self._autograd_renames(torch),
                                  path="fw.autograd")
        renames = {"autograd": autograd}
        if self.backend is not None:
            from conformance.spelling import THROUGH_FW

            for name in sorted(THROUGH_FW):
                if callable(getattr(torch, name, None)):
                    renames[name] = self._compiled_op(getattr(torch, name))
        return self.namespace(torch, renames)

    def _autograd_renames(self, torch) -> dict:
        renames = {}
        if self.backend is not None:
            renames["Function"] = self._compiled_function_base(torch)
        # every backward the suites start: under compiled autograd in that mode, and in each
        # mode with compile's stated limits (double backward) named as UNSUPPORTED
        renames["backward"] = self._backward_entry(torch.autograd.backward)
        renames["grad"] = self._backward_entry(torch.autograd.grad)
        return renames

    def _compile(self, fn):
        # the code object of every compiled region: whether after_test has a Dynamo to reset
        self._regions = getattr(self, "_regions", set())
        self._regions.add(fn.__code__)
        return self.torch.compile(fn, backend=self.backend)

    def after_test(self) -> None:
        """Each test starts with a Dynamo that remembers nothing (``torch._dynamo.reset()``).
        Dynamo decides how to compile a region from the calls it saw before, so a verdict
        depended on the tests that ran first: a custom backward returning the number 1.5 was
        accepted silently in a fresh process (a constant in the traced graph) and refused after
        a test that returned 1 (Dynamo, having seen the number change, made it symbolic, broke
        the graph there and ran the Function eagerly). The reset also undoes the skip Dynamo
        marks on a region's code object when it gives up on a frame (torch 2.15 does for any
        call with a forward-AD dual input, PR #189644: "the frame falls back to eager"): every
        op's region shares one code object, so after one forward-AD test every later test would
        have judged eager torch under this column's name. Within a test the skip stands (that
        is what a user gets). Checked on 2.13 and 2.15, a skip made at a region's first call
        included; the set of regions says whether this mode compiled anything at all."""
        super().after_test()
        if getattr(self, "_regions", None):
            self.torch._dynamo.reset()

    def _compiled_op(self, op):
        """``fw.<op>``: one compiled region per call (compiled once per op, guarded per input)."""
        compiled = self._compile(lambda *args, **kwargs: op(*args, **kwargs))

        @functools.wraps(op)
        def call(*args, **kwargs):
            with self._compile_errors(op.__name__):
                return compiled(*args, **kwargs)

        return call

    def _compiled_function_base(self, torch):
        """``fw.autograd.Function``: a base whose ``apply`` runs in a compiled region (one per
        Function class; Dynamo traces ``apply`` as its autograd.Function operator). While the
        region is traced, or runs eagerly after a graph break, ``apply`` is torch's own."""
        adapter = self
        # the descriptor, bound per class below: a Python classmethod up to torch 2.13, a C
        # classmethod_descriptor since (2.15 has no ``apply.__func__``)
        original = torch.autograd.Function.__dict__["apply"]

        class Function(torch.autograd.Function):
            @classmethod
            def apply(cls, *args, **kwargs):
                if getattr(_inside, "depth", 0):
                    return original.__get__(None, cls)(*args, **kwargs)
                compiled = cls.__dict__.get("_conformance_compiled")
                if compiled is None:
                    compiled = adapter._compile(lambda *a, **k: cls.apply(*a, **k))
                    setattr(cls, "_conformance_compiled", compiled)
                _inside.depth = 1
                # a Function without jvp of its own refuses a dual input itself, as in eager
                # (where Dynamo runs it eagerly): not the compiled region's stated limit
                own_jvp = cls.jvp is not torch.autograd.Function.jvp
                try:
                    with adapter._compile_errors(f"{cls.__name__}.apply", jvp_limit=own_jvp):
                        return compiled(*args, **kwargs)
                finally:
                    _inside.depth = 0

        Function.__qualname__ = Function.__name__ = "Function"
        Function.__module__ = "torch.autograd.function"
        return Function

    # -- backward -----------------------------------------------------------------------
    @contextlib.contextmanager
    def _backward_mode(self):
        if not self.compiled_autograd:
            with self._compile_errors("backward through compiled regions"):
                yield
            return
        from torch._dynamo import compiled_autograd

        with self._compile_errors("backward under compiled autograd"):
            with compiled_autograd._enable(self.torch.compile(backend="aot_eager")):
                yield

    def _backward_entry(self, fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            with self._backward_mode():
                return fn(*args, **kwargs)

        return call

    def backward(self, tensor, gradient=None, **kwargs):
        with self._backward_mode():
            tensor.backward(gradient, **kwargs)

    # -- what cannot be compiled ----------------------------------------------------------
    @contextlib.contextmanager
    def _compile_errors(self, what: str, jvp_limit: bool = True):
        """Dynamo's or the backend's own failure (not an error of the computation, which
        propagates as what it is) is UNSUPPORTED naming the cause. ``jvp_limit``: whether a
        missing jvp can only be the compiled region's (False for a custom Function that has
        no jvp itself: then the refusal is the Function's own, as in eager)."""
        try:
            yield
        except Exception as exc:
            reason = self._cannot_compile(exc, jvp_limit)
            if reason is None:
                raise
            # the feature the test lacks is the mode's compiling of its computation (no
            # registry feature of the framework: the same test runs eagerly in torch's column)
            raise Unsupported(f"{self.name} does not support compiling {what}: {reason}",
                              feature="compile", reason=reason) from exc

    def _cannot_compile(self, exc: BaseException, jvp_limit: bool = True) -> str | None:
        """Why ``exc`` says the mode could not compile (None: the computation's own error):
        Dynamo's or the backend's own failure, or one of the limits torch states for compiled
        regions (:data:`STATED_LIMITS`; the missing jvp only where ``jvp_limit``)."""
        text = str(exc)
        if _raised_by_aot_runtime(exc) and LEAF_INPLACE in text:
            return ("double backward through a compiled region: AOTAutograd's runtime copies the "
                    "incoming gradient into a fresh tensor that requires grad, and autograd refuses "
                    f"that copy (\"{LEAF_INPLACE}\" raised inside torch._functorch._aot_autograd)")
        for kind, phrase, reason in STATED_LIMITS:
            if phrase == MISSING_JVP and not jvp_limit:
                continue
            if isinstance(exc, kind) and phrase in text:
                return reason
        # AOTAutograd's own dispatch mode refusing a tensor subclass it cannot analyse (torch
        # 2.13: "Multiple dispatch failed for 'torch._ops.aten.mul.Tensor'; all
        # __torch_dispatch__ handlers returned NotImplemented: mode object
        # <torch._functorch._aot_autograd...>"): compile's failure, not the computation's
        if (isinstance(exc, TypeError) and "handlers returned NotImplemented" in text
                and "_aot_autograd" in text):
            return f"AOTAutograd cannot dispatch this tensor subclass ({text.splitlines()[0]})"
        dynamo_exc = getattr(getattr(self.torch, "_dynamo", None), "exc", None)
        if dynamo_exc is None:
            return None
        kinds = tuple(getattr(dynamo_exc, n) for n in (
            "Unsupported", "BackendCompilerFailed", "InternalTorchDynamoError",
            "RecompileLimitExceeded", "CacheLimitExceeded", "TorchDynamoException")
            if isinstance(getattr(dynamo_exc, n, None), type))
        if not isinstance(exc, kinds):
            return None
        # TorchRuntimeError: the computation itself failed while Dynamo ran it on fake
        # tensors (an in-place op on a leaf): the computation's error, not compile's; so is
        # an internal error whose cause is autograd's own refusal raised while Dynamo traced
        # a custom Function (mark_dirty on a leaf: "a leaf Variable that requires grad has
        # been used in an in-place operation"), a RuntimeError that is no Dynamo exception
        if type(exc).__name__ == "TorchRuntimeError":
            return None
        # (Dynamo raises it while handling the original: its context, its text prefixed
        # with the original's class)
        if (type(exc).__name__ == "InternalTorchDynamoError"
                and type(exc.__context__) is RuntimeError and text.startswith("RuntimeError: ")):
            return None
        text = str(exc).strip().splitlines()
        return f"{type(exc).__name__}: {text[0] if text else '(no message)'}"

    def check_device(self, device: str) -> None:
        super().check_device(device)
        if self.backend == "inductor":
            import shutil

            if not shutil.which("gcc") and not shutil.which("cc"):
                raise ValueError(f"adapter {self.name!r}: inductor compiles C++ on the CPU and "
                                 "finds no compiler (gcc or cc) on PATH; install gcc")


class TorchCompileInductorAdapter(TorchCompileAdapter):
    """``torch.compile`` with the default backend, inductor (C++ through gcc on the CPU)."""

    name = "torch-compile-inductor"
    runs = _runs("torch-compile-inductor", 600, versions=TRIAGED)  # 600: inductor's cold start
    backend = "inductor"
    #: inductor lifts the interpreter's recursion limit to at least this on each graph it
    #: compiles (``compile_fx``: "to adapt large/deep models"; 2.13 and 2.15)
    INDUCTOR_RECURSION_LIMIT = 2000

    def _import(self):
        """Why the limit is lifted here: inductor lifts it the first time it compiles a graph
        and never lowers it, so the limit a test sees depended on whether an earlier test had
        compiled (``engine.nested-backward-depth`` checks that a deep backward leaves the limit
        as it found it: DIVERGES as the first compiling test of a run, PASS after another).
        Lifting it once when the column loads gives every test the interpreter inductor leaves
        behind, whatever ran before; a backward that changes it still shows."""
        import sys

        sys.setrecursionlimit(max(sys.getrecursionlimit(), self.INDUCTOR_RECURSION_LIMIT))
        return super()._import()


#: the tests the compiled-autograd columns run (pytest -k): the engine and hooks suites, whose
#: subject is the backward pass compiled autograd replaces; the deep-graph rules are left out
#: (compiled autograd traces each of the 10 000 nodes: past any per-test limit)
SUBSET = "(test_engine or test_hooks) and not 10000 and not deep"


class TorchCompiledAutogradAdapter(TorchCompileAdapter):
    """Eager forward; every backward under compiled autograd (graphs compiled by aot_eager)."""

    name = "torch-compiled-autograd"
    #: a subset: compiled autograd compiles every backward anew (each test's graph and hooks
    #: differ), about 13 s a test here; the suites whose subject is the backward pass run
    runs = _runs("torch-compiled-autograd", 300, "-k", SUBSET)
    backend = None
    compiled_autograd = True
