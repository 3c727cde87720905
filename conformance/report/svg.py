"""A leak's keep-alive chain (conformance.liveness.KeepAliveChain.as_data()) as an SVG picture.

Boxes top to bottom, root first and the leaked object last, each arrow labelled with the
attribute, key or closure variable that holds the next object; a reference cycle gets an arrow
back from the last box to the first. Plain SVG text (escaped), no scripts, no external fonts.
"""
from __future__ import annotations

from html import escape
from typing import Any

BOX_W, BOX_H, GAP, PAD = 320, 34, 46, 16


def chain_svg(chain: dict[str, Any]) -> str:
    types = list(chain.get("types") or [])
    kind = chain.get("kind", "")
    cycle = kind == "cycle" and len(types) > 2
    if cycle:
        types = types[:-1]  # the last entry is the first object again
    if not types:
        types = [chain.get("note") or kind or "?"]
    edges = {int(e[0]): str(e[2]) for e in chain.get("edges") or [] if len(e) == 3}
    width = BOX_W + 2 * PAD + (150 if cycle else 0)
    height = PAD * 2 + len(types) * BOX_H + (len(types) - 1) * GAP + 24
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chain" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="keep-alive chain ({escape(kind)})">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
           'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
           'fill="#555"/></marker></defs>',
           f'<text x="{PAD}" y="{PAD}" font-size="12" fill="#333">'
           f'{escape({"root": "reachable from a root", "cycle": "reference cycle", "external": "held outside Python"}.get(kind, kind))}'
           '</text>']
    top = PAD + 12
    for i, name in enumerate(types):
        y = top + i * (BOX_H + GAP)
        last = i == len(types) - 1
        fill = "#fde2e2" if last else "#eef2f8"
        out.append(f'<rect x="{PAD}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="6" '
                   f'fill="{fill}" stroke="#667"/>')
        out.append(f'<text x="{PAD + BOX_W / 2}" y="{y + BOX_H / 2 + 5}" font-size="13" '
                   f'text-anchor="middle" font-family="monospace">{escape(_short(name))}</text>')
        if not last:
            x = PAD + BOX_W / 2
            out.append(f'<line x1="{x}" y1="{y + BOX_H}" x2="{x}" y2="{y + BOX_H + GAP - 2}" '
                       f'stroke="#555" marker-end="url(#arrow)"/>')
            out.append(f'<text x="{x + 8}" y="{y + BOX_H + GAP / 2 + 4}" font-size="12" '
                       f'font-family="monospace" fill="#a33">{escape(edges.get(i, "?"))}</text>')
    if cycle:
        y_last = top + (len(types) - 1) * (BOX_H + GAP) + BOX_H / 2
        y_first = top + BOX_H / 2
        x0, x1 = PAD + BOX_W, PAD + BOX_W + 60
        out.append(f'<path d="M{x0},{y_last} L{x1},{y_last} L{x1},{y_first} L{x0 + 2},{y_first}" '
                   f'fill="none" stroke="#555" marker-end="url(#arrow)"/>')
        label = edges.get(len(types) - 1, "?")
        out.append(f'<text x="{x1 + 6}" y="{(y_last + y_first) / 2}" font-size="12" '
                   f'font-family="monospace" fill="#a33">{escape(label)}</text>')
    note = chain.get("note")
    if note:
        out.append(f'<text x="{PAD}" y="{height - 6}" font-size="11" fill="#555">'
                   f'{escape(_short(note, 90))}</text>')
    out.append("</svg>")
    return "".join(out)


def _short(text: str, n: int = 40) -> str:
    text = str(text)
    return text if len(text) <= n else text[: n - 1] + "…"
