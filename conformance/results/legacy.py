"""What older harnesses left only in a message, read back once, when their files are migrated.

Why here and nowhere else: a missing feature is a name end to end (``Unsupported.feature`` ->
the test record's ``missing_feature`` -> the page, the differential tester); results written
before that field existed say it only in the message, ``"<framework> does not support
<feature>: <reason>"``. The migrations of both results documents
(:mod:`conformance.results.migrations`) call :func:`missing_feature` on such lines, so every
reader sees the field; no other module reads a feature out of a message
(``tests/results/test_structure.py`` fails if one does).
"""
from __future__ import annotations

import re

_DOES_NOT_SUPPORT = re.compile(r"does not support ([A-Za-z_][\w.]*)")


def missing_feature(message: str | None) -> str | None:
    """The feature the first line of an older harness's UNSUPPORTED message names, or None."""
    lines = (message or "").strip().splitlines()
    found = _DOES_NOT_SUPPORT.search(lines[0]) if lines else None
    return found.group(1) if found else None


def fill_missing_feature(test: dict) -> None:
    """Give a parsed test line (or results.json test entry) of an older harness its
    ``missing_feature``: for an UNSUPPORTED test, the feature its message names."""
    if not isinstance(test, dict) or "missing_feature" in test:
        return
    actual = test.get("actual") or test.get("outcome")
    message = test.get("message")
    test["missing_feature"] = (missing_feature(message) if actual == "UNSUPPORTED"
                               and isinstance(message, str) else None)
