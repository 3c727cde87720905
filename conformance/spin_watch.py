"""A child interpreter that burns CPU without making progress is hung, however busy the machine.

Why: a wall-clock limit on a hang must be scaled by the machine's load (conformance/time_scale.py)
or a busy machine turns slowness into TIMEOUT. But a hang that *spins* then costs the whole
scaled limit: OneFlow 0.9.0's threads deadlock while spinning in system calls, and the threads
rule's 240 s child limit became 17-32 minutes per OneFlow column on CI's loaded machine, which
pushed CI past its 90 minutes. CPU time is what the child was actually given, so a budget of
CPU seconds spent since the child last said it progressed ends a spin after the same work on a
quiet and on a loaded machine, without ever ending a child that is merely slow: a child that is
starved of CPU spends none of its budget. A child that blocks (no CPU at all) is still ended by
the wall limit.

The child says it progressed by printing :data:`MARKER` lines (``conformance.api.progress``);
the budget counts from its first one, so an interpreter's start-up (importing a framework can
take many CPU seconds) is never judged. Linux (``/proc/<pid>/stat``, which sums the CPU time of
every thread of the child); elsewhere only the wall limit applies.
"""
from __future__ import annotations

import dataclasses
import os
import subprocess
import threading
import time

#: the line a child prints when it progresses; removed from the output the caller gets
MARKER = "@@PROGRESS@@"
#: how often the parent looks at the child (seconds)
POLL_SECONDS = 0.2


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds used so far by every thread of process ``pid`` (None where
    ``/proc`` cannot say: another system, or the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


@dataclasses.dataclass
class Finished:
    """How a watched child ended: its exit status (None when it was ended), its output (the
    progress lines removed), and why it was ended ('' when it exited by itself)."""

    returncode: int | None
    stdout: str
    stderr: str
    ended: str = ""


def _drain(stream, chunks: list, counter: list | None) -> None:
    for chunk in iter(lambda: stream.read1(65536), b""):
        chunks.append(chunk)
        if counter is not None and MARKER.encode() in chunk:
            counter[0] += 1


def run(cmd: list[str], *, env: dict, timeout: float, spin_cpu_seconds: float | None) -> Finished:
    """Run ``cmd`` to its end, or end it (``Finished.ended`` says why) when it has run
    ``timeout`` wall seconds, or, with ``spin_cpu_seconds``, when it has used that much CPU
    since its last progress line (its first one starts the count)."""
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    out, err, progressed = [], [], [0]
    readers = [threading.Thread(target=_drain, args=(proc.stdout, out, progressed), daemon=True),
               threading.Thread(target=_drain, args=(proc.stderr, err, None), daemon=True)]
    for reader in readers:
        reader.start()
    started = time.monotonic()
    seen, cpu_at_progress, ended = 0, None, ""
    while proc.poll() is None:
        if time.monotonic() - started > timeout:
            ended = f"was still running after {timeout:g}s"
        elif spin_cpu_seconds is not None:
            cpu = cpu_seconds(proc.pid)
            if progressed[0] != seen:
                seen, cpu_at_progress = progressed[0], cpu
            elif cpu is not None and cpu_at_progress is not None \
                    and cpu - cpu_at_progress > spin_cpu_seconds:
                ended = (f"used {cpu - cpu_at_progress:.0f}s of CPU since it last progressed "
                         f"({spin_cpu_seconds:g}s allowed) without progressing: it spins "
                         f"(a deadlock or livelock that keeps the CPU busy)")
        if ended:
            proc.kill()
            break
        time.sleep(POLL_SECONDS)
    proc.wait()
    for reader in readers:
        reader.join(5)
    stdout = b"".join(out).decode(errors="replace")
    stdout = "".join(line for line in stdout.splitlines(keepends=True)
                     if line.rstrip("\r\n") != MARKER)
    return Finished(None if ended else proc.returncode, stdout,
                    b"".join(err).decode(errors="replace"), ended)
