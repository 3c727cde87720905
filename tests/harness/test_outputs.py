"""Outputs written whole or not at all, and sets of outputs replaced together
(conformance.outputs)."""
from __future__ import annotations

import pytest

from conformance.outputs import OutputError, Outputs, write_text


def test_a_set_is_replaced_together(tmp_path):
    (tmp_path / "a.txt").write_text("old a")
    out = Outputs()
    out.add(tmp_path / "a.txt", "new a")
    out.add(tmp_path / "sub" / "b.txt", b"new b")
    out.commit()
    assert (tmp_path / "a.txt").read_text() == "new a"
    assert (tmp_path / "sub" / "b.txt").read_text() == "new b"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a.txt", "b.txt", "sub"]  # no temps


def test_when_one_file_cannot_be_written_none_is_replaced(tmp_path):
    (tmp_path / "a.txt").write_text("old a")
    (tmp_path / "blocker").write_text("a file where a directory should be")
    out = Outputs()
    out.add(tmp_path / "a.txt", "new a")
    out.add(tmp_path / "blocker" / "b.txt", "new b")
    with pytest.raises(OutputError, match="blocker/b.txt: cannot write it"):
        out.commit()
    assert (tmp_path / "a.txt").read_text() == "old a"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "blocker"]


def test_a_lone_surrogate_is_written_escaped_instead_of_failing(tmp_path):
    path = write_text(tmp_path / "p.html", "message: \udc80 end")
    assert path.read_bytes() == b"message: \\udc80 end"


def test_a_directory_in_the_way_is_refused(tmp_path):
    (tmp_path / "index.html").mkdir()
    with pytest.raises(OutputError, match="is a directory"):
        write_text(tmp_path / "index.html", "x")


def test_permissions_are_those_of_the_file_replaced_or_of_a_new_file(tmp_path):
    old = tmp_path / "old.txt"
    old.write_text("x")
    old.chmod(0o640)
    write_text(old, "y")
    assert old.stat().st_mode & 0o777 == 0o640
    new = write_text(tmp_path / "new.txt", "y")
    plain = tmp_path / "plain.txt"
    plain.write_text("y")  # what open() gives under this umask
    assert new.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777


def test_a_removal_happens_with_the_renames_and_never_when_the_set_fails(tmp_path):
    (tmp_path / "old.xml").write_text("a run no longer reported")
    (tmp_path / "blocker").write_text("a file where a directory should be")
    failing = Outputs()
    failing.add(tmp_path / "blocker" / "b.txt", "new b")
    failing.remove(tmp_path / "old.xml")
    with pytest.raises(OutputError):
        failing.commit()
    assert (tmp_path / "old.xml").exists()
    out = Outputs()
    out.add(tmp_path / "new.xml", "new")
    out.remove(tmp_path / "old.xml")
    out.remove(tmp_path / "new.xml")  # a file of the new set is never removed
    out.remove(tmp_path / "gone.xml")  # nor is one already gone an error
    out.commit()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker", "new.xml"]


def test_a_target_that_is_no_regular_file_is_never_renamed_over(tmp_path):
    """``--out /dev/full`` renamed the page over the device (as root: /dev/full was gone)."""
    import os

    fifo = tmp_path / "page.html"
    os.mkfifo(fifo)
    out = Outputs()
    out.add(tmp_path / "other.json", "{}")
    out.add(fifo, "page")
    with pytest.raises(OutputError, match="not a regular file"):
        out.commit()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html"]
    assert not fifo.is_file()
