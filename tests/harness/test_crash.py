"""Crash isolation end to end: a segfault loses no other result; a crash at import is named."""
import pytest

from conformance import isolation

CRASHING_IMPORT = '''
import ctypes
from fakefw import FakeAdapter


class CrashingAdapter(FakeAdapter):
    name = "crashing"

    def _import(self):
        ctypes.string_at(0)  # the framework's extension module segfaults while loading
'''


def test_a_framework_that_crashes_at_import_is_reported_as_such(conformance_project):
    conformance_project.rules("demo", "a")
    conformance_project.suite("demo", '@rule("demo.a")\ndef test_a(): pass\n')
    conformance_project.file("crashfw.py", CRASHING_IMPORT)
    result = conformance_project.run("suites", "--results", "results.jsonl",
                                     adapter="crashfw:CrashingAdapter")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "*adapter 'crashfw:CrashingAdapter': loading it or importing its framework crashed the "
        "interpreter (SIGSEGV; checked in a child interpreter*"])
    header, end = conformance_project.results()
    assert header["type"] == "run" and header["adapter"] == "crashfw:CrashingAdapter"
    assert end["type"] == "end" and end["exitstatus"] == 4 and "SIGSEGV" in end["error"]


def test_the_probe_reports_the_facts_or_one_line():
    facts = isolation.probe("adapters.reference_adapter:ReferenceAdapter")
    assert facts.name == "reference" and facts.expectations.endswith("reference.toml")
    with pytest.raises(isolation.ProbeFailed, match="cannot import module 'no_such_module'") as err:
        isolation.probe("no_such_module:Thing")
    assert err.value.kind == "adapter" and "\n" not in str(err.value)


TWO_SUITES = {
    "alpha": '''
        import pytest
        @rule("alpha.a")
        @pytest.mark.parametrize("n", range(3))
        def test_a(n): pass
        @rule("alpha.crashes")
        def test_segfault(fw): fw.crash()
        @rule("alpha.b")
        def test_b(): assert False, "diverges"
    ''',
    "beta": '''
        @rule("beta.a")
        def test_a(): pass
        @rule("beta.crashes")
        def test_segfault_too(fw): fw.crash()
        @rule("beta.b")
        def test_b(adapter): adapter.require("forward_ad")
    ''',
}


def test_segfaults_in_two_suites_leave_every_other_result(conformance_project):
    for suite, source in TWO_SUITES.items():
        conformance_project.rules(suite, "a", "b", "crashes")
        conformance_project.suite(suite, source)
    result = conformance_project.run("-n", "1", "suites", "--results", "results.jsonl",
                                     subprocess=True)
    records = conformance_project.results()
    tests = {r["nodeid"].split("/")[-1]: r["outcome"] for r in records if r["type"] == "test"}
    assert tests == {
        "test_alpha.py::test_a[0]": "PASS", "test_alpha.py::test_a[1]": "PASS",
        "test_alpha.py::test_a[2]": "PASS", "test_alpha.py::test_segfault": "CRASH",
        "test_alpha.py::test_b": "DIVERGES", "test_beta.py::test_a": "PASS",
        "test_beta.py::test_segfault_too": "CRASH", "test_beta.py::test_b": "UNSUPPORTED"}, \
        result.stdout.str()
    assert records[-1]["type"] == "end" and records[-1]["not_run"] == []
    result.stdout.fnmatch_lines(["alpha*5*3/5*1/5*1/5*", "beta*3*1/3*1/3*1/3*"])


CRASH_SITES = '''
    import ctypes

    class Unprintable(AssertionError):
        def __str__(self):
            ctypes.string_at(0)  # pytest formats the failure: the crash is in the reporting

    def crash_in_the_framework():
        ctypes.string_at(0)

    @rule("gamma.a")
    def test_crash_in_the_test(): crash_in_the_framework()
    @rule("gamma.b")
    def test_crash_when_reported(): raise Unprintable()
'''


