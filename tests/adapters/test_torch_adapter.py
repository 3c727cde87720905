"""adapters/torch_adapter.py: the preflight names a numpy torch cannot use in one line; the
releases the history records are ordered and each names its Python."""
import pytest

from adapters.torch_adapter import TorchAdapter
from conformance import history


class _Tensor:
    def numpy(self):
        raise RuntimeError("Numpy is not available")


class _Torch:
    __version__ = "1.13.1"

    def zeros(self, *shape):
        return _Tensor()


def test_numpy_torch_cannot_use_is_one_line():
    adapter = TorchAdapter()
    adapter._fw = _Torch()
    with pytest.raises(ValueError) as caught:
        adapter.check_device("cpu")
    text = str(caught.value)
    assert "\n" not in text
    assert "torch 1.13.1 cannot use numpy" in text and "(Numpy is not available)" in text
    assert "pip install 'numpy<2'" in text


def test_releases_are_oldest_first_with_a_python_each():
    versions = [r["version"] for r in TorchAdapter.releases]
    assert versions == sorted(versions, key=history.version_key)
    assert all(r["python"] in {"3.7", "3.8", "3.10", "3.11"} for r in TorchAdapter.releases)
    assert all(r["install"][0] == f"torch=={r['version']}" for r in TorchAdapter.releases)
    assert all(("numpy<2" in r["install"]) == r["version"].startswith("1.")
               for r in TorchAdapter.releases)


def test_columns_are_2_13_and_the_newest_required_and_1_13_optional():
    runs = {r.version: r for r in TorchAdapter.runs}
    newest = max((r["version"] for r in TorchAdapter.releases), key=history.version_key)
    assert runs["2.13.0"].required and runs[newest].required
    assert not runs["1.13.1"].required and "numpy<2" in runs["1.13.1"].install
