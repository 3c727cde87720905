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
