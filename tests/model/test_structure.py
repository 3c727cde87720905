"""The model package is the only reader of declaration files, the expectations file is read once
per run, and the project's modules import without a circle and without an arrow from the
declared model up into the tools that read it (issue 32): AST scans of the harness, each shown
to catch a planted violation."""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "conformance" / "model"

#: TOML parses outside the model, each of a document that is no declaration, said why.
OTHER_DOCUMENTS = {
    "conformance/tomlfile.py": "the one TOML reader itself (every error names the file)",
    "conformance/history/render.py": "a framework's upstream.toml: the history page's changelog",
    "conformance/torchtests/selection.py": "the torchtests selection files: which torch tests run",
}


def project_files() -> list[Path]:
    """The project's own code: conformance/, adapters/, reference/, the noxfile, .ci/."""
    return [*(ROOT / "conformance").rglob("*.py"), *(ROOT / "adapters").rglob("*.py"),
            *(ROOT / "reference").rglob("*.py"), ROOT / "noxfile.py", *(ROOT / ".ci").glob("*.py")]


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


# -- no parse of a declaration file outside the model ----------------------------------------------
def toml_parses(source: str, where: str = "<planted>") -> list[str]:
    """``file:line`` of every TOML parse in ``source``: ``read_toml(...)`` and
    ``tomllib``/``tomli`` ``.load``/``.loads``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "read_toml":
            found.append(f"{where}:{node.lineno}: read_toml")
        elif isinstance(func, ast.Attribute) and func.attr in ("read_toml", "load", "loads") \
                and isinstance(func.value, ast.Name) \
                and (func.attr == "read_toml" or func.value.id in ("tomllib", "tomli", "toml")):
            found.append(f"{where}:{node.lineno}: {func.value.id}.{func.attr}")
    return found


def test_no_module_outside_the_model_parses_a_declaration_file():
    hits = [hit for path in project_files() if MODEL not in path.parents
            and _rel(path) not in OTHER_DOCUMENTS
            for hit in toml_parses(path.read_text(encoding="utf-8"), _rel(path))]
    assert hits == [], ("read declarations (catalogue, features.toml, expectations, evidence, "
                        "reference scope) through conformance.model:\n" + "\n".join(hits))


@pytest.mark.parametrize("planted", [
    "data = read_toml(path)", "data = tomllib.loads(path.read_text())",
    "data = tomli.load(fh)", "data = tomlfile.read_toml(path, Error)",
])
def test_the_scan_catches_a_planted_parse(planted):
    assert toml_parses(planted + "\n")


def test_the_listed_other_documents_still_parse_toml():
    """An entry of OTHER_DOCUMENTS whose parse is gone is dropped, not kept as a hole."""
    for where in OTHER_DOCUMENTS:
        assert toml_parses((ROOT / where).read_text(encoding="utf-8"), where), where


def test_the_model_parses_each_declaration_file_kind():
    parsing = {_rel(p) for p in MODEL.glob("*.py") if toml_parses(p.read_text(encoding="utf-8"))}
    assert parsing == {f"conformance/model/{m}.py" for m in
                       ("catalogue", "features", "expectations", "evidence", "reference_scope")}


# -- the import graph --------------------------------------------------------------------------------
def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, known: set[str]) -> set[str]:
    """The project modules ``path`` imports anywhere in it (a function's lazy import too):
    ``from package import name`` is the module ``package.name`` where that is one."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                       for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def graph() -> dict[str, set[str]]:
    """module -> the project modules it imports; an import of an enclosing package (its
    ``__init__``: the package's face, such as the mutants catalogue registering with
    ``conformance.mutants``) is no arrow between modules."""
    files = [p for p in project_files() if p.is_file()]
    known = {module_name(p) for p in files}
    return {module_name(p): {t for t in imports(p, known)
                             if not module_name(p).startswith(t + ".")} for p in files}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_among_the_projects_modules():
    found = circles(graph())
    assert found == [], "modules that import each other (lazily too):\n" + "\n".join(
        " <-> ".join(c) for c in found)


def test_the_circle_check_catches_a_planted_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


#: What the declared model may import of the project: the layers below it.
BELOW_THE_MODEL = ("conformance.model", "conformance.results", "conformance.outcomes",
                   "conformance.outcome_exceptions", "conformance.tomlfile", "conformance.cli",
                   "conformance.outputs")


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Arrows that run up: from the declared model into anything but the layers below it,
    from the results package into the model (results sit below it)."""
    out = []
    for source, targets in sorted(edges.items()):
        for target in sorted(targets):
            if source.startswith("conformance.model") and not target.startswith(BELOW_THE_MODEL):
                out.append(f"{source} -> {target}")
            if source.startswith("conformance.results") and target.startswith("conformance.model"):
                out.append(f"{source} -> {target}")
    return out


def test_no_upward_arrow_from_the_declared_model():
    """The declared side is read by the plugin, the report, the repro scripts, the witnesses
    and the differential tester; it imports none of them (suite_index once imported the
    reproduction scripts' source reader: now the model's own suite_source)."""
    found = upward(graph())
    assert found == [], "\n".join(found)
    assert upward({"conformance.model.suite_index": {"conformance.repro.source"}}) == [
        "conformance.model.suite_index -> conformance.repro.source"]
    assert upward({"conformance.results.cells": {"conformance.model.causes"}})


def test_the_models_map_names_each_of_its_modules():
    """``conformance/model/__init__.py`` is a map, one entry per module."""
    text = (MODEL / "__init__.py").read_text(encoding="utf-8")
    for path in MODEL.glob("*.py"):
        if path.name != "__init__.py":
            assert f":mod:`~conformance.model.{path.stem}`" in text, path.stem


@pytest.mark.parametrize("old, new", [
    ("conformance.rules", "conformance.model.catalogue"),
    ("conformance.features", "conformance.model.features"),
    ("conformance.expectations", "conformance.model.expectations"),
    ("conformance.reference_scope", "conformance.model.reference_scope"),
    ("conformance.suite_index", "conformance.model.suite_index"),
    ("conformance.repro.source", "conformance.model.suite_source"),
])
def test_the_old_paths_are_the_moved_modules(old, new):
    """Suites, older reproduction scripts and third-party adapters import the old names: each
    is the moved module itself (its private names and monkeypatching included)."""
    import importlib

    assert importlib.import_module(old) is importlib.import_module(new)


# -- the expectations file is read once per run -----------------------------------------------------
_RUN = """
import json, sys
import pytest
from conformance.model import expectations
code = pytest.main(sys.argv[1:])
print("READS=" + json.dumps({k: v for k, v in expectations.READS.items()}))
"""


def test_a_run_reads_its_expectations_file_once(tmp_path):
    """The plugin (the expectations it judges by, the header's coverage note, the terminal's
    header line) and the witnesses all take the run's one parsed file."""
    path = tmp_path / "mine.toml"
    path.write_text('written_for = ["9.9.*"]\n\n["views.is-view-and-base"]\noutcome = "DIVERGES"\n'
                    'reason = "never, on this version"\nroot_cause = "never"\n'
                    'versions = ["0.0.1"]\nwitness = "print(1)"\n', encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-c", _RUN, "conformance/suites/test_views.py", "--adapter=reference",
         f"--expectations={path}", f"--results={tmp_path / 'r.jsonl'}", "-q",
         "-p", "no:cacheprovider", "-p", "no:xdist",
         "--in-process"],  # the reads are counted in this process, not a supervised child's
        cwd=ROOT, capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=hang_limit(20))
    found = re.search(r"^READS=(.*)$", proc.stdout, re.M)
    assert found, proc.stdout[-2000:] + proc.stderr[-2000:]
    reads = json.loads(found.group(1))
    assert reads == {str(path.resolve()): 1}, reads
    header = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])
    assert "no expectation entry was written for version" in header["expectations_note"]


def test_reading_a_file_again_parses_it_only_when_it_changed(tmp_path):
    from conformance.model import expectations

    path = tmp_path / "e.toml"
    path.write_text('["a.b"]\noutcome = "DIVERGES"\nreason = "one"\n', encoding="utf-8")
    key = str(path.resolve())
    first = expectations.read(path)
    assert expectations.read(path) is first and expectations.READS[key] == 1
    path.write_text('["a.b"]\noutcome = "DIVERGES"\nreason = "two, longer"\n', encoding="utf-8")
    assert expectations.read(path).entries[0].reason == "two, longer"
    assert expectations.READS[key] == 2
