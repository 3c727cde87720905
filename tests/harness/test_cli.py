"""Every ``python -m conformance.*`` tool follows one convention (conformance/cli.py).

``--help`` exits 0; an unknown option, a bad value or a bad path is one line on stderr naming
it, exit 4, no traceback, nothing written (issue 28: unknown options exited 2 in seven tools
and 4 in two, and ``python -m conformance.options`` ignored every argument).
"""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]

#: tool -> the function its ``python -m`` runs (docs/running.md lists the same tools)
TOOLS = {
    "conformance.report": "conformance.report.build:main",
    "conformance.spec": "conformance.spec:main",
    "conformance.repro.check": "conformance.repro.check:main",
    "conformance.repro.run": "conformance.repro.run:main",
    "conformance.evidence": "conformance.evidence.__main__:main",
    "conformance.differential": "conformance.differential.runner:main",
    "conformance.differential.fuzz": "conformance.differential.fuzz:main",
    "conformance.mutants": "conformance.mutants.__main__:main",
    "conformance.torchtests": "conformance.torchtests.__main__:main",
    "conformance.fw_surface": "conformance.fw_surface:main",
    "conformance.spelling": "conformance.spelling:main",
    "conformance.options": "conformance.options:main",
    "conformance.expectations_draft": "conformance.expectations_draft:main",
    "conformance.features": "conformance.features:main",
    "conformance.feature_claims": "conformance.feature_claims:main",
    "conformance.witness": "conformance.witness:main",
    "conformance.history": "conformance.history.__main__:main",
    "conformance.audit_sample": "conformance.audit_sample:main",
}


def call(tool: str, *argv: str) -> int:
    module, _, name = TOOLS[tool].partition(":")
    try:
        return getattr(importlib.import_module(module), name)(list(argv))
    except SystemExit as exc:
        return exc.code


