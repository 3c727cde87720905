"""Hooks the harness offers to other plugins.

Why: outcomes the core cannot see by itself (TIMEOUT, when a timeout plugin interrupts a
test) are classified by the plugin that causes them, without editing the core.
"""
from __future__ import annotations

import pytest


@pytest.hookspec(firstresult=True)
def pytest_conformance_classify(item, call):
    """Return an outcome name (e.g. ``"TIMEOUT"``) for this test phase, or None.

    Called for every setup/call/teardown phase of a suite test before the built-in
    classification; the first non-None result wins.
    """
