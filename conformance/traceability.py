"""Every suite test checks exactly one catalogue rule, and every rule has a test.

Why enforce it at collection: a test without a rule produces a result nobody can
interpret, and a rule without a test is a promise the suite silently does not check.
Violations become collection errors (they also travel through pytest-xdist workers).
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from conformance.model import suite_index
from conformance.model.catalogue import Catalogue


def suite_of_module(path: Path) -> str | None:
    """``test_identity.py`` -> ``identity``; other files are not suite modules."""
    name = Path(path).name
    if name.startswith("test_") and name.endswith(".py"):
        return name[len("test_"):-len(".py")]
    return None


def rule_ids_of(item) -> list:
    """The arguments of every ``rule`` marker on ``item`` (function, class or module level)."""
    return [m.args[0] if len(m.args) == 1 else m.args for m in item.iter_markers("rule")]


def item_problem(item, catalogue: Catalogue, suite: str) -> str | None:
    """Why ``item`` is not a valid test of ``suite``, or None."""
    ids = rule_ids_of(item)
    if not ids:
        return (f"{item.nodeid}: no rule marker; decorate it with "
                f"@rule(\"{suite}.<rule-name>\") from conformance.api")
    if len(ids) > 1:
        return f"{item.nodeid}: carries {len(ids)} rule markers {ids}; a test checks exactly one rule"
    rule_id = ids[0]
    if not isinstance(rule_id, str) or rule_id not in catalogue:
        return (f"{item.nodeid}: rule id {rule_id!r} is not in the catalogue "
                f"({catalogue.directory}/{suite}.toml); add the rule or fix the id")
    if catalogue.rules[rule_id].suite != suite:
        return (f"{item.nodeid}: rule {rule_id!r} belongs to suite "
                f"{catalogue.rules[rule_id].suite!r}; move the test to "
                f"test_{catalogue.rules[rule_id].suite}.py")
    return None


def rule_ids_in_module(module) -> set[str]:
    """Rule ids the tests of suite module ``module`` check, from the suite index (the module's
    source: the one rule->tests reader), not from the tests pytest collected, so that running
    one test by node id does not make every other rule look untested."""
    path = Path(module.__file__).resolve()
    index = suite_index.index_of_dir(path.parent)
    return {t.rule for t in index.tests if t.rule is not None and Path(t.file).name == path.name}


def untested_rules(module, catalogue: Catalogue, suite: str) -> list[str]:
    used = rule_ids_in_module(module)
    return sorted(r.id for r in catalogue.of_suite(suite) if r.id not in used)


def directory_problems(suites_dir: Path, catalogue: Catalogue) -> list[str]:
    """Catalogue suites without a ``test_<suite>.py`` and suite modules without a catalogue."""
    modules = {suite_of_module(p): p for p in Path(suites_dir).glob("test_*.py")}
    problems = []
    for suite in catalogue.suites:
        if catalogue.of_suite(suite) and suite not in modules:
            problems.append(f"{catalogue.directory}/{suite}.toml has rules but "
                            f"{suites_dir}/test_{suite}.py does not exist; every rule needs a test")
    for suite, path in sorted(modules.items()):
        if suite not in catalogue.suites:
            problems.append(f"{path}: no catalogue file {catalogue.directory}/{suite}.toml "
                            f"for suite {suite!r}; its tests cannot name rules")
    return problems


def test_names_by_rule(suites_dir: Path) -> dict[str, set[str]]:
    """rule id -> names of the test functions decorated ``@rule(id)``, from the suite index.

    Read without importing the suites (the harness checks expectations files before any
    test module is imported); a module that does not parse is left to collection to report.
    """
    return suite_index.index_of_dir(Path(suites_dir)).names_by_rule()
