"""The rule catalogue is validated, and suite tests and rules correspond one to one."""
import pytest

from conformance.rules import CatalogueError, load_catalogue

RULE = '''
[[rule]]
id = "{id}"
level = "{level}"
statement = "s"
rationale = "r"
source = "x"
'''


def write(tmp_path, suite, text):
    (tmp_path / f"{suite}.toml").write_text(text)
    return tmp_path


def test_valid_catalogue_loads(tmp_path):
    write(tmp_path, "hooks", RULE.format(id="hooks.fire-once", level="SHOULD"))
    cat = load_catalogue(tmp_path)
    assert cat.suites == ("hooks",)
    assert cat.rules["hooks.fire-once"].level == "SHOULD"


@pytest.mark.parametrize("text, message", [
    (RULE.format(id="hooks.a", level="MAYBE"), "rule 'hooks.a': level 'MAYBE' is not one of"),
    (RULE.format(id="identity.a", level="MUST"),
     "rule 'identity.a': id prefix 'identity' must equal the file's suite name 'hooks'"),
    (RULE.format(id="hooks.A_b", level="MUST"), "rule 'hooks.A_b': id must look like"),
    (RULE.format(id="hooks.a", level="MUST").replace('source = "x"', ""),
     "rule 'hooks.a': field 'source' is missing"),
    (RULE.format(id="hooks.a", level="MUST") + 'colour = "red"\n',
     "rule 'hooks.a': unknown field(s) colour"),
    (RULE.format(id="hooks.a", level="MUST") * 2, "rule 'hooks.a' is defined twice"),
    ('[[rule]]\nid = "hooks.a\n', "not valid TOML"),
    ('title = "x"\n', "unexpected top-level key(s) title"),
])
def test_bad_catalogue_names_file_and_rule(tmp_path, text, message):
    write(tmp_path, "hooks", text)
    with pytest.raises(CatalogueError) as info:
        load_catalogue(tmp_path)
    assert str(tmp_path / "hooks.toml") in str(info.value)
    assert message in str(info.value)


def test_bad_catalogue_is_a_usage_error(conformance_project):
    conformance_project.rules("hooks", "a", level="MAYBE")
    result = conformance_project.run("suites")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*hooks.toml: rule 'hooks.a': level 'MAYBE'*"])


def test_complete_suite_collects(conformance_project):
    conformance_project.rules("hooks", "a", "b")
    conformance_project.suite("hooks", '''
        @rule("hooks.a")
        def test_a(): pass
        @rule("hooks.b")
        class TestB:
            def test_b(self): pass
    ''')
    conformance_project.run("suites").assert_outcomes(passed=2)


@pytest.mark.parametrize("source, message", [
    ('@rule("hooks.a")\ndef test_a(): pass\ndef test_unmarked(): pass\n',
     "*test_unmarked: no rule marker; decorate it with @rule(*"),
    ('@rule("hooks.a")\ndef test_a(): pass\n@rule("hooks.typo")\ndef test_t(): pass\n',
     "*test_t: rule id 'hooks.typo' is not in the catalogue*"),
    ('@rule("hooks.a")\n@rule("hooks.a")\ndef test_a(): pass\n',
     "*test_a: carries 2 rule markers*"),
    ('@rule("hooks.a")\ndef test_a(): pass\nclass TestX:\n    def test_m(self): pass\n',
     "*TestX::test_m: no rule marker*"),
    ('def helper(): pass\n', "*rule 'hooks.a' has no test in test_hooks.py*"),
])
def test_traceability_problem_fails_collection(conformance_project, source, message):
    conformance_project.rules("hooks", "a")
    conformance_project.suite("hooks", source)
    result = conformance_project.run("suites")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([message])


def test_rule_of_another_suite_is_refused(conformance_project):
    conformance_project.rules("hooks", "a")
    conformance_project.rules("engine", "b")
    conformance_project.suite("hooks", '@rule("hooks.a")\ndef test_a(): pass\n'
                                       '@rule("engine.b")\ndef test_b(): pass\n')
    conformance_project.suite("engine", '@rule("engine.b")\ndef test_b(): pass\n')
    result = conformance_project.run("suites")
    result.stdout.fnmatch_lines(["*rule 'engine.b' belongs to suite 'engine'*"])
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_suite_without_module_and_module_without_suite(conformance_project):
    conformance_project.rules("hooks", "a")
    conformance_project.suite("engine", "def test_x(): pass\n")
    result = conformance_project.run("suites")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*hooks.toml has rules but *test_hooks.py does not exist*",
                                 "*test_engine.py: no catalogue file*engine.toml*"])


def test_running_one_test_does_not_make_other_rules_untested(conformance_project):
    conformance_project.rules("hooks", "a", "b")
    conformance_project.suite("hooks", '@rule("hooks.a")\ndef test_a(): pass\n'
                                       '@rule("hooks.b")\ndef test_b(): pass\n')
    conformance_project.run("suites/test_hooks.py::test_a").assert_outcomes(passed=1)


def test_tests_outside_the_suites_are_ordinary(conformance_project):
    conformance_project.rules("hooks", "a")
    conformance_project.pytester.makepyfile(test_plain="def test_plain(fw): assert fw.__version__")
    conformance_project.run("test_plain.py").assert_outcomes(passed=1)


def test_traceability_is_enforced_under_xdist(conformance_project):
    conformance_project.rules("hooks", "a")
    conformance_project.suite("hooks", '@rule("hooks.a")\ndef test_a(): pass\n'
                                       'def test_unmarked(): pass\n')
    result = conformance_project.run("-n", "2", "suites", subprocess=True)
    assert result.ret != pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*test_unmarked: no rule marker*"])
