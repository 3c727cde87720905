"""``<label>.status.json``: written whole by nox -s report, read back typed; anything else in
its place is refused naming the file, never read as "not installed" (which CI forgives)."""

import pytest

from conformance.results import ResultsSchemaError
from conformance.results.column_status import (MISSING, NOT_INSTALLED, ColumnStatus,
                                               clear_status, read_status, status_path,
                                               write_status)


def test_a_written_status_reads_back_and_clears(tmp_path):
    assert read_status(tmp_path, "paddle") is None
    write_status(tmp_path, "paddle", ColumnStatus(NOT_INSTALLED, "pip failed"))
    status = read_status(tmp_path, "paddle")
    assert status == ColumnStatus(NOT_INSTALLED, "pip failed") and status.not_installed
    write_status(tmp_path, "paddle", ColumnStatus(MISSING, "no results"))
    assert not read_status(tmp_path, "paddle").not_installed
    clear_status(tmp_path, "paddle")
    assert read_status(tmp_path, "paddle") is None and not list(tmp_path.iterdir())


def test_only_the_two_statuses_exist():
    with pytest.raises(ValueError, match="'installed'"):
        ColumnStatus("installed")


@pytest.mark.parametrize("content, words", [
    ("{", "JSONDecodeError"),
    ("[]", "a JSON list, not an object"),
    ('{"status": 1}', "field 'status' is int 1, expected a string"),
    ('{"status": "not installed"}', "status 'not installed' is neither"),  # a typo is no warning
    ('{"status": "missing", "detail": ["x"]}', "field 'detail' is list"),
])
def test_anything_else_is_refused_naming_the_file(tmp_path, content, words):
    status_path(tmp_path, "paddle").write_text(content)
    with pytest.raises(ResultsSchemaError) as info:
        read_status(tmp_path, "paddle")
    assert str(info.value).startswith(f"{status_path(tmp_path, 'paddle')}: not a status file")
    assert words in str(info.value) and str(info.value).endswith("remove it")
