"""The report as a person uses it: the page in headless Chromium, and every reproduction script
in the page run against its framework, which must reproduce the outcome the page shows.

The suites run here (reference and torch in this interpreter; OneFlow 0.9.0 / 0.8.0 in a
Python 3.10 interpreter that has it: $AUTOGRAD_CONFORMANCE_ONEFLOW_<0_9_0|0_8_0>_PYTHON, the
report's nox venvs, or /opt/of09 /opt/of08). Where no OneFlow interpreter exists its column
says so and its repro test is skipped with that reason (never silently).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.report import html
from conformance.report.build import build
from conformance.repro.run import run_all
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]
# where the page's screenshots go: a temporary directory, or the directory `nox -s screenshots`
# names (reports/screenshots/); the project's own tests write nothing into the source tree
SCREENSHOTS = os.environ.get("AUTOGRAD_CONFORMANCE_SCREENSHOTS")
CHROMIUM = os.environ.get("AUTOGRAD_CONFORMANCE_CHROMIUM", "/usr/bin/chromium")
# one pytest-xdist worker runs this module (nox -s tests: --dist loadgroup, tests/xdist_groups.py),
# so the suites of every framework run once for the module's fixture, not once per worker
pytestmark = pytest.mark.xdist_group("report-page")
COLUMNS = {"reference": ("reference", None), "torch": ("torch", "2.13.0"),
           "oneflow-0.9.0": ("oneflow", "0.9.0"), "oneflow-0.8.0": ("oneflow", "0.8.0")}


def oneflow_python(version: str) -> str | None:
    env = os.environ.get(f"AUTOGRAD_CONFORMANCE_ONEFLOW_{version.replace('.', '_')}_PYTHON")
    short = "".join(version.split(".")[:2])
    candidates = [env, ROOT / ".nox" / f"conformance-oneflow-{version.replace('.', '-')}" / "bin" / "python",
                  f"/opt/of{short}/bin/python"]
    for c in candidates:
        if not c or not Path(c).exists():
            continue
        probe = subprocess.run([str(c), "-c", "import importlib.metadata as m; "
                                "print(m.version('oneflow'))"], capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return str(c)
    return None


def interpreter(label: str) -> str | None:
    framework, version = COLUMNS[label]
    return oneflow_python(version) if framework == "oneflow" else sys.executable


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    base = tmp_path_factory.mktemp("report")
    results = base / "results"
    results.mkdir()
    for label, (framework, version) in COLUMNS.items():
        python = interpreter(label)
        if python is None:
            (results / f"{label}.status.json").write_text(json.dumps(
                {"status": "missing", "detail": f"no Python interpreter with {framework} "
                 f"{version} found (run nox -s report, or set AUTOGRAD_CONFORMANCE_ONEFLOW_"
                 f"{version.replace('.', '_')}_PYTHON)"}))
            continue
        xdist = ["-n", "1"] if framework == "oneflow" else []
        # --no-witnesses: the page's witness verdicts are tested with a run of their own
        # (tests/harness/test_witness.py); here they would cost each column a fresh
        # interpreter per root cause
        proc = subprocess.run([python, "-m", "pytest", f"--adapter={framework}", *xdist, "-q",
                               "--conformance-timeout=60", "--no-witnesses",
                        "-p", "no:cacheprovider", "conformance/suites",
                        f"--results={results / (label + '.jsonl')}"],
                       cwd=ROOT, capture_output=True, text=True, timeout=hang_limit(300))
        assert (results / f"{label}.jsonl").is_file(), \
            f"the {label} run ({python}) wrote no results:\n{proc.stdout[-1500:]}{proc.stderr[-1500:]}"
    data, page = build(results, base / "out", COLUMNS)
    return data.to_json(), page


def _launch(playwright):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run the tests with nox -s tests (it finds or "
                    "installs Chromium), install Debian's chromium package (apt-get install -y "
                    "chromium) or set AUTOGRAD_CONFORMANCE_CHROMIUM")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=[
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-extensions", "--no-first-run"])


def test_page_in_a_browser(report, tmp_path):
    from playwright.sync_api import sync_playwright

    data, page_path = report
    shots = Path(SCREENSHOTS) if SCREENSHOTS else tmp_path / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = _launch(p)
        try:
            requests = []
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.on("request", lambda r: requests.append(r.url))
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_path.as_uri())
            page.wait_for_selector("html[data-ready=yes]")  # the details are inflated
            # every framework column is there, even one without results
            headers = page.locator("#matrix thead th.col").all_inner_texts()
            titles = [h.splitlines()[0] for h in headers]
            assert len(titles) == 4 and titles[0] == "reference", headers
            for title, want in zip(titles[1:], ["torch 2.13.0", "oneflow 0.9.0", "oneflow 0.8.0"]):
                assert title.startswith(want.split()[0]), headers
                assert want.split()[1] in title or "not installed" in " ".join(headers) \
                    or data["runs"][titles.index(title)]["status"] == "missing", headers
            rows = page.locator("tr.rule-row")
            total = rows.count()
            assert total == len(data["catalogue"])
            # a filter hides rows
            page.select_option("#f-suite", "identity")
            visible = page.locator("tr.rule-row:visible").count()
            assert 0 < visible < total
            page.select_option("#f-suite", "")
            page.check("#f-diverges")
            diverging = page.locator("tr.rule-row:visible").count()
            assert 0 < diverging < total
            page.uncheck("#f-diverges")
            assert page.locator("tr.rule-row:visible").count() == total
            # a cell's details and repro script open
            label = "torch"
            cell = page.locator(f'td.cell[data-rule="identity.grad-stable-id"][data-label="{label}"]')
            cell.click()
            assert page.locator("#details").is_visible()
            assert "identity.grad-stable-id" in page.inner_text("#d-title")
            assert page.inner_text("#d-statement") == data["catalogue"][
                [e["id"] for e in data["catalogue"]].index("identity.grad-stable-id")]["statement"]
            assert page.inner_text("#d-level") == "MUST"
            script = page.inner_text("#d-script")
            assert "import torch" in script and "RESULT" in script
            page.click("#d-copy")
            page.wait_for_function("document.getElementById('d-copied').textContent !== ''")
            page.screenshot(path=str(shots / "report-details.png"), full_page=False)
            # a leak, if any run has one, is drawn as a picture
            leak = next(((t["rule"], r["label"]) for r in data["runs"] for t in r["tests"]
                         if t.get("chain")), None)
            if leak:
                page.locator(f'td.cell[data-rule="{leak[0]}"][data-label="{leak[1]}"]').click()
                assert page.locator("#d-chains svg.chain").count() >= 1
                page.screenshot(path=str(shots / "report-leak.png"), full_page=False)
            page.check("#f-diverges")
            page.screenshot(path=str(shots / "report-diverging.png"), full_page=True)
            assert not errors, errors
            assert all(u.startswith(("file:", "data:", "about:")) for u in requests), requests
        finally:
            browser.close()


@pytest.mark.parametrize("label", list(COLUMNS))
def test_each_repro_script_in_the_page_reproduces_the_recorded_outcome(report, label, tmp_path):
    data, page_path = report
    run = next(r for r in data["runs"] if r["label"] == label)
    python = interpreter(label)
    if run["status"] == "missing" or python is None:
        pytest.skip(f"{label}: {run['detail']}")
    embedded = html.embedded_data(page_path.read_text())
    scripts = embedded["scripts"][label]  # made from this run: its suites, adapter, device
    cells = embedded["cells"]
    for rule_id, script in scripts.items():
        (tmp_path / f"{rule_id}.py").write_text(script)
    results = run_all(tmp_path, tmp_path / "out.jsonl", python=python)
    differing = [r for r in scripts if cells[r][label]["actual"] not in ("NOT RUN",)
                 and results[f"{r}.py"]["outcome"] != cells[r][label]["actual"]]
    if differing:
        # A segfault can come from garbage an earlier test left (the suite and the batch run
        # scripts in different orders): judge those scripts again, each in a fresh process.
        alone = tmp_path / "alone"
        alone.mkdir()
        for r in differing:
            (alone / f"{r}.py").write_text(scripts[r])
        results.update(run_all(alone, tmp_path / "alone.jsonl", python=python, standalone=True))
    history = []
    mismatches = []
    for rule_id in scripts:
        recorded = cells[rule_id][label]["actual"]
        if recorded == "NOT RUN":
            continue
        got = results[f"{rule_id}.py"]
        if recorded == "CRASH" and got["outcome"] != "CRASH":
            history.append(f"{rule_id}: CRASH in the suite run, {got['outcome']} on its own")
            continue
        if got["outcome"] != recorded:
            mismatches.append(f"{rule_id}: page shows {recorded}, script gives {got['outcome']}"
                              f" ({got['message'][:200]})")
    assert not mismatches, f"{len(mismatches)} script(s) of {label} do not reproduce:\n" + \
        "\n".join(mismatches)
    if history:  # visible in the test report, not silent: a crash that needs process history
        print(f"{label}: crashes that depend on what ran before:\n  " + "\n  ".join(history))


def test_grad_id_script_runs_standalone_and_prints_the_ids(report, tmp_path):
    """The seed bug's script, run as a user would (its own process, outside the project
    directory, with autograd-conformance importable)."""
    data, page_path = report
    embedded = html.embedded_data(page_path.read_text())
    for label in COLUMNS:
        python = interpreter(label)
        if python is None:
            continue
        script = tmp_path / f"repro-{label}.py"  # not torch.py: it would shadow the framework
        script.write_text(embedded["scripts"][label]["identity.grad-stable-id"])
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run([python, str(script)], capture_output=True, text=True,
                              cwd=tmp_path, timeout=hang_limit(75), env=env)
        assert "id(a.grad) read around allocations" in proc.stdout, proc.stderr[-2000:]
        assert f"RESULT: {embedded['cells']['identity.grad-stable-id'][label]['actual']}" \
            in proc.stdout, proc.stdout
