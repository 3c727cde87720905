"""The adapter contract and the registry that finds adapters by name.

Why a contract this small: conformance suites whose harness uses a large slice of each
framework's API make young frameworks fail in the harness instead of in the rule. The
suites use ``adapter.fw`` (a torch-shaped namespace) like user code would; everything
else an adapter offers exists because frameworks genuinely differ there.

Third-party adapters register an ``Adapter`` subclass (or a zero-argument factory) in
the ``autograd_conformance.adapters`` entry-point group; no edit to this repository.
``--adapter package.module:ClassName`` loads an adapter from any importable module
(one-off experiments and the harness's own tests).

A framework that is not torch-shaped builds its ``fw`` with :meth:`Adapter.namespace`: a
wrapper around its own module that adds the translated names (``renames``) and turns every
name it lacks into :class:`MissingName`, an exception that is both ``Unsupported`` (the test
is UNSUPPORTED, naming the feature from ``conformance/features.toml``) and
``AttributeError`` (``hasattr``/``getattr(x, n, default)`` keep working). What the framework
lacks as a whole (graph nodes, tensor hooks, grad modes) goes in ``unsupported`` under its
registry name: the tests that need it end UNSUPPORTED before they run, every other one runs.
Each declaration is checked against the framework (``python -m conformance.feature_claims``,
and every conformance run's terminal summary): a surface name the feature implies that the
framework has contradicts it, unless ``unsupported_although_present`` says, for that feature
and name, why the name is not the feature (tinygrad's ``Tensor.data`` is a method returning a
memoryview, not a detached alias). The reason is given explicitly, never read from the prose
of ``unsupported``.
"""
from __future__ import annotations

import dataclasses
import importlib
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

from conformance.outcome_exceptions import MissingName, Unsupported  # re-exported: adapters import them from here

ENTRY_POINT_GROUP = "autograd_conformance.adapters"


@dataclasses.dataclass(frozen=True)
class Run:
    """One run ``nox -s report`` makes of an adapter: a column of the page.

    A record, not a dict read by string key (the noxfile and .ci/ read these fields; a typo
    there was a KeyError at nox start-up, or a silent default with ``.get``). Standard library
    only: the noxfile imports it in a bare Python.
    """

    label: str                  # the results file (reports/results/<label>.jsonl) and page column
    version: str | None         # the framework's; None for the reference
    python: str                 # X.Y the run needs
    install: tuple[str, ...] = ()     # pip requirements, pinned
    required: bool = True       # False: CI warns instead of failing when it cannot install it
    pytest_args: tuple[str, ...] = ()  # extra pytest arguments

    def __post_init__(self) -> None:  # lists are accepted, kept as tuples (hashable, frozen)
        object.__setattr__(self, "install", tuple(self.install))
        object.__setattr__(self, "pytest_args", tuple(self.pytest_args))

    @classmethod
    def of(cls, run: Run | dict) -> Run:
        """``run`` as a Run: a third-party adapter written before this type may give a dict
        with the same keys."""
        if isinstance(run, cls):
            return run
        unknown = set(run) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise TypeError(f"a run has unknown keys {sorted(unknown)} (fields of adapters.base.Run)")
        return cls(**run)


def runs_of(adapter_class) -> tuple[Run, ...]:
    """An adapter class's ``runs``, each a :class:`Run`."""
    return tuple(Run.of(run) for run in adapter_class.runs)


class Namespace:
    """What :meth:`Adapter.namespace` returns: ``renames`` first, then the wrapped module's
    attributes; any other name raises :class:`MissingName`."""

    def __init__(self, framework: str, module: Any, renames: dict[str, Any], path: str,
                 missing_feature: Any) -> None:
        object.__setattr__(self, "_ns", (framework, module, dict(renames), path, missing_feature))

    def __getattr__(self, name: str) -> Any:
        framework, module, renames, path, missing_feature = object.__getattribute__(self, "_ns")
        if name in renames:
            return renames[name]
        if module is not None:
            try:
                return getattr(module, name)
            except AttributeError:
                pass
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)   # copy, pickle and inspect probe dunders: not a feature
        dotted = f"{path}.{name}"
        raise MissingName(framework, dotted, _feature_of(dotted, missing_feature))

    def __dir__(self):
        _, module, renames, _, _ = object.__getattribute__(self, "_ns")
        return sorted(set(renames) | set(dir(module) if module is not None else ()))

    def __repr__(self) -> str:
        framework, module, _, path, _ = object.__getattribute__(self, "_ns")
        return f"<{framework} namespace {path} over {getattr(module, '__name__', module)!r}>"


