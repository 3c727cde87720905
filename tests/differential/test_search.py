"""The differential tester (conformance/differential, docs/differential.md): a derandomized
profile against the reference itself and against torch, the planted-bug test, and the parts
it is built from (programs render to the code they run, comparison, crash handling)."""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import textwrap
import types
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from conformance.differential import program as P
from conformance.differential.compare import compare, same_record
from conformance.differential.runner import InProcessTarget, Search, SubprocessTarget, check, main
from conformance.differential.strategies import avoid_for, programs
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]
# CI profile: fixed seeds and example counts (a few seconds each on one core).
CI_EXAMPLES = 200
CI_SEED = 20240


@pytest.fixture(scope="module")
def oracle():
    return InProcessTarget("reference")


def _search(oracle, target, examples, seed=CI_SEED, **kw):
    search = Search(oracle, target, oracle.features & target.features, **kw)
    search.run(examples, seed)
    return search


def test_reference_against_itself_finds_nothing(oracle):
    search = _search(oracle, InProcessTarget("reference"), CI_EXAMPLES)
    assert search.examples >= CI_EXAMPLES
    assert not search.findings, [f.script for f in search.findings]


def test_torch_runs_clean_apart_from_its_expectations(oracle):
    pytest.importorskip("torch")
    search = _search(oracle, InProcessTarget("torch"), CI_EXAMPLES)
    unexpected = [f.script for f in search.findings if not f.expectation]
    assert not unexpected, "\n\n".join(unexpected)


def _run_script(script: str, tmp_path: Path, plant: str | None) -> subprocess.CompletedProcess:
    path = tmp_path / "repro.py"
    path.write_text(script)
    bootstrap = "import runpy\n"
    if plant:
        module, _, func = plant.partition(":")
        bootstrap += f"import {module}; {module}.{func}()\n"
    bootstrap += f"runpy.run_path({str(path)!r}, run_name='__main__')\n"
    return subprocess.run([sys.executable, "-c", bootstrap], cwd=ROOT, capture_output=True,
                          text=True, timeout=hang_limit(30))


def test_planted_bug_is_found_and_shrunk_to_a_short_script(oracle, tmp_path):
    plant = "conformance.differential.planted:reverse_tensor_hooks"
    target = SubprocessTarget("reference", sys.executable, plant=plant)
    try:
        search = _search(oracle, target, 200, seed=3, max_steps=12)  # found after 87 (seeds 0-2: 132-279)
    finally:
        target.close()
    hooks = [f for f in search.findings if f.divergence.suite == "hooks"]
    assert hooks, f"the reversed hook order went unnoticed in {search.examples} programs"
    script = hooks[0].script
    lines = script.count("\n")
    assert lines <= 15, script
    # the script reproduces the divergence on the buggy copy and runs clean on the reference
    buggy = _run_script(script, tmp_path, plant)
    assert buggy.returncode != 0 and "AssertionError" in buggy.stderr, (script, buggy.stderr)
    clean = _run_script(script, tmp_path, None)
    assert clean.returncode == 0, (script, clean.stderr)


def test_a_crash_is_recorded_as_a_divergence_and_the_worker_restarts(oracle):
    target = SubprocessTarget("reference", sys.executable, plant="conformance.differential.planted:crash_on_sin")
    try:
        prog = P.Program("float64", (
            P.Leaf(0, (3,), 0, True), P.Unary(1, 0, "sin"), P.ObserveGrad(0)))
        outcome = check(prog, oracle, target)
        assert outcome.divergence is not None
        assert outcome.target_run["error"]["category"] == "crash"
        assert outcome.divergence.step == 1 and outcome.divergence.kind == "error"
        safe = P.Program("float64", (P.Leaf(0, (3,), 0, True), P.Unary(1, 0, "exp")))
        assert check(safe, oracle, target).status == "same"  # a fresh worker took over
    finally:
        target.close()


