"""Instructions the reference engine spends per op of the benchmark chain, counted by callgrind.

Why: wall-clock ratios from ``nox -s bench`` move by a third between two runs on a shared
machine, which hides a 5% change. An instruction count does not depend on other processes, so
it is what to compare between two commits (run this in each checkout, same Python and numpy).

What is counted: the reverse-mode chain of bench_chain.py (1000 ops, forward plus backward
of the sum) run ``--rounds`` times, minus the same process with no round, so interpreter
start-up, the imports and a first warm-up chain cancel out. A first unmeasured run writes
the bytecode caches, so neither measured run compiles. ``PYTHONHASHSEED`` is fixed: string hashing then takes the same
path in both. What remains varies by about 1% between identical runs.

    python benchmarks/instructions.py [--size 10] [--rounds 5]

Needs valgrind on PATH. Exit 4 with one line when it is missing or an argument is wrong.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def _child(size: int, rounds: int) -> None:
    """The measured program: import everything and run one chain first, then ``rounds`` chains."""
    sys.path[:0] = [HERE, os.path.dirname(HERE)]  # this checkout's reference, not an installed one
    import reference  # noqa: F401 - imported in both runs, so its cost cancels out
    from bench_chain import initial_values, reference_chain

    x = initial_values(size)
    reference_chain(x)  # in both runs: first-call work (caches numpy and the engine fill) cancels out too
    for _ in range(rounds):
        reference_chain(x)


def collected(valgrind_output: str) -> int:
    """The total instruction count callgrind prints when the program ends."""
    found = _COLLECTED.findall(valgrind_output)
    if not found:
        raise ValueError("callgrind printed no instruction count")
    return int(found[-1])


def _count(size: int, rounds: int) -> int:
    env = dict(os.environ, PYTHONHASHSEED="0")
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={scratch}/callgrind.out",
             sys.executable, os.path.abspath(__file__), "--child", str(size), str(rounds)],
            env=env, capture_output=True, text=True,
        )
    if done.returncode != 0:
        raise SystemExit(f"the measured program failed:\n{done.stderr[-2000:]}")
    return collected(done.stderr)


class _UsageError(Exception):
    pass


def _usage_error(message):
    raise _UsageError(message)


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--child"]:
        _child(int(argv[1]), int(argv[2]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10, help="elements per tensor (default 10)")
    parser.add_argument("--rounds", type=int, default=5, help="chains counted (default 5)")
    parser.error = _usage_error
    try:
        args = parser.parse_args(argv)
    except _UsageError as exc:
        print(f"usage error: {exc}; see --help", file=sys.stderr)
        return 4
    if args.size < 1 or args.rounds < 1:
        print("usage error: --size and --rounds must be at least 1; see --help", file=sys.stderr)
        return 4
    if shutil.which("valgrind") is None:
        print("usage error: valgrind is not on PATH; install it (apt-get install valgrind) to count "
              "instructions", file=sys.stderr)
        return 4
    _child(args.size, 0)  # writes the bytecode caches the measured runs then read
    with_chains = _count(args.size, args.rounds)
    without = _count(args.size, 0)
    from bench_chain import N_OPS

    per_op = (with_chains - without) / (args.rounds * N_OPS)
    print(f"{os.path.dirname(HERE)}: reference, {args.rounds} x {N_OPS}-op chain at {args.size} elements: "
          f"{(with_chains - without) / 1e6:.1f} M instructions, {per_op / 1e3:.1f} k per op")
    return 0


if __name__ == "__main__":
    sys.exit(main())
