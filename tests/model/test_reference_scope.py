"""reference/scope.toml accounts for every public name of the reference (conformance/reference_scope.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from conformance import reference_scope as scope
from conformance.rules import load_catalogue

ROOT = Path(__file__).resolve().parents[2]


def test_every_public_name_has_a_rule_or_a_reason():
    rule_ids = set(load_catalogue(ROOT / "conformance" / "catalogue").rules)
    found = scope.problems(scope.load(), scope.public_names(), rule_ids)
    assert not found, "reference/scope.toml:\n" + "\n".join(found)


def test_a_new_public_name_is_reported(monkeypatch):
    import reference

    monkeypatch.setattr(reference, "brand_new_op", lambda x: x, raising=False)
    monkeypatch.setattr(reference, "__all__", [*reference.__all__, "brand_new_op"])
    rule_ids = set(load_catalogue(ROOT / "conformance" / "catalogue").rules)
    found = scope.problems(scope.load(), scope.public_names(), rule_ids)
    assert found == ["reference.brand_new_op: a public name of the reference with no rule and no out-of-scope "
                     "reason (add it to reference/scope.toml)"]


def test_stale_names_unknown_rules_and_duplicates_are_reported():
    entries = [scope.Entry(("reference.gone", "reference.exp"), rules=("engine.no-such-rule",)),
               scope.Entry(("reference.exp",), reason="twice")]
    found = scope.problems(entries, {"reference.exp"}, {"engine.retain-grad"})
    assert found == ["engine.no-such-rule: no such rule in conformance/catalogue (named for reference.gone)",
                     "reference.gone: listed in reference/scope.toml but not a public name of the reference (remove it)",
                     "reference.exp: listed 2 times in reference/scope.toml"]


@pytest.mark.parametrize("text, complaint", [
    ('[[covered]]\nnames = ["reference.exp"]\n', "non-empty list 'rules'"),
    ('[[outside]]\nnames = ["reference.exp"]\nreason = " "\n', "non-empty 'reason'"),
    ('[[covered]]\nnames = []\nrules = ["x.y-z"]\n', "'names' must be a non-empty list"),
    ('[[elsewhere]]\nnames = ["reference.exp"]\n', "unknown table"),
    ('[[covered]\n', "not valid TOML"),
])
def test_malformed_scope_file_is_one_clear_error(tmp_path, text, complaint):
    path = tmp_path / "scope.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(scope.ScopeError, match=complaint):
        scope.load(path)


def test_rendered_section_links_rules_and_gives_reasons():
    page = scope.render_html()
    assert '<h2 id="reference-scope">' in page
    assert '<a href="#hooks.module-full-backward-hook-order">' in page
    assert "outside the lifetime scope:</span> numerical checks of gradients" in page
