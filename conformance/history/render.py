"""The history as readers see it: per rule a timeline, and the changes between releases.

``timelines`` reads every adapter's recorded releases (conformance/history/<adapter>/) against
today's evidence; ``since`` answers "since which release does today's output hold, and what was
it before"; ``changes`` lists every release where a rule's output changed from the previous
recorded release, with the upstream change named in ``<adapter>/upstream.toml`` where known;
``unrecorded`` names, per rule, the recorded releases that have no observation of it yet (a
rule added after they were recorded: a visible state, not an error; ``nox -s history`` records
it, and only it, in each).
HTML fragments for the spec page (``spec_fragment``) and the report (``report_section``) and a
text listing (``python -m conformance.history changes``) are made from the same data.
"""
from __future__ import annotations

import dataclasses
import html
import re
from pathlib import Path

from conformance import history
from conformance.tomlfile import FileError, read_toml

ADDRESS = re.compile(r"0x[0-9a-f]{6,}")


@dataclasses.dataclass(frozen=True)
class Observation:
    version: str
    output: str
    status: str      # same | absent | differs (conformance.history.status)
    stale: bool      # the snippet (or prelude) was edited after this was recorded


@dataclasses.dataclass(frozen=True)
class Change:
    adapter: str
    rule: str
    before: Observation
    after: Observation
    upstream: str = ""
    url: str = ""

    @property
    def kind(self) -> str:
        """``arrives`` (the API appears), ``removed``, ``reworded`` (only the text of a message
        changed: same lines, same exception or warning classes) or ``changes``."""
        if self.before.status == "absent":
            return "arrives"
        if self.after.status == "absent":
            return "removed"
        return "reworded" if reworded(self.before.output, self.after.output) else "changes"


MESSAGE = re.compile(r"^((?:raises|uncaught) \w+|\w*(?:Warning|Error)): ")


def reworded(before: str, after: str) -> bool:
    """Whether two outputs differ only in the wording of messages of the same classes."""
    a, b = comparable(before).splitlines(), comparable(after).splitlines()
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x == y:
            continue
        mx, my = MESSAGE.match(x), MESSAGE.match(y)
        if not (mx and my and mx.group(1) == my.group(1)):
            return False
    return a != b


def comparable(output: str) -> str:
    """Output as compared between releases: addresses (``0x7f..``) do not count."""
    return ADDRESS.sub("0x…", "\n".join(line.rstrip() for line in output.strip().splitlines()))


def timelines(evidence: dict, directory: Path = history.DIRECTORY) -> dict[str, dict[str, list[Observation]]]:
    """adapter -> rule -> observations, oldest release first (rules with evidence only)."""
    found: dict[str, dict[str, list[Observation]]] = {}
    folders = sorted(p for p in Path(directory).iterdir() if p.is_dir()) if Path(directory).is_dir() else []
    for folder in folders:
        releases = history.load(folder.name, directory)
        if not releases:
            continue
        from conformance.evidence import PRELUDE

        rules: dict[str, list[Observation]] = {}
        for rule, entry in evidence.items():
            current = history.digest(PRELUDE, entry.snippet)
            for data in releases:
                obs = data["observations"].get(rule)
                if obs is None:
                    continue
                rules.setdefault(rule, []).append(Observation(
                    version=data["version"], output=obs["output"],
                    status=history.status(obs["output"], entry.output, entry.snippet),
                    stale=obs.get("digest") != current))
        found[folder.name] = rules
    return found


def unrecorded(evidence: dict, directory: Path = history.DIRECTORY) -> dict[str, dict[str, list[str]]]:
    """adapter -> rule -> the recorded releases (oldest first) that have no observation of that
    rule yet; rules recorded everywhere are left out."""
    found: dict[str, dict[str, list[str]]] = {}
    folders = sorted(p for p in Path(directory).iterdir() if p.is_dir()) if Path(directory).is_dir() else []
    for folder in folders:
        releases = history.load(folder.name, directory)
        for rule in sorted(evidence):
            missing = [d["version"] for d in releases if rule not in d["observations"]]
            if missing:
                found.setdefault(folder.name, {})[rule] = missing
    return found


def releases_text(versions: list[str]) -> str:
    """``1.1.0, 1.2.0 and 2.15.0``."""
    return versions[0] if len(versions) == 1 else ", ".join(versions[:-1]) + " and " + versions[-1]


def since(observations: list[Observation]) -> tuple[Observation | None, Observation | None]:
    """(the oldest release from which every later one prints today's output, the release
    before it) -- (None, newest) when the newest recorded release itself differs."""
    first = None
    for obs in reversed(observations):
        if obs.status != "same":
            return first, obs
        first = obs
    return first, None


def _upstream(adapter: str, directory: Path) -> dict:
    path = Path(directory) / adapter / "upstream.toml"
    return read_toml(path, history.HistoryError) if path.is_file() else {}


