"""Long mode: a generic mutation tool (mutmut 3) over ``reference/``, within a time budget.

mutmut writes its mutants into a copy of the sources (``mutants/``) and runs the conformance
suites against the reference adapter for each, as the curated run does; it has no time budget of
its own, so it runs in a scratch copy of the repository and is stopped at the budget. What it
checked by then is read from its ``.meta`` files (mutant name -> pytest exit code) and scored:
killed / (killed + survived + timeout). The score covers only the mutants checked, which the
result says.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETUP_CFG = """[mutmut]
source_paths=reference/
pytest_add_cli_args_test_selection=conformance/suites/
pytest_add_cli_args=
    --adapter=reference
    -p
    no:cacheprovider
also_copy=conformance/
    adapters/
"""
KILLED = {1, 3}  # mutmut: a failing test run (3: pytest internal error) kills the mutant
SURVIVED = {0}
TIMEOUT = {36, 24, -24, 152}


def _mutmut() -> list[str] | None:
    exe = shutil.which("mutmut", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    return [exe] if exe else None


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("mutmut")
    except Exception:  # noqa: BLE001 - only for the record
        return "unknown"


def run(budget: int, keep: Path | None = None) -> dict:
    """Run mutmut over reference/ for at most ``budget`` seconds; its counts and score."""
    cmd = _mutmut()
    if cmd is None:
        return {"tool": "mutmut", "status": "unavailable",
                "summary": "mutmut is not installed (nox -s mutants -- --long installs it)"}
    work = Path(tempfile.mkdtemp(prefix="mutmut-")) if keep is None else keep
    try:
        for name in ("reference", "conformance", "adapters"):
            shutil.copytree(ROOT / name, work / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for name in ("pyproject.toml",):
            if (ROOT / name).is_file():
                shutil.copy2(ROOT / name, work / name)
        (work / "setup.cfg").write_text(SETUP_CFG)
        env = {**os.environ, "PYTHONPATH": ""}
        env.pop("AUTOGRAD_CONFORMANCE_MUTANT", None)
        started = time.monotonic()
        proc = subprocess.Popen([*cmd, "run", "--max-children", "2"], cwd=work, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        try:
            _, err = proc.communicate(timeout=budget)
            finished = True
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                _, err = proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                _, err = proc.communicate()
            finished = False
        elapsed = round(time.monotonic() - started, 1)
        codes = []
        for meta in (work / "mutants").rglob("*.meta") if (work / "mutants").is_dir() else ():
            try:
                codes += list(json.loads(meta.read_text()).get("exit_code_by_key", {}).values())
            except (OSError, ValueError):
                continue
        killed = sum(1 for c in codes if c in KILLED)
        survived = sum(1 for c in codes if c in SURVIVED)
        timeout = sum(1 for c in codes if c in TIMEOUT)
        checked = killed + survived + timeout
        result = {"tool": "mutmut", "version": _version(), "status": "done" if finished else "budget reached",
                  "budget_s": budget, "seconds": elapsed, "generated": len(codes), "checked": checked,
                  "killed": killed, "survived": survived, "timeout": timeout,
                  "score": round((killed + timeout) / checked, 4) if checked else None}
        if not codes:
            result["status"] = "no mutants checked"
            result["detail"] = (err or "")[-600:]
        result["summary"] = (
            f"{killed + timeout}/{checked} killed ({result['score']:.1%}) of {len(codes)} generated, "
            f"{'all checked' if finished else f'stopped at the {budget} s budget'}"
            if checked else f"no mutant checked within {budget} s ({result['status']})")
        return result
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
