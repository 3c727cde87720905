"""Combine release files recorded on several machines (a CI matrix, one release per job).

Each source is a copy of another checkout's conformance/history folder (or any folder holding
``<adapter>/<version>.json``). A file is taken when this checkout has none for that release, or
when it covers more of the current snippets (by digest) than the one here; files are copied
whole (written to a temporary name, then renamed). A source without any release file is
refused (a wrong folder, not an empty merge), before anything is copied.
"""
from __future__ import annotations

from pathlib import Path

from conformance import history


def _current(data: dict, digests: dict) -> int:
    return sum(1 for rule, obs in data["observations"].items() if digests.get(rule) == obs.get("digest"))


def merge(sources: list[Path], directory: Path = history.DIRECTORY) -> list[str]:
    """Copy the better release files from ``sources`` into ``directory``; one line per file."""
    from conformance import evidence as ev

    digests = {rule: history.digest(ev.PRELUDE, e.snippet) for rule, e in ev.load().items()}
    for source in sources:
        if not Path(source).is_dir():
            raise history.HistoryError(f"{source}: not a folder (give copies of conformance/history)")
    # every file read and checked before any is copied: one bad file copies nothing
    plan = []
    for source in sources:
        found = sorted(Path(source).glob("*/*.json"))
        if not found:  # a wrong folder merged nothing and exited 0 without a word
            raise history.HistoryError(f"{source}: no release files (<adapter>/<version>.json) "
                                       f"in it, nothing to merge; give copies of "
                                       f"conformance/history folders")
        for path in found:
            data = history.read(path)
            if data["version"] != path.stem:
                raise history.HistoryError(f"{path}: holds release {data['version']!r}, not "
                                           f"{path.stem!r} as its name says; record it again")
            history.release_version(path.stem)
            target = Path(directory) / path.parent.name / path.name
            if target.resolve() == path.resolve():
                continue
            here = history.read(target) if target.exists() else None
            plan.append((path, data, target, here))
    lines = []
    for path, data, target, here in plan:
        if here is not None and _current(here, digests) >= _current(data, digests):
            lines.append(f"kept {target} ({path} is not newer)")
            continue
        history.write(target, data)
        lines.append(f"took {path} -> {target}")
    return lines