def framework_name(adapter: str, directory: Path = history.DIRECTORY) -> str:
    """How the framework calls itself (``framework`` in upstream.toml), else the adapter name."""
    return str(_upstream(adapter, directory).get("framework", adapter))


def upstream_notes(adapter: str, directory: Path = history.DIRECTORY) -> list[dict]:
    """``[[change]]`` entries of ``<adapter>/upstream.toml``: release, rules (optional: every
    change of that release), what, url."""
    path = Path(directory) / adapter / "upstream.toml"
    notes = _upstream(adapter, directory).get("change", [])
    for index, note in enumerate(notes, 1):
        if not isinstance(note.get("release"), str) or not isinstance(note.get("what"), str):
            raise history.HistoryError(f"{path}: change #{index} needs 'release' and 'what'")
    return notes


def changes(evidence: dict, directory: Path = history.DIRECTORY) -> list[Change]:
    """Every (rule, release) whose output differs from the previous recorded release's."""
    found = []
    for adapter, rules in timelines(evidence, directory).items():
        notes = upstream_notes(adapter, directory)
        for rule, observations in sorted(rules.items()):
            for before, after in zip(observations, observations[1:]):
                if comparable(before.output) == comparable(after.output):
                    continue
                if before.status == after.status == "absent":
                    continue  # still missing, another missing name on the way
                note = next((n for n in notes if n["release"] == after.version
                             and (not n.get("rules") or rule in n["rules"])), {})
                found.append(Change(adapter, rule, before, after, note.get("what", ""),
                                    note.get("url", "")))
    return found


# -- text -------------------------------------------------------------------------------
def text(evidence: dict, directory: Path = history.DIRECTORY) -> list[str]:
    lines = []
    for c in changes(evidence, directory):
        if c.kind in ("arrives", "reworded"):
            continue
        stale = " (stale: snippet edited since)" if c.before.stale or c.after.stale else ""
        lines.append(f"{c.adapter} {c.after.version} {c.rule}{stale}"
                     + (f"  [{c.upstream}]" if c.upstream else ""))
        lines.append(f"  {c.before.version}: " + c.before.output.strip().replace("\n", "\n    "))
        lines.append(f"  {c.after.version}: " + c.after.output.strip().replace("\n", "\n    "))
    for adapter, rules in unrecorded(evidence, directory).items():
        for rule, versions in rules.items():
            lines.append(f"{adapter} {rule}: not yet recorded under {releases_text(versions)} "
                         f"(nox -s history records it)")
    return lines


# -- HTML -------------------------------------------------------------------------------
CSS = """
.h-same{background:#dfd;text-align:center} .h-differs{background:#fdd;text-align:center}
.h-absent{background:#eee;color:#888;text-align:center} .h-unrecorded{color:#8a5a00} table.history td{vertical-align:top;border:1px solid #ddd}
table.history pre{margin:.2rem 0;white-space:pre-wrap;max-width:28rem}
div.strip{max-width:100%;overflow-x:auto} table.strip{table-layout:fixed;width:100%;font-size:.75rem}
table.strip th,table.strip td{padding:.1rem .15rem;overflow-wrap:anywhere;text-align:center}
"""
SYMBOL = {"same": "=", "differs": "≠", "absent": "–"}


def _pre(text: str, limit: int = 0) -> str:
    """``text`` as a <pre>; ``limit``: at most that many characters (the page stays small; the
    spec page has the whole output)."""
    text = text.strip()
    if limit and len(text) > limit:
        text = text[:limit].rstrip() + " …"
    return f"<pre>{html.escape(text) or '(nothing printed)'}</pre>"


def _not_yet(versions: list[str]) -> str:
    return (f'<p class="h-unrecorded">Not yet recorded under these releases: '
            f"{html.escape(releases_text(versions))} (<code>nox -s history</code> records "
            f"it).</p>")


