"""docs/fw-surface.md lists exactly what the suites use on ``fw`` and ``adapter``."""
from conformance import fw_surface


def test_fw_surface_page_matches_the_suites():
    assert fw_surface.DOC.read_text(encoding="utf-8") == fw_surface.render(), \
        "docs/fw-surface.md is stale: run python -m conformance.fw_surface --write"


def test_contract_methods_used_by_the_suites_exist_on_the_base_adapter():
    from adapters.base import Adapter

    used = {name.split(".")[1] for name in fw_surface.scan()["adapter"]}
    missing = sorted(name for name in used if not hasattr(Adapter, name))
    assert not missing, f"suites call adapter methods the base Adapter lacks: {missing}"


def test_tensor_level_names_the_suites_use_are_listed_with_their_features():
    names = fw_surface.tensor_names()
    for name in ("register_hook", "requires_grad", "data", "grad", "view"):
        assert name in names, f"{name} missing from the tensor-level names"
    for plain in ("append", "alive", "two"):   # a list's, liveness's, a test's own ctx.two
        assert plain not in names
    # read through the adapter's translations (MyGrad holds them as creator / no attribute)
    assert "grad_fn" not in names and "is_leaf" not in names
    page = fw_surface.render()
    assert "| `adapter.grad_fn` |" in page and "| `register_hook` | tensor_hooks |" in page
