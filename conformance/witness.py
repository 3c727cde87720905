"""Witnesses: one short standalone script per root cause that shows the cause on the framework.

Why: a root cause is a claim about the framework ("Paddle drops the Python wrapper of a tensor it
still holds"). A verdict built on a wrong claim reads as a finding until someone re-runs it by
hand; a witness re-runs it every time. Each is at most ~15 lines that use only the framework
(bound as ``fw`` after the adapter's :meth:`~adapters.base.Adapter.preamble`), print what they
observe and exit non-zero where the framework shows the cause, 0 where it does not (torch 2.13
and the reference). A witness that stops reproducing marks its cause "fixed?": the cause (or
the framework) changed, and the expectations entry is wrong until someone looks.

Usage::

    python -m conformance.witness --adapter paddle          # the adapter's own expectations
    python -m conformance.witness --adapter torch --file adapters/expectations/paddle.toml \\
        --expect-clean                                       # every witness exits 0 here

One line per root cause: ``reproduces``, ``does not reproduce (fixed?)``, ``error: ...`` or
``no witness``. Exit 1 when a witness of a root cause that breaks rules does not reproduce or
errs (with ``--expect-clean``: when any witness does not exit 0); 4 on bad input.
"""
from __future__ import annotations

import ast
import dataclasses
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterable

from conformance import cli
from conformance.outcomes import Outcome

#: The most lines a witness may have (its text, blank lines and comments excluded).
MAX_LINES = 15
#: Modules a witness may import besides the framework: ones that observe, not ones that act
#: (threading only starts the threads a race needs).
ALLOWED_IMPORTS = {"gc", "sys", "warnings", "weakref", "threading"}  # threading: races


@dataclasses.dataclass
class Cause:
    """One root cause of an expectations file: its slug, kind and witness."""

    slug: str
    kind: str                       # "breaks" or "unsupported" (as the report ranks them)
    rules: list[str]
    witness: str = ""


@dataclasses.dataclass
class Result:
    status: str                     # "reproduces" | "does not reproduce" | "error" | "no witness"
    output: str = ""

    def line(self, slug: str) -> str:
        label = {"does not reproduce": "does not reproduce (fixed?)"}.get(self.status, self.status)
        detail = self.output.strip().splitlines()[-1][:160] if self.output.strip() else ""
        return f"{slug}: {label}" + (f" -- {detail}" if detail else "")


def causes(path: Path) -> list[Cause]:
    """The root causes of expectations file ``path`` with their witnesses, in file order."""
    from conformance.expectations import ExpectationsError, file_entries

    found: dict[str, Cause] = {}
    for exp in file_entries(path):
        slug = exp.root_cause or f"rule:{exp.rule}"
        cause = found.setdefault(slug, Cause(slug, "unsupported", []))
        cause.rules.append(exp.rule)
        if exp.outcome is not Outcome.UNSUPPORTED:
            cause.kind = "breaks"
        if exp.witness:
            if cause.witness and cause.witness != exp.witness:
                raise ExpectationsError(f"{path}: [{exp.rule}]: root cause {slug!r} has two "
                                        "different witnesses; one root cause, one witness")
            cause.witness = exp.witness
    return list(found.values())


def problems(witness: str, framework: str) -> list[str]:
    """What is wrong with a witness's text: too long, not Python, or importing more than the
    framework and the observing modules of :data:`ALLOWED_IMPORTS`."""
    out = []
    lines = [ln for ln in witness.strip().splitlines() if ln.strip() and not ln.strip().startswith("#")]
    if len(lines) > MAX_LINES:
        out.append(f"{len(lines)} lines (at most {MAX_LINES})")
    try:
        tree = ast.parse(witness)
    except SyntaxError as exc:
        return out + [f"does not parse: {exc}"]
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        for name in names:
            top = name.split(".")[0]
            if top not in ALLOWED_IMPORTS | {framework}:
                out.append(f"imports {name} (only {framework} and {', '.join(sorted(ALLOWED_IMPORTS))})")
    return out


def script(adapter, witness: str) -> str:
    """The witness as it runs: the adapter's preamble, ``fw`` bound to the framework, the text."""
    return f"{adapter.preamble()}fw = {adapter.module}\n{witness}"


def run(adapter, witness: str, timeout: float = 120) -> Result:
    """Run one witness in a fresh interpreter."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] +
                                        [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    try:
        proc = subprocess.run([sys.executable, "-c", script(adapter, witness)], capture_output=True,
                              text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return Result("error", f"still running after {timeout:g}s")
    output = (proc.stdout + proc.stderr).strip()
    if proc.returncode == 0:
        return Result("does not reproduce", proc.stdout)
    if proc.returncode < 0:
        return Result("reproduces", f"{proc.stdout.strip()} (killed by signal {-proc.returncode})")
    # (the framework's own log lines on stderr are not what the witness observed)
    last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
    if "Traceback (most recent call last)" in proc.stderr and not last.startswith(("AssertionError", "SystemExit")):
        return Result("error", last or output)
    return Result("reproduces", proc.stdout if proc.stdout.strip() else output)


def main(argv: Iterable[str] | None = None) -> int:
    parser = cli.Parser("python -m conformance.witness", __doc__.split("\n")[0])
    parser.add_argument("--adapter", required=True, help="the adapter whose framework runs the witnesses")
    parser.add_argument("--file", type=Path, help="an expectations file (default: the adapter's own)")
    parser.add_argument("--expect-clean", action="store_true",
                        help="every witness must exit 0 (a framework that follows the rules)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per witness")
    args = parser.parse_args(list(argv) if argv is not None else None)
    from adapters.base import load_adapter
    from conformance.tomlfile import FileError

    try:
        adapter = load_adapter(args.adapter)
        path = args.file or adapter.expectations_file()
        if not Path(path).is_file():
            raise ValueError(f"no expectations file {path}; give one with --file")
        found = causes(Path(path))
    except (ValueError, FileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 4
    failed = 0
    for cause in found:
        if not cause.witness:
            print(Result("no witness").line(cause.slug))
            continue
        result = run(adapter, cause.witness, args.timeout)
        print(result.line(cause.slug), flush=True)
        if args.expect_clean:
            failed += result.status != "does not reproduce"
        elif cause.kind == "breaks":
            failed += result.status != "reproduces"
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
