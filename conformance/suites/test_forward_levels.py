"""Suite `forward_levels`: forward-mode AD levels, dual tensors and tangent lifetimes.

Rules: conformance/catalogue/forward_levels.toml. Observed torch behaviour:
conformance/evidence/forward_levels.toml; the level design follows torch's forward_grad.h
(one process-wide level, tangents owned by the dual tensor).

Every test needs forward AD (checked once, by the autouse fixture): a framework without it
is UNSUPPORTED, not an error. No test leaves a level open (an autouse fixture closes any
level a failing test left behind, so that one failure does not cascade).
"""
import gc
import threading

import pytest
from numpy.testing import assert_allclose

from conformance import liveness
from conformance.spelling import subject
from conformance.api import Unsupported, aside, diverges_if_raises, raises, rule, time_limit
from conformance.suites._helpers import expect_refusal, require_forward_ad, set_attr, tensor_weakref
from conformance.suites._refusals import refusal_of


def _forward_ad(adapter, fw):
    return adapter.feature("forward_ad", lambda: fw.autograd.forward_ad)


@pytest.fixture(autouse=True)
def _close_levels_left_open(adapter):
    """A level a test leaves open (a failed check inside it, a framework race) is closed
    before the next test, so it fails that one test, never the later ones."""
    require_forward_ad(adapter)
    yield
    if "forward_ad" not in adapter.unsupported:
        adapter.close_forward_levels()


def _level_is_open(fw, fwad, device):
    """True if make_dual works (a level is open), False if it is refused (any class: which one
    is forward_levels.exit-none-open-errors's to judge)."""
    try:
        fwad.make_dual(fw.zeros(1, device=device), fw.zeros(1, device=device))
    except Exception:  # noqa: BLE001 - a refusal of any class means no level is open
        return False
    return True


def _tangent_list(adapter, fwad, t):
    tangent = fwad.unpack_dual(t).tangent
    return None if tangent is None else adapter.to_numpy(tangent).tolist()


# -- levels --------------------------------------------------------------------------------

