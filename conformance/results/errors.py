"""The one error every reader of results raises: the file, line and field, and what to do.

Why one class: every tool that reads results (the report, repro check, drafting expectations,
the noxfile, ``.ci/``) turns it into one line and exit status 4; a reader that raised
KeyError or TypeError on a bad line would print a traceback instead.
"""
from __future__ import annotations


class ResultsSchemaError(ValueError):
    """A results file this version cannot read; the message names the file, line, version or
    field, and says what to do."""
