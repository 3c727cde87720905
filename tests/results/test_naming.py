"""A test's names from its node id (conformance.results.naming)."""
from __future__ import annotations

import pytest

from conformance.results.naming import file_of, function_name, test_name


@pytest.mark.parametrize("nodeid, file, name, function", [
    ("conformance/suites/test_x.py::test_a", "conformance/suites/test_x.py", "test_a", "test_a"),
    ("s/test_x.py::test_a[1-x::y]", "s/test_x.py", "test_a[1-x::y]", "test_a"),
    ("s/test_x.py::TestGroup::test_b[2]", "s/test_x.py", "test_b[2]", "test_b"),
    ("test_a", "test_a", "test_a", "test_a"),  # a NOT RUN row holds the name alone
])
def test_the_parts_of_a_node_id(nodeid, file, name, function):
    assert (file_of(nodeid), test_name(nodeid), function_name(nodeid)) == (file, name, function)
