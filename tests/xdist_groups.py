"""``--dist loadgroup`` that works: a test module marked ``pytestmark =
pytest.mark.xdist_group("name")`` runs on one pytest-xdist worker.

Why: the modules that mark themselves so share an expensive module fixture (whole suites run
for the report page, a wheel built and installed, every evidence snippet run); spread over
two workers, the fixture runs twice. pytest-xdist 3.8 groups by renaming each item's
``_nodeid``, which pytest 9 no longer reads (it keeps the id in ``_id``), so its loadgroup
silently became plain load: on 2 cores, ``nox -s tests`` ran the report page's suites twice
(about 7 minutes of a loaded machine's 50). Here the controller, which sees only node ids,
reads each test module's own ``pytestmark`` from its syntax tree (no test code runs) and
schedules the module as one unit. Node ids that xdist did suffix with ``@group`` (an xdist
that works again) are grouped by that suffix, as xdist does.
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import pytest


@lru_cache(maxsize=None)
def module_group(path: Path) -> str | None:
    """The group a test module names in its module-level ``pytestmark`` (``None``: none, or
    a module that cannot be read or parsed, which then stays ungrouped)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    for statement in tree.body:
        targets = (statement.targets if isinstance(statement, ast.Assign)
                   else [statement.target] if isinstance(statement, ast.AnnAssign) else [])
        if not any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets):
            continue
        for node in ast.walk(statement.value):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "xdist_group" and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                return node.args[0].value
    return None


def scope_of(nodeid: str, rootdir: Path) -> str:
    """The unit of work a test belongs to: its group, else the test alone."""
    if nodeid.rfind("@") > nodeid.rfind("]"):  # suffixed by an xdist whose grouping works
        return "group:" + nodeid.rsplit("@", 1)[1]
    group = module_group(rootdir / nodeid.split("::", 1)[0])
    return nodeid if group is None else "group:" + group


@pytest.hookimpl(optionalhook=True)  # an xdist hook: without xdist nothing calls it
def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist", None) != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    rootdir = Path(config.rootpath)

    class ModuleGroupScheduling(LoadScopeScheduling):
        """Load scheduling whose units are the marked modules and single tests; units with
        more tests go first (xdist's loadscope reorder), so a long group starts early."""

        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid, rootdir)

    return ModuleGroupScheduling(config, log)

