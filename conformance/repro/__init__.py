"""Reproduction scripts: one per (rule, run), for the report's cells, made from the run itself.

Modules: :mod:`source` (the suite source a run recorded: working tree or git revision),
:mod:`derive` (a script from a rule's suite tests at that revision, for the run's adapter spec,
framework version and device), :mod:`runtime` (what a script imports: the adapter, loaded by
the run's spec, and the harness's own classification), :mod:`run` (runs scripts and reads their
``RESULT:`` line) and :mod:`check` (``python -m conformance.repro.check``: do the scripts of a
sample of a results file's cells reproduce their outcomes?); :mod:`cells` makes the script of
every cell of a report (the page renderer only lays them out).

``templates/<rule id>.py`` are hand-written bodies that replace the derived tests for their
rule where an upstream issue needs a script that shows the behaviour itself (the alternating
``id(a.grad)`` values). A template defines ``test_script()`` (an ``assert`` that fails is
DIVERGES, as in a suite test); ``{fw}`` is replaced by the framework's name in the script and
``{preamble}`` by the lines that import it; ``device`` is a variable of the script. It runs
through the same runtime as a derived script.
"""
