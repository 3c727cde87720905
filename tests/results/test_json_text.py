"""conformance.results.json_text: the reader every JSON file of the harness goes through.

Each test names the input that beat the readers before it (issue 28, third round)."""
from __future__ import annotations

import json
import os
import threading

import pytest

from conformance.results import json_text
from tests.hang import hang_limit


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    """A FIFO named like results.json blocked every reader forever (no writer ever came)."""
    fifo = tmp_path / "results.json"
    os.mkfifo(fifo)
    done = []
    reader = threading.Thread(target=lambda: done.append(_error_of(fifo)), daemon=True)
    reader.start()
    reader.join(hang_limit(7))
    if not done:  # unblock the reader, then fail
        with open(fifo, "w"):
            pass
        pytest.fail("reading a FIFO blocked")
    assert isinstance(done[0], json_text.NotARegularFile)
    assert "not a regular file" in done[0].strerror


def _error_of(path):
    try:
        json_text.read_bytes(path)
    except OSError as exc:
        return exc
    return None


def test_a_directory_is_isadirectoryerror(tmp_path):
    with pytest.raises(IsADirectoryError):
        json_text.read_text(tmp_path)


def test_a_regular_file_is_read_and_decoded(tmp_path):
    path = tmp_path / "a.json"
    path.write_bytes(b'{"a": "\xc3\xa9"}')
    assert json_text.loads(json_text.read_text(path)) == {"a": "é"}
    path.write_bytes(b"\xff")
    with pytest.raises(UnicodeDecodeError):
        json_text.read_text(path)
    assert json_text.read_text(path, errors="replace") == "\ufffd"


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_are_kept_as_text(token):
    """json.loads made them floats, which went out into results.json as bare NaN (no other
    JSON reader reads it); kept as text, a number field holding one is refused by the type
    check and a field of any value is written out as valid JSON."""
    value = json_text.loads(f'{{"duration": {token}}}')
    assert value == {"duration": token}
    json.dumps(value, allow_nan=False)


def test_deep_nesting_is_a_valueerror_not_a_recursionerror():
    """RecursionError is no ValueError: every reader let it through as a traceback."""
    with pytest.raises(ValueError, match="nested too deeply"):
        json_text.loads("[" * 100_000 + "]" * 100_000)
