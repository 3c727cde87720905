"""The reference autograd engine: pure Python on numpy (or cupy), PyTorch's names.

Read it top to bottom; each module imports only modules above it in this list (checked by
tests/reference/test_imports.py): ``array_backend`` (numpy or cupy), ``dtypes``,
``grad_mode``, ``handles`` (hook tables), ``tensor`` (the Tensor object), ``overrides`` (ops on
Tensor subclasses return the subclass, as torch's default ``__torch_function__``), ``storage`` (the memory
views share), ``serialization`` (pickling, save, load), ``creation``,
``utils.weak`` (weak tensor references keyed by identity), ``autograd.versions`` (version
counters bumped, set or preserved from outside), ``autograd.forward_ad`` (forward-mode levels
and tangents), ``autograd.hooks`` (running hooks during backward), ``autograd.accumulate`` (how
gradients land in ``.grad``), ``autograd.graph`` (nodes, saved tensors), ``ops.recording`` (how
an op joins the graph), ``autograd.marker_nodes`` (nodes that only raise, or send no gradient),
``ops.pointwise``, ``ops.reduction``, ``ops.linalg``, ``ops.views``, ``ops.inplace`` (each
op's forward and backward node), ``ops.backward_ops`` (the op-set backward formulas run on),
``autograd.engine`` (running backward), ``autograd.function`` (custom Functions),
``autograd.multi_hooks``, ``ops.methods`` (Tensor's op methods), ``autograd`` (backward, grad),
``autograd.gradcheck`` (gradients against finite differences; installed as ``autograd.gradcheck``),
``nn.parameter``, ``nn.functional``, ``nn.hooks`` (module backward hooks), ``nn.module`` (the few
torch.nn pieces models are built of).
The few references that point up this order are set at the end of the imports below.
Its behaviour is the specification the conformance suites check other engines against.
"""
import builtins as _builtins

from reference import dtypes as _dtypes
from reference.array_backend import CudaUnavailable, cuda_available as _cuda_available, namespace_of as _namespace_of
from reference import tensor as _tensor
from reference.tensor import Size, Tensor, device, layout, strided
from reference import overrides as _overrides
from reference.storage import TypedStorage, UntypedStorage
from reference.serialization import load, save

from reference import autograd  # noqa: E402
from reference.autograd import gradcheck as _gradcheck  # noqa: E402

autograd.gradcheck, autograd.gradgradcheck = _gradcheck.gradcheck, _gradcheck.gradgradcheck
from reference import nn, utils  # noqa: E402,F401
from reference.autograd.function import Function  # noqa: E402,F401
from reference.creation import (  # noqa: E402
    BoolTensor, DoubleTensor, FloatTensor, LongTensor, arange, empty, empty_like, from_numpy, full, full_like, manual_seed, ones, ones_like, rand, rand_like, randint,
    randn, randn_like,
    tensor, zeros, zeros_like,
)


def _like_function(fn):
    """``reference.<x>_like(input, ...)``: of ``input``'s class when that is a Tensor subclass."""

    def like(input, *args, **kwargs):  # noqa: A002 - torch's parameter name
        if input.__class__ is Tensor:
            return fn(input, *args, **kwargs)
        return _overrides.dispatch(fn, (input, *args), kwargs, fn.__name__)  # rule: identity.subclass-op-results-are-subclass

    like.__name__ = like.__qualname__ = fn.__name__
    like.__doc__ = fn.__doc__
    return like


empty_like, full_like, ones_like, rand_like, randn_like, zeros_like = map(
    _like_function, (empty_like, full_like, ones_like, rand_like, randn_like, zeros_like))
from reference.grad_mode import (  # noqa: E402
    enable_grad, inference_mode, is_anomaly_check_nan_enabled, is_anomaly_enabled, is_grad_enabled,
    is_inference_mode_enabled, no_grad, set_grad_enabled,
)
from reference.ops import linalg as _linalg, pointwise as _pointwise, reduction as _reduction, views as _views  # noqa: E402
from reference.autograd import forward_ad as _forward_ad, graph as _graph, multi_hooks as _multi_hooks  # noqa: E402
from reference.ops.methods import bind_tensor_methods as _bind_tensor_methods  # noqa: E402

# The few references that point up the reading order, set once everything is imported:
# the tensor's op methods, Tensor.backward's entry and Tensor(tensor) (the ops and autograd make tensors),
# torch.autograd.graph's function that needs the engine, and the views a dual tensor is.
_bind_tensor_methods()
_tensor._autograd_backward = autograd.backward
_tensor._alias = _views.alias
_graph.register_multi_grad_hook = _multi_hooks.register_multi_grad_hook
_forward_ad._views = _views

