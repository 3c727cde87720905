"""The harness's command-line and ini options, defined once.

Why one table: the option docs in ``docs/running.md`` are generated from it
(``python -m conformance.options``), so what the docs say and what pytest accepts
cannot drift apart (a complaint users of other conformance suites keep filing).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

DEVICES = ("cpu", "cuda")
PACKAGE_DIR = Path(__file__).resolve().parent


@dataclasses.dataclass(frozen=True)
class Option:
    """A command-line option: ``flag``, its default, accepted values, and what it does."""

    flag: str
    help: str
    default: str | None = None
    choices: tuple[str, ...] | None = None
    metavar: str | None = None

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
        help="framework adapter to test: a built-in name (reference, torch, oneflow), an "
        "entry point of the group autograd_conformance.adapters, or "
        "package.module:ClassName.",
    ),
    Option(
        "--device",
        default="cpu",
        choices=DEVICES,
        help="device the suites create tensors on.",
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
        if opt.choices:
            kwargs["choices"] = opt.choices
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


def markdown() -> str:
    """The options as a markdown table (pasted into docs/running.md; a test keeps it in sync)."""
    lines = ["| option | default | what it does |", "|---|---|---|"]
    for opt in OPTIONS:
        flag = f"`{opt.flag} {opt.metavar or '{' + ','.join(opt.choices or ()) + '}'}`"
        default = f"`{opt.default}`" if opt.default else "none"
        lines.append(f"| {flag} | {default} | {opt.help} |")
    for ini in INI_OPTIONS:
        lines.append(f"| ini `{ini.name}` | `conformance/{Path(ini.default).name}` | {ini.help} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
