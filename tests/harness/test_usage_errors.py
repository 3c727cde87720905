"""Bad input a new user gives: exit status 4, one line on stderr, no traceback, nothing written
(except the results header and end line of a run whose adapter cannot be loaded).

One test per case of issues 17 and 28; the older cases (unknown adapter or device, a framework
that is not installed or crashes at import) are in test_options.py and test_crash.py, the
adapter's own failures at load in test_isolation.py, the tools' command lines in test_cli.py.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import options
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]

ADAPTERS = '''
from adapters.base import Adapter
import types


class BrokenLibraryAdapter(Adapter):
    """Its framework is installed but a shared library it loads is missing."""
    name = "brokenlib"
    install_hint = "pip install brokenlib==1.0"

    def _import(self):
        raise OSError("libbrokenlib.so.1: cannot open shared object file: No such file or directory")


class NeedsArgumentsAdapter(Adapter):
    name = "needsargs"

    def __init__(self, home):
        super().__init__()
        self.home = home

    def _import(self):
        return types.SimpleNamespace(__version__="1.0")
'''


def assert_usage_error(output: str, ret: int, *words: str) -> str:
    """Exit status 4, exactly one non-empty line on stderr containing ``words``, no traceback."""
    lines = [line for line in output.splitlines() if line.strip()]
    assert ret == 4, (ret, output)
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    assert len(lines) == 1, output
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.fixture
def project(conformance_project):
    conformance_project.rules("demo", "a")
    conformance_project.suite("demo", '@rule("demo.a")\ndef test_a(): pass\n')
    conformance_project.pytester.makepyfile(brokenfw=ADAPTERS)
    return conformance_project


def run(project, *args, adapter="fakefw:FakeAdapter"):
    result = project.run(*args, adapter=adapter)
    return result, "\n".join(result.errlines)


# -- --results -----------------------------------------------------------------------------
def test_results_in_a_directory_that_cannot_be_written(project, monkeypatch):
    locked = project.pytester.mkdir("locked")
    locked.chmod(0o500)
    if os.access(locked, os.W_OK):  # root may write anywhere: make the check see what a user sees
        real = os.access
        monkeypatch.setattr(os, "access",
                            lambda p, mode, **kw: False if Path(p) == locked else real(p, mode, **kw))
    try:
        result, err = run(project, "suites", "--results=locked/sub/r.jsonl")
        assert_usage_error(err, result.ret, "--results locked/sub/r.jsonl", "cannot write in",
                           "writable directory")
        assert not (locked / "sub").exists()
    finally:
        locked.chmod(0o700)


def test_results_onto_an_existing_directory(project):
    project.pytester.mkdir("out")
    result, err = run(project, "suites", "--results=out")
    assert_usage_error(err, result.ret, "--results out: is a directory", "out/results.jsonl")
    assert list((project.pytester.path / "out").iterdir()) == []


@pytest.mark.parametrize("content", ["# Notes\n\nkeep me\n", '{"type": "test"}\n',
                                     '["run"]\n', "x" * 100 + "\n" + '{"type": "run"}\n'])
def test_results_onto_a_file_that_is_not_a_results_file_is_refused(project, content):
    """--results truncated whatever it named, a document included, without a word."""
    project.file("notes.md", content)
    result, err = run(project, "suites", "--results=notes.md")
    assert_usage_error(err, result.ret, "--results notes.md: the file exists and is not a "
                       "results file of autograd-conformance", "choose another path")
    assert (project.pytester.path / "notes.md").read_text() == content


@pytest.mark.parametrize("content", ["", "\n", '{"type": "run", "adapter": "old"}\n{"type": "te',
                                     '{"type": "run", "adapt'])
def test_results_replaces_an_empty_or_previous_results_file(project, content):
    """A previous run's file (even one killed mid-line, its header included) may go."""
    project.file("old.jsonl", content)
    result, _ = run(project, "suites", "--results=old.jsonl")
    assert result.ret == 0, result.stdout.str()
    lines = project.results("old.jsonl")
    assert lines[0]["type"] == "run" and lines[0]["adapter"] != "old" and lines[-1]["type"] == "end"


