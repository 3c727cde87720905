"""--conformance-timeout: a hung test is a TIMEOUT and the run goes on.

The hung tests here never end on their own (an hour's sleep): that one is TIMEOUT shows it was
interrupted, so no test measures wall time (tests/hang.py)."""
import re
import time

import pytest

HUNG_SUITE = '''
    import signal, time
    @rule("demo.a")
    def test_before(): pass
    @rule("demo.hangs")
    def test_hangs_in_python():
        try:
            time.sleep(3600)
        except Exception:  # a test's own broad except must not swallow the timeout
            pass
    @rule("demo.b")
    def test_after(): pass
'''

STUCK_SUITE = '''
    import signal, time
    @rule("demo.a")
    def test_before(): pass
    @rule("demo.stuck")
    def test_stuck_outside_python():
        # SIGALRM blocked: as deaf to the interrupt as C code that never returns
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        time.sleep(3600)
    @rule("demo.b")
    def test_after(): pass
'''


def outcomes(project):
    records = project.results()
    return {r["nodeid"].split("::")[-1]: r for r in records if r["type"] == "test"}, records


def test_a_hang_in_python_is_interrupted_as_timeout(conformance_project):
    conformance_project.rules("demo", "a", "b", "hangs")
    conformance_project.suite("demo", HUNG_SUITE)
    result = conformance_project.run("suites", "--conformance-timeout", "1",
                                     "--results", "results.jsonl", "-v")
    tests, records = outcomes(conformance_project)
    assert {n: r["outcome"] for n, r in tests.items()} == {
        "test_before": "PASS", "test_hangs_in_python": "TIMEOUT", "test_after": "PASS"}
    assert "ran past --conformance-timeout 1s" in tests["test_hangs_in_python"]["message"]
    assert records[-1]["type"] == "end"
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*test_hangs_in_python TIMEOUT*", "suite*PASS*TIMEOUT*",
                                 "demo*3*2/3*1/3*"])


def test_stuck_outside_python_ends_the_worker_and_is_timeout_with_tracebacks(conformance_project):
    conformance_project.rules("demo", "a", "b", "stuck")
    conformance_project.suite("demo", STUCK_SUITE)
    result = conformance_project.run("-n", "1", "suites", "--conformance-timeout", "1",
                                     "--results", "results.jsonl", subprocess=True)
    tests, records = outcomes(conformance_project)
    assert {n: r["outcome"] for n, r in tests.items()} == {
        "test_before": "PASS", "test_stuck_outside_python": "TIMEOUT", "test_after": "PASS"}, \
        result.stdout.str()
    message = tests["test_stuck_outside_python"]["message"]
    assert "ran past --conformance-timeout 1s" in message and "its worker was ended" in message
    # 1 s times the machine's scale, then the grace (5 s at least): faulthandler's traceback
    limit = re.search(r"Timeout \((\d+):(\d\d):(\d\d)(\.\d+)?\)!", message)
    assert limit and int(limit[1]) * 3600 + int(limit[2]) * 60 + int(limit[3]) >= 6, message
    assert "test_stuck_outside_python" in message
    assert records[-1]["type"] == "end" and records[-1]["not_run"] == []


def test_a_hung_fresh_interpreter_is_timeout_not_error(conformance_project):
    """A framework that deadlocks inside in_fresh_interpreter (OneFlow's threads) is a TIMEOUT
    at the child's own limit, even with the per-test limit off."""
    conformance_project.rules("demo", "a", "hangs")
    conformance_project.suite("demo", '''
        from conformance.api import in_fresh_interpreter
        @rule("demo.a")
        def test_before(): pass
        @rule("demo.hangs")
        def test_child_hangs(adapter):
            in_fresh_interpreter(adapter, "import time; time.sleep(3600)", timeout=2)
    ''')
    conformance_project.run("suites", "--conformance-timeout", "0", "--results", "results.jsonl")
    tests, _ = outcomes(conformance_project)
    assert {n: r["outcome"] for n, r in tests.items()} == {
        "test_before": "PASS", "test_child_hangs": "TIMEOUT"}
    assert re.search(r"still running after [\d.]+s", tests["test_child_hangs"]["message"])


