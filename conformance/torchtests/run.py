"""Drives the workers: each engine in child processes, a crash or a hang costing only the one test.

``run(path, selection, timeout)`` runs the selected tests on torch, then the ones that passed
there on the reference, and returns the combined result: one record per selected test with its
concept, both outcomes and a category (``pass``, ``missing_api``, ``difference``, ``message``
(the right exception, a message the test's pattern does not match), ``fails_on_torch``,
``not_applicable``, ``not_in_file``), the counts and the ratio
pass / (pass + missing_api + difference + message).
"""
from __future__ import annotations

import datetime
import json
import queue
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from conformance.child_interpreter import environment
from conformance.torchtests import source
from conformance.torchtests.worker import MARK

CATEGORIES = ("pass", "missing_api", "difference", "message", "fails_on_torch", "not_applicable", "not_in_file")


def _reader(stream, lines: queue.Queue) -> None:
    for line in stream:
        if MARK in line:
            lines.put(line.split(MARK, 1)[1])
    lines.put(None)


def run_engine(engine: str, path: Path, tests: list[str], timeout: float) -> tuple[str, dict[str, dict]]:
    """``(version, {test: record})`` for ``tests`` on ``engine``; restarts the worker after a crash or hang."""
    env = environment()
    results: dict[str, dict] = {}
    version = "?"
    remaining = list(tests)
    while remaining:
        with tempfile.TemporaryFile(mode="w+") as stderr:
            proc = subprocess.Popen([sys.executable, "-m", "conformance.torchtests.worker"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
            proc.stdin.write(json.dumps({"engine": engine, "path": str(path), "tests": remaining, "timeout": timeout}))
            proc.stdin.close()
            lines: queue.Queue = queue.Queue()
            threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
            current = None
            while True:
                try:
                    line = lines.get(timeout=timeout + 60)
                except queue.Empty:
                    proc.kill()
                    proc.wait()
                    if current:
                        results[current] = {"test": current, "outcome": "fail", "kind": "difference",
                                            "detail": f"hang: the process stopped answering after {timeout:g} s"}
                    break
                if line is None:
                    code = proc.wait()
                    if current and current not in results:
                        results[current] = {"test": current, "outcome": "fail", "kind": "difference",
                                            "detail": f"crash: the process died (exit status {code})"}
                    break
                event = json.loads(line)
                if "version" in event:
                    version = event["version"]
                elif "start" in event:
                    current = event["start"]
                elif "result" in event:
                    results[event["result"]["test"]] = event["result"]
                    current = None
            if current is None and not any(t in results for t in remaining):
                stderr.seek(0)
                tail = stderr.read().strip().splitlines()[-1:] or ["no output"]
                for test in remaining:
                    results[test] = {"test": test, "outcome": "error", "kind": "difference",
                                     "detail": f"the {engine} worker did not start: {tail[0][:200]}"}
        remaining = [t for t in remaining if t not in results]
    return version, results


def category(torch_record: dict | None, reference_record: dict | None) -> str:
    if torch_record is None:
        return "not_in_file"
    if torch_record["outcome"] == "skip":
        return "not_applicable"
    if torch_record["outcome"] != "pass":
        return "fails_on_torch"
    if reference_record["outcome"] == "pass":
        return "pass"
    if reference_record["outcome"] == "skip":
        return "difference"
    return {"missing": "missing_api", "message": "message"}.get(reference_record.get("kind"), "difference")


def run(path: Path, selection: dict[str, str], timeout: float, only: list[str] | None = None) -> dict:
    test_file = source.read(path)
    in_file = set(test_file.tests())
    chosen = [t for t in selection if (not only or t in only or t.split(".")[1] in only)]
    present = [t for t in chosen if t in in_file]
    torch_version, torch_results = run_engine("torch", path, present, timeout) if present else ("?", {})
    passing = [t for t in present if torch_results[t]["outcome"] == "pass"]
    ref_version, ref_results = run_engine("reference", path, passing, timeout) if passing else ("?", {})
    records = []
    for test in chosen:
        t_rec, r_rec = torch_results.get(test), ref_results.get(test)
        cat = category(t_rec, r_rec)
        record = {"test": test, "concept": selection[test], "category": cat}
        if t_rec:
            record["torch"] = {k: v for k, v in t_rec.items() if k != "test"}
        if r_rec:
            record["reference"] = {k: v for k, v in r_rec.items() if k != "test"}
        records.append(record)
    counts = {c: sum(r["category"] == c for r in records) for c in CATEGORIES}
    counted = counts["pass"] + counts["missing_api"] + counts["difference"] + counts["message"]
    return {
        "tool": "python -m conformance.torchtests",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "file": str(path), "file_sha256": test_file.sha256,
        "torch_version": torch_version, "reference_version": ref_version,
        "selected": len(chosen), "pass_on_torch": counted, "pass_on_reference": counts["pass"],
        "ratio": counts["pass"] / counted if counted else None,
        "counts": counts, "tests": records,
    }
