"""The one JSON type check of the harness's readers: booleans are not integers, None passes
unless required, and the wrong field is named with its value and the types it may hold."""
import pytest

from conformance.results.json_fields import ANY, first_wrong, first_wrong_item, holds, wrong_type


@pytest.mark.parametrize("value, types, required, ok", [
    (True, (int,), False, False),       # JSON true is no integer (a count of True was summed)
    (True, (bool,), False, True),
    (1, (int, float), False, True),
    (0.5, (int,), False, False),
    (None, (str,), False, True),
    (None, (str,), True, False),
    ([1], (ANY,), False, True),
])
def test_holds(value, types, required, ok):
    assert holds(value, types, required) is ok


def test_the_wrong_field_is_named_with_its_value_and_what_it_may_hold():
    assert wrong_type("duration", "1s", (int, float)) == \
        "field 'duration' is str '1s', expected a number"
    long = wrong_type("x", "y" * 100, (int,))  # a long value is cut, not printed whole
    assert long.endswith("yyy..., expected an integer") and len(long) < 100


def test_first_wrong_goes_in_field_order_and_prefixes_nested_names():
    fields = {"a": (int,), "b": (str,)}
    assert first_wrong({"a": 1, "b": 2}, fields, "outer.") == \
        "field 'outer.b' is int 2, expected a string"
    assert first_wrong({"a": "1", "b": 2}, fields) == "field 'a' is str '1', expected an integer"
    assert first_wrong({}, fields) is None


def test_first_wrong_item_names_the_entry():
    fields = {"id": (str,)}
    assert first_wrong_item("s", [{"id": "a"}, 3], fields) == \
        "field 's[1]' is int 3, expected an object"
    assert first_wrong_item("s", [{"id": "a"}, {"id": []}], fields) == \
        "field 's[1].id' is list [], expected a string"
    assert first_wrong_item("s", None, fields) is None


def test_a_shape_is_checked_as_deep_as_it_goes_and_names_the_entry():
    from conformance.results.json_fields import ListOf, Object, Row, wrong_shape

    chain = Object(kind=(str,), edges=ListOf(Row((int,), (int,), (str,))))
    assert wrong_shape("chain", {"kind": "cycle", "edges": [[0, 1, "x"]]}, chain) is None
    assert wrong_shape("chain", None, chain) is None
    assert wrong_shape("chain", {"kind": 5}, chain) == \
        "field 'chain.kind' is int 5, expected a string"
    assert wrong_shape("chain", [], chain) == "field 'chain' is list [], expected an object"
    assert wrong_shape("chain", {"edges": [[0, 1, "x"], [1, 2, 3]]}, chain) == \
        "field 'chain.edges[1][2]' is int 3, expected a string"
    assert wrong_shape("chain", {"edges": [[0, 1]]}, chain) == \
        "field 'chain.edges[0]' is list [0, 1], expected a list of 3 entries"
    assert wrong_shape("chain", {"edges": [None]}, chain) == \
        "field 'chain.edges[0]' is NoneType None, expected a list"
    assert wrong_shape("rules", ["a", True], ListOf((str,))) == \
        "field 'rules[1]' is bool True, expected a string"
