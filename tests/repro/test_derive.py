"""Reproduction scripts decide each test's feature needs as the run did: per test, from the suite
index (conformance.repro.derive, conformance.repro.runtime)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conformance.repro import derive, source
from conformance.rules import load_catalogue
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = load_catalogue(ROOT / "conformance" / "catalogue")

NO_GRAPH_NODES = '''
from adapters.reference_adapter import ReferenceAdapter


class NoNodesAdapter(ReferenceAdapter):
    """The reference, declaring graph nodes missing (tinygrad's case)."""
    name = "nonodes"
    module = ""
    unsupported = {**ReferenceAdapter.unsupported, "graph_nodes": "nonodes shows no graph nodes"}
'''

#: One rule, two tests: one reads grad_fn (it needs graph_nodes), one guards that read itself
#: (``@judged_without("graph_nodes")``) and judges the rest of the rule.
TWO_TESTS = '''


from conformance.features import judged_without


@rule("views.is-view-and-base")
def test_reads_the_node(fw, device):
    y = fw.ones(2, requires_grad=True, device=device) * 2
    assert y.grad_fn is not None, "no node"


@rule("views.is-view-and-base")
@judged_without("graph_nodes")
def test_guards_the_node(fw, adapter, device):
    y = fw.ones(2, requires_grad=True, device=device) * 2
    try:
        adapter.feature("graph_nodes", lambda: y.grad_fn)
    except Unsupported:
        pass
    assert adapter.to_numpy(y).tolist() == [2.0, 2.0], "not doubled"
'''


def _tree(tmp_path: Path) -> source.WorkingTree:
    root = tmp_path / "tree"
    shutil.copytree(ROOT / "conformance" / "suites", root / "conformance" / "suites",
                    ignore=shutil.ignore_patterns("__pycache__"))
    views = root / "conformance" / "suites" / "test_views.py"
    text = views.read_text()
    if "import Unsupported" not in text:
        text += "\nfrom adapters.base import Unsupported\n"
    views.write_text(text + TWO_TESTS)
    return source.WorkingTree(root)


def test_a_judged_without_test_does_not_drop_the_feature_need_of_the_other_tests(tmp_path):
    """On an adapter without graph nodes the run makes the test that reads grad_fn UNSUPPORTED
    and judges the guarded one: the script says the same per test, and the cell UNSUPPORTED
    (it said ERROR: the need was lost and grad_fn was read)."""
    (tmp_path / "nonodes_adapter.py").write_text(NO_GRAPH_NODES)
    rule = CATALOGUE.rules["views.is-view-and-base"]
    run = derive.RunInfo("nonodes_adapter:NoNodesAdapter")
    script = derive.generate(rule, run, _tree(tmp_path),
                             ["test_reads_the_node", "test_guards_the_node"])
    derive.check_script(script)
    assert "needs=('graph_nodes',)" in script
    reads = next(line for line in script.splitlines() if "test_reads_the_node(" in line
                 and "repro.check" in line)
    guards = next(line for line in script.splitlines() if "test_guards_the_node(" in line
                  and "repro.check" in line)
    assert "graph_nodes" in reads and "needs" not in guards
    path = tmp_path / "script.py"
    path.write_text(script)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=hang_limit(75))
    out = proc.stdout + proc.stderr
    said = ("nonodes does not support graph_nodes: nonodes shows no graph nodes (declared in the "
            "adapter; the test needs it)")
    assert f"test_reads_the_node: UNSUPPORTED\n    {said}\n" in out, out
    assert "test_guards_the_node: PASS" in out, out
    assert out.rstrip().endswith(f"RESULT: UNSUPPORTED: {said}"), out


def test_a_script_says_plainly_when_it_runs_through_the_adapter():
    """torch's and the reference's ``fw`` is the module itself: the script calls it by its
    name. Paddle's (and a third party's) is the adapter's translation: the script keeps
    ``fw``, says so in its header and names the witness command for code that imports only
    the framework."""
    rule = CATALOGUE.rules["identity.grad-stable-id"]
    through = derive.generate(rule, "paddle")
    assert "# THROUGH THE ADAPTER: these tests call `fw`" in through
    assert "not `import paddle` itself" in through and "--issue CAUSE" in through
    assert "fw = repro.fw" in through and "paddle = repro.fw" not in through
    direct = derive.generate(rule, "torch")
    assert "THROUGH THE ADAPTER" not in direct and "torch = repro.fw" in direct
    assert derive.through_adapter("mypkg.adapter:MyFw")
    assert not derive.through_adapter("reference") and derive.through_adapter("torch-compile")
