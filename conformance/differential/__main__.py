"""``python -m conformance.differential``: see ``runner.main``."""
import sys

from conformance.differential.runner import main

sys.exit(main())
