"""``python -m conformance.history record ADAPTER VERSION --python EXE`` | ``merge DIR ...`` |
``releases ADAPTER`` | ``changes`` | ``modes RESULTS_DIR``

record: run every evidence snippet under EXE (an interpreter with that release installed) into
conformance/history/<adapter>/<version>.json (resumable; only new or edited snippets re-run).
merge: copy the release files that other machines recorded (their conformance/history
folders, e.g. CI artifacts) into this one. releases: the adapter's releases, one per line
(version python), for a CI matrix. changes: every rule whose output changed between two
recorded releases, with both outputs. modes: for each mode's results file in RESULTS_DIR (torch
under torch.compile) with the eager results file of the same release, the rules whose outcome
differs, into conformance/history/modes/<mode>/<version>.json (conformance/history/modes.py).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from conformance import cli, history
from conformance.evidence import EvidenceError
from conformance.outputs import needs_checkout


def _version(text: str) -> str:
    try:
        return history.release_version(text)
    except history.HistoryError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _adapter(text: str) -> str:
    """A folder name of the history (``../x`` would write outside it)."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", text) or ".." in text:
        raise argparse.ArgumentTypeError(f"{text!r} is not an adapter name (letters, digits, "
                                         f"_ . -, as in torch)")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = cli.Parser("python -m conformance.history", __doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run the snippets under one release")
    rec.add_argument("adapter", type=_adapter)
    rec.add_argument("version", type=_version)
    rec.add_argument("--python", required=True, type=cli.executable, help="interpreter that has the release installed")
    rec.add_argument("--timeout", type=cli.positive_float, default=60.0, help="seconds a snippet may take")
    rec.add_argument("--directory", type=Path, default=None,
                     help="default: the checkout's conformance/history (installed: required)")
    mer = sub.add_parser("merge", help="combine release files recorded elsewhere")
    mer.add_argument("sources", nargs="+", type=Path)
    mer.add_argument("--directory", type=Path, default=None,
                     help="default: the checkout's conformance/history (installed: required)")
    rel = sub.add_parser("releases", help="list an adapter's releases (version python)")
    rel.add_argument("adapter")
    cha = sub.add_parser("changes", help="list every change between recorded releases")
    cha.add_argument("--directory", type=Path, default=history.DIRECTORY)
    mod = sub.add_parser("modes", help="record what each mode changes against eager, per release")
    mod.add_argument("results_dir", type=Path, help="the runs' results files (reports/results)")
    mod.add_argument("--directory", type=Path, default=None,
                     help="default: the checkout's conformance/history/modes (installed: required)")
    args = parser.parse_args(argv)
    if args.command in ("record", "merge", "modes") and args.directory is None:
        if needs_checkout(args.command):  # installed: never write into the package itself
            return cli.usage_error(parser.prog, needs_checkout(args.command) + ", or give "
                                   "--directory DIR")
        args.directory = history.DIRECTORY
        if args.command == "modes":
            from conformance.history import modes

            args.directory = modes.DIRECTORY
    from adapters.base import builtin_adapter_classes

    try:
        if args.command == "releases":
            cls = builtin_adapter_classes().get(args.adapter)
            if cls is None:
                raise history.HistoryError(f"no built-in adapter {args.adapter!r}")
            for r in cls.releases:
                print(r["version"], r["python"])
            return 0
        if args.command == "changes":
            from conformance import evidence as ev
            from conformance.history import render

            for line in render.text(ev.load(), args.directory):
                print(line)
            return 0
        if args.command == "modes":
            from conformance.history import modes

            modes.record_dir(args.results_dir, args.directory)
            return 0
        if args.command == "merge":
            from conformance.history.merge import merge

            for line in merge(args.sources, args.directory):
                print(line)
            return 0
        cls = builtin_adapter_classes().get(args.adapter)
        module = cls.module if cls is not None else args.adapter
        from conformance.history.record import record

        path = record(args.adapter, module, args.version, args.python, args.directory,
                      timeout=args.timeout)
        print(f"wrote {path}")
        return 0
    except (history.HistoryError, EvidenceError) as exc:
        return parser.fail(exc)


if __name__ == "__main__":
    sys.exit(main())