# what the rendered code may name: the adapter's namespace and the adapter, the program's own
# variables, and the two standard-library modules the interpreter binds
_PROGRAM_NAME = re.compile(r"^(t|h|u|g|w|F)\d+$")
_MODULE_NAMES = {"fw", "adapter", "ev", "keep", "gc", "weakref", "ctx", "x", "y", "g", "gi", "go",
                 "p", "s", "staticmethod", "list", "tuple", "len", "None", "True", "False"}
# torch spellings on framework objects that the documented surface routes through an adapter
# method (docs/fw-surface.md): a program must never use them directly
_ADAPTER_SPELLINGS = {"backward", "retain_grad", "saved_tensors", "register_prehook", "zero_",
                      "add_", "mul_", "sub_", "copy_", "data", "_version"}


def _names(source: str):
    tree = ast.parse(source)
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    attrs = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute)]
    return names, attrs


@settings(max_examples=60, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs())
def test_programs_round_trip_through_json_and_use_only_the_documented_surface(prog):
    again = P.Program.from_json(json.loads(json.dumps(prog.to_json())))
    assert again == prog
    source = str(prog)
    names, attrs = _names(source)
    stray = {n for n in names if n not in _MODULE_NAMES and not _PROGRAM_NAME.match(n)}
    assert not stray, (stray, source)   # no framework module by its own name (tinygrad.float64)
    torchisms = {a.attr for a in attrs if a.attr in _ADAPTER_SPELLINGS
                 and not (isinstance(a.value, ast.Name) and a.value.id == "adapter")}
    assert not torchisms, (torchisms, source)
    # graph-node hooks go through adapter.register_node_hook, never grad_fn.register_hook
    assert "grad_fn.register" not in source, source


def test_comparison_uses_the_dtype_tolerance_and_names_the_first_divergence():
    assert same_record(["grad", "t0", [1.0, 2.0]], ["grad", "t0", [1.0 + 1e-6, 2.0]], "float32")
    assert not same_record(["grad", "t0", [1.0, 2.0]], ["grad", "t0", [1.0 + 1e-6, 2.0]], "float64")
    assert not same_record(["grad", "t0", [1.0, 2.0]], ["grad", "t0", None], "float32")
    prog = P.Program("float64", (P.Leaf(0, (3,), 0, True), P.Hook(0, 0, "tensor"), P.Hook(1, 0, "tensor"),
                                 P.Backward(0)))
    ref = {"trace": [[3, ["hook", 0, [3]]], [3, ["hook", 1, [3]]]], "error": None}
    rev = {"trace": [[3, ["hook", 1, [3]]], [3, ["hook", 0, [3]]]], "error": None}
    div = compare(prog, ref, rev)
    assert div.step == 3 and div.suite == "hooks" and div.signature == "hooks|Backward|order:hook"
    err = {"trace": [], "error": {"step": 3, "type": "RuntimeError", "category": "freed",
                                  "marker": "second time", "message": "..."}}
    assert compare(prog, ref, err).signature == "engine|Backward/Grad|error:none/freed"
    assert compare(prog, ref, ref) is None


def test_the_command_line_writes_a_run_line_and_an_end_line(tmp_path, capsys):
    results = tmp_path / "explore-reference.jsonl"
    assert main(["--adapter", "reference", "--examples", "20", "--seed", "3",
                 "--results", str(results)]) == 0
    records = [json.loads(line) for line in results.read_text().splitlines()]
    assert records[0]["type"] == "run" and records[-1]["type"] == "end"
    assert records[-1]["examples"] >= 20 and records[-1]["divergences"] == 0


BROKEN_AT_IMPORT = {
    "segfaults": ("import ctypes\nctypes.string_at(0)\n", "crashed the interpreter (SIGSEGV"),
    "exits": ("import sys\nsys.exit('no licence')\n", "loading it called sys.exit('no licence')"),
    # 3 s times the machine's time-limit scale (conformance/time_scale.py); it never finishes
    "hangs": ("import time\ntime.sleep(3600)\n", "did not finish within"),
}