def _feature_of(dotted: str, missing_feature: Any) -> str:
    """The feature a missing ``fw.*`` name stands for: the adapter's choice (a name, or a
    mapping from the missing name or its dotted path), else the registry's
    (``conformance/features.toml``), else the dotted name itself."""
    name = dotted.rsplit(".", 1)[-1]
    if isinstance(missing_feature, str):
        return missing_feature
    if isinstance(missing_feature, dict):
        for key in (dotted, name):
            if key in missing_feature:
                return missing_feature[key]
    from conformance import features  # lazily: the registry is data of the harness

    return features.feature_of_surface(dotted) or dotted


class FrameworkNotInstalled(Exception):
    """The adapter's framework cannot be imported; the message says how to install it."""


class Adapter:
    """Base class: subclasses set the class attributes and implement ``_import``.

    Attributes:
        name: the name given to ``--adapter``.
        install_hint: the command that installs the framework (shown when import fails).
        devices: the device strings this adapter can run on.
        unsupported: feature name -> reason, for features the framework lacks.
        unsupported_although_present: feature name -> {surface name -> why}: for a declared
            feature, the names it implies (``conformance/features.toml``) that the framework
            has without their being the feature (a homonym, a binding every read of fails).
    """

    name: str = ""
    install_hint: str = ""
    devices: tuple[str, ...] = ("cpu",)
    unsupported: dict[str, str] = {}
    unsupported_although_present: dict[str, dict[str, str]] = {}
    #: device type -> {feature -> why}: what the framework lacks on that device only (a
    #: wrapper-subclass device cannot make tensor subclasses of its tensors; a device may have
    #: no offloading of saved tensors); added to ``unsupported`` by :meth:`declare_device`
    #: once the device is accepted, so those tests end UNSUPPORTED naming the feature
    device_unsupported: dict[str, dict[str, str]] = {}

    # -- facts about the framework (read by the noxfile, the report, the repro scripts, the
    # differential tester and .ci/; nothing outside adapters/ names a framework) ------------
    #: the name user code imports (``import torch``)
    module: str = ""
    #: whether ``fw`` is that module itself (torch, the reference), so that a reproduction
    #: script may call it by the framework's name; False where ``fw`` is this adapter's
    #: translation over the framework (a namespace, compiled ops): a script then says it runs
    #: through the adapter, and only a witness is the framework's own code
    fw_is_module: bool = False
    #: the runs ``nox -s report`` makes (:class:`Run`: label, version, python, install,
    #: required, pytest_args); read them through :func:`runs_of`
    runs: tuple[Run, ...] = ()

    def preamble(self) -> str:
        """The lines that make the framework importable and import it, as user code would
        write them at the top of a standalone script (repro scripts start with these)."""
        return f"import {self.module}\n"

    def __init__(self) -> None:
        self._fw = None
        self.spec = self.name   # set by load_adapter to the spec the run used
        self.device_declared: dict[str, str] = {}   # set by declare_device

    # -- the framework -------------------------------------------------------------
    def _import(self) -> Any:
        """Import and return the framework's torch-shaped namespace."""
        raise NotImplementedError

    @property
    def fw(self) -> Any:
        if self._fw is None:
            try:
                self._fw = self._import()
            except FrameworkNotInstalled:  # the adapter's own message says what to do
                raise
            except ImportError as exc:
                raise FrameworkNotInstalled(
                    f"adapter {self.name!r} needs its framework, which failed to import "
                    f"({_first_line(exc)}). Install it with: {self.install_hint}"
                ) from exc
            except Exception as exc:  # noqa: BLE001 - e.g. OSError: a missing shared library
                raise FrameworkNotInstalled(
                    f"adapter {self.name!r}: importing its framework failed with "
                    f"{type(exc).__name__}: {_first_line(exc)} (a broken installation?); "
                    f"reinstall it with: {self.install_hint}"
                ) from exc
        return self._fw

    def framework_version(self) -> str:
        return str(getattr(self.fw, "__version__", "unknown"))

    def namespace(self, module: Any, renames: dict[str, Any] | None = None,
                  missing_feature: str | dict[str, str] | None = None,
                  path: str = "fw") -> Namespace:
        """A torch-shaped namespace over ``module`` (None: a namespace of ``renames`` alone):
        ``renames`` (torch's name -> the framework's object or a translating function) come
        first, then ``module``'s own attributes; any other name raises :class:`MissingName`
        (``Unsupported`` and ``AttributeError``), naming the feature: ``missing_feature``
        when given (one feature for every missing name, or a mapping from the name or its
        dotted path), else the registry's feature for the dotted name (``fw.no_grad`` ->
        ``grad_modes``). Nest namespaces for submodules with ``path="fw.autograd"``.
        Never fabricate a value in ``renames``: translate, or leave the name missing."""
        return Namespace(self.name, module, renames or {}, path, missing_feature)

    @staticmethod
    def functions_from_methods(module: Any, tensor_type: type) -> dict[str, Any]:
        """Renames for :meth:`namespace`: the suites call ``fw.sum(t)``, never ``t.sum()``
        (conformance/spelling.py, ``THROUGH_FW``); for each such name that ``module`` lacks but
        ``tensor_type`` has as a method, ``fw.<name>(t, *args)`` calls ``t.<name>(*args)``. A name
        both lack stays missing (UNSUPPORTED where a test needs it), never imitated."""
        from conformance.spelling import THROUGH_FW

        def as_function(name: str):
            def function(tensor, *args, **kwargs):
                return getattr(tensor, name)(*args, **kwargs)
            function.__name__ = function.__qualname__ = name
            return function

        return {name: as_function(name) for name in sorted(THROUGH_FW)
                if not hasattr(module, name) and callable(getattr(tensor_type, name, None))}

    # -- translation ---------------------------------------------------------------
    def to_numpy(self, tensor: Any):
        """A numpy copy of ``tensor``'s values (detached, on the host); an array (what
        :meth:`grad` may return) is copied as it is."""
        import numpy as np

        if isinstance(tensor, np.ndarray):
            return tensor.copy()
        return tensor.detach().cpu().numpy()

    def require(self, feature: str) -> None:
        """Raise ``Unsupported`` if the framework lacks ``feature``."""
        if feature in self.unsupported:
            raise Unsupported.missing(self.name, feature, self.unsupported[feature])

    def feature(self, feature: str, target: Any, attr: str | None = None) -> Any:
        """``getattr(target, attr)`` (or ``target()`` when ``attr`` is omitted: a getter such as
        ``lambda: fw.autograd.graph.saved_tensors_hooks``), with ``Unsupported`` for ``feature``
        when an attribute is missing on the framework's namespace or object.

        Only a missing attribute is a missing feature: an AttributeError raised inside framework
        code (a property or function that fails) propagates as what it is (ERROR or the rule's
        verdict), so a framework bug never reads as a feature it lacks.
        """
        self.require(feature)
        try:
            return target() if attr is None else getattr(target, attr)
        except AttributeError as exc:
            absent = attr is not None and not _has_attr_statically(target, attr)
            if not absent and not _missing_attribute(exc, _own_files(type(self)),
                                                     _framework_dirs(self.module)):
                raise
            raise Unsupported.missing(self.name, feature, str(exc)) from exc

    def register_post_accumulate_grad_hook(self, tensor, hook):
        """``tensor.register_post_accumulate_grad_hook(hook)``: ``hook(tensor)`` runs after the
        leaf's ``.grad`` was accumulated. Returns the framework's handle (None where it gives
        none: a test that removes it says so). A framework with the hook under another name
        translates it (Paddle's private ``Tensor._register_backward_hook``)."""
        return self.feature("post_accumulate_grad_hooks", tensor,
                            "register_post_accumulate_grad_hook")(hook)

    def liveness(self, tensor: Any) -> Callable[[], bool]:
        """A check that says whether the framework still holds ``tensor`` (its storage and
        autograd state), without keeping it alive: the channel :func:`conformance.liveness.watch`
        tries first. ``Unsupported`` where the framework offers none (then a weak reference or a
        hook sentinel, each with its positive control, watches the tensor)."""
        raise Unsupported(f"{self.name} offers no liveness check of its own",
                          feature="liveness_check")

    def restore_grad_mode(self) -> None:
        """Turn grad mode back on if a test left it off (a framework that runs a hook under
        no_grad and does not restore it when the hook raises: Paddle 3.3.1), so that one test's
        leftover never turns every later test's ops into untracked ones. The harness calls it
        after every suite test; a framework without grad modes has nothing to restore."""
        if "grad_modes" in self.unsupported:
            return
        try:
            if not self.fw.is_grad_enabled():
                self.fw.set_grad_enabled(True)
        except Exception:  # noqa: BLE001 - a framework whose grad-mode calls fail: nothing to do
            return

    def after_test(self) -> None:
        """Undo what one suite test left behind that would change the verdicts of later ones;
        the harness calls it after every suite test. The default restores grad mode
        (:meth:`restore_grad_mode`); an adapter with more process-wide state of its own (the
        compiled regions of ``torch.compile``) extends it."""
        self.restore_grad_mode()

    def close_forward_levels(self) -> None:
        """Close every forward-AD level a test left registered, so that one test's leftover
        (a failed assertion inside a level, or a framework race that loses track of one) never
        fails the later tests that open a level. The default asks the framework's own
        ``exit_dual_level()`` until it refuses; an adapter whose framework's bookkeeping can
        disagree with its registry (torch) closes the registry's levels itself."""
        fwad = getattr(getattr(self.fw, "autograd", None), "forward_ad", None)
        for _ in range(4):
            try:
                fwad.exit_dual_level()
            except Exception:  # noqa: BLE001 - nothing (more) to close, or no forward AD
                return

    # -- what frameworks spell differently on their own objects -----------------------
    # The suites call these instead of the torch spelling, so an adapter translates on the
    # way without touching the framework's classes. The defaults are torch's spelling; a
    # framework that lacks the feature raises ``Unsupported`` from its override.
    # Shapes (issue 33): what a framework holds under another shape than torch's (a graph node
    # named otherwise, ``.grad`` held as an array or behind a method, ``constant`` instead of
    # ``requires_grad``). A translation renames and reshapes; it never computes the behaviour a
    # rule judges (a framework without the thing raises ``Unsupported`` naming the feature).
    def grad_fn(self, tensor):
        """The graph node that made ``tensor`` (``tensor.grad_fn``); None for a leaf or a
        result that was not recorded."""
        return self.feature("graph_nodes", tensor, "grad_fn")

    def grad(self, tensor):
        """What the framework holds as ``tensor``'s gradient (``tensor.grad``): the object
        itself, never a copy (identity rules compare it), a tensor or an array; None when
        there is none. :meth:`to_numpy` accepts it."""
        return tensor.grad

    def set_grad(self, tensor, value):
        """Assign ``tensor``'s gradient (``tensor.grad = value``; None clears it)."""
        self.require("grad_assignment")
        tensor.grad = value

    def is_leaf(self, tensor) -> bool:
        """Whether ``tensor`` is a leaf of the graph (``tensor.is_leaf``)."""
        return self.feature("is_leaf", tensor, "is_leaf")

    def requires_grad(self, tensor) -> bool:
        """Whether gradients flow to or through ``tensor`` (``tensor.requires_grad``)."""
        return tensor.requires_grad

    def is_recorded(self, tensor) -> bool:
        """Whether the operation that made ``tensor`` was recorded in the graph: observed (a
        node made it: ``tensor.grad_fn is not None``), never inferred from ``requires_grad``
        (a framework may keep the flag and record nothing). ``Unsupported`` naming the feature
        when the framework offers no way to tell."""
        return self.grad_fn(tensor) is not None

    def node_name(self, node) -> str:
        """The graph node's name as the framework spells it (``node.name()``, else its
        class's name): naming rules judge that it names the op or Function, in any spelling."""
        name = getattr(node, "name", None)
        if callable(name):
            try:
                return str(name())
            except RuntimeError:  # torch 1.x: a custom Function's node refuses name() (a
                pass              # "legacy access pattern"); its class names the Function
        return type(node).__name__

    def saved_tensors(self, ctx):
        """The tensors a custom Function's ``ctx`` saved (``ctx.saved_tensors``)."""
        return ctx.saved_tensors

    def saved_input(self, node, index):
        """The ``index``-th input a built-in graph node saved for its backward (torch:
        ``node._saved_self`` for 0, ``node._saved_other`` for 1)."""
        return self.feature("saved_tensor_attributes", node, ("_saved_self", "_saved_other")[index])

    def apply_in_place(self, function, target, *args):
        """Apply the custom Function ``function`` whose forward changes ``target`` (its first
        input) in place and returns it: torch's spelling marks it dirty in forward
        (``ctx.mark_dirty(target)`` after the Function's own forward). A framework whose caller
        names an op's in-place target (MyGrad: ``execute_op(..., out=target)``) translates it."""
        self.require("mark_dirty")

        class InPlace(function):
            @staticmethod
            def forward(ctx, x, *rest):
                out = function.forward(ctx, x, *rest)
                ctx.mark_dirty(x)
                return out

        InPlace.__name__ = InPlace.__qualname__ = function.__name__
        return InPlace.apply(target, *args)

    def needs_input_grad(self, ctx):
        """Per forward input, whether its gradient is needed (``ctx.needs_input_grad``)."""
        return ctx.needs_input_grad

    def retain_grad(self, tensor):
        """Keep ``.grad`` of a non-leaf after backward (``tensor.retain_grad()``)."""
        tensor.retain_grad()

    def clear_grad(self, tensor):
        """Drop ``tensor``'s accumulated gradient, so that ``.grad`` reads None again
        (``tensor.grad = None``)."""
        tensor.grad = None

    def version(self, tensor):
        """The tensor's version counter, bumped by every in-place change (``tensor._version``)."""
        return tensor._version

    def inplace(self, tensor, op, *args):
        """``tensor.<op>(*args)`` for an in-place method such as ``add_``, where ``args`` may be
        Python numbers; returns what the method returns (torch: ``tensor`` itself)."""
        return getattr(tensor, op)(*args)

    def backward(self, tensor, gradient=None, **kwargs):
        """``tensor.backward(gradient, **kwargs)`` with torch's keywords (``retain_graph``,
        ``create_graph``, ``inputs``)."""
        tensor.backward(gradient, **kwargs)

    def register_node_hook(self, node, hook):
        """Register ``hook(grad_inputs, grad_outputs)`` to run after graph node ``node``
        (``node.register_hook``); returns a handle with ``remove()``."""
        return node.register_hook(hook)

    def register_node_prehook(self, node, hook):
        """Register ``hook(grad_outputs)`` to run before graph node ``node``
        (``node.register_prehook``); returns a handle with ``remove()``."""
        return node.register_prehook(hook)

    def next_functions(self, node):
        """The nodes feeding graph node ``node``'s inputs as ``(node or None, input_nr)``
        pairs (``node.next_functions``)."""
        return tuple(node.next_functions)

    def next_nodes(self, node):
        """The nodes feeding graph node ``node``'s inputs, one per input slot (None for an input
        that needs no gradient): the nodes of ``node.next_functions`` without ``input_nr``."""
        return tuple(entry[0] if entry is not None else None for entry in node.next_functions)

    def subclass_instance(self, cls: type, tensor: Any) -> Any:
        """An instance of the tensor subclass ``cls`` holding ``tensor``'s values (torch:
        ``tensor.as_subclass(cls)``); ``Unsupported`` if the framework cannot make one."""
        return self.feature("tensor_subclass", tensor, "as_subclass")(cls)

    def expectations_file(self) -> Path:
        """Where this adapter's expected outcomes live (a missing file means none).

        Third-party adapters override this to ship their expectations with their package.
        """
        return Path(__file__).parent / "expectations" / f"{self.name}.toml"

    def check_device(self, device: str) -> None:
        """Raise ValueError (one line) unless the adapter declares ``device`` and can really
        use it. An adapter whose framework names its own devices (torch: any string
        ``torch.device`` parses) overrides this and ends with :meth:`try_device`."""
        if device not in self.devices:
            raise ValueError(
                f"adapter {self.name!r} cannot run on device {device!r}; "
                f"it supports: {', '.join(self.devices)}"
            )
        self.try_device(device)
        self.declare_device(device)

    def declare_device(self, device_type: str) -> None:
        """Add what the framework lacks on ``device_type`` (``device_unsupported``) to this
        adapter's ``unsupported``; the reason names the device."""
        missing = self.device_unsupported.get(device_type.split(":")[0], {})
        self.device_declared = {feature: f"on device {device_type}: {why}"
                                for feature, why in missing.items()}
        if missing:
            self.unsupported = {**self.unsupported, **self.device_declared}

    def try_device(self, device: str) -> Any:
        """Create and read back one tensor on ``device``; ValueError (one line) if that fails.

        Declared is not enough (the reference declares cuda but needs cupy and a GPU): a
        device other than the cpu is tried. Returns the tensor (None for the cpu).
        """
        if device == "cpu":
            return None
        try:
            tensor = self.fw.zeros(1, device=device)
            self.to_numpy(tensor)
        except Exception as exc:  # noqa: BLE001 - whatever the framework raises for it
            raise ValueError(
                f"adapter {self.name!r} cannot use device {device!r} here "
                f"({type(exc).__name__}: {_first_line(exc)}); use --device cpu"
            ) from None
        return tensor


