"""The results package is the only reader of results records, and the only place that names a
test or computes a cell (issue 23): AST scans of the harness, each shown to catch a planted
violation."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.results.phases import PhaseInfo
from conformance.results.records import RunEnd, RunHeader, TestRecord

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "conformance" / "results"

#: Every field name of the three records (and of the per-phase info).
FIELDS = {*RunHeader.field_names(), *TestRecord.field_names(), *RunEnd.field_names(),
          "fails", "crash"}
#: Field names no other document of the project uses: a read of one is a record read wherever
#: it is.
DISTINCT = {"nodeid", "blocked_by", "observed", "exitstatus", "not_run", "interrupted",
            "adapter_spec", "suite_revision", "suite_dirty", "suite_digest", "python_executable",
            "conformance_timeout", "leak_check", "framework_version"}
#: Names a record is held in; on these, any field name is a record read (``t["outcome"]``).
RECORD_NAMES = {"t", "test", "tests", "record", "records", "rec", "line", "header", "end",
                "info", "meta", "cell", "run"}
#: Reads of other documents that share a field's name, each said why: (file, name, key).
OTHER_DOCUMENTS = {
    ("conformance/repro/run.py", "rec", "started"): "a reproduction script's own result line",
    ("conformance/repro/run.py", "rec", "outcome"): "a reproduction script's own result line",
    ("conformance/differential/fuzz.py", "record", "expectation"): "a differential finding",
    ("noxfile.py", "run", "python"): "a report run an adapter declares (adapters/*.py runs)",
    ("conformance/history/record.py", "t", "rule"): "a history job: one evidence snippet to run",
    ("conformance/history/record.py", "old", "framework_version"): "a release's history file",
    ("conformance/history/record.py", "header", "python"): "the history child runner's first line",
}
assert DISTINCT <= FIELDS, DISTINCT - FIELDS


def harness_files() -> list[Path]:
    """The harness's own code: conformance/ (without this package), adapters/, noxfile, .ci/."""
    files = [p for p in (ROOT / "conformance").rglob("*.py") if PACKAGE not in p.parents]
    return [*files, *(ROOT / "adapters").rglob("*.py"), ROOT / "noxfile.py",
            *(ROOT / ".ci").glob("*.py")]


def _name(node: ast.AST) -> str:
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _name(node.func)
    return ""


