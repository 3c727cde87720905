"""Moved to :mod:`conformance.model.catalogue`; this path stays for the suites, older reproduction scripts and third-party adapters that import it."""
import sys; import conformance.model.catalogue as _moved; sys.modules[__name__] = _moved  # noqa: E702
