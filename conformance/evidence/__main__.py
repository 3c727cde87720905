"""``python -m conformance.evidence --record [SUITE ...]`` | ``--check [SUITE ...]``

--record runs every snippet on the installed torch and writes its output into the entry;
--check runs them and lists every entry whose output differs (exit 1); on another torch release
it reports that release's differences instead. --record needs torch 2.13.
"""
from __future__ import annotations

import sys
from pathlib import Path

from conformance import cli, tomlfile
from conformance import evidence as ev
from conformance.outputs import needs_checkout, write_text


def _block(text: str) -> str:
    """A snippet or an output: verbatim between ''' where it can be (conformance.tomlfile)."""
    return tomlfile.string(text.strip("\n") + "\n", multiline=True)


def write(path: Path, entries: list[ev.Evidence]) -> None:
    """Rewrite ``path``: its leading comment block, then the entries in canonical form."""
    header = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        header.append(line)
    parts = ["\n".join(header)] if header else []
    for e in entries:
        lines = ["[[evidence]]", f"rule = {tomlfile.string(e.rule)}",
                 f"snippet = {_block(e.snippet)}", f"output = {_block(e.output)}"]
        if e.notes:
            lines.append(f"notes = {tomlfile.string(e.notes)}")
        parts.append("\n".join(lines))
    write_text(path, "\n\n".join(parts) + "\n")  # whole or not at all


def main(argv: list[str] | None = None) -> int:
    parser = cli.Parser("python -m conformance.evidence", __doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--record", action="store_true", help="run the snippets and write their outputs")
    mode.add_argument("--check", action="store_true", help="run the snippets and compare with the recorded outputs")
    parser.add_argument("suites", nargs="*", help="suite names (default: all)")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        return parser.fail("torch is not installed; the evidence is torch 2.13's output")
    if not torch.__version__.startswith(ev.TORCH_VERSION):
        if args.record:
            return parser.fail(f"torch {torch.__version__} found; the evidence is recorded "
                               f"on torch {ev.TORCH_VERSION} (to keep another release's output, "
                               f"use python -m conformance.history record)")
        # re-running the evidence is the quickest way to see what another release changed
        print(f"torch {torch.__version__}: the evidence was recorded on torch {ev.TORCH_VERSION}; "
              f"each DIFFERS below is this release's behaviour (or a name it lacks)")
    if args.record and needs_checkout("--record"):
        return parser.fail(needs_checkout("--record"))
    try:
        entries = ev.load()
    except ev.EvidenceError as exc:
        return parser.fail(exc)
    suites = set(args.suites) or {e.suite for e in entries.values()}
    unknown = suites - {p.stem for p in ev.DIRECTORY.glob("*.toml")}
    if unknown:
        return parser.fail(f"no evidence file for suite(s) {', '.join(sorted(unknown))}")
    differing = 0
    by_file: dict[Path, list[ev.Evidence]] = {}
    for e in entries.values():
        if e.suite not in suites:
            continue
        out = ev.run_snippet(e.snippet)
        if args.check and ev.normalise(out) != ev.normalise(e.output):
            differing += 1
            print(f"DIFFERS {e.rule}\n--- recorded\n{e.output.strip()}\n--- now\n{out}\n")
        by_file.setdefault(e.file, []).append(ev.Evidence(e.rule, e.snippet, out, e.notes, e.file))
    if args.record:
        for path, items in by_file.items():
            write(path, items)
            print(f"recorded {len(items)} entries in {path.name}")
        return 0
    print(f"{sum(map(len, by_file.values()))} snippets run, {differing} differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
