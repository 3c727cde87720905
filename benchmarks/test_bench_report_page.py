"""How fast the report page opens in headless Chromium: five columns of hand-made results.

Target (issue 10): under 2 s from navigation to the page's ``data-ready`` mark. A benchmark,
not a test, because a loaded machine only ever adds time.
"""
from __future__ import annotations

import shutil

import pytest

from conformance.report.build import build
from tests.report.test_page import _launch
from tests.report.test_sections import make_dir

TARGET_SECONDS = 2.0


@pytest.fixture(scope="module")
def page_path(tmp_path_factory):
    if shutil.which("chromium") is None and shutil.which("/usr/bin/chromium") is None:
        pytest.skip("Debian chromium is not installed (nox -s tests installs it)")
    base = tmp_path_factory.mktemp("bench-page")
    _, page = build(make_dir(base), base / "out")
    return page


def test_bench_report_page_opens(benchmark, page_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = _launch(p)
        try:
            page = browser.new_page()

            def open_page():
                page.goto(page_path.as_uri())
                page.wait_for_selector("html[data-ready=yes]")

            benchmark.pedantic(open_page, rounds=5, iterations=1, warmup_rounds=1)
        finally:
            browser.close()
    benchmark.extra_info["target_seconds"] = TARGET_SECONDS
    benchmark.extra_info["page_bytes"] = page_path.stat().st_size
