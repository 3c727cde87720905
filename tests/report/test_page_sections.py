"""The page's new sections in headless Chromium (Debian's), on hand-made results: the ranked
root causes it opens on, the version diff, the real outcome in every cell with its own mark and
an "expected" badge and the per-suite bars. Screenshots go to the test's temporary directory
(not the source tree). How fast the page opens is a benchmark (benchmarks/test_bench_report_page.py)."""
from __future__ import annotations

import pytest

from conformance.report.build import build
from tests.report.test_page import _launch
from tests.report.test_sections import A, B, C, make_dir


# one pytest-xdist worker runs this module (nox -s tests: --dist loadgroup, tests/xdist_groups.py):
# the page is built once, in the module fixture
pytestmark = pytest.mark.xdist_group("page-sections")


@pytest.fixture(scope="module")
def page_path(tmp_path_factory):
    base = tmp_path_factory.mktemp("sections")
    _, page = build(make_dir(base), base / "out")
    return page


def test_new_sections_in_a_browser(page_path, tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = _launch(p)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            errors, requests = [], []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(page_path.as_uri())
            page.wait_for_selector("html[data-ready=yes]")
            # it opens on the ranked root causes, the run with most causes first and unfolded
            assert page.locator("h2").first.inner_text().startswith("Root causes")
            first = page.locator("section.causes").first
            assert first.get_attribute("data-label") == "oneflow-0.9.0"
            cause = first.locator("ol.causes > li").first
            assert cause.is_visible() and "LEAK" in cause.inner_text()
            assert "blocks 1" in cause.inner_text() and B in cause.inner_text()
            # the blocked rule opens its details, naming what blocks it
            cause.locator(f'a.rulelink[data-rule="{B}"]').click()
            page.wait_for_function("!document.getElementById('details').hidden")
            assert "BLOCKED" in page.inner_text("#d-outcome")
            assert f"blocked by {C}" in page.inner_text("#d-tests")
            page.screenshot(path=str(tmp_path / "root-causes.png"))
            # versions: 0.8.0 -> 0.9.0, the seed bug fixed and the leak regressed
            versions = page.locator('section.versions[data-old="oneflow-0.8.0"]')
            assert versions.locator(f'table[data-kind="fixed"] tr[data-rule="{A}"]').count() == 1
            assert versions.locator(f'table[data-kind="regressed"] tr[data-rule="{C}"]').count() == 1
            # the real outcome in every cell, each with its own mark; expected ones say so
            marks = {}
            for outcome in ("PASS", "DIVERGES", "LEAK", "BLOCKED"):
                cell = page.locator(f'td.cell[data-actual="{outcome}"]').first
                marks[outcome] = cell.inner_text().split()[0]
            assert len(set(marks.values())) == 4, marks
            seed = page.locator(f'td.cell[data-rule="{A}"][data-label="oneflow-0.8.0"]')
            assert seed.get_attribute("data-actual") == "DIVERGES" and "expected" in seed.inner_text()
            # counts per outcome as a stacked bar per suite and column
            assert page.locator("#counts svg.bar").count() >= 5
            page.locator("#counts").scroll_into_view_if_needed()
            page.screenshot(path=str(tmp_path / "counts.png"))
            assert not errors, errors
            assert all(u.startswith(("file:", "data:", "about:", "blob:")) for u in requests), requests
        finally:
            browser.close()
