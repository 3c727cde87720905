"""conformance/history/__init__.py: what an observation says against today's output, release
order, releases derived for versions an adapter does not list."""
import pytest

from conformance import history


@pytest.mark.parametrize("output, status", [
    ("True", "same"),
    ("False", "differs"),
    ("uncaught ImportError: No module named 'torch.autograd.forward_ad'", "absent"),
    ("first line\nuncaught ModuleNotFoundError: No module named 'torch.utils.weak'", "absent"),
    ("uncaught AttributeError: module 'torch' has no attribute 'set_warn_always'", "absent"),
    ("uncaught TypeError: backward() got an unexpected keyword argument 'inputs'", "absent"),
    ("uncaught AttributeError: 'NoneType' object has no attribute 'tolist'", "differs"),
    ("uncaught AttributeError: 'Tensor' object has no attribute 'tag'", "differs"),  # assigned below
    ("raises AttributeError: module 'torch' has no attribute 'x'", "differs"),  # caught: behaviour
    ("timed out: no output for 60 s", "differs"),
])
def test_status(output, status):
    assert history.status(output, "True", snippet="x.tag = 'mine'\nprint(x.tag)") == status


def test_versions_sort_as_releases():
    assert sorted(["2.0.1", "1.13.1", "1.2.0", "2.13.0+cpu"], key=history.version_key) == \
        ["1.2.0", "1.13.1", "2.0.1", "2.13.0+cpu"]


def test_a_release_candidate_comes_before_its_release(tmp_path):
    """The hand-written key (digits only) read 2.0.0rc1 as 2.0.0.1, after 2.0.0: a history
    with both listed them the wrong way round and release_for took the candidate's pins."""
    for version in ("2.0.0", "2.0.0rc1", "1.13.1"):
        history.write(history.data_path("fw", version, tmp_path),
                      {"version": version, "observations": {}})
    assert [d["version"] for d in history.load("fw", tmp_path)] == ["1.13.1", "2.0.0rc1", "2.0.0"]
    releases = ({"version": "2.0.0rc1", "python": "3.8", "install": ["fw==2.0.0rc1", "rc-pin"]},
                {"version": "2.0.0", "python": "3.11", "install": ["fw==2.0.0"]})
    assert history.release_for(releases, "fw", "2.0.1")["python"] == "3.11"
    assert history.release_for(releases, "fw", "2.0.0b1")["python"] == "3.8"  # before both


RELEASES = ({"version": "1.2.0", "python": "3.7", "install": ["torch==1.2.0", "numpy<2"]},
            {"version": "2.13.0", "python": "3.11", "install": ["torch==2.13.0"]})


def test_an_unlisted_release_takes_the_python_and_pins_of_the_one_before():
    assert history.release_for(RELEASES, "torch", "1.12.1") == \
        {"version": "1.12.1", "python": "3.7", "install": ["torch==1.12.1", "numpy<2"]}
    assert history.release_for(RELEASES, "torch", "2.14.1")["python"] == "3.11"
    assert history.release_for(RELEASES, "torch", "1.0.0")["python"] == "3.7"
    assert history.release_for(RELEASES, "torch", "1.2.0") == RELEASES[0]


def test_named_releases():
    assert history.named_releases("torch", "torch==2.14.1, paddle==3.0 torch==1.12.1") == \
        ["2.14.1", "1.12.1"]
    with pytest.raises(history.HistoryError, match="is not <adapter>==<version>"):
        history.named_releases("torch", "torch=2.14.1")


def test_a_release_of_no_adapter_is_refused_where_the_adapters_are_known():
    """``AUTOGRAD_CONFORMANCE_RELEASES=tourch==2.14.1`` added no column and said nothing."""
    with pytest.raises(history.HistoryError, match="'tourch==2.14.1' names no built-in adapter"):
        history.named_releases("torch", "tourch==2.14.1", known=("torch", "paddle"))
    assert history.named_releases("torch", "paddle==3.0", known=("torch", "paddle")) == []


def test_a_malformed_file_is_named(tmp_path):
    bad = tmp_path / "1.0.json"
    bad.write_text("{\"version\": \"1.0\"}")
    with pytest.raises(history.HistoryError, match="1.0.json: not a history file"):
        history.read(bad)


@pytest.mark.parametrize("content, words", [
    ('{"version": "1.0", "observations": {"a.b": [1]}}', "observation 'a.b' is list"),
    ('{"version": "1.0", "observations": {"a.b": {"output": 3, "digest": "d"}}}',
     "field 'output' is int 3"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
])
def test_a_history_file_of_the_wrong_shape_is_one_historyerror(tmp_path, content, words):
    """An observation that was no object was an AttributeError in merge and changes; deep
    nesting a RecursionError."""
    path = tmp_path / "1.0.json"
    path.write_text(content)
    with pytest.raises(history.HistoryError, match=words) as caught:
        history.read(path)
    assert "\n" not in str(caught.value)


def test_merge_copies_nothing_when_one_source_file_is_bad(tmp_path):
    """It copied the files before the bad one, then stopped: half a merge."""
    from conformance.history.merge import merge

    source = tmp_path / "src" / "torch"
    source.mkdir(parents=True)
    (source / "1.0.json").write_text('{"version": "1.0", "observations": {}}')
    (source / "2.0.json").write_text("{")
    with pytest.raises(history.HistoryError, match="2.0.json"):
        merge([tmp_path / "src"], tmp_path / "dst")
    assert not (tmp_path / "dst").exists()


def test_merge_refuses_a_file_whose_name_is_not_its_release(tmp_path):
    from conformance.history.merge import merge

    source = tmp_path / "src" / "torch"
    source.mkdir(parents=True)
    (source / "{{x}}.json").write_text('{"version": "../../x", "observations": {}}')
    with pytest.raises(history.HistoryError, match="holds release '../../x'"):
        merge([tmp_path / "src"], tmp_path / "dst")


@pytest.mark.parametrize("version", ["../../x", "a/b", "", "-1", ".1"])
def test_a_version_that_is_no_release_number_is_refused(version):
    """``record torch ../../x`` wrote ../../x.json outside the history folder."""
    with pytest.raises(history.HistoryError, match="is not a release number"):
        history.release_version(version)


@pytest.mark.parametrize("layout", ["empty", "files at the top", "other files"])
def test_merge_of_a_folder_without_release_files_says_so_exit_4(tmp_path, capsys, layout):
    """It exited 0 and printed nothing: a wrong folder looked like a merge that found
    nothing newer. One line naming the folder, exit 4, nothing copied."""
    from conformance.history.__main__ import main

    empty, good = tmp_path / "empty", tmp_path / "good" / "torch"
    empty.mkdir()
    good.mkdir(parents=True)
    (good / "1.0.json").write_text('{"version": "1.0", "observations": {}}')
    if layout == "files at the top":  # the adapter's folder given instead of history's
        (empty / "1.0.json").write_text('{"version": "1.0", "observations": {}}')
    elif layout == "other files":
        (empty / "torch").mkdir()
        (empty / "torch" / "notes.txt").write_text("x")
    status = main(["merge", str(tmp_path / "good"), str(empty), "--directory",
                   str(tmp_path / "dst")])
    err = capsys.readouterr().err
    assert status == 4
    assert "no release files" in err and str(empty) in err and "nothing to merge" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "dst").exists()