__version__ = "0.1.0"

float32 = _dtypes.float32
float64 = _dtypes.float64
int64 = _dtypes.int64
int32 = _dtypes.int32
bool = _dtypes.bool_  # noqa: A001 - torch's name
float = _dtypes.float32  # noqa: A001
double = _dtypes.float64
long = _dtypes.int64
int = _dtypes.int32  # noqa: A001
dtype = _dtypes.dtype



def _tensor_function(name, method):
    """``reference.<name>(input, ...)``: the method, with torch's error for a non-tensor input."""

    def function(input, *args, **kwargs):  # noqa: A002 - torch's parameter name
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        if input.__class__ is Tensor and not (args and _overrides.has_subclass(args)):
            result = method(input, *args, **kwargs)
        else:  # rule: identity.subclass-op-results-are-subclass
            result = _overrides.dispatch(method, (input, *args), kwargs, name)
        if result is NotImplemented:  # the operator protocol's answer to a foreign operand
            raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor or a number, "
                            f"not {type(args[0]).__name__ if args else 'nothing'}")
        return result

    function.__name__ = function.__qualname__ = name
    function.__doc__ = method.__doc__
    return function


exp = _tensor_function("exp", _pointwise.exp)
log = _tensor_function("log", _pointwise.log)
tanh = _tensor_function("tanh", _pointwise.tanh)
sigmoid = _tensor_function("sigmoid", _pointwise.sigmoid)
relu = _tensor_function("relu", _pointwise.relu)
sin = _tensor_function("sin", _pointwise.sin)
cos = _tensor_function("cos", _pointwise.cos)
sqrt = _tensor_function("sqrt", _pointwise.sqrt)
abs = _tensor_function("abs", _pointwise.abs)  # noqa: A001
neg = _tensor_function("neg", _pointwise.neg)
sign = _tensor_function("sign", _pointwise.sign)
clone = _tensor_function("clone", _pointwise.clone)
detach = _tensor_function("detach", Tensor.detach)
add = _tensor_function("add", _pointwise.add)
sub = _tensor_function("sub", _pointwise.sub)
mul = _tensor_function("mul", _pointwise.mul)
div = _tensor_function("div", _pointwise.div)
pow = _tensor_function("pow", _pointwise.pow)  # noqa: A001
matmul = _tensor_function("matmul", _linalg.matmul)
mm = _tensor_function("mm", _linalg.matmul)
sum = _tensor_function("sum", _reduction.sum)  # noqa: A001
mean = _tensor_function("mean", _reduction.mean)
var_mean = _tensor_function("var_mean", _reduction.var_mean)
prod = _tensor_function("prod", _reduction.prod)
masked_fill = _tensor_function("masked_fill", _pointwise.masked_fill)
cat = _views.cat
stack = _views.stack
is_inference = Tensor.is_inference
reshape = _tensor_function("reshape", _views.reshape)
transpose = _tensor_function("transpose", _views.transpose)
swapdims = _tensor_function("swapdims", _views.transpose)
swapaxes = _tensor_function("swapaxes", _views.transpose)
as_strided = _tensor_function("as_strided", _views.as_strided)
t = _tensor_function("t", _views.t)
squeeze = _tensor_function("squeeze", _views.squeeze)
unsqueeze = _tensor_function("unsqueeze", _views.unsqueeze)
flatten = _tensor_function("flatten", _views.flatten)
narrow = _tensor_function("narrow", _views.narrow)
all = _tensor_function("all", _reduction.all)  # noqa: A001
any = _tensor_function("any", _reduction.any)  # noqa: A001
select = _tensor_function("select", _views.select)
gather = _tensor_function("gather", _views.gather)
unbind = _tensor_function("unbind", _views.unbind)
split = _tensor_function("split", _views.split)
chunk = _tensor_function("chunk", _views.chunk)


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def equal(a, b) -> bool:
    return a.shape == b.shape and _builtins.bool((a == b)._array.all())


def allclose(a, b, rtol=1e-05, atol=1e-08) -> bool:
    return _builtins.bool(_namespace_of(a._array).allclose(a._array, b._array, rtol=rtol, atol=atol))


def cuda_is_available() -> bool:
    return _cuda_available()


class cuda:  # noqa: N801 - torch's namespace name
    """``reference.cuda.is_available()``, as in torch."""

    is_available = staticmethod(cuda_is_available)


__all__ = [name for name in dir() if not name.startswith("_")]
