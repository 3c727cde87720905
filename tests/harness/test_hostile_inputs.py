"""Property: whatever the harness is fed, it answers with one line and exit 4, or works.

Its own inputs, as a hostile but realistic user or a damaged file gives them (issue 28):
results lines (random and mutated JSON objects, raw bytes), the report's other inputs (a
differential findings file, mutants.json), expectations TOML (random documents, mutations of
the real files), command-line values of the tools, and adapter specs.
Asserted: exit status 4 (0 where the input happens to be valid), the error exactly one line,
no traceback, and no output replaced by a refused run; what a run that works writes is valid
(results.json strict JSON, JUnit well-formed XML, a drafted expectations file valid TOML). Bounded: a few dozen examples each,
tools called in-process where they can be, so that ``nox -s tests`` stays fast.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

try:
    import tomllib
except ImportError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from conformance import isolation
from conformance.expectations import ExpectationsError, load_expectations
from conformance.rules import load_catalogue
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "report" / "data" / "torch-at-b301759.jsonl"
RUN_LINES = [json.loads(line) for line in RUN.read_text(encoding="utf-8").splitlines()]
RULES = load_catalogue(ROOT / "conformance" / "catalogue").rules
EXPECTATIONS = sorted((ROOT / "adapters" / "expectations").glob("*.toml"))

BOUNDED = settings(max_examples=20, deadline=None, derandomize=True, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
#: for the tests that run a tool per example: a failure is reported as generated (shrinking
#: one would run the tool hundreds of times); derandomize makes it the same failure each run
WHOLE_TOOL = settings(BOUNDED, phases=(Phase.explicit, Phase.generate))


def call(main, argv: list[str]) -> tuple[int, str, str]:
    """``main(argv)`` in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def assert_convention(code: int, out: str, err: str, valid=(0,)) -> None:
    text = out + err
    assert "Traceback" not in text, text
    assert code in (4, *valid), (code, text)
    if code == 4:
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1, err


@contextlib.contextmanager
def workspace():
    """A fresh directory (the cwd meanwhile) with a report already in ``out/``."""
    here = os.getcwd()
    path = Path(tempfile.mkdtemp(prefix="hostile-"))
    (path / "results").mkdir()
    out = path / "out"
    (out / "junit").mkdir(parents=True)
    for name in ("index.html", "results.json", "junit/torch.xml"):
        (out / name).write_bytes(f"previous {name}\n".encode())
    os.chdir(path)
    try:
        yield path
    finally:
        os.chdir(here)
        shutil.rmtree(path, ignore_errors=True)


def outputs(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


# -- results lines -----------------------------------------------------------------------
#: floats include NaN and the infinities: json.dumps writes them as NaN / Infinity, which
#: Python's json reads back and no other JSON reader does (they reached results.json)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=8)


@st.composite
def results_files(draw) -> bytes:
    lines = [json.dumps(line) for line in RUN_LINES]
    for _ in range(draw(st.integers(1, 3))):
        index = draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(["field", "field", "field", "drop", "object", "value", "bytes",
                                    "cut", "deep"]))
        try:
            record = json.loads(lines[index])
        except (ValueError, RecursionError):  # a line an earlier step damaged or nested
            record = None
        record = record if isinstance(record, dict) else {}
        if how == "field" and record:
            record[draw(st.sampled_from(sorted(record)))] = draw(json_values)
            lines[index] = json.dumps(record)
        elif how == "drop" and record:
            record.pop(draw(st.sampled_from(sorted(record))))
            lines[index] = json.dumps(record)
        elif how == "object":
            lines[index] = json.dumps(draw(st.dictionaries(st.sampled_from(
                ["type", "schema", "nodeid", "rule", "outcome", "adapter", "exitstatus"]),
                json_values, max_size=5)))
        elif how == "value":
            lines[index] = json.dumps(draw(json_values))
        elif how == "deep" and record:  # deeper than the recursion limit: RecursionError
            depth = draw(st.sampled_from([2_000, 100_000]))
            lines[index] = json.dumps(record)[:-1] + ', "observed": ' + "[" * depth + "]" * depth + "}"
        elif how == "bytes":
            lines[index] = draw(st.binary(max_size=30)).decode("latin-1")
        else:
            lines[index] = lines[index][:draw(st.integers(0, len(lines[index])))]
    return "\n".join(lines).encode("utf-8", "surrogateescape") + b"\n"


