"""Expectations files: strict, validated against the catalogue, version-aware."""
from pathlib import Path

import pytest

from conformance.rules import load_catalogue
from conformance.expectations import ExpectationsError, load_expectations
from conformance.outcomes import Outcome

ROOT = Path(__file__).resolve().parents[2]
RULES = {"identity.grad-stable-id", "hooks.fire-once"}


def load(tmp_path, text, version="0.9.0"):
    path = tmp_path / "exp.toml"
    path.write_text(text)
    return load_expectations(path, RULES, version)


def test_quoted_dotted_and_versioned_entries(tmp_path):
    text = '''
["identity.grad-stable-id"]
outcome = "DIVERGES"
reason = "id changes between reads"
versions = ["0.8.*"]
upstream = "https://github.com/Oneflow-Inc/oneflow/issues/1"
[hooks.fire-once]
outcome = "DIVERGES"
reason = "hooks fire twice"
category = "hooks"
'''
    on_09 = load(tmp_path, text, "0.9.0")
    on_08 = load(tmp_path, text, "0.8.0")
    assert set(on_09) == {"hooks.fire-once"}
    assert set(on_08) == {"hooks.fire-once", "identity.grad-stable-id"}
    assert on_08["identity.grad-stable-id"].outcome is Outcome.DIVERGES


def test_array_of_entries_per_version(tmp_path):
    text = '''
[["identity.grad-stable-id"]]
outcome = "DIVERGES"
reason = "a"
versions = ["0.8.0"]
[["identity.grad-stable-id"]]
outcome = "ERROR"
reason = "b"
versions = ["0.9.0"]
'''
    assert load(tmp_path, text, "0.9.0")["identity.grad-stable-id"].outcome is Outcome.ERROR
    assert load(tmp_path, text, "1.0.0") == {}


def test_per_test_entry_wins_over_the_rule_wide_one(tmp_path):
    text = '''
[["hooks.fire-once"]]
outcome = "DIVERGES"
reason = "one test of the rule"
tests = ["test_twice*"]
[["hooks.fire-once"]]
outcome = "UNSUPPORTED"
reason = "the rest of the rule"
'''
    exps = load(tmp_path, text)
    assert exps.get("hooks.fire-once", "test_twice[cpu]").outcome is Outcome.DIVERGES
    assert exps.get("hooks.fire-once", "suites/test_hooks.py::test_twice").outcome is Outcome.DIVERGES
    assert exps.get("hooks.fire-once", "test_once").outcome is Outcome.UNSUPPORTED
    assert exps.get("identity.grad-stable-id", "test_twice") is None


def test_parametrized_test_names_match_exactly(tmp_path):
    text = '["hooks.fire-once"]\noutcome = "CRASH"\nreason = "r"\ntests = ["test_grads[none]"]\n'
    exps = load(tmp_path, text)
    assert exps.get("hooks.fire-once", "test_grads[none]").outcome is Outcome.CRASH
    assert exps.get("hooks.fire-once", "test_grads[default]") is None


def test_flaky_entry_accepts_its_further_outcomes(tmp_path):
    text = '["hooks.fire-once"]\noutcome = ["TIMEOUT", "PASS"]\nreason = "deadlocks in some runs"\n'
    exp = load(tmp_path, text)["hooks.fire-once"]
    assert (exp.outcome, exp.flaky) == (Outcome.TIMEOUT, (Outcome.PASS,))
    with pytest.raises(ExpectationsError, match="flaky entry"):
        load(tmp_path, '["hooks.fire-once"]\noutcome = ["TIMEOUT", "MAYBE"]\nreason = "r"\n')


def test_flaky_verdicts():
    from conformance.outcomes import judge

    assert judge(Outcome.PASS, Outcome.TIMEOUT, "w", (Outcome.PASS,)).status == "passed"
    assert judge(Outcome.TIMEOUT, Outcome.TIMEOUT, "w", (Outcome.PASS,)).status == "xfailed"
    assert judge(Outcome.CRASH, Outcome.TIMEOUT, "w", (Outcome.PASS,)).status == "failed"
    assert judge(Outcome.PASS, Outcome.TIMEOUT, "w").status == "failed"  # strict without flaky


def test_missing_file_means_no_expectations(tmp_path):
    assert load_expectations(tmp_path / "none.toml", RULES, "1") == {}