def spec_fragment(rule: str, found: dict[str, dict[str, list[Observation]]],
                  missing: dict[str, dict[str, list[str]]] | None = None) -> str:
    """``<dt>History</dt><dd>…</dd>`` for one rule of the spec page ("" without history).
    ``missing``: :func:`unrecorded`, the releases that have not recorded the rule yet."""
    parts = []
    missing = missing or {}
    for adapter in dict.fromkeys([*found, *missing]):
        observations = found.get(adapter, {}).get(rule)
        not_yet = missing.get(adapter, {}).get(rule, [])
        if not observations:
            if not_yet:
                parts.append(f"<dt>History ({html.escape(adapter)})</dt><dd>{_not_yet(not_yet)}</dd>")
            continue
        first, before = since(observations)
        if first is None:
            head = (f"{adapter} {before.version}, the newest release recorded, does not print "
                    f"today's output" + (" (it lacks the API)" if before.status == "absent" else ":"))
        elif before is None:
            head = f"today's output holds in every recorded {adapter} release (since {first.version} at least)"
        else:
            head = (f"today's output holds since {adapter} {first.version}; before, in {before.version}, "
                    + ("the API was absent" if before.status == "absent" else "it printed:"))
        body = html.escape(head)
        if before is not None and before.status != "absent":
            body += f"<details><summary>{html.escape(before.version)}'s output</summary>{_pre(before.output)}</details>"
        cells = "".join(
            f'<td class="h-{o.status}" title="{html.escape(o.output.strip()[:300])}">'
            f"{SYMBOL[o.status]}{'*' if o.stale else ''}</td>" for o in observations)
        heads = "".join(f"<th>{html.escape(o.version)}</th>" for o in observations)
        stale = any(o.stale for o in observations)
        body += (f'<div class="strip"><table class="status strip"><tr>{heads}</tr><tr>{cells}</tr>'
                 f'</table></div>'
                 f'<span class="muted">= today\'s output, ≠ other output, – API absent'
                 + ("; * stale: the snippet was edited after this release was recorded "
                    "(<code>nox -s history</code> re-runs it)" if stale else "") + "</span>")
        if not_yet:
            body += _not_yet(not_yet)
        parts.append(f"<dt>History ({html.escape(adapter)})</dt><dd>{body}</dd>")
    return "\n".join(parts)


def report_section(evidence: dict, directory: Path = history.DIRECTORY, spec_href: str = "spec.html") -> str:
    """The report's "<framework>'s lifetime changes by release" section ("" without history)."""
    found = changes(evidence, directory)
    missing = unrecorded(evidence, directory)
    if not found and not missing:
        return ""
    adapters = list(dict.fromkeys([*(c.adapter for c in found), *missing]))
    names = " and ".join(framework_name(a, directory) for a in adapters)
    out = [f'<section id="history"><style>{CSS}</style><h2>{html.escape(names)}\'s lifetime changes '
           f'by release</h2>'
           "<p>Every rule's evidence snippet run under older releases (<code>nox -s history</code>, "
           "data in <code>conformance/history/</code>). A change is a release whose output differs "
           "from the previous recorded release's; the arrival of an API is counted, not listed. "
           "Entries marked stale were recorded before their snippet was last edited.</p>"]
    for adapter in adapters:
        mine = [c for c in found if c.adapter == adapter]
        arrivals = [c for c in mine if c.kind == "arrives"]
        reworded_ = [c for c in mine if c.kind == "reworded"]
        rows = []
        for c in (c for c in mine if c.kind not in ("arrives", "reworded")):
            stale = " <em>stale</em>" if c.before.stale or c.after.stale else ""
            # the page links nothing outside itself: the address is shown, not linked
            link = html.escape(c.upstream) + (f" <code>{html.escape(c.url)}</code>" if c.url else "")
            rows.append(
                f"<tr><td>{html.escape(c.after.version)}</td>"
                f'<td><a href="{spec_href}#{html.escape(c.rule)}">{html.escape(c.rule)}</a>{stale}</td>'
                f"<td>{html.escape(c.before.version)}{_pre(c.before.output, 90)}</td>"
                f"<td>{_pre(c.after.output, 90)}</td><td>{link}</td></tr>")
        by_release: dict[str, list[str]] = {}
        for c in reworded_:
            by_release.setdefault(c.after.version, []).append(c.rule)
        wording = "".join(f"<li>{html.escape(v)}: " + ", ".join(
            f'<a href="{spec_href}#{html.escape(r)}">{html.escape(r)}</a>' for r in rules) + "</li>"
            for v, rules in by_release.items())
        out.append(f"<h3>{html.escape(adapter)}</h3><p>{len(rows)} changes; {len(reworded_)} where "
                   f"only a message's wording changed (below the table); {len(arrivals)} where "
                   f"the API arrives. Outputs are cut at 90 characters; the spec page has them "
                   f"whole.</p>"
                   '<table class="history"><tr><th>release</th><th>rule</th><th>before</th>'
                   "<th>after</th><th>upstream change</th></tr>" + "".join(rows) + "</table>"
                   + (f"<p>Messages reworded, same behaviour:</p><ul>{wording}</ul>" if wording else ""))
        not_yet = missing.get(adapter, {})
        if not_yet:
            out.append(f'<p class="h-unrecorded">{len(not_yet)} rule(s) not yet recorded under '
                       f"these releases (added since; <code>nox -s history</code> records "
                       f"them, the changes above do not count them yet):</p><ul>" + "".join(
                           f'<li><a href="{spec_href}#{html.escape(r)}">{html.escape(r)}</a>: '
                           f"{html.escape(releases_text(v))}</li>" for r, v in not_yet.items())
                       + "</ul>")
    out.append("</section>")
    return "\n".join(out)
