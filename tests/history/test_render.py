"""conformance/history/render.py: since which release today's output holds, the changes between
releases with their upstream note, stale entries marked."""
import json

from conformance import evidence as ev
from conformance import history
from conformance.history import render

SNIPPET = "print(x)"
EVIDENCE = {"s.rule": ev.Evidence("s.rule", SNIPPET, "new", "", None),
            "s.api": ev.Evidence("s.api", "print(y)", "y", "", None)}


def _release(directory, version, outputs, snippet=SNIPPET):
    obs = {rule: {"output": out, "digest": history.digest(ev.PRELUDE, snippet if rule == "s.rule" else "print(y)")}
           for rule, out in outputs.items()}
    history.write(history.data_path("fw", version, directory),
                  {"adapter": "fw", "version": version, "observations": obs})


def _folder(tmp_path, stale=False):
    _release(tmp_path, "1.0.0", {"s.rule": "old at 0x7f0012ab34", "s.api": "uncaught ImportError: no y"})
    _release(tmp_path, "1.10.0", {"s.rule": "old at 0x7f99887766", "s.api": "y"})
    _release(tmp_path, "2.0.0", {"s.rule": "new", "s.api": "y"}, snippet="edited" if stale else SNIPPET)
    (tmp_path / "fw" / "upstream.toml").write_text(
        'framework = "FW"\n[[change]]\nrelease = "2.0.0"\nrules = ["s.rule"]\n'
        'what = "PR 1: the rework"\nurl = "https://example.org/pr/1"\n')
    return tmp_path


def test_since_and_before(tmp_path):
    found = render.timelines(EVIDENCE, _folder(tmp_path))
    first, before = render.since(found["fw"]["s.rule"])
    assert (first.version, before.version, before.status) == ("2.0.0", "1.10.0", "differs")
    first, before = render.since(found["fw"]["s.api"])
    assert (first.version, before.version, before.status) == ("1.10.0", "1.0.0", "absent")


def test_changes_ignore_addresses_and_carry_the_upstream_note(tmp_path):
    changes = render.changes(EVIDENCE, _folder(tmp_path))
    assert [(c.rule, c.after.version, c.kind, c.upstream) for c in changes] == [
        ("s.api", "1.10.0", "arrives", ""), ("s.rule", "2.0.0", "changes", "PR 1: the rework")]


def test_report_section_lists_changes_not_arrivals(tmp_path):
    page = render.report_section(EVIDENCE, _folder(tmp_path))
    assert "FW's lifetime changes by release" in page
    assert "PR 1: the rework <code>https://example.org/pr/1</code>" in page and "href=\"https" not in page
    assert "1 changes; 0 where only a message's wording changed" in page and "1 where the API arrives" in page and "stale" not in page.split("</p>", 1)[1]


def test_stale_entries_are_marked(tmp_path):
    folder = _folder(tmp_path, stale=True)
    assert "<em>stale</em>" in render.report_section(EVIDENCE, folder)
    fragment = render.spec_fragment("s.rule", render.timelines(EVIDENCE, folder))
    assert "=*</td>" in fragment and "stale: the snippet was edited" in fragment


def test_spec_fragment_says_what_it_was_before(tmp_path):
    fragment = render.spec_fragment("s.rule", render.timelines(EVIDENCE, _folder(tmp_path)))
    assert "today&#x27;s output holds since fw 2.0.0; before, in 1.10.0, it printed:" in fragment
    assert "<pre>old at 0x7f99887766</pre>" in fragment
    assert render.spec_fragment("s.other", render.timelines(EVIDENCE, tmp_path)) == ""


def test_merge_takes_missing_and_more_current_files(tmp_path):
    from conformance.history.merge import merge

    here, there = tmp_path / "here", tmp_path / "there"
    evidence = ev.load()
    rule = sorted(evidence)[0]
    current = {rule: {"output": "x", "digest": history.digest(ev.PRELUDE, evidence[rule].snippet)}}
    history.write(history.data_path("fw", "1.0", there), {"version": "1.0", "observations": current})
    history.write(history.data_path("fw", "2.0", there), {"version": "2.0", "observations": {}})
    history.write(history.data_path("fw", "2.0", here), {"version": "2.0", "observations": current})
    lines = merge([there], here)
    assert [line.split()[0] for line in lines] == ["took", "kept"]
    assert json.loads(history.data_path("fw", "1.0", here).read_text())["observations"] == current
    assert history.read(history.data_path("fw", "2.0", here))["observations"] == current


def test_a_reworded_message_is_not_a_change_of_behaviour():
    assert render.reworded("raises RuntimeError: old words\nok", "raises RuntimeError: new words\nok")
    assert not render.reworded("raises RuntimeError: x", "raises TypeError: x")
    assert not render.reworded("raises RuntimeError: x", "ok")
    assert not render.reworded("freed: False", "freed: True")


def test_a_rule_added_since_is_named_with_the_releases_that_lack_it(tmp_path):
    """Issue 32 item 4: a new rule with no history yet is a state the pages show, not an
    error; a rule recorded under some releases names the others."""
    folder = _folder(tmp_path)
    _release(folder, "2.1.0", {"s.rule": "new", "s.api": "y", "s.half": "z"})
    evidence = {**EVIDENCE, "s.new": ev.Evidence("s.new", "print(z)", "z", "", None),
                "s.half": ev.Evidence("s.half", "print(z)", "z", "", None)}
    missing = render.unrecorded(evidence, folder)
    assert missing == {"fw": {"s.half": ["1.0.0", "1.10.0", "2.0.0"],
                              "s.new": ["1.0.0", "1.10.0", "2.0.0", "2.1.0"]}}
    found = render.timelines(evidence, folder)
    new = render.spec_fragment("s.new", found, missing)
    assert "<dt>History (fw)</dt>" in new
    assert "Not yet recorded under these releases: 1.0.0, 1.10.0, 2.0.0 and 2.1.0" in new
    assert "<code>nox -s history</code> records it" in new
    half = render.spec_fragment("s.half", found, missing)
    assert "2.1.0" in half.split("Not yet")[0] and "these releases: 1.0.0, 1.10.0 and 2.0.0" in half
    assert "Not yet" not in render.spec_fragment("s.rule", found, missing)
    page = render.report_section(evidence, folder)
    assert "2 rule(s) not yet recorded under these releases" in page
    assert '<a href="spec.html#s.new">s.new</a>: 1.0.0, 1.10.0, 2.0.0 and 2.1.0' in page
    assert any(line.startswith("fw s.new: not yet recorded under 1.0.0")
               for line in render.text(evidence, folder))


def test_a_history_with_only_unrecorded_rules_still_has_its_section(tmp_path):
    _release(tmp_path, "1.0.0", {"s.rule": "new"})
    page = render.report_section({**EVIDENCE}, tmp_path)
    assert "1 rule(s) not yet recorded" in page and "spec.html#s.api" in page
