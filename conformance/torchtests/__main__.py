"""``python -m conformance.torchtests PATH/TO/test_autograd.py [--select lifetime] [--json OUT]``

Runs PyTorch's lifetime tests from the given copy of ``test/test_autograd.py`` on torch and, for
those that pass there, with ``torch`` resolving to the reference engine; prints how many pass on
both (and the ratio), then the failures grouped by the API the reference lacks and by the
behaviour that differs. ``--json OUT`` writes every test's record. ``--only NAME`` (repeatable)
runs just those tests. Needs torch in the interpreter that runs it.

Exit status: 0 after a run, 4 on a usage error (bad path, unknown selection, no torch).
"""
from __future__ import annotations

import importlib.util
import json
import sys
from collections import defaultdict
from pathlib import Path

from conformance import cli
from conformance.outputs import OutputError, write_text
from conformance.torchtests import run as runner
from conformance.torchtests import selection as sel
from conformance.torchtests import source


def _usage_error(message: str) -> int:
    return cli.usage_error("python -m conformance.torchtests", message)


def render(result: dict) -> str:
    counts = result["counts"]
    out = [f"PyTorch lifetime tests: {result['file']} (sha256 {result['file_sha256'][:12]})",
           f"torch {result['torch_version']}, reference {result['reference_version']}, {result['date']}",
           f"selected: {result['selected']}"
           + (f" ({counts['not_in_file']} not in this file)" if counts["not_in_file"] else ""),
           f"pass on torch: {result['pass_on_torch']}"
           f" (not counted: {counts['fails_on_torch']} fail on torch, {counts['not_applicable']} not applicable)"]
    ratio = result["ratio"]
    out.append(f"pass on reference: {result['pass_on_reference']} of {result['pass_on_torch']}"
               + (f" = {ratio:.1%}" if ratio is not None else ""))
    out.append(f"fail on reference: {counts['missing_api']} missing an API, {counts['difference']} a difference"
               f" in behaviour, {counts['message']} the expected exception with another message")
    missing = defaultdict(list)
    differences = []
    for record in result["tests"]:
        if record["category"] == "missing_api":
            missing[record["reference"]["detail"]].append(record["test"].split(".")[1])
        elif record["category"] in ("difference", "message"):
            detail = record["reference"].get("detail", "")
            concept = record["concept"] + (" (message)" if record["category"] == "message" else "")
            differences.append((concept, record["test"].split(".")[1], detail))
    if missing:
        out.append("")
        out.append("missing APIs (tests):")
        for api, tests in sorted(missing.items(), key=lambda item: (-len(item[1]), item[0])):
            out.append(f"  {len(tests):3d}  {api}: {', '.join(sorted(tests))}")
    if differences:
        out.append("")
        out.append("differences (concept, test, what happened on the reference):")
        for concept, test, detail in sorted(differences):
            out.append(f"  {concept:27s} {test}: {detail}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = cli.Parser("python -m conformance.torchtests", __doc__.splitlines()[0])
    parser.add_argument("path", help="a copy of PyTorch's test/test_autograd.py")
    parser.add_argument("--select", default="lifetime", help="bundled selection name or a .toml file (default: lifetime)")
    parser.add_argument("--json", metavar="OUT", type=cli.output_file, help="write every test's record here")
    parser.add_argument("--timeout", type=cli.positive_float, default=120.0, help="seconds per test (default 120; times this machine's "
                        "time-limit scale, conformance/time_scale.py)")
    parser.add_argument("--only", action="append", metavar="NAME", help="run only this test (Class.test or test)")
    args = parser.parse_args(argv)
    try:
        selection = sel.load(args.select)
        source.read(args.path)
    except (sel.SelectionError, source.SourceError) as exc:
        return _usage_error(str(exc))
    if importlib.util.find_spec("torch") is None:
        return _usage_error("torch is not installed in this interpreter (pip install torch==2.13.0)")
    if args.only:
        unknown = [n for n in args.only if n not in selection and not any(t.split(".")[1] == n for t in selection)]
        if unknown:
            return _usage_error(f"--only: not in the selection: {', '.join(unknown)}")
    from conformance import time_scale  # a limit on hangs: longer on a slow or busy machine

    result = runner.run(Path(args.path), selection, time_scale.scaled(args.timeout), args.only)
    print(render(result))
    if args.json:
        try:  # whole or not at all
            write_text(Path(args.json), json.dumps(result, indent=1) + "\n")
        except OutputError as exc:
            return _usage_error(str(exc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
