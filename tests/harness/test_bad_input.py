"""Bad input on every entry point: one clear error each, nothing lost.

Unknown adapters and devices, crashing and missing frameworks: tests/harness/test_options.py
and tests/harness/test_crash.py. Here: expectations files (line and key named), results
files of another schema, and the reference API fed wrong shapes, dtypes, non-tensors, hooks
returning wrong types and custom backwards returning the wrong number of gradients, checked
against PyTorch's own exception type and message where torch has one.
"""
import json
import re

import pytest

import reference as R
from conformance import results
from conformance.expectations import ExpectationsError, load_expectations
from conformance.results import SCHEMA_VERSION, ResultsSchemaError, read_results

torch = pytest.importorskip("torch")

RULES = {"hooks.fire-once", "identity.grad-stable-id"}


# -- expectations: file, line and key ------------------------------------------------------
@pytest.mark.parametrize("text, where", [
    ('# known\n\n["identity.grad-stable-id"]\noutcome = "DIVERGES"\nreason = "x"\n'
     '["hooks.fire-once"]\nreason = "x"\noutcome = "PASSES"\n',
     "[hooks.fire-once]: key 'outcome' = 'PASSES' must be one of * (line 8)"),
    ('[hooks.fire-once]\noutcome = "DIVERGES"\nreason = "x"\nwhy = "y"\n',
     "[hooks.fire-once]: unknown key(s) why; allowed: * (line 4)"),
    ('[["hooks.fire-once"]]\noutcome = "DIVERGES"\nreason = "x"\nversions = "0.8"\n',
     "[hooks.fire-once]: key 'versions' must be a list * (line 4)"),
    ('\n\n["hooks.fire-once"]\noutcome = "DIVERGES"\n', "[hooks.fire-once]: key 'reason' is required *(line 3)"),
    ('["hooks.renamed"]\noutcome = "DIVERGES"\nreason = "stale"\n',
     "[hooks.renamed]: no such rule in the catalogue; *fix the id or remove the entry (line 1)"),
    ('["hooks.fire-once"]\noutcome = "DIVERGES\n', "not valid TOML: * (at line 2, column *)"),
])
def test_expectations_errors_name_file_line_and_key(tmp_path, text, where):
    path = tmp_path / "exp.toml"
    path.write_text(text)
    with pytest.raises(ExpectationsError) as info:
        load_expectations(path, RULES, "1.0")
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    pattern = re.escape(where).replace(r"\*", ".*")
    assert re.search(pattern, message), message


# -- results files: schema version ---------------------------------------------------------
def write_lines(path, *records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_current_results_file_reads_back(tmp_path):
    path = write_lines(tmp_path / "r.jsonl", {"type": "run", "schema": SCHEMA_VERSION},
                       {"type": "test", "outcome": "PASS"}, {"type": "end"})
    assert [r["type"] for r in read_results(path)] == ["run", "test", "end"]


@pytest.mark.parametrize("header, message", [
    ({"type": "run"}, f":1: written with no schema version (a harness from before versioned "
                      f"results); this reader reads schema {SCHEMA_VERSION} and cannot migrate it"),
    ({"type": "run", "schema": SCHEMA_VERSION + 1},
     f":1: written with results schema {SCHEMA_VERSION + 1}, newer than this reader's "
     f"{SCHEMA_VERSION}; upgrade autograd-conformance"),
    ({"type": "run", "schema": "1"}, ":1: schema '1' is not a version number"),
    ({"type": "test"}, ":1: no run header"),
])
def test_results_file_of_another_schema_is_refused_with_its_version(tmp_path, header, message):
    path = write_lines(tmp_path / "r.jsonl", header, {"type": "end"})
    with pytest.raises(ResultsSchemaError) as info:
        read_results(path)
    assert str(info.value) == f"{path}{message}" or message in str(info.value), str(info.value)


def test_results_line_that_is_not_json_is_named(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"type": "run", "schema": 1}) + "\n{\"type\": \"test\", \n")
    with pytest.raises(ResultsSchemaError, match=r"r\.jsonl:2: not a JSON line"):
        read_results(path)


def test_older_schema_is_migrated_when_a_migration_exists(tmp_path, monkeypatch):
    def rename_outcome(records):
        return [{k if k != "result" else "outcome": v for k, v in r.items()} for r in records]

    monkeypatch.setattr(results.records, "SCHEMA_VERSION", 2)
    monkeypatch.setitem(results.MIGRATIONS[results.LINES], 1, rename_outcome)
    path = write_lines(tmp_path / "r.jsonl", {"type": "run", "schema": 1},
                       {"type": "test", "result": "PASS"})
    header, test = read_results(path)
    assert header["schema"] == 2 and test == {"type": "test", "outcome": "PASS"}


def test_a_run_written_by_the_harness_reads_back(conformance_project):
    conformance_project.rules("demo", "a")
    conformance_project.suite("demo", '@rule("demo.a")\ndef test_a(): pass\n')
    conformance_project.run("suites", "--results", "results.jsonl")
    records = read_results(conformance_project.pytester.path / "results.jsonl")
    assert [r["type"] for r in records] == ["run", "test", "end"]


def test_cuda_with_a_cpu_build_of_torch_is_refused(conformance_project):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    result = conformance_project.run("suites", "--device", "cuda", adapter="torch")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--device cuda but torch.cuda.is_available() is False*"])


