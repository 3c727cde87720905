"""Reproduction scripts made from the run itself: the recorded suite revision (git show when it
is not the checked-out one), the adapter spec (a third-party ``module:Class`` too), device and
options, through the harness's own classification; `python -m conformance.repro.check`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.repro import check, derive, source
from conformance.results import RunHeader, read_run
from conformance.results.cells import Cell
from conformance.rules import load_catalogue
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = load_catalogue(ROOT / "conformance" / "catalogue")
#: A torch run recorded at an older suite revision (b301759, before e5dc56d changed the tests
#: of engine.grad-frees-saved-tensors, engine.retain-grad-does-not-own-tensor and
#: legacy_function.needs-input-grad), trimmed to eight rules. Written by that revision's harness:
#: no suite_digest, no adapter_spec yet.
OLD_RUN = ROOT / "tests" / "report" / "data" / "torch-at-b301759.jsonl"
OLD_REVISION = "b301759d6f758037b2c8a35208acf733d2fcb8c3"


def test_a_run_at_an_older_suite_revision_gets_that_revisions_tests_and_reproduces():
    header = read_run(OLD_RUN).header
    assert header.suite_revision == OLD_REVISION and header.suite_digest is None
    assert "suite_digest" not in OLD_RUN.read_text().splitlines()[0]
    if not source.has_revision(ROOT, OLD_REVISION):
        pytest.fail(f"git has no commit {OLD_REVISION[:12]} in {ROOT}: the check of scripts from "
                    f"an older suite revision needs the project's history (git fetch --unshallow)")
    info = derive.RunInfo.of(header, "old")
    tree = info.tree()
    assert isinstance(tree, source.GitTree) and tree.revision == OLD_REVISION
    # the script carries the test as it was then, not as the checkout has it now
    rule = CATALOGUE.rules["engine.grad-frees-saved-tensors"]
    old = derive.generate(rule, info)
    now = derive.generate(rule, "torch")
    assert 'raises(RuntimeError, what="a second autograd.grad' in old
    assert 'raises(Exception, what="a second autograd.grad' in now
    assert "suite revision b301759d6f75 (git show)" in old
    rows = check.check_file(OLD_RUN, size=20, python=sys.executable)
    assert len(rows) == 8 and {r["recorded"] for r in rows} == {"PASS", "OBSERVED", "DIVERGES"}
    assert [r for r in rows if r["status"] != "ok"] == []


def test_a_revision_git_does_not_have_fails_with_what_to_do(tmp_path):
    lines = OLD_RUN.read_text().splitlines()
    head = json.loads(lines[0])
    head.update(suite_revision="0" * 40, suite_digest="sha256:not-this-checkout")
    path = tmp_path / "gone.jsonl"
    path.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    with pytest.raises(derive.ReproError, match="git has no such commit.*check out that revision"):
        derive.RunInfo.of(RunHeader.from_json(head)).tree()
    proc = subprocess.run([sys.executable, "-m", "conformance.repro.check", str(path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=hang_limit(30))
    assert proc.returncode == 1 and "FAILED gone.jsonl: no scripts:" in proc.stdout, proc.stdout
    # uncommitted suite changes are gone too: say so
    head.update(suite_revision=OLD_REVISION, suite_dirty=True)
    with pytest.raises(derive.ReproError, match="uncommitted changes"):
        derive.RunInfo.of(RunHeader.from_json(head)).tree()


def test_a_revision_that_is_no_commit_id_never_reaches_git(tmp_path):
    out = tmp_path / "written"
    for revision in (f"--output={out}", "HEAD~1", "main"):
        with pytest.raises(derive.ReproError, match="is not a git commit id"):
            derive.RunInfo.of(RunHeader(adapter="torch", suite_revision=revision,
                                        suite_digest="sha256:not-this-checkout")).tree()
    assert not out.exists()


def test_bad_input_is_one_line_and_exit_4(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "conformance.repro.check",
                           str(tmp_path / "none.jsonl")], capture_output=True, text=True,
                          cwd=ROOT, timeout=hang_limit(30))
    assert proc.returncode == 4 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_the_digest_of_this_checkout_selects_the_working_tree():
    assert derive.RunInfo.of(RunHeader(adapter="torch", suite_revision="f" * 40,
                                       suite_digest=source.digest(ROOT))).tree().describe() == \
        "the working tree"


THIRD_PARTY = '''
from adapters.reference_adapter import ReferenceAdapter


class NoDualsAdapter(ReferenceAdapter):
    """A third-party adapter: the reference without forward AD, named by module:Class."""
    name = "noduals"
    module = ""
    unsupported = {**ReferenceAdapter.unsupported, "forward_ad": "noduals has no forward AD"}

    def expectations_file(self):
        from pathlib import Path
        return Path(__file__).with_name("none.toml")
'''


def test_third_party_adapter_run_header_and_scripts_reproduce_its_cells(tmp_path):
    """A ``module:Class`` adapter outside the project: the run records its spec, suite digest
    and interpreter; scripts made from that header load the same adapter and give each sampled
    cell's outcome (UNSUPPORTED from its feature table, PASS, OBSERVED)."""
    (tmp_path / "noduals_adapter.py").write_text(THIRD_PARTY)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    results = tmp_path / "noduals.jsonl"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "--adapter=noduals_adapter:NoDualsAdapter", f"--results={results}",
                           "conformance/suites/test_forward_levels.py",
                           "conformance/suites/test_views.py"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=hang_limit(150))
    assert results.is_file(), proc.stdout[-2000:] + proc.stderr[-2000:]
    header = read_run(results).header
    assert header.adapter_spec == "noduals_adapter:NoDualsAdapter"
    assert header.suite_digest == source.digest(ROOT)
    assert header.python_executable == sys.executable and header.device == "cpu"
    old_pythonpath = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = env["PYTHONPATH"]  # the script runner's processes find the adapter
    try:
        rows = check.check_file(results, size=6, out_dir=tmp_path / "scripts")
    finally:
        if old_pythonpath is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = old_pythonpath
    assert {"UNSUPPORTED", "PASS"} <= {r["recorded"] for r in rows}
    assert [r for r in rows if r["status"] != "ok"] == [], rows
    script = (tmp_path / "scripts" / f"{rows[0]['rule']}.py").read_text()
    assert "adapter_spec='noduals_adapter:NoDualsAdapter'" in script
    assert "fw = repro.fw" in script  # an adapter that names no module keeps the suites' `fw`


