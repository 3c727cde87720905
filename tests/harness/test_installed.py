"""Installed from its wheel, as a framework's CI would, the package runs the suites.

The README's quick start, command by command: builds the wheel of this checkout, installs it
into a fresh virtual environment, runs ``pytest --adapter=reference --results=...`` and
``python -m conformance.report`` in an empty directory outside the checkout. Offline and fast:
the build uses this environment's setuptools (``--no-build-isolation --no-index``), the install
takes no dependencies from an index (``--no-index --no-deps``), and the venv sees this
environment's packages (numpy, pytest, ...) through a ``.pth`` line written after the install.
"""
import os
import re
import shlex
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


def quick_start() -> list[list[str]]:
    """The commands of the README's quick start (its first ``sh`` block), comments removed."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Quick start: test your framework"):]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [shlex.split(line, comments=True) for line in block.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def _step(words: str) -> list[str]:
    """The quick start's command that begins with ``words``."""
    found = [cmd for cmd in quick_start() if " ".join(cmd).startswith(words)]
    assert len(found) == 1, f"the README's quick start has no single {words!r} command: {quick_start()}"
    return found[0]


def test_the_quick_start_is_the_steps_this_module_runs():
    """venv, build, install, run keeping results, report: a change to the README's block is
    a change to what this module runs (the test reads the commands from it)."""
    assert [cmd[:2] for cmd in quick_start()] == [
        ["python3", "-m"], ["pip", "wheel"], ["pip", "install"], ["pytest", "--adapter=myfw"],
        ["python", "-m"]]
    assert any(a.startswith("--results=") for a in _step("pytest"))
    assert _step("python -m conformance.report") == ["python", "-m", "conformance.report"]


# one pytest-xdist worker runs this module (nox -s tests: --dist loadgroup, tests/xdist_groups.py):
# the wheel is built and installed once, in the module fixture
pytestmark = pytest.mark.xdist_group("installed")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("installed")
    # build from a copy: setuptools writes build/ and *.egg-info next to the sources
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", ".nox", "reports", "build", "*.egg-info", "__pycache__", ".hypothesis"))
    # the README's build, offline: this environment's setuptools, no index
    wheel_cmd = _step("pip wheel")
    built = _run([sys.executable, "-m", *wheel_cmd, "--no-build-isolation", "--no-index", "-q"],
                 cwd=src)
    if built.returncode != 0:
        pytest.fail(f"building the wheel failed:\n{built.stdout[-2000:]}{built.stderr[-2000:]}")
    (wheel,) = (src / "dist").glob("autograd_conformance-*.whl")
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
                   .stdout.strip())
    # the README's install (the wheel named as its glob finds it), offline: the dependencies
    # come from this environment through the .pth line below
    install = [str(wheel) if "*" in a else a for a in _step("pip install")]
    done = _run([sys.executable, "-m", "pip", "--python", str(python), *install[1:], "--no-deps",
                 "--no-index", "-q"], cwd=src)
    if done.returncode != 0:
        pytest.fail(f"installing the wheel failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    # then this environment's packages (numpy, pytest, ...), after the venv's own: the wheel's
    # files win over an editable install of a checkout there
    (purelib / "zz_outer_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python, tmp


def test_the_quick_start_runs_the_installed_suites_and_makes_the_page(installed):
    """The README's run and report commands, as written (``myfw`` = ``reference``), in an
    empty directory outside the checkout: every suite runs, the results are kept, the page
    and the spec page it links are written, and no line advises a command that only a
    checkout has."""
    python, tmp = installed
    work = tmp / "elsewhere"
    work.mkdir()
    where = _run([str(python), "-c", "import conformance; print(conformance.__file__)"], cwd=work)
    assert str(ROOT) not in where.stdout, f"the checkout was imported: {where.stdout}"
    run = [a.replace("myfw", "reference") for a in _step("pytest")]
    proc = _run([str(python), "-m", *run], cwd=work)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "no tests ran" not in out
    summary = [line for line in out.splitlines() if " passed" in line]
    assert summary and int(summary[-1].split(" passed")[0].split()[-1]) > 200, out[-1500:]
    kept = work / "reports" / "results" / "reference.jsonl"
    assert kept.is_file(), proc.stdout[-1500:]
    assert ("results: reports/results/reference.jsonl; the page: python -m conformance.report\n"
            in proc.stdout), proc.stdout[-1500:]
    report = _run([str(python), *_step("python -m conformance.report")[1:]], cwd=work)
    assert report.returncode == 0, report.stdout + report.stderr
    for name in ("index.html", "spec.html", "results.json"):
        assert (work / "reports" / name).is_file(), name
    assert [p.name for p in (work / "reports" / "junit").iterdir()] == ["reference.xml"]
    said = out + report.stdout + report.stderr
    assert "nox" not in said, [line for line in said.splitlines() if "nox" in line]
    page = (work / "reports" / "index.html").read_text(encoding="utf-8")
    assert 'href="spec.html"' in page
    # (the history section says which checkout session recorded its data: not advice)
    assert not re.search(r"nox -s (report|spec)|run <code>nox", page)


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
