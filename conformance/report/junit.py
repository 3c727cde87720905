"""One JUnit XML file per run, for CI systems that show test results (reports/junit/)."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import Any

from conformance.outcomes import NOT_RUN, Outcome
from conformance.outputs import Outputs
from conformance.results.combined import Column
from conformance.results.naming import file_of, test_name

#: The JUnit element of every final outcome (None: a plain passing <testcase>). A LEAK held
#: the rule's check but failed the run: a <failure>; BLOCKED is a <skipped> naming its blocker.
ELEMENT = {
    Outcome.PASS: None, Outcome.OBSERVED: None,
    Outcome.DIVERGES: "failure", Outcome.XPASS: "failure", Outcome.LEAK: "failure",
    Outcome.ERROR: "error", Outcome.CRASH: "error", Outcome.TIMEOUT: "error", NOT_RUN: "error",
    Outcome.UNSUPPORTED: "skipped", Outcome.XFAIL: "skipped", Outcome.BLOCKED: "skipped",
}
FAILED = tuple(str(o) for o, e in ELEMENT.items() if e == "failure")
ERRORED = tuple(str(o) for o, e in ELEMENT.items() if e == "error")
SKIPPED = tuple(str(o) for o, e in ELEMENT.items() if e == "skipped")


#: What XML 1.0 cannot hold: most control characters, lone surrogates, U+FFFE and U+FFFF.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clean(text: Any) -> str:
    """``text`` with what XML 1.0 cannot hold replaced by U+FFFD (one regular expression: a
    generator over every character took a quarter of a large report's time)."""
    return _NOT_XML.sub("\ufffd", str(text or ""))


def run_to_junit(run: Column) -> ET.ElementTree:
    root = ET.Element("testsuites", name=_clean(f"autograd-conformance {run.label}"))
    by_suite: dict[str, list] = defaultdict(list)
    for t in run.tests:
        by_suite[t.suite or "?"].append(t)
    if not run.has_results:
        suite = ET.SubElement(root, "testsuite", name=_clean(run.label), tests="1", failures="0",
                              errors="1", skipped="0")
        case = ET.SubElement(suite, "testcase", classname=_clean(run.label), name="install")
        ET.SubElement(case, "error", message=_clean(run.status)).text = _clean(run.detail)
    header = run.header
    for name, tests in sorted(by_suite.items()):
        count = {k: sum(t.outcome in v for t in tests)
                 for k, v in (("failures", FAILED), ("errors", ERRORED), ("skipped", SKIPPED))}
        suite = ET.SubElement(root, "testsuite", name=_clean(f"{run.label}.{name}"),
                              tests=str(len(tests)), time=f"{sum(t.duration or 0 for t in tests):.3f}",
                              timestamp=_clean(header.started or ""),
                              **{k: str(v) for k, v in count.items()})
        props = ET.SubElement(suite, "properties")
        for key in ("adapter", "framework_version", "python", "device", "suite_revision"):
            ET.SubElement(props, "property", name=key, value=_clean(getattr(header, key) or ""))
        for t in tests:
            outcome = str(t.outcome)
            case = ET.SubElement(suite, "testcase", classname=_clean(f"{name}.{t.rule}"),
                                 name=_clean(test_name(t.nodeid)), file=_clean(file_of(t.nodeid)),
                                 time=f"{t.duration or 0:.6f}")
            message = _clean(t.message or "")
            first = message.splitlines()[0] if message else outcome
            if outcome in FAILED:
                ET.SubElement(case, "failure", message=first, type=outcome).text = message
            elif outcome in ERRORED:
                ET.SubElement(case, "error", message=first, type=outcome).text = message
            elif outcome == str(Outcome.BLOCKED):
                by = t.blocked_by or "?"
                why = first.split(": ", 1)[1] if first.startswith(f"blocked by {by}: ") else first
                ET.SubElement(case, "skipped", message=_clean(f"BLOCKED by {by}: {why}"))
            elif outcome in SKIPPED:
                ET.SubElement(case, "skipped", message=f"{outcome}: {first}")
            elif outcome not in (str(Outcome.PASS), str(Outcome.OBSERVED)):
                # an outcome this writer does not know: never let it look like a pass
                ET.SubElement(case, "error", message=first, type=_clean(outcome)).text = message
    return ET.ElementTree(root)


def render(run: Column) -> bytes:
    """One run's JUnit file, in memory."""
    tree = run_to_junit(run)
    ET.indent(tree)
    return ET.tostring(tree.getroot(), encoding="utf-8", xml_declaration=True)


def add_all(data, directory: Path, outputs: Outputs) -> list[Path]:
    """Every run's JUnit file (``<label>.xml`` in ``directory``), rendered into ``outputs``."""
    return [outputs.add(Path(directory) / f"{run.label}.xml", render(run)) for run in data.runs]
