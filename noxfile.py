"""nox sessions: the project's own tests, benchmarks, and the conformance runs per framework."""
from __future__ import annotations

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True

PYTHON = "3.11"


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The project's own tests: the reference engine and the harness."""
    session.install("-e", ".[test,torch]")
    session.run("pytest", "tests", "-p", "no:cacheprovider", *session.posargs)


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Benchmarks (pytest-benchmark): reference vs raw numpy vs torch."""
    session.install("-e", ".[test,torch]")
    session.run("pytest", "benchmarks", "--benchmark-only", *session.posargs)
