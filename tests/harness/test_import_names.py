"""Another distribution that installs `adapters`, `reference` or `conformance` is found at
start-up and said in one line (issue 36 item 5): pip lets the two overwrite each other's files
silently, so without the check `import adapters.base` runs the other package's code."""
from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

from conformance import import_names
from conformance.child_interpreter import environment
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]


def fake_distribution(site: Path, name: str, *, top_level=None, record=None) -> metadata.Distribution:
    """A ``<name>-1.0.dist-info`` in ``site``, as pip leaves it (METADATA, and top_level.txt
    and/or RECORD)."""
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    if top_level is not None:
        (info / "top_level.txt").write_text("".join(f"{n}\n" for n in top_level))
    if record is not None:
        (info / "RECORD").write_text("".join(f"{path},sha256=x,1\n" for path in record))
    return metadata.PathDistribution(info)


def test_a_distribution_whose_top_level_names_adapters_is_found(tmp_path):
    theirs = fake_distribution(tmp_path, "adapters", top_level=["adapters"])
    assert import_names.foreign_owners([theirs]) == {"adapters": ["adapters"]}


def test_a_distribution_without_top_level_is_read_from_its_record(tmp_path):
    """Build back ends other than setuptools write no top_level.txt."""
    theirs = fake_distribution(tmp_path, "reference-tool",
                               record=["reference/__init__.py", "reference_tool-1.0.dist-info/RECORD"])
    single = fake_distribution(tmp_path, "conf", record=["conformance.py", "other/x.py"])
    unrelated = fake_distribution(tmp_path, "references", record=["references/__init__.py"])
    assert import_names.foreign_owners([theirs, single, unrelated]) == {
        "reference": ["reference-tool"], "conformance": ["conf"]}


def test_our_own_distribution_is_no_collision(tmp_path):
    ours = fake_distribution(tmp_path, "autograd_conformance",
                             top_level=["adapters", "conformance", "reference"])
    assert import_names.foreign_owners([ours]) == {}
    assert import_names.collision_problem([ours]) is None


def test_the_problem_names_the_distribution_and_what_to_do(tmp_path):
    theirs = fake_distribution(tmp_path, "adapters", top_level=["adapters"])
    problem = import_names.collision_problem([theirs])
    assert "\n" not in problem
    assert "'adapters' is also installed by adapters" in problem
    assert "own virtual environment" in problem and "pip uninstall adapters" in problem


def test_pytest_adapter_stops_in_one_line_when_adapterhub_adapters_is_installed(tmp_path):
    """`pytest --adapter=reference` with a fake AdapterHub distribution on the path: exit 4,
    one line naming it, no test run."""
    site = tmp_path / "site"
    fake_distribution(site, "adapters", top_level=["adapters"])
    work = tmp_path / "work"
    work.mkdir()
    env = environment(ROOT, site)
    done = subprocess.run([sys.executable, "-m", "pytest", "--adapter=reference",
                           "-p", "no:cacheprovider"], capture_output=True, text=True, cwd=work,
                          env=env, timeout=hang_limit(10))
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert done.returncode == 4, done.stdout + done.stderr
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    assert "'adapters' is also installed by adapters" in lines[0], lines


def test_control_without_the_other_distribution_the_same_run_starts(tmp_path):
    """The same command, without the fake distribution, gets past start-up (so the previous
    test's exit 4 is the collision, not the command)."""
    work = tmp_path / "work"
    work.mkdir()
    env = environment(ROOT)
    done = subprocess.run([sys.executable, "-m", "pytest", "--adapter=reference",
                           "-p", "no:cacheprovider", "--collect-only", "-q"],
                          capture_output=True, text=True, cwd=work, env=env, timeout=hang_limit(10))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "collision" not in done.stdout + done.stderr