@pytest.mark.parametrize("how", sorted(BROKEN_AT_IMPORT))
def test_an_adapter_module_that_breaks_at_import_is_one_line(tmp_path, capsys, monkeypatch, how):
    """The tester loaded the adapter in its own process: a segfault there was a bare exit 139,
    a hang hung it, sys.exit ended it with status 1 (issue 28). Now it is loaded in a child
    interpreter first, under a time limit."""
    import conformance.differential.runner as runner

    source, words = BROKEN_AT_IMPORT[how]
    (tmp_path / "brokenfw.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(runner, "PROBE_TIMEOUT", 3.0)
    results = tmp_path / "explore.jsonl"
    assert main(["--adapter", "brokenfw:Adapter", "--examples", "2", "--results",
                 str(results)]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err, err
    assert not results.exists()


def test_a_disk_that_fills_up_mid_search_is_one_line(tmp_path, capsys, monkeypatch):
    import conformance.differential.runner as runner

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(runner.Search, "run", full)
    results = tmp_path / "explore.jsonl"
    assert main(["--adapter", "reference", "--examples", "2", "--results", str(results)]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "writing it failed mid-search (No space left on device)" \
        in err, err
    assert json.loads(results.read_text().splitlines()[0])["type"] == "run"


def test_the_shrink_mode_is_a_choice_and_is_recorded(tmp_path, capsys, oracle):
    results = tmp_path / "explore-reference.jsonl"
    assert main(["--adapter", "reference", "--examples", "5", "--seed", "3", "--shrink", "greedy",
                 "--results", str(results)]) == 0
    assert json.loads(results.read_text().splitlines()[0])["shrink"] == "greedy"
    with pytest.raises(SystemExit) as usage:
        main(["--adapter", "reference", "--shrink", "fast"])
    err = capsys.readouterr().err
    assert usage.value.code == 4 and err.count("\n") == 1 and "invalid choice: 'fast'" in err, err
    with pytest.raises(ValueError, match="one of full, greedy"):
        Search(oracle, oracle, oracle.features, shrink="fast")


def test_the_command_line_stops_at_its_time_budget(tmp_path):
    results = tmp_path / "explore-reference.jsonl"
    assert main(["--adapter", "reference", "--seconds", "3", "--seed", "3",
                 "--results", str(results)]) == 0
    run, *_, end = [json.loads(line) for line in results.read_text().splitlines()]
    assert run["seconds"] == 3 and end["type"] == "end"
    assert 0 < end["examples"] < 10 ** 9 and end["duration"] < 60


# -- a third-party adapter, kept outside the repository ------------------------------------
# It wraps the reference as a framework with its own namespace and defects of its own
# making: backward and grad never free the graph (a real divergence), its in-place zero_ has no
# spelling (Unsupported, not declared) and its namespace has no grad modes (a MissingName).
THIRD_PARTY = '''
from adapters.base import Adapter, Unsupported


class Elsewhere(Adapter):
    name = "elsewhere"
    module = ""   # no module of its own: the default preamble imports nothing
    unsupported = {"forward_ad": "no forward mode", "custom_function": "no custom Function"}

    def preamble(self):
        return "import reference  # the engine this adapter wraps\\n"

    def _import(self):
        import reference

        def grad(*args, **kwargs):
            kwargs["retain_graph"] = True      # this framework never frees a graph
            return reference.autograd.grad(*args, **kwargs)

        keep = {name: getattr(reference, name) for name in (
            "tensor", "float64", "float32", "full", "ones_like", "Tensor", "exp", "sigmoid",
            "sin", "clone", "detach", "sum", "t", "reshape")}
        autograd = self.namespace(reference.autograd, {"grad": grad}, path="fw.autograd")
        return self.namespace(None, {"__version__": "0.0-test", "autograd": autograd, **keep})

    def backward(self, tensor, gradient=None, **kwargs):
        kwargs["retain_graph"] = True      # this framework never frees a graph
        tensor.backward(gradient, **kwargs)

    def inplace(self, tensor, op, *args):
        if op == "zero_":
            raise Unsupported.missing("elsewhere", "inplace_methods", "no zero_")
        return getattr(tensor, op)(*args)
'''


@pytest.fixture
def third_party(tmp_path, monkeypatch):
    package = tmp_path / "tp_elsewhere"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "adapter.py").write_text(textwrap.dedent(THIRD_PARTY))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "tp_elsewhere.adapter:Elsewhere", tmp_path


def test_a_third_party_adapter_is_searched_through_its_namespace_and_methods(oracle, third_party, tmp_path,
                                                                            monkeypatch):
    import conformance.differential.runner as runner

    spec, where = third_party
    target = InProcessTarget(spec)
    assert "grad_modes" not in target.features and "custom_function" not in target.features
    # the greedy shrink: this test is about the adapter, not the shortest script (18 CPU-s of
    # hypothesis's shrinking against 0.2 CPU-s; test_planted_bug_... shrinks in full)
    checks = []
    monkeypatch.setattr(runner, "check", lambda *a, **kw: checks.append(1) or check(*a, **kw))
    search = _search(oracle, target, 300, seed=5, shrink="greedy")
    # hypothesis's shrinker ran no program: 300 examples and a greedy pass (about 1,100 in full)
    assert len(checks) < 300 + 100, len(checks)
    # what it declares missing is left out before the search, with its reason
    assert search.left_out["FunctionApply"]["why"] == {
        "custom_function": "declared missing: no custom Function"}
    # what it lacks without declaring it is a missing-API artefact, found before the search
    # (the namespace has no no_grad; adapter.inplace has no zero_), never a divergence
    assert search.artefacts["Inplace.zero_"]["feature"] == "inplace_methods"
    assert search.artefacts["Inplace.zero_"]["found"] == "probe"
    assert search.artefacts["grad_modes"]["found"] == "probe"
    assert "not declared" in search.left_out["Unary.exp+no_grad"]["why"]["grad_modes"]
    assert search.statuses.get("artefact", 0) == sum(e["programs"] for e in search.artefacts.values())
    assert search.artefact_count() >= 2
    assert all("missing-api" not in f.divergence.signature for f in search.findings)
    freed = [f for f in search.findings if "error:freed/none" in f.divergence.signature]
    assert freed, [f.divergence.signature for f in search.findings]
    # its script starts with the adapter's preamble, loads the adapter by its spec and runs
    # standalone: it fails through the third-party adapter and passes through the reference
    script = freed[0].script
    assert "import reference  # the engine this adapter wraps" in script
    assert f"load_adapter({spec!r})" in script
    path = tmp_path / "repro.py"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(where), str(ROOT)]))
    path.write_text(script)
    failing = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                             timeout=hang_limit(30), env=env, cwd=tmp_path)
    assert failing.returncode != 0 and "AssertionError" in failing.stderr, (script, failing.stderr)
    path.write_text(script.replace(repr(spec), repr("reference")))
    clean = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                           timeout=hang_limit(30), env=env, cwd=tmp_path)
    assert clean.returncode == 0, (script, clean.stderr)


