"""``python -m conformance.differential``: see ``runner.main``.

Hypothesis is not among the package's own dependencies (an installed wheel may lack it): its
absence is one line saying what to install, exit 4, not a traceback."""
import sys

try:
    import hypothesis  # noqa: F401 - the search is built on it
except ImportError:
    from conformance.cli import usage_error

    sys.exit(usage_error("python -m conformance.differential",
                         "needs hypothesis, which is not installed: pip install hypothesis "
                         "(or the project's test extra: pip install 'autograd-conformance[test]')"))

from conformance.differential.runner import main

sys.exit(main())
