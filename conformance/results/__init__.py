"""Results of conformance runs: the records, the files that hold them, and what they mean.

Every writer and every reader of results goes through this package; no other module reads a
results record by string key (``tests/results/test_structure.py`` fails if one does). One
concept per module:

* :mod:`~conformance.results.records`: the lines of a ``--results`` file as typed
  records, :class:`RunHeader`, :class:`TestRecord`, :class:`WitnessRecord`, :class:`RunEnd`; each class is the single
  list of its fields, ``to_json`` / ``from_json`` (field types checked, ``file:line`` and field
  named). Adding a field to the test record is one edit there plus its reader.
* :mod:`~conformance.results.phases`: the per-phase info the plugin attaches to pytest reports
  (it crosses from xdist workers to the controller), typed as a subset of the test record.
* :mod:`~conformance.results.run_file`: the ``--results`` file of one run: the writer
  (:class:`ResultsFile`, one writer at a time under a lock naming its pid), the assembly of
  phase reports into records (:class:`TestRecords`), the tallies (:class:`Tally`), and the
  reader (:func:`read_run`, :func:`end_line`).
* :mod:`~conformance.results.naming`: a test's names from its node id (the one place).
* :mod:`~conformance.results.cells`: the cell, what one run says about one rule (the one
  definition: most severe outcome, NOT RUN padding, flakiness), for the page, the repro check
  and the reproduction scripts.
* :mod:`~conformance.results.combined`: ``reports/results.json``, every run in one file, typed
  (:class:`Combined`, :class:`Column`); :mod:`~conformance.results.migrations`: the one table
  of format migrations for both documents; :mod:`~conformance.results.legacy`: what older
  harnesses left only in a message (the missing feature of an UNSUPPORTED line), read once by
  those migrations.
* :mod:`~conformance.results.findings`: the differential search's findings files.
* :mod:`~conformance.results.locks`: the locks beside a results file.
* :mod:`~conformance.results.labels`: a column's label, its results file's name, checked
  where results files are read.
* :mod:`~conformance.results.json_fields`: the one JSON type check (and its wording) of every
  file the harness reads back: results lines, findings lines, ``mutants.json``.
* :mod:`~conformance.results.column_status`: ``<label>.status.json``, why ``nox -s report``
  has no results for a column (not installed, or missing), and how a column is run (once
  more when it did not complete).

Standard library only (with :mod:`conformance.outcomes`): the noxfile and ``.ci/`` read
results with a bare Python. The header does not depend on the tools that read it: the suite
digest it records is computed by the writer (the plugin) and passed in.
"""
from __future__ import annotations

from conformance.results.errors import ResultsSchemaError
from conformance.results.findings import (EXPLORE_PREFIX, EXPLORE_SCHEMA, append_findings,
                                          explore_path, findings_lines, is_explore,
                                          read_findings)
from conformance.results.locks import locked
from conformance.results.json_fields import first_wrong, first_wrong_item
from conformance.results.migrations import COMBINED, COMBINED_VERSION, LINES, MIGRATIONS
from conformance.results.naming import function_name, test_name
from conformance.results.phases import PROPERTY, PhaseInfo, chain_of, phase_info
from conformance.results.records import (SCHEMA_VERSION, RunEnd, RunHeader, TestRecord,
                                         WitnessRecord)
from conformance.results.run_file import (ResultsFile, ResultsInUse, Run, Tally, TestRecords,
                                          end_line, git_revision, read_results, read_run,
                                          why_not_complete)

__all__ = [
    "COMBINED", "COMBINED_VERSION", "EXPLORE_PREFIX", "EXPLORE_SCHEMA", "LINES", "MIGRATIONS",
    "PROPERTY", "SCHEMA_VERSION", "PhaseInfo", "ResultsFile", "ResultsInUse",
    "ResultsSchemaError", "Run", "RunEnd", "RunHeader", "Tally", "TestRecord", "TestRecords",
    "WitnessRecord", "append_findings", "chain_of", "end_line", "explore_path", "findings_lines",
    "first_wrong", "first_wrong_item",
    "function_name", "git_revision", "is_explore", "locked", "phase_info", "read_findings",
    "read_results", "read_run", "test_name", "why_not_complete",
]
