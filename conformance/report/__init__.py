"""Comparison reports: results.json (versioned schema), JUnit XML per run, and the HTML page
with the rule-by-framework matrix, leak-chain pictures and standalone reproduction scripts.

Modules: :mod:`schema` (results.json), :mod:`aggregate` (cells and counts), :mod:`junit`,
:mod:`html` (+ ``templates/index.html.j2``), :mod:`svg` (keep-alive chains), :mod:`repro`
(scripts), :mod:`chains` (pytest plugin recording leak chains), :mod:`build` (the command line:
``python -m conformance.report``).
"""