def test_sample_takes_one_cell_of_each_outcome_first_and_is_stable():
    table = {f"r{i}": Cell(f"r{i}", o, o, [], level="MUST")
             for i, o in enumerate(["PASS"] * 20 + ["DIVERGES", "UNSUPPORTED", "CRASH", "TIMEOUT"])}
    picked = check.sample(table, 6, "torch")
    assert picked == check.sample(table, 6, "torch") and len(picked) == 6
    assert {table[r].actual for r in picked} == {"PASS", "DIVERGES", "UNSUPPORTED", "CRASH"}
    assert "TIMEOUT" in {table[r].actual for r in check.sample(table, 6, "x", True)}
    table["r20"].flaky = True  # the DIVERGES cell: the framework differs from run to run
    assert "DIVERGES" not in {table[r].actual for r in check.sample(table, 30, "torch")}


# -- the runtime: the harness's timeout, leak check and classification ----------------------------
class _Hoard:
    pass


_HOARD = []


def test_runtime_gives_timeout_leak_and_blocked_as_the_harness_does(capsys):
    import time

    from conformance.api import prerequisite
    from conformance.repro.runtime import Repro

    repro = Repro("engine.some-rule", "MUST", adapter_spec="reference", timeout=0.5)
    assert repro.check("sleeps", lambda: time.sleep(3600))[0] == "TIMEOUT"  # never ends itself

    def blocked_by_other():
        with prerequisite("engine.other-rule", what="a step"):
            raise AssertionError("the step failed")

    def blocked_by_own():
        with prerequisite("engine.some-rule", what="its own step"):
            raise AssertionError("the step failed")

    assert repro.check("other", blocked_by_other)[0] == "BLOCKED"
    assert repro.check("own", blocked_by_own)[0] == "DIVERGES"  # a verdict on its own rule
    assert repro.finish() == "TIMEOUT"
    assert capsys.readouterr().out.rstrip().splitlines()[-1].startswith("RESULT: TIMEOUT: ")

    leaky = Repro("engine.some-rule", "MUST", adapter_spec="reference", leak_check=[1, 3])
    assert leaky.check("hoards", lambda: _HOARD.append(_Hoard()))[0] == "LEAK"
    assert leaky.check("clean", lambda: None)[0] == "PASS"


# -- what a script copies and what it imports: decided from the tree, not a list of files -------
PLANTED_HELPER = '''"""A helper module a suite starts using: no edit of conformance/repro/derive.py needed."""
from conformance.api import prerequisite
from conformance.suites._helpers import TENSOR_WEAKREF

FACTOR = 3


def tripled(fw, device):
    with prerequisite(TENSOR_WEAKREF, what="a planted step"):
        return fw.ones(2, device=device) * FACTOR
'''

PLANTED_TEST = '''


from conformance.suites import _planted
from conformance.suites._planted import tripled


@rule("views.is-view-and-base")
def test_planted(fw, device):
    assert tripled(fw, device).tolist() == [3.0, 3.0], "tripled is not three"
    assert _planted.FACTOR == 3
'''


def _copy_of_the_suites(tmp_path: Path) -> Path:
    """A tree with this checkout's suites, and a test using a helper module planted in it."""
    import shutil

    root = tmp_path / "tree"
    shutil.copytree(ROOT / "conformance" / "suites", root / "conformance" / "suites",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (root / "conformance" / "suites" / "_planted.py").write_text(PLANTED_HELPER)
    views = root / "conformance" / "suites" / "test_views.py"
    views.write_text(views.read_text() + PLANTED_TEST)
    return root


def _run_script(tmp_path: Path, script: str, name: str = "script.py") -> str:
    path = tmp_path / name
    path.write_text(script)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=hang_limit(75))
    return proc.stdout + proc.stderr


