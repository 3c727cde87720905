"""One JUnit XML file per run, for CI systems that show test results (reports/junit/)."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import Any

from conformance.outcomes import NOT_RUN, Outcome

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


def _clean(text: str) -> str:
    """XML 1.0 cannot hold most control characters; replace them."""
    return "".join(c if c in "\t\n\r" or ord(c) >= 0x20 else "\ufffd" for c in str(text or ""))


def run_to_junit(run: dict[str, Any]) -> ET.ElementTree:
    root = ET.Element("testsuites", name=f"autograd-conformance {run['label']}")
    by_suite: dict[str, list] = defaultdict(list)
    for t in run["tests"]:
        by_suite[t.get("suite") or "?"].append(t)
    if run["status"] in ("not-installed", "missing"):
        suite = ET.SubElement(root, "testsuite", name=run["label"], tests="1", failures="0",
                              errors="1", skipped="0")
        case = ET.SubElement(suite, "testcase", classname=run["label"], name="install")
        ET.SubElement(case, "error", message=_clean(run["status"])).text = _clean(run["detail"])
    for name, tests in sorted(by_suite.items()):
        count = {k: sum(t["outcome"] in v for t in tests)
                 for k, v in (("failures", FAILED), ("errors", ERRORED), ("skipped", SKIPPED))}
        suite = ET.SubElement(root, "testsuite", name=f"{run['label']}.{name}",
                              tests=str(len(tests)), time=f"{sum(t['duration'] or 0 for t in tests):.3f}",
                              timestamp=str(run.get("started") or ""),
                              **{k: str(v) for k, v in count.items()})
        props = ET.SubElement(suite, "properties")
        for key in ("adapter", "framework_version", "python", "device", "suite_revision"):
            ET.SubElement(props, "property", name=key, value=_clean(run.get(key) or ""))
        for t in tests:
            file_part, _, test_name = t["nodeid"].partition("::")
            case = ET.SubElement(suite, "testcase", classname=f"{name}.{t.get('rule')}",
                                 name=test_name or t["nodeid"], file=file_part,
                                 time=f"{t['duration'] or 0:.6f}")
            message = _clean(t.get("message") or "")
            first = message.splitlines()[0] if message else t["outcome"]
            if t["outcome"] in FAILED:
                ET.SubElement(case, "failure", message=first, type=t["outcome"]).text = message
            elif t["outcome"] in ERRORED:
                ET.SubElement(case, "error", message=first, type=t["outcome"]).text = message
            elif t["outcome"] == str(Outcome.BLOCKED):
                by = t.get("blocked_by") or "?"
                why = first.split(": ", 1)[1] if first.startswith(f"blocked by {by}: ") else first
                ET.SubElement(case, "skipped", message=_clean(f"BLOCKED by {by}: {why}"))
            elif t["outcome"] in SKIPPED:
                ET.SubElement(case, "skipped", message=f"{t['outcome']}: {first}")
            elif t["outcome"] not in (str(Outcome.PASS), str(Outcome.OBSERVED)):
                # an outcome this writer does not know: never let it look like a pass
                ET.SubElement(case, "error", message=first, type=str(t["outcome"])).text = message
    return ET.ElementTree(root)


def write_all(data: dict[str, Any], directory: Path) -> list[Path]:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for run in data["runs"]:
        path = directory / f"{run['label']}.xml"
        tree = run_to_junit(run)
        ET.indent(tree)
        tree.write(path, encoding="utf-8", xml_declaration=True)
        paths.append(path)
    return paths
