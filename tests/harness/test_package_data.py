"""Every data file the packages read at run time is in the wheel: pyproject.toml's
``[tool.setuptools.package-data]`` patterns match each non-Python file under conformance/,
adapters/ and reference/ (a file left out works in a checkout and fails only when installed:
the release history and reference/scope.toml once were)."""
from __future__ import annotations

import fnmatch
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("conformance", "adapters", "reference")


def _data_files(package: str) -> list[str]:
    return sorted(p.relative_to(ROOT / package).as_posix() for p in (ROOT / package).rglob("*")
                  if p.is_file() and p.suffix not in (".py", ".pyc")
                  and "__pycache__" not in p.parts and not p.name.startswith(".")
                  and not p.name.endswith(".lock"))


def test_every_data_file_is_package_data():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]
    missing = [f"{package}/{name}" for package in PACKAGES for name in _data_files(package)
               if not any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns.get(package, []))]
    assert not missing, f"add these to [tool.setuptools.package-data] in pyproject.toml: {missing}"
    assert _data_files("conformance"), "no data file found: the walk is broken"