@settings(WHOLE_TOOL, max_examples=30)
@given(results_files())
def test_report_of_a_damaged_results_file(content):
    with workspace() as path:
        (path / "results" / "torch.jsonl").write_bytes(content)
        _report_refuses_or_renders(path)


def _report_refuses_or_renders(path):
    """The report over ``path/results``: one line and exit 4 with nothing in ``path/out``
    replaced, or a rendered page."""
    from conformance.report.build import main

    before = outputs(path / "out")
    code, out, err = call(main, ["--results-dir", "results", "--out", "out"])
    assert_convention(code, out, err)
    if code == 4:
        assert outputs(path / "out") == before
    else:
        assert_valid_report(path / "out")


def _no_constant(name):
    raise AssertionError(f"results.json holds {name}, which is not JSON")


def assert_valid_report(out: Path) -> None:
    """results.json is strict JSON (no NaN / Infinity) and every JUnit file is XML a CI
    reader can parse (no control characters, no U+FFFE)."""
    from xml.dom import minidom

    json.loads((out / "results.json").read_text(encoding="utf-8"), parse_constant=_no_constant)
    for junit in (out / "junit").glob("*.xml"):
        minidom.parse(str(junit))


# -- the report's other inputs: differential findings and mutants.json --------------------
FINDINGS = [
    {"type": "run", "schema": 1, "engine": "hypofuzz", "fuzz_run": "a", "workers": 2,
     "started": "2026-11-28T10:00:00+00:00", "host": "h"},
    {"type": "divergence", "schema": 1, "fuzz_run": "a", "signature": "hooks|Backward|order:hook",
     "category": "hooks", "summary": "hook order", "script": "import torch\n", "script_lines": 1,
     "expectation": None, "found": "2026-11-28T10:01:00+00:00", "framework_version": "2.13.0",
     "worker": "h:1"},
    {"type": "fuzz-worker", "fuzz_run": "a", "worker": "h:1", "examples": 40},
    {"type": "end", "fuzz_run": "a", "examples": 40, "duration": 3.5},
]
MUTANTS = {"type": "mutants", "date": "2026-11-28", "partial": False,
           "curated": {"killed": 9, "total": 10, "score": 0.9,
                       "survivors": [{"id": "m1", "expected_rules": ["a.b"], "reason": "r"}]},
           "baseline": {"killed": 8, "total": 10, "date": "2026-11-01"},
           "generic": {"summary": "3/4 killed", "survivors_by_function": {"f": 1},
                       "not_reached_by_function": {"g": 2},
                       "survivors": [{"function": "f", "change": ["-a", "+b"], "kind": "behaviour"}]}}


def _mutated(draw, value, depth=0):
    """``value`` with one field, at any depth, replaced by a random JSON value."""
    if isinstance(value, dict) and value and (depth == 0 or draw(st.booleans())):
        key = draw(st.sampled_from(sorted(value)))
        return {**value, key: _mutated(draw, value[key], depth + 1)}
    if isinstance(value, list) and value and draw(st.booleans()):
        i = draw(st.integers(0, len(value) - 1))
        return value[:i] + [_mutated(draw, value[i], depth + 1)] + value[i + 1:]
    return draw(json_values)


@st.composite
def side_inputs(draw) -> tuple[bytes, bytes | None]:
    lines = [json.dumps(line) for line in FINDINGS]
    index = draw(st.integers(0, len(lines) - 1))
    lines[index] = json.dumps(_mutated(draw, FINDINGS[index]))
    mutants = json.dumps(_mutated(draw, MUTANTS)).encode() if draw(st.booleans()) else None
    return "\n".join(lines).encode() + b"\n", mutants


@settings(WHOLE_TOOL, max_examples=30)
@given(side_inputs())
def test_report_of_a_damaged_findings_file_or_mutants_json(inputs):
    findings, mutants = inputs
    with workspace() as path:
        (path / "results" / "torch.jsonl").write_bytes(RUN.read_bytes())
        (path / "results" / "explore-torch.jsonl").write_bytes(findings)
        if mutants is not None:
            (path / "out" / "mutants.json").write_bytes(mutants)
        _report_refuses_or_renders(path)


