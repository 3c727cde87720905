"""pytest plugin (entry point ``pytest11``): puts a leak's keep-alive chain into the results.

Why a plugin of its own: :class:`conformance.liveness.StillAlive` carries the chain of
references that keeps a leaked object alive (``chain.as_data()``); the report draws it. The
exception only exists in the process that ran the test (an xdist worker), so the chain travels
as a user property of the phase report, which xdist serialises, and
:class:`conformance.results.run_file.TestRecords` copies it into the test's JSON line as ``chain``.
"""
from __future__ import annotations

import pytest

from conformance.results.phases import CHAIN_PROPERTY


def chain_data(exc: BaseException | None) -> dict | None:
    """The keep-alive chain of ``exc`` (or of an exception it was raised from), as data."""
    seen = 0
    while exc is not None and seen < 5:
        chain = getattr(exc, "chain", None)
        if chain is not None and callable(getattr(chain, "as_data", None)):
            try:
                return chain.as_data()
            except Exception:  # noqa: BLE001 - a broken chain must not break the run
                return None
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if call.excinfo is not None:
        data = chain_data(call.excinfo.value)
        if data is not None:
            report.user_properties = [*report.user_properties, (CHAIN_PROPERTY, data)]
    return report
