"""No test PASSES when nothing it judges happened (issue 33 item 5): the suites run on two planted
engines (tests/suites/planted_engines.py), one that refuses every operation and one that records
nothing and refuses nothing, and every PASS either gets must be listed in
tests/suites/planted_passes.toml with the sentence of its rule's statement that allows it.

A PASS not listed fails with its test id: either the rule allows it (list it, with the sentence)
or the test passes without seeing what it judges (fix the test). PASSes known to be wrong are
listed apart (``[[wrong]]``, with why), never as allowed, until their suites are fixed.

Cost: one run of the suites per engine, both at once in child interpreters (the engines patch
the reference in the process that loads them), with no witnesses, no tracebacks and no
expectations file: about 1 to 2 CPU minutes each.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conformance.rules import load_catalogue
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).with_name("planted_passes.toml")
ENGINES = {"refusing": "tests.suites.planted_engines:RefusingEngine",
           "inert": "tests.suites.planted_engines:InertEngine"}


def _listed() -> dict:
    """The data file: engine -> {"allowed": {test id: sentence}, "wrong": {test id: why}}."""
    with DATA.open("rb") as handle:
        data = tomllib.load(handle)
    out = {engine: {"allowed": {}, "wrong": {}} for engine in ENGINES}
    for kind, field in (("allowed", "allowed_by"), ("wrong", "why")):
        for entry in data.get(kind, []):
            for engine in entry["engines"]:
                out[engine][kind][entry["test"]] = entry[field]
    return out


# one pytest-xdist worker runs this module (nox -s tests: --dist loadgroup, tests/xdist_groups.py):
# the suites run once on each planted engine, in the module fixture
pytestmark = pytest.mark.xdist_group("planted-engines")


@pytest.fixture(scope="module")
def passes(tmp_path_factory) -> dict:
    """engine -> the ids of the tests that PASS on it (both runs at once)."""
    where = tmp_path_factory.mktemp("planted")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    runs = {}
    for engine, spec in ENGINES.items():
        results = where / f"{engine}.jsonl"
        argv = [sys.executable, "-m", "pytest", f"--adapter={spec}", "conformance/suites",
                "-p", "no:cacheprovider", "-q", "--tb=no", "--no-witnesses",
                f"--results={results}"]
        runs[engine] = (results, subprocess.Popen(argv, cwd=ROOT, env=env, text=True,
                                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    out = {}
    for engine, (results, process) in runs.items():
        output, _ = process.communicate(timeout=hang_limit(1200))
        lines = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
        records = [r for r in lines if r.get("nodeid")]
        assert records and process.returncode in (0, 1), \
            f"the suites did not run on the {engine} engine (exit {process.returncode}):\n{output[-3000:]}"
        out[engine] = {r["nodeid"] for r in records if r["outcome"] == "PASS"}
    return out


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_every_pass_on_a_planted_engine_is_allowed_by_its_rule(passes, engine):
    listed = _listed()[engine]
    unlisted = sorted(passes[engine] - set(listed["allowed"]) - set(listed["wrong"]))
    assert not unlisted, (
        f"PASS on the {engine} planted engine, not in {DATA.name}: list each with the sentence of "
        f"its rule's statement that allows it, or fix the test (it passes without seeing what it "
        f"judges):\n  " + "\n  ".join(unlisted))
    stale = sorted(set(listed["allowed"]) - passes[engine])
    assert not stale, f"listed as an allowed PASS on the {engine} engine, yet not a PASS: {stale}"


@pytest.mark.xfail(strict=True, reason="known wrong PASSes (planted_passes.toml [[wrong]]) until "
                                        "their suites are fixed: then drop the entries and this mark")
@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_no_known_wrong_pass_remains(passes, engine):
    wrong = _listed()[engine]["wrong"]
    assert not set(wrong) & passes[engine], sorted(set(wrong) & passes[engine])


def test_each_allowed_pass_names_a_sentence_of_its_rules_statement():
    """The data file is checked without running anything: each entry's test exists under its
    rule, and its sentence is the rule's own words."""
    catalogue = load_catalogue(ROOT / "conformance" / "catalogue").rules
    with DATA.open("rb") as handle:
        data = tomllib.load(handle)
    for entry in data.get("allowed", []):
        rule = catalogue.get(entry["rule"])
        assert rule is not None, f"{entry['test']}: unknown rule {entry['rule']!r}"
        assert entry["allowed_by"].strip() and entry["allowed_by"] in rule.statement, \
            f"{entry['test']}: {entry['allowed_by']!r} is not in {entry['rule']}'s statement"
        assert set(entry["engines"]) <= set(ENGINES), entry
    for entry in data.get("wrong", []):
        assert entry["why"].strip() and set(entry["engines"]) <= set(ENGINES), entry
    pairs = [(engine, e["test"]) for e in data.get("allowed", []) + data.get("wrong", [])
             for engine in e["engines"]]
    twice = sorted({pair for pair in pairs if pairs.count(pair) > 1})
    assert not twice, f"listed twice for one engine: {twice}"