# -- the reference API against torch's errors ------------------------------------------------
def custom_function(lib, backward):
    class Double(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    Double.backward = staticmethod(backward)
    return Double


def backward_through_hook(value):
    def case(lib):
        x = lib.ones(2, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: value(lib) if callable(value) else value)
        y.sum().backward()
    return case


def custom_backward(returns):
    def case(lib):
        x = lib.ones(2, requires_grad=True)
        custom_function(lib, lambda ctx, g: returns(lib, g)).apply(x).sum().backward()
    return case


def in_level(make):
    def case(lib):
        fwad = lib.autograd.forward_ad
        with fwad.dual_level():
            make(lib, fwad)
    return case


def custom_jvp(returns):
    def make(lib, fwad):
        class Double(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

            @staticmethod
            def jvp(ctx, t):
                return returns(lib, t)

        Double.apply(fwad.make_dual(lib.ones(2), lib.ones(2)))
    return in_level(make)


CASES = {
    # wrong shapes
    "reshape to a size that does not fit": lambda t: t.ones(2, 3).reshape(4, 2),
    "dimension out of range": lambda t: t.ones(2, 3).sum(dim=5),
    "transpose out of range": lambda t: t.ones(2, 3).transpose(0, 4),
    "unsqueeze out of range": lambda t: t.ones(2, 3).unsqueeze(7),
    "negative size": lambda t: t.ones(-1),
    "backward of a non-scalar": lambda t: (t.ones(2, requires_grad=True) * 2).backward(),
    "grad of another size": lambda t: setattr(t.ones(2, requires_grad=True), "grad", t.ones(3)),
    # wrong dtypes
    "requires_grad_ on an integer tensor": lambda t: t.ones(2, dtype=t.int64).requires_grad_(),
    "hook returns another dtype": backward_through_hook(lambda t: t.ones(2, dtype=t.int64)),
    # non-tensors
    "tensor + str": lambda t: t.ones(2) + "a",
    "tensor * None": lambda t: t.ones(2) * None,
    "tensor ** str": lambda t: t.ones(2) ** "a",
    ".grad = str": lambda t: setattr(t.ones(2, requires_grad=True), "grad", "a"),
    # hooks returning wrong types
    "hook returns str": backward_through_hook("a"),
    "hook returns int": backward_through_hook(3),
    "hook returns list": backward_through_hook([1.0, 2.0]),
    "hook returns another shape": backward_through_hook(lambda t: t.ones(3)),
    # custom backward returning the wrong number of gradients
    "custom backward returns no gradient": custom_backward(lambda t, g: ()),
    "custom backward returns two gradients": custom_backward(lambda t, g: (g, g)),
    "custom backward returns another shape": custom_backward(lambda t, g: t.ones(3)),
    # forward AD
    "make_dual outside a level": lambda t: t.autograd.forward_ad.make_dual(t.ones(2), t.ones(2)),
    "exit a level when none is open": lambda t: t.autograd.forward_ad.exit_dual_level(),
    "make_dual with a dual as tangent": in_level(lambda t, fwad: fwad.make_dual(
        t.ones(2), fwad.make_dual(t.ones(2), t.ones(2)))),
    "custom jvp returns two tangents for one output": custom_jvp(lambda t, g: (g, g)),
    "custom jvp returns another shape": custom_jvp(lambda t, g: t.ones(3)),
    "custom jvp returns a float": custom_jvp(lambda t, g: 1.0),
}
# (were known differences, fixed in the reference since)
CASES.update({
    "broadcast of incompatible shapes": lambda t: t.ones(2, 3) + t.ones(4),
    "in-place broadcast of incompatible shapes": lambda t: t.ones(2).add_(t.ones(2, 2)),
    "matmul of incompatible shapes": lambda t: t.ones(2, 3) @ t.ones(4, 5),
    "matmul of vectors of different lengths": lambda t: t.ones(3) @ t.ones(4),
    "op on a str": lambda t: t.exp("a"),
    "set_grad_enabled of a str": lambda t: t.set_grad_enabled("yes"),
    "requires_grad_ of a str": lambda t: t.ones(2).requires_grad_("x"),
    "custom backward returns a str": custom_backward(lambda t, g: "a"),
    "reshape with two inferred sizes": lambda t: t.ones(4).reshape(-1, -1),
    "reduction of a list": lambda t: t.sum([1.0, 2.0]),
    "arange with a step of zero": lambda t: t.arange(0, 4, 0),
    "arange of None": lambda t: t.arange(None),
    "arange with a dtype that is not one": lambda t: t.arange(3, dtype="float"),
    "tensor of a str": lambda t: t.tensor(["a"]),
    "integer factory that requires grad": lambda t: t.ones(2, dtype=t.int64, requires_grad=True),
})


def outcome(lib, case):
    try:
        case(lib)
    except Exception as exc:  # noqa: BLE001 - compared below
        # the first line: torch appends lists of overloads that name torch's own types
        return type(exc).__name__, str(exc).replace("torch.", "reference.").splitlines()[0]
    return "no error", ""


@pytest.mark.parametrize("name", list(CASES))
def test_reference_raises_what_torch_raises(name):
    expected = outcome(torch, CASES[name])
    assert expected[0] != "no error"
    assert outcome(R, CASES[name]) == expected


