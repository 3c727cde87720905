"""The harness's command-line and ini options, defined once.

Why one table: the option docs in ``docs/running.md`` are generated from it
(``python -m conformance.options``), so what the docs say and what pytest accepts
cannot drift apart (a complaint users of other conformance suites keep filing).
"""
from __future__ import annotations

import dataclasses
import inspect
import os
from pathlib import Path

from conformance.cli import MAX_SECONDS
from adapters.base import builtin_adapters

PACKAGE_DIR = Path(__file__).resolve().parent


@dataclasses.dataclass(frozen=True)
class Option:
    """A command-line option: ``flag``, its default, accepted values, and what it does."""

    flag: str
    help: str
    default: str | None = None
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    action: str | None = None  # "store_true" for a flag without a value

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


@dataclasses.dataclass(frozen=True)
class IniOption:
    """An ini option (``[tool.pytest.ini_options]`` / ``pytest.ini``)."""

    name: str
    help: str
    default: str


OPTIONS = (
    Option(
        "--adapter",
        default="reference",
        metavar="NAME",
        help="framework adapter to test: a built-in name (" + ", ".join(builtin_adapters()) + "), an "
        "entry point of the group autograd_conformance.adapters, or "
        "package.module:ClassName.",
    ),
    Option(
        "--device",
        default="cpu",
        metavar="DEVICE",
        help="device the suites create tensors on: any device string the adapter's device "
        "check accepts (every adapter: cpu; others as the adapter says, e.g. cuda:1 or an "
        "out-of-tree back end's device, docs/devices.md). One the adapter cannot use is a "
        "usage error naming why.",
    ),
    Option(
        "--results",
        metavar="PATH",
        help="write one JSON line per test to PATH, flushed as each test finishes "
        "(plus a header line for the run and an end line).",
    ),
    Option(
        "--expectations",
        metavar="PATH",
        help="expected outcomes file to use instead of the adapter's own "
        "(adapters/expectations/<adapter>.toml).",
    ),
    Option(
        "--conformance-timeout",
        default="300",
        metavar="SECONDS",
        help="per-test time limit (0: none), sized for an ordinary test on a quiet machine; "
        "times --time-limit-scale and the test's time_limit_factor marker (a test whose work "
        "legitimately takes long declares it). A test past it is interrupted and reported as "
        "TIMEOUT; one stuck outside Python (C code, a deadlock holding the GIL) has its "
        "worker process ended a few seconds later, also TIMEOUT; the run goes on in a "
        "fresh worker (with --in-process it ends there). Under --leak-check the limit covers "
        "every run of the test.",
    ),
    Option(
        "--startup-timeout",
        default="600",
        metavar="SECONDS",
        help="time limit (0: none) of the start-up check: loading the adapter and importing "
        "its framework in a child interpreter before any test, then checking its "
        "declared-missing features. Its own limit, not --conformance-timeout's: a heavy "
        "framework import on a busy machine is not a hang.",
    ),
    Option(
        "--time-limit-scale",
        default="auto",
        metavar="FACTOR",
        help="multiply every time limit (per test, start-up, witnesses, a test's own child "
        "interpreters) by FACTOR (1 to 100); auto: measured at start, how much slower than "
        "a quiet machine this one runs a fixed loop (at least 1), so that a busy or slow "
        "machine gets longer limits and TIMEOUT still means a hang.",
    ),
    Option(
        "--leak-check",
        action="store_true",
        help="run each selected test again and again after a warm-up and report a test "
        "that leaves more live objects of some type, or more traced memory, behind on every "
        "run as LEAK, naming the types and what keeps one alive (needs objgraph).",
    ),
    Option(
        "--leak-check-runs",
        default="2:4",
        metavar="WARMUPS:RUNS",
        help="for --leak-check: unmeasured warm-up runs, then measured runs (a type or the "
        "traced memory must grow in each measured run to count as a leak).",
    ),
    Option(
        "--no-witnesses",
        action="store_true",
        help="do not run the witnesses of the expectations' root causes (by default each "
        "runs beside the tests, in a fresh interpreter, and its result is recorded per root "
        "cause: conformance/witness.py).",
    ),
    Option(
        "--no-gc-freeze",
        action="store_true",
        help="do not freeze the objects alive at the first suite test out of the garbage "
        "collector's walk. By default they are frozen (gc.freeze, conformance/gc_freeze.py), so "
        "the suites' gc.collect() calls walk only what the tests made: a quarter to three "
        "quarters less CPU per run (docs/performance.md). What a test makes is collected as "
        "before; heap searches (keep-alive chains, the leak check) thaw the heap first, and the "
        "run thaws it as soon as its tests are done. Turn it off to rule it out when a verdict "
        "about collection looks wrong.",
    ),
    Option(
        "--in-process",
        action="store_true",
        help="run the tests in pytest's own process. By default a run without -n runs them "
        "in a forked child that a test which crashes or corrupts the interpreter ends: that "
        "test is CRASH and a fresh child goes on with the rest (conformance/survival.py); "
        "--pdb and --trace imply this option.",
    ),
    Option(
        "--resume",
        action="store_true",
        help="with --results: go on from the incomplete run that file holds (same adapter "
        "and framework version): its records are kept, only the tests it has not recorded "
        "run, and the file ends complete (nox -s report uses it for a column that stopped).",
    ),
    Option(
        "--witness-timeout",
        default="600",
        metavar="SECONDS",
        help="time limit of each witness (> 0; times --time-limit-scale); one past it is "
        "killed and recorded as an error. Sized for a hang: a witness importing a heavy "
        "framework beside a run takes minutes on a busy machine.",
    ),
)

