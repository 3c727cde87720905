"""Installed from its wheel, as a framework's CI would, the package runs the suites.

Builds the wheel of this checkout, installs it (no dependencies, no index) into a fresh virtual
environment that sees this environment's packages (numpy, pytest, ...) through a ``.pth`` line,
and runs ``pytest --adapter=reference`` in an empty directory outside the checkout.
"""
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]


#: no PYTHONPATH: the checkout must not be importable in the installed environment
CLEAN_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _run(cmd, **kw):
    kw.setdefault("env", CLEAN_ENV)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=hang_limit(150), **kw)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("installed")
    # build from a copy: setuptools writes build/ and *.egg-info next to the sources
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", ".nox", "reports", "build", "*.egg-info", "__pycache__", ".hypothesis"))
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                  "--no-index", "-q", "-w", str(tmp / "dist"), str(src)])
    if built.returncode != 0:
        pytest.fail(f"building the wheel failed:\n{built.stdout[-2000:]}{built.stderr[-2000:]}")
    (wheel,) = (tmp / "dist").glob("autograd_conformance-*.whl")
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
                   .stdout.strip())
    done = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                 "--no-index", "-q", str(wheel)])
    if done.returncode != 0:
        pytest.fail(f"installing the wheel failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    # then this environment's packages (numpy, pytest, ...), after the venv's own: the wheel's
    # files win over an editable install of a checkout there
    (purelib / "zz_outer_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python, tmp


def test_pytest_adapter_runs_the_installed_suites_outside_the_checkout(installed):
    python, tmp = installed
    work = tmp / "elsewhere"
    work.mkdir()
    where = _run([str(python), "-c", "import conformance; print(conformance.__file__)"], cwd=work)
    assert str(ROOT) not in where.stdout, f"the checkout was imported: {where.stdout}"
    proc = _run([str(python), "-m", "pytest", "--adapter=reference", "-p", "no:cacheprovider",
                 "-q"], cwd=work)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "no tests ran" not in out
    summary = [line for line in out.splitlines() if " passed" in line]
    assert summary and int(summary[-1].split(" passed")[0].split()[-1]) > 200, out[-1500:]


def test_the_installed_report_writes_under_the_current_directory(installed):
    """``pytest --results`` then ``python -m conformance.report``, as a framework's CI would:
    the report reads and writes ./reports and says so; nothing lands in site-packages."""
    python, tmp = installed
    work = tmp / "report-here"
    work.mkdir()
    ran = _run([str(python), "-m", "pytest", "--pyargs", "conformance.suites.test_identity",
                "--adapter=reference", "-p", "no:cacheprovider", "-q",
                "--results=reports/results/mine.jsonl"], cwd=work)
    assert ran.returncode == 0, (ran.stdout + ran.stderr)[-3000:]
    proc = _run([str(python), "-m", "conformance.report"], cwd=work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = work / "reports" / "index.html"
    assert page.is_file() and f"report:  {page}" in proc.stdout, proc.stdout
    assert "mine" in (work / "reports" / "results.json").read_text(encoding="utf-8")
    purelib = Path(_run([str(python), "-c", "import sysconfig; "
                         "print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    inside = [p for p in purelib.rglob("*") if p.is_file() and "reports" in p.parts]
    assert not inside, inside
