"""Differentiable operations: each is a forward on arrays plus the graph node it records.

Modules: ``recording`` (how any op joins the graph), ``pointwise``, ``reduction``,
``linalg``, ``views``, ``inplace``; ``backward_ops`` is the small op-set backward
formulas are written against (raw arrays, or tensors under ``create_graph``); ``methods``
installs the ops on Tensor as its operators and methods.
"""
