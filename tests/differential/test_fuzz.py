"""The differential search on HypoFuzz (conformance/differential/fuzz.py): what a worker records
for a divergence, that processes sharing a results file record it once, the shared database,
and a short bounded run of two workers."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.differential import fuzz
from conformance.results import read_findings
from conformance.differential import program as P
from conformance.differential.runner import InProcessTarget, SubprocessTarget
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]
PLANT = "conformance.differential.planted:reverse_tensor_hooks"
TWICE = "hooks.leaf-hook-fires-twice"  # a mutant random programs meet within a few dozen
# two tensor hooks on one leaf, then steps the shrinker can drop
HOOKS = P.Program("float64", (
    P.Leaf(0, (3,), 0, True), P.Hook(0, 0, "tensor"), P.Hook(1, 0, "tensor"),
    P.Unary(1, 0, "exp"), P.Backward(1), P.ObserveGrad(0)))


@pytest.fixture(scope="module")
def targets():
    oracle = InProcessTarget("reference")
    buggy = SubprocessTarget("reference", sys.executable, plant=PLANT)
    yield oracle, buggy
    buggy.close()


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_divergence_is_recorded_once_shrunk_with_its_script(targets, tmp_path):
    oracle, buggy = targets
    results = tmp_path / "explore-reference.jsonl"
    first, second = (fuzz.Recorder(oracle, buggy, results, "run1") for _ in range(2))
    first(HOOKS)
    first(HOOKS)
    second(HOOKS)  # another process of the same run: already recorded
    (record,) = lines(results)
    assert record["type"] == "divergence" and record["engine"] == "hypofuzz"
    assert record["signature"] == "hooks|Backward|order:hook"
    shrunk = P.Program.from_json(record["program"])
    assert len(shrunk.steps) < len(HOOKS.steps), record["program_text"]
    assert "register_hook" in record["script"] and "import reference" in record["script"]
    fuzz.Recorder(oracle, buggy, results, "run2")(HOOKS)  # another run records it again
    assert [r["fuzz_run"] for r in lines(results)] == ["run1", "run2"]


def test_same_programs_are_not_recorded(targets, tmp_path):
    oracle, _ = targets
    results = tmp_path / "r.jsonl"
    record = fuzz.Recorder(oracle, InProcessTarget("reference"), results, "run")
    record(HOOKS)
    assert not results.exists() and record.examples == 1


def test_database_is_a_directory_per_adapter_or_redis(tmp_path):
    from hypothesis.database import DirectoryBasedExampleDatabase

    db = fuzz.database(tmp_path / "db", "torch")
    assert isinstance(db, DirectoryBasedExampleDatabase)
    assert db == DirectoryBasedExampleDatabase(str(tmp_path / "db" / "torch"))


def test_two_workers_share_one_database_for_a_bounded_time(tmp_path):
    """`nox -s fuzz` in small: HypoFuzz with two processes on a planted bug, stopped 40 s after
    both run; what they found is in the results file, shrunk, as scripts."""
    pytest.importorskip("hypofuzz", reason="install the fuzz extra: pip install -e .[fuzz]")
    results, db = tmp_path / "explore-reference.jsonl", tmp_path / "db"
    done = subprocess.run([sys.executable, "-m", "conformance.differential.fuzz", "--adapter",
                           "reference", "--plant", TWICE, "--workers", "2", "--seconds", "40",
                           "--startup", "120", "--max-steps", "8", "--database", str(db),
                           "--results", str(results)],
                          cwd=ROOT, capture_output=True, text=True, timeout=hang_limit(60),
                          env={**os.environ, "CI": "true"})  # Hypothesis's ci profile derandomizes
    logs = "\n".join(p.read_text(errors="replace")[-3000:] for p in tmp_path.glob("*.log"))
    said = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}\nHypoFuzz's log:\n{logs}"
    assert done.returncode in (0, 1), said  # 1: the planted bug was found (no expectation)
    (search,) = read_findings(results)
    assert search["run"]["engine"] == "hypofuzz" and search["end"] is not None, said
    assert len({w["worker"] for w in search["workers"]}) == 2, said
    assert all(w["examples"] > 0 for w in search["workers"]), said
    assert any((db / "reference").iterdir()), "nothing in the shared database"
    assert f"{search['end']['examples']} programs" in done.stdout
    # the planted bug (a leaf's hook runs twice) is found, shrunk and scripted
    assert search["divergences"], said
    for found in search["divergences"]:
        assert found["worker"] in {w["worker"] for w in search["workers"]}
        # how far a 40 s search shrinks depends on the machine's speed and load, so its length
        # is not held here: test_search.py holds a seeded search's shrunk script to 15 lines
        assert "register_hook" in found["script"] and found["script_lines"] > 0, found["script"]
        assert f"[NEW] {found['category']}: {found['signature']}" in done.stdout
