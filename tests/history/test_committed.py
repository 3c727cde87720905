"""The committed history (conformance/history/torch/) covers what issue 24 asks, and every
snippet and the child runner stay valid Python 3.7 (the oldest interpreter a release needs)."""
import ast
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
def test_every_rule_has_an_observation(version):
    assert sorted(set(EVIDENCE) - set(RELEASES[version]["observations"])) == []


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
