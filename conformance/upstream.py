"""An upstream-ready bug report per root cause: text to paste into the framework's issue tracker.

Why: a root cause on the page is written for this project (rule ids, ``fw``, adapters); a
framework developer needs what their own tracker asks for: a script that imports only their
framework, what it prints there, what the expected behaviour prints (torch, or this project's
reference engine), the behaviour the report asks for in words (the rule's statement and
rationale) and the version. The witness of the cause (conformance/witness.py) is that script
once its ``fw`` is spelled as the framework's module (:func:`framework_spelling`).

Two places make it: ``python -m conformance.witness --adapter X --issue CAUSE`` (runs the
witness on the framework and on the comparison engine now) and the page (the output the run
recorded; the comparison output is one command away, named in the text).
"""
from __future__ import annotations

import io
import platform
import textwrap
import tokenize
from dataclasses import dataclass
from typing import Iterable


def framework_spelling(witness: str, module: str) -> str:
    """The witness with its name ``fw`` (bound to the framework's module when it runs) written
    as ``module``: ``fw.ones([2])`` -> ``paddle.ones([2])``. Only the name itself changes (an
    attribute or a string spelled ``fw`` stays); text that does not tokenize is returned as
    it is."""
    if not module or not module.isidentifier():
        return witness
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(witness).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return witness
    lines = witness.splitlines(keepends=True)
    edits = []
    previous = None
    for tok in tokens:
        if tok.type == tokenize.NAME and tok.string == "fw" and not (
                previous is not None and previous.type == tokenize.OP and previous.string == "."):
            edits.append(tok.start)
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            previous = tok
    for row, col in reversed(edits):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + module + line[col + 2:]
    return "".join(lines)


def standalone(preamble: str, module: str, witness: str) -> str:
    """The script a framework developer runs: the framework's import lines (the adapter's
    preamble: user code's own), then the witness in the framework's spelling."""
    head = preamble if preamble.endswith("\n") or not preamble else preamble + "\n"
    return head + framework_spelling(witness.strip("\n"), module) + "\n"


@dataclass
class Observed:
    """One engine's run of the script: who (``torch 2.13.0``), its status and output."""

    engine: str
    status: str          # conformance.witness.Result statuses
    output: str


@dataclass
class RuleText:
    id: str
    level: str
    statement: str
    rationale: str


def _fence(text: str, lang: str = "") -> str:
    body = (text or "").rstrip() or "(nothing)"
    fence = "````" if "```" in body else "```"
    return f"{fence}{lang}\n{body}\n{fence}"


def _wrap(text: str) -> str:
    return textwrap.fill(" ".join((text or "").split()), 96)


def report(*, framework: str, version: str | None, slug: str, summary: str,
           rules: Iterable[RuleText], script: str, observed: Observed | None,
           compared: Observed | None, comparison_hint: str = "", tests: Iterable[str] = (),
           python: str | None = None) -> str:
    """The report as Markdown (GitHub's and most trackers' format)."""
    rules = list(rules)
    name = f"{framework} {version}" if version else framework
    out = [f"### {name}: {_title(summary)}", "", _wrap(summary), ""]
    if rules:
        main, others = rules[0], rules[1:]
        out += ["**Expected behaviour** (autograd-conformance rule "
                f"`{main.id}`, {main.level}):", "", _wrap(main.statement), ""]
        if main.rationale:
            out += [_wrap("Why it matters: " + main.rationale), ""]
        for other in others:
            out += [f"The same cause breaks `{other.id}` ({other.level}): " + _wrap(other.statement), ""]
    if script:
        out += [f"**Reproduction** (imports only {framework}; exits non-zero where the "
                f"behaviour differs, 0 where it does not):", "", _fence(script, "python"), ""]
    else:
        out += ["**Reproduction**: no standalone script yet (the cause's expectations entries "
                "have no witness); the failing tests are named below.", ""]
    if observed is not None:
        out += [f"**Output with {observed.engine}** ({_status_words(observed.status)}):", "",
                _fence(observed.output), ""]
    if compared is not None:
        out += [f"**Output with {compared.engine}**, the expected behaviour "
                f"({_status_words(compared.status)}):", "", _fence(compared.output), ""]
    elif comparison_hint:
        out += [comparison_hint, ""]
    env = [f"{framework} {version or '(version unknown)'}",
           f"Python {python or platform.python_version()}"]
    out += ["**Environment**: " + ", ".join(env) + ".", ""]
    found = list(tests)
    out.append(f"Found by the autograd-conformance suite (root cause `{slug}`"
               + (f"; tests: {', '.join(found[:4])}{' ...' if len(found) > 4 else ''}" if found else "")
               + ").")
    return "\n".join(out) + "\n"


def _title(summary: str, width: int = 100) -> str:
    """The summary's first sentence (or clause), short enough for an issue's title."""
    text = " ".join((summary or "").split())
    for stop in (". ", ": ", "; ", ", "):
        head = text.split(stop, 1)[0]
        if len(head) <= width:
            return head.rstrip(".")
    return text[:width - 1].rstrip() + "…"


def _status_words(status: str) -> str:
    return {"reproduces": "the script shows the difference: a non-zero exit status",
            "does not reproduce": "exit status 0: the behaviour the rule asks for",
            "error": "the script failed before it could tell",
            "no witness": "no script"}.get(status, status)


def page_report(run, cause, catalogue) -> str | None:
    """The report of a ranked ``cause`` of ``run`` (a results.json column) as the page shows
    it: the witness's output recorded by the run, the comparison one command away; None for
    a cause without a witness script."""
    from conformance.repro.derive import framework_of

    witness = cause.witness
    if witness is None or not witness.script:
        return None
    module, preamble = framework_of(run.adapter_to_load)
    if module:
        script = standalone(preamble, module, witness.script)
    else:  # a third party's adapter: the page loads none, so it cannot name the module
        module = run.framework
        script = f"# fw: {run.framework}'s module (import it as fw)\n" + witness.script.strip("\n") + "\n"
    by_id = {e.id: e for e in catalogue}
    rules = [RuleText(e.id, e.level, e.statement, e.rationale)
             for e in (by_id.get(r) for r in cause.rules) if e is not None]
    return report(framework=module, version=run.framework_version, slug=cause.id,
                  summary=cause.summary, rules=rules, script=script,
                  observed=Observed(f"{module} {run.framework_version or ''}".strip(),
                                    witness.status or "", witness.output),
                  compared=None, tests=cause.tests, python=run.header.python,
                  comparison_hint=(f"Its output on torch (or the reference engine) beside this one: "
                                   f"`python -m conformance.witness --adapter "
                                   f"{run.adapter_to_load} --issue {cause.id}`."))
