"""Where the tools write by default (conformance.outputs.reports_dir): the checkout's reports/
when the package runs from a checkout (CI and the nox sessions read them there), and
./reports when it runs installed, never inside the installed package.

"Installed" here is a copy of the three packages in a directory without the checkout's
pyproject.toml, as site-packages holds them; tests/harness/test_installed.py does the same
with a real wheel.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import outputs
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]
OLD_RUN = ROOT / "tests" / "report" / "data" / "torch-at-b301759.jsonl"


def test_from_a_checkout_outputs_go_to_its_reports_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # whatever the current directory: CI reads <checkout>/reports
    assert outputs.checkout_root() == ROOT
    assert outputs.reports_dir() == ROOT / "reports"
    assert outputs.needs_checkout("--write") == ""


# one pytest-xdist worker runs this module (nox -s tests: --dist loadgroup, tests/xdist_groups.py):
# the wheel is installed once, in the module fixture
pytestmark = pytest.mark.xdist_group("output-location")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The packages as an installed wheel lays them out: no pyproject.toml beside them."""
    site = tmp_path_factory.mktemp("site-packages")
    for name in ("conformance", "adapters", "reference"):
        shutil.copytree(ROOT / name, site / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return site


def _run(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-B", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=hang_limit(75))


def _written_inside(site: Path) -> list[str]:
    return sorted(str(p.relative_to(site)) for p in site.rglob("*")
                  if p.is_file() and p.suffix in (".html", ".json", ".xml")
                  and "reports" in p.relative_to(site).parts)


def test_installed_the_report_and_spec_write_under_the_current_directory(site, tmp_path):
    work = tmp_path / "work"
    (work / "reports" / "results").mkdir(parents=True)
    shutil.copy(OLD_RUN, work / "reports" / "results" / "old-run.jsonl")
    where = _run(site, work, "-c", "import conformance; print(conformance.__file__)")
    assert where.stdout.startswith(str(site)), where.stdout + where.stderr

    report = _run(site, work, "-m", "conformance.report")
    assert report.returncode == 0, report.stdout + report.stderr
    for name in ("results.json", "index.html", "junit"):
        assert (work / "reports" / name).exists(), name
    # the run in ./reports/results was read: its column is in the page's data
    assert "old-run" in (work / "reports" / "results.json").read_text(encoding="utf-8")
    # and the tool says where it wrote
    assert f"report:  {work / 'reports' / 'index.html'}" in report.stdout, report.stdout

    spec = _run(site, work, "-m", "conformance.spec")
    assert spec.returncode == 0, spec.stdout + spec.stderr
    assert (work / "reports" / "spec.html").is_file()
    assert f"spec: {work / 'reports' / 'spec.html'}" in spec.stdout

    assert _written_inside(site) == []


def test_installed_an_explicit_out_is_used_and_named(site, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(OLD_RUN, work / "old-run.jsonl")
    proc = _run(site, work, "-m", "conformance.report", "--results-dir", ".", "--out", "page")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (work / "page" / "index.html").is_file()
    assert f"results: {work / 'page' / 'results.json'}" in proc.stdout
    assert _written_inside(site) == [] and not (work / "reports").exists()


@pytest.mark.parametrize("argv", [
    ["-m", "conformance.fw_surface", "--write"],
    ["-m", "conformance.features", "--write"],
    ["-m", "conformance.history", "merge", "elsewhere"],
])
def test_installed_tools_that_rewrite_project_files_refuse_in_one_line(site, tmp_path, argv):
    before = {p: p.stat().st_mtime_ns for p in site.rglob("*") if p.is_file()}
    proc = _run(site, tmp_path, *argv)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "run it in a clone of the repository" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert {p: p.stat().st_mtime_ns for p in site.rglob("*") if p.is_file()} == before


def test_installed_the_differential_tester_writes_its_findings_under_the_current_directory(
        site, tmp_path):
    proc = _run(site, tmp_path, "-m", "conformance.differential", "--adapter", "reference",
                "--examples", "2", "--seed", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    findings = tmp_path / "reports" / "results" / "explore-reference.jsonl"
    assert findings.is_file() and f"-> {findings}" in proc.stdout, proc.stdout
    assert not (site / "reports").exists()


def test_a_relative_mutants_json_names_the_callers_directory(tmp_path, monkeypatch):
    """The mutants tool changes into the checkout to run the suites: a relative ``--json``
    is resolved first, so it is written where the caller meant."""
    from conformance.mutants.__main__ import _parse

    monkeypatch.chdir(tmp_path)
    assert _parse(["--json", "m.json"]).json == tmp_path / "m.json"
    assert _parse([]).json == ROOT / "reports" / "mutants.json"


@pytest.mark.parametrize("argv", [
    ["-m", "conformance.features"],
    ["-m", "conformance.fw_surface"],
    ["-m", "conformance.history", "changes"],
])
def test_installed_the_read_only_tools_run_without_the_docs(site, tmp_path, argv):
    """No docs/ is installed: a tool that only reports reads nothing from it."""
    proc = _run(site, tmp_path, *argv)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() and "Traceback" not in proc.stderr