def test_a_missing_api_names_its_feature_and_an_attribute_error_on_none_is_behaviour(oracle, third_party):
    from conformance.differential.interpreter import MISSING_API, categorize, is_missing_api

    spec, _ = third_party
    target = InProcessTarget(spec)
    prog = P.Program("float64", (P.Leaf(0, (3,), 0, True), P.Unary(1, 0, "exp", no_grad=True)))
    outcome = check(prog, oracle, target)
    # grad_modes is not declared: a missing-API artefact (the adapter did not say), not a finding
    assert outcome.status == "artefact" and outcome.divergence is None
    assert outcome.unsupported["feature"] == "grad_modes" and not outcome.unsupported["declared"]
    assert outcome.unsupported["exclude"] == "grad_modes"   # every no_grad step stops
    try:
        None.tolist  # noqa: B018
    except AttributeError as exc:
        assert not is_missing_api(exc) and categorize(exc)[0] != MISSING_API


def test_tinygrad_through_its_adapter_diverges_for_real_causes_and_lacks_apis_unsupported(oracle):
    """Runs where tinygrad is installed (its venv): what tinygrad lacks is unsupported, its
    real causes diverge with the signatures docs/differential.md lists."""
    pytest.importorskip("tinygrad")
    target = InProcessTarget("tinygrad")
    assert {"tensor_hooks", "graph_nodes", "grad_modes"}.isdisjoint(target.features)
    leaf = P.Leaf(0, (2, 3), 0, True)
    # declared missing: is_leaf (unsupported, never a divergence); translated: the transpose
    lacking = check(P.Program("float64", (leaf, P.ObserveMeta(0, "is_leaf"))), oracle, target)
    assert lacking.status == "unsupported" and lacking.unsupported["feature"] == "is_leaf"
    assert check(P.Program("float64", (leaf, P.View(1, 0, "t"), P.ObserveValue(1, "view"))),
                 oracle, target).status == "same"
    freed = check(P.Program("float64", (leaf, P.Unary(1, 0, "exp"), P.Backward(1), P.Backward(1))),
                  oracle, target)
    assert freed.divergence.signature == "engine|Backward/Grad|error:freed/none"
    nonleaf = check(P.Program("float64", (leaf, P.Unary(1, 0, "add1"), P.Backward(1), P.ObserveGrad(1))),
                    oracle, target)
    assert nonleaf.divergence.signature == "engine|ObserveGrad|grad:none"
    # a view of a tensor changed in place keeps its old values (torch: it follows its base)
    plain = P.Leaf(0, (2, 3), 0, False)
    stale = check(P.Program("float64", (plain, P.View(1, 0, "flat"), P.Inplace(0, "mul_"),
                                        P.ObserveValue(1, "view"))), oracle, target)
    assert stale.divergence.signature == "views|ObserveValue|value:view"


