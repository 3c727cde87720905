"""Run evidence snippets: in this process (``run_snippet``) or as a child process of any Python.

Standard library only, and syntax Python 3.7 accepts: ``python -I runner.py`` is what the
history (conformance/history) starts in the interpreter of an old framework release, which
cannot import the rest of the harness. Called that way it reads one JSON object on stdin,
``{"prelude": str, "module": str, "snippets": [[rule, snippet, tag], ...], "out": path}``, and
appends one JSON line per snippet (rule, tag, output) to ``out`` as soon as it has run (a first line names the framework's
version), so the parent sees how far a run got when a snippet hangs or crashes the process.
"""
from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import sys


def run_snippet(prelude: str, snippet: str) -> str:
    """What ``snippet`` prints after ``prelude``; an escaping exception ends it as attempt() would."""
    namespace = {"__name__": "__evidence__"}
    buffer = io.StringIO()
    _close_forward_levels()  # whatever ran before in this process (a test, a tool)
    with contextlib.redirect_stdout(buffer):
        try:
            exec(compile(prelude, "<prelude>", "exec"), namespace)
            exec(compile(snippet, "<snippet>", "exec"), namespace)
        except Exception as exc:  # noqa: BLE001 - the output records it
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            print("uncaught {}: {}".format(type(exc).__name__, first))
    # The namespace is not cleared: a snippet's weakref callbacks and finalizers may still need
    # its names; the cyclic collector frees it (functions refer to it as their globals).
    gc.enable()  # a snippet that checks refcount-only freeing disables gc
    _close_forward_levels()
    return buffer.getvalue().strip()


def _close_forward_levels() -> None:
    """Exit every forward-AD level left open: a snippet that ends inside one (an uncaught
    error, a thread that never exits) would make the next snippet's level a nested one, since
    levels are process-wide. Besides the levels Python counts, a level entered where that count
    does not see it (through ``torch._C`` directly, by code that ran earlier in the process)
    stays open in C++; nesting is refused, so the one that can be open has id 0."""
    forward_ad = sys.modules.get("torch.autograd.forward_ad")
    if forward_ad is None:
        return
    while getattr(forward_ad, "_current_level", -1) >= 0:
        forward_ad.exit_dual_level()
    engine = getattr(sys.modules.get("torch"), "_C", None)
    try:
        engine._exit_dual_level(level=0)
    except Exception:  # noqa: BLE001 - none open (the usual case), or a release without it
        pass


def _append(fh, record: dict) -> None:
    fh.write(json.dumps(record) + "\n")
    fh.flush()
    os.fsync(fh.fileno())


def main() -> None:
    job = json.loads(sys.stdin.read())
    with open(job["out"], "a", encoding="utf-8") as fh:
        try:
            module = __import__(job["module"])
            version = str(getattr(module, "__version__", "unknown"))
        except Exception as exc:  # noqa: BLE001 - the parent reports it in one line
            _append(fh, {"import_error": "{}: {}".format(type(exc).__name__, exc)})
            os._exit(3)
        _append(fh, {"version": version, "python": "{}.{}.{}".format(*sys.version_info[:3])})
        for rule, snippet, tag in job["snippets"]:
            _append(fh, {"rule": rule, "digest": tag, "output": run_snippet(job["prelude"], snippet)})
    sys.stdout.flush()
    os._exit(0)  # a snippet's leftover non-daemon thread must not keep the process alive


if __name__ == "__main__":
    if len(sys.argv) > 1 or sys.stdin.isatty():  # run by hand: one line, as every tool's
        sys.stderr.write("python -m conformance.evidence.runner: an internal worker that reads a "
                         "JSON job on stdin; run python -m conformance.evidence or "
                         "python -m conformance.history instead\n")
        sys.exit(4)
    main()