def _own_files(cls: type) -> tuple[str, ...]:
    """The source files of the harness and of adapter class ``cls``: code that is not the
    framework's."""
    import inspect
    import os

    files = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    for klass in cls.__mro__:
        try:
            files.append(os.path.abspath(inspect.getfile(klass)))
        except (TypeError, OSError):
            pass
    return tuple(files)


def _framework_dirs(module: str) -> tuple[str, ...]:
    """The directory of the framework's imported package (its code), () when unknown."""
    import os
    import sys

    found = getattr(sys.modules.get(module or ""), "__file__", None)
    return (os.path.dirname(os.path.abspath(found)),) if found else ()


def _missing_attribute(exc: AttributeError, own: tuple[str, ...],
                       framework: tuple[str, ...] = ()) -> bool:
    """Whether ``exc`` says an attribute is missing on a framework object, rather than that
    framework code failed: it was not raised inside the framework's own code (the getter's
    attribute read in a test, the adapter or a reproduction script made from a test; where the
    framework's package is unknown, only harness and adapter code count), and where Python
    names the object and the attribute (3.10+), the attribute is really absent from it."""
    import os

    def under(filename: str, dirs) -> bool:
        return any(filename == d or filename.startswith(d + os.sep) for d in dirs)

    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        filename = os.path.abspath(tb.tb_frame.f_code.co_filename)
        # a framework class's __getattr__ fallback raising for a name it does not have (Paddle's
        # Layer) is the attribute missing, not framework code failing
        fallback = tb.tb_frame.f_code.co_name == "__getattr__"
        inside = under(filename, framework) if framework else not under(filename, own)
        if inside and not fallback:
            return False
    name, obj = getattr(exc, "name", None), getattr(exc, "obj", None)
    if name and obj is not None:
        return not _has_attr_statically(obj, name)
    return True


