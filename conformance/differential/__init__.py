"""Model-based differential testing: random autograd programs run on the reference and on a
framework, their observations compared (issue 6; docs/differential.md).

Modules, in reading order:

* ``program``     the program language: one dataclass per step, each renders to plain Python;
* ``gate``        what each step needs of a framework (read from its source through the
                  feature registry), which steps a run leaves out and why, the variants' tries;
* ``strategies``  hypothesis strategies that build valid programs from a model of the state;
* ``interpreter`` runs a program's steps on a framework and collects its observation trace;
* ``compare``     compares two traces (per-dtype tolerances) and names the first divergence;
* ``render``      a divergence as a standalone script for the diverging framework;
* ``worker``      the interpreter in a subprocess (frameworks that may crash);
* ``runner``      targets, the search loop, shrinking, the results file and the CLI
                  (``python -m conformance.differential --adapter torch --examples 300``).

This package imports nothing heavy at import time: ``worker`` runs under other Pythons
(OneFlow's 3.10 venv) where hypothesis may be missing.
"""
