"""What the project declares, typed and loaded once per run (``conformance.results`` holds what a
run observed). Every reader of a declaration file goes through this package; no other module
parses one (``tests/model/test_structure.py`` fails if one does). One concept per module:

* :mod:`~conformance.model.catalogue`: the rules (``conformance/catalogue/<suite>.toml``).
* :mod:`~conformance.model.features`: the feature registry (``conformance/features.toml``) and
  which suite test needs which feature.
* :mod:`~conformance.model.expectations`: an adapter's expectations file, typed
  (:class:`Expectation`), read once per file per run.
* :mod:`~conformance.model.causes`: the root causes an expectations file declares, one
  :class:`Cause` type, its kind (breaks / unsupported) decided by one rule.
* :mod:`~conformance.model.evidence`: the evidence entries (``conformance/evidence/<suite>.toml``).
* :mod:`~conformance.model.reference_scope`: which reference names the rules cover
  (``reference/scope.toml``).
* :mod:`~conformance.model.suite_index`: which tests check which rule and what each touches,
  read from the suites' source.
* :mod:`~conformance.model.suite_source`: the suites' source a run used (working tree or git).

The old module paths (``conformance.rules``, ``conformance.features``,
``conformance.expectations``, ``conformance.reference_scope``, ``conformance.suite_index``,
``conformance.repro.source``) stay as one-line aliases for the suites, older reproduction
scripts and third-party adapters.
"""
