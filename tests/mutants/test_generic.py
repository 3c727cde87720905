"""The long mode (conformance/mutants/generic.py): how it reads mutmut's files, samples, scores
and names survivors, and its two steps end to end with a stand-in for mutmut (no real run)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from conformance.mutants import generic as G
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]

# what mutmut writes for reference/mod.py: each function's original and its variants
MUTATED = textwrap.dedent('''
    def x_check__mutmut_orig(x):
        if x < 0:
            raise ValueError("x must not be negative")
        return x
    def x_check__mutmut_1(x):
        if x < 0:
            raise ValueError("XXx must not be negativeXX")
        return x
    def x_check__mutmut_2(x):
        if x <= 0:
            raise ValueError("x must not be negative")
        return x
    def x_check__mutmut_3(x):
        if x < 1:
            raise ValueError("x must not be negative")
        return x
    class Box:
        def xǁBoxǁget__mutmut_orig(self):
            return self.value
        def xǁBoxǁget__mutmut_1(self):
            return None
    def x_unused__mutmut_orig():
        return 1
    def x_unused__mutmut_1():
        return 2
''')
CODES = {"reference.mod.x_check__mutmut_1": 0, "reference.mod.x_check__mutmut_2": 1,
         "reference.mod.x_check__mutmut_3": 0, "reference.mod.xǁBoxǁget__mutmut_1": -11,
         "reference.mod.x_unused__mutmut_1": 33}
TESTS = {"reference.mod.x_check": ["suites/test_a.py::test_1", "suites/test_a.py::test_2"],
         "reference.mod.xǁBoxǁget": ["suites/test_a.py::test_2"]}
DURATION = {"suites/test_a.py::test_1": 0.5, "suites/test_a.py::test_2": 0.25}


def fake_work(tmp_path: Path, codes: dict) -> Path:
    (tmp_path / "mutants" / "reference").mkdir(parents=True)
    (tmp_path / "mutants" / "reference" / "mod.py").write_text(MUTATED)
    (tmp_path / "mutants" / "reference" / "mod.py.meta").write_text(
        json.dumps({"exit_code_by_key": codes, "durations_by_key": {}}))
    (tmp_path / "mutants" / "mutmut-stats.json").write_text(
        json.dumps({"tests_by_mangled_function_name": TESTS, "duration_by_test": DURATION}))
    return tmp_path


def test_verdicts_are_read_and_scored_with_what_was_not_reached_or_not_checked(tmp_path):
    work = fake_work(tmp_path, {**CODES, "reference.mod.x_check__mutmut_3": None})
    codes = G.read_meta(work)
    tests, duration = G.read_stats(work)
    assert codes == {**CODES, "reference.mod.x_check__mutmut_3": None} and tests == TESTS
    sample = ["reference.mod.x_check__mutmut_1", "reference.mod.x_check__mutmut_2",
              "reference.mod.x_check__mutmut_3", "reference.mod.xǁBoxǁget__mutmut_1"]
    found = G.summarize(codes, sample, tests, G.describe(work, ["reference.mod.x_check__mutmut_1"]))
    assert (found["generated"], found["reached"], found["not_reached"]) == (5, 4, 1)
    # the crash counts as killed; the unchecked one is named apart, not scored
    assert (found["checked"], found["killed"], found["crash"], found["survived"]) == (3, 2, 1, 1)
    assert found["not_checked"] == 1 and found["score"] == round(2 / 3, 4)
    (survivor,) = found["survivors"]
    assert survivor["function"] == "reference.mod.check" and survivor["kind"] == "text"
    assert survivor["change"] == ["-raise ValueError('x must not be negative')",
                                  "+raise ValueError('XXx must not be negativeXX')"]
    assert found["survived_text_only"] == 1 and found["score_behaviour"] == 1.0
    assert found["not_reached_by_function"] == {"reference.mod.unused": 1}
    low, high = found["score_interval_95"]
    assert low < found["score"] < high


def test_a_change_of_behaviour_is_not_text_only(tmp_path):
    work = fake_work(tmp_path, CODES)
    changes = G.describe(work, ["reference.mod.x_check__mutmut_3", "reference.mod.xǁBoxǁget__mutmut_1"])
    assert changes["reference.mod.x_check__mutmut_3"] == {"change": ["-if x < 0:", "+if x < 1:"],
                                                          "kind": "behaviour"}
    assert changes["reference.mod.xǁBoxǁget__mutmut_1"]["kind"] == "behaviour"
    assert G.readable("reference.mod.xǁBoxǁget") == "reference.mod.Box.get"


def test_the_sample_is_random_but_seeded_and_fits_the_time_left():
    reached = [f"reference.mod.x_check__mutmut_{i}" for i in range(1, 200)]
    one = G.estimate(reached[0], TESTS, DURATION)
    assert one == G.PER_MUTANT_S + 0.75
    order = G.shuffled(reached, seed=7)
    assert order == G.shuffled(list(reversed(reached)), seed=7) != G.shuffled(reached, seed=8)
    assert order != reached and sorted(order) == sorted(reached)  # not mutmut's order
    sample = G.choose(order, TESTS, DURATION, seconds=10 * one, jobs=2)
    assert sample == order[:20]  # two workers: twice as many as fit one
    assert G.choose(order, TESTS, DURATION, seconds=10 * one, jobs=2, scale=0.5) == order[:40]
    assert G.choose(order, TESTS, DURATION, seconds=1e9, jobs=2) == order


FAKE_MUTMUT = textwrap.dedent('''
    """Stands in for ``mutmut run``: prepares (an unknown name), or checks the names given."""
    import json, sys
    from pathlib import Path
    args = sys.argv[sys.argv.index("--max-children") + 2:]
    assert sys.argv[1] == "run" and Path("setup.cfg").is_file() and Path("reference").is_dir()
    meta = Path("mutants/reference/mod.py.meta")
    if args == ["{no_match}"]:
        meta.parent.mkdir(parents=True)
        Path("mutants/reference/mod.py").write_text({mutated!r})
        meta.write_text(json.dumps({{"exit_code_by_key": {{k: None for k in {codes!r}}}}}))
        Path("mutants/mutmut-stats.json").write_text(json.dumps({{
            "tests_by_mangled_function_name": {tests!r}, "duration_by_test": {duration!r}}}))
        raise SystemExit(1)
    data = json.loads(meta.read_text())
    for name in args:
        data["exit_code_by_key"][name] = {codes!r}[name]
        data.setdefault("durations_by_key", {{}})[name] = 1.5
    meta.write_text(json.dumps(data))
''').format(no_match=G.NO_MATCH, mutated=MUTATED, codes=CODES, tests=TESTS, duration=DURATION)


def test_long_only_runs_both_steps_and_keeps_the_curated_result(tmp_path):
    script = tmp_path / "fake_mutmut.py"
    script.write_text(FAKE_MUTMUT)
    out = tmp_path / "mutants.json"
    out.write_text(json.dumps({"type": "mutants", "curated": {"killed": 90, "total": 91}}))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AUTOGRAD_CONFORMANCE_MUTMUT": f"{sys.executable} {script}"}
    proc = subprocess.run([sys.executable, "-m", "conformance.mutants", "--long-only", "--budget", "60",
                           "--seed", "3", "--json", str(out)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=hang_limit(30))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = json.loads(out.read_text())
    assert found["curated"] == {"killed": 90, "total": 91}
    generic = found["generic"]
    assert generic["status"] == "all reached mutants checked" and generic["seed"] == 3
    assert (generic["sampled"], generic["checked"], generic["killed"], generic["survived"]) == (4, 4, 2, 2)
    assert generic["not_reached"] == 1 and generic["survived_text_only"] == 1
    assert generic["summary"] in proc.stdout and "2/4 killed (50.0%" in generic["summary"]
    assert generic["date"] and generic["prepare_s"] >= 0
    assert generic["stages"] == [{"sampled": 4, "checked": 4, "seconds": generic["stages"][0]["seconds"],
                                  "scale": 1.0}]


def test_a_failed_preparation_is_reported_not_scored(tmp_path):
    script = tmp_path / "broken_mutmut.py"
    script.write_text("import sys; print('failed to collect stats. runner returned 4'); sys.exit(1)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AUTOGRAD_CONFORMANCE_MUTMUT": f"{sys.executable} {script}"}
    proc = subprocess.run([sys.executable, "-m", "conformance.mutants", "--long-only", "--budget", "30",
                           "--json", str(tmp_path / "m.json")], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=hang_limit(30))
    assert proc.returncode == 1
    generic = json.loads((tmp_path / "m.json").read_text())["generic"]
    assert generic["status"] == "failed to prepare" and "failed to collect stats" in generic["detail"]
    assert "Traceback" not in proc.stderr
