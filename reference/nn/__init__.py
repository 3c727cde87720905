"""``reference.nn``: the few pieces of torch.nn that autograd's own tests build models from.

``Parameter`` (a leaf tensor a module registers), ``functional`` (``relu``, ``linear``) and
``Module`` / ``Linear``: a module registers the parameters and submodules assigned to it and
calls ``forward``; full backward (pre-)hooks (``hooks``: the identity Function and the
per-call object they stand on); no forward hooks, buffers or state dicts (they are not here,
rather than here and different).
"""
from reference.nn import functional
from reference.nn.module import Linear, Module
from reference.nn.parameter import Parameter

__all__ = ["Linear", "Module", "Parameter", "functional"]
