"""The JSON type check every reader of the harness's own files uses (results lines, findings
lines, mutants.json): one wording for "this field holds the wrong type", so an edited or
foreign file is refused with the same kind of line wherever it is read (issue 28).

Why its own module: three readers had grown three checks that disagreed on whether ``true``
is an integer and on how a wrong field is named; the message is the only thing a user sees.

A field that holds structure (a LEAK line's ``chain``, a test's ``expectation``, a witness's
``rules``) is described by a shape (:class:`Object`, :class:`ListOf`, :class:`Row`) and
checked to the depth its readers go, by :func:`wrong_shape`: a chain ``{"kind": 5}`` was a
traceback in the page's drawing of it, not a line naming the field.
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


class Object:
    """A JSON object whose named fields hold the given types or shapes (other keys: any)."""

    def __init__(self, **fields) -> None:
        self.fields = fields


class ListOf:
    """A JSON list each of whose entries holds ``item`` (a types tuple or a shape; no null)."""

    def __init__(self, item) -> None:
        self.item = item


class Row:
    """A JSON list of exactly ``len(items)`` entries, each holding its own types or shape
    (a chain's edge: ``[from, to, label]``)."""

    def __init__(self, *items) -> None:
        self.items = items


def wrong_shape(name: str, value: Any, shape, required: bool = False) -> str | None:
    """Like :func:`wrong_type` for a types tuple; for a shape, the first entry or field at any
    depth that does not hold ("field 'chain.edges[0][2]' is int 3, expected a string")."""
    if isinstance(shape, tuple):
        return wrong_type(name, value, shape, required)
    kind = dict if isinstance(shape, Object) else list
    problem = wrong_type(name, value, (kind,), required)
    if problem or value is None:
        return problem
    if isinstance(shape, Object):
        return next((p for key, sub in shape.fields.items()
                     if (p := wrong_shape(f"{name}.{key}", value.get(key), sub))), None)
    if isinstance(shape, Row) and len(value) != len(shape.items):
        return (f"field {name!r} is list {short(value)}, expected a list of "
                f"{len(shape.items)} entries")
    items = shape.items if isinstance(shape, Row) else [shape.item] * len(value)
    return next((p for i, (entry, sub) in enumerate(zip(value, items))
                 if (p := wrong_shape(f"{name}[{i}]", entry, sub, required=True))), None)


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