INI_OPTIONS = (
    IniOption(
        "conformance_catalogue",
        help="directory of the rule catalogue files <suite>.toml (relative to the rootdir).",
        default=str(PACKAGE_DIR / "catalogue"),
    ),
    IniOption(
        "conformance_suites",
        help="directory of the suite modules test_<suite>.py whose tests must each carry "
        "one rule (relative to the rootdir).",
        default=str(PACKAGE_DIR / "suites"),
    ),
)


def add_options(parser) -> None:
    """Register every option with pytest's ``parser``."""
    group = parser.getgroup("autograd-conformance", "autograd conformance suites")
    for opt in OPTIONS:
        kwargs = dict(dest=opt.dest, default=opt.default, help=opt.help)
        if opt.action:
            kwargs["action"] = opt.action
            kwargs["default"] = False
        if opt.choices:  # checked by check_values: pytest's own refusal spans several lines
            kwargs["metavar"] = "{" + ",".join(opt.choices) + "}"
        if opt.metavar:
            kwargs["metavar"] = opt.metavar
        group.addoption(opt.flag, **kwargs)
    for ini in INI_OPTIONS:
        parser.addini(ini.name, help=ini.help, default=ini.default)


def ini_path(config, name: str) -> Path:
    """The directory an ini option names, relative paths taken from the rootdir."""
    path = Path(config.getini(name))
    if not path.is_absolute():
        path = Path(config.rootpath) / path
    return path.resolve()


def check_values(config) -> None:
    """Raise ValueError (one line) for a value an option does not accept."""
    for opt in OPTIONS:
        value = config.getoption(opt.dest)
        if opt.flag == "--adapter" and not str(value).strip():
            raise ValueError("--adapter: an empty name (an unset variable?); give a built-in "
                             "name, an entry point or package.module:ClassName")
        if opt.action or value is None or opt.flag == "--results":  # --results: its own check
            continue
        if not str(value).strip():
            raise ValueError(f"{opt.flag}: an empty value (an unset variable?); give "
                             f"{opt.metavar or '|'.join(opt.choices or ())} or leave the option out")
        if opt.choices and value not in opt.choices:
            raise ValueError(f"{opt.flag} {value}: not one of {', '.join(opt.choices)}; "
                             f"write e.g. {opt.flag}={opt.default}")


def _seconds(config, dest: str, flag: str) -> float:
    """Option ``flag`` (attribute ``dest``) as seconds (0: no limit); a bad value is a
    ValueError naming the option."""
    raw = config.getoption(dest)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = -1.0
    if not 0 <= value <= MAX_SECONDS:
        raise ValueError(f"{flag} {raw!r}: give a number of seconds >= 0, at "
                         f"most {MAX_SECONDS} (0 turns the limit off)")
    return value


def timeout_seconds(config) -> float:
    """``--conformance-timeout`` as seconds (0: no limit); a bad value is a ValueError."""
    return _seconds(config, "conformance_timeout", "--conformance-timeout")


def startup_timeout(config) -> float:
    """``--startup-timeout`` as seconds (0: no limit); a bad value is a ValueError."""
    return _seconds(config, "startup_timeout", "--startup-timeout")


def time_limit_scale(config) -> float | None:
    """``--time-limit-scale`` as a factor, None for ``auto``; a bad value is a ValueError."""
    from conformance import time_scale

    return time_scale.parse(config.getoption("time_limit_scale"))


def witness_timeout(config) -> float:
    """``--witness-timeout`` as seconds (> 0); a bad value is a ValueError."""
    raw = config.getoption("witness_timeout")
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = -1.0
    if not 0 < value <= MAX_SECONDS:
        raise ValueError(f"--witness-timeout {raw!r}: give a number of seconds > 0, at most "
                         f"{MAX_SECONDS} (--no-witnesses runs none)")
    return value


