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
