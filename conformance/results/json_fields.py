"""The JSON type check every reader of the harness's own files uses (results lines, findings
lines, mutants.json): one wording for "this field holds the wrong type", so an edited or
foreign file is refused with the same kind of line wherever it is read (issue 28).

Why its own module: three readers had grown three checks that disagreed on whether ``true``
is an integer and on how a wrong field is named; the message is the only thing a user sees.
"""
from __future__ import annotations

from typing import Any

#: A field that holds any JSON value (a test's ``observed``).
ANY = object()
_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true/false",
               dict: "an object", list: "a list"}


def holds(value: Any, types: tuple, required: bool = False) -> bool:
    """Whether ``value`` is one of the JSON ``types`` (None passes unless ``required``; a
    boolean is never an integer, as JSON sees it)."""
    if value is None:
        return not required
    if types == (ANY,):
        return True
    if isinstance(value, bool):
        return bool in types
    return isinstance(value, types)


def describe(types: tuple) -> str:
    """``(int, float)`` is "a number": a duration of 0.2 is fine, "an integer" would mislead."""
    return " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in types
                       if t is not int or float not in types) or "any value"


def short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def wrong_type(name: str, value: Any, types: tuple, required: bool = False) -> str | None:
    """"field 'name' is list [1], expected an integer", or None when ``value`` holds."""
    if holds(value, types, required):
        return None
    return f"field {name!r} is {type(value).__name__} {short(value)}, expected {describe(types)}"


def first_wrong(obj: dict, fields: dict[str, tuple], prefix: str = "") -> str | None:
    """The first of ``fields`` (name -> JSON types) that ``obj`` holds with a wrong type."""
    return next((problem for name, types in fields.items()
                 if (problem := wrong_type(prefix + name, obj.get(name), types))), None)


def first_wrong_item(name: str, items: Any, fields: dict[str, tuple]) -> str | None:
    """The first entry of the list ``items`` that is no object or holds a field of ``fields``
    with a wrong type ("field 'survivors[2].id' is ..."), or None."""
    for i, entry in enumerate(items or []):
        where = f"{name}[{i}]"
        problem = (wrong_type(where, entry, (dict,), required=True)
                   or first_wrong(entry, fields, where + "."))
        if problem:
            return problem
    return None
