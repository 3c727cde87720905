"""pytest plugin (entry point ``pytest11``): runs the suites against one adapter.

Minimal core; outcomes, catalogue checks, expectations and results are layered on top.
"""
from __future__ import annotations

import pytest

from adapters.base import FrameworkNotInstalled, Unsupported, known_adapters, load_adapter
from conformance.api import Diverges


def pytest_addoption(parser):
    group = parser.getgroup("autograd-conformance")
    group.addoption("--adapter", default="reference",
                    help=f"framework adapter to test (built-in: {', '.join(known_adapters())})")
    group.addoption("--device", default="cpu", help="device to run on: cpu or cuda")
    group.addoption("--results", default=None, help="write one JSON line per test to this file")


def pytest_configure(config):
    config.addinivalue_line("markers", "rule(id): the conformance rule this test checks")
    name = config.getoption("adapter")
    try:
        adapter = load_adapter(name)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    try:
        adapter.fw
    except FrameworkNotInstalled as exc:
        raise pytest.UsageError(str(exc)) from None
    device = config.getoption("device")
    try:
        adapter.check_device(device)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    config._conformance_adapter = adapter


@pytest.fixture(scope="session")
def adapter(request):
    return request.config._conformance_adapter


@pytest.fixture(scope="session")
def fw(adapter):
    return adapter.fw


@pytest.fixture(scope="session")
def device(request):
    return request.config.getoption("device")


def classify(call) -> str:
    if call.excinfo is None:
        return "PASS"
    exc = call.excinfo.value
    if isinstance(exc, Unsupported):
        return "UNSUPPORTED"
    if isinstance(exc, (AssertionError, Diverges)):
        return "DIVERGES"
    return "ERROR"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when == "call" or (call.when == "setup" and call.excinfo is not None):
        report.user_properties.append(("conformance_outcome", classify(call)))


@pytest.fixture
def observe(request):
    """For IMPLEMENTATION-DEFINED rules: ``observe(value)`` records what the framework did.

    The value is reported (outcome OBSERVED) instead of being judged.
    """
    def record(value) -> None:
        request.node.user_properties.append(("observed", repr(value)))

    return record
