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


def test_a_malformed_file_is_named(tmp_path):
    bad = tmp_path / "1.0.json"
    bad.write_text("{\"version\": \"1.0\"}")
    with pytest.raises(history.HistoryError, match="1.0.json: not a history file"):
        history.read(bad)
