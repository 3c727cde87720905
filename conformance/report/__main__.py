"""``python -m conformance.report``: see ``build.main``. Without jinja2 (the ``report`` extra,
which an installed wheel may lack) it says what to install, exit 4, not a traceback."""
import sys

try:
    import jinja2  # noqa: F401 - the page's templates
except ImportError:
    from conformance.cli import usage_error

    sys.exit(usage_error("python -m conformance.report",
                         "needs jinja2, which is not installed: pip install "
                         "'autograd-conformance[report]' (or pip install jinja2)"))

from conformance.report.build import main

sys.exit(main())
