"""Every rule's source points into the repository's evidence or to a public URL, and every
evidence snippet still prints, on torch 2.13, what was recorded."""
from pathlib import Path

import pytest

from conformance import evidence as ev
from conformance.rules import load_catalogue

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = load_catalogue(ROOT / "conformance" / "catalogue")
EVIDENCE = ev.load()
# Rules whose source already names their evidence entry, but the entry's snippet is not written
# yet (issue 11, in progress): this list only shrinks; a rule added later must bring its entry.
AWAITING_SNIPPET = set("""
    forward_levels.dual-level-yields-zero
    forward_levels.enter-exit-api
    forward_levels.level-index-reused
    forward_levels.make-dual-needs-level
    forward_levels.nesting-is-error
    forward_levels.exit-not-current-errors
    forward_levels.exit-none-open-errors
    forward_levels.unpack-dual-namedtuple
    forward_levels.unpack-primal-fresh-view
    forward_levels.unpack-non-dual-tangent-none
    forward_levels.unpack-outside-level
    forward_levels.tangents-cleared-at-exit
    forward_levels.new-level-starts-clean
    forward_levels.tangent-owned-by-dual
    forward_levels.make-dual-size-check
    forward_levels.make-dual-floating-only
    forward_levels.make-dual-dtype-may-differ
    forward_levels.make-dual-aliases-primal
    forward_levels.inplace-updates-tangent
    forward_levels.inplace-keeps-tangent-object
    forward_levels.views-propagate-tangent
    forward_levels.inplace-write-makes-dual
    forward_levels.detach-drops-tangent
    forward_levels.no-grad-keeps-tangent
    forward_levels.levels-process-global
    forward_levels.concurrent-duals-one-level
    forward_levels.custom-function-needs-jvp
    forward_levels.custom-function-static-jvp
    forward_levels.reverse-through-dual
    forward_levels.level-exit-with-graph-cycle
    forward_levels.threads-enter-exit-rounds
    legacy_function.instance-call-raises
    legacy_function.instantiation-warns
    legacy_function.bare-instance-node-attributes
    legacy_function.apply-with-plain-methods
    legacy_function.missing-forward-raises
    legacy_function.missing-backward-raises-at-backward
    legacy_function.saved-tensors-after-free-message
    legacy_function.save-none-roundtrip
    legacy_function.second-backward-without-retain-graph
    legacy_function.saved-tensors-version-check
    legacy_function.mark-dirty-returns-same-object
    legacy_function.mark-dirty-leaf-raises
    legacy_function.mark-dirty-not-returned-raises
    legacy_function.mark-dirty-non-input-reported
    legacy_function.materialize-grads
    legacy_function.once-differentiable-no-grad
    legacy_function.once-differentiable-double-backward-raises
    legacy_function.non-tensor-outputs-pass-through
    legacy_function.needs-input-grad
    legacy_function.none-grads-leave-grad-unset
    legacy_function.setup-context-style
    legacy_function.fresh-ctx-per-apply
    legacy_function.kwargs-are-inputs
    legacy_function.output-container-preserved
    legacy_function.wrong-number-of-grads-raises
    legacy_function.grad-fn-name
""".split())


def test_every_entry_grounds_a_rule_of_the_catalogue():
    assert sorted(set(EVIDENCE) - set(CATALOGUE.rules)) == []


@pytest.mark.parametrize("rule_id", sorted(CATALOGUE.rules))
def test_source_points_to_evidence_or_a_public_url(rule_id):
    problems = ev.source_problems(rule_id, CATALOGUE.rules[rule_id].source, EVIDENCE)
    if rule_id in AWAITING_SNIPPET:
        problems = [p for p in problems if "has no entry" not in p]
    assert problems == []


def test_awaiting_list_names_only_rules_still_without_evidence():
    assert sorted(AWAITING_SNIPPET & set(EVIDENCE)) == []
    assert sorted(AWAITING_SNIPPET - set(CATALOGUE.rules)) == []


@pytest.mark.parametrize("source, problem", [
    ("observed 3.4", "neither"),
    ("torch/csrc/autograd/engine.cpp", "neither"),
    ("evidence:engine#engine.no-such-rule", "has no entry"),
    ("evidence:hooks#engine.second-backward-error", "wrong suite"),
])
def test_a_source_pointing_elsewhere_is_reported(source, problem):
    problems = ev.source_problems("engine.x", source, EVIDENCE)
    assert problems and problem in problems[0]


def test_public_url_and_evidence_parts_pass():
    source = ("evidence:engine#engine.second-backward-error; "
              "https://github.com/pytorch/pytorch/blob/v2.13.0/torch/csrc/autograd/engine.cpp (call_function)")
    assert ev.source_problems("engine.x", source, EVIDENCE) == []


@pytest.fixture(scope="module")
def torch_213():
    torch = pytest.importorskip("torch")
    if not torch.__version__.startswith(ev.TORCH_VERSION):
        pytest.skip(f"evidence is recorded on torch {ev.TORCH_VERSION}, found {torch.__version__}")
    return torch


@pytest.mark.parametrize("rule_id", sorted(EVIDENCE))
def test_snippet_prints_the_recorded_output(rule_id, torch_213):
    entry = EVIDENCE[rule_id]
    assert ev.normalise(entry.output), f"{rule_id}: no recorded output; run python -m conformance.evidence --record"
    assert ev.normalise(ev.run_snippet(entry.snippet)) == ev.normalise(entry.output)
