"""adapters/torch_compile_adapter.py: each compile mode compiles the suites' computation and only
it; what it cannot compile is UNSUPPORTED naming why; every witness of a compile mode's
expectations shows a difference only because of compile (with torch.compile and compiled
autograd replaced by the identity it exits 0); the page lists what a mode changes per rule."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from adapters.base import Unsupported, builtin_adapter_classes, load_adapter
from conformance import witness
from conformance.report import aggregate
from conformance.results import RunHeader, TestRecord, combined
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]
MODES = ("torch-compile", "torch-compile-inductor", "torch-compiled-autograd")
#: run before a witness: every compile a no-op, so both of its sides run eagerly
EAGER_BOTH_SIDES = (
    "import contextlib, torch, torch._dynamo.compiled_autograd as _ca\n"
    "torch.compile = lambda fn=None, **kw: fn if fn is not None else (lambda f: f)\n"
    "_ca._enable = lambda *a, **k: contextlib.nullcontext()\n")


def test_each_mode_is_a_column_of_its_own_per_version_with_its_expectations_file():
    classes = builtin_adapter_classes()
    labels = [run.label for name in MODES for run in classes[name].runs]
    assert len(labels) == len(set(labels))
    eager = {run.version for run in classes["torch"].runs if run.required}  # 2.13.0, the newest
    for name in MODES:
        cls = classes[name]
        assert cls.module == "torch" and cls.releases == ()
        versions = {run.version for run in cls.runs}
        # every mode on the pinned release; the newest only where its differences are triaged
        assert "2.13.0" in versions and versions <= eager, (name, versions)
        assert all(any(a.startswith("--conformance-timeout=") for a in run.pytest_args)
                   for run in cls.runs)
        assert (ROOT / "adapters" / "expectations" / f"{name}.toml").is_file()


#: Runs each witness (JSON on stdin: slug -> script) in a fork of one interpreter that imported
#: torch once, and prints slug -> [exit status, stdout, stderr] as JSON. Why a fork: the 66
#: witnesses of the three modes each imported torch and Dynamo in an interpreter of their own
#: (about 3 minutes of the project's tests on 2 cores). With torch.compile and compiled autograd
#: replaced by the identity nothing is compiled, so a fork of a process that only imported
#: torch starts each witness from the same state as a fresh interpreter would; the witnesses'
#: real runs (conformance/witness.py) still get fresh interpreters.
_FORKED_WITNESSES = """
import json, os, sys, tempfile, traceback
import torch, torch._dynamo.compiled_autograd   # what EAGER_BOTH_SIDES imports, once
scripts = json.load(sys.stdin)
done = {}
for slug, text in scripts.items():
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.dup2(out.fileno(), 1); os.dup2(err.fileno(), 2)
        code = 0
        try:
            exec(compile(text, "<witness>", "exec"), {"__name__": "__main__"})
        except SystemExit as exc:
            if isinstance(exc.code, int) or exc.code is None:
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr); code = 1
        except BaseException:
            traceback.print_exc(); code = 1
        sys.stdout.flush(); sys.stderr.flush()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    out.seek(0); err.seek(0)
    done[slug] = [code, out.read().decode(errors="replace"), err.read().decode(errors="replace")]