def test_a_crash_names_its_frame_and_a_crash_while_reporting_is_said_to_be_one(conformance_project):
    conformance_project.rules("gamma", "a", "b")
    conformance_project.suite("gamma", CRASH_SITES)
    conformance_project.run("-n", "1", "suites", "--results", "results.jsonl", subprocess=True)
    records = {r["nodeid"].split("::")[-1]: r for r in conformance_project.results()
               if r["type"] == "test"}
    in_test = records["test_crash_in_the_test"]
    assert in_test["outcome"] == "CRASH"
    assert "CRASH while running the test" in in_test["message"], in_test["message"]
    assert "crashing Python frame: string_at (" in in_test["message"]  # ctypes, innermost
    assert "called from test_crash_in_the_test" in in_test["message"]
    assert "native frame:" in in_test["message"]
    reporting = records["test_crash_when_reported"]
    assert reporting["outcome"] == "CRASH"
    assert "CRASH while reporting the test's result, not in the test" in reporting["message"], \
        reporting["message"]


HOSTILE_FRAMEWORK = '''
    import ctypes, os

    class CorruptedDict(Exception):
        """What OneFlow 0.9.0 left behind: the interpreter's own objects are broken, and the
        next time anything (pytest formatting the failure) reads them it raises SystemError."""
        def __str__(self):
            raise SystemError("Objects/dictobject.c:1: bad argument to internal function")

    @rule("demo.a")
    def test_a(): pass
    @rule("demo.exits")
    def test_exits(): os._exit(0)
    @rule("demo.corrupts")
    def test_corrupts(): raise CorruptedDict()
    @rule("demo.segfaults")
    def test_segfaults(): ctypes.string_at(0)
    @rule("demo.b")
    def test_b(): pass
'''


@pytest.mark.parametrize("xdist", [[], ["-n", "1"]], ids=["without-xdist", "with-xdist"])
def test_a_framework_that_exits_corrupts_or_segfaults_costs_exactly_that_test(
        conformance_project, xdist):
    """Each of os._exit(0), an INTERNALERROR from a corrupted interpreter and a segfault is
    the CRASH of its own test; the tests after it run (without xdist: in a fresh child of
    the supervisor, conformance/survival.py) and the file ends complete, exit status 1."""
    conformance_project.rules("demo", "a", "exits", "corrupts", "segfaults", "b")
    conformance_project.suite("demo", HOSTILE_FRAMEWORK)
    result = conformance_project.run(*xdist, "suites", "--results", "results.jsonl",
                                     "-p", "no:randomly", subprocess=True)
    records = conformance_project.results()
    tests = {r["nodeid"].split("::")[-1]: r for r in records if r["type"] == "test"}
    assert {n: r["outcome"] for n, r in tests.items()} == {
        "test_a": "PASS", "test_exits": "CRASH", "test_corrupts": "CRASH",
        "test_segfaults": "CRASH", "test_b": "PASS"}, result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" in tests["test_corrupts"]["message"]
    assert "SystemError: Objects/dictobject.c" in tests["test_corrupts"]["message"]
    assert "Segmentation fault" in tests["test_segfaults"]["message"]
    assert records[0]["type"] == "run" and [r["type"] for r in records].count("run") == 1
    assert records[-1]["type"] == "end" and records[-1]["not_run"] == []
    assert records[-1]["counts"] == {"PASS": 2, "CRASH": 3} and records[-1]["exitstatus"] == 1
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["demo*5*2/5*3/5*"])
    if not xdist:
        assert "ended with exit status 0 in the middle of it" in tests["test_exits"]["message"]
        result.stderr.fnmatch_lines(["conformance: *test_exits: the process running it ended "
                                     "with exit status 0 in the middle of it; going on with the "
                                     "tests not yet run in a fresh process*"])


def test_an_expected_crash_in_a_supervised_run_is_xfail_and_the_run_passes(conformance_project):
    conformance_project.rules("demo", "a", "exits")
    conformance_project.suite("demo", '''
        import os
        @rule("demo.exits")
        def test_exits(): os._exit(0)
        @rule("demo.a")
        def test_a(): pass
    ''')
    conformance_project.file("exp.toml", '''
        ["demo.exits"]
        outcome = "CRASH"
        reason = "exits"
    ''')
    result = conformance_project.run("suites", "--results", "results.jsonl", "-p", "no:randomly",
                                     "--expectations", "exp.toml", subprocess=True)
    outcomes = {r["nodeid"].split("::")[-1]: r["outcome"] for r in conformance_project.results()
                if r["type"] == "test"}
    assert outcomes == {"test_exits": "XFAIL", "test_a": "PASS"}, result.stdout.str()
    assert result.ret == pytest.ExitCode.OK


