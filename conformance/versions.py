"""One release order for every version the project sorts: PEP 440, as pip orders releases.

The history (conformance/history) and the report (its columns of one framework, the newest
version of each) once had a hand-written key each; both put ``2.0.0rc1`` after ``2.0.0`` and
they disagreed on ``+cpu``. ``packaging`` (a dependency of pytest and nox, declared in
pyproject.toml) knows pre-, post- and dev-releases and local parts.
"""
from __future__ import annotations

from packaging.version import InvalidVersion, Version


def version_key(version: str | None) -> tuple:
    """Sort key: ``2.0.0rc1`` < ``2.0.0`` < ``2.0.0+cpu`` < ``2.0.1`` < ``2.10.0``. A text that
    is no PEP 440 version (a third-party adapter's ``"dev"``; None, no version) sorts after
    every version, by its text, so a sort never fails on it."""
    try:
        return (0, Version(version or ""))
    except InvalidVersion:
        return (1, version or "")