@rule("forward_levels.dual-level-yields-zero")
def test_dual_level_yields_zero(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    with fwad.dual_level() as lvl:
        assert lvl == 0, f"dual_level() yielded {lvl!r}, expected 0"
    lvl = fwad.enter_dual_level()
    try:
        assert lvl == 0, f"enter_dual_level() returned {lvl!r}, expected 0"
    finally:
        fwad.exit_dual_level()


@rule("forward_levels.enter-exit-api")
def test_enter_and_exit_dual_level(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    assert not _level_is_open(fw, fwad, device), "a level is open before the test entered one"
    lvl = fwad.enter_dual_level()
    try:
        d = fwad.make_dual(fw.ones(2, device=device), fw.full((2,), 3.0, device=device))
        assert _tangent_list(adapter, fwad, d) == [3.0, 3.0], "make_dual inside enter_dual_level() lost the tangent"
    finally:
        fwad.exit_dual_level()
    assert not _level_is_open(fw, fwad, device), "exit_dual_level() did not close the level"
    lvl = fwad.enter_dual_level()
    assert _level_is_open(fw, fwad, device), "no level open after a second enter_dual_level()"
    fwad.exit_dual_level(level=lvl)
    assert not _level_is_open(fw, fwad, device), "exit_dual_level(level=lvl) did not close the level"


@rule("forward_levels.level-index-reused")
def test_level_index_is_reused_after_exit(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    seen = []
    for _ in range(3):
        with fwad.dual_level() as lvl:
            seen.append(lvl)
        lvl = fwad.enter_dual_level()
        seen.append(lvl)
        fwad.exit_dual_level()
    assert seen == [0] * 6, f"successive levels had indices {seen}; expected 0 every time"


@rule("forward_levels.make-dual-needs-level")
def test_make_dual_without_level_raises(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    primal, tangent = fw.ones(2, device=device), fw.ones(2, device=device)
    expect_refusal(lambda: fwad.make_dual(primal, tangent), "make_dual with no level ever opened in this test")
    with fwad.dual_level():
        pass
    expect_refusal(lambda: fwad.make_dual(primal, tangent), "make_dual after the level exited")


@rule("forward_levels.nesting-is-error")
def test_nested_level_raises_and_outer_level_survives(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    with fwad.dual_level():
        expect_refusal(fwad.enter_dual_level, "enter_dual_level() inside dual_level()")

        def nested_with():
            with fwad.dual_level():
                pass

        expect_refusal(nested_with, "dual_level() inside dual_level()")
        d = fwad.make_dual(fw.ones(2, device=device), fw.full((2,), 2.0, device=device))
        assert _tangent_list(adapter, fwad, d * 3) == [6.0, 6.0], (
            "the open level no longer works after the failed nested enter")
    assert not _level_is_open(fw, fwad, device), "a level is still open after the outer dual_level() exited"
    assert _tangent_list(adapter, fwad, d) is None, "the outer level's exit did not clear its tangents"


@rule("forward_levels.exit-not-current-errors")
def test_exit_of_other_level_raises(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    with fwad.dual_level() as lvl:
        d = fwad.make_dual(fw.ones(2, device=device), fw.ones(2, device=device))
        expect_refusal(lambda: fwad.exit_dual_level(level=lvl + 1), f"exit_dual_level(level={lvl + 1}) inside level {lvl}")
        assert _level_is_open(fw, fwad, device), "the failed exit closed the current level"
        assert _tangent_list(adapter, fwad, d) == [1.0, 1.0], "the failed exit cleared the current level's tangents"


@rule("forward_levels.exit-none-open-errors")
def test_exit_with_no_open_level_raises(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    with fwad.dual_level():
        pass
    expect_refusal(fwad.exit_dual_level, "exit_dual_level() with no level open")
    expect_refusal(lambda: fwad.exit_dual_level(level=0), "exit_dual_level(level=0) with no level open")
    with fwad.dual_level() as lvl:
        assert lvl == 0, f"after the failed exits the next level is {lvl!r}, expected 0"


@rule("forward_levels.exit-none-open-errors")
def test_forward_ad_misuse_refusals_have_torchs_classes(fw, adapter, device):
    """The class of each forward-AD refusal, judged here once: the behaviour rules (make-dual-needs-level,
    nesting-is-error, exit-not-current-errors, make-dual-size-check, make-dual-floating-only,
    custom-function-needs-jvp) judge only that the call is refused."""
    fwad = _forward_ad(adapter, fw)
    refusals = {}
    with fwad.dual_level() as lvl:
        refusals["enter_dual_level() inside a level"] = (RuntimeError, refusal_of(fwad.enter_dual_level))
        refusals["exit_dual_level(level=n) of another level"] = (
            RuntimeError, refusal_of(lambda: fwad.exit_dual_level(level=lvl + 1)))
        p = fw.ones(2, device=device)
        refusals["make_dual with a tangent of another shape"] = (
            RuntimeError, refusal_of(lambda: fwad.make_dual(p, fw.ones(3, device=device))))
        refusals["make_dual with an int64 tangent"] = (
            ValueError, refusal_of(lambda: fwad.make_dual(p, fw.ones(2, dtype=fw.int64, device=device))))
        refusals["make_dual with an int64 primal"] = (
            ValueError, refusal_of(lambda: fwad.make_dual(fw.ones(2, dtype=fw.int64, device=device), p)))
        if aside(adapter, "custom_function", what="the class of a custom Function without jvp refusing a dual"):
            class NoJvp(fw.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x * 2

                @staticmethod
                def backward(ctx, g):
                    return g * 2

            d = fwad.make_dual(fw.ones(2, device=device), fw.ones(2, device=device))
            refusals["a custom Function without jvp applied to a dual"] = (
                NotImplementedError, refusal_of(lambda: NoJvp.apply(d)))
    refusals["make_dual with no level open"] = (
        RuntimeError, refusal_of(lambda: fwad.make_dual(fw.ones(2, device=device), fw.ones(2, device=device))))
    refusals["exit_dual_level() with no level open"] = (RuntimeError, refusal_of(fwad.exit_dual_level))
    raised = {k: (cls, e) for k, (cls, e) in refusals.items() if e is not None}
    assert raised, "none of the forward-AD misuses was refused (their behaviour rules say they must be)"
    wrong = {k: f"{type(e).__name__}, expected {cls.__name__}" for k, (cls, e) in raised.items()
             if not isinstance(e, cls)}
    assert not wrong, f"forward-AD refusals of another class than torch's: {wrong}"


# -- unpack_dual ---------------------------------------------------------------------------

@rule("forward_levels.unpack-dual-namedtuple")
def test_unpack_dual_returns_named_tuple_with_same_tangent(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    foo = fw.tensor([1.0, 2.0], device=device)
    bar = fw.tensor([0.5, -1.0], device=device)
    with fwad.dual_level():
        u = fwad.unpack_dual(fwad.make_dual(foo, bar))
        assert type(u).__name__ == "UnpackedDualTensor", f"unpack_dual returned a {type(u).__name__}"
        assert isinstance(u, tuple) and getattr(u, "_fields", None) == ("primal", "tangent"), (
            f"unpack_dual result is not a namedtuple with fields ('primal', 'tangent'): {u!r}")
        assert u[0] is u.primal and u[1] is u.tangent, "positional and named access disagree"
        assert u.tangent is bar, "unpack_dual(...).tangent is not the tensor passed to make_dual"
        assert_allclose(adapter.to_numpy(u.primal), [1.0, 2.0])


@rule("forward_levels.unpack-primal-fresh-view")
def test_unpack_dual_primal_identity(fw, adapter, device, observe):
    fwad = _forward_ad(adapter, fw)
    with fwad.dual_level():
        d = fwad.make_dual(fw.ones(2, device=device), fw.ones(2, device=device))
        p1, p2 = fwad.unpack_dual(d).primal, fwad.unpack_dual(d).primal
        observe({"same primal object on two unpacks": p1 is p2, "primal is the dual": p1 is d})


@rule("forward_levels.unpack-non-dual-tangent-none")
def test_unpack_of_plain_tensor_in_level_has_no_tangent(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    foo = fw.tensor([1.0, 2.0], device=device)
    plain = fw.tensor([3.0, 4.0], device=device)
    with fwad.dual_level():
        fwad.make_dual(foo, fw.ones(2, device=device))
        for name, t, values in (("plain tensor", plain, [3.0, 4.0]), ("original primal", foo, [1.0, 2.0])):
            u = fwad.unpack_dual(t)
            assert u.tangent is None, f"unpack_dual of the {name} gave tangent {u.tangent!r}, expected None"
            assert_allclose(adapter.to_numpy(u.primal), values, err_msg=f"primal of the {name}")


@rule("forward_levels.unpack-outside-level")
def test_unpack_outside_any_level(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    t = fw.tensor([1.5, 2.5], device=device)
    u = fwad.unpack_dual(t)
    assert type(u).__name__ == "UnpackedDualTensor", f"unpack_dual outside a level returned a {type(u).__name__}"
    assert u.tangent is None, f"tangent outside any level is {u.tangent!r}, expected None"
    assert_allclose(adapter.to_numpy(u.primal), [1.5, 2.5])


# -- tangent lifetime ----------------------------------------------------------------------

@rule("forward_levels.tangents-cleared-at-exit")
def test_tangent_cleared_when_level_exits(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    with fwad.dual_level():
        dual = fwad.make_dual(fw.tensor([1.0, 2.0], device=device), fw.ones(2, device=device))
        derived = dual * 3
        assert _tangent_list(adapter, fwad, dual) == [1.0, 1.0]
    assert _tangent_list(adapter, fwad, dual) is None, "the dual still has a tangent after the level exited"
    assert _tangent_list(adapter, fwad, derived) is None, "a result computed in the level kept its tangent"
    assert_allclose(adapter.to_numpy(dual), [1.0, 2.0], err_msg="the dual's values changed at level exit")
    assert_allclose(adapter.to_numpy(dual * 2), [2.0, 4.0], err_msg="the dual is unusable after level exit")


@rule("forward_levels.new-level-starts-clean")
def test_new_level_does_not_resurrect_old_tangents(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    foo = fw.ones(2, device=device)
    with fwad.dual_level():
        old = fwad.make_dual(foo, fw.full((2,), 7.0, device=device))
    baz = fw.full((2,), 5.0, device=device)
    with fwad.dual_level():
        new = fwad.make_dual(foo, baz)
        assert fwad.unpack_dual(old).tangent is None, "a dual from an earlier level has a tangent in the new level"
        assert fwad.unpack_dual(new).tangent is baz, "the new level's dual does not carry its own tangent"
        assert _tangent_list(adapter, fwad, old * 2) is None, "ops on the old dual produce a tangent in the new level"


@rule("forward_levels.tangent-owned-by-dual")
def test_tangent_lives_and_dies_with_its_dual(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    foo = fw.ones(2, device=device)
    liveness.control_weakref(adapter, device, "a weakref to a tensor")
    with fwad.dual_level():
        tangent = fw.full((2,), 4.0, device=device)
        ref = tensor_weakref(tangent, what="a weakref to the tangent")
        set_attr(tangent, "note", "kept", what="an attribute on the tangent")
        dual = fwad.make_dual(foo, tangent)
        del tangent
        gc.collect()
        assert ref() is not None, "the tangent died while its dual is alive"
        unpacked = fwad.unpack_dual(dual).tangent
        assert unpacked is ref(), "unpack_dual returns another object than the tangent the dual keeps"
        assert getattr(unpacked, "note", None) == "kept", "the tangent's attribute was lost"
        del unpacked, dual
        gc.collect()
        assert ref() is None, "the tangent outlives its dual while the level is open (owned by the level?)"


# -- make_dual checks and aliasing ---------------------------------------------------------

@rule("forward_levels.make-dual-size-check")
def test_make_dual_rejects_other_shapes(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    with fwad.dual_level():
        p = fw.ones(2, device=device)
        expect_refusal(lambda: fwad.make_dual(p, fw.ones(3, device=device)),
                       "make_dual of a (2,) primal with a (3,) tangent")
        expect_refusal(lambda: fwad.make_dual(p, fw.ones(1, 2, device=device)),
                       "make_dual of a (2,) primal with a (1, 2) tangent (no broadcasting)")
        expect_refusal(lambda: fwad.make_dual(fw.ones(2, 3, device=device), fw.ones(3, 2, device=device)),
                       "make_dual of a (2, 3) primal with a (3, 2) tangent")


@rule("forward_levels.make-dual-floating-only")
def test_make_dual_rejects_integral_tensors(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    with fwad.dual_level():
        expect_refusal(lambda: fwad.make_dual(fw.ones(2, device=device), fw.ones(2, dtype=fw.int64, device=device)),
                       "int64 tangent")
        expect_refusal(lambda: fwad.make_dual(fw.ones(2, dtype=fw.int64, device=device), fw.ones(2, device=device)),
                       "int64 primal")
        expect_refusal(lambda: fwad.make_dual(fw.ones(2, dtype=fw.bool, device=device), fw.ones(2, device=device)),
                       "bool primal")


@rule("forward_levels.dual-tangent-refused")
def test_make_dual_refuses_a_dual_as_tangent(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    with fwad.dual_level():
        t = fwad.make_dual(fw.ones(2, device=device), fw.full((2,), 5.0, device=device))
        p = fw.zeros(2, device=device)
        with raises(Exception, what="make_dual(p, t) with t a dual of the open level"):
            fwad.make_dual(p, t)
        with raises(Exception, what="make_dual(p, t * 2) with t * 2 a dual of the open level"):
            fwad.make_dual(p, t * 2)
        assert fwad.unpack_dual(p).tangent is None, "a refused make_dual left a tangent on the primal"
        d = fwad.make_dual(p, fwad.unpack_dual(t).tangent)
        assert _tangent_list(adapter, fwad, d) == [5.0, 5.0], "make_dual with the plain tangent of a dual failed"


@rule("forward_levels.dual-tangent-refused")
def test_custom_function_jvp_returning_a_dual_is_refused(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    made = []

    class DualJvp(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, x_t):
            made.append(fwad.make_dual(x_t * 2, x_t))
            return made[-1]

    with fwad.dual_level():
        d = fwad.make_dual(fw.ones(2, device=device), fw.ones(2, device=device))
        with raises(Exception, what="a custom Function whose jvp returns a dual of the open level"):
            DualJvp.apply(d)
        assert made, "jvp was not called"


@rule("forward_levels.make-dual-dtype-may-differ")
def test_make_dual_with_tangent_of_other_float_dtype(fw, adapter, device, observe):
    fwad = _forward_ad(adapter, fw)
    with fwad.dual_level():
        try:
            d = fwad.make_dual(fw.ones(2, dtype=fw.float32, device=device),
                               fw.ones(2, dtype=fw.float64, device=device))
        except Exception as exc:  # noqa: BLE001 - recorded, not judged
            observe(f"refused: {type(exc).__name__}: {exc}")
            return
        observe(f"accepted; unpacked tangent dtype {fwad.unpack_dual(d).tangent.dtype}")


@rule("forward_levels.make-dual-aliases-primal")
def test_dual_shares_data_and_version_with_primal(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    foo = fw.zeros(2, device=device)
    with fwad.dual_level():
        d = fwad.make_dual(foo, fw.ones(2, device=device))
        v0 = adapter.version(d)
        adapter.inplace(foo, "add_", 1)
        assert_allclose(adapter.to_numpy(d), [1.0, 1.0], err_msg="in-place on the primal is not visible in the dual")
        assert adapter.version(d) == adapter.version(foo) and adapter.version(d) > v0, (
            f"versions after foo.add_: dual {d._version}, primal {foo._version}, dual before {v0}; "
            "expected a shared, bumped counter")
        adapter.inplace(d, "mul_", 2)
        assert_allclose(adapter.to_numpy(foo), [2.0, 2.0], err_msg="in-place on the dual is not visible in the primal")
        assert adapter.version(d) == adapter.version(foo), (
            f"versions after dual.mul_: dual {d._version}, primal {foo._version}; expected one shared counter")


# -- in-place and views --------------------------------------------------------------------

@rule("forward_levels.inplace-updates-tangent")
def test_inplace_on_dual_updates_tangent(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    foo = fw.tensor([1.0, 2.0], dtype=fw.float64, device=device)
    bar = fw.ones(2, dtype=fw.float64, device=device)
    with fwad.dual_level():
        dual = fwad.make_dual(foo, bar)
        dual *= 2
        assert _tangent_list(adapter, fwad, dual) == [2.0, 2.0], "dual *= 2 did not double the tangent"
        assert fwad.unpack_dual(foo).tangent is None, "the original primal acquired a tangent"
        p, t = fwad.unpack_dual(dual)
        p *= 2
        assert _tangent_list(adapter, fwad, dual) == [2.0, 2.0], "in-place on the unpacked primal changed the tangent"
        assert_allclose(adapter.to_numpy(dual), [4.0, 8.0])
        t *= 2
        assert _tangent_list(adapter, fwad, dual) == [4.0, 4.0], (
            "in-place on the unpacked tangent did not change the dual's tangent")


@rule("forward_levels.inplace-keeps-tangent-object")
def test_inplace_on_dual_updates_tangent_object_in_place(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    bar = fw.ones(2, device=device)
    with fwad.dual_level():
        dual = fwad.make_dual(fw.tensor([1.0, 2.0], device=device), bar)
        dual *= 2
        assert fwad.unpack_dual(dual).tangent is bar, "after dual *= 2 the tangent is a new object"
        assert_allclose(adapter.to_numpy(bar), [2.0, 2.0], err_msg="the user's tangent was not updated in place")


@rule("forward_levels.inplace-keeps-tangent-object")
def test_adding_a_dual_in_place_updates_the_tangent_object_in_place(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    bar = fw.ones(2, device=device)
    with fwad.dual_level():
        dual = fwad.make_dual(fw.tensor([1.0, 2.0], device=device), bar)
        other = fwad.make_dual(fw.tensor([3.0, 4.0], device=device), fw.tensor([5.0, 6.0], device=device))
        dual += other
        assert fwad.unpack_dual(dual).tangent is bar, "after dual += other_dual the tangent is a new object"
        assert_allclose(adapter.to_numpy(bar), [6.0, 7.0], err_msg="the user's tangent was not updated in place")


@rule("forward_levels.views-propagate-tangent")
@subject("view")
def test_views_of_dual_carry_and_update_tangent(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    with fwad.dual_level():
        d = fwad.make_dual(fw.tensor([1.0, 2.0, 3.0], device=device), fw.tensor([1.0, 2.0, 3.0], device=device))
        assert _tangent_list(adapter, fwad, d[1:]) == [2.0, 3.0], "slice of a dual has the wrong tangent"
        assert _tangent_list(adapter, fwad, d[1]) == 2.0, "element of a dual has the wrong tangent"
        assert _tangent_list(adapter, fwad, d.view(3, 1)) == [[1.0], [2.0], [3.0]], "view() lost the tangent"
        assert _tangent_list(adapter, fwad, fw.reshape(d, (1, 3))) == [[1.0, 2.0, 3.0]], "reshape() lost the tangent"
        v = d[0:2]
        v *= 10
        assert _tangent_list(adapter, fwad, d) == [10.0, 20.0, 3.0], (
            "in-place on a slice did not update the base dual's tangent")
        assert _tangent_list(adapter, fwad, v) == [10.0, 20.0], "in-place on a slice: the slice's own tangent"


@rule("forward_levels.inplace-write-makes-dual")
def test_writing_a_dual_into_a_plain_tensor_gives_it_a_tangent(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    with fwad.dual_level():
        d = fwad.make_dual(fw.tensor([1.0, 2.0, 3.0], device=device), fw.tensor([1.0, 2.0, 3.0], device=device))
        b = fw.zeros(3, device=device)
        b += d
        assert _tangent_list(adapter, fwad, b) == [1.0, 2.0, 3.0], "b += dual: b has the wrong tangent"
        b = fw.zeros(3, device=device)
        adapter.inplace(b, "copy_", d)
        assert _tangent_list(adapter, fwad, b) == [1.0, 2.0, 3.0], "b.copy_(dual): b has the wrong tangent"
        b = fw.zeros(3, device=device)
        b[1] = d[1]
        assert _tangent_list(adapter, fwad, b) == [0.0, 2.0, 0.0], (
            "b[1] = dual[1]: expected a tangent with zeros where b was not written")
        b = fw.zeros(3, device=device)
        adapter.inplace(fw.detach(b), "add_", d)
        assert_allclose(adapter.to_numpy(b), [1.0, 2.0, 3.0], err_msg="write through b.detach() not visible in b")
        assert fwad.unpack_dual(b).tangent is None, "writing through b.detach() gave b a tangent"


@rule("forward_levels.detach-drops-tangent")
def test_detach_drops_tangent(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    with fwad.dual_level():
        d = fwad.make_dual(fw.tensor([1.0, 2.0], device=device), fw.ones(2, device=device))
        det = fw.detach(d)
        assert fwad.unpack_dual(det).tangent is None, "detach() kept the tangent"
        assert _tangent_list(adapter, fwad, det * 2) is None, "ops on a detached dual produce a tangent"
        assert_allclose(adapter.to_numpy(det), [1.0, 2.0])
        assert _tangent_list(adapter, fwad, d) == [1.0, 1.0], "detach() removed the tangent from the dual itself"


@rule("forward_levels.detach-inplace-drops-tangent")
def test_detach_inplace_drops_tangent(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    with fwad.dual_level():
        d = fwad.make_dual(fw.tensor([1.0, 2.0], device=device), fw.ones(2, device=device))
        y = d * 3  # carries a tangent and is not a view (detach_() of a view is refused)
        assert _tangent_list(adapter, fwad, y) == [3.0, 3.0], "d * 3 did not get the tangent 3 * d's"
        adapter.inplace(y, "detach_")
        assert fwad.unpack_dual(y).tangent is None, "detach_() kept the tangent"
        assert _tangent_list(adapter, fwad, y * 2) is None, "ops on a tensor detached in place produce a tangent"
        assert_allclose(adapter.to_numpy(y), [3.0, 6.0], err_msg="detach_() changed the values")
        assert _tangent_list(adapter, fwad, d) == [1.0, 1.0], "detach_() of d * 3 changed d's tangent"


@rule("forward_levels.no-grad-keeps-tangent")
def test_no_grad_does_not_disable_forward_ad(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    with fwad.dual_level():
        d = fwad.make_dual(fw.tensor([1.0, 2.0], device=device), fw.ones(2, device=device))
        with fw.no_grad():
            y = d * 3
            d2 = fwad.make_dual(fw.ones(2, device=device), fw.full((2,), 5.0, device=device))
        assert _tangent_list(adapter, fwad, y) == [3.0, 3.0], "an op under no_grad() dropped the tangent"
        assert _tangent_list(adapter, fwad, d2) == [5.0, 5.0], "make_dual under no_grad() has no tangent"


# -- threads -------------------------------------------------------------------------------

def _run_threads(targets, timeout=60.0):
    threads = [threading.Thread(target=t) for t in targets]
    for th in threads:
        th.start()
    for th in threads:
        th.join(time_limit(timeout))
    stuck = sum(th.is_alive() for th in threads)
    assert stuck == 0, f"{stuck} thread(s) still running after {time_limit(timeout):g}s (deadlock?)"


@rule("forward_levels.levels-process-global")
def test_level_opened_on_main_thread_is_visible_on_others(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    res = {}
    with fwad.dual_level():
        main_dual = fwad.make_dual(fw.ones(2, device=device), fw.ones(2, device=device))

        def worker():
            try:
                d = fwad.make_dual(fw.ones(2, device=device), fw.ones(2, device=device))
                res["tangent"] = _tangent_list(adapter, fwad, d * 3)
                res["main_dual_tangent"] = _tangent_list(adapter, fwad, main_dual)
            except Exception as exc:  # noqa: BLE001 - reported below
                res["tangent"] = f"{type(exc).__name__}: {exc}"
            try:
                fwad.enter_dual_level()
                res["nest"] = "no error"
                fwad.exit_dual_level()
            except Exception as exc:  # noqa: BLE001 - reported below
                res["nest"] = f"{type(exc).__name__}: {exc}"

        _run_threads([worker])
    assert res.get("tangent") == [3.0, 3.0], (
        f"worker thread under the main thread's level: {res.get('tangent')!r} (level thread-local?)")
    assert res.get("main_dual_tangent") == [1.0, 1.0], (
        f"worker thread sees the main thread's dual tangent as {res.get('main_dual_tangent')!r}")
    assert res.get("nest") not in (None, "no error"), (
        f"enter_dual_level() on a worker thread while the main thread's level is open: {res.get('nest')!r}")


@rule("forward_levels.levels-process-global")
def test_level_opened_on_worker_thread_is_level_zero_and_closes(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    res = {}

    def worker():
        with fwad.dual_level() as lvl:
            res["level"] = lvl
            res["dual"] = fwad.make_dual(fw.ones(2, device=device), fw.ones(2, device=device))

    _run_threads([worker])
    assert res.get("level") == 0, f"level entered on a worker thread is {res.get('level')!r}, expected 0"
    assert fwad.unpack_dual(res["dual"]).tangent is None, "the worker's dual kept its tangent after its level exited"
    assert not _level_is_open(fw, fwad, device), "the main thread still sees a level after the worker exited it"


@rule("forward_levels.concurrent-duals-one-level")
def test_eight_threads_make_and_unpack_duals_concurrently(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    errors = []
    barrier = threading.Barrier(8)

    def work(i):
        def run():
            try:
                barrier.wait(time_limit(30))
                for k in range(40):
                    value = float(i * 1000 + k)
                    tangent = fw.full((3,), value, device=device)
                    d = fwad.make_dual(fw.full((3,), float(i), device=device), tangent)
                    y = fw.sum(d * 2 + d)
                    primal, yt = fwad.unpack_dual(y)
                    if fwad.unpack_dual(d).tangent is not tangent:
                        errors.append(f"thread {i} iter {k}: the dual lost its own tangent object")
                    if yt is None or float(adapter.to_numpy(yt).item()) != 9.0 * value or float(adapter.to_numpy(primal).item()) != 9.0 * i:
                        errors.append(f"thread {i} iter {k}: got primal {adapter.to_numpy(primal).item()} tangent "
                                      f"{None if yt is None else adapter.to_numpy(yt).item()}, expected {9.0 * i} and {9.0 * value}")
                        return
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(f"thread {i}: {type(exc).__name__}: {exc}")

        return run

    with fwad.dual_level():
        _run_threads([work(i) for i in range(8)])
    assert errors == [], f"{len(errors)} problem(s), first: {errors[:3]}"


# -- custom Functions ----------------------------------------------------------------------

@rule("forward_levels.custom-function-needs-jvp")
def test_custom_function_without_jvp_refuses_duals(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)

    class NoJvp(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with fwad.dual_level():
        d = fwad.make_dual(fw.ones(2, device=device), fw.ones(2, device=device))
        expect_refusal(lambda: NoJvp.apply(d), "custom Function without jvp applied to a dual")
        out = NoJvp.apply(fw.ones(2, device=device))
        assert_allclose(adapter.to_numpy(out), [2.0, 2.0], err_msg="the Function failed on a tensor without tangent")
        assert fwad.unpack_dual(out).tangent is None


@rule("forward_levels.custom-function-static-jvp")
def test_custom_function_static_jvp_gives_output_tangent(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    calls = []

    class Square(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            raise AssertionError("backward must not run in forward mode")

        @staticmethod
        def jvp(ctx, x_t):
            calls.append("classic")
            return x_t * 7  # deliberately not 2x: proves the jvp result is used

    class SquareSetup(fw.autograd.Function):
        @staticmethod
        def forward(x):
            return x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            raise AssertionError("backward must not run in forward mode")

        @staticmethod
        def jvp(ctx, x_t):
            calls.append("setup_context")
            return x_t * 7

    try:  # the setup_context style is a feature of its own (torch 2.0+): the classic half runs without it
        adapter.feature("setup_context", fw.autograd.Function, "setup_context")
        styles, missing = (Square, SquareSetup), None
    except Unsupported as exc:
        styles, missing = (Square,), exc
    with fwad.dual_level():
        for fn in styles:
            d = fwad.make_dual(fw.tensor([1.0, 3.0], device=device), fw.tensor([1.0, 10.0], device=device))
            primal, tangent = fwad.unpack_dual(fn.apply(d))
            assert_allclose(adapter.to_numpy(primal), [1.0, 9.0], err_msg=f"{fn.__name__}: primal")
            assert tangent is not None, f"{fn.__name__}: output has no tangent"
            assert_allclose(adapter.to_numpy(tangent), [7.0, 70.0],
                            err_msg=f"{fn.__name__}: output tangent is not jvp's return value")
    assert calls == ["classic", "setup_context"][:len(styles)], f"jvp calls: {calls}"
    if missing is not None:
        raise missing  # the classic style held; the setup_context half cannot be judged


def _jvp_returning(fw, jvp_result, two_outputs=False, non_differentiable=False):
    """A custom Function doubling its input (and returning the number 3 as well if
    ``two_outputs``) whose jvp returns ``jvp_result(input tangent)``."""

    class Returns(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            if non_differentiable:
                ctx.mark_non_differentiable(y)
            return (y, 3) if two_outputs else y

        @staticmethod
        def backward(ctx, *grads):
            return grads[0] * 2

        @staticmethod
        def jvp(ctx, x_t):
            return jvp_result(x_t)

    return Returns


@rule("forward_levels.custom-function-jvp-validated")
def test_custom_function_jvp_result_is_checked_against_the_outputs(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    refused = {
        "two tangents for one output": _jvp_returning(fw, lambda t: (t * 2, t * 2)),
        "one tangent for two outputs": _jvp_returning(fw, lambda t: t * 2, two_outputs=True),
        "a (4,) tangent for a (3,) output": _jvp_returning(fw, lambda t: fw.ones(4, device=device)),
        "a (1,) tangent for a (3,) output": _jvp_returning(fw, lambda t: fw.ones(1, device=device)),
        "a (1, 3) tangent for a (3,) output": _jvp_returning(fw, lambda t: fw.ones(1, 3, device=device)),
        "a float as tangent": _jvp_returning(fw, lambda t: 3.0),
        "an int64 tangent": _jvp_returning(fw, lambda t: fw.ones(3, dtype=fw.int64, device=device)),
        "a tangent for an output marked non-differentiable": _jvp_returning(fw, lambda t: t * 2,
                                                                             non_differentiable=True),
    }
    accepted = {
        "one tangent": _jvp_returning(fw, lambda t: t * 2),
        "one tangent in a 1-tuple": _jvp_returning(fw, lambda t: (t * 2,)),
        "a tangent and None for (tensor, number) outputs": _jvp_returning(fw, lambda t: (t * 2, None),
                                                                           two_outputs=True),
    }
    with fwad.dual_level():
        for what, fn in refused.items():
            d = fwad.make_dual(fw.ones(3, device=device), fw.ones(3, device=device))
            with raises(Exception, what=f"apply of a custom Function whose jvp returns {what}"):
                fn.apply(d)
            assert _tangent_list(adapter, fwad, d) == [1.0, 1.0, 1.0], f"the refused jvp ({what}) changed the input's tangent"
        for what, fn in accepted.items():
            d = fwad.make_dual(fw.ones(3, device=device), fw.ones(3, device=device))
            with diverges_if_raises(Exception, what=f"apply of a custom Function whose jvp returns {what}"):
                out = fn.apply(d)
            out = out[0] if isinstance(out, tuple) else out
            assert _tangent_list(adapter, fwad, out) == [2.0, 2.0, 2.0], f"jvp returning {what}: wrong output tangent"


# -- composition and cleanup ---------------------------------------------------------------

@rule("forward_levels.reverse-through-dual")
def test_reverse_mode_flows_through_make_and_unpack_dual(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    x = fw.tensor([1.0, 2.0], requires_grad=True, device=device)
    with fwad.dual_level():
        d = fwad.make_dual(x, fw.ones(2, device=device))
        primal, tangent = fwad.unpack_dual(d * 3)
        if aside(adapter, "requires_grad_flag", what="the unpacked primal requires grad"):
            assert adapter.requires_grad(primal), "the unpacked primal does not require grad"
        assert _tangent_list(adapter, fwad, d * 3) == [3.0, 3.0]
        adapter.backward(fw.sum(primal * primal))
    assert adapter.grad(x) is not None, "no gradient reached the tensor behind make_dual"
    assert_allclose(adapter.to_numpy(adapter.grad(x)), [18.0, 36.0], err_msg="d/dx sum((3x)^2) = 18x")


@rule("forward_levels.level-exit-with-graph-cycle")
def test_level_exit_with_tangent_graph_referencing_dual(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    done = []

    def run():
        def make():
            a = fw.randn(10, requires_grad=True, device=device)
            da = fwad.make_dual(fw.randn(10, device=device), a)
            db = fw.exp(da)
            return db
        with fwad.dual_level():
            make()
            kept = make()
        done.append(fwad.unpack_dual(kept).tangent is None)

    _run_threads([run], timeout=60.0)
    assert done == [True], f"level exit did not complete cleanly: {done}"


@rule("forward_levels.threads-enter-exit-rounds")
def test_eight_threads_enter_and_exit_levels_in_rounds(fw, adapter, device):
    fwad = _forward_ad(adapter, fw)
    rounds = 30
    barrier = threading.Barrier(8)
    lock = threading.Lock()
    state = {"holders": 0, "entered": 0, "refused": 0}
    errors = []

    def work(i):
        def run():
            try:
                barrier.wait(time_limit(30))
                for r in range(rounds):
                    try:
                        lvl = fwad.enter_dual_level()
                    except Exception:  # noqa: BLE001 - refused (nesting): any class, see exit-none-open-errors
                        with lock:
                            state["refused"] += 1
                        continue
                    with lock:
                        state["holders"] += 1
                        state["entered"] += 1
                        holders = state["holders"]
                    try:
                        if holders != 1:
                            errors.append(f"thread {i} round {r}: {holders} threads hold a level")
                        if lvl != 0:
                            errors.append(f"thread {i} round {r}: entered level {lvl!r}, not 0")
                        d = fwad.make_dual(fw.full((2,), float(i), device=device),
                                           fw.full((2,), float(r), device=device))
                        tangent = _tangent_list(adapter, fwad, d * 2)
                        if tangent != [2.0 * r] * 2:
                            errors.append(f"thread {i} round {r}: tangent {tangent!r} inside "
                                          f"its level, expected {[2.0 * r] * 2}")
                    finally:
                        with lock:
                            state["holders"] -= 1
                        fwad.exit_dual_level(level=lvl)
                    if fwad.unpack_dual(d).tangent is not None:
                        errors.append(f"thread {i} round {r}: a dual kept its tangent after its "
                                      f"level exited")
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(f"thread {i}: {type(exc).__name__}: {exc}")

        return run

    _run_threads([work(i) for i in range(8)], timeout=120.0)
    assert errors == [], f"{len(errors)} problem(s), first: {errors[:3]}"
    assert state["entered"] >= 1, "no thread ever entered a level"
    assert not _level_is_open(fw, fwad, device), "a level is still registered after every thread exited"
    with fwad.dual_level() as lvl:
        assert lvl == 0, f"the next level is {lvl!r}, expected 0 (stale level registration)"
        d = fwad.make_dual(fw.ones(2, device=device), fw.full((2,), 5.0, device=device))
        assert _tangent_list(adapter, fwad, d) == [5.0, 5.0]


@rule("forward_levels.fwd-grad-mode-switch")
def test_disabled_forward_mode_hides_tangents_and_keeps_them(adapter, fw, device):
    fwad = _forward_ad(adapter, fw)
    switch = adapter.feature("forward_grad_mode", lambda: fwad._set_fwd_grad_enabled)
    with fwad.dual_level():
        x = fwad.make_dual(fw.ones(2, device=device), fw.full((2,), 3.0, device=device))
        with switch(False):
            y = x * 2
            assert fwad.unpack_dual(y).tangent is None, "an op computed a tangent while forward mode was off"
            assert fwad.unpack_dual(x).tangent is None, "a tangent is visible while forward mode is off"
            seen = []
            worker = threading.Thread(target=lambda: seen.append(fwad.unpack_dual(x * 2).tangent is not None))
            worker.start()
            worker.join()
            assert seen == [True], "switching forward mode off in one thread switched it off in another"
        assert fwad.unpack_dual(x).tangent is not None, "the dual lost its tangent while forward mode was off"
        assert_allclose(adapter.to_numpy(fwad.unpack_dual(x).tangent).tolist(), [3.0, 3.0])
        assert fwad.unpack_dual(y).tangent is None, "an output made while off got a tangent afterwards"
        assert_allclose(adapter.to_numpy(fwad.unpack_dual(x * 2).tangent).tolist(), [6.0, 6.0])