def test_in_process_an_os_exit_mid_test_is_a_failed_run_and_an_interrupted_file(conformance_project):
    """--in-process (nothing survives the process): os._exit(0) in a test ends the run there,
    but with exit status 3 and an end line that says so, never a success for CI."""
    conformance_project.rules("demo", "a", "exits", "b")
    conformance_project.suite("demo", '''
        import os
        @rule("demo.a")
        def test_a(): pass
        @rule("demo.exits")
        def test_exits(): os._exit(0)
        @rule("demo.b")
        def test_b(): pass
    ''')
    result = conformance_project.run("--in-process", "suites", "--results", "results.jsonl",
                                     "-p", "no:randomly", subprocess=True)
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    records = conformance_project.results()
    assert [(r.get("nodeid", "").split("::")[-1], r.get("outcome")) for r in records
            if r["type"] == "test"] == [("test_a", "PASS"), ("test_exits", "CRASH")]
    end = records[-1]
    assert end["type"] == "end" and end["interrupted"] is True and end["exitstatus"] == 3
    assert end["not_run"] == ["suites/test_demo.py::test_b"]
    assert "os._exit(0)" in end["error"]


LEFTOVER_THREAD = '''
    import threading, time
    @rule("demo.a")
    def test_a(): pass
    @rule("demo.thread")
    def test_leaves_a_thread():
        threading.Thread(target=time.sleep, args=(3600,), name="framework-pool").start()
'''


@pytest.mark.parametrize("mode", [[], ["--in-process"]], ids=["supervised", "in-process"])
def test_a_framework_thread_left_running_cannot_keep_a_finished_run_alive(conformance_project,
                                                                          mode):
    conformance_project.rules("demo", "a", "thread")
    conformance_project.suite("demo", LEFTOVER_THREAD)
    result = conformance_project.run(*mode, "suites", "--results", "results.jsonl",
                                     subprocess=True)  # pytester's limit: 120 s, not 3600
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(["conformance: the run is complete; ending it although the "
                                 "framework left 1 non-daemon thread(s) running after 5s: "
                                 "'framework-pool'"])
    assert conformance_project.results()[-1]["not_run"] == []


def test_resume_runs_only_the_tests_an_incomplete_file_lacks(conformance_project):
    from conformance.results import read_run

    conformance_project.rules("demo", "a", "b")
    conformance_project.suite("demo", '''
        @rule("demo.a")
        def test_a(): assert False, "ran again"
        @rule("demo.b")
        def test_b(): pass
    ''')
    first = conformance_project.run("suites", "--results", "results.jsonl",
                                    "--deselect", "suites/test_demo.py::test_b")
    path = conformance_project.pytester.path / "results.jsonl"
    killed = [line for line in path.read_text().splitlines() if '"type": "end"' not in line]
    path.write_text("\n".join(killed) + "\n")  # as a run killed after test_a leaves it
    assert first.ret == pytest.ExitCode.TESTS_FAILED
    result = conformance_project.run("suites", "--results", "results.jsonl", "--resume")
    run = read_run(path)
    assert [(t.nodeid.split("::")[-1], t.outcome) for t in run.tests] == [
        ("test_a", "DIVERGES"), ("test_b", "PASS")]
    assert run.complete and run.end.counts == {"DIVERGES": 1, "PASS": 1}
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the earlier failure is the run's too
    result.stdout.fnmatch_lines(["*1 passed, 1 deselected*"])


def test_resume_refuses_a_file_of_another_adapter(conformance_project):
    from conformance.results import ResultsFile, RunHeader

    conformance_project.rules("demo", "a")
    conformance_project.suite("demo", '@rule("demo.a")\ndef test_a(): pass\n')
    path = conformance_project.pytester.path / "results.jsonl"
    other = ResultsFile(path)
    other.header(RunHeader(adapter="torch", adapter_spec="torch", framework_version="2.13.0"),
                 path.parent, 1)
    other.release()
    result = conformance_project.run("suites", "--results", "results.jsonl", "--resume")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --resume: *results.jsonl holds a run of torch 2.13.0, "
                                 "not of fakefw:FakeAdapter 1.0*"])
