"""``python -m conformance.spec`` (``nox -s spec``): the specification as one page, reports/spec.html.

Per suite, every rule with its level, statement, rationale, source and evidence (snippet and
recorded torch 2.13 output), its tests (from the suite modules' ``@rule`` marks), the lines of
``reference/`` that implement it (``# rule: <id>`` comments) and each framework's status from
the latest ``reports/results.json`` when there is one. Each rule is an anchor (``#<rule id>``),
so a rule id leads to all of it in one click.

Why generated: the catalogue, the evidence, the suites and the engine are the sources of truth;
a hand-written page would drift from them the first week.
"""
from __future__ import annotations

import html
import re
import sys
from collections import defaultdict
from pathlib import Path

from conformance import cli, evidence as _evidence
from conformance.model import reference_scope as _reference_scope, suite_index
from conformance.history import modes as _modes, render as _history
from conformance.model.catalogue import CatalogueError, load_catalogue

PACKAGE = Path(__file__).resolve().parent
ROOT = PACKAGE.parent
RULE_ID = re.compile(r"\b[a-z][a-z0-9_]*\.[a-z0-9]+(?:-[a-z0-9]+)+\b")


def rule_tests(suites_dir: Path) -> dict[str, list[tuple[str, Path, int]]]:
    """rule id -> [(test name, file, line)] from the suite index (the ``@rule("<id>")`` marks)."""
    index = suite_index.index_of_dir(suites_dir)
    return {rule: [(t.name, index.tree.root / t.file, t.line) for t in tests]
            for rule, tests in index.rules().items()}


