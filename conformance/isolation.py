"""Isolation at start-up: the adapter and its framework are first loaded in a child interpreter.

Why: loading an adapter runs code the harness does not control: the adapter's module, the
framework's import, its ``framework_version()``. Any of them may hang, segfault, call
``sys.exit()`` or raise; in the pytest process that is a bare signal, a hang or an
INTERNALERROR traceback with nothing in the results file. So the controller first loads the
adapter in a child interpreter under the run's time limit (``probe``); whatever goes wrong
there becomes one line (a usage error, exit 4) that the results file records.

The child also reports what the controller needs to know (the adapter's name, the
framework's version, its expectations file), so that under pytest-xdist the controller
never imports the framework at all (``ProbedAdapter``): a framework that installs its own
signal handlers at import (a SIGCHLD handler, seen on a real one) would otherwise shut the
controller down at the first worker crash, exactly where crash isolation is needed.

Last, the child checks the adapter's declared-missing features against its framework
(:mod:`conformance.feature_claims`; one tensor, one op, attribute lookups), on an answer line of
its own: a hang or crash there is reported as the check's failure, never as the adapter's.
"""
from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from conformance.child_interpreter import environment
from conformance.claims import Claim

# The child: stdout is kept for the one JSON answer (anything the adapter or the framework
# prints goes to stderr); every failure, BaseException included, is caught and described.
PROBE = r'''
import json, os, sys
answer = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
spec, device = sys.argv[1], sys.argv[2]

def first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"

def fail(kind, message):
    answer.write(json.dumps({"ok": False, "kind": kind, "error": message}))
    answer.flush()
    os._exit(0)

def described(exc):
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r})"
    if isinstance(exc, KeyboardInterrupt):
        return "was interrupted (KeyboardInterrupt)"
    return f"raised {type(exc).__name__}: {first_line(exc)}"

try:
    from adapters.base import FrameworkNotInstalled, load_adapter
except BaseException as exc:
    fail("adapter", f"the harness's adapters package cannot be imported: {described(exc)}")
try:
    adapter = load_adapter(spec)
except ValueError as exc:
    fail("adapter", first_line(exc))
except BaseException as exc:
    fail("adapter", f"adapter {spec!r}: loading it {described(exc)}; fix the adapter module")
try:
    adapter.fw
except FrameworkNotInstalled as exc:
    fail("framework", first_line(exc))
except BaseException as exc:
    fail("framework", f"adapter {adapter.name!r}: importing its framework {described(exc)}; "
                      f"reinstall it with: {adapter.install_hint}")
try:
    version = adapter.framework_version()
    version = version if isinstance(version, str) else str(version)
except BaseException as exc:
    fail("framework", f"adapter {adapter.name!r}: framework_version() {described(exc)}; "
                      f"fix the adapter's framework_version")
try:
    adapter.check_device(device)
except ValueError as exc:
    fail("device", first_line(exc))
except BaseException as exc:
    fail("device", f"adapter {adapter.name!r}: checking device {device!r} {described(exc)}")
try:
    expectations = str(adapter.expectations_file())
except BaseException as exc:
    fail("adapter", f"adapter {adapter.name!r}: expectations_file() {described(exc)}")
answer.write(json.dumps({"ok": True, "name": adapter.name, "spec": adapter.spec,
                         "version": version, "expectations": expectations,
                         "install_hint": adapter.install_hint,
                         "unsupported": {str(k): str(v) for k, v in
                                         (getattr(adapter, "unsupported", None) or {}).items()}})
             + "\n")
answer.flush()
# then whether the declared-missing features are missing (conformance/feature_claims.py), on a
# line of its own: a framework that crashes making a tensor leaves the facts above whole
try:
    from conformance import feature_claims
    from conformance.model import features
    problem = features.unknown_keys_problem(adapter)
    claims = {"error": problem} if problem else {
        "claims": [c.as_json() for c in feature_claims.check(adapter)]}
except BaseException as exc:
    claims = {"error": f"adapter {adapter.name!r}: checking its declared-missing features "
                       f"{described(exc)}"}
answer.write(json.dumps(claims) + "\n")
answer.flush()
os._exit(0)
'''


class ProbeFailed(Exception):
    """The adapter cannot be loaded; ``str()`` is the one line to show, ``kind`` what failed
    (``adapter``, ``framework``, ``device``)."""

    def __init__(self, message: str, kind: str = "framework") -> None:
        super().__init__(message)
        self.kind = kind


@dataclasses.dataclass(frozen=True)
class Facts:
    """What the child learnt: enough for the controller to run without the framework."""

    name: str
    spec: str
    version: str
    expectations: str
    install_hint: str = ""
    unsupported: dict = dataclasses.field(default_factory=dict)  # the adapter's declarations
    #: whether each declared-missing feature is missing (conformance.claims.Claim),
    #: and why that could not be checked ("" when it was)
    claims: list = dataclasses.field(default_factory=list)
    claims_error: str = ""