def leak_check_runs(config) -> tuple[int, int]:
    """``--leak-check-runs WARMUPS:RUNS`` as two ints; a bad value is a ValueError."""
    raw = str(config.getoption("leak_check_runs"))
    warmups, sep, runs = raw.partition(":")
    try:
        pair = (int(warmups), int(runs))
    except ValueError:
        pair = (-1, -1)
    if not sep or pair[0] < 0 or pair[1] < 2:
        raise ValueError(f"--leak-check-runs {raw!r}: give WARMUPS:RUNS, e.g. 2:4 (warm-ups "
                         f">= 0, measured runs >= 2)")
    return pair


def results_problem(raw: str, base: Path) -> str | None:
    """Why ``--results raw`` cannot be written (one line), or None; creates nothing. An
    existing file is replaced (or, by the differential search, appended to) only when it is
    a results file of this project (or empty)."""
    path = Path(base) / raw
    if path.is_dir():
        return (f"--results {raw}: is a directory; give a file path, e.g. "
                f"--results={Path(raw) / 'results.jsonl'}")
    if path.exists() and not path.is_file():  # opening a FIFO to write blocks the run
        return (f"--results {raw}: not a regular file (a FIFO, device or socket); give a file "
                f"path")
    if path.exists() and not os.access(path, os.W_OK):
        return f"--results {raw}: the file cannot be written (permission denied); choose another path"
    if path.is_file():
        from conformance.results.run_file import is_results_file

        try:
            ours = is_results_file(path)
        except OSError as exc:
            return f"--results {raw}: cannot read it ({exc.strerror or exc}); choose another path"
        if not ours:  # a document given by mistake was cut to nothing without a word
            return (f"--results {raw}: the file exists and is not a results file of "
                    f"autograd-conformance (no run header on its first line); choose "
                    f"another path, or remove it if it may go")
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"--results {raw}: {parent} is not a directory; choose a path in a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return (f"--results {raw}: cannot write in {parent} (permission denied); "
                f"choose a writable directory")
    return None


def swallowed_path_problem(config) -> str | None:
    """A value-taking option written with a space whose value pytest took for a test path.

    pytest chooses its root directory (and so its ini file and ``testpaths``) before it
    knows a plugin's options: in ``--results /tmp/r.jsonl`` it reads an existing
    ``/tmp/r.jsonl`` as a test path, and the run silently collects from another root.
    The root pytest chose is compared with the one it chooses without those values.
    """
    args = [str(a) for a in config.invocation_params.args]
    base = Path(config.invocation_params.dir)
    flags = {opt.flag for opt in OPTIONS if not opt.action}
    swallowed = [(flag, value) for flag, value in zip(args, args[1:])
                 if flag in flags and (base / value).exists()]
    if not swallowed:
        return None
    try:
        from _pytest.config.findpaths import determine_setup

        known = {"inifile": config.option.inifilename,
                 "override_ini": config.option.override_ini,
                 "args": list(config.option.file_or_dir or ()),
                 "rootdir_cmd_arg": config.option.rootdir or None,
                 "invocation_dir": base}
        params = inspect.signature(determine_setup).parameters
        rootpath = Path(determine_setup(**{k: v for k, v in known.items() if k in params})[0])
        if rootpath == Path(config.rootpath):
            return None
    except Exception:  # noqa: BLE001 - another pytest: refuse, the = form always works
        pass
    flag, value = swallowed[0]
    return (f"{flag} {value}: pytest read the existing path {value} as a test path when it "
            f"chose its root directory ({config.rootpath}); write {flag}={value}")


def markdown() -> str:
    """The options as a markdown table (pasted into docs/running.md; a test keeps it in sync)."""
    lines = ["| option | default | what it does |", "|---|---|---|"]
    for opt in OPTIONS:
        if opt.action:
            flag, default = f"`{opt.flag}`", "off"
        else:
            flag = f"`{opt.flag} {opt.metavar or '{' + ','.join(opt.choices or ()) + '}'}`"
            default = f"`{opt.default}`" if opt.default else "none"
        lines.append(f"| {flag} | {default} | {opt.help} |")
    for ini in INI_OPTIONS:
        lines.append(f"| ini `{ini.name}` | `conformance/{Path(ini.default).name}` | {ini.help} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    from conformance import cli

    parser = cli.Parser("python -m conformance.options",
                        "Print the harness's pytest options as the markdown table that "
                        "docs/running.md holds.")
    parser.parse_args(argv)
    print(markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
