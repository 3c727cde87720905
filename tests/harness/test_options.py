"""Options and adapter loading: every bad input is a usage error that says what to do."""
from pathlib import Path

import pytest

from adapters import base
from conformance import options

ROOT = Path(__file__).resolve().parents[2]


def test_unknown_adapter_lists_the_known_ones(conformance_project):
    result = conformance_project.run("suites", adapter="nosuch")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown adapter 'nosuch'; known adapters: *oneflow*reference*torch*"])


def test_framework_not_installed_shows_the_install_command(conformance_project):
    result = conformance_project.run("suites", adapter="fakefw:MissingAdapter")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*adapter 'missing' needs its framework*"
                                 "Install it with: pip install fakefw==1.0*"])


def test_a_device_the_adapter_does_not_declare_is_refused_by_the_adapter(conformance_project):
    """--device has no list of its own: the adapter's check_device decides (one line, exit 4)."""
    result = conformance_project.run("suites", "--device", "tpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.errlines if line.strip()] == [
        "ERROR: adapter 'fake' cannot run on device 'tpu'; it supports: cpu"]


def test_device_the_adapter_cannot_use_is_refused(conformance_project):
    result = conformance_project.run("suites", "--device", "cuda")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*adapter 'fake' cannot run on device 'cuda'; it supports: cpu*"])


def test_adapter_spec_that_cannot_be_imported(conformance_project):
    result = conformance_project.run("suites", adapter="no_such_module:Thing")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*cannot import module 'no_such_module'*"])


def test_adapter_from_entry_point(monkeypatch):
    class EntryPoint:
        name = "thirdparty"

        def load(self):
            return type("ThirdParty", (base.Adapter,), {"name": "thirdparty"})

    monkeypatch.setattr(base, "_entry_points", lambda: {"thirdparty": EntryPoint()})
    assert "thirdparty" in base.known_adapters()
    assert base.load_adapter("thirdparty").name == "thirdparty"


def test_entry_point_that_is_not_an_adapter(monkeypatch):
    class EntryPoint:
        def load(self):
            return object

    monkeypatch.setattr(base, "_entry_points", lambda: {"odd": EntryPoint()})
    with pytest.raises(ValueError, match="did not produce an adapters.base.Adapter"):
        base.load_adapter("odd")


def test_option_docs_are_generated_from_the_definitions():
    docs = (ROOT / "docs" / "running.md").read_text()
    assert options.markdown() in docs, (
        "docs/running.md is out of date: paste the output of `python -m conformance.options`")


def test_help_lists_the_options(conformance_project):
    result = conformance_project.run("--help")
    result.stdout.fnmatch_lines(["*--adapter=NAME*", "*--device=DEVICE*", "*--results=PATH*",
                                 "*conformance_catalogue*"])


@pytest.mark.parametrize("args, line", [
    (["--expectations="], "ERROR: --expectations: an empty value (an unset variable?); give PATH "
                          "or leave the option out"),
    (["--device="], "ERROR: --device: an empty value (an unset variable?); give DEVICE or leave "
                    "the option out"),
    (["--conformance-timeout="], "ERROR: --conformance-timeout: an empty value (an unset "
                                 "variable?); give SECONDS or leave the option out"),
])
def test_an_empty_value_is_one_line(conformance_project, args, line):
    result = conformance_project.run("suites", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [text for text in result.errlines if text.strip()] == [line]


def test_an_empty_adapter_is_one_line(conformance_project):
    result = conformance_project.run("suites", adapter="")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [text for text in result.errlines if text.strip()] == [
        "ERROR: --adapter: an empty name (an unset variable?); give a built-in name, an entry "
        "point or package.module:ClassName"]
