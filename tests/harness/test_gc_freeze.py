"""Objects older than a suite test are frozen out of the collector's walk (conformance/gc_freeze.py):
what the test makes is collected as before, heap searches still see every object, and a run
leaves its process as it found it."""
import gc
import weakref

import pytest

from conformance import gc_freeze
from conformance.liveness import keep_alive_chain

#: held by this module's globals: a keep-alive chain must start at the (frozen) module
HELD_BY_THE_MODULE = []


class Node:
    pass


@pytest.fixture(autouse=True)
def _unfrozen_at_start():
    """These tests judge what freezing does: each starts with nothing frozen (the project's
    tests freeze before each test, tests/conftest.py)."""
    gc_freeze.thaw_if_frozen()


@pytest.fixture
def frozen():
    """Freezes what is alive when called; thawed after the test."""
    try:
        yield gc_freeze.before_test
    finally:
        gc_freeze.thaw_if_frozen()


def _walked(obj) -> bool:
    return any(o is obj for o in gc.get_objects())


def test_older_objects_leave_the_walk_and_the_tests_own_cycles_are_still_collected(frozen):
    old = Node()
    assert _walked(old)
    frozen()
    assert not _walked(old)
    cycle = Node()
    cycle.self, cycle.old = cycle, old  # a cycle that also points at a frozen object
    control = Node()  # alive: shows the watch works
    dead, alive = weakref.ref(cycle), weakref.ref(control)
    del cycle
    gc.collect()
    assert dead() is None and alive() is control
    assert old.__class__ is Node  # what the garbage pointed at is untouched


def test_a_heap_search_thaws_and_the_next_test_freezes_again(frozen):
    frozen()
    kept = Node()
    HELD_BY_THE_MODULE.append(kept)
    try:
        chain = keep_alive_chain(kept)
    finally:
        HELD_BY_THE_MODULE.clear()
    # the module and its dict were frozen: seen again only because the search thawed them
    assert chain.kind == "root" and "HELD_BY_THE_MODULE" in chain.render(), chain.render()
    old = Node()
    gc_freeze.before_test()
    assert not _walked(old)  # frozen again


SUITE = '''
import gc

OLD = []  # made at import, before any test


@rule("demo.walk")
def test_walk():
    walked = any(o is OLD for o in gc.get_objects())
    assert walked == WALKED, f"module list walked: {walked}"
'''


@pytest.mark.parametrize("option, walked", [([], False), (["--no-gc-freeze"], True)])
def test_a_suite_run_freezes_before_each_test_unless_told_not_to(conformance_project, option,
                                                                 walked):
    conformance_project.rules("demo", "walk")
    conformance_project.suite("demo", SUITE.replace("WALKED", str(walked)))
    result = conformance_project.run("suites", "--results", "results.jsonl", *option,
                                     subprocess=True)
    (test,) = [r for r in conformance_project.results() if r["type"] == "test"]
    assert test["outcome"] == "PASS", test


def test_an_in_process_run_leaves_the_process_as_it_found_it(conformance_project):
    """pytester's in-process run: the suite test froze this process's heap, the run's end
    thawed it."""
    conformance_project.rules("demo", "walk")
    conformance_project.suite("demo", SUITE.replace("WALKED", "False"))
    mine = Node()
    result = conformance_project.run("suites", "--in-process")
    result.assert_outcomes(passed=1)
    assert _walked(mine)


@pytest.mark.parametrize("frozen_before", [True, False])
def test_the_leak_check_leaves_the_freeze_as_it_found_it(frozen, frozen_before):
    """Under the harness every test starts frozen: a leak check that thawed after each test
    made the next one's collections walk the whole heap again. Called outside it (frozen by
    nobody), the check thaws what it froze."""
    from conformance.leakcheck import measure

    if frozen_before:
        frozen()
    old = Node()  # made after the harness's freeze: the check's own freeze takes it
    assert measure(lambda: True, warmups=1, runs=3) is None  # nothing grows: no leak
    assert gc_freeze.is_frozen() is frozen_before
    assert _walked(old) is not frozen_before


def test_a_leak_found_thaws_to_name_its_chain_even_when_frozen_before(frozen):
    """Naming what keeps a leaked object alive searches referrers, which frozen objects hide."""
    from conformance.leakcheck import measure

    frozen()
    held = []
    finding = measure(lambda: held.append(Node()) or True, warmups=1, runs=3)
    assert finding is not None and finding.chain is not None, finding
    assert not gc_freeze.is_frozen()


def test_the_summaries_see_a_thawed_heap(conformance_project):
    """Code after the tests searches the heap too: Hypothesis's plugin, imported at the
    terminal summary, checks with gc.get_referrers that something holds Trio's generator, and
    warned when that holder was frozen."""
    conformance_project.rules("demo", "walk")
    conformance_project.suite("demo", SUITE.replace("WALKED", "False"))
    conformance_project.pytester.makeconftest('''
        import gc
        def pytest_terminal_summary(terminalreporter):
            terminalreporter.write_line(f"frozen at the summary: {gc.get_freeze_count()}")
    ''')
    result = conformance_project.run("suites", "--in-process")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["frozen at the summary: 0"])
