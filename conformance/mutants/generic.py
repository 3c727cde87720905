"""Long mode: a generic mutation tool (mutmut 3) over ``reference/``, within a time budget.

mutmut writes every mutant of ``reference/`` into a copy of the sources (``mutants/``, each
function a trampoline to its variants), maps each function to the suite tests that call it, and
runs those tests against the reference adapter once per mutant. A full run takes hours on two
cores (about 6,200 mutants, 4,500 of them reached by some test, 2 to 5 s each), and mutmut takes
mutants in order of the estimated time of their tests, so a run stopped at a budget would score
only the functions with the fewest tests. Hence, in a scratch copy of the repository:

1. *prepare*: ``mutmut run`` generates the mutants and collects which tests reach which
   function, then stops (it is given a mutant name that matches none);
2. *check*, in stages: the reached mutants in a random order (seeded, recorded); each stage
   gives ``mutmut run`` by name the next ones that fit the time left, at the costs the stages
   before measured (the first takes a quarter of the time, to measure them); the last is
   stopped at the budget. Every prefix of a random order is a random sample, so the score
   estimates the share killed among all reached mutants (with a 95% interval).

The verdicts are read from mutmut's ``.meta`` files (mutant name -> exit code of the test run)
and scored: killed / checked, where a crash or a timeout counts as killed (the harness reports
both). A mutant in a function no suite test calls is *not reached* and counts apart, as does a
sampled mutant left unchecked at the budget. Each survivor is named with its change; one that
only changes a string constant (mostly an error message) is marked ``text``, since the suites
judge behaviour, not wording.
"""
from __future__ import annotations

import ast
import difflib
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MUTMUT = "mutmut==3.8.1"  # the version whose files this driver reads (pyproject's extra "mutants")
SETUP_CFG = """[mutmut]
source_paths=reference/
pytest_add_cli_args_test_selection=conformance/suites/
pytest_add_cli_args=
    --adapter=reference
    -p
    no:cacheprovider
also_copy=conformance/
    adapters/
use_git_change_detection=false
"""
NO_MATCH = "autograd-conformance-prepare-only"  # a mutant name that matches none: prepare, then stop
# mutmut's exit codes of a mutant's test run (mutmut/stats.py), grouped as this score counts them
KILLED = {1, 3}  # a test failed (3: pytest's internal error)
TIMEOUT = {24, -24, 36, 152, 255}  # the run went past its CPU time limit: a hang the harness reports
CRASH = {-11, -9, -6}  # the run died by a signal: a crash the harness reports
SURVIVED = {0}
NOT_REACHED = {5, 33}  # no test calls the function
# First guesses of the costs, corrected by what the stages measure: a mutant's fixed cost (fork,
# pytest's start and collection: about 1 to 4 s on the 2-core machine, with the load) and a
# stage's (mutmut's start, its clean run of the tests, its forced-failure check).
PER_MUTANT_S = 2.0
STAGE_S = 30.0
CALIBRATE = 0.25  # the first stage takes this share of the time left, to measure the costs
MIN_STAGE = 10  # fewer mutants than this are not worth a stage's own cost


def _mutmut() -> list[str] | None:
    """mutmut's command: $AUTOGRAD_CONFORMANCE_MUTMUT (a command line), else ``mutmut`` beside
    this Python or on PATH."""
    if os.environ.get("AUTOGRAD_CONFORMANCE_MUTMUT"):
        import shlex

        return shlex.split(os.environ["AUTOGRAD_CONFORMANCE_MUTMUT"])
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    exe = shutil.which("mutmut", path=path)
    return [exe] if exe else None


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("mutmut")
    except Exception:  # noqa: BLE001 - only for the record
        return "unknown"