@WHOLE_TOOL
@given(results_files())
def test_drafting_expectations_from_a_damaged_results_file(content):
    from conformance.expectations_draft import main

    with workspace() as path:
        (path / "results" / "torch.jsonl").write_bytes(content)
        code, out, err = call(main, ["results/torch.jsonl"])
        assert_convention(code, out, err)
        if code == 0:  # what is drafted is TOML: a rule id or message never becomes a key
            tomllib.loads(out)


# -- expectations TOML -------------------------------------------------------------------
@st.composite
def expectations_files(draw) -> bytes:
    if draw(st.booleans()):
        return draw(st.text(max_size=200)).encode("utf-8") if draw(st.booleans()) \
            else draw(st.binary(max_size=200))
    text = draw(st.sampled_from(EXPECTATIONS)).read_bytes()
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        end = draw(st.integers(at, min(len(text), at + 40)))
        insert = draw(st.sampled_from([b"", b"[]", b"outcome = []\n", b'"\n', b"\xff", b"[[x]]\n",
                                       b"tests = [1]\n", b"= 1\n", b"\n[a.b]\n"])
                      | st.text(max_size=12).map(lambda s: s.encode("utf-8")))
        text = text[:at] + insert + text[end:]
    return text


@settings(BOUNDED, max_examples=60)
@given(expectations_files())
def test_a_damaged_expectations_file_is_one_line(content):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "exp.toml"
        path.write_bytes(content)
        try:
            load_expectations(path, RULES, "2.13.0")
        except ExpectationsError as exc:
            message = str(exc)
            assert "\n" not in message and message.startswith(str(path)), message


# -- command-line values ------------------------------------------------------------------
values = st.sampled_from(["", "0", "-1", "1", "nan", "inf", "1e309", "a/b", "=", "..", "/", "-",
                          "--", "a=", "=b", "x:y", "out", "results", "out/index.html", "new/",
                          "out/junit/"]) \
    | st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=15)


def _report(value, flag):
    from conformance.report.build import main
    return main, ["--results-dir", "results", "--out", "out", flag, value]


def _mutants(value, flag):
    from conformance.mutants.__main__ import main
    return main, ["--list", "--only", "no-such-mutant", flag, value]


def _differential(value, flag):
    from conformance.differential.runner import main
    return main, ["--adapter", "no-such-adapter", flag, value]


def _torchtests(value, flag):
    from conformance.torchtests.__main__ import main
    return main, ["no-such-test_autograd.py", flag, value]


def _repro_check(value, flag):
    from conformance.repro.check import main
    return main, ["no-such-results.jsonl", flag, value]


def _spec(value, flag):
    from conformance.spec import main
    return main, [flag, value]


def _options(value, flag):
    from conformance.options import main
    return main, [flag, value]


COMMANDS = st.sampled_from([
    (_report, "--column"), (_report, "--exclude"), (_report, "--out"), (_report, "--results-dir"),
    (_mutants, "--jobs"), (_mutants, "--min-score"), (_mutants, "--budget"), (_mutants, "--json"),
    (_differential, "--examples"), (_differential, "--max-steps"), (_differential, "--results"),
    (_torchtests, "--timeout"), (_torchtests, "--select"), (_repro_check, "--sample"),
    (_options, "--bogus"), (_spec, "--out"),
])


@settings(WHOLE_TOOL, max_examples=40)
@given(COMMANDS, values)
def test_random_option_values(command, value):
    make, flag = command
    main, argv = make(value, flag)
    with workspace() as path:
        (path / "results" / "torch.jsonl").write_bytes(RUN.read_bytes())
        before = outputs(path / "out")
        code, out, err = call(main, argv)
        assert_convention(code, out, err)
        if code == 4:
            assert outputs(path / "out") == before


# -- adapter specs ------------------------------------------------------------------------
specs = st.text(st.sampled_from("abcxyz_.:-/ 0"), max_size=12) | st.sampled_from(
    [".rel:X", ":", "a:", ":b", "adapters.base:Adapter", "adapters.base:Unsupported",
     "conformance:X", "re:A", "json:dumps"])


@settings(WHOLE_TOOL, max_examples=8)
@given(specs)
def test_a_random_adapter_spec_is_loaded_or_one_line(spec):
    try:
        facts = isolation.probe(spec, "cpu", timeout=hang_limit(15))
    except isolation.ProbeFailed as exc:
        assert "\n" not in str(exc) and str(exc).strip() and "Traceback" not in str(exc), str(exc)
    else:
        assert facts is None or facts.name
