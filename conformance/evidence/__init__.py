"""Evidence: the observed torch 2.13 behaviour each rule rests on, kept beside the catalogue.

One file per suite, ``conformance/evidence/<suite>.toml``, holds ``[[evidence]]`` entries:

    [[evidence]]
    rule = "<suite>.<rule-name>"     # the rule this entry grounds (one entry per rule)
    snippet = '''...'''              # Python run after PRELUDE below, in a fresh namespace
    output = '''...'''               # what the snippet printed on torch 2.13 (recorded, not typed)
    notes = "..."                    # optional: what the output shows, in plain words
    race = "..."                     # optional: why the output can differ in some runs (a race in
                                     # the framework itself); a check re-runs such a snippet
                                     # before it reports a difference

A rule's ``source`` in the catalogue names its entry as ``evidence:<suite>#<rule id>`` (and/or
public URLs). ``python -m conformance.evidence --record`` runs every snippet and writes the
outputs back; ``--check`` (the project test does the same) re-runs them and compares.

Why snippets and recorded output rather than prose: a reader can run the snippet and see the
same thing; a torch upgrade that changes the behaviour shows up as a failing comparison.
Snippets print only stable facts (booleans, values, exception class and first message line),
never addresses or paths.
"""
from __future__ import annotations

from conformance.evidence import runner
# the entries are declarations: read through the model (conformance.model.evidence)
from conformance.model.evidence import (DIRECTORY, FIELDS, SOURCE_PART, Evidence,  # noqa: F401
                                        EvidenceError, load, source_problems)

TORCH_VERSION = "2.13"

PRELUDE = '''\
import gc, sys, threading, warnings, weakref
import torch
try:
    import torch.autograd.forward_ad as fwAD
except ImportError as missing:  # a release before forward-mode AD: using fwAD raises this
    class _Absent:
        def __getattr__(self, name, _text=str(missing)):
            raise ImportError(_text)
    fwAD = _Absent()

def attempt(fn):
    """Call fn(); print 'ok' or 'raises <Class>: <first line of the message>'."""
    try:
        fn()
    except Exception as exc:
        print(f"raises {type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}")
    else:
        print("ok")

def warns(fn):
    """Call fn(); print each warning as '<Category>: <first line>', or 'no warning'."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    for w in caught:
        text = str(w.message).strip().splitlines()[0].split(" (Triggered internally at")[0]
        print(f"{w.category.__name__}: {text}")
    if not caught:
        print("no warning")
'''


#: how often a check runs a snippet with a ``race`` before it reports a difference
RERUNS = 4


def run_snippet(snippet: str) -> str:
    """What ``snippet`` prints after the prelude (conformance/evidence/runner.py runs it)."""
    return runner.run_snippet(PRELUDE, snippet)


def normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())
