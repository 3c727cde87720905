"""adapters/mygrad_adapter.py: MyGrad's shapes translated (creator as grad_fn, constant as the
inverse of requires_grad, .grad as the numpy array, Operation as the custom Function), never
fabricated; what MyGrad lacks declared under the registry's names or refused per use.

The first tests need no MyGrad; the rest skip cleanly without it (pip install mygrad==2.5.0)."""
from __future__ import annotations

import contextlib
import numpy as np
import pytest

from adapters.base import MissingName, Unsupported, builtin_adapter_classes, load_adapter
from conformance import features


@contextlib.contextmanager
def unsupported(feature):
    """The block raises Unsupported naming ``feature`` (the recorded field, not the message)."""
    with pytest.raises(Unsupported) as caught:
        yield
    assert caught.value.feature == feature, caught.value


def test_declared_features_are_registry_names_and_the_run_is_required_and_pinned():
    cls = builtin_adapter_classes()["mygrad"]
    assert not set(cls.unsupported) - set(features.registry())
    # MyGrad has graph nodes, custom operations, is_leaf and a grad mode under other shapes:
    # those are translated, never declared missing
    assert not {"graph_nodes", "custom_function", "is_leaf", "grad_modes", "needs_input_grad",
                "graph_node_class", "tensor_subclass"} & set(cls.unsupported)
    assert {"grad_assignment", "tensor_hooks", "version_counter", "view_method"} <= set(cls.unsupported)
    (run,) = cls.runs
    assert run.install == ("mygrad==2.5.0",) and run.version == "2.5.0" and run.required is True
    assert cls.module == "mygrad" and "mygrad==2.5.0" in cls.install_hint


def test_loading_the_adapter_imports_no_framework():
    adapter = load_adapter("mygrad")
    assert adapter._fw is None and adapter.name == "mygrad"


def test_a_gradient_array_reads_as_off_any_graph_without_the_framework():
    """MyGrad's .grad is a numpy array, which no graph holds: read as a tensor it has no node,
    needs no gradient and was recorded by nothing; to_numpy copies it."""
    adapter = load_adapter("mygrad")
    g = np.array([1.0, 2.0])
    assert adapter.grad_fn(g) is None and adapter.requires_grad(g) is False
    assert adapter.is_recorded(g) is False and adapter.is_leaf(g) is True
    copy = adapter.to_numpy(g)
    assert copy.tolist() == [1.0, 2.0] and copy is not g


def test_the_expectations_file_is_the_adapters_and_every_breaking_cause_has_a_witness():
    from conformance import witness

    adapter = load_adapter("mygrad")
    path = adapter.expectations_file()
    assert path.name == "mygrad.toml" and path.is_file()
    causes = witness.causes(path)
    assert causes and all(c.witness for c in causes)
    assert not {c.slug: p for c in causes if (p := witness.problems(c.witness, "mygrad"))}


# -- on MyGrad itself --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def adapter():
    pytest.importorskip("mygrad")
    return load_adapter("mygrad")


@pytest.fixture
def fw(adapter):
    return adapter.fw


def test_creation_translates_requires_grad_to_constant_and_torchs_float32(adapter, fw):
    import mygrad

    x = fw.ones(3, requires_grad=True, device="cpu")
    assert isinstance(x, mygrad.Tensor) and x.constant is False and x.dtype == np.float32
    c = fw.tensor([1.0, 2.0])            # torch: requires_grad=False; MyGrad's float default is not
    assert c.constant is True and c.dtype == np.float32
    assert adapter.requires_grad(x) is True and adapter.requires_grad(c) is False
    assert adapter.to_numpy(fw.full((2,), 3.0)).tolist() == [3.0, 3.0]
    assert fw.zeros(2, 3).shape == (2, 3) and fw.randn(2, requires_grad=True).constant is False


def test_graph_nodes_are_the_creators_and_recording_is_observed(adapter, fw):
    x = fw.ones(2, requires_grad=True)
    y = x * 2
    assert adapter.grad_fn(y) is y.creator and adapter.grad_fn(x) is None
    assert adapter.is_leaf(x) and not adapter.is_leaf(y) and adapter.is_recorded(y)
    assert adapter.node_name(adapter.grad_fn(y)) == type(y.creator).__name__
    assert isinstance(adapter.grad_fn(y), fw.autograd.graph.Node)
    with fw.no_grad():
        z = x * 2
    # MyGrad keeps a result made under no_autodiff non-constant: recorded is read from the
    # creator, never inferred from requires_grad
    assert not adapter.is_recorded(z) and adapter.requires_grad(z)
    assert fw.is_grad_enabled() is True


