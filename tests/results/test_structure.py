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

#: Every field name of the three records (and of the per-phase info), and the keys of a column
#: of results.json that only it has (its others, ``label``, ``status``, ``tests``..., are common
#: words: a column is read as :class:`conformance.results.combined.Column`).
FIELDS = {*RunHeader.field_names(), *TestRecord.field_names(), *RunEnd.field_names(),
          "fails", "crash", "root_causes", "witnesses"}
#: Field names no other document of the project uses: a read of one is a record read wherever
#: it is.
DISTINCT = {"nodeid", "blocked_by", "observed", "exitstatus", "not_run", "interrupted",
            "adapter_spec", "suite_revision", "suite_dirty", "suite_digest", "python_executable",
            "conformance_timeout", "leak_check", "framework_version", "root_causes", "witnesses",
            "expectations_note"}
#: Names a record is held in; on these, any field name is a record read (``t["outcome"]``).
RECORD_NAMES = {"t", "test", "tests", "record", "records", "rec", "line", "header", "end",
                "info", "meta", "cell", "run"}
#: Reads of other documents that share a field's name, each said why: (file, name, key).
OTHER_DOCUMENTS = {
    ("conformance/repro/run.py", "rec", "started"): "a reproduction script's own result line",
    ("conformance/repro/run.py", "rec", "outcome"): "a reproduction script's own result line",
    ("conformance/differential/fuzz.py", "record", "expectation"): "a differential finding",
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


#: Calls whose result is a record as a plain dict: any string-key read of one is a record read.
AS_DICT = {"to_json", "to_entry", "asdict", "vars"}


def record_reads(source: str, where: str = "<planted>", allowed=OTHER_DOCUMENTS) -> list[str]:
    """``file:line: name[key]`` for every string-key read of a record field in ``source``:
    ``x[key]`` and ``x.get(key)`` / ``.pop`` / ``.setdefault``, where the key is a distinct
    field name, or any field name on a variable named like a record, or any key on a record
    turned into a dict (``t.to_json()["outcome"]``)."""
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
        if isinstance(holder, ast.Call) and name in AS_DICT:
            found.append(f"{where}:{node.lineno}: {name}()[{key.value!r}]")
        elif key.value in FIELDS and (key.value in DISTINCT or name in RECORD_NAMES) \
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


def test_the_scan_catches_a_read_of_a_record_turned_into_a_dict():
    assert record_reads('t.to_json()["outcome"]\nx = dataclasses.asdict(r).get("message")\n'
                        'vars(record)["level"]\n') != []
    assert len(record_reads('t.to_json()["outcome"]\nx = dataclasses.asdict(r).get("message")\n'
                            'vars(record)["level"]\n')) == 3


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


# -- raw results only inside the package -----------------------------------------------------------
#: Every JSON parse of the harness outside this package, and what it parses: none is a results
#: file (a record read by string key needs a raw dict, and outside this package a results line
#: only exists typed). A new parse of a results file elsewhere fails the test below; a new
#: parse of another document is added here with what it reads.
JSON_PARSES = {
    "conformance/history/record.py": (1, "the child runner's answer"),
    "conformance/repro/run.py": (1, "the script runner's own lines (one per script run)"),
    "conformance/report/html.py": (2, "the page's own packed data, read back"),
    "conformance/differential/worker.py": (1, "a request of the differential runner"),
    "conformance/differential/fuzz.py": (1, "a fuzz worker's counts file"),
    "conformance/differential/runner.py": (1, "a differential worker's answer"),
    "conformance/mutants/generic.py": (3, "mutmut's meta and stats files"),
    "conformance/mutants/__main__.py": (1, "the mutants baseline"),
    "conformance/torchtests/worker.py": (2, "a torchtests job and its chunks"),
    "conformance/torchtests/run.py": (1, "a torchtests worker's event lines"),
    "conformance/isolation.py": (2, "an isolation probe's answer and its feature-claims line"),
    "conformance/witness.py": (1, "a witness child's answer"),
    "conformance/api.py": (1, "a fresh interpreter's UNSUPPORTED line (feature, reason, message)"),
    "conformance/evidence/runner.py": (1, "an evidence job"),
    "noxfile.py": (1, "nox's <label>.stamp.json"),
}


def json_parses(source: str) -> int:
    """How many ``json.load(...)`` / ``json.loads(...)`` calls ``source`` makes."""
    return sum(1 for node in ast.walk(ast.parse(source))
               if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr in ("load", "loads") and isinstance(node.func.value, ast.Name)
               and node.func.value.id == "json")


def test_no_module_outside_the_results_package_parses_a_results_file():
    suites = ROOT / "conformance" / "suites"  # what the engines do, not results
    found = {path.relative_to(ROOT).as_posix(): n for path in harness_files()
             if suites not in path.parents and (n := json_parses(path.read_text(encoding="utf-8")))}
    assert found == {where: n for where, (n, _) in JSON_PARSES.items()}, (
        "a JSON parse outside conformance/results: read results through conformance.results "
        "(read_run, combined.load, read_findings); for another document, list it in JSON_PARSES "
        "with what it parses")
    assert json_parses("import json\nrows = [json.loads(x) for x in open('r.jsonl')]\n") == 1
