"""Every prerequisite in the suites checks the behaviour it needs, not only that nothing raised
(issue 27: a write through a view that silently skipped the base passed its prerequisite and the
dependent rules diverged as cascades)."""
import ast
from pathlib import Path

SUITES = Path(__file__).resolve().parents[2] / "conformance" / "suites"


def _prerequisites_without_a_check(source: str) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.With):
            continue
        for item in node.items:
            call = item.context_expr
            if not (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "prerequisite"):
                continue
            if any(k.arg == "check" for k in call.keywords):
                continue
            name = item.optional_vars.id if isinstance(item.optional_vars, ast.Name) else None
            checked = name is not None and any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "check"
                and getattr(n.func.value, "id", None) == name
                for stmt in node.body for n in ast.walk(stmt))
            if not checked:
                lines.append(node.lineno)
    return lines


def test_every_prerequisite_in_the_suites_checks_its_behaviour():
    unchecked = {f"{path.name}:{line}" for path in sorted(SUITES.glob("*.py"))
                 for line in _prerequisites_without_a_check(path.read_text(encoding="utf-8"))}
    assert not unchecked, f"prerequisites that only catch exceptions: {sorted(unchecked)}"


def test_the_check_finds_a_prerequisite_that_only_catches_exceptions():
    only_raises = "with prerequisite('a.b'):\n    write()\n"
    checked = "with prerequisite('a.b') as pre:\n    write()\n    pre.check(ok(), 'written')\n"
    by_keyword = "with prerequisite('a.b', check=lambda: ok()):\n    write()\n"
    assert _prerequisites_without_a_check(only_raises) == [1]
    assert _prerequisites_without_a_check(checked) == []
    assert _prerequisites_without_a_check(by_keyword) == []