def test_results_under_a_file_is_refused(project):
    project.file("plain.txt", "keep me\n")
    result, err = run(project, "suites", "--results=plain.txt/r.jsonl")
    assert_usage_error(err, result.ret, "is not a directory")
    assert (project.pytester.path / "plain.txt").read_text() == "keep me\n"


def test_results_with_a_space_naming_an_existing_file_outside_is_refused(project, tmp_path_factory):
    """pytest would take the path for a test path, move its root and collect elsewhere."""
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "old.jsonl"
    elsewhere.write_text("previous run\n")
    result, err = run(project, "--results", str(elsewhere))
    line = assert_usage_error(err, result.ret, f"--results {elsewhere}", "as a test path",
                              f"write --results={elsewhere}")
    assert elsewhere.read_text() == "previous run\n", line


def test_results_with_a_space_is_fine_where_it_changes_nothing(project):
    project.file("old.jsonl", '{"type": "run", "adapter": "previous"}\n')
    result = project.run("suites", "--results", "old.jsonl")
    assert result.ret == 0, result.stdout.str()
    assert project.results("old.jsonl")[0]["type"] == "run"
    result = project.run("suites", "--results", "new.jsonl")
    assert result.ret == 0 and project.results("new.jsonl")[-1]["type"] == "end"


@pytest.mark.parametrize("option", ["--results", "--expectations"])
def test_a_fifo_in_place_of_a_file_is_refused_before_it_blocks(project, option):
    """Opening a FIFO to write the results (or read the expectations) waited forever for the
    other end; the expectations' FIFO was said to be "no such file"."""
    os.mkfifo(project.pytester.path / "pipe")
    result, err = run(project, "suites", f"{option}=pipe")
    assert_usage_error(err, result.ret, f"{option} ", "not a regular file (a FIFO, device or "
                       "socket)")


def test_swallowed_value_check_looks_only_at_existing_paths(pytester):
    config = pytester.parseconfig("--results", "no/such/file.jsonl")
    assert options.swallowed_path_problem(config) is None


# -- adapters ------------------------------------------------------------------------------
def test_adapter_whose_import_raises_oserror(project):
    result, err = run(project, "suites", "--results=r.jsonl", adapter="brokenfw:BrokenLibraryAdapter")
    assert_usage_error(err, result.ret, "adapter 'brokenlib'", "OSError: libbrokenlib.so.1",
                       "reinstall it with: pip install brokenlib==1.0")
    header, end = project.results("r.jsonl")  # the run that could not start is recorded
    assert header["type"] == "run" and end["exitstatus"] == 4 and "OSError" in end["error"]


def test_adapter_class_that_needs_constructor_arguments(project):
    result, err = run(project, "suites", adapter="brokenfw:NeedsArgumentsAdapter")
    assert_usage_error(err, result.ret, "adapter 'brokenfw:NeedsArgumentsAdapter'", "TypeError",
                       "must take no arguments")


def test_device_the_adapter_declares_but_cannot_use(project):
    """The reference declares cuda; without cupy and a GPU no test may run."""
    from reference import array_backend

    if array_backend.cuda_available():
        pytest.skip("cupy and a GPU are present")
    result, err = run(project, "suites", "--device", "cuda", "--results=r.jsonl", adapter="reference")
    assert_usage_error(err, result.ret, "adapter 'reference' cannot use device 'cuda'", "cupy",
                       "use --device cpu")
    assert not (project.pytester.path / "r.jsonl").exists()


# -- expectations files --------------------------------------------------------------------
def test_expectation_tests_pattern_that_matches_no_test(project):
    path = project.file("exp.toml", '["demo.a"]\noutcome = "DIVERGES"\nreason = "r"\n'
                                    'tests = ["test_renamed_long_ago"]\n')
    result, err = run(project, "suites", f"--expectations={path}")
    assert_usage_error(err, result.ret, "[demo.a]: tests pattern 'test_renamed_long_ago' matches "
                       "no test of this rule (its tests: test_a)", "(line 4)")


