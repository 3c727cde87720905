"""Standalone reproduction scripts: one per (rule, framework), for the report's cells.

Modules: :mod:`derive` (a script from a rule's suite test), :mod:`run` (runs scripts and reads
their ``RESULT:`` line). ``templates/<rule id>.py`` are hand-written scripts that replace the
derived one for their rule, where the derived one would not be standalone (a test that starts a
helper interpreter with harness code) or where an upstream issue needs a script that shows the
behaviour itself (the alternating ``id(a.grad)`` values).

A template is a plain Python script with three placeholders, replaced by plain text:
``{preamble}`` (the lines that import the framework as user code does: ``import torch``, or
OneFlow's CUDA-library preloading then ``import oneflow``), ``{fw}`` (the framework's import
name) and ``{device}``. It must end by printing ``RESULT: PASS`` or ``RESULT: <OUTCOME>: why``
with the outcome the conformance harness gives the rule (PASS, DIVERGES, UNSUPPORTED, ERROR).
"""
