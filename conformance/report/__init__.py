"""Comparison reports: results.json (versioned schema), JUnit XML per run, and the HTML page
with the rule-by-framework matrix, leak-chain pictures and reproduction scripts made from each run.

Modules: :mod:`schema` (results.json), :mod:`aggregate` (cells and counts), :mod:`junit`,
:mod:`html` (+ ``templates/index.html.j2``), :mod:`svg` (keep-alive chains), :mod:`build` (the
command line: ``python -m conformance.report``). The scripts in each cell come from
:mod:`conformance.repro`; leak chains are recorded at run time by :mod:`conformance.leakchains`.
"""