def reference_lines(reference_dir: Path) -> dict[str, list[tuple[Path, int, str]]]:
    """id -> [(file, line, the code it annotates)] for every rule id named in a comment of
    reference/ (``# rule: <id>``, or an id mentioned in a longer comment); the code is the line's
    own, or the next code line for a comment on a line of its own. Callers keep catalogue ids."""
    found: dict[str, list] = defaultdict(list)
    for path in sorted(Path(reference_dir).rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            hash_at = line.find("#")
            if hash_at < 0:
                continue
            ids = RULE_ID.findall(line[hash_at:])
            if not ids:
                continue
            code = line[:hash_at].strip()
            following = number
            while not code and following < len(lines):
                code = lines[following].split("#", 1)[0].strip()
                following += 1
            for rule_id in dict.fromkeys(ids):
                found[rule_id].append((path, number, code))
    return found


def framework_status(results: Path, data=None) -> tuple[list[str], dict[tuple[str, str], str]]:
    """(column titles, (rule id, title) -> outcome) from ``data`` (a combined report being
    written) or results.json; empty when neither is there."""
    from conformance.results import cells as _cells, combined
    if data is None:
        if not results.is_file():
            return [], {}
        data = combined.load(results)
    titles = {run.label: run.title for run in data.runs}
    cells = _cells.table(data.runs, data.rule_ids)
    return list(titles.values()), {(rid, titles[label]): cell.outcome
                                   for (rid, label), cell in cells.items()}


#: where the spec page's source links point: the repository's files at a URL (e.g.
#: https://github.com/ORG/autograd-conformance/blob/main), set by --source-url or this variable
SOURCE_URL_VARIABLE = "AUTOGRAD_CONFORMANCE_SOURCE_URL"


class Sources:
    """How the page links a file of the project: ``<source url>/<path in the repository>#L<line>``
    when a URL is given; else, run from a checkout, a path relative to the page (the checkout's
    own file); else (installed) no link: the path in the repository as text, never a path
    into this machine's site-packages."""

    def __init__(self, root: Path, out_dir: Path, url: str | None = None) -> None:
        from conformance.outputs import checkout_root

        self.root, self.out_dir = Path(root).resolve(), Path(out_dir).resolve()
        self.url = (url or "").rstrip("/") or None
        self.checkout = checkout_root() == self.root or (self.root / "pyproject.toml").is_file()

    def link(self, target: Path, text: str, line: int | None = None) -> str:
        try:
            in_repo = Path(target).resolve().relative_to(self.root).as_posix()
        except ValueError:
            return html.escape(text)
        if self.url:
            href = f"{self.url}/{in_repo}" + (f"#L{line}" if line else "")
        elif self.checkout:
            href = Path(__import__("os").path.relpath(Path(target).resolve(), self.out_dir)).as_posix()
        else:
            return f'<span title="{html.escape(in_repo)}">{html.escape(text)}</span>'
        return f'<a href="{html.escape(href)}">{html.escape(text)}</a>'


def _source(source: str) -> str:
    parts = []
    for part in (p.strip() for p in source.split(";")):
        match = _evidence.SOURCE_PART.match(part)
        if match and match["rule"]:
            parts.append(f'<a href="#{html.escape(match["rule"])}--evidence">evidence</a>')
        elif part.startswith("https://"):
            url, _, rest = part.partition(" ")
            parts.append(f'<a href="{html.escape(url)}">{html.escape(url.split("/blob/")[-1] if "/blob/" in url else url)}</a>'
                         + (f" {html.escape(rest)}" if rest else ""))
        else:
            parts.append(html.escape(part))
    return "; ".join(parts)


CSS = """
body{font:15px/1.45 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#222}
h2{border-bottom:2px solid #ccc;margin-top:2.5rem} .rule{border:1px solid #ddd;border-radius:6px;padding:.6rem 1rem;margin:1rem 0}
.rule:target{border-color:#2a6;box-shadow:0 0 0 3px #cfe} .id{font-family:monospace;font-weight:bold}
.level{font-size:.8rem;padding:.1rem .4rem;border-radius:4px;background:#eee;margin-left:.5rem}
.MUST{background:#fdd} .SHOULD{background:#ffd} pre{background:#f6f6f6;padding:.5rem;overflow-x:auto;font-size:.85rem}
dl{display:grid;grid-template-columns:8rem minmax(0,1fr);gap:.25rem .8rem;margin:.4rem 0}
dt{font-weight:bold} dd{margin:0;min-width:0} table.status td,table.status th{padding:.1rem .6rem;border:1px solid #ddd}
nav a{margin-right:1rem} .muted{color:#595959}
.rule{overflow-wrap:anywhere} .rule pre{white-space:pre-wrap} details>summary{cursor:pointer;color:#1d3f7a}
"""


def render(out: Path, root: Path = ROOT, data=None, source_url: str | None = None) -> str:
    import os

    sources = Sources(root, out.parent, source_url or os.environ.get(SOURCE_URL_VARIABLE))
    catalogue = load_catalogue(root / "conformance" / "catalogue")
    evidence = _evidence.load(root / "conformance" / "evidence")
    tests = rule_tests(root / "conformance" / "suites")
    impl = reference_lines(root / "reference")
    columns, status = framework_status(out.parent / "results.json", data)
    histories = _history.timelines(evidence, root / "conformance" / "history")
    unrecorded = _history.unrecorded(evidence, root / "conformance" / "history")
    mode_histories = _modes.timelines(root / "conformance" / "history" / "modes")
    body = [f"<h1>autograd-conformance: the specification</h1>",
            f"<p>{len(catalogue.rules)} rules in {len(catalogue.suites)} suites. Generated by "
            f"<code>python -m conformance.spec</code> from the catalogue, the evidence, the suites and "
            f"the reference; statuses from <code>results.json</code>"
            f"{'' if columns else ' (none found: <code>python -m conformance.report</code> writes this page with them)'}. "
            f"Back to the <a href=\"index.html\">comparison report</a>.</p>",
            "<nav>" + "".join(f'<a href="#suite-{s}">{s}</a>' for s in catalogue.suites) + "</nav>"]
    for suite in catalogue.suites:
        rules = catalogue.of_suite(suite)
        body.append(f'<h2 id="suite-{suite}">{suite} <span class="muted">({len(rules)} rules, '
                    f'{sources.link(root / "conformance" / "catalogue" / f"{suite}.toml", "catalogue")})</span></h2>')
        for r in rules:
            rid = html.escape(r.id)
            parts = [f'<div class="rule" id="{rid}"><a class="id" href="#{rid}">{rid}</a>'
                     f'<span class="level {r.level}">{r.level}</span>',
                     f"<p>{html.escape(r.statement)}</p><dl>",
                     f"<dt>Why</dt><dd>{html.escape(r.rationale)}</dd>",
                     f"<dt>Source</dt><dd>{_source(r.source)}</dd>"]
            e = evidence.get(r.id)
            if e:
                parts.append(f'<dt id="{rid}--evidence">Evidence</dt><dd>'
                             f"<details><summary>the snippet and what torch 2.13 printed "
                             f"({len(e.snippet.strip().splitlines())} + "
                             f"{len(e.output.strip().splitlines())} lines; "
                             f"{sources.link(e.file, e.file.name)})</summary>"
                             f"<pre>{html.escape(e.snippet.strip())}</pre>"
                             f"<pre>{html.escape(e.output.strip())}</pre></details>"
                             + (f"<p>{html.escape(e.notes)}</p>" if e.notes else "") + "</dd>")
                parts.append(_history.spec_fragment(r.id, histories, unrecorded))
            parts.append(_modes.spec_fragment(r.id, mode_histories))
            names = tests.get(r.id, [])
            parts.append("<dt>Tests</dt><dd>" + (", ".join(
                f"{sources.link(path, f'{path.name}:{line}', line)} <code>{html.escape(name)}</code>"
                for name, path, line in names) or '<span class="muted">none</span>') + "</dd>")
            lines = impl.get(r.id, [])
            parts.append("<dt>Reference</dt><dd>" + ("<br>".join(
                f"{sources.link(path, f'{path.relative_to(root).as_posix()}:{line}', line)} <code>{html.escape(code)}</code>"
                for path, line, code in lines) or '<span class="muted">not named in reference/</span>') + "</dd>")
            if columns:
                parts.append('<dt>Status</dt><dd><table class="status"><tr>'
                             + "".join(f"<th>{html.escape(c)}</th>" for c in columns) + "</tr><tr>"
                             + "".join(f"<td>{html.escape(status.get((r.id, c), '—'))}</td>" for c in columns)
                             + "</tr></table></dd>")
            parts.append("</dl></div>")
            body.append("\n".join(parts))
    body.append(_reference_scope.render_html(root / "reference" / "scope.toml"))
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>autograd-conformance specification</title>"
            f"<style>{CSS}{_history.CSS}{_modes.CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def main(argv: list[str] | None = None) -> int:
    parser = cli.Parser("python -m conformance.spec",
                        "Write the specification page (every rule, its evidence, tests, "
                        "reference lines and statuses).")
    from conformance.outputs import OutputError, reports_dir, write_text

    default = reports_dir() / "spec.html"  # the checkout's reports/, or ./reports when installed
    parser.add_argument("--out", type=cli.output_file, default=default, help=f"default: {default}")
    parser.add_argument("--source-url", metavar="URL", default=None,
                        help="link source files as URL/<path in the repository>#L<line> (e.g. "
                             "https://github.com/ORG/autograd-conformance/blob/COMMIT); default: "
                             f"${SOURCE_URL_VARIABLE}, else relative paths in a checkout, else none")
    args = parser.parse_args(argv)
    from conformance.results import ResultsSchemaError

    try:
        page = render(args.out, source_url=args.source_url)
    except (CatalogueError, _evidence.EvidenceError, _reference_scope.ScopeError,
            ResultsSchemaError) as exc:
        # ResultsSchemaError: a results.json the report cannot read
        return parser.fail(exc)
    try:
        write_text(args.out, page)  # whole or not at all
    except (OutputError, OSError) as exc:
        return parser.fail(f"cannot write {args.out}: {exc}")
    print(f"spec: {args.out.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
