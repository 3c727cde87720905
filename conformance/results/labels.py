"""A column's label: the name of its results file without ``.jsonl``, checked where results
files are read.

Why checked: the label is printed to the terminal, names ``junit/<label>.xml`` and
``<label>.status.json``, heads the page's column and keys ``results.json``'s runs; taken
unchecked from file names, an escape sequence or a newline in a name was printed raw to the
terminal and went into JUnit file names, and a file named ``.jsonl`` made a phantom column.
A label is what ``--column LABEL=...`` accepts: letters, digits and ``. _ + -``, starting with
a letter or digit.
"""
from __future__ import annotations

import re
from pathlib import Path

from conformance.results.errors import ResultsSchemaError

#: A column label (a results file's name without ``.jsonl``).
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
#: The results files' suffix.
SUFFIX = ".jsonl"
#: What the messages say a label may hold.
ALLOWED = "letters, digits and . _ + -, starting with a letter or digit"


def is_label(text: object) -> bool:
    return isinstance(text, str) and LABEL.fullmatch(text) is not None


def label_of(path: Path) -> str:
    """The label of the results file ``path`` (its name without ``.jsonl``); a name that
    makes no label is a :class:`ResultsSchemaError` naming the file (escaped: never a raw
    control character on the terminal) and what to rename it to."""
    path = Path(path)
    name = path.name
    label = name[:-len(SUFFIX)] if name.endswith(SUFFIX) else path.stem
    if is_label(label):
        return label
    shown = ascii(name)  # an escape sequence or newline in the name, written as \x1b, \n
    suggestion = re.sub(r"[^A-Za-z0-9._+-]+", "-", label).strip(".-_+") or "my-run"
    raise ResultsSchemaError(f"{ascii(str(path))[1:-1]}: the name {shown} makes no column "
                             f"label ({ALLOWED}); rename the file (e.g. to {suggestion}{SUFFIX}) "
                             f"or move it out of the results directory")