def test_a_fresh_interpreter_that_spins_is_timeout_after_its_cpu_budget(conformance_project):
    """A child that keeps the CPU busy without progressing (OneFlow 0.9.0's threads deadlock
    spinning) is ended after its CPU budget, not the wall limit: a TIMEOUT saying it spins."""
    conformance_project.rules("demo", "spins")
    conformance_project.suite("demo", '''
        from conformance.api import in_fresh_interpreter
        @rule("demo.spins")
        def test_child_spins(adapter):
            in_fresh_interpreter(adapter, "from conformance.api import progress\\n"
                                 "progress()\\nwhile True: pass", timeout=3600,
                                 spin_cpu_seconds=1)
    ''')
    conformance_project.run("suites", "--conformance-timeout", "0", "--results", "results.jsonl")
    tests, _ = outcomes(conformance_project)
    assert tests["test_child_spins"]["outcome"] == "TIMEOUT"
    assert "without progressing: it spins" in tests["test_child_spins"]["message"]


def test_an_expected_timeout_is_xfail(conformance_project):
    conformance_project.rules("demo", "a", "b", "hangs")
    conformance_project.suite("demo", HUNG_SUITE)
    conformance_project.file("exp.toml", '''
        ["demo.hangs"]
        outcome = "TIMEOUT"
        reason = "never returns"
    ''')
    result = conformance_project.run("suites", "--conformance-timeout", "1",
                                     "--expectations", "exp.toml")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()


def test_zero_turns_the_limit_off(conformance_project):
    conformance_project.rules("demo", "slow")
    conformance_project.suite("demo", '''
        import time
        @rule("demo.slow")
        def test_slow(): time.sleep(1.5)
    ''')
    assert conformance_project.run("suites", "--conformance-timeout", "0").ret == 0
    # unscaled, 1 s is less than the 1.5 s the test sleeps however busy the machine is
    # in a child: with the scale fixed at 1, stage 2's grace is 5 s however busy the machine is
    assert conformance_project.run("suites", "--conformance-timeout", "1",
                                   "--time-limit-scale=1", subprocess=True).ret == 1


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "inf", "9e18"])  # 9e18: OverflowError
def test_bad_timeout_is_a_usage_error(conformance_project, value):
    result = conformance_project.run("suites", f"--conformance-timeout={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--conformance-timeout*give a number of seconds >= 0*"])


def test_project_tests_time_out_too(pytester):
    pytester.makepyfile(test_plain='''
        import time
        def test_sleeps(): time.sleep(3600)
        def test_fine(): pass
    ''')
    result = pytester.runpytest("-p", "no:cacheprovider", "--conformance-timeout", "1")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*TestTimeout: test ran past --conformance-timeout 1s*"])


def test_the_alarm_interrupts_python_code_and_disarm_stops_it():
    # the public stage 1 the repro scripts arm too (conformance/repro/runtime.py)
    from conformance.timeout import TestTimeout, arm_alarm

    disarm = arm_alarm(0.2, per_run=7)
    with pytest.raises(TestTimeout, match="--conformance-timeout 7s"):
        try:
            time.sleep(5)
        finally:
            disarm()
    disarm = arm_alarm(0.2)
    disarm()
    time.sleep(0.4)  # disarmed: no alarm comes


def test_grace_is_a_fifth_of_the_limit_and_at_least_five_scaled_seconds():
    from conformance.timeout import grace

    assert grace(1) == 5.0 and grace(100) == 20.0
    assert grace(1, scale=4) == 20.0  # on a machine 4 times slower, unwinding is too


def test_the_start_up_check_has_its_own_limit(conformance_project):
    """A framework whose import takes longer than --conformance-timeout (a busy machine) is
    not a hang at start-up: the check has --startup-timeout, and only its own limit stops it."""
    conformance_project.rules("demo", "a")
    conformance_project.suite("demo", '''
        @rule("demo.a")
        def test_a(): pass
    ''')
    conformance_project.file("slowfw.py", '''
        import time
        from fakefw import FakeAdapter

        class SlowImport(FakeAdapter):
            def _import(self):
                time.sleep(2)
                return super()._import()
    ''')
    ok = conformance_project.run("suites", "--conformance-timeout", "1", "--time-limit-scale=1",
                                 adapter="slowfw:SlowImport")
    assert ok.ret == 0, ok.stdout.str() + ok.stderr.str()
    hung = conformance_project.run("suites", "--startup-timeout", "1", "--time-limit-scale=1",
                                   adapter="slowfw:SlowImport")
    assert hung.ret == pytest.ExitCode.USAGE_ERROR
    hung.stderr.fnmatch_lines(["*did not finish within 1s*give a longer --startup-timeout*"])