def test_grad_is_the_array_mygrad_holds_and_clear_grad_nulls_it(adapter, fw):
    x = fw.tensor([1.0, 2.0], requires_grad=True)
    adapter.backward(fw.sum(x * x))
    g = adapter.grad(x)
    assert isinstance(g, np.ndarray) and g is x.grad and g.tolist() == [2.0, 4.0]
    adapter.clear_grad(x)
    assert adapter.grad(x) is None
    with unsupported("grad_assignment"):
        adapter.set_grad(x, g)


def test_next_functions_are_the_inputs_creators_and_a_leaf_has_no_node(adapter, fw):
    x = fw.ones(2, requires_grad=True)
    a = x * 2
    b = a * fw.tensor([3.0, 3.0])          # a constant second input: no node, needs no gradient
    assert adapter.next_functions(b.creator) == ((a.creator, 0), (None, 0))
    assert adapter.next_nodes(b.creator) == (a.creator, None)
    with unsupported("accumulate_grad_variable"):
        adapter.next_functions(a.creator)   # x needs a gradient but MyGrad gives it no node


def test_backward_refuses_the_keywords_mygrad_lacks(adapter, fw):
    x = fw.ones(2, requires_grad=True)
    with unsupported("retain_graph"):
        adapter.backward(fw.sum(x * 2), retain_graph=True)
    with unsupported("create_graph_backward"):
        adapter.backward(fw.sum(x * 2), create_graph=True)
    with unsupported("backward_inputs"):
        adapter.backward(fw.sum(x * 2), inputs=[x])
    fw.autograd.backward(fw.sum(x * 3))
    assert adapter.to_numpy(x.grad).tolist() == [3.0, 3.0]


def test_inplace_is_mygrads_augmented_and_item_assignment(adapter, fw):
    t = fw.tensor([1.0, 2.0])
    assert adapter.inplace(t, "add_", 1) is t and adapter.to_numpy(t).tolist() == [2.0, 3.0]
    assert adapter.inplace(t, "fill_", 5.0) is t and adapter.to_numpy(t).tolist() == [5.0, 5.0]
    assert adapter.inplace(t, "zero_") is t and adapter.to_numpy(t).tolist() == [0.0, 0.0]
    with unsupported("inplace_methods"):
        adapter.inplace(t, "detach_")


def test_a_write_through_detach_is_mygrads_untracked_write_into_x_data(adapter, fw):
    """fw.detach(x) wraps x's own array (MyGrad's x.data); a write through it is MyGrad's
    untracked in-place op on that array: it reaches x, the memory guard refuses it while a graph
    holds x, and a write torch would record on the alias (an argument needs a gradient) is
    refused as missing, never made untracked."""
    import mygrad

    x = fw.tensor([2.0, 3.0], requires_grad=True)
    d = fw.detach(x)
    assert adapter.to_numpy(d).tolist() == [2.0, 3.0] and d.constant and adapter.grad_fn(d) is None
    assert adapter.inplace(d, "mul_", 2) is d and adapter.to_numpy(x).tolist() == [4.0, 6.0]
    adapter.inplace(fw.detach(x), "zero_")
    assert adapter.to_numpy(x).tolist() == [0.0, 0.0] and adapter.grad_fn(d) is None
    y = x * x                                       # the graph holds x: its array is read-only
    with pytest.raises(ValueError, match="read-only"):
        adapter.inplace(fw.detach(x), "add_", 1)
    w = fw.ones(2, requires_grad=True)
    with unsupported("detach_alias_recorded_writes"):
        adapter.inplace(fw.detach(w), "add_", x)   # x needs a gradient, grad mode on
    with mygrad.no_autodiff:                        # under no_grad nothing is recorded in torch either
        adapter.inplace(fw.detach(w), "add_", fw.ones(2, requires_grad=True))
    assert adapter.to_numpy(w).tolist() == [2.0, 2.0]
    assert adapter.inplace(fw.clone(x), "mul_", 2) is not None and y is not None


def test_custom_function_runs_as_an_operation_whose_instance_is_ctx(adapter, fw):
    seen = {}

    class Scale(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x)
            ctx.k = k
            seen["ctx"] = ctx
            return x * k

        @staticmethod
        def backward(ctx, g):
            (x,) = adapter.saved_tensors(ctx)
            seen["saved"] = x
            return g * ctx.k, None

    x = fw.tensor([1.0, 2.0], requires_grad=True)
    y = Scale.apply(x, 3.0)
    node = adapter.grad_fn(y)
    assert node is seen["ctx"] and adapter.node_name(node) == "Scale"
    assert adapter.needs_input_grad(node) == (True, False)
    assert not adapter.is_recorded(fw.tensor([0.0])) and adapter.is_recorded(y)
    adapter.backward(fw.sum(y))
    assert adapter.to_numpy(x.grad).tolist() == [3.0, 3.0] and seen["saved"] is x


