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
