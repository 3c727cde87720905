"""The interpreter in a subprocess, for frameworks that may crash (OneFlow segfaults on some
operations): ``python -m conformance.differential.worker --adapter oneflow --fd N``.

Protocol (JSON lines): the parent writes ``{"steps": [[line, ...], ...], "forward_ad": bool}``
on stdin; the worker answers on file descriptor N (stdout stays free for the framework's own
chatter): first ``{"type": "ready", "version", "probe"}`` (``interpreter.probe_features``), then per program one
``{"type": "step", "i"}`` before each step (so that a crash is pinned to its step) and one
``{"type": "result", "trace", "error"}``. ``--plant module:function`` calls that function
(``--plant <id>`` applies that mutant of conformance/mutants)
after the adapter loads (the planted-bug test plants its bug this way).

Standard library plus this repository's ``adapters`` and ``interpreter``: no hypothesis.
"""
from __future__ import annotations

import importlib
import json
import os
import sys


def main(argv=None) -> int:
    from conformance import cli

    parser = cli.Parser("python -m conformance.differential.worker",
                        "The differential tester's framework worker (started by python -m "
                        "conformance.differential --subprocess; not a tool to run by hand).")
    parser.add_argument("--adapter", required=True)
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--plant", default=None)
    args = parser.parse_args(argv)
    out = os.fdopen(args.fd, "w", buffering=1)

    def send(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    from adapters.base import load_adapter
    from conformance.differential.interpreter import probe_features, run_steps

    adapter = load_adapter(args.adapter)
    adapter.fw  # noqa: B018 - import the framework before the plant and the probe
    if args.plant and ":" not in args.plant:  # a mutant id of conformance/mutants
        from conformance.mutants import activate

        activate(args.plant)
    elif args.plant:
        module, _, func = args.plant.partition(":")
        getattr(importlib.import_module(module), func)()
    send({"type": "ready", "version": adapter.framework_version(),
          "probe": probe_features(adapter)})
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        result = run_steps(adapter, request["steps"], request.get("forward_ad", False),
                           on_step=lambda i: send({"type": "step", "i": i}))
        send({"type": "result", **result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
