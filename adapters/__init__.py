"""Adapters: thin translation between the conformance suites and one framework.

An adapter tells the harness what it needs to know about a framework and nothing more:
its name, its version, the devices it runs on, its torch-shaped namespace (the module the
tests call as ``fw``), how to turn one of its tensors into numpy, and which features it
lacks. Tests read like the framework's own user code; the adapter translates only where
frameworks differ. See ``adapters/base.py`` for the contract.
"""
from adapters.base import Adapter, FrameworkNotInstalled, load_adapter, known_adapters
from conformance.outcome_exceptions import Unsupported

__all__ = ["Adapter", "Unsupported", "FrameworkNotInstalled", "load_adapter", "known_adapters"]