def test_a_saved_input_is_the_operations_own_input_entry(adapter, fw):
    """save_for_backward of an input keeps what MyGrad keeps for an Operation's backward (its
    entry in .variables): an in-place change of the input reroutes that entry to the values the
    op saw, as for MyGrad's own operations, so backward is not handed the changed tensor."""
    class Square(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = adapter.saved_tensors(ctx)
            return 2 * x * g

    a = fw.ones(3, requires_grad=True)
    b = fw.clone(a)
    y = Square.apply(b)
    assert adapter.saved_tensors(adapter.grad_fn(y))[0] is b   # before any change: the input itself
    adapter.inplace(b, "add_", 1)
    assert adapter.to_numpy(b).tolist() == [2.0, 2.0, 2.0]     # control: the change happened
    adapter.backward(fw.sum(y))
    assert adapter.to_numpy(a.grad).tolist() == [2.0, 2.0, 2.0]   # 2 * the values Square saw
    c = fw.ones(3, requires_grad=True)                         # MyGrad's own op does the same
    d = fw.clone(c)
    z = d * d
    adapter.inplace(d, "add_", 1)
    adapter.backward(fw.sum(z))
    assert adapter.to_numpy(c.grad).tolist() == [2.0, 2.0, 2.0]


def test_a_none_gradient_is_mygrads_skip_not_a_zero(adapter, fw):
    """None is SkipGradient; MyGrad then fails its own assertion where the input gets no other
    gradient (root cause skipped-gradient-asserts). A translation that made up zeros would
    give x.grad = [0, 0] instead."""
    class Stop(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return None

    x = fw.ones(2, requires_grad=True)
    with pytest.raises(AssertionError, match="no gradient"):
        adapter.backward(fw.sum(Stop.apply(x)))


def test_what_the_operation_protocol_cannot_say_is_unsupported(adapter, fw):
    class Two(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            return g1

    class Wrong(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    x = fw.ones(2, requires_grad=True)
    with unsupported("custom_function_outputs"):
        Two.apply(x)
    with unsupported("apply(keyword=)"):
        Wrong.apply(x=x)
    with unsupported("function_instances"):
        Wrong()
    with unsupported("custom_backward_gradient_count"):
        adapter.backward(fw.sum(Wrong.apply(x)))


def test_a_subclass_instance_is_a_view_on_the_graph(adapter, fw):
    class Tagged(fw.Tensor):
        pass

    x = fw.ones(3, requires_grad=True)
    s = adapter.subclass_instance(Tagged, x)
    assert type(s) is Tagged and type(s * x) is Tagged
    adapter.backward(fw.sum(s * x))
    assert adapter.to_numpy(x.grad).tolist() == [2.0, 2.0, 2.0]


def test_missing_names_are_unsupported_naming_their_feature(adapter, fw):
    with pytest.raises(MissingName, match="grad_modes"):
        fw.enable_grad
    with pytest.raises(MissingName):
        fw.autograd.grad
    for method, feature in (("version", "version_counter"), ("retain_grad", "retain_grad"),
                            ("register_node_hook", "node_hooks")):
        with unsupported(feature):
            getattr(adapter, method)(*([None] * (2 if "hook" in method else 1)))


def test_every_declared_missing_feature_is_missing_from_mygrad(adapter):
    from conformance import feature_claims

    claims = {c.feature: c for c in feature_claims.check(adapter)}
    assert feature_claims.contradictions(list(claims.values())) == []
    assert claims["tensor_data"].status == feature_claims.EXPLAINED
    assert claims["grad_assignment"].status == feature_claims.ABSENT


def test_saved_input_and_apply_in_place_are_mygrads_variables_and_out(adapter, fw):
    x = fw.ones(3, requires_grad=True)
    a = x * 2
    node = adapter.grad_fn(a * a)
    assert adapter.saved_input(node, 0) is a and adapter.saved_input(node, 1) is a

    class Triple(fw.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return adapter.inplace(t, "mul_", 3)

        @staticmethod
        def backward(ctx, g):
            return g * 3

    base = fw.ones(4, requires_grad=True)
    b = base * 1
    v = b[:2]
    assert adapter.apply_in_place(Triple, v) is v   # execute_op(..., out=v)
    assert adapter.to_numpy(b).tolist() == [3.0, 3.0, 1.0, 1.0]
    adapter.backward(fw.sum(b))
    assert adapter.to_numpy(base.grad).tolist() == [3.0, 3.0, 1.0, 1.0]

    class NotReturned(fw.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            adapter.inplace(t, "add_", 1)
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with unsupported("mark_dirty"):   # out= always receives the result: no MyGrad spelling
        adapter.apply_in_place(NotReturned, fw.ones(2) * 1)


def test_sigmoid_is_mygrads_activation(adapter, fw):
    t = fw.tensor([0.0, 2.0])
    assert np.allclose(adapter.to_numpy(fw.sigmoid(t)), 1 / (1 + np.exp(-np.array([0.0, 2.0]))))
