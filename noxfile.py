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


# -- conformance runs: one session per framework (version), results in reports/results/ ----
ONEFLOW_PYTHON = "3.10"  # OneFlow publishes no wheels for newer Pythons
ONEFLOW = {
    "0.9.0": ["oneflow==0.9.0", "numpy<2"],
    "0.8.0": ["oneflow==0.8.0", "numpy<1.24"],
}
ONEFLOW_CUDA_LIBRARIES = ["nvidia-cudnn-cu11==8.5.0.96", "nvidia-cublas-cu11==11.10.3.66"]
# -n 1: a worker of pytest-xdist runs the tests, so a segfault is one CRASH, not the end.
CONFORMANCE_ARGS = ["-p", "no:cacheprovider", "-n", "1", "conformance/suites"]


def _conformance(session: nox.Session, adapter: str, label: str) -> None:
    results = f"reports/results/{label}.jsonl"
    session.run("pytest", f"--adapter={adapter}", f"--results={results}", *CONFORMANCE_ARGS,
                *session.posargs)


@nox.session(name="conformance-reference", python=PYTHON)
def conformance_reference(session: nox.Session) -> None:
    """The suites against the reference engine (every rule must hold)."""
    session.install("-e", ".[test]")
    _conformance(session, "reference", "reference")


@nox.session(name="conformance-torch", python=PYTHON)
def conformance_torch(session: nox.Session) -> None:
    """The suites against PyTorch 2.13.0 (CPU wheel)."""
    session.install("-e", ".[test,torch]")
    _conformance(session, "torch", "torch")


@nox.session(name="conformance-oneflow", python=ONEFLOW_PYTHON)
@nox.parametrize("oneflow", list(ONEFLOW), ids=list(ONEFLOW))
def conformance_oneflow(session: nox.Session, oneflow: str) -> None:
    """The suites against OneFlow 0.9.0 and 0.8.0 (Python 3.10)."""
    session.install(*ONEFLOW[oneflow], *ONEFLOW_CUDA_LIBRARIES)
    session.install("-e", ".[test]")
    _conformance(session, "oneflow", f"oneflow-{oneflow}")


# -- differential testing (docs/differential.md) ---------------------------------------------
@nox.session(python=PYTHON)
def explore(session: nox.Session) -> None:
    """Long random differential search against the reference; findings go to
    reports/results/explore-<adapter>.jsonl.

    nox -s explore -- --adapter torch --examples 5000
    nox -s explore -- --adapter oneflow --python /opt/of09/bin/python --examples 2000
    (any option of `python -m conformance.differential --help`; default 2000 examples)
    """
    session.install("-e", ".[test,torch]")
    args = list(session.posargs)
    if "--examples" not in args:
        args += ["--examples", "2000"]
    session.run("python", "-m", "conformance.differential", *args, success_codes=[0, 1])
