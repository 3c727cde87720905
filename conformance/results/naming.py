"""A test's names, from its pytest node id: the one place that splits one.

Why one place: the page's cells, the NOT-RUN padding, JUnit, drafting expectations and the
reproduction scripts all name tests; derived separately they drifted into two rules (with and
without the ``[param]`` suffix, after the file or after the last ``::``). A node id is
``<file>::[<Class>::]<function>[<param>]``; these are its parts.
"""
from __future__ import annotations

SEPARATOR = "::"


def file_of(nodeid: str) -> str:
    """The file part of a node id (or of a ``path::name`` command-line argument)."""
    return str(nodeid).split(SEPARATOR, 1)[0]


def test_name(nodeid: str) -> str:
    """The test's name as pytest's ``item.name`` has it: the last part, with its ``[param]``.

    What identifies a test within its rule (a cell's tests, the tests other runs recorded),
    what expectations files' ``tests`` lists match, and what the page and JUnit show.
    """
    head, bracket, param = str(nodeid).partition("[")  # a param id may hold "::" itself
    return head.rsplit(SEPARATOR, 1)[-1] + bracket + param


def function_name(nodeid: str) -> str:
    """The test function's name (:func:`test_name` without ``[param]``): what a reproduction
    script calls."""
    return test_name(nodeid).split("[", 1)[0]


test_name.__test__ = False  # not a test, whatever pytest's collector thinks of the name