def _has_attr_statically(target: Any, attr: str) -> bool:
    """Whether ``attr`` exists on ``target`` without running a property (a descriptor that
    raises AttributeError from inside is a framework failure, not a missing attribute)."""
    import inspect

    try:
        inspect.getattr_static(target, attr)
    except AttributeError:
        return False
    return True


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


_BUILTIN: dict[str, str] = {
    "reference": "adapters.reference_adapter:ReferenceAdapter",
    "torch": "adapters.torch_adapter:TorchAdapter",
    "torch-compile": "adapters.torch_compile_adapter:TorchCompileAdapter",
    "torch-compile-inductor": "adapters.torch_compile_adapter:TorchCompileInductorAdapter",
    "torch-compiled-autograd": "adapters.torch_compile_adapter:TorchCompiledAutogradAdapter",
    "paddle": "adapters.paddle_adapter:PaddleAdapter",
    "oneflow": "adapters.oneflow_adapter:OneFlowAdapter",
    "tinygrad": "adapters.tinygrad_adapter:TinygradAdapter",
    "mygrad": "adapters.mygrad_adapter:MyGradAdapter",
}


def _entry_points() -> dict[str, Any]:
    return {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def builtin_adapter_classes() -> dict[str, type]:
    """name -> class of the built-in adapters (imports no framework)."""
    return {name: _import_spec(spec) for name, spec in _BUILTIN.items()}


def report_runs() -> list[tuple[str, Run]]:
    """(adapter name, run) for every run ``nox -s report`` makes, in page order."""
    return [(name, run) for name, cls in builtin_adapter_classes().items() for run in runs_of(cls)]


def framework_module(adapter_name: str) -> str:
    """The import name of a built-in adapter's framework (the adapter's name otherwise)."""
    cls = builtin_adapter_classes().get(adapter_name)
    return (cls.module or adapter_name) if cls else adapter_name


def builtin_adapters() -> tuple[str, ...]:
    """The names of the built-in adapters, in the registry's order (imports no framework)."""
    return tuple(_BUILTIN)


def known_adapters() -> list[str]:
    return sorted(set(_BUILTIN) | set(_entry_points()))


def _import_spec(spec: str) -> Any:
    """Resolve ``package.module:ClassName`` (an adapter that lives outside the registry)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr or module_name.startswith("."):
        raise ValueError(f"adapter spec {spec!r} must look like package.module:ClassName "
                         f"(an absolute module name)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(
            f"adapter {spec!r}: cannot import module {module_name!r} ({_first_line(exc)}); "
            f"is it on sys.path / PYTHONPATH?"
        ) from exc
    except Exception as exc:  # noqa: BLE001 - the module's own code failed while importing
        raise ValueError(f"adapter {spec!r}: importing module {module_name!r} raised "
                         f"{type(exc).__name__}: {_first_line(exc)}; fix that module") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ValueError(f"adapter {spec!r}: module {module_name!r} has no {attr!r}") from None


def load_adapter(name: str) -> Adapter:
    """Instantiate the adapter called ``name`` or raise ValueError listing the known ones.

    ``name`` is a built-in name, an entry point of the ``autograd_conformance.adapters``
    group, or ``package.module:ClassName`` (handy for one-off and test adapters).
    """
    if name in _BUILTIN:
        factory = _import_spec(_BUILTIN[name])
    elif ":" in name:
        factory = _import_spec(name)
    else:
        eps = _entry_points()
        if name not in eps:
            raise ValueError(
                f"unknown adapter {name!r}; known adapters: {', '.join(known_adapters())} "
                f"(or give package.module:ClassName)"
            )
        try:
            factory = eps[name].load()
        except Exception as exc:  # noqa: BLE001 - a missing or broken module the entry point names
            raise ValueError(
                f"adapter {name!r}: its entry point {getattr(eps[name], 'value', '')!r} cannot be "
                f"loaded ({type(exc).__name__}: {_first_line(exc)}); reinstall the package "
                f"that provides it") from exc
    try:
        adapter = factory()
    except Exception as exc:  # noqa: BLE001 - a class that needs arguments, a failing factory
        raise ValueError(
            f"adapter {name!r}: creating it with no arguments failed ({type(exc).__name__}: "
            f"{_first_line(exc)}); an adapter class (or factory) must take no arguments"
        ) from None
    if not isinstance(adapter, Adapter):
        raise ValueError(f"adapter {name!r} did not produce an adapters.base.Adapter: {adapter!r}")
    adapter.spec = name   # how this run named it: subprocesses load it the same way
    return adapter
