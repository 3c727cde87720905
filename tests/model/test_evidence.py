"""Every rule's source points into the repository's evidence or to a public URL, and every
evidence snippet still prints, on torch 2.13, what was recorded."""
from pathlib import Path

import pytest

from conformance import evidence as ev
from conformance.rules import load_catalogue
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = load_catalogue(ROOT / "conformance" / "catalogue")
EVIDENCE = ev.load()


def test_every_entry_grounds_a_rule_of_the_catalogue():
    assert sorted(set(EVIDENCE) - set(CATALOGUE.rules)) == []


@pytest.mark.parametrize("rule_id", sorted(CATALOGUE.rules))
def test_source_points_to_evidence_or_a_public_url(rule_id):
    assert ev.source_problems(rule_id, CATALOGUE.rules[rule_id].source, EVIDENCE) == []


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


# one pytest-xdist worker runs this module (nox -s tests: --dist loadgroup, tests/xdist_groups.py):
# every evidence snippet runs once, in the module fixture
pytestmark = pytest.mark.xdist_group("evidence")


@pytest.fixture(scope="module")
def torch_213():
    torch = pytest.importorskip("torch")
    if not torch.__version__.startswith(ev.TORCH_VERSION):
        pytest.skip(f"evidence is recorded on torch {ev.TORCH_VERSION}, found {torch.__version__}")
    return torch


def _outputs(entries, out: Path, timeout: float) -> dict:
    """rule -> what its snippet printed, ``entries`` run in ONE fresh interpreter (the evidence
    runner, as ``python -m conformance.evidence --check`` and the history do)."""
    import json
    import subprocess
    import sys

    from conformance.evidence import runner

    job = {"prelude": ev.PRELUDE, "module": "torch", "out": str(out),
           "snippets": [[entry.rule, entry.snippet, ""] for entry in entries]}
    subprocess.run([sys.executable, runner.__file__], input=json.dumps(job), text=True,
                   capture_output=True, timeout=timeout)
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    return {line["rule"]: line["output"] for line in lines if "rule" in line}


@pytest.fixture(scope="module")
def fresh_outputs(torch_213, tmp_path_factory):
    """Every snippet's output, all run in one fresh interpreter: snippets change process-wide
    state (forward-AD levels, threads, grad mode), and other tests sharing an xdist worker with
    them must neither disturb them nor be disturbed."""
    out = tmp_path_factory.mktemp("evidence") / "outputs.jsonl"
    return _outputs([entry for _, entry in sorted(EVIDENCE.items())], out, timeout=hang_limit(225))


@pytest.mark.parametrize("rule_id", sorted(EVIDENCE))
def test_snippet_prints_the_recorded_output(rule_id, fresh_outputs):
    entry = EVIDENCE[rule_id]
    assert ev.normalise(entry.output), f"{rule_id}: no recorded output; run python -m conformance.evidence --record"
    assert rule_id in fresh_outputs, f"{rule_id}: the evidence runner stopped before this snippet"
    got = fresh_outputs[rule_id]
    for _ in range(ev.RERUNS if entry.race else 0):   # a framework race: the usual output wins
        if ev.normalise(got) == ev.normalise(entry.output):
            break
        got = _run_alone(entry)
    assert ev.normalise(got) == ev.normalise(entry.output)


def _run_alone(entry):
    """What ``entry``'s snippet prints in a fresh interpreter of its own."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return _outputs([entry], Path(tmp) / "outputs.jsonl", timeout=hang_limit(75)).get(entry.rule, "")


def test_only_a_snippet_with_a_race_is_run_again():
    raced = [rule for rule, entry in EVIDENCE.items() if entry.race]
    assert raced == ["forward_levels.threads-enter-exit-rounds"]   # each one a known race


def test_check_on_another_release_reports_its_differences(monkeypatch, capsys, torch_213):
    from conformance.evidence import __main__ as cli

    entry = ev.Evidence("engine.x", "print('now')", "then", "", ev.DIRECTORY / "engine.toml")
    monkeypatch.setattr(ev, "load", lambda: {"engine.x": entry})
    monkeypatch.setattr(torch_213, "__version__", "1.13.1")
    assert cli.main(["--check", "engine"]) == 1
    out = capsys.readouterr().out
    assert "torch 1.13.1: the evidence was recorded on torch 2.13" in out
    assert "DIFFERS engine.x" in out and "1 snippets run, 1 differ" in out
    assert cli.main(["--record", "engine"]) == 4  # another release's output never overwrites 2.13's
    assert "python -m conformance.history record" in capsys.readouterr().err


def test_a_forward_level_left_open_below_pythons_count_does_not_nest_the_next_snippet(torch_213):
    # code that ran earlier in the process entered a level through torch._C (Python's count says
    # none is open): the next forward-level snippet must still run at level 0, not fail nested
    torch_213._C._enter_dual_level()
    entry = next(e for r, e in EVIDENCE.items() if r.startswith("forward_levels."))
    assert ev.normalise(ev.run_snippet(entry.snippet)) == ev.normalise(entry.output)
