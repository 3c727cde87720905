"""The page's layout as a reader meets it, in headless Chromium: the rule matrix within the
first two screens, its column headers in view while its rows scroll past, every badge readable
(contrast >= 4.5:1, WCAG AA for text), and an interrupted run flagged where it is compared.

The page is built from synthetic runs shaped like the project's report (every catalogue rule,
a run with many root causes, expected CRASH cells, an interrupted older release), so the test
takes seconds; tests/report/test_page.py drives a page of real runs.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from conformance.report.build import build
from tests.report.test_page import _launch
from tests.report.test_unit import CATALOGUE, write_run

VIEWPORT = {"width": 1280, "height": 800}
RULES = sorted(CATALOGUE.rules)


def _runs(d: Path) -> dict:
    """reference (all PASS), torch 2.13.0 (30 root causes, expected CRASHes), torch 1.13.1
    (interrupted after half its tests), oneflow 0.9.0 (BLOCKED, LEAK, UNSUPPORTED)."""
    write_run(d / "reference.jsonl", "reference", "0.1",
              [(r, f"test_{i}", "PASS", "PASS", "") for i, r in enumerate(RULES)])
    torch = []
    for i, r in enumerate(RULES):
        if i % 4 == 0:
            cause = f"cause-{i % 30}"
            torch.append((r, f"test_{i}", "XFAIL", "DIVERGES", f"the {cause} message",
                          {"outcome": "DIVERGES", "reason": f"torch does {cause} that way",
                           "root_cause": cause}))
        elif i % 17 == 1:
            torch.append((r, f"test_{i}", "XFAIL", "CRASH", "the process died",
                          {"outcome": "CRASH", "reason": "a segfault", "root_cause": "segv"}))
        else:
            torch.append((r, f"test_{i}", "PASS", "PASS", ""))
    write_run(d / "torch.jsonl", "torch", "2.13.0", torch)
    write_run(d / "torch-1.13.1.jsonl", "torch", "1.13.1",
              [(r, f"test_{i}", "DIVERGES" if i % 5 == 0 else "PASS",
                "DIVERGES" if i % 5 == 0 else "PASS", "old message")
               for i, r in enumerate(RULES[:len(RULES) // 2])], end=False)
    outcomes = ["PASS", "LEAK", "UNSUPPORTED", "BLOCKED", "TIMEOUT", "ERROR", "XPASS", "OBSERVED"]
    write_run(d / "oneflow-0.9.0.jsonl", "oneflow", "0.9.0",
              [(r, f"test_{i}", outcomes[i % 8], outcomes[i % 8], f"message {i % 8}")
               for i, r in enumerate(RULES)])
    return {"reference": ("reference", None), "torch": ("torch", "2.13.0"),
            "torch-1.13.1": ("torch", "1.13.1"), "oneflow-0.9.0": ("oneflow", "0.9.0")}


# one pytest-xdist worker runs this module (nox -s tests: --dist loadgroup, tests/xdist_groups.py):
# the page is built once, in the module fixture
pytestmark = pytest.mark.xdist_group("page-layout")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    base = tmp_path_factory.mktemp("layout")
    results = base / "results"
    results.mkdir()
    columns = _runs(results)
    _, path = build(results, base / "out", columns)
    return path


#: per badge-like element: its text colour and the colour it is drawn on (the nearest
#: ancestor-or-self with an opaque background), and any background image on the way, which
#: would make the computed colours a lie
_CONTRAST = """
(selector) => {
  function rgb(text) {
    const m = text.match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
    const p = m[1].split(',').map(Number); return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1};
  }
  function lum(c) {
    const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  }
  const out = [];
  for (const el of document.querySelectorAll(selector)) {
    if (!el.textContent.trim() || !el.getClientRects().length) continue;
    const style = getComputedStyle(el);
    const fg = rgb(style.color);
    let node = el, bg = null, image = 'none';
    while (node && node.nodeType === 1) {
      const s = getComputedStyle(node);
      if (s.backgroundImage !== 'none') image = s.backgroundImage;
      const c = rgb(s.backgroundColor);
      if (c && c.a >= 1) { bg = c; break; }
      if (c && c.a > 0) { image = 'translucent ' + s.backgroundColor; }
      node = node.parentElement;
    }
    bg = bg || {r: 255, g: 255, b: 255};
    const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
    const ratio = (hi + 0.05) / (lo + 0.05) * (style.opacity < 1 ? 0 : 1);
    out.push({cls: el.className, text: el.textContent.trim().slice(0, 30), ratio: ratio, image: image,
              fg: style.color, bg: `rgb(${bg.r}, ${bg.g}, ${bg.b})`});
  }
  return out;
}
"""

BADGES = ".badge, td.cell, td.cell .exp, td.cell .xp, td.cell .mix, .legend .sw"


def test_matrix_near_the_top_sticky_headers_readable_badges_flagged_runs(page, tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = _launch(p)
        try:
            tab = browser.new_page(viewport=VIEWPORT)
            errors = []
            tab.on("pageerror", lambda e: errors.append(str(e)))
            tab.goto(page.as_uri())
            tab.wait_for_selector("html[data-ready=yes]")
            # the matrix starts within the first two screens
            top = tab.evaluate("document.getElementById('matrix').getBoundingClientRect().top"
                               " + window.scrollY")
            assert top < 2 * VIEWPORT["height"], f"the matrix starts at {top:.0f} px"
            # scrolled to a rule in the middle of the matrix, its column headers stay in view,
            # uncovered (the element at their centre is the header itself)
            row = tab.locator("tr.rule-row").nth(len(RULES) // 2)
            row.scroll_into_view_if_needed()
            tab.evaluate("window.scrollBy(0, 300)")
            head = tab.evaluate("""() => {
                const th = document.querySelector('#matrix thead th.col');
                const r = th.getBoundingClientRect();
                const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
                return {top: r.top, bottom: r.bottom, covered: !th.contains(hit),
                        scrolled: window.scrollY};
            }""")
            assert head["scrolled"] > top and 0 <= head["top"] and head["bottom"] < 160, head
            assert not head["covered"], head
            # every badge readable: >= 4.5:1, drawn on a plain colour
            found = tab.evaluate(_CONTRAST, BADGES)
            assert len(found) > len(RULES)  # the cells are among them
            assert {f["cls"].split()[0] for f in found} >= {"badge", "cell", "exp", "sw"}
            poor = [f for f in found if f["ratio"] < 4.5 or f["image"] != "none"]
            assert not poor, poor[:10]
            # the interrupted run is flagged where it is compared with another
            versions = tab.inner_text('section.versions[data-old="torch-1.13.1"] h3')
            assert "interrupted" in versions and "tests ran" in versions, versions
            assert "interrupted" in tab.inner_text("#counts tr:first-child")
            assert not errors, errors
        finally:
            browser.close()


def test_the_spec_page_fits_its_cards_and_links_sources_inside_the_repository(page):
    """spec.html beside the page: no rule card wider than itself (the history strips of 17
    releases included), the evidence folded, and every source link relative (into the
    checkout) or to the repository URL given, never to a path on this machine."""
    from playwright.sync_api import sync_playwright

    spec = page.parent / "spec.html"
    text = spec.read_text(encoding="utf-8")
    hrefs = [h for h in __import__("re").findall(r'href="([^"#][^"]*)"', text)
             if not h.startswith("https://")]
    assert hrefs and not [h for h in hrefs if h.startswith(("/", "file:")) or "site-packages" in h]
    with sync_playwright() as p:
        browser = _launch(p)
        try:
            tab = browser.new_page(viewport=VIEWPORT)
            tab.goto(spec.as_uri())
            wide = tab.evaluate("""() => [...document.querySelectorAll('.rule, div.strip')]
                .filter(e => e.scrollWidth > e.clientWidth + 1)
                .map(e => (e.id || e.parentElement.closest('.rule').id) + ': ' + e.scrollWidth + ' > ' + e.clientWidth)""")
            assert not wide, wide[:10]
            strips = tab.locator("table.strip").count()
            assert strips > 50  # the committed history: a strip per rule with evidence
            screens = tab.evaluate("document.documentElement.scrollHeight") / VIEWPORT["height"]
            # 249 screens before issue 36 (245 rules), 133 after it; issue 33's new rules and issue 34's
            # "Under <mode>" lines take it to about 172 (253 rules): about 0.7 screens a rule
            assert screens < 190, f"the spec page is {screens:.0f} screens long"
        finally:
            browser.close()


def test_spec_source_links_follow_a_configured_url(tmp_path):
    from conformance import spec

    text = spec.render(tmp_path / "spec.html", source_url="https://example.org/repo/blob/abc/")
    assert 'href="https://example.org/repo/blob/abc/conformance/catalogue/identity.toml"' in text
    assert '<a href="https://example.org/repo/blob/abc/reference/' in text and "#L" in text
