"""benchmarks/instructions.py: the instruction count's parsing and its usage errors (the count
itself runs under valgrind for a minute, so it is not run here)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "instructions.py")


def _module():
    spec = importlib.util.spec_from_file_location("bench_instructions", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_collected_reads_callgrinds_last_count():
    output = "==1== Callgrind\n==1== Events    : Ir\n==1== Collected : 1234567\n==1==\n==1== I   refs:      1,234,567\n"
    assert _module().collected(output) == 1234567


def test_collected_refuses_output_without_a_count():
    with pytest.raises(ValueError, match="no instruction count"):
        _module().collected("valgrind: command not found\n")


@pytest.mark.parametrize("args", [["--rounds", "0"], ["--size", "x"], ["--bogus"]])
def test_bad_arguments_are_one_usage_line_and_exit_4(args):
    done = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)
    assert done.returncode == 4
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("usage error:") and "--help" in lines[0]
