"""The differential search on HypoFuzz (conformance/differential/fuzz.py): what a worker records
for a divergence, that processes sharing a results file record it once, the shared database,
and a short bounded run of two workers."""
from __future__ import annotations

import json
import os
import re
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


def _fuzz(tmp_path, *args: str):
    """``python -m conformance.differential.fuzz`` on the reference: (process, its search,
    what it said with HypoFuzz's log)."""
    results, db = tmp_path / "explore-reference.jsonl", tmp_path / "db"
    done = subprocess.run([sys.executable, "-m", "conformance.differential.fuzz", "--adapter",
                           "reference", "--startup", "120", "--max-steps", "8",
                           "--database", str(db), "--results", str(results), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=hang_limit(60),
                          env={**os.environ, "CI": "true"})  # Hypothesis's ci profile derandomizes
    logs = "\n".join(p.read_text(errors="replace")[-3000:] for p in tmp_path.glob("*.log"))
    said = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}\nHypoFuzz's log:\n{logs}"
    (search,) = read_findings(results)
    return done, search, said


def test_two_workers_share_one_database_and_stop_once_the_planted_bug_is_found(tmp_path):
    """`nox -s fuzz` in small: HypoFuzz with two processes on a planted bug, stopped as soon as
    they have recorded it (``--stop-after 1``; ``--seconds`` only bounds a search that never
    finds it, so a slow machine takes longer instead of failing); what they found is in the
    results file, shrunk, as scripts."""
    pytest.importorskip("hypofuzz", reason="install the fuzz extra: pip install -e .[fuzz]")
    done, search, said = _fuzz(tmp_path, "--plant", TWICE, "--workers", "2",
                               "--seconds", "900", "--stop-after", "1")
    assert done.returncode == 1, said  # 1: the planted bug was found (no expectation)
    assert search["run"]["engine"] == "hypofuzz" and search["end"] is not None, said
    assert search["end"]["stopped_by"] == "divergences", said
    # two workers may each record a different divergence before the run looks again
    assert re.search(r"stopped after \d+ divergence\(s\) \(--stop-after 1\)", done.stdout), said
    assert len({w["worker"] for w in search["workers"]}) == 2, said
    assert all(w["examples"] > 0 for w in search["workers"]), said
    assert any((tmp_path / "db" / "reference").iterdir()), "nothing in the shared database"
    assert f"{search['end']['examples']} programs" in done.stdout
    # the planted bug (a leaf's hook runs twice) is found, shrunk and scripted
    assert search["divergences"], said
    for found in search["divergences"]:
        assert found["worker"] in {w["worker"] for w in search["workers"]}
        # how far a search shrinks depends on when it met the bug, so its length is not held
        # here: test_search.py holds a seeded search's shrunk script to 15 lines
        assert "register_hook" in found["script"] and found["script_lines"] > 0, found["script"]
        assert f"[NEW] {found['category']}: {found['signature']}" in done.stdout


def test_a_search_that_finds_nothing_stops_at_its_time_budget(tmp_path):
    """``--seconds`` ends the workers, counted from when they run: the run's end line says it
    fuzzed at least that long and found nothing on the clean reference (exit status 0)."""
    pytest.importorskip("hypofuzz", reason="install the fuzz extra: pip install -e .[fuzz]")
    done, search, said = _fuzz(tmp_path, "--workers", "1", "--seconds", "2", "--stop-after", "1")
    assert done.returncode == 0, said
    end = search["end"]
    assert end is not None and end["stopped_by"] == "time", said
    assert end["duration"] - end["startup"] >= 2 - 0.2, said  # rounded to tenths
    assert end["divergences"] == 0 and end["examples"] > 0, said


def test_stop_after_must_not_be_negative():
    assert fuzz.main(["--stop-after", "-1"]) == 4