print(json.dumps(done))
"""


#: the forked run's control, run beside each mode's witnesses: a witness that differs even with
#: both sides eager (exits 1) reproduces, one that raises is an error, one that agrees does not
#: reproduce; a forked run that saw every witness as "does not reproduce" would fail here
CONTROLS = {"@control exits 1": ("import sys\nsys.exit(1)\n", "reproduces"),
            "@control raises": ("raise ValueError('x')\n", "error"),
            "@control agrees": ("print(torch.ones(1))\n", "does not reproduce")}


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="forks one interpreter per witness")
@pytest.mark.parametrize("name", MODES)
def test_the_witnesses_show_no_difference_when_both_sides_run_eagerly(name):
    import json

    path = ROOT / "adapters" / "expectations" / f"{name}.toml"
    scripts = {c.slug: c.witness for c in witness.causes(path) if c.witness and ("compile" in c.witness)}
    assert scripts, f"{path.name} has no compile witness"
    scripts.update((slug, text) for slug, (text, _) in CONTROLS.items())
    ran = subprocess.run([sys.executable, "-c", _FORKED_WITNESSES],
                         input=json.dumps({slug: witness.script_of(EAGER_BOTH_SIDES, "torch", text)
                                           for slug, text in scripts.items()}),
                         capture_output=True, text=True, timeout=hang_limit(10 + 2 * len(scripts)),
                         cwd=ROOT)
    assert ran.returncode == 0, ran.stderr[-2000:]
    results = json.loads(ran.stdout.strip().splitlines()[-1])
    assert set(results) == set(scripts)
    statuses = {slug: witness.classify(*result) for slug, result in results.items()}
    assert {slug: statuses.pop(slug).status for slug in CONTROLS} == \
        {slug: status for slug, (_, status) in CONTROLS.items()}, "the forked run's control"
    for slug, done in statuses.items():
        assert done.status == "does not reproduce", f"{slug}: {done.status}: {done.output[-400:]}"


def test_the_computation_is_compiled_and_observation_is_not():
    pytest.importorskip("torch")
    fw = load_adapter("torch-compile").fw
    x = fw.ones(2, requires_grad=True)
    assert type(fw.exp(x).grad_fn).__name__ == "CompiledFunctionBackward"
    assert type((x * 2).grad_fn).__name__ == "MulBackward0"     # glue stays eager

    class Double(fw.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    y = Double.apply(x)
    assert type(y.grad_fn).__name__ == "CompiledFunctionBackward"   # not DoubleBackward
    assert issubclass(Double, __import__("torch").autograd.Function)
    eager_forward = load_adapter("torch-compiled-autograd").fw
    assert type(eager_forward.exp(x).grad_fn).__name__ == "ExpBackward0"


def test_a_region_dynamo_gave_up_on_is_compiled_again_in_the_next_test():
    """Dynamo skips a region's code object for good when it gives up on a frame (torch 2.15
    does after one forward-AD dual input, PR #189644) and every op's region shares one code
    object: without after_test every later test would judge eager torch in this column."""
    pytest.importorskip("torch")
    from torch._dynamo.eval_frame import skip_code

    adapter = load_adapter("torch-compile")
    fw = adapter.fw

    def node():
        return type(fw.exp(fw.ones(2, requires_grad=True)).grad_fn).__name__

    assert node() == "CompiledFunctionBackward"
    for code in adapter._regions:   # what Dynamo does to a frame it gives up on
        skip_code(code)
    assert node() == "ExpBackward0"       # within the test: what a user gets
    adapter.after_test()
    assert node() == "CompiledFunctionBackward"


def test_a_custom_function_without_jvp_refusing_a_dual_is_its_own_refusal():
    """A missing jvp is the compiled region's stated limit only where the Function has a jvp
    of its own; one without refuses a dual input itself, as in eager (torch 2.15 runs a dual
    input eagerly), and the rule judges that refusal."""
    adapter = load_adapter("torch-compile")
    adapter.torch = SimpleNamespace(_dynamo=None)
    refusal = NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")
    assert "forward-mode AD through a compiled region" in adapter._cannot_compile(refusal)
    assert adapter._cannot_compile(refusal, jvp_limit=False) is None


def test_a_limit_torch_states_for_compiled_regions_is_unsupported_naming_it():
    pytest.importorskip("torch")
    adapter = load_adapter("torch-compile")
    fw = adapter.fw
    x = fw.ones(2, requires_grad=True)
    with pytest.raises(Unsupported, match="double backward through a compiled region"):
        with adapter._compile_errors("backward"):
            raise RuntimeError("torch.compile with aot_autograd does not currently support "
                               "double backward")
    with pytest.raises(ValueError):  # the computation's own error stays what it is
        with adapter._compile_errors("backward"):
            raise ValueError("not compile's")
    assert adapter._cannot_compile(RuntimeError("a leaf Variable that requires grad")) is None
    assert adapter._cannot_compile(AssertionError("an assertion of the test")) is None
    assert fw.sum(x) is not None


def test_the_leaf_in_place_refusal_is_compiles_only_where_aot_autograd_raises_it():
    """The same sentence is the computation's own error when the test's code (or a compiled
    graph) raises it, and compile's failure when AOTAutograd's runtime raises it on the tensor
    it made itself (create_graph through a compiled region, torch 2.13 and 2.15)."""
    pytest.importorskip("torch")
    adapter = load_adapter("torch-compile")
    assert adapter.fw is not None   # imports torch
    message = "a leaf Variable that requires grad is being used in an in-place operation."

    def raised_in(filename):
        code = compile(f"raise RuntimeError({message!r})", filename, "exec")
        try:
            exec(code, {})
        except RuntimeError as exc:
            return exc

    runtime = raised_in("/site-packages/torch/_functorch/_aot_autograd/runtime_wrappers.py")
    assert "double backward through a compiled region" in adapter._cannot_compile(runtime)
    assert adapter._cannot_compile(raised_in("/work/conformance/suites/test_engine.py")) is None
    assert adapter._cannot_compile(raised_in("<eval_with_key>.3")) is None


def test_dynamo_forgets_between_tests_what_it_saw_in_earlier_ones():
    """Dynamo compiles a region according to the calls it saw before (a number that changed
    between calls becomes symbolic): a custom backward returning 1.5 was accepted silently in
    a fresh process and refused after a test whose backward returned 1. after_test resets
    Dynamo, so the second test gets the fresh process's verdict."""
    pytest.importorskip("torch")
    adapter = load_adapter("torch-compile")
    fw = adapter.fw

    def backward_returning(value):
        class F(fw.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return value

        x = fw.ones(2, requires_grad=True)
        try:
            adapter.backward(fw.sum(F.apply(x)))
        except RuntimeError:
            return "refused"
        return "accepted"

    fresh = backward_returning(1.5)
    adapter.after_test()
    backward_returning(1)
    adapter.after_test()
    assert backward_returning(1.5) == fresh


def test_a_callback_queued_under_compiled_autograd_is_unsupported_naming_the_limit():
    """Compiled autograd without fullgraph refuses queue_callback with an AssertionError: the
    adapter names that limit (STATED_LIMITS), so the rule reads UNSUPPORTED, not DIVERGES."""
    pytest.importorskip("torch")
    adapter = load_adapter("torch-compiled-autograd")
    fw = adapter.fw
    engine = fw.autograd.Variable._execution_engine
    ran = []
    y = fw.ones(2, requires_grad=True) * 2
    y.register_hook(lambda g: engine.queue_callback(lambda: ran.append("callback")))
    with pytest.raises(Unsupported, match="final callback queued during a backward under "
                                          "compiled autograd without fullgraph"):
        adapter.backward(fw.sum(y))
    assert ran == []


def _column(label, adapter, outcome, expectation=None):
    header = RunHeader(adapter=adapter, framework_version="2.13.0")
    tests = [TestRecord(nodeid="s.py::test_a", rule="engine.unsaved-graph-reusable",
                        actual=outcome, outcome="XFAIL" if expectation else outcome,
                        message="" if outcome == "PASS" else "RuntimeError: second time",
                        expectation=expectation)]
    return combined.Column(label=label, framework="torch", status="complete", detail="",
                           header=header, end=None, tests=tests)


def test_the_page_lists_per_mode_the_rules_whose_outcome_differs_from_eager_with_the_cause():
    entries = combined.catalogue_entries(
        __import__("tests.report.test_unit", fromlist=["CATALOGUE"]).CATALOGUE)
    cause = {"root_cause": "compiled-region-backward-once", "reason": "freed after one backward",
             "upstream": "https://github.com/pytorch/pytorch/issues/118739", "outcome": "DIVERGES"}
    eager = _column("torch", "torch", "PASS")
    mode = _column("torch-compile", "torch-compile", "DIVERGES", cause)
    data = SimpleNamespace(runs=[eager, mode], catalogue=entries,
                           rule_ids=[e.id for e in entries])
    table = aggregate.cells(data)
    assert (eager.mode, mode.mode) == ("", "torch-compile")
    assert mode.title == "torch 2.13.0 (torch-compile)"
    [changes] = aggregate.mode_changes(data, table)
    assert changes["eager"] == "torch" and changes["mode"] == "torch-compile"
    [row] = changes["regressed"]
    assert row["rule"] == "engine.unsaved-graph-reusable"
    assert (row["old"], row["new"], row["cause"]) == ("PASS", "DIVERGES", cause["root_cause"])
    assert aggregate.version_changes(data, table) == []  # a mode is no release of torch


def test_the_inductor_column_starts_with_the_recursion_limit_inductor_leaves():
    """inductor lifts the limit on its first compile and never lowers it: lifted when the
    column loads, every test sees the same limit, whatever compiled before it (a fresh
    interpreter: this process may have compiled already)."""
    pytest.importorskip("torch")
    code = ("import sys\nfrom adapters.base import load_adapter\nbefore = sys.getrecursionlimit()\n"
            "load_adapter('torch-compile-inductor').fw\nprint(before, sys.getrecursionlimit())\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=hang_limit(60))
    before, after = map(int, done.stdout.split()[-2:])
    assert before < 2000 <= after, done.stdout + done.stderr
