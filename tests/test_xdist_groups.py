"""tests/xdist_groups.py: a module marked with an xdist group runs on one worker, so its
module fixture runs once (pytest-xdist 3.8's own loadgroup does not group under pytest 9)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.hang import hang_limit
from tests.xdist_groups import module_group, scope_of

GROUPED = '''
import os
import pytest

pytestmark = [pytest.mark.xdist_group("shared"), pytest.mark.filterwarnings("ignore")]


@pytest.fixture(scope="module")
def shared():
    with open(os.environ["SETUPS_LOG"], "a") as log:
        log.write(os.environ.get("PYTEST_XDIST_WORKER", "main") + "\\n")


@pytest.mark.parametrize("n", range(6))
def test_uses_the_shared_fixture(shared, n):
    pass
'''

UNGROUPED = '''
import time


def test_a():
    time.sleep(0.2)


def test_b():
    time.sleep(0.2)
'''


def test_a_marked_module_sets_its_module_fixture_up_once_across_workers(pytester, tmp_path,
                                                                         monkeypatch):
    pytest.importorskip("xdist")
    log = tmp_path / "setups.log"
    monkeypatch.setenv("SETUPS_LOG", str(log))
    pytester.makepyfile(test_grouped=GROUPED, test_ungrouped=UNGROUPED)
    repo = Path(__file__).resolve().parents[1]
    monkeypatch.setenv("PYTHONPATH", str(repo))
    done = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "tests.xdist_groups", "-n", "2", "--dist", "loadgroup",
        "-p", "no:autograd_conformance", "-p", "no:autograd_conformance_chains",
        timeout=hang_limit(120))
    done.assert_outcomes(passed=8)
    # without the scheduler, xdist 3.8 under pytest 9 sends the six tests to both workers and
    # the fixture runs twice
    assert len(log.read_text().split()) == 1, log.read_text()


def test_the_group_is_read_from_the_modules_own_pytestmark(tmp_path):
    (tmp_path / "test_one.py").write_text('import pytest\npytestmark = pytest.mark.xdist_group("g")\n')
    (tmp_path / "test_list.py").write_text(
        'import pytest\npytestmark: list = [pytest.mark.slow, pytest.mark.xdist_group("h")]\n')
    (tmp_path / "test_none.py").write_text('import pytest\nmark = pytest.mark.xdist_group("no")\n')
    (tmp_path / "test_broken.py").write_text("pytestmark = (\n")
    assert module_group(tmp_path / "test_one.py") == "g"
    assert module_group(tmp_path / "test_list.py") == "h"
    assert module_group(tmp_path / "test_none.py") is None      # not the module's pytestmark
    assert module_group(tmp_path / "test_broken.py") is None    # unreadable: left ungrouped
    assert module_group(tmp_path / "test_missing.py") is None
    assert scope_of("test_one.py::test_x[1]", tmp_path) == scope_of("test_one.py::t", tmp_path)
    assert scope_of("test_none.py::test_x", tmp_path) == "test_none.py::test_x"
    assert scope_of("test_none.py::test_x@g", tmp_path) == scope_of("test_one.py::t", tmp_path)
    assert scope_of("test_none.py::test_x[a@b]", tmp_path) == "test_none.py::test_x[a@b]"


def test_every_module_with_an_expensive_module_fixture_is_grouped():
    """The modules whose module fixture runs suites, builds a wheel or a page: on two workers
    each would run it twice."""
    root = Path(__file__).resolve().parent
    for name in ["report/test_page.py", "report/test_page_layout.py",
                 "report/test_page_sections.py", "model/test_evidence.py",
                 "suites/test_planted_engines.py", "harness/test_installed.py",
                 "harness/test_output_location.py"]:
        assert module_group(root / name), name
