"""The conformance suites and the pytest plugin that runs them against an adapter."""