@pytest.mark.parametrize("text, message", [
    ('["identity.nope"]\noutcome = "DIVERGES"\nreason = "x"\n',
     "[identity.nope]: no such rule in the catalogue"),
    ('["hooks.fire-once"]\noutcome = "DIVERGED"\nreason = "x"\n',
     "[hooks.fire-once]: key 'outcome' = 'DIVERGED' must be one of DIVERGES, UNSUPPORTED"),
    ('["hooks.fire-once"]\noutcome = "PASS"\nreason = "x"\n', "key 'outcome' = 'PASS'"),
    ('["hooks.fire-once"]\noutcome = "DIVERGES"\n', "[hooks.fire-once]: key 'reason' is required"),
    ('["hooks.fire-once"]\noutcome = "DIVERGES"\nreason = "x"\nwhy = "y"\n',
     "[hooks.fire-once]: unknown key(s) why"),
    ('["hooks.fire-once"]\noutcome = "DIVERGES"\nreason = "x"\nversions = "0.8"\n',
     "key 'versions' must be a list"),
    ('["hooks.fire-once"]\noutcome = "DIVERGES\nreason = "x"\n', "not valid TOML"),
    ('["hooks.fire-once"]\noutcome = "DIVERGES"\nreason = "x"\n["hooks.fire-once"]\n',
     "not valid TOML"),
    ('[["hooks.fire-once"]]\noutcome = "DIVERGES"\nreason = "x"\n'
     '[["hooks.fire-once"]]\noutcome = "ERROR"\nreason = "y"\n', "two entries apply"),
])
def test_bad_file_names_file_and_key(tmp_path, text, message):
    with pytest.raises(ExpectationsError) as info:
        load(tmp_path, text)
    assert str(tmp_path / "exp.toml") in str(info.value)
    assert message in str(info.value)


def test_malformed_toml_names_the_line(tmp_path):
    with pytest.raises(ExpectationsError, match=r"at line 3"):
        load(tmp_path, '["hooks.fire-once"]\noutcome = "DIVERGES"\nreason = \n')


SUITE = '''
@rule("demo.diverges")
def test_diverges(): assert False, "observed 2"
@rule("demo.holds")
def test_holds(): pass
'''


@pytest.fixture
def demo(conformance_project):
    conformance_project.rules("demo", "diverges", "holds")
    conformance_project.suite("demo", SUITE)
    return conformance_project


def test_expected_divergence_is_xfail(demo):
    demo.file("exp.toml", '["demo.diverges"]\noutcome = "DIVERGES"\nreason = "known bug"\n')
    result = demo.run("suites", "--expectations", "exp.toml", "--results", "r.jsonl", "-rx")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, xfailed=1)
    result.stdout.fnmatch_lines(["*XFAIL*test_diverges*DIVERGES as expected: known bug*"])
    record = [r for r in demo.results("r.jsonl") if r["type"] == "test"][0]
    assert (record["outcome"], record["actual"]) == ("XFAIL", "DIVERGES")
    assert record["expectation"]["reason"] == "known bug"


def test_expected_divergence_that_passes_fails_the_run(demo):
    demo.file("exp.toml", '["demo.holds"]\noutcome = "DIVERGES"\nreason = "was a bug"\n')
    result = demo.run("suites", "--expectations", "exp.toml", "--results", "r.jsonl")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*[[]XPASS(strict)[]] expected DIVERGES (*exp.toml [[]demo.holds[]])"
                                 " but the rule held: remove the entry*"])
    assert [r for r in demo.results("r.jsonl") if r["type"] == "test"][1]["outcome"] == "XPASS"


def test_other_outcome_than_expected_fails_the_run(demo):
    demo.file("exp.toml", '["demo.diverges"]\noutcome = "CRASH"\nreason = "r"\n')
    result = demo.run("suites", "--expectations", "exp.toml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*expected CRASH (*) but got DIVERGES: update the entry*"])


def test_per_test_expectation_judges_only_its_test(demo):
    demo.file("exp.toml", '["demo.holds"]\noutcome = "DIVERGES"\nreason = "r"\ntests = ["test_nothing_here"]\n')
    result = demo.run("suites", "--expectations", "exp.toml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # a pattern naming no test is refused
    demo.file("exp.toml", '["demo.diverges"]\noutcome = "DIVERGES"\nreason = "r"\ntests = ["test_div*"]\n')
    result = demo.run("suites", "--expectations", "exp.toml")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, xfailed=1)


def test_unknown_rule_in_expectations_fails_the_run(demo):
    demo.file("exp.toml", '["demo.renamed"]\noutcome = "DIVERGES"\nreason = "r"\n')
    result = demo.run("suites", "--expectations", "exp.toml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*exp.toml: [[]demo.renamed[]]: no such rule in the catalogue*"])


def test_malformed_expectations_fail_the_run(demo):
    demo.file("exp.toml", '["demo.diverges"]\noutcome = DIVERGES\n')
    result = demo.run("suites", "--expectations", "exp.toml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*exp.toml: not valid TOML: *(at line 2, column 11)*"])


def test_missing_expectations_option_file_fails_the_run(demo):
    result = demo.run("suites", "--expectations", "nope.toml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--expectations nope.toml: no such file*"])


@pytest.mark.parametrize("name", ["torch", "oneflow", "tinygrad"])
def test_shipped_expectations_are_valid(name):
    catalogue = load_catalogue(ROOT / "conformance" / "catalogue")
    for version in ("2.13.0", "0.8.0", "0.9.0", "0.14.0"):
        load_expectations(ROOT / "adapters" / "expectations" / f"{name}.toml", catalogue.rules,
                          version)