def one_line(err: str, code: int, *words: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 4, (code, err)
    assert len(lines) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_help_exits_0(tool, capsys):
    assert call(tool, "--help") == 0
    assert capsys.readouterr().out.startswith(f"usage: python -m {tool} ")


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_an_unknown_option_is_one_line_and_exit_4(tool, capsys):
    code = call(tool, "--no-such-option", "x")
    err = capsys.readouterr().err
    one_line(err, code, f"python -m {tool}: ", f"see python -m {tool} --help")


def test_the_options_table_tool_refuses_arguments_as_a_process():
    done = subprocess.run([sys.executable, "-m", "conformance.options", "--bogus"], cwd=ROOT,
                          capture_output=True, text=True, timeout=hang_limit(30),
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    one_line(done.stderr, done.returncode, "unrecognized arguments: --bogus")
    assert done.stdout == ""


@pytest.fixture
def outputs(tmp_path):
    """An existing report directory whose files must come through a refused run unchanged."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "index.html").write_text("previous page\n")
    (tmp_path / "results").mkdir()
    return out


@pytest.mark.parametrize("argv, words", [
    (["--column", "a/b=torch"], "--column: 'a/b=torch': the label 'a/b' must be"),
    (["--column", "="], "the label '' must be"),
    (["--column", "nightly="], "no framework after '='"),
    (["--exclude", "tourch"], "--exclude tourch: no such column (the columns: reference, torch"),
])
def test_report_bad_column_values(argv, words, outputs, capsys):
    code = call("conformance.report", "--results-dir", str(outputs.parent / "results"),
                "--out", str(outputs), *argv)
    one_line(capsys.readouterr().err, code, words)
    assert [p.name for p in outputs.iterdir()] == ["index.html"]
    assert (outputs / "index.html").read_text() == "previous page\n"


def test_report_out_naming_a_file(outputs, capsys):
    page = outputs / "index.html"
    code = call("conformance.report", "--results-dir", str(outputs.parent / "results"),
                "--out", str(page))
    one_line(capsys.readouterr().err, code, f"--out: '{page}' is a file; give a directory")
    assert page.read_text() == "previous page\n"


def test_spec_out_under_a_file(outputs, capsys):
    code = call("conformance.spec", "--out", str(outputs / "index.html" / "spec.html"))
    one_line(capsys.readouterr().err, code, "is a file, not a directory")


@pytest.mark.parametrize("argv, words", [
    (["--jobs", "0"], "--jobs: '0' is not a whole number >= 1"),
    (["--min-score", "nan"], "--min-score: 'nan' is not a share within 0..1"),
])
def test_mutants_bad_values(argv, words, capsys):
    code = call("conformance.mutants", *argv)
    one_line(capsys.readouterr().err, code, words)


def test_repro_run_needs_a_scripts_directory(tmp_path, capsys):
    code = call("conformance.repro.run", str(tmp_path / "none"), str(tmp_path / "out.jsonl"))
    one_line(capsys.readouterr().err, code, "SCRIPTS_DIR: ", "no such directory")
    assert not (tmp_path / "out.jsonl").exists()


def test_differential_unknown_adapter(tmp_path, capsys):
    code = call("conformance.differential", "--adapter", "tourch", "--examples", "1",
                "--results", str(tmp_path / "f.jsonl"))
    one_line(capsys.readouterr().err, code, "unknown adapter 'tourch'; known adapters:")
    assert not (tmp_path / "f.jsonl").exists()


@pytest.mark.parametrize("results, words", [
    ("{tmp}", "is a directory; give a file path"),
    ("{tmp}/plain.txt/f.jsonl", "is not a directory"),
    ("", "an empty path"),
    ("{tmp}/plain.txt", "is not a results file of autograd-conformance"),  # a document
])
def test_differential_results_that_cannot_be_written(tmp_path, results, words, capsys):
    (tmp_path / "plain.txt").write_text("keep\n")
    code = call("conformance.differential", "--examples", "1",
                "--results", results.format(tmp=tmp_path))
    one_line(capsys.readouterr().err, code, words)
    assert (tmp_path / "plain.txt").read_text() == "keep\n"


def test_an_unknown_mutant_id_says_how_to_list_them(conformance_project, monkeypatch):
    conformance_project.rules("demo", "a")
    conformance_project.suite("demo", '@rule("demo.a")\ndef test_a(): pass\n')
    monkeypatch.setenv("AUTOGRAD_CONFORMANCE_MUTANT", "garbage")
    result = conformance_project.run("suites", adapter="conformance.mutants.adapter:PlantedReference")
    err = [line for line in result.errlines if line.strip()]
    assert result.ret == 4 and len(err) == 1, result.errlines
    assert "AUTOGRAD_CONFORMANCE_MUTANT='garbage': no mutant has this id; list the ids with " \
           "python -m conformance.mutants --list" in err[0]
    assert "reinstall" not in err[0]


def test_the_reference_adapter_refuses_a_mutant_instead_of_running_clean(conformance_project,
                                                                          monkeypatch):
    """The reference adapter plants nothing (the mutants tool's own adapter does); a mutant
    named for it would otherwise be silently absent."""
    conformance_project.rules("demo", "a")
    conformance_project.suite("demo", '@rule("demo.a")\ndef test_a(): pass\n')
    monkeypatch.setenv("AUTOGRAD_CONFORMANCE_MUTANT", "hooks.tensor-hooks-reversed")
    result = conformance_project.run("suites", adapter="reference")
    err = [line for line in result.errlines if line.strip()]
    assert result.ret == 4 and len(err) == 1, result.errlines
    assert "--adapter=conformance.mutants.adapter:PlantedReference" in err[0]


def test_every_tool_is_listed_in_the_docs_and_here():
    """A new tool with a main() joins TOOLS (and so these tests) and docs/running.md."""
    docs = (ROOT / "docs" / "running.md").read_text()
    for tool in TOOLS:
        assert f"| `python -m {tool}` |" in docs, tool
    internal = {"conformance.differential.worker", "conformance.torchtests.worker",
                "conformance.evidence.runner"}
    found = set()
    for path in (ROOT / "conformance").rglob("*.py"):
        if "def main(" in path.read_text(encoding="utf-8"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found.add(".".join(parts[:-1] if parts[-1] == "__main__" else parts))
    found = {"conformance.report" if t == "conformance.report.build" else
             "conformance.differential" if t == "conformance.differential.runner" else
             # moved under the declared model; `python -m conformance.features` runs it
             "conformance.features" if t == "conformance.model.features" else t
             for t in found}
    assert found - internal == set(TOOLS)


def test_report_empty_results_dir(outputs, capsys):
    """``--results-dir=`` (an unset CI variable) read the current directory and wrote an
    all-"missing" page, exit 0."""
    code = call("conformance.report", "--results-dir=", "--out", str(outputs))
    one_line(capsys.readouterr().err, code, "--results-dir: an empty path")
    assert (outputs / "index.html").read_text() == "previous page\n"


def test_repro_check_bad_results_line_names_the_tool(tmp_path, capsys):
    """A results line with a field of the wrong type is the tool's one line (it was
    ``error: ...``, unlike every other tool's)."""
    bad = tmp_path / "run.jsonl"
    bad.write_text('{"type": "run", "schema": 1, "adapter": 7}\n')
    code = call("conformance.repro.check", str(bad))
    one_line(capsys.readouterr().err, code, "python -m conformance.repro.check: ", "run.jsonl:1")


def _corrupt_results_json(tmp_path):
    (tmp_path / "results.json").write_text('{"schema": 1')
    return ["--out", str(tmp_path / "spec.html")]


def _no_hypofuzz(tmp_path, monkeypatch=None):
    return ["--results", str(tmp_path), "--seconds", "1"]


@pytest.mark.parametrize("tool, make_argv, words", [
    ("conformance.spec", _corrupt_results_json, "results.json: not JSON"),
    ("conformance.history", lambda tmp: ["merge", str(tmp / "nope")], "not a folder"),
    ("conformance.history", lambda tmp: ["releases", "nosuch"], "no built-in adapter 'nosuch'"),
    ("conformance.witness", lambda tmp: ["--adapter", "nosuch"], "unknown adapter 'nosuch'"),
    ("conformance.differential.fuzz", _no_hypofuzz, ""),
])
def test_a_problem_found_after_parsing_is_the_tools_own_line(tool, make_argv, words, tmp_path,
                                                            capsys):
    """Bad input found after the arguments parsed is the same ``python -m TOOL: ...`` line as a
    bad option (the spec, history, evidence, witness and fuzz tools printed ``error: ...`` or
    ``conformance.X: ...``)."""
    code = call(tool, *make_argv(tmp_path))
    one_line(capsys.readouterr().err, code, f"python -m {tool}: ", words)
    assert not (tmp_path / "spec.html").exists()


@pytest.mark.parametrize("module, argv", [
    ("conformance.differential.worker", ["--bogus"]),
    ("conformance.torchtests.worker", ["--help"]),
    ("conformance.evidence.runner", ["--help"]),
])
def test_an_internal_worker_run_by_hand_is_one_line(module, argv):
    """The tools' workers read a job from their parent; run by hand they waited on stdin or
    printed a traceback (exit 1) or argparse's two lines (exit 2)."""
    done = subprocess.run([sys.executable, "-W", "ignore", "-m", module, *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=hang_limit(30), stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    one_line(done.stderr, done.returncode, f"python -m {module}: ")


@pytest.mark.parametrize("tool, argv", [
    ("conformance.repro.check", ["{tmp}/run.jsonl", "--python", "{tmp}/no/python"]),
    ("conformance.differential", ["--python", "{tmp}/run.jsonl"]),
    ("conformance.history", ["record", "reference", "1.0", "--python", "no-such-python3.99"]),
])
def test_python_naming_no_interpreter_is_one_line(tool, argv, tmp_path, capsys):
    """``--python`` of a missing interpreter (or a file that is not executable) was
    ``[Errno 2] No such file or directory`` after the run had started."""
    (tmp_path / "run.jsonl").write_text('{"type": "run", "schema": 1}\n')
    code = call(tool, *[a.format(tmp=tmp_path) for a in argv])
    one_line(capsys.readouterr().err, code, "argument --python: ", "no such interpreter")


def test_ctrl_c_in_a_tool_is_one_line_and_ends_as_interrupted():
    """Ctrl-C printed a traceback from wherever the tool was (its outputs were already safe:
    conformance.outputs); other exceptions are shown as Python shows them."""
    code = ("import sys\nfrom conformance import cli\n"
            "cli.Parser('python -m conformance.demo').parse_args([])\n"
            "raise KeyboardInterrupt if sys.argv[1] == 'int' else RuntimeError('boom')\n")
    done = [subprocess.run([sys.executable, "-c", code, kind], cwd=ROOT, capture_output=True,
                           text=True, timeout=hang_limit(30), env={**os.environ, "PYTHONPATH": str(ROOT)})
            for kind in ("int", "other")]
    assert done[0].stderr.splitlines() == [
        "python -m conformance.demo: interrupted (Ctrl-C); every output is whole: the previous "
        "one or the new one"], done[0].stderr
    assert done[0].returncode in (-2, 130)
    assert "Traceback" in done[1].stderr and "RuntimeError: boom" in done[1].stderr


@pytest.mark.parametrize("tool, argv, words", [
    ("conformance.spec", ["--out", "{tmp}/new/"], "'{tmp}/new/' is a directory; give a file name"),
    ("conformance.spec", ["--out", "{tmp}/fifo"], "is not a regular file (a FIFO, device or socket)"),
    ("conformance.repro.run", ["{tmp}", "{tmp}/fifo"], "is not a regular file"),
    ("conformance.expectations_draft", ["{tmp}/fifo"], "is not a regular file"),
    ("conformance.torchtests", ["x.py", "--timeout", "1e12"], "at most 31536000"),
    ("conformance.history", ["record", "torch", "../../x", "--python", sys.executable],
     "version '../../x' is not a release number"),
    ("conformance.history", ["record", "../x", "1.0", "--python", sys.executable],
     "'../x' is not an adapter name"),
    ("conformance.history", ["record", "torch", "1.0", "--python", sys.executable, "--timeout",
                             "nan"], "'nan' is not a number of seconds > 0"),
])
def test_paths_and_values_that_looked_fine(tool, argv, words, tmp_path, capsys):
    """``--out new/`` wrote a file named ``new``; a FIFO as an output or input blocked the
    tool forever, and a device was renamed over (``--out /dev/full`` replaced it with the
    page); ``--timeout 1e12`` overflowed the alarm; a version ``../../x`` was written outside
    the history folder; ``--timeout nan`` was taken."""
    import os

    os.mkfifo(tmp_path / "fifo")
    code = call(tool, *[a.format(tmp=tmp_path) for a in argv])
    one_line(capsys.readouterr().err, code, words.format(tmp=tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]
