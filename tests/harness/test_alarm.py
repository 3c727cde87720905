"""Stage 1 of every time limit (conformance/alarm.py): an interrupt that Python drops is known
and repeated. Under load the alarm fired inside Hypothesis's gc callback, Python dropped it, and
a test that slept past its 1 s limit PASSed."""
import time
import unittest

import pytest

from conformance import alarm as alarm_module
from conformance.alarm import LOST, arm_alarm
from conformance.outcome_exceptions import TestTimeout

DROPS = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


class _FinalizerThatWaits:
    """Its ``__del__`` waits until the alarm interrupts it; Python then drops the interrupt."""

    def __del__(self):
        time.sleep(3600)


@DROPS
def test_a_dropped_interrupt_is_known_and_comes_again(monkeypatch):
    monkeypatch.setattr(alarm_module, "RETRY_SECONDS", 0.2)
    alarm = arm_alarm(0.1, per_run=7)
    try:
        _FinalizerThatWaits()  # the interrupt lands in __del__ and is dropped
        assert alarm.fired
        with pytest.raises(TestTimeout, match="--conformance-timeout 7s"):
            time.sleep(30)  # a test that goes on running is interrupted again
    finally:
        alarm()
    assert str(alarm.lost()).endswith(LOST)  # and whoever ran the test can tell
    assert alarm.lost() is None  # once


def test_an_interrupt_that_arrived_is_not_lost_nor_repeated(monkeypatch):
    monkeypatch.setattr(alarm_module, "RETRY_SECONDS", 0.2)
    alarm = arm_alarm(0.1)
    try:
        with pytest.raises(TestTimeout):
            time.sleep(30)
        alarm.arrived()
        time.sleep(0.5)  # no further interrupt
    finally:
        alarm()
    assert alarm.fired and alarm.lost() is None


def test_a_limit_that_did_not_pass_is_not_lost():
    alarm = arm_alarm(30)
    alarm()
    assert not alarm.fired and alarm.lost() is None


@DROPS
def test_the_run_makes_a_test_whose_interrupt_was_dropped_timeout(conformance_project):
    conformance_project.rules("demo", "slow")
    conformance_project.suite("demo", '''
        import time
        class Waits:
            def __del__(self): time.sleep(3600)
        @rule("demo.slow")
        def test_slow(): Waits()  # the interrupt lands in __del__, which drops it; then returns
    ''')
    result = conformance_project.run("suites", "--conformance-timeout", "1",
                                     "--time-limit-scale=1", "--results=results.jsonl",
                                     subprocess=True)  # stage 2's grace is not scaled here
    assert result.ret == 1
    (record,) = [r for r in conformance_project.results() if r.get("nodeid", "").endswith("test_slow")]
    assert record["outcome"] == "TIMEOUT" and "interrupt was lost" in record["message"]


@DROPS
def test_a_pytorch_test_whose_interrupt_was_dropped_times_out():
    from conformance.torchtests.worker import run_one

    class Case(unittest.TestCase):
        def test_waits(self):
            _FinalizerThatWaits()

    record = run_one({"Case": Case}, {}, "Case.test_waits", 0.2, torch_module=None)
    assert record["outcome"] == "fail" and record["detail"].startswith("timeout")


@DROPS
def test_a_script_whose_interrupt_was_dropped_times_out(capsys):
    from conformance.repro.runtime import Repro

    repro = Repro("engine.some-rule", "MUST", adapter_spec="reference", timeout=0.2)
    actual, message = repro.check("waits", _FinalizerThatWaits)
    assert actual == "TIMEOUT" and "interrupt was lost" in message
