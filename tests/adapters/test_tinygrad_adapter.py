"""adapters/tinygrad_adapter.py: translates torch's spellings onto tinygrad or raises Unsupported,
never fabricates; declares what tinygrad lacks under the registry's names."""
from __future__ import annotations

import pytest

from adapters.base import MissingName, Unsupported, builtin_adapter_classes
from conformance import features


def test_declared_features_are_registry_names_and_the_run_is_required():
    cls = builtin_adapter_classes()["tinygrad"]
    assert not set(cls.unsupported) - set(features.registry())
    assert {"graph_nodes", "tensor_hooks", "grad_modes", "requires_grad_flag"} <= set(cls.unsupported)
    assert "custom_function" not in cls.unsupported   # translated: tinygrad.function
    (run,) = cls.runs
    assert run.install == ("tinygrad==0.14.0",) and run.required is True


@pytest.fixture(scope="module")
def adapter():
    pytest.importorskip("tinygrad")
    from adapters.base import load_adapter

    return load_adapter("tinygrad")


def test_creation_translates_torch_keywords(adapter):
    fw = adapter.fw
    x = fw.ones(3, requires_grad=True, device="cpu", dtype=fw.float32)
    assert x.requires_grad is True and adapter.to_numpy(x).tolist() == [1.0, 1.0, 1.0]
    assert fw.tensor([1.0, 2.0]).requires_grad is False
    assert adapter.to_numpy(fw.full((2,), 3.0)).tolist() == [3.0, 3.0]


def test_grad_and_backward_are_tinygrads_own(adapter):
    fw = adapter.fw
    x = fw.tensor([1.0, 2.0], requires_grad=True)
    (g,) = fw.autograd.grad((x * x).sum(), [x])
    assert adapter.to_numpy(g).tolist() == [2.0, 4.0]
    adapter.backward((x * 3).sum(), retain_graph=True)
    assert adapter.to_numpy(x.grad).tolist() == [3.0, 3.0]
    with pytest.raises(Unsupported, match="create_graph_backward"):
        adapter.backward((x * 3).sum(), create_graph=True)


def test_inplace_keeps_the_object_and_refuses_what_has_no_spelling(adapter):
    t = adapter.fw.tensor([1.0, 2.0])
    assert adapter.inplace(t, "add_", 1) is t and adapter.to_numpy(t).tolist() == [2.0, 3.0]
    with pytest.raises(Unsupported, match="inplace_methods"):
        adapter.inplace(t, "exponential_")


def test_missing_names_are_unsupported_naming_their_feature(adapter):
    with pytest.raises(MissingName, match="forward_ad"):
        adapter.fw.autograd.forward_ad
    with pytest.raises(MissingName, match="grad_modes"):
        adapter.fw.no_grad
    for method, args in (("version", (None,)), ("retain_grad", (None,)), ("next_functions", (None,)),
                         ("requires_grad", (adapter.fw.ones(1, requires_grad=True),))):
        with pytest.raises(Unsupported):
            getattr(adapter, method)(*args)


def test_every_declared_missing_feature_is_missing_from_tinygrad(adapter):
    """conformance/feature_claims.py on the real framework: Tensor.data exists, explained as a
    method returning a memoryview; every other declared feature's names are absent."""
    from conformance import feature_claims

    claims = {c.feature: c for c in feature_claims.check(adapter)}
    assert feature_claims.contradictions(list(claims.values())) == []
    assert claims["tensor_data"].status == feature_claims.EXPLAINED
    assert claims["requires_grad_flag"].status == feature_claims.EXPLAINED
    assert claims["graph_nodes"].status == feature_claims.ABSENT


def test_custom_function_is_tinygrads_own(adapter):
    """fw.autograd.Function runs as tinygrad.function(fxn, grad_fxn=...): backward's results go to
    the tensor inputs' slots (a None for a number dropped), keywords are inputs, anything that does
    not map onto the slots goes to tinygrad as returned (its own count check refuses it)."""
    fw = adapter.fw

    class Scale(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x, k, w=None):
            ctx.save_for_backward(x, w)
            ctx.k = k
            return x * k * w

        @staticmethod
        def backward(ctx, g):
            x, w = adapter.saved_tensors(ctx)
            return g * ctx.k * w, None, g * ctx.k * x

    x, w = fw.tensor([1.0, 2.0]), fw.tensor([3.0, 3.0])
    adapter.backward(fw.sum(Scale.apply(x, 2, w=w)))
    assert adapter.to_numpy(x.grad).tolist() == [6.0, 6.0]
    assert adapter.to_numpy(w.grad).tolist() == [2.0, 4.0]

    class ForNumber(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g   # a gradient for the number k: no slot, tinygrad refuses the count

    y = fw.tensor([1.0, 1.0])
    with pytest.raises(AssertionError, match="gradient"):
        adapter.backward(fw.sum(ForNumber.apply(y, 3)))

    class Tagged(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1, "tag"

    with pytest.raises(Unsupported, match="custom_function_outputs|tensor"):
        Tagged.apply(fw.tensor([1.0]))
    with pytest.raises(Unsupported):
        Scale()
