"""What an error message must mean, as regexes that accept the plain synonyms users write.

Why one home: a rule about an error's *meaning* must not depend on one framework's sentence.
Each pattern lists the words that say the same thing ("backward twice", "a second time",
"already been freed"), so a message that says it in other words still passes, and a new synonym
is added here once for every suite.
"""
from __future__ import annotations

__all__ = ["GRAPH_FREED", "GRAPH_FREED_CAUSE", "RETAIN_GRAPH", "GRAPH_FREED_SAYS_WHAT_TO_DO", "MISSING_FORWARD",
           "MISSING_BACKWARD", "NOT_AN_INPUT", "REQUIRES_GRAD", "SCALAR", "SHAPE", "ALLOW_UNUSED",
           "DTYPE"]

_FREED = (r"second time|backward twice|\btwice\b|more than once|already been freed|"
          r"\bfreed\b|\breleased\b|\bcleared\b|no longer (available|exists?)")
_RETAIN = r"retain_graph|retain[ _-]?graph|retain the graph|keep the graph"
#: The graph (or its saved tensors) is gone: a second backward through it, or a read after
#: backward (named by its cause or by its remedy).
GRAPH_FREED = rf"(?is){_FREED}|{_RETAIN}"
#: The cause alone (the graph or its saved tensors were freed).
GRAPH_FREED_CAUSE = rf"(?is){_FREED}"
#: The remedy: keep the graph (``retain_graph=True``).
RETAIN_GRAPH = rf"(?is){_RETAIN}"
#: Names the cause and the remedy, in either order.
GRAPH_FREED_SAYS_WHAT_TO_DO = rf"(?is)(?=.*(?:{_FREED}))(?=.*(?:{_RETAIN}))"
#: A custom Function without forward.
MISSING_FORWARD = r"(?i)forward"
#: A custom Function without backward.
MISSING_BACKWARD = r"(?i)backward"
#: A tensor that is not an input of the Function.
NOT_AN_INPUT = r"(?i)not an? input|is not (one of )?the inputs?|not in (the )?inputs"
#: Backward of something that does not require grad.
REQUIRES_GRAD = r"(?i)requires? ?_?grad|stop_gradient|does not have a grad|no grad_fn|does not need grad"
#: A non-scalar output needs an explicit gradient.
SCALAR = r"(?i)scalar|single element|one element|numel"
#: A gradient of the wrong shape.
SHAPE = r"(?i)shape|size|dimension"
#: An input the output does not use.
ALLOW_UNUSED = r"(?i)allow_unused|allow unused|unused"
#: A value of another dtype (a hook's result of another precision than the gradient's).
DTYPE = r"(?i)dtype|\btypes?\b|precision|float(16|32|64)|double"
