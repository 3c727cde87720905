"""Every time limit in the project's tests is a limit on hangs (tests/hang.py), and no test
asserts how long something took: the verdict must not depend on how busy the machine is."""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
#: A literal limit below this many seconds is the limit under test (it must run out: what it
#: limits never ends, and the test checks that it was ended); anything longer is a hang limit.
LIMIT_UNDER_TEST = 10
CLOCKS = {"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns", "time_ns"}
WAITS = {"join", "wait", "communicate"}


def _reads_clock(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr in CLOCKS and isinstance(n.func.value, ast.Name)
               and n.func.value.id == "time" for n in ast.walk(node))


def _literal_seconds(node: ast.AST | None) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
            and not isinstance(node.value, bool):
        return float(node.value)
    return None


def problems(source: str, name: str) -> list[str]:
    """Wall-clock verdicts and literal hang limits in one test module's source."""
    tree = ast.parse(source)
    found = []
    timed = set()  # names bound to a clock reading or a difference of them
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _reads_clock(node.value):
            timed.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            for compare in (n for n in ast.walk(node.test) if isinstance(n, ast.Compare)):
                if any(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in compare.ops) and (
                        _reads_clock(compare) or any(isinstance(n, ast.Name) and n.id in timed
                                                     for n in ast.walk(compare))):
                    found.append(f"{name}:{node.lineno}: asserts a wall-clock duration; check the "
                                 f"outcome the limit gives instead (tests/hang.py)")
        if isinstance(node, ast.Call):
            limits = [k.value for k in node.keywords if k.arg in ("timeout", "timeout_s")]
            if isinstance(node.func, ast.Attribute) and node.func.attr in WAITS and node.args:
                limits.append(node.args[0])
            for limit in limits:
                seconds = _literal_seconds(limit)
                if seconds is not None and seconds >= LIMIT_UNDER_TEST:
                    found.append(f"{name}:{node.lineno}: a literal {seconds:g} s limit; a limit "
                                 f"on a hang is hang_limit(quiet seconds) (tests/hang.py)")
    return found


def test_no_test_asserts_wall_time_or_sizes_a_hang_limit_for_a_quiet_machine():
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        found += problems(path.read_text(encoding="utf-8"), str(path.relative_to(TESTS)))
    assert not found, "\n".join(found)


def test_the_check_can_fail():
    source = '''
import subprocess, time
def test_x(th):
    started = time.monotonic()
    subprocess.run(["x"], timeout=120)
    th.join(30)
    took = time.monotonic() - started
    assert took < 60
    assert time.perf_counter() - started < 5
    subprocess.run(["x"], timeout=hang_limit(30))
    th.join(2)
'''
    found = problems(source, "t.py")
    assert [f.split(":")[1] for f in found] == ["5", "6", "8", "9"] or \
        sorted(int(f.split(":")[1]) for f in found) == [5, 6, 8, 9], found


def test_a_hang_limit_lets_a_ten_times_slower_machine_pass():
    from tests.hang import MARGIN, SLOWER_MACHINE, hang_limit

    assert SLOWER_MACHINE == 10 and MARGIN >= 1
    assert hang_limit(60) >= 10 * 60 and hang_limit(0.1) >= 300