def test_a_new_helper_module_of_the_suites_works_in_scripts(tmp_path):
    """The tree's helper module the installed harness lacks is copied from the tree (with the
    helpers it uses from the installed one imported); the script runs on its own."""
    tree = source.WorkingTree(_copy_of_the_suites(tmp_path))
    rule = CATALOGUE.rules["views.is-view-and-base"]
    script = derive.generate(rule, derive.RunInfo("reference"), tree, ["test_planted"])
    derive.check_script(script, "reference")
    assert "def tripled(" in script and "FACTOR = 3" in script
    assert "conformance/suites/_planted.py" in script
    assert "_planted.FACTOR" not in script and "FACTOR == 3" in script  # the module prefix went
    assert "from conformance.suites._helpers import TENSOR_WEAKREF" in script
    assert "from conformance.api import prerequisite" in script
    assert _run_script(tmp_path, script).rstrip().endswith("RESULT: PASS")
    # the copied helper is the one that runs: a broken one gives the rule's verdict
    broken = script.replace("FACTOR = 3", "FACTOR = 4")
    assert "RESULT: DIVERGES: AssertionError: tripled is not three" in _run_script(tmp_path, broken)


def test_a_helper_changed_since_the_run_is_copied_as_it_was_then(tmp_path):
    """A suites helper module whose source at the run's revision differs from the installed
    one is copied from the run's tree; an unchanged one is imported."""
    root = _copy_of_the_suites(tmp_path)
    helpers = root / "conformance" / "suites" / "_helpers.py"
    helpers.write_text(helpers.read_text().replace(
        'TENSOR_WEAKREF = "identity.weakref-survives-framework-ownership"',
        'TENSOR_WEAKREF = "identity.weakref-survives-framework-ownership"  # as it was'))
    rule = CATALOGUE.rules["views.is-view-and-base"]
    script = derive.generate(rule, "reference", source.WorkingTree(root), ["test_planted"])
    assert 'TENSOR_WEAKREF = "identity.weakref-survives-framework-ownership"  # as it was' in script
    assert "import TENSOR_WEAKREF" not in script  # (the copy of the planted test's tree: imported)
    assert _run_script(tmp_path, script).rstrip().endswith("RESULT: PASS")


# -- rendering a report runs nothing a results file names -----------------------------------------
MARKER_MODULE = '''
import pathlib, os
pathlib.Path(os.environ["MARKER"]).write_text("imported")


class Adapter:
    def __init__(self):
        pathlib.Path(os.environ["MARKER"]).write_text("called")
'''


def test_rendering_a_report_runs_nothing_a_results_header_names(tmp_path):
    """``adapter_spec: "os:abort"`` and a module that writes a file when imported: the page,
    results.json and JUnit are written, the process lives, nothing was imported; each column's
    scripts name the spec as text, to be loaded when the user runs one."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "marker_adapter.py").write_text(MARKER_MODULE)
    marker = tmp_path / "marker"
    results = tmp_path / "results"
    results.mkdir()
    lines = OLD_RUN.read_text().splitlines()
    for label, spec in (("aborts", "os:abort"), ("marks", "marker_adapter:Adapter")):
        head = json.loads(lines[0])
        for key in ("suite_revision", "suite_dirty"):  # scripts from this checkout's suites
            head.pop(key)
        head.update(adapter=spec, adapter_spec=spec)
        (results / f"{label}.jsonl").write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    env = {**os.environ, "MARKER": str(marker),
           "PYTHONPATH": os.pathsep.join([str(tmp_path / "lib"), str(ROOT)])}
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "conformance.report", "--results-dir",
                           str(results), "--out", str(out)], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=hang_limit(75))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert not marker.exists()
    page = (out / "index.html").read_text()
    assert "marker_adapter:Adapter" in page
    from conformance.report import html

    scripts = html.embedded_data(page)["scripts"]
    assert set(scripts) >= {"aborts", "marks"} and all(scripts[k] for k in ("aborts", "marks"))
    assert derive.framework_of("os:abort") == (None, "")
    assert derive.framework_of("marker_adapter:Adapter") == (None, "") and not marker.exists()
    # the built-in registry still gives its facts, by name or by its module:Class
    assert derive.framework_of("torch")[0] == "torch"
    assert derive.framework_of("adapters.torch_adapter:TorchAdapter") == derive.framework_of("torch")


def test_a_script_whose_adapter_hangs_at_import_stops_at_the_runs_timeout(tmp_path, monkeypatch):
    """The script loaded its adapter before arming the run's timeout: an adapter module that
    hangs at import hung ``repro.check`` for the runner's half hour per batch."""
    from conformance.outcome_exceptions import TestTimeout
    from conformance.repro.runtime import Repro

    # an hour's sleep: TestTimeout (not a finished import) shows the alarm was armed first
    (tmp_path / "hangs_at_import.py").write_text("import time\ntime.sleep(3600)\nclass A: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(TestTimeout):
        Repro("engine.some-rule", "MUST", adapter_spec="hangs_at_import:A", timeout=0.5)
