"""adapters.base.Run: an adapter's runs are typed records; the noxfile and .ci/ read fields."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from adapters.base import Run, builtin_adapter_classes, report_runs, runs_of

ROOT = Path(__file__).resolve().parents[2]


def test_every_builtin_run_is_a_run_with_a_unique_label():
    runs = [run for _, run in report_runs()]
    assert runs and all(isinstance(run, Run) for run in runs)
    assert len({run.label for run in runs}) == len(runs)
    assert all(isinstance(run.install, tuple) for run in runs)


def test_a_dict_from_an_older_adapter_is_read_as_a_run_and_a_typo_is_refused():
    class Older:
        runs = ({"label": "x", "version": "1.0", "python": "3.11", "install": ["x==1.0"]},)

    (run,) = runs_of(Older)
    assert run == Run(label="x", version="1.0", python="3.11", install=("x==1.0",))
    assert run.required is True and run.pytest_args == ()
    Older.runs = ({"label": "x", "version": "1.0", "python": "3.11", "requried": False},)
    with pytest.raises(TypeError, match=r"unknown keys \['requried'\]"):
        runs_of(Older)


@pytest.mark.parametrize("path", ["noxfile.py", ".ci/check_results.py"])
def test_no_run_is_read_by_string_key(path):
    text = (ROOT / path).read_text(encoding="utf-8")
    fields = "|".join(f for f in Run.__dataclass_fields__ if f != "version")
    found = re.findall(rf"""\brun\w*\[["'](?:{fields})["']\]|\brun\w*\.get\(["']""", text)
    assert found == []
    assert all(runs_of(cls) == tuple(cls.runs) for cls in builtin_adapter_classes().values())
