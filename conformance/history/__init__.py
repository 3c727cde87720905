"""History: every rule's evidence snippet as older releases of a framework print it.

The evidence (conformance/evidence) is one release's output; a framework author who mirrors an
older release, or a reader who wants to know when a behaviour arrived, needs the others. For each
release an adapter names (``Adapter.releases``: version, the Python it needs, what to pip
install), ``python -m conformance.history record`` runs every snippet in that release's own
interpreter and writes ``conformance/history/<adapter>/<version>.json``: per rule the output and
a digest of the prelude and snippet it came from, so an entry whose snippet was edited since is
known to be stale (and is re-run by the next ``record``, which skips the others: resumable).

Nothing here names a framework: the adapter's ``module`` is imported, its ``releases`` listed.
An observation's status against today's recorded output:
  same     prints what the evidence records;
  absent   stops (uncaught) on an API the release lacks (ImportError, a module/type/object without the
           attribute, an unexpected keyword argument) before showing the behaviour;
  differs  anything else (the behaviour was different), including a timeout or a crash.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from conformance.versions import version_key  # re-exported: the release order of the history

DIRECTORY = Path(__file__).resolve().parent

ABSENT = re.compile(
    r"^uncaught (?:ImportError|ModuleNotFoundError): "
    r"|^uncaught AttributeError: (?:module '[\w.]+'|type object '\w+'|'(?!NoneType)\w+' object) "
    r"has no attribute "
    r"|^uncaught TypeError: .*(?:unexpected keyword argument|takes \d+ positional argument)")


class HistoryError(ValueError):
    """A history run or data file cannot be used; the message says what to do."""


def digest(prelude: str, snippet: str) -> str:
    """What an observation was produced from: prelude and snippet, 16 hex digits."""
    return hashlib.sha256((prelude + "\0" + snippet.strip()).encode()).hexdigest()[:16]


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def status(output: str, today: str, snippet: str = "") -> str:
    """``same``, ``absent`` or ``differs`` (module docstring). A missing attribute that the
    snippet itself assigns (``x.tag = ...``) is behaviour (an object not kept), not an API."""
    if _normalise(output) == _normalise(today):
        return "same"
    last = (_normalise(output).splitlines()[-1:] or [""])[0]
    if not ABSENT.match(last):
        return "differs"
    attribute = re.search(r"has no attribute '(\w+)'", last)
    if attribute and re.search(r"\.%s\s*=[^=]" % attribute.group(1), snippet):
        return "differs"
    return "absent"


def data_path(adapter: str, version: str, directory: Path = DIRECTORY) -> Path:
    return Path(directory) / adapter / f"{version}.json"


def read(path: Path) -> dict:
    """One release's file; a malformed one is a HistoryError naming it."""
    from conformance.results import json_text
    from conformance.results.json_fields import first_wrong

    try:
        data = json_text.loads(json_text.read_text(Path(path)))
    except OSError as exc:
        raise HistoryError(f"{path}: cannot be read ({exc.strerror or exc}); give a history "
                           f"file") from None
    except ValueError as exc:
        raise HistoryError(f"{path}: not a readable history file ({exc}); delete it and record "
                           f"the release again") from None
    if not isinstance(data, dict) or not isinstance(data.get("observations"), dict) \
            or not isinstance(data.get("version"), str):
        raise HistoryError(f"{path}: not a history file (no 'version' / 'observations'); delete "
                           f"it and record the release again")
    for rule, obs in data["observations"].items():  # each as record.py writes it
        problem = (f"is {type(obs).__name__}, expected an object" if not isinstance(obs, dict)
                   else first_wrong(obs, {"output": (str,), "digest": (str,)}))
        if problem:
            raise HistoryError(f"{path}: observation {rule!r} {problem}; delete it and record "
                               f"the release again")
    return data


#: A release as the history's file names hold it (no path separator, no leading dot).
VERSION = re.compile(r"[0-9][0-9A-Za-z.+-]*")


def release_version(text: str) -> str:
    """``text`` if it can name a release's file, else HistoryError (``../x`` would write
    outside the history folder)."""
    if not VERSION.fullmatch(text) or ".." in text:
        raise HistoryError(f"version {text!r} is not a release number (digits, letters, . + -, "
                           f"as in 2.14.1)")
    return text


def load(adapter: str, directory: Path = DIRECTORY) -> list[dict]:
    """Every recorded release of ``adapter``, oldest first."""
    folder = Path(directory) / adapter
    found = [read(p) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []
    return sorted(found, key=lambda d: version_key(d["version"]))


def write(path: Path, data: dict) -> None:
    """Whole or not at all: a temporary file renamed over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                   encoding="utf-8")
    tmp.replace(path)


#: other releases named at run time: "torch==2.14.1 torch==1.12.1" (docs/running.md)
RELEASES_VARIABLE = "AUTOGRAD_CONFORMANCE_RELEASES"


def release_for(releases: tuple, pip_name: str, version: str) -> dict:
    """The release ``version`` of an adapter's ``releases``, or one derived for a version it
    does not list: the Python and extra pins of the nearest listed release at or before it."""
    for release in releases:
        if release["version"] == version:
            return dict(release)
    if not releases:
        return {"version": version, "python": "3.11", "install": [f"{pip_name}=={version}"]}
    ordered = sorted(releases, key=lambda r: version_key(r["version"]))
    before = [r for r in ordered if version_key(r["version"]) <= version_key(version)]
    model = before[-1] if before else ordered[0]
    pins = [p for p in model["install"] if not p.startswith(f"{pip_name}==")]
    return {"version": version, "python": model["python"],
            "install": [f"{pip_name}=={version}", *pins]}


def named_releases(adapter: str, text: str, known=()) -> list[str]:
    """The versions of ``adapter`` in a RELEASES_VARIABLE value ("torch==2.14.1 paddle==3.0");
    a name not among ``known`` (the built-in adapters, where given) is refused: a typo
    ("tourch==2.14.1") otherwise added no column and said nothing."""
    found = []
    for part in text.replace(",", " ").split():
        name, sep, version = part.partition("==")
        if sep and known and name not in known:
            raise HistoryError(f"{RELEASES_VARIABLE}: {part!r} names no built-in adapter (the "
                               f"adapters: {', '.join(sorted(known))})")
        if not sep or not VERSION.fullmatch(version):
            raise HistoryError(f"{RELEASES_VARIABLE}: {part!r} is not <adapter>==<version> "
                               f"(for example torch==2.14.1)")
        if name == adapter and version not in found:
            found.append(version)
    return found