def test_a_test_that_declares_a_time_limit_factor_gets_that_many_limits(conformance_project):
    conformance_project.rules("demo", "long", "ordinary")
    conformance_project.suite("demo", '''
        import time
        from conformance.api import time_limit_factor
        @time_limit_factor(30)
        @rule("demo.long")
        def test_long(): time.sleep(1.5)
        @rule("demo.ordinary")
        def test_ordinary(): time.sleep(3600)
    ''')
    conformance_project.run("suites", "--conformance-timeout", "1", "--time-limit-scale=1",
                            "--results", "results.jsonl", subprocess=True)  # as above
    tests, _ = outcomes(conformance_project)
    assert {n: r["outcome"] for n, r in tests.items()} == {
        "test_long": "PASS", "test_ordinary": "TIMEOUT"}


def test_a_bad_time_limit_factor_is_one_line_naming_the_test(conformance_project):
    conformance_project.rules("demo", "a")
    conformance_project.suite("demo", '''
        import pytest
        from conformance.api import time_limit_factor
        @pytest.mark.time_limit_factor(0)
        @rule("demo.a")
        def test_a(): pass
    ''')
    result = conformance_project.run("suites", "--conformance-timeout", "1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_a: time_limit_factor(0): give a number from 1 to 1000*"])
    with pytest.raises(ValueError, match="time_limit_factor\\('long'\\): give a number"):
        from conformance.api import time_limit_factor
        time_limit_factor("long")  # where the test is defined: its module's collection error


def test_the_limits_scale_with_the_machine_and_say_so(conformance_project):
    conformance_project.rules("demo", "a", "b", "hangs")
    conformance_project.suite("demo", HUNG_SUITE)
    conformance_project.run("suites", "--conformance-timeout", "1", "--time-limit-scale=2.5",
                            "--results", "results.jsonl")
    tests, _ = outcomes(conformance_project)
    message = tests["test_hangs_in_python"]["message"]
    assert "ran past --conformance-timeout 1s; its limit was 1s × 2.5 (this machine's " \
           "time-limit scale) = 2.5s and was interrupted" in message


@pytest.mark.parametrize("option,value", [("--time-limit-scale", "fast"),
                                          ("--time-limit-scale", "0.5"),
                                          ("--startup-timeout", "-1")])
def test_bad_scale_or_start_up_limit_is_a_usage_error(conformance_project, option, value):
    result = conformance_project.run("suites", f"{option}={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{option} {value!r}: give *"])


def test_the_measured_scale_is_at_least_one_and_reaches_child_interpreters(monkeypatch):
    from conformance import time_scale

    assert 1 <= time_scale.measure() <= time_scale.MAX_SCALE
    assert time_scale.parse("auto") is None and time_scale.parse("3") == 3.0
    monkeypatch.setattr(time_scale, "_scale", None)
    monkeypatch.setattr(time_scale, "_measured", None)
    monkeypatch.setenv(time_scale.ENVIRONMENT, "7.5")  # what in_fresh_interpreter passes on
    assert time_scale.scale() == 7.5 and time_scale.scaled(2) == 15 and time_scale.scaled(0) == 0


def test_a_test_that_answered_its_interrupt_gets_a_whole_grace_to_report(tmp_path):
    """Stage 2 ends a process that does not answer the interrupt. One that did (the TestTimeout
    arrived) is unwinding and reporting in Python: on a busy machine that took longer than
    what was left of the grace, and the worker was ended, a CRASH of a test already stopped."""
    import subprocess
    import sys

    from conformance.child_interpreter import environment
    from tests.hang import hang_limit

    script = tmp_path / "answers.py"
    script.write_text(
        "import sys, time\n"
        "from conformance import alarm\n"
        "from conformance.timeout import Limit, TestTimeout, grace\n"
        "alarm.RETRY_SECONDS = 3600  # no second interrupt while the arrival is held back\n"
        "limit = Limit(0.2, 0.2, sys.stderr)\n"
        "started = time.monotonic()\n"
        "try:\n"
        "    time.sleep(3600)\n"
        "except TestTimeout:\n"
        "    time.sleep(2)  # the arrival is seen 2 s after the interrupt: stage 2 moves 2 s on\n"
        "    limit.arrived()\n"
        "time.sleep(0.2 + grace(0.2) + 1 - (time.monotonic() - started))  # past the first deadline\n"
        "limit()\n"
        "print('reported')\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=hang_limit(60), env=environment())
    assert done.returncode == 0 and done.stdout.strip() == "reported", done.stderr[-2000:]
