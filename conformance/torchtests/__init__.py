"""``python -m conformance.torchtests``: PyTorch's own lifetime tests, run on torch and on the reference.

Measures how much of PyTorch's ``test/test_autograd.py`` that concerns object lifetimes would
pass with the reference engine in torch's place. Nothing of PyTorch's is shipped here: the tool
reads a copy of the test file the user points it at. Read in this order: ``selection`` (which
tests, and the lifetime concept each covers: ``lifetime.toml``), ``source`` (the test file,
parsed), ``aliasing`` (``import torch`` resolving to ``reference``; a missing name becomes a
placeholder that names itself when used), ``testcase`` (the stand-in for PyTorch's testing
helpers, the same for both engines), ``classify`` (why a test failed on the reference),
``worker`` (runs tests in a child process on one engine), ``run`` (drives the workers and
combines the two engines' outcomes), ``__main__`` (the command line).
"""