def _run_until(cmd: list[str], cwd: Path, deadline: float) -> tuple[int | None, str]:
    """Run ``cmd`` in its own process group until it ends or ``deadline`` (monotonic) passes;
    (exit status or None when stopped, the tail of its output)."""
    env = {**os.environ, "PYTHONPATH": ""}
    env.pop("AUTOGRAD_CONFORMANCE_MUTANT", None)
    log = cwd / f"mutmut-{len(list(cwd.glob('mutmut-*.log')))}.log"
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            code = None
            for sig, grace in ((signal.SIGINT, 15), (signal.SIGTERM, 5), (signal.SIGKILL, 5)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
    text = log.read_text(encoding="utf-8", errors="replace").replace("\r", "\n")
    lines = [line for line in text.splitlines() if line.strip() and "⠋" not in line
             and not any(c in line for c in "⠙⠹⠸⠼⠴⠦⠧⠇⠏")]
    return code, "\n".join(lines[-12:])


def read_meta(work: Path) -> dict[str, int | None]:
    """Every mutant mutmut generated in ``work`` -> its exit code (None: not checked)."""
    codes: dict[str, int | None] = {}
    mutants = work / "mutants"
    for meta in sorted(mutants.rglob("*.meta")) if mutants.is_dir() else ():
        try:
            codes.update(json.loads(meta.read_text(encoding="utf-8")).get("exit_code_by_key", {}))
        except (OSError, ValueError, AttributeError):
            continue
    return codes


def read_stats(work: Path) -> tuple[dict[str, list[str]], dict[str, float]]:
    """mutmut's map function -> the tests that call it, and test -> its duration."""
    try:
        stats = json.loads((work / "mutants" / "mutmut-stats.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}, {}
    return stats.get("tests_by_mangled_function_name", {}), stats.get("duration_by_test", {})


def function_of(mutant: str) -> str:
    """``reference.tensor.xǁTensorǁdetach___mutmut_2`` -> ``reference.tensor.xǁTensorǁdetach_``."""
    return mutant.partition("__mutmut_")[0]


def readable(function: str) -> str:
    """mutmut's mangled function name as Python spells it: ``reference.tensor.Tensor.detach_``."""
    module, _, name = function.rpartition(".")
    if name.startswith("xǁ"):
        name = name[2:].replace("ǁ", ".")
    elif name.startswith("x_"):
        name = name[2:]
    return f"{module}.{name}"


def tests_time(mutant: str, tests_by_function: dict, duration: dict) -> float:
    """The recorded time of the tests that call the mutant's function."""
    return sum(duration.get(t, 0.0) for t in tests_by_function.get(function_of(mutant), ()))


def estimate(mutant: str, tests_by_function: dict, duration: dict, scale: float = 1.0) -> float:
    """Seconds one worker spends on ``mutant``: a fixed cost plus its tests' recorded time, times
    ``scale`` (what the stages measured against this estimate: the machine's load, and tests that
    ran slower when mutmut recorded them)."""
    return scale * (PER_MUTANT_S + tests_time(mutant, tests_by_function, duration))


def shuffled(reached, seed: int) -> list[str]:
    """The reached mutants in a random order fixed by ``seed``: every prefix is a random sample."""
    order = sorted(reached)
    random.Random(seed).shuffle(order)
    return order


def choose(order: list[str], tests_by_function: dict, duration: dict, seconds: float, jobs: int,
           scale: float = 1.0) -> list[str]:
    """The longest prefix of ``order`` whose estimated time on ``jobs`` workers fits ``seconds``."""
    chosen, spent = [], 0.0
    for mutant in order:
        cost = estimate(mutant, tests_by_function, duration, scale) / jobs
        if spent + cost > seconds:
            break
        chosen.append(mutant)
        spent += cost
    return chosen


def read_durations(work: Path) -> dict[str, float]:
    """Each checked mutant's measured seconds (mutmut's ``durations_by_key``)."""
    found: dict[str, float] = {}
    mutants = work / "mutants"
    for meta in sorted(mutants.rglob("*.meta")) if mutants.is_dir() else ():
        try:
            found.update(json.loads(meta.read_text(encoding="utf-8")).get("durations_by_key", {}))
        except (OSError, ValueError, AttributeError):
            continue
    return found


def _function_sources(path: Path) -> dict[str, ast.AST]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {}
    return {node.name: node for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "__mutmut_" in node.name}


def _blank_text(node: ast.AST) -> str:
    """The function with every string constant emptied: equal for two functions that differ in text only."""
    class Blank(ast.NodeTransformer):
        def visit_Constant(self, c):  # noqa: N802 - ast's naming
            return ast.copy_location(ast.Constant(""), c) if isinstance(c.value, str) else c

        def visit_FunctionDef(self, f):  # noqa: N802
            f = self.generic_visit(f)
            f.name = "f"
            return f

    return ast.dump(Blank().visit(ast.parse(ast.unparse(node))))


def _short(line: str, width: int = 160) -> str:
    return line if len(line) <= width else line[:width] + "…"


def describe(work: Path, mutants: list[str]) -> dict[str, dict]:
    """Each mutant's change: ``-``/``+`` lines against the original function, and whether it
    changes text only (a string constant such as an error message)."""
    by_file: dict[Path, list[str]] = {}
    for mutant in mutants:
        module = function_of(mutant).rpartition(".")[0]
        rel = Path(*module.split("."))
        path = work / "mutants" / (str(rel) + ".py")
        if not path.is_file():
            path = work / "mutants" / rel / "__init__.py"
        by_file.setdefault(path, []).append(mutant)
    found = {}
    for path, names in by_file.items():
        functions = _function_sources(path)
        for mutant in names:
            local = mutant.rpartition(".")[2]
            orig = functions.get(local.partition("__mutmut_")[0] + "__mutmut_orig")
            variant = functions.get(local)
            if orig is None or variant is None:
                found[mutant] = {"change": None, "kind": "unknown"}
                continue
            a, b = ast.unparse(orig).splitlines()[1:], ast.unparse(variant).splitlines()[1:]
            change = [line for line in difflib.unified_diff(a, b, lineterm="", n=0)
                      if line[:1] in "+-" and not line.startswith(("+++", "---"))]
            kind = "text" if _blank_text(orig) == _blank_text(variant) else "behaviour"
            found[mutant] = {"change": [_short(c[0] + c[1:].strip()) for c in change][:4],
                             "kind": kind}
    return found


def wilson(killed: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """95% interval of the share killed among all reached mutants, from a random sample."""
    if not n:
        return None
    p = killed / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)


def summarize(codes: dict[str, int | None], sample: list[str], tests_by_function: dict,
              changes: dict | None = None) -> dict:
    """The counts and score of a long-mode run from mutmut's verdicts (``read_meta``)."""
    generated = len(codes)
    reached = [m for m in codes if tests_by_function.get(function_of(m)) and codes[m] not in NOT_REACHED]
    reached_set = set(reached)
    checked = {m: codes.get(m) for m in sample if codes.get(m) is not None}
    killed = sorted(m for m, c in checked.items() if c in KILLED)
    timeout = sorted(m for m, c in checked.items() if c in TIMEOUT)
    crash = sorted(m for m, c in checked.items() if c in CRASH)
    survived = sorted(m for m, c in checked.items() if c in SURVIVED)
    other = sorted(m for m, c in checked.items() if c not in KILLED | TIMEOUT | CRASH | SURVIVED)
    detected = len(killed) + len(timeout) + len(crash)
    scored = detected + len(survived)
    changes = changes or {}
    survivors = [{"mutant": m, "function": readable(function_of(m)), **changes.get(m, {})}
                 for m in survived]
    by_function: dict[str, int] = {}
    for s in survivors:
        by_function[s["function"]] = by_function.get(s["function"], 0) + 1
    text_only = sum(1 for s in survivors if s.get("kind") == "text")
    unreached: dict[str, int] = {}
    for m in codes:
        if m not in reached_set:
            unreached[readable(function_of(m))] = unreached.get(readable(function_of(m)), 0) + 1
    return {
        "generated": generated, "reached": len(reached), "not_reached": generated - len(reached),
        "sampled": len(sample), "checked": scored, "killed": detected,
        "killed_by_test": len(killed), "timeout": len(timeout), "crash": len(crash),
        "survived": len(survived), "survived_text_only": text_only,
        "suspicious": len(other), "not_checked": len(sample) - len(checked),
        "score": round(detected / scored, 4) if scored else None,
        "score_interval_95": wilson(detected, scored),
        "score_behaviour": (round(detected / (scored - text_only), 4) if scored - text_only else None),
        "survivors_by_function": dict(sorted(by_function.items(), key=lambda kv: (-kv[1], kv[0]))),
        "not_reached_by_function": dict(sorted(unreached.items(), key=lambda kv: (-kv[1], kv[0]))[:30]),
        "survivors": survivors,
    }


def summary_line(result: dict) -> str:
    if not result.get("checked"):
        return f"no mutant checked within {result.get('budget_s')} s ({result.get('status')})"
    low, high = result.get("score_interval_95") or (None, None)
    interval = f", 95% interval {low:.0%}-{high:.0%} of the {result['reached']} reached" \
        if low is not None and result["sampled"] < result["reached"] else ""
    return (f"{result['killed']}/{result['checked']} killed ({result['score']:.1%}{interval}) in a random "
            f"sample of {result['sampled']} of {result['generated']} generated mutants "
            f"({result['not_reached']} in code no suite test calls; {result['survived_text_only']} of the "
            f"{result['survived']} survivors change only text; {result['not_checked']} sampled left "
            f"unchecked at the {result['budget_s']} s budget)")


def run(budget: int, keep: Path | None = None, jobs: int = 2, seed: int | None = None) -> dict:
    """Run mutmut over reference/ for at most ``budget`` seconds; its counts and score."""
    cmd = _mutmut()
    if cmd is None:
        return {"tool": "mutmut", "status": "unavailable", "budget_s": budget,
                "summary": f"mutmut is not installed (pip install -e '.[mutants]', i.e. {MUTMUT}; "
                           "nox -s mutants -- --long installs it)"}
    seed = random.SystemRandom().randrange(1 << 30) if seed is None else seed
    started = time.monotonic()
    deadline = started + budget
    work = Path(tempfile.mkdtemp(prefix="mutmut-")) if keep is None else Path(keep)
    result = {"tool": "mutmut", "version": _version(), "budget_s": budget, "jobs": jobs, "seed": seed}
    try:
        work.mkdir(parents=True, exist_ok=True)
        for name in ("reference", "conformance", "adapters"):
            shutil.rmtree(work / name, ignore_errors=True)
            shutil.copytree(ROOT / name, work / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        (work / "setup.cfg").write_text(SETUP_CFG)
        shutil.copy2(ROOT / "pyproject.toml", work / "pyproject.toml")  # pytest's settings, no [tool.mutmut]

        code, tail = _run_until([*cmd, "run", "--max-children", str(jobs), NO_MATCH], work, deadline)
        result["prepare_s"] = round(time.monotonic() - started, 1)
        codes = read_meta(work)
        tests_by_function, duration = read_stats(work)
        if not codes or not tests_by_function:
            why = "the budget ran out" if code is None else f"mutmut exited {code}"
            return {**result, "status": "failed to prepare", "seconds": round(time.monotonic() - started, 1),
                    "summary": f"mutmut generated {len(codes)} mutants but mapped no test ({why})",
                    "detail": tail[-1500:]}

        reached = [m for m in codes if tests_by_function.get(function_of(m))]
        check_started = time.monotonic()
        order, pos, stages = shuffled(reached, seed), 0, []
        scale, stage_cost, finished = 1.0, STAGE_S, True
        measured_all: list[tuple[float, float]] = []  # (seconds measured, tests' recorded time)
        overheads: list[float] = []
        while pos < len(order):
            left = deadline - time.monotonic() - stage_cost
            pick = choose(order[pos:], tests_by_function, duration,
                          left * (CALIBRATE if not stages else 1.0), jobs, scale)
            if len(pick) < min(MIN_STAGE, len(order) - pos):
                break  # too little time left for a stage to be worth its own cost
            stage_started = time.monotonic()
            code, tail = _run_until([*cmd, "run", "--max-children", str(jobs), *pick], work, deadline)
            wall = time.monotonic() - stage_started
            pos += len(pick)
            measured = read_durations(work)
            got = [(measured[m], tests_time(m, tests_by_function, duration)) for m in pick if m in measured]
            stages.append({"sampled": len(pick), "checked": len(got), "seconds": round(wall, 1),
                           "scale": round(scale, 3)})
            if code is None:  # stopped at the budget
                finished = False
                break
            if got:  # what a mutant and a stage really cost here, now (all stages so far)
                measured_all += got
                overheads.append(wall - sum(a for a, _ in got) / jobs)
                scale = max(0.05, sum(a for a, _ in measured_all)
                            / sum(PER_MUTANT_S + e for _, e in measured_all))
                stage_cost = max(5.0, sum(overheads) / len(overheads))
        sample = order[:pos]
        result["check_s"] = round(time.monotonic() - check_started, 1)
        result["stages"] = stages
        codes = read_meta(work)
        survived = [m for m in sample if codes.get(m) in SURVIVED]
        result.update(summarize(codes, sample, tests_by_function, describe(work, survived)))
        result["seconds"] = round(time.monotonic() - started, 1)
        result["status"] = ("budget too small to check a mutant" if not stages
                            else "all reached mutants checked" if finished and len(sample) == len(reached)
                            else "sample checked" if finished and not result["not_checked"]
                            else "budget reached")
        if not result["checked"]:
            result["detail"] = tail[-1500:]
        result["summary"] = summary_line(result)
        return result
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
