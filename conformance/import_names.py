"""Which installed distributions claim the import names this project installs.

Why: the layout the project's design asks for puts three top-level import packages in the wheel,
``adapters``, ``conformance`` and ``reference``, and other distributions use the same names
(AdapterHub's ``adapters``; packages named ``reference`` and ``conformance`` exist too). pip
lets the later install overwrite the earlier one's files and ``pip check`` says nothing: ``import
adapters.base`` then runs the other package's ``__init__`` (AdapterHub's loads transformers), a
reinstall breaks the other package, an uninstall deletes our ``__init__.py``. A collision is
therefore found at start-up, from the installed distributions' metadata, and said in one line
that names the other distribution and what to do (exit 4), never left to surface as a strange
import error later.
"""
from __future__ import annotations

import re
from importlib import metadata

#: the distribution this checkout or wheel is
OURS = "autograd-conformance"
#: the top-level import packages it installs (pyproject.toml, [tool.setuptools.packages.find])
IMPORT_NAMES = ("adapters", "conformance", "reference")

_IN_RECORD = re.compile(r"^(%s)(?:/|\.py,)" % "|".join(IMPORT_NAMES), re.M)


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _claimed(dist: metadata.Distribution) -> set[str]:
    """The import names of ours that ``dist`` installs: its ``top_level.txt`` where it has
    one (setuptools writes it), else the top-level entries of its ``RECORD`` (other build
    back ends)."""
    top = dist.read_text("top_level.txt")
    if top is not None:
        return {line.strip() for line in top.splitlines()} & set(IMPORT_NAMES)
    return set(_IN_RECORD.findall(dist.read_text("RECORD") or ""))


def foreign_owners(distributions=None) -> dict[str, list[str]]:
    """``{import name: [other distributions that install it]}`` for each of our import names
    another installed distribution claims (empty: no collision). ``distributions`` defaults to
    every distribution on ``sys.path``."""
    found: dict[str, list[str]] = {}
    for dist in metadata.distributions() if distributions is None else distributions:
        claimed = _claimed(dist)
        if not claimed:
            continue
        name = dist.metadata["Name"] or "?"
        if _normalized(name) == OURS:
            continue
        for import_name in sorted(claimed):
            found.setdefault(import_name, [])
            if name not in found[import_name]:
                found[import_name].append(name)
    return found


def collision_problem(distributions=None) -> str | None:
    """One line saying which other distribution owns one of our import names and what to do,
    or None."""
    owners = foreign_owners(distributions)
    if not owners:
        return None
    clashes = "; ".join(f"'{name}' is also installed by {', '.join(sorted(dists))}"
                        for name, dists in sorted(owners.items()))
    others = sorted({d for dists in owners.values() for d in dists})
    return (f"import name collision: {clashes}; both packages write the same files, so either "
            f"may run the other's code. Install autograd-conformance in its own virtual "
            f"environment (python -m venv), or pip uninstall {' '.join(others)} here and then "
            f"reinstall autograd-conformance")
