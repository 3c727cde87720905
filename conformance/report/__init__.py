"""Comparison reports: results.json (versioned schema), JUnit XML per run, and the HTML page
with the rule-by-framework matrix, leak-chain pictures and reproduction scripts made from each run.

Modules: :mod:`aggregate` (the matrix and counts, from the cells of
:mod:`conformance.results.cells`), :mod:`rootcause`, :mod:`junit`, :mod:`html` (+
``templates/index.html.j2``), :mod:`svg` (keep-alive chains), :mod:`build` (the command line:
``python -m conformance.report``; every output replaced together). results.json's layout and
its migrations are :mod:`conformance.results.combined` and :mod:`conformance.results.migrations`. The scripts in each cell come from
:mod:`conformance.repro`; leak chains are recorded at run time by :mod:`conformance.leakchains`.
"""
