"""--results: a header, one JSON line per test written as it finishes, CRASH under xdist."""
import pytest

from conformance.results import SCHEMA_VERSION


def test_header_lines_and_end(conformance_project):
    conformance_project.rules("demo", "a", "b")
    conformance_project.suite("demo", '@rule("demo.a")\ndef test_a(): pass\n'
                                      '@rule("demo.b")\ndef test_b(): assert False\n')
    conformance_project.run("suites", "--results", "out/results.jsonl")
    header, *tests, end = conformance_project.results("out/results.jsonl")
    assert header["type"] == "run" and header["schema"] == SCHEMA_VERSION
    assert {"suite_revision", "started", "adapter", "framework_version", "python"} <= set(header)
    # what a reproduction script of any cell is made from (conformance.repro)
    assert header["adapter_spec"] == "fakefw:FakeAdapter" and header["device"] == "cpu"
    assert header["suite_digest"] is None  # suites outside a conformance/suites directory
    assert header["python_executable"] and header["leak_check"] is None
    assert header["conformance_timeout"] > 0
    assert [t["outcome"] for t in tests] == ["PASS", "DIVERGES"]
    assert tests[0] | {"duration": 0} == {
        "type": "test", "adapter": "fake", "framework_version": "1.0", "device": "cpu",
        "python": header["python"], "nodeid": "suites/test_demo.py::test_a", "rule": "demo.a",
        "suite": "demo", "level": "MUST", "outcome": "PASS", "actual": "PASS", "message": "",
        "observed": None, "expectation": None, "blocked_by": None, "duration": 0}
    assert end["type"] == "end" and end["counts"] == {"PASS": 1, "DIVERGES": 1}


def test_each_line_is_flushed_when_its_test_finishes(conformance_project):
    conformance_project.rules("demo", "a", "b")
    conformance_project.suite("demo", '''
        import json, pathlib
        @rule("demo.a")
        def test_first(): pass
        @rule("demo.b")
        def test_second_sees_the_first():
            lines = pathlib.Path("results.jsonl").read_text().splitlines()
            assert json.loads(lines[-1])["nodeid"].endswith("test_first")
    ''')
    result = conformance_project.run("suites", "--results", "results.jsonl", "-p", "no:randomly")
    result.assert_outcomes(passed=2)


SEGFAULT_SUITE = '''
@rule("demo.a")
def test_before(): pass
@rule("demo.crashes")
def test_segfault(fw): fw.crash()
@rule("demo.b")
def test_after(): pass
'''


def test_a_segfault_under_xdist_is_one_crash_line_and_the_run_goes_on(conformance_project):
    conformance_project.rules("demo", "a", "b", "crashes")
    conformance_project.suite("demo", SEGFAULT_SUITE)
    result = conformance_project.run("-n", "2", "suites", "--results", "results.jsonl",
                                     subprocess=True)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    records = conformance_project.results()
    tests = {r["nodeid"].split("::")[-1]: r for r in records if r["type"] == "test"}
    assert sum(r["type"] == "test" for r in records) == 3
    assert tests["test_segfault"]["outcome"] == "CRASH"
    assert tests["test_segfault"]["rule"] == "demo.crashes"
    assert "crashed while running" in tests["test_segfault"]["message"]
    assert tests["test_after"]["outcome"] == tests["test_before"]["outcome"] == "PASS"
    assert records[-1]["type"] == "end"
    result.stdout.fnmatch_lines(["suite*PASS*CRASH", "demo*3*2/3*1/3"])


def test_an_expected_crash_is_xfail(conformance_project):
    conformance_project.rules("demo", "a", "b", "crashes")
    conformance_project.suite("demo", SEGFAULT_SUITE)
    conformance_project.file("exp.toml", '''
        ["demo.crashes"]
        outcome = "CRASH"
        reason = "string_at(0) segfaults"
    ''')
    result = conformance_project.run("-n", "2", "suites", "--results", "results.jsonl",
                                     "--expectations", "exp.toml", subprocess=True)
    assert result.ret == pytest.ExitCode.OK
    crash = [r for r in conformance_project.results() if r.get("actual") == "CRASH"]
    assert [c["outcome"] for c in crash] == ["XFAIL"]
    assert crash[0]["expectation"]["reason"] == "string_at(0) segfaults"


def test_more_crashes_than_xdist_restarts_by_default_still_run_every_test(conformance_project):
    conformance_project.rules("demo", "crashes", "b")
    conformance_project.suite("demo", '''
        import pytest
        @rule("demo.crashes")
        @pytest.mark.parametrize("n", range(6))
        def test_segfault(fw, n): fw.crash()
        @rule("demo.b")
        def test_after(): pass
    ''')
    result = conformance_project.run("-n", "1", "suites", "--results", "results.jsonl",
                                     subprocess=True)
    records = conformance_project.results()
    outcomes = [r["outcome"] for r in records if r["type"] == "test"]
    assert sorted(outcomes) == ["CRASH"] * 6 + ["PASS"], result.stdout.str()
    assert records[-1]["not_run"] == []


def test_an_empty_results_path_is_a_usage_error(conformance_project):
    """--results= (as from an unset CI variable) wrote nothing and said nothing."""
    conformance_project.rules("demo", "a")
    conformance_project.suite("demo", '@rule("demo.a")\ndef test_a(): pass\n')
    result = conformance_project.run("suites", "--results=")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --results is empty (an unset variable?)*"])


def test_a_second_run_on_the_same_results_file_is_refused_naming_the_first(conformance_project):
    import os

    from conformance.results import ResultsFile, RunHeader

    conformance_project.rules("demo", "a")
    conformance_project.suite("demo", '@rule("demo.a")\ndef test_a(): pass\n')
    path = conformance_project.pytester.path / "results.jsonl"
    first = ResultsFile(path)  # another run holds it
    first.header(RunHeader(adapter="other"), path.parent, 1)
    try:
        result = conformance_project.run("suites", "--results", "results.jsonl", subprocess=True)
    finally:
        first.release()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --results *results.jsonl: another run (pid "
                                 f"{os.getpid()}) is writing it*"])
    assert [r["adapter"] for r in conformance_project.results()] == ["other"]  # not cut


@pytest.mark.parametrize("how", ["keyboard-interrupt", "exitfirst"])
def test_an_interrupted_run_says_so_in_its_end_line(conformance_project, how):
    conformance_project.rules("demo", "a", "b")
    stop = "raise KeyboardInterrupt" if how == "keyboard-interrupt" else "assert False"
    conformance_project.suite("demo", f'@rule("demo.a")\ndef test_a(): {stop}\n'
                                      '@rule("demo.b")\ndef test_b(): pass\n')
    args = ["-x"] if how == "exitfirst" else []
    result = conformance_project.run("suites", "--results", "results.jsonl", "-p", "no:randomly",
                                     *args, subprocess=True)
    assert result.ret == (pytest.ExitCode.INTERRUPTED if how == "keyboard-interrupt" else
                          pytest.ExitCode.TESTS_FAILED)
    end = conformance_project.results()[-1]
    assert end["type"] == "end" and end["interrupted"] is True
    # Ctrl-C in test_a: it has no result either; -x after test_a failed: only test_b
    assert end["not_run"] == ["suites/test_demo.py::test_a"] * (how == "keyboard-interrupt") + \
        ["suites/test_demo.py::test_b"]
    from conformance.results import end_line

    assert end_line(conformance_project.pytester.path / "results.jsonl") is None  # never reused
