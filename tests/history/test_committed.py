"""The committed history (conformance/history/torch/) covers what issue 24 asks, what it
records is consistent, and every snippet and the child runner stay valid Python 3.7 (the oldest
interpreter a release needs).

Consistency, not completeness: a rule added without history records (its author has only
torch 2.13 installed) is a visible state, "not yet recorded under these releases", on the
spec page and in the report (conformance/history/render.py: ``unrecorded``), which
``nox -s history`` fills in; it never turns these tests red (issue 32, item 4)."""
import ast
import re
from pathlib import Path

import pytest

from adapters.torch_adapter import TorchAdapter
from conformance import evidence as ev
from conformance import history
from conformance.history import render

EVIDENCE = ev.load()
RELEASES = {d["version"]: d for d in history.load("torch")}


def test_at_least_twelve_releases_from_1_2_to_the_newest():
    wanted = {"1.2.0", "1.3.0", "1.11.0", "1.13.1", "2.13.0", TorchAdapter.runs[1].version}
    assert wanted <= set(RELEASES)
    assert any(v.startswith("2.0.") for v in RELEASES)
    assert len([v for v in RELEASES if history.version_key(v) >= history.version_key("1.2")]) >= 12


def test_every_recorded_release_is_one_the_adapter_lists_with_its_python():
    listed = {r["version"]: r["python"] for r in TorchAdapter.releases}
    for version, data in RELEASES.items():
        assert version in listed
        assert data["python"].startswith(listed[version] + ".")


@pytest.mark.parametrize("version", sorted(RELEASES, key=history.version_key))
def test_what_a_release_records_is_consistent(version):
    """Its file is named after it and says which adapter and interpreter recorded it; every
    observation is of a rule that has evidence (a removed rule's entries go with it) and
    carries a digest of the form ``history.digest`` writes."""
    data = RELEASES[version]
    assert history.data_path("torch", version).is_file()
    assert data.get("adapter") == "torch" and re.fullmatch(r"3\.\d+\.\d+", data["python"])
    observations = data["observations"]
    assert sorted(set(observations) - set(EVIDENCE)) == []
    assert [r for r, o in observations.items() if not re.fullmatch(r"[0-9a-f]{16}", o["digest"])] == []


def test_the_release_the_evidence_was_written_from_agrees_with_it():
    """Under torch 2.13.0 (the evidence's own release), every observation recorded from the
    current snippet prints what the evidence file says (a race may rerun differently: those
    rules carry ``race``)."""
    observations = RELEASES["2.13.0"]["observations"]
    current = {r: o for r, o in observations.items()
               if o["digest"] == history.digest(ev.PRELUDE, EVIDENCE[r].snippet)}
    assert current, "no observation of 2.13.0 is current"
    differs = [r for r, o in current.items() if EVIDENCE[r].race is None
               and history.status(o["output"], EVIDENCE[r].output, EVIDENCE[r].snippet) != "same"]
    assert differs == []


def test_the_ownership_change_of_pr_22983_is_listed():
    changes = {(c.rule, c.after.version): c for c in render.changes(EVIDENCE)}
    c = changes[("gc_cycles.stashed-ctx-ownership", "1.2.0")]
    assert c.before.output.startswith("kept") and "PyNode has already been deallocated" in c.after.output
    assert "22983" in c.upstream


def test_the_2_0_hook_rework_is_listed():
    changes = {(c.rule, c.after.version): c for c in render.changes(EVIDENCE)}
    c = changes[("hooks.tensor-prehooks-before-node-prehooks", "2.0.1")]
    assert c.kind == "changes" and "85849" in c.upstream


def test_the_release_that_brought_forward_mode_ad_is_recorded():
    """torch.autograd.forward_ad first ships in 1.8.0: absent in 1.7.1, there in 1.8.0."""
    def status(version):
        data = RELEASES[version]["observations"]["forward_levels.enter-exit-api"]
        return history.status(data["output"], EVIDENCE["forward_levels.enter-exit-api"].output)

    assert status("1.7.1") == "absent" and status("1.8.0") != "absent"


@pytest.mark.parametrize("rule_id", sorted(EVIDENCE))
def test_snippet_is_python_3_7(rule_id):
    ast.parse(EVIDENCE[rule_id].snippet, feature_version=(3, 7))


def test_prelude_and_runner_are_python_3_7():
    ast.parse(ev.PRELUDE, feature_version=(3, 7))
    ast.parse(Path(ev.runner.__file__).read_text(), feature_version=(3, 7))
