"""--leak-check: steady growth of live objects or traced memory is a LEAK, named with its chain.

Runs go through a subprocess: in-process, pytester records every hook call, which grows.
"""
import re
from pathlib import Path

import pytest

from conformance import leakcheck
from tests.hang import hang_limit

LEAKY_SUITE = '''
    import pytest
    KEPT = []

    class Widget:
        pass

    @rule("demo.leaks-objects")
    def test_leaks_objects(): KEPT.append(Widget())
    @rule("demo.leaks-memory")
    def test_leaks_memory(): KEPT.append(b"x" * 20000)
    @rule("demo.clean")
    def test_clean(): [Widget() for _ in range(50)]
    @rule("demo.cycle-collected")
    def test_cycle_collected():
        a = Widget(); a.self = a
    @rule("demo.diverges")
    def test_diverges(): KEPT.append(Widget()); assert False, "no"
    @rule("demo.observed")
    def test_observed(observe): observe(3)
'''


@pytest.fixture
def leaky(conformance_project):
    conformance_project.rules("demo", "leaks-objects", "leaks-memory", "clean", "cycle-collected",
                              "diverges")
    conformance_project.rules("demo", "observed", level="IMPLEMENTATION-DEFINED")
    conformance_project.suite("demo", LEAKY_SUITE)
    return conformance_project


def outcomes(project):
    return {r["nodeid"].split("::")[-1]: r for r in project.results() if r["type"] == "test"}


def test_steady_growth_is_leak_with_types_and_chain(leaky):
    result = leaky.run("suites", "--leak-check", "--leak-check-runs", "1:3",
                       "--results", "results.jsonl", "-v", subprocess=True)
    by_name = outcomes(leaky)
    assert {n: r["outcome"] for n, r in by_name.items()} == {
        "test_leaks_objects": "LEAK", "test_leaks_memory": "LEAK", "test_clean": "PASS",
        "test_cycle_collected": "PASS", "test_diverges": "DIVERGES", "test_observed": "OBSERVED"}
    objects = by_name["test_leaks_objects"]["message"]
    assert "test_demo.Widget +3 (1/1/1)" in objects, objects
    assert "module test_demo -[__dict__]-> dict -[['KEPT']]-> list" in objects, objects
    assert objects.rstrip().endswith("Widget"), objects
    memory = by_name["test_leaks_memory"]["message"]
    assert "traced memory grew in each of 3 measured runs" in memory, memory
    assert "test_demo.py:12 (+20" in memory, memory  # the line that allocated the growth
    assert by_name["test_observed"]["observed"] == 3  # per-run state is reset between runs
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*test_leaks_objects LEAK*", "suite*PASS*OBSERVED*DIVERGES*LEAK*",
                                 "demo*6*2/6*1/6*1/6*2/6*"])


def test_without_the_option_nothing_is_repeated(leaky):
    leaky.run("suites", "--results", "results.jsonl")
    assert outcomes(leaky)["test_leaks_objects"]["outcome"] == "PASS"


def test_an_expected_leak_is_xfail(leaky):
    leaky.file("exp.toml", '''
        ["demo.leaks-objects"]
        outcome = "LEAK"
        reason = "keeps every widget"
        ["demo.leaks-memory"]
        outcome = "LEAK"
        reason = "keeps every buffer"
        ["demo.diverges"]
        outcome = "DIVERGES"
        reason = "no"
    ''')
    result = leaky.run("suites", "--leak-check", "--leak-check-runs", "1:3",
                       "--expectations", "exp.toml", subprocess=True)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()


def test_project_tests_fail_with_the_word_leak(pytester):
    pytester.makepyfile(test_plain='''
        HELD = []
        class Node: pass
        def test_grows(): HELD.append(Node())
        def test_steady(): Node()
    ''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--leak-check", "-rA")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["LEAK test_plain.py::test_grows - LEAK: live objects grew*"])


@pytest.mark.parametrize("value", ["3", "a:b", "2:1", "-1:3"])
def test_bad_runs_value_is_a_usage_error(conformance_project, value):
    conformance_project.rules("demo", "a")
    conformance_project.suite("demo", '@rule("demo.a")\ndef test_a(): pass\n')
    result = conformance_project.run("suites", "--leak-check", f"--leak-check-runs={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--leak-check-runs*give WARMUPS:RUNS*"])


def test_measure_needs_growth_in_every_run():
    kept = []

    class Blip:
        pass

    calls = iter(range(100))

    def once_then_steady():  # grows in the first measured run only: not a leak
        if next(calls) == 1:
            kept.append(Blip())
        return True

    assert leakcheck.measure(once_then_steady, warmups=1, runs=3) is None

    def every_run():
        kept.append(Blip())
        return True

    finding = leakcheck.measure(every_run, warmups=1, runs=3)
    assert finding is not None and finding.types[f"{__name__}.Blip"] == [1, 1, 1]
    assert finding.chain is not None and finding.chain.types[-1] == "Blip"
    assert leakcheck.measure(lambda: False, warmups=0, runs=2) is None  # failing: no verdict


def test_measured_runs_stop_once_nothing_grew():
    """A run in which no type and no memory grew settles the verdict (a leak grows in every
    measured run): the runs after it are not made. Growth keeps the runs going."""
    kept = []

    class Blip:
        pass

    made = []

    def clean():
        made.append(1)
        return True

    assert leakcheck.measure(clean, warmups=1, runs=3) is None
    assert len(made) == 2  # the warm-up and one measured run

    grown = []

    def grows_in_the_first_measured_run():
        grown.append(1)
        if len(grown) == 2:
            kept.append(Blip())
        return True

    assert leakcheck.measure(grows_in_the_first_measured_run, warmups=1, runs=3) is None
    assert len(grown) == 3  # the growth of run 1 needed run 2 to be ruled out

    steady = []

    def every_run():
        steady.append(1)
        kept.append(Blip())
        return True

    assert leakcheck.measure(every_run, warmups=1, runs=3) is not None
    assert len(steady) == 5  # the warm-up, all three measured runs, one more to name the chain


def test_every_rule_on_the_reference_runs_clean():
    """The reference leaks nothing in any rule's scenario (the full reference test-suite
    under --leak-check is in `nox -s stress`). Every suite in one run: a run's start-up and
    collection cost more than most suites' leak-checked runs (8 runs took 34 CPU-s,
    one takes 17), and each LEAK line names its test."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "--adapter=reference", "--leak-check", "--leak-check-runs", "1:3",
                           "conformance/suites"], cwd=root, capture_output=True, text=True,
                          timeout=hang_limit(240))
    leaks = [line for line in done.stdout.splitlines() if line.startswith("LEAK ")]
    assert not leaks, "\n".join(leaks)
    ran = re.search(r"(\d+) passed", done.stdout)   # every suite ran, not none
    assert done.returncode == 0 and ran and int(ran.group(1)) > 300, done.stdout[-3000:]