class ProbedAdapter:
    """The controller's stand-in for an adapter it must not load (pytest-xdist: the workers
    run the tests); it answers from the child's ``Facts`` and refuses the framework."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.name = facts.name
        self.spec = facts.spec
        self.install_hint = facts.install_hint
        self.unsupported = dict(facts.unsupported)

    @property
    def fw(self) -> Any:
        raise RuntimeError("the controller of a distributed run does not import the framework; "
                           "the fw fixture is for the workers")

    def framework_version(self) -> str:
        return self.facts.version

    def expectations_file(self) -> Path:
        return Path(self.facts.expectations)


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (one line for a usage error)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "nothing"


def _loaded_line(stdout: bytes | None) -> str | None:
    """The child's first answer when it was written whole and says the adapter loaded: what
    hung or crashed after it was the feature check, not the adapter."""
    first, newline, _ = (stdout or b"").decode("utf-8", "replace").partition("\n")
    return first if newline and first.startswith('{"ok": true') else None


def probe(spec: str, device: str = "cpu", timeout: float = 300.0,
          timeout_option: str | None = "--conformance-timeout") -> Facts | None:
    """Load adapter ``spec`` (module, framework, version, device) in a child interpreter.

    Returns its ``Facts``; raises ``ProbeFailed`` with one line if anything went wrong;
    None if no child can be started here (then the caller loads the adapter in-process).
    ``timeout_option``: the calling tool's option that sets ``timeout`` (named when it passed).
    """
    env = environment(same_interpreter=True)
    try:
        done = subprocess.run([sys.executable, "-c", PROBE, spec, device], capture_output=True,
                              env=env, timeout=timeout if timeout > 0 else None)
    except subprocess.TimeoutExpired as exc:
        first = _loaded_line(exc.stdout)
        if first is not None:
            # the adapter loaded in time; the feature check after it did not finish
            done = subprocess.CompletedProcess(exc.cmd, 0, (first + "\n" + json.dumps(
                {"error": f"adapter {spec!r}: checking its declared-missing features did not "
                          f"finish within {timeout:g}s"})).encode(), exc.stderr or b"")
        else:
            raise ProbeFailed(
                f"adapter {spec!r}: loading it and importing its framework did not finish within "
                f"{timeout:g}s (checked in a child interpreter); it hangs at import"
                + (f", or give a longer {timeout_option}" if timeout_option else "")) from None
    except OSError:
        return None
    stderr = done.stderr.decode("utf-8", "replace")
    lines = done.stdout.decode("utf-8", "replace").splitlines()
    loaded = _loaded_line(done.stdout)
    if done.returncode < 0 and loaded is not None:
        # the adapter loaded; the feature check after it crashed the interpreter
        lines = [loaded, json.dumps({"error": f"adapter {spec!r}: checking its declared-missing "
                                                f"features crashed the interpreter "
                                                f"({_signal_name(-done.returncode)})"})]
    elif done.returncode < 0:
        raise ProbeFailed(f"adapter {spec!r}: loading it or importing its framework crashed the "
                          f"interpreter ({_signal_name(-done.returncode)}; checked in a child "
                          f"interpreter, so no test can run); its last line: {_last_line(stderr)}")
    try:
        answer = json.loads(lines[0] if lines else "")
        if not isinstance(answer, dict):
            raise ValueError(answer)
    except ValueError:
        raise ProbeFailed(f"adapter {spec!r}: loading it or importing its framework ended the "
                          f"interpreter (exit status {done.returncode}; checked in a child "
                          f"interpreter); its last line: {_last_line(stderr)}") from None
    if not answer.get("ok"):
        raise ProbeFailed(str(answer.get("error")), str(answer.get("kind")))
    claims, claims_error = _claims(lines[1] if len(lines) > 1 else "")
    return Facts(name=str(answer["name"]), spec=str(answer["spec"]), version=str(answer["version"]),
                 expectations=str(answer["expectations"]),
                 install_hint=str(answer.get("install_hint") or ""),
                 unsupported=dict(answer.get("unsupported") or {}),
                 claims=claims, claims_error=claims_error)


def _claims(line: str) -> tuple[list, str]:
    """The child's second answer: the claims, or why they could not be checked."""
    try:
        data = json.loads(line)
        if data.get("error"):
            return [], str(data["error"])
        return [Claim.from_json(c) for c in data["claims"]], ""
    except (ValueError, TypeError, KeyError, AttributeError):
        return [], ("the child interpreter ended before it checked the declared-missing "
                    "features (a hang or an exit during the check)")
