"""The environment of a child interpreter that must import this project (and the adapter).

Seven places started one (the plugin's fresh-interpreter helper, the isolation probe, the
witnesses, the mutants tool, the torch-tests runner, the differential worker and the fuzzer, the
noxfile's history sessions) and built its ``PYTHONPATH`` four ways; one dropped the inherited
value, another the checkout. One recipe now, in this order:

- this interpreter's ``sys.path``, only where the child *is* this interpreter
  (``same_interpreter``): an adapter found through it (a ``package.module:Class`` spec next to
  the current directory, a ``--user`` site) is found again. Another interpreter (an older
  Python for an older framework release) must not get this one's standard library;
- the directory this package was imported from (the checkout, or site-packages when installed);
- ``first``: what the caller adds (the differential worker: the current directory);
- the inherited ``PYTHONPATH``.

Relative entries are made absolute (the child may start in another directory), empty ones and
repeats dropped. Standard library only: the noxfile imports it in a bare Python.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

#: the directory ``conformance`` is imported from
ROOT = Path(__file__).resolve().parents[1]


def pythonpath(*first: str | os.PathLike, same_interpreter: bool = False,
               inherited: str | None = None) -> str:
    """The child's ``PYTHONPATH`` (module docstring). ``inherited``: default this process's."""
    if inherited is None:
        inherited = os.environ.get("PYTHONPATH", "")
    # "" on sys.path is this process's current directory; in PYTHONPATH, the child's
    here = [p or os.getcwd() for p in sys.path] if same_interpreter else []
    entries = [*here, ROOT, *first, *inherited.split(os.pathsep)]
    found: list[str] = []
    for entry in entries:
        entry = os.path.abspath(entry) if str(entry) else ""
        if entry and entry not in found:
            found.append(entry)
    return os.pathsep.join(found)


def environment(*first: str | os.PathLike, same_interpreter: bool = False,
                base: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of ``base`` (default ``os.environ``) with :func:`pythonpath` set."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = pythonpath(*first, same_interpreter=same_interpreter,
                                   inherited=env.get("PYTHONPATH", ""))
    return env