def test_expectation_tests_pattern_of_a_parametrized_test_is_accepted(project):
    project.suite("demo", '@rule("demo.a")\n@__import__("pytest").mark.parametrize("x", [1, 2])\n'
                          'def test_a(x): assert x == 1\n')
    path = project.file("exp.toml", '["demo.a"]\noutcome = "DIVERGES"\nreason = "r"\n'
                                    'tests = ["test_a[2]"]\n')
    result = project.run("suites", f"--expectations={path}")
    result.assert_outcomes(passed=1, xfailed=1)


def test_unknown_rule_id_suggests_the_closest(project):
    path = project.file("exp.toml", '["demo.aa"]\noutcome = "DIVERGES"\nreason = "r"\n')
    result, err = run(project, "suites", f"--expectations={path}")
    assert_usage_error(err, result.ret, "[demo.aa]: no such rule in the catalogue; "
                       "did you mean 'demo.a'?")


@pytest.mark.parametrize("content, words", [
    (b'["demo.a"]\noutcome = "DIVERGES"\nreason = "caf\xe9"\n', "not UTF-8 text (byte 0xe9 on line 3)"),
    (b'["demo.a"]\noutcome = []\nreason = "r"\n', "key 'outcome' = [] must be one of"),
])
def test_expectations_file_of_the_wrong_encoding_or_type(project, content, words):
    path = project.pytester.path / "exp.toml"
    path.write_bytes(content)
    result, err = run(project, "suites", f"--expectations={path}")
    assert_usage_error(err, result.ret, words)


def test_expectations_naming_a_directory_says_so(project):
    """It said "no such file" of a directory that was there."""
    result, err = run(project, "suites", f"--expectations={project.pytester.path}")
    assert_usage_error(err, result.ret, f"--expectations {project.pytester.path}: a directory; "
                       "give a file")


# -- the report and the differential command line ------------------------------------------
def test_report_of_a_binary_results_file(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "torch.jsonl").write_bytes(b"\xff\xfe\x00\x81garbage\n\x00\x00")
    done = subprocess.run([sys.executable, "-m", "conformance.report", "--results-dir",
                           str(results), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, cwd=ROOT, timeout=hang_limit(30))
    assert_usage_error(done.stderr, done.returncode, "torch.jsonl: not a text file")
    assert not (tmp_path / "out").exists()


def test_differential_help_explains_adapter():
    done = subprocess.run([sys.executable, "-m", "conformance.differential", "--help"],
                          capture_output=True, text=True, cwd=ROOT, timeout=hang_limit(30))
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "--adapter NAME framework to compare with the reference" in text, done.stdout


# -- a full disk -----------------------------------------------------------------------------
def _disk_fills_after(monkeypatch, writes: int) -> None:
    """ResultsFile.write fails with ENOSPC after ``writes`` lines (as on a full disk)."""
    import errno

    from conformance import results

    real, done = results.ResultsFile.write, []

    def write(self, obj):
        if len(done) >= writes:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        done.append(obj)
        real(self, obj)

    monkeypatch.setattr(results.ResultsFile, "write", write)


def test_results_on_a_full_disk(project, monkeypatch):
    _disk_fills_after(monkeypatch, 0)
    result, err = run(project, "suites", "--results=r.jsonl")
    assert_usage_error(err, result.ret, "--results r.jsonl: cannot write it (No space left on "
                       "device)", "free space")


def test_results_when_the_disk_fills_mid_run(project, monkeypatch):
    project.rules("demo", "b", "c")
    project.suite("demo", '@rule("demo.a")\ndef test_a(): pass\n@rule("demo.b")\ndef test_b(): '
                          'pass\n@rule("demo.c")\ndef test_c(): pass\n')
    _disk_fills_after(monkeypatch, 2)  # the header and one test
    result = project.run("suites", "--results=r.jsonl")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == 4 and "Traceback" not in out and "INTERNALERROR" not in out, out
    stops = [line for line in out.splitlines() if "No space left on device" in line]
    assert len(stops) == 1 and "writing it failed mid-run" in stops[0], out
    assert [r["type"] for r in project.results("r.jsonl")] == ["run", "test"]
