"""One suite run as a module (``--pyargs``) or as a file classifies exactly as a full run:
UNSUPPORTED stays UNSUPPORTED, expectations apply, results are written (issue 26)."""
from __future__ import annotations

import pytest

SUITE = '''
@rule("demo.a")
def test_missing(fw):
    raise Unsupported("fake does not support forward_ad: no dual numbers")


@rule("demo.b")
def test_known_divergence(fw):
    assert False, "known"


@rule("demo.c")
def test_holds(fw):
    pass
'''

EXPECTATIONS = '''
[["demo.b"]]
outcome = "DIVERGES"
reason = "a known divergence"
'''


def _outcomes(project, name, *args):
    project.run(*args, f"--results={name}", "--expectations=expect.toml")
    assert (project.pytester.path / name).is_file(), f"{args}: no results written"
    return {r["nodeid"].split("::")[-1]: (r["outcome"], r["actual"])
            for r in project.results(name) if r.get("nodeid")}


@pytest.mark.parametrize("how", [("--pyargs", "suites.test_demo"), ("suites/test_demo.py",)],
                         ids=["pyargs", "file"])
def test_one_suite_classifies_like_a_full_run(conformance_project, how):
    project = conformance_project
    project.rules("demo", "a", "b", "c")
    project.suite("demo", SUITE)
    (project.pytester.path / "suites" / "__init__.py").write_text("")
    project.file("expect.toml", EXPECTATIONS)
    full = _outcomes(project, "full.jsonl", "suites")
    assert full == {"test_missing": ("UNSUPPORTED", "UNSUPPORTED"),
                    "test_known_divergence": ("XFAIL", "DIVERGES"), "test_holds": ("PASS", "PASS")}
    assert _outcomes(project, "one.jsonl", *how) == full
