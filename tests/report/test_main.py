"""``python -m conformance.report`` in an installed wheel without jinja2 (the ``report`` extra):
one line saying what to install, exit 4, no traceback."""
from __future__ import annotations


def test_without_jinja2_it_says_what_to_install(run_tool_without):
    run = run_tool_without("conformance.report", "jinja2")
    assert run.returncode == 4, (run.stdout, run.stderr)
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "autograd-conformance[report]" in run.stderr, run.stderr


def test_a_results_directory_without_runs_is_one_line_saying_how_to_make_one(tmp_path, capsys):
    """No results file, no --builtin-columns: no page of placeholder columns, one line (exit 4)
    naming what makes results, as this installation can run it."""
    from conformance.outputs import regenerate_advice
    from conformance.report.build import main

    (tmp_path / "results").mkdir()
    assert main(["--results-dir", str(tmp_path / "results"), "--out", str(tmp_path / "out")]) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no results files" in err[0] and regenerate_advice() in err[0], err
    assert not (tmp_path / "out").exists()