# -- root causes -----------------------------------------------------------------------------

def _write_rc(tmp_path, body):
    path = tmp_path / "exp.toml"
    path.write_text(body, encoding="utf-8")
    return path


def test_root_cause_is_loaded_and_shown(tmp_path):
    from conformance.expectations import load_expectations

    path = _write_rc(tmp_path, '["a.b"]\noutcome = "DIVERGES"\nroot_cause = "no-handle"\n'
                               'reason = "register_hook returns None: no handle"\n')
    exp = load_expectations(path, ["a.b"], "1.0")["a.b"]
    assert exp.root_cause == "no-handle"
    assert exp.as_json()["root_cause"] == "no-handle"


@pytest.mark.parametrize("body, words", [
    ('["a.b"]\noutcome = "DIVERGES"\nroot_cause = "No Handle"\nreason = "r"\n', "slug"),
    ('["a.b"]\noutcome = "DIVERGES"\nreason = """one\ntwo"""\n', "one line"),
    ('[["a.b"]]\noutcome = "DIVERGES"\nroot_cause = "x"\nreason = "r1"\ntests = ["t1"]\n'
     '[["a.b"]]\noutcome = "DIVERGES"\nroot_cause = "x"\nreason = "r2"\ntests = ["t2"]\n', "one statement"),
])
def test_bad_root_cause_entries_are_refused(tmp_path, body, words):
    from conformance.expectations import ExpectationsError, load_expectations

    path = _write_rc(tmp_path, body)
    with pytest.raises(ExpectationsError, match=words):
        load_expectations(path, ["a.b"], "1.0")


@pytest.mark.parametrize("name, versions", [("torch", ("2.13.0",)), ("oneflow", ("0.9.0", "0.8.0")),
                                            ("paddle", ("3.3.1",))])
def test_every_shipped_entry_names_its_root_cause(name, versions):
    """The report's root-cause ids come from these slugs; an entry without one would show as
    an anonymous ``auto-…`` cluster."""
    catalogue = load_catalogue(ROOT / "conformance" / "catalogue")
    for version in versions:
        found = load_expectations(ROOT / "adapters" / "expectations" / f"{name}.toml",
                                  catalogue.rules, version)
        entries = [*dict.values(found), *(e for es in found.per_test.values() for e in es)]
        assert entries or name == "torch"
        missing = sorted({e.rule for e in entries if not e.root_cause})
        assert not missing, f"{name} {version}: entries without root_cause: {missing}"


@pytest.mark.parametrize("outcome, words", [
    ("[]", "key 'outcome' = [] must be one of"),
    ('[["DIVERGES"]]', "key 'outcome' = ['DIVERGES'] must be one of"),
    ('["DIVERGES", ["PASS"]]', "further outcomes of a flaky entry must each be one of"),
    ("{x = 1}", "key 'outcome' = {'x': 1} must be one of"),
])
def test_an_outcome_of_the_wrong_type_is_named(tmp_path, outcome, words):
    with pytest.raises(ExpectationsError, match=r"\[hooks.fire-once\]") as err:
        load(tmp_path, f'["hooks.fire-once"]\noutcome = {outcome}\nreason = "r"\n')
    assert words in str(err.value) and "(line 2)" in str(err.value)


def test_a_file_that_is_not_utf8_is_named_with_its_line(tmp_path):
    path = tmp_path / "exp.toml"
    path.write_bytes(b'["hooks.fire-once"]\noutcome = "DIVERGES"\nreason = "caf\xe9"\n')
    with pytest.raises(ExpectationsError, match=r"exp.toml: not UTF-8 text \(byte 0xe9 on line 3\); "
                                                r"save it as UTF-8"):
        load_expectations(path, RULES, "1.0")


def test_a_file_nested_too_deeply_is_named(tmp_path):
    with pytest.raises(ExpectationsError, match="nested too deeply|not valid TOML"):
        load(tmp_path, "x = " + "[" * 100_000 + "]" * 100_000 + "\n")


def test_a_version_the_file_was_not_written_for_is_named(tmp_path):
    from conformance.expectations import coverage_note

    path = tmp_path / "fw.toml"
    path.write_text('written_for = ["2.13.*"]\n\n[["identity.grad-stable-id"]]\noutcome = "DIVERGES"\n'
                    'reason = "r"\nversions = ["1.13.*"]\n')
    assert coverage_note(path, "2.13.0") == ""
    assert coverage_note(path, "1.13.1+cu117") == ""  # an entry was written for it
    note = coverage_note(path, "2.4.1")
    assert "no expectation entry was written for version 2.4.1" in note and "2.13.*" in note
    path.write_text('[["identity.grad-stable-id"]]\noutcome = "DIVERGES"\nreason = "r"\n')
    assert coverage_note(path, "0.1") == ""  # a file without written_for makes no claim
    path.write_text('written_for = "2.13"\n')
    with pytest.raises(ExpectationsError, match="'written_for' must be a list"):
        coverage_note(path, "2.13.0")
