"""Root causes keep distinct missing features apart (issue 26): the blanking of quoted names
that joins one message across tests must not join every missing attribute into one cause; an
UNSUPPORTED test's cause is the feature its record names (issue 32), never read from its message,
and a feature the adapter declares missing has the declaration's reason as its statement."""
from __future__ import annotations

from conformance.report import rootcause
from conformance.results import RunHeader, TestRecord, combined
from tests.report.test_unit import CATALOGUE

ENTRIES = combined.catalogue_entries(CATALOGUE)
A, B, C, D = ("identity.grad-stable-id", "identity.grad-same-object", "hooks.chain-in-registration-order",
              "engine.second-backward-error")


def run_of(*tests, unsupported=None):
    """A run of ``(rule, name, actual, message[, missing_feature])`` tests; ``unsupported``: the
    adapter's declared table in its header."""
    return combined.Column(
        label="x", framework="x", status="complete", detail="",
        header=RunHeader(unsupported=unsupported), end=None,
        tests=[TestRecord(nodeid=f"s.py::{name}", rule=rule, actual=actual, outcome=actual,
                          message=message, missing_feature=(feature or [None])[0])
               for rule, name, actual, message, *feature in tests])


def test_missing_attributes_of_different_names_are_different_causes():
    run = run_of((A, "test_a", "ERROR", "AttributeError: 'Tensor' object has no attribute 'grad_fn'"),
                 (B, "test_b", "ERROR", "AttributeError: 'Tensor' object has no attribute 'grad_fn'"),
                 (C, "test_c", "ERROR", "AttributeError: 'Tensor' object has no attribute 'register_hook'"))
    causes = {frozenset(c.rules) for c in rootcause.root_causes(run, ENTRIES)}
    assert causes == {frozenset((A, B)), frozenset((C,))}


def test_unsupported_tests_cluster_by_the_feature_their_record_names():
    # the messages all say the same words; the field alone tells the features apart
    run = run_of((A, "test_a", "UNSUPPORTED", "no such thing here", "graph_nodes"),
                 (D, "test_d", "UNSUPPORTED", "no such thing here", "graph_nodes"),
                 (C, "test_c", "UNSUPPORTED", "no such thing here", "tensor_hooks"))
    causes = rootcause.root_causes(run, ENTRIES)
    assert sorted(tuple(sorted(c.rules)) for c in causes) == sorted([tuple(sorted((A, D))), (C,)])
    assert all(c.kind == "unsupported" for c in causes)
    assert {c.id for c in causes} == {"unsupported-graph_nodes", "unsupported-tensor_hooks"}


def test_a_message_naming_a_feature_is_not_read_for_one():
    # an older harness's sentence in a current record: the record's field (None) decides
    run = run_of((A, "test_a", "UNSUPPORTED", "x does not support graph_nodes: no grad_fn"),
                 (C, "test_c", "UNSUPPORTED", "x does not support tensor_hooks: no register_hook"))
    assert all(not c.id.startswith("unsupported-") for c in rootcause.root_causes(run, ENTRIES))


def test_a_declared_feature_is_its_own_cause_with_the_declarations_reason():
    run = run_of((A, "test_a", "UNSUPPORTED", "x does not support node_hooks: whatever", "node_hooks"),
                 (D, "test_d", "UNSUPPORTED", "x: it has no fw.foo", "node_hooks"),
                 unsupported={"node_hooks": "grad nodes take no Python hooks"})
    [cause] = rootcause.root_causes(run, ENTRIES)
    assert cause.source == "declaration" and cause.kind == "unsupported"
    assert cause.summary == ("x does not support node_hooks: grad nodes take no Python hooks "
                             "(declared in the adapter)")
    assert sorted(cause.rules) == sorted([A, D])


def test_missing_attribute_reads_the_first_line_only():
    assert rootcause.missing_attribute("x does not support forward_ad: no dual_level") is None
    assert rootcause.missing_attribute("AttributeError: 'T' object has no attribute '_version'") == "_version"
    assert rootcause.missing_attribute("AssertionError: 1 != 2\nhas no attribute 'x'") is None
