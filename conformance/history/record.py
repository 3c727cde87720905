"""Record one release: run every evidence snippet in that release's interpreter, resumably.

The snippets run in a child process (conformance/evidence/runner.py under ``python -I``) that
appends each output to ``<version>.partial.jsonl`` beside the data file as soon as it has it. A
snippet that hangs past the timeout or kills the process is recorded as such and the child
restarted after it; an interrupted record resumes from the partial file; a finished release is
re-run only for snippets whose digest changed (edited since, or new).
"""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Callable

from conformance import evidence as ev
from conformance import history, time_scale
from conformance.evidence import runner
from conformance.results import json_text

TIMEOUT = 60.0  # seconds one snippet may take before it is recorded as hanging
IMPORT_TIMEOUT = 300.0  # seconds the child may take to import the framework


def _read_partial(path: Path) -> tuple[dict, list[dict]]:
    """(header line, snippet lines) of a partial file; a torn last line is ignored."""
    header, lines = {}, []
    if not path.is_file():
        return header, lines
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            item = json_text.loads(line)
        except ValueError:  # a torn line (json_text: deep nesting too)
            continue
        if not isinstance(item, dict):
            continue
        if "rule" in item:
            lines.append(item)
        elif "version" in item:
            header = item
    return header, lines


def _headers(path: Path) -> int:
    """How many children have started in ``path`` (each writes one version line first)."""
    if not path.is_file():
        return 0
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines()
               if line.startswith('{"version"'))


def _run_child(python: str, module: str, todo: list[dict], partial: Path, timeout: float,
               log: Callable[[str], None]) -> None:
    """Run ``todo`` in children until each has a line in ``partial`` (hung/crashed: one each)."""
    remaining = list(todo)
    while remaining:
        job = {"prelude": ev.PRELUDE, "module": module, "out": str(partial),
               "snippets": [[t["rule"], t["snippet"], t["digest"]] for t in remaining]}
        proc = subprocess.Popen([python, "-I", runner.__file__], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        proc.stdin.write(json.dumps(job).encode())
        proc.stdin.close()
        started = _headers(partial)
        seen, last_progress, killed = None, time.monotonic(), False
        while proc.poll() is None:
            time.sleep(0.2)
            header = _headers(partial) > started
            now_seen = (header, len(_read_partial(partial)[1]))
            # importing an old framework on a busy machine may take long: the timeout counts
            # from the child's first line (its version), the import gets IMPORT_TIMEOUT
            # (both limits on hangs: times this machine's time-limit scale; the recorded line
            # names the nominal seconds, so a history file does not depend on the machine)
            limit = time_scale.scaled(timeout if header else max(timeout, IMPORT_TIMEOUT))
            if now_seen != seen:
                seen, last_progress = now_seen, time.monotonic()
            elif time.monotonic() - last_progress > limit:
                proc.kill()
                killed = True
        proc.wait()
        stderr = proc.stderr.read().decode(errors="replace")
        header, lines = _read_partial(partial)
        if not header:
            raw = partial.read_text(encoding="utf-8") if partial.is_file() else ""
            problem = next((json.loads(x)["import_error"] for x in raw.splitlines()
                            if x.startswith('{"import_error"')), None)
            raise history.HistoryError(
                f"{python} cannot import {module}: "
                f"{problem or (stderr.strip().splitlines() or ['no output'])[-1]}")
        done = {x["rule"] for x in lines}
        remaining = [t for t in remaining if t["rule"] not in done]
        if not remaining:
            break
        culprit = remaining.pop(0)
        why = (f"timed out: no output for {timeout:.0f} s" if killed
               else f"process died (exit code {proc.returncode})")
        log(f"  {culprit['rule']}: {why}")
        with open(partial, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"rule": culprit["rule"], "digest": culprit["digest"],
                                 "output": why}) + "\n")


def installed_version(python: str, module: str) -> str:
    """The version of ``module`` that ``python`` imports; HistoryError in one line if none."""
    try:
        limit = time_scale.scaled(IMPORT_TIMEOUT)   # an old framework's import, on a busy machine
        done = subprocess.run([python, "-I", "-c", f"import {module}; print({module}.__version__)"],
                              capture_output=True, text=True, timeout=limit)
    except OSError as exc:
        raise history.HistoryError(f"cannot run {python}: {exc}") from None
    except subprocess.TimeoutExpired:
        raise history.HistoryError(f"{python}: importing {module} did not finish in {limit:.0f} s "
                                   f"(a hang?); run `{python} -c 'import {module}'` to see "
                                   f"where it stops") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise history.HistoryError(f"{python} cannot import {module}: {last}")
    return done.stdout.strip().splitlines()[-1]


def record(adapter: str, module: str, version: str, python: str,
           directory: Path = history.DIRECTORY, timeout: float = TIMEOUT,
           log: Callable[[str], None] = print, entries: dict | None = None) -> Path:
    """Run the snippets that ``<adapter>/<version>.json`` lacks (or has stale) and write it."""
    entries = ev.load() if entries is None else entries
    found = installed_version(python, module)
    if found.split("+")[0] != version:
        raise history.HistoryError(f"{python} has {module} {found}, not {version}: "
                                   f"install {module}=={version} in it")
    path = history.data_path(adapter, version, directory)
    partial = path.with_name(f"{version}.partial.jsonl")
    previous = history.read(path)["observations"] if path.is_file() else {}
    digests = {rule: history.digest(ev.PRELUDE, e.snippet) for rule, e in entries.items()}
    # a partial file written for other snippets (edited since) is of no use
    header, lines = _read_partial(partial)
    kept = {x["rule"]: x for x in lines if x.get("digest") == digests.get(x["rule"])}
    todo = [{"rule": rule, "snippet": entries[rule].snippet, "digest": digests[rule]}
            for rule in sorted(entries)
            if previous.get(rule, {}).get("digest") != digests[rule] and rule not in kept]
    partial.parent.mkdir(parents=True, exist_ok=True)
    with open(partial, "w", encoding="utf-8") as fh:  # rewritten with only the usable lines
        if header:
            fh.write(json.dumps(header) + "\n")
        for x in kept.values():
            fh.write(json.dumps(x) + "\n")
    log(f"{adapter} {version}: {len(todo)} snippet(s) to run, {len(entries) - len(todo)} kept")
    if todo:
        _run_child(python, module, todo, partial, timeout, log)
    header, lines = _read_partial(partial)
    observations = {rule: obs for rule, obs in previous.items()
                    if rule in entries and obs.get("digest") == digests[rule]}
    for x in lines:
        if x["rule"] in entries:
            observations[x["rule"]] = {"output": x["output"], "digest": x["digest"]}
    old = history.read(path) if path.is_file() else {}
    history.write(path, {
        "adapter": adapter, "version": version,
        "framework_version": header.get("version", old.get("framework_version", version)),
        "python": header.get("python", old.get("python", "")),
        "observations": dict(sorted(observations.items())),
    })
    partial.unlink(missing_ok=True)
    return path
