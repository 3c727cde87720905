"""Root causes keep distinct missing features apart (issue 26): the blanking of quoted names
that joins one message across tests must not join every missing attribute into one cause."""
from __future__ import annotations

from conformance.report import rootcause
from conformance.results import RunHeader, TestRecord, combined
from tests.report.test_unit import CATALOGUE

ENTRIES = combined.catalogue_entries(CATALOGUE)
A, B, C, D = ("identity.grad-stable-id", "identity.grad-same-object", "hooks.chain-in-registration-order",
              "engine.second-backward-error")


def run_of(*tests):
    return combined.Column(
        label="x", framework="x", status="complete", detail="", header=RunHeader(), end=None,
        tests=[TestRecord(nodeid=f"s.py::{name}", rule=rule, actual=actual, outcome=actual,
                          message=message) for rule, name, actual, message in tests])


def test_missing_attributes_of_different_names_are_different_causes():
    run = run_of((A, "test_a", "ERROR", "AttributeError: 'Tensor' object has no attribute 'grad_fn'"),
                 (B, "test_b", "ERROR", "AttributeError: 'Tensor' object has no attribute 'grad_fn'"),
                 (C, "test_c", "ERROR", "AttributeError: 'Tensor' object has no attribute 'register_hook'"))
    causes = {frozenset(c.rules) for c in rootcause.root_causes(run, ENTRIES)}
    assert causes == {frozenset((A, B)), frozenset((C,))}


def test_unsupported_messages_cluster_by_the_feature_they_name():
    run = run_of((A, "test_a", "UNSUPPORTED", "tinygrad does not support graph_nodes: no grad_fn"),
                 (D, "test_d", "UNSUPPORTED", "tinygrad does not support graph_nodes: no grad_fn"),
                 (C, "test_c", "UNSUPPORTED", "tinygrad does not support tensor_hooks: no register_hook"))
    causes = rootcause.root_causes(run, ENTRIES)
    assert sorted(tuple(sorted(c.rules)) for c in causes) == sorted([tuple(sorted((A, D))), (C,)])
    assert all(c.kind == "unsupported" for c in causes)


def test_missing_feature_reads_the_first_line_only():
    assert rootcause.missing_feature("x does not support forward_ad: no dual_level") == "forward_ad"
    assert rootcause.missing_feature("AttributeError: 'T' object has no attribute '_version'") == "_version"
    assert rootcause.missing_feature("AssertionError: 1 != 2\nhas no attribute 'x'") is None
