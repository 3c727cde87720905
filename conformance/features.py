"""Moved to :mod:`conformance.model.features`; this path stays for the suites, older reproduction scripts and third-party adapters that import it (and ``python -m conformance.features``)."""
import sys; import conformance.model.features as _moved  # noqa: E702
sys.exit(_moved.main()) if __name__ == "__main__" else sys.modules.__setitem__(__name__, _moved)
