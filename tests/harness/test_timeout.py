"""--conformance-timeout: a hung test is a TIMEOUT and the run goes on."""
import time

import pytest

HUNG_SUITE = '''
    import signal, time
    @rule("demo.a")
    def test_before(): pass
    @rule("demo.hangs")
    def test_hangs_in_python():
        try:
            time.sleep(60)
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
        time.sleep(60)
    @rule("demo.b")
    def test_after(): pass
'''


def outcomes(project):
    records = project.results()
    return {r["nodeid"].split("::")[-1]: r for r in records if r["type"] == "test"}, records


def test_a_hang_in_python_is_interrupted_as_timeout(conformance_project):
    conformance_project.rules("demo", "a", "b", "hangs")
    conformance_project.suite("demo", HUNG_SUITE)
    started = time.monotonic()
    result = conformance_project.run("suites", "--conformance-timeout", "1",
                                     "--results", "results.jsonl", "-v")
    assert time.monotonic() - started < 30
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
    assert "Timeout (0:00:06)!" in message and "test_stuck_outside_python" in message  # traceback
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
            in_fresh_interpreter(adapter, "import time; time.sleep(60)", timeout=2)
    ''')
    conformance_project.run("suites", "--conformance-timeout", "0", "--results", "results.jsonl")
    tests, _ = outcomes(conformance_project)
    assert {n: r["outcome"] for n, r in tests.items()} == {
        "test_before": "PASS", "test_child_hangs": "TIMEOUT"}
    assert "still running after 2s" in tests["test_child_hangs"]["message"]


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
    assert conformance_project.run("suites", "--conformance-timeout", "1").ret == 1


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "inf", "9e18"])  # 9e18: OverflowError
def test_bad_timeout_is_a_usage_error(conformance_project, value):
    result = conformance_project.run("suites", f"--conformance-timeout={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--conformance-timeout*give a number of seconds >= 0*"])


def test_project_tests_time_out_too(pytester):
    pytester.makepyfile(test_plain='''
        import time
        def test_sleeps(): time.sleep(60)
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


def test_grace_is_a_fifth_of_the_limit_and_at_least_five_seconds():
    from conformance.timeout import grace

    assert grace(1) == 5.0 and grace(100) == 20.0
