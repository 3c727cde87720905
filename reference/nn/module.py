"""``nn.Module``: parameters and submodules registered by assignment, and ``forward``.

A module keeps the Parameters and Modules assigned to its attributes in ``_parameters`` and
``_modules`` (in assignment order) and finds them there again; ``parameters()`` walks the tree
(each parameter once); calling the module calls ``forward`` (through ``nn.hooks`` when full
backward hooks are registered). ``Linear`` is the one layer.
"""
from __future__ import annotations

import math
import warnings

from reference import grad_mode
from reference.handles import HookDict, RemovableHandle
from reference.creation import rand
from reference.nn import functional
from reference.nn.hooks import BackwardHook
from reference.nn.parameter import Parameter
from reference.tensor import Tensor


class Module:
    """Base class of models: assign Parameters and Modules as attributes, define ``forward``."""

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_backward_hooks", HookDict())
        object.__setattr__(self, "_backward_pre_hooks", HookDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        if not (self.__dict__.get("_backward_hooks") or self.__dict__.get("_backward_pre_hooks")):
            return self.forward(*args, **kwargs)
        # rule: hooks.module-full-backward-hook-lifetime -- the hooks of this call are those registered now
        bw_hook = BackwardHook(self, list(self._backward_hooks.values()), list(self._backward_pre_hooks.values()))
        args = bw_hook.setup_input_hook(args)
        result = self.forward(*args, **kwargs)
        if not isinstance(result, (Tensor, tuple)):
            warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                          f"Tensors but received {type(result)}", stacklevel=2)
        return bw_hook.setup_output_hook(result)

    # -- backward hooks ------------------------------------------------------------
    def register_full_backward_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Run ``hook(module, grad_input, grad_output)`` (tuples, None where an argument is no
        tensor or gets no gradient) when the gradients w.r.t. the inputs of a call are computed;
        a tuple it returns replaces ``grad_input``. Applies to calls made after registering."""
        return _register(self._backward_hooks, hook, prepend)

    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Run ``hook(module, grad_output)`` when the gradients w.r.t. a call's outputs arrive;
        a tuple it returns replaces ``grad_output``."""
        return _register(self._backward_pre_hooks, hook, prepend)

    # -- registration --------------------------------------------------------------
    def __setattr__(self, name: str, value) -> None:
        params = self.__dict__.get("_parameters")
        modules = self.__dict__.get("_modules")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name)
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            modules[name] = None
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str) -> None:
        self.__dict__.pop(name, None)
        self.__dict__["_parameters"].pop(name, None)
        self.__dict__["_modules"].pop(name, None)

    def __getattr__(self, name: str):
        # only called when ordinary lookup fails: parameters and submodules live in their dicts
        for table in ("_parameters", "_modules"):
            entries = self.__dict__.get(table)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for table in ("_parameters", "_modules"):
            entries = self.__dict__.get(table)
            if entries is not None and name in entries:
                del entries[name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {type(name).__name__}")
        if "." in name or name == "":
            raise KeyError("parameter name can't contain \".\"" if name else "parameter name can't be empty string \"\"")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_type_name(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             "created explicitly. To express '" + name + "' as a function of another Tensor, "
                             "compute the value in the forward() method.")
        self._parameters[name] = param

    def add_module(self, name: str, module) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_type_name(module)} is not a Module subclass")
        if "." in name or name == "":
            raise KeyError("module name can't contain \".\"" if name else "module name can't be empty string \"\"")
        self._modules[name] = module

    register_module = add_module

    # -- the tree ------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and module not in seen:
                seen.add(module)
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        seen = set()
        tree = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in tree:
            for name, param in module._parameters.items():
                if param is None or (remove_duplicate and id(param) in seen):
                    continue
                seen.add(id(param))
                yield (f"{module_prefix}.{name}" if module_prefix else name), param

    def parameters(self, recurse: bool = True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def apply(self, fn):
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- modes and gradients -------------------------------------------------------
    def train(self, mode: bool = True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the ``.grad`` of every parameter: to None, or (``set_to_none=False``) to zeros."""
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                grad = param.grad
                if grad.grad_fn is not None:
                    grad.detach_()
                else:
                    grad.requires_grad_(False)
                grad.zero_()

    # -- printing ------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = []
        for name, module in self._modules.items():
            body = repr(module).replace("\n", "\n  ")
            lines.append(f"({name}): {body}")
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        head = f"{type(self).__name__}(" + (f"\n  {extra}" if extra else "")
        return head + "".join(f"\n  {line}" for line in lines) + "\n)"


class Linear(Module):
    """``y = x @ weight.T + bias``, weight (out_features, in_features) and bias drawn, as in
    torch, uniformly from [-1/sqrt(in_features), 1/sqrt(in_features)]."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        bound = 1 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.weight = Parameter(_uniform((out_features, in_features), bound, device, dtype))
        if bias:
            self.bias = Parameter(_uniform((out_features,), bound, device, dtype))
        else:
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's parameter name
        return functional.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def _register(hooks: HookDict, hook, prepend: bool) -> RemovableHandle:
    handle = RemovableHandle(hooks)
    if prepend:  # rule: hooks.module-full-backward-hook-order
        rest = dict(hooks)
        hooks.clear()
        hooks[handle.id] = hook
        hooks.update(rest)
    else:
        hooks[handle.id] = hook
    return handle


def _uniform(shape, bound, device, dtype) -> Tensor:
    with grad_mode.no_grad():
        return (rand(*shape, device=device, dtype=dtype) * 2 - 1) * bound


def _type_name(value) -> str:
    if isinstance(value, Tensor):
        return f"reference.{value.dtype.legacy_name}"
    return type(value).__module__ + "." + type(value).__qualname__ if type(value).__module__ != "builtins" \
        else type(value).__name__