@settings(max_examples=40, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs(avoid=avoid_for(["engine|Backward/Grad|error:freed/none",
                                 "engine|Backward/Grad|error:unused/none"])))
def test_a_known_cause_is_no_longer_generated(prog):
    # after error:freed/ every backward and grad retains the graph; after error:unused/ grad
    # asks only for inputs in the root's history (checked on the reference: no unused error)
    assert all(s.retain for s in prog.steps if isinstance(s, (P.Backward, P.Grad))), str(prog)
    run = InProcessTarget("reference").run(prog)
    assert (run["error"] or {}).get("category") not in ("freed", "unused"), (str(prog), run["error"])


def _changes_a_viewed_base_then_reads_the_view(prog) -> bool:
    """An in-place step on a tensor that has views, then the values of one of those views."""
    bases, changed = {}, set()
    for step in prog.steps:
        if isinstance(step, P.View):
            bases[step.out] = bases.get(step.src, step.src)
        elif isinstance(step, P.Inplace) and step.dst in bases.values():
            changed.add(step.dst)
        elif isinstance(step, P.ObserveValue) and bases.get(step.slot) in changed:
            return True
    return False


def test_views_follow_an_in_place_change_of_their_base_on_the_reference_and_torch(oracle):
    """The language expresses "a view follows its base" (tinygrad's stale views were out of its
    reach): such a program exists, the reference and torch agree on it, and a view that does
    not follow is a views divergence."""
    from hypothesis import find

    def reads_a_changed_view(prog):
        return _changes_a_viewed_base_then_reads_the_view(prog) and any(
            rec[0] == "value" and rec[2] == "view" for _, rec in oracle.run(prog)["trace"])

    prog = find(programs(frozenset({"autograd_grad", "inplace", "weakref"})), reads_a_changed_view,
                # derandomized: a search that finds its program on one seed finds it on every run
                # (a random seed missed it once in 3000 examples, and the test failed on chance)
                settings=settings(max_examples=3000, database=None, deadline=None, derandomize=True,
                                  phases=[Phase.generate], suppress_health_check=list(HealthCheck)))
    pytest.importorskip("torch")
    assert check(prog, oracle, InProcessTarget("torch")).status == "same", str(prog)
    # a stale view (its old values) is a views divergence, named by the kind of alias
    base = P.Leaf(0, (3,), 0, False)
    steps = (base, P.View(1, 0, "unsqueeze"), P.Inplace(0, "mul_"), P.ObserveValue(1, "view"))
    good = oracle.run(P.Program("float64", steps))
    stale = {"trace": [[i, rec[:-1] + [[[v / 2 for v in rec[-1][0]]]]] for i, rec in good["trace"]],
             "error": None}
    assert compare(P.Program("float64", steps), good, stale).signature == "views|ObserveValue|value:view"