def record_reads(source: str, where: str = "<planted>", allowed=OTHER_DOCUMENTS) -> list[str]:
    """``file:line: name[key]`` for every string-key read of a record field in ``source``:
    ``x[key]`` and ``x.get(key)`` / ``.pop`` / ``.setdefault``, where the key is a distinct
    field name, or any field name on a variable named like a record."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            key, holder = node.slice, node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("get", "pop", "setdefault") and node.args:
            key, holder = node.args[0], node.func.value
        else:
            continue
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            continue
        name = _name(holder)
        if key.value in FIELDS and (key.value in DISTINCT or name in RECORD_NAMES) \
                and (where, name, key.value) not in allowed:
            found.append(f"{where}:{node.lineno}: {name}[{key.value!r}]")
    return found


def test_no_module_outside_the_results_package_reads_a_record_by_string_key():
    reads = [hit for path in harness_files()
             for hit in record_reads(path.read_text(encoding="utf-8"),
                                     path.relative_to(ROOT).as_posix())]
    assert reads == [], ("read results records through conformance.results (typed records), "
                         "not by string key:\n" + "\n".join(reads))


@pytest.mark.parametrize("planted", [
    't["outcome"]', 'record.get("nodeid")', 'header["suite_revision"]', 'x.y["adapter_spec"]',
    'run.get("framework_version")', 'end["not_run"]', 'cell["actual"]',
    'tests[0]["duration"]',
])
def test_the_scan_catches_a_planted_record_read(planted):
    assert record_reads(f"def f(t, record, header, x, run, end, cell, tests):\n    {planted}\n")


@pytest.mark.parametrize("innocent", [
    'entry["suite"]', 'rule_entry["level"]', 'options.get("outcome")', 't["label"]',
    't["outcome"] = 1', 'stamp.get("digest")',
])
def test_the_scan_leaves_other_documents_alone(innocent):
    assert record_reads(f"def f(entry, rule_entry, options, t, stamp):\n    {innocent}\n") == []


def test_the_allowed_reads_of_other_documents_are_still_there():
    """An entry of OTHER_DOCUMENTS whose read is gone is dropped here, not kept as a hole."""
    for (where, name, key) in OTHER_DOCUMENTS:
        reads = record_reads((ROOT / where).read_text(encoding="utf-8"), where, allowed=())
        assert any(r.endswith(f"{name}[{key!r}]") for r in reads), (where, name, key)


# -- one definition of a test's name, of a cell's order ----------------------------------------
def node_id_splits(source: str, where: str = "<planted>") -> list[str]:
    """Calls that take a node id apart by hand: ``.split("::")``, ``.rsplit``, ``.partition``."""
    return [f"{where}:{node.lineno}" for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("split", "rsplit", "partition", "rpartition")
            and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "::"]


def test_a_test_name_is_derived_from_a_node_id_in_one_place():
    hits = [hit for path in [*harness_files(), *PACKAGE.glob("*.py")]
            if path.name != "naming.py"
            for hit in node_id_splits(path.read_text(encoding="utf-8"),
                                      path.relative_to(ROOT).as_posix())]
    assert hits == [], "use conformance.results.naming (test_name, function_name, file_of):\n" \
        + "\n".join(hits)
    assert node_id_splits('name = nodeid.split("::")[-1].split("[")[0]\n')
    assert node_id_splits('a, _, b = nodeid.partition("::")\n')


def severity_tables(source: str, where: str = "<planted>") -> list[str]:
    """Module-level names holding an order of outcomes (``*SEVERITY*``) and calls of
    ``worst`` (the most severe of several outcomes)."""
    out = []
    tree = ast.parse(source)
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        out += [f"{where}:{node.lineno}: {t.id}" for t in targets
                if isinstance(t, ast.Name) and "SEVERITY" in t.id]
    out += [f"{where}:{node.lineno}: worst()" for node in ast.walk(tree)
            if isinstance(node, ast.Call) and _name(node.func) == "worst"]
    return out


def test_a_cell_is_computed_in_one_place():
    """Outcome orders live in conformance.outcomes; the most severe outcome of a rule's tests
    is taken only in conformance.results.cells (no shadow table, no own ``worst``)."""
    allowed = {ROOT / "conformance" / "outcomes.py", PACKAGE / "cells.py"}
    hits = [hit for path in [*harness_files(), *PACKAGE.glob("*.py")] if path not in allowed
            for hit in severity_tables(path.read_text(encoding="utf-8"),
                                       path.relative_to(ROOT).as_posix())]
    assert hits == [], "use conformance.results.cells:\n" + "\n".join(hits)
    assert severity_tables("ACTUAL_SEVERITY = (1, 2)\n")
    assert severity_tables("x = outcomes.worst(found, order)\n")


# -- the package's dependencies ------------------------------------------------------------------
def test_the_results_package_does_not_import_the_tools_that_read_it():
    """The header does not depend on the tool that reads it: no conformance.repro, report,
    plugin, differential in the package (the suite digest is passed in by the writer)."""
    tools = ("conformance.repro", "conformance.report", "conformance.plugin",
             "conformance.differential", "conformance.spec")
    found = []
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.name}: {n}" for n in names if n.startswith(tools)]
    assert found == []


def test_the_results_package_reads_with_the_standard_library_only():
    """The noxfile and .ci/ read results with a bare Python: importing every module of the
    package pulls in no third-party package."""
    modules = [f"conformance.results.{p.stem}" for p in PACKAGE.glob("*.py")]
    code = ("import sys; import " + ", ".join(["conformance.outputs", *modules]) + "\n"
            "third = sorted(m for m in sys.modules if m.split('.')[0] in "
            "{'pytest', 'torch', 'jinja2', 'numpy', 'hypothesis', '_pytest'})\n"
            "print(third); sys.exit(1 if third else 0)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_phase_info_carries_exactly_the_test_records_phase_fields():
    """The plugin's per-phase info is a subset of the test record: a field the record lacks
    is refused (adding a field is one edit, in TestRecord)."""
    with pytest.raises(TypeError, match="not fields of a test record: nonsense"):
        PhaseInfo(nonsense=1)
    info = PhaseInfo(**{name: None for name in TestRecord.phase_fields()}, fails=True)
    assert set(info.to_json()) == {*TestRecord.phase_fields(), "fails"}
