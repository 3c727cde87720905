"""``import torch`` resolving to the reference engine, and placeholders for what it lacks.

``install()`` makes ``torch`` and every ``torch.x.y`` import resolve to ``reference`` and
``reference.x.y`` (a submodule the reference lacks stays a ModuleNotFoundError naming the torch
module). ``facade(module)`` wraps a reference module so that a missing attribute becomes a
``Missing`` placeholder named as in torch (``torch._C._functions.UndefinedGrad``); the
placeholder raises ``MissingAPI`` naming itself the moment a test uses it (calls it, iterates
it, subclasses it, tests it for truth...), so a test fails where torch would have worked and the
report says which API was missing. torch's private names (``torch._C``) that the reference has
under names of its own are translated by the table in ``private``.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types

from conformance.torchtests import private

REFERENCE = "reference"


def torch_name(name: str) -> str:
    """``reference.autograd.graph`` -> ``torch.autograd.graph``."""
    if name == REFERENCE or name.startswith(REFERENCE + "."):
        return "torch" + name[len(REFERENCE):]
    return name


class MissingAPI(Exception):
    """A test used a name the reference does not have."""

    def __init__(self, api: str):
        super().__init__(f"{api} is missing")
        self.api = api


def _use(self, *args, **kwargs):
    raise MissingAPI(object.__getattribute__(self, "_api"))


class PrivateNamespace:
    """Stands for a torch namespace of private names (``torch._C``): the names listed in
    ``private.PRIVATE`` are the reference's stand-ins, any other is a ``Missing`` placeholder."""

    __slots__ = ("_name",)

    def __init__(self, name: str):
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return private_or_missing(f"{object.__getattribute__(self, '_name')}.{attr}")

    def __repr__(self) -> str:
        return f"<private namespace {object.__getattribute__(self, '_name')}>"


def private_or_missing(name: str):
    """The reference's stand-in for torch's name, a namespace of them, or a placeholder."""
    if name in private.PRIVATE:
        return private.PRIVATE[name]
    if private.is_namespace(name):
        return PrivateNamespace(name)
    return Missing(name)


class Missing:
    """Stands for ``torch.<something>`` the reference lacks; any use raises MissingAPI."""

    __slots__ = ("_api",)

    def __init__(self, api: str):
        object.__setattr__(self, "_api", api)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return Missing(f"{object.__getattribute__(self, '_api')}.{name}")

    def __repr__(self) -> str:
        return f"<missing {object.__getattribute__(self, '_api')}>"

    def __mro_entries__(self, bases):
        raise MissingAPI(object.__getattribute__(self, "_api"))

    __call__ = __iter__ = __bool__ = __len__ = __getitem__ = __setitem__ = __contains__ = _use
    __enter__ = __exit__ = __instancecheck__ = __subclasscheck__ = _use
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _use
    __neg__ = __lt__ = __le__ = __gt__ = __ge__ = __float__ = __int__ = __index__ = _use


_facades: dict[str, types.ModuleType] = {}


class _Facade(types.ModuleType):
    """A reference module seen under its torch name; missing attributes become ``Missing``."""

    def __init__(self, module: types.ModuleType):
        super().__init__(torch_name(module.__name__))
        object.__setattr__(self, "_module", module)

    def __getattr__(self, name: str):
        module = object.__getattribute__(self, "_module")
        try:
            value = getattr(module, name)
        except AttributeError:
            if name.startswith("__"):
                raise
            return private_or_missing(f"{self.__name__}.{name}")
        return facade(value)

    def __setattr__(self, name, value):
        setattr(object.__getattribute__(self, "_module"), name, value)

    def __dir__(self):
        return dir(object.__getattribute__(self, "_module"))


def facade(value):
    """``value`` itself, or a reference module wrapped so that missing names are placeholders."""
    if isinstance(value, types.ModuleType) and not isinstance(value, _Facade) and (
            value.__name__ == REFERENCE or value.__name__.startswith(REFERENCE + ".")):
        if value.__name__ not in _facades:
            _facades[value.__name__] = _Facade(value)
        return _facades[value.__name__]
    return value


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class _TorchAlias(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("torch."):
            return None
        try:
            module = importlib.import_module(REFERENCE + fullname[len("torch"):])
        except ModuleNotFoundError:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(module))


def install() -> types.ModuleType:
    """From now on ``import torch`` (and ``torch.x``) imports the reference; returns it."""
    if "torch" in sys.modules and not sys.modules["torch"].__name__.startswith(REFERENCE):
        raise RuntimeError("torch is already imported in this process; the reference cannot take its place")
    reference = importlib.import_module(REFERENCE)
    sys.modules["torch"] = reference
    if not any(isinstance(f, _TorchAlias) for f in sys.meta_path):
        sys.meta_path.insert(0, _TorchAlias())
    return reference