@settings(max_examples=40, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs(frozenset({"autograd_grad", "inplace", "weakref"}),
                avoid=avoid_for(["views|ObserveValue|value:view", "views|ObserveValue|value:detach"])))
def test_a_known_stale_view_stops_in_place_changes_of_viewed_tensors(prog):
    bases = set()
    for step in prog.steps:
        if isinstance(step, P.View):
            bases.add(step.src)
        assert not (isinstance(step, P.Inplace) and step.dst in bases), str(prog)
        assert not (isinstance(step, P.ObserveValue) and step.alias == "detach"), str(prog)


def test_every_expected_divergence_names_an_entry_of_its_expectations_file():
    """A mapped signature is shown [expected] with its rule's reason: the rule must have an
    entry with that root cause (tinygrad's leaf in-place once showed the rule's no-narrow
    entry, its weakref cause a rule the file does not list). The mappings live in the
    expectations files ([[differential]]), read through the model."""
    from adapters.base import load_adapter
    from conformance.differential.compare import Divergence
    from conformance.differential.runner import expectation_for
    from conformance.model import expectations

    mapped = 0
    for path in sorted((ROOT / "adapters" / "expectations").glob("*.toml")):
        adapter = types.SimpleNamespace(expectations_file=lambda path=path: path)
        for entry in expectations.read(path).differential:
            found = expectation_for(adapter, Divergence(0, "error", "engine", entry.signature, ""))
            assert found == {"rule": entry.rule, "root_cause": entry.root_cause,
                             "reason": found["reason"]}
            assert found["reason"] and any(e.rule == entry.rule and e.reason == found["reason"]
                                           for e in expectations.read(path).entries)
            mapped += 1
    assert mapped >= 5  # tinygrad's


def test_a_third_party_adapters_own_expectations_file_explains_its_divergences(tmp_path):
    """The differential tester asks the adapter for its file (not the repository's path)."""
    from conformance.differential.compare import Divergence
    from conformance.differential.runner import expectation_for

    path = tmp_path / "mine.toml"
    path.write_text('["engine.leaf-inplace-error"]\noutcome = "DIVERGES"\nreason = "it allows it"\n'
                    'root_cause = "leaf-writes"\n\n[[differential]]\nsignature = "engine|Inplace"\n'
                    'rule = "engine.leaf-inplace-error"\nroot_cause = "leaf-writes"\n')
    adapter = types.SimpleNamespace(expectations_file=lambda: path)
    assert expectation_for(adapter, Divergence(0, "error", "engine", "engine|Inplace|x", "")) == {
        "rule": "engine.leaf-inplace-error", "reason": "it allows it", "root_cause": "leaf-writes"}
    assert expectation_for(adapter, Divergence(0, "error", "engine", "views|x", "")) is None


def test_a_differential_entry_must_name_an_entry_of_its_file(tmp_path):
    from conformance.model.expectations import ExpectationsError, read

    path = tmp_path / "bad.toml"
    path.write_text('[[differential]]\nsignature = "engine|x"\nrule = "engine.a"\n'
                    'root_cause = "nothing"\n')
    with pytest.raises(ExpectationsError, match=r"no entry \[engine.a\] with root_cause 'nothing'"):
        read(path)
    path.write_text('[[differential]]\nsignature = "engine|x"\n')
    with pytest.raises(ExpectationsError, match="needs exactly signature, rule, root_cause"):
        read(path)