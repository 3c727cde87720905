"""No module of the harness or the adapters reaches a private (``_name``) attribute of another.

Why: a leading underscore says "this module may change it without telling anyone"; a reach from
outside turns that into a hidden contract (``repro/runtime.py`` once called
``timeout._arm_alarm`` and copied its grace formula; ``options.py`` read ``adapters.base._BUILTIN``).
What the other module needs gets a public name instead. Found statically: ``from m import _x``
and ``name._x`` / ``name.attr._x`` where ``name`` was imported from a project module.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ("conformance", "adapters", "reference")
SCANNED = ("conformance", "adapters")
#: (reaching module, reached dotted name prefix) pairs that stay, and why.
ALLOWED = {
    # planted bugs: a mutant is a patch of the reference engine's internals by design
    ("conformance.mutants", "reference."),
}
#: Reaches that are still to be given a public name (none left: issue 23 named the last two,
#: ``aggregate.version_key`` and ``repro.source``); an entry here is a debt, not a license.
KNOWN: set[tuple[str, str]] = set()


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_reaches(path: Path, root: Path = ROOT) -> list[tuple[str, int, str]]:
    """(module, line, reached dotted name) for each reach of ``path``'s module into another
    project module's private attribute."""
    me = _module_name(path, root)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported: dict[str, str] = {}  # local name -> dotted name of what it is bound to
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] in PROJECT:
            for alias in node.names:
                if _private(alias.name) and node.module != me:
                    found.append((me, node.lineno, f"{node.module}.{alias.name}"))
                imported[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PROJECT:
                    local = alias.asname or alias.name.split(".")[0]
                    imported[local] = alias.name if alias.asname else local
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _private(node.attr)):
            continue
        chain, value = [], node.value
        while isinstance(value, ast.Attribute):
            chain.append(value.attr)
            value = value.value
        if isinstance(value, ast.Name) and value.id in imported:
            owner = ".".join([imported[value.id], *reversed(chain)])
            if owner != me:
                found.append((me, node.lineno, f"{owner}.{node.attr}"))
    return found


def _all_reaches():
    return [reach for top in SCANNED for path in sorted((ROOT / top).rglob("*.py"))
            for reach in private_reaches(path)]


def _allowed(module: str, reached: str) -> bool:
    return any(module.startswith(who) and reached.startswith(what) for who, what in ALLOWED)


def test_no_module_reaches_a_private_attribute_of_another():
    bad = [r for r in _all_reaches() if not _allowed(r[0], r[2]) and (r[0], r[2]) not in KNOWN]
    assert not bad, "private reaches (give the name a public one in its module and use that): " + "; ".join(
        f"{module}:{line} uses {reached}" for module, line, reached in bad)


def test_every_known_reach_is_still_there():
    found = {(module, reached) for module, _, reached in _all_reaches()}
    gone = KNOWN - found
    assert not gone, f"{sorted(gone)} no longer reach a private name: delete them from KNOWN"


def test_the_scan_finds_each_kind_of_reach(tmp_path):
    package = tmp_path / "conformance"
    package.mkdir()
    module = package / "example.py"
    module.write_text("from conformance.timeout import _arm_alarm\n"
                      "from conformance import timeout\n"
                      "import adapters.base\n"
                      "timeout._arm_alarm(1, 1)\n"
                      "adapters.base._BUILTIN\n"
                      "timeout.arm_alarm(1)\n", encoding="utf-8")
    reached = sorted(r[2] for r in private_reaches(module, tmp_path))
    assert reached == ["adapters.base._BUILTIN", "conformance.timeout._arm_alarm",
                       "conformance.timeout._arm_alarm"]
