"""Why a test failed on the reference: an API it lacks, or a difference in behaviour.

``classify(exc)`` returns ``("missing", api)`` when the failure is the reference lacking a name,
a module or a parameter (the placeholder's MissingAPI or a placeholder passed on as an argument,
ImportError, "has no attribute", a read-only property, "unexpected keyword argument",
"positional argument(s)", NotImplementedError), ``("message", summary)``
when the expected exception type was raised with a message the test's pattern does not match
(the reference may have refused for another reason: read the message), otherwise
``("difference", summary)``. Names are given as torch spells them (``reference.x`` -> ``torch.x``).
"""
from __future__ import annotations

import re

from conformance.torchtests.aliasing import MissingAPI, torch_name

_MODULE_ATTR = re.compile(r"module '([\w.]+)' has no attribute '(\w+)'")
_OBJECT_ATTR = re.compile(r"'(\w+)' object has no attribute '(\w+)'")
_TYPE_ATTR = re.compile(r"type object '(\w+)' has no attribute '(\w+)'")
_KEYWORD = re.compile(r"([\w.]+)\(\) got an unexpected keyword argument '(\w+)'")
_POSITIONAL = re.compile(r"([\w.]+)\(\) takes (?:(?:from \d+ to )?\d+ positional arguments? but \d+ (?:were|was) given|no arguments)")
_MESSAGE = re.compile(r'^".*" does not match ".*"', re.S)
_SETTER = re.compile(r"property '(\w+)' of '(\w+)' object has no setter")
_PLACEHOLDER = re.compile(r"<missing ([\w.]+)>")


def _torchify(text: str) -> str:
    return re.sub(r"\breference((?:\.\w+)*)", lambda m: torch_name("reference" + m.group(1)), text)


def summary(exc: BaseException) -> str:
    """``Type: first line of the message``, at most 200 characters, torch's names."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return _torchify(text)[:200]


def classify(exc: BaseException) -> tuple[str, str]:
    if isinstance(exc, MissingAPI):
        return "missing", exc.api
    if isinstance(exc, ImportError):
        name = getattr(exc, "name", None)
        if isinstance(exc, ModuleNotFoundError) and name:
            return "missing", torch_name(name)
        match = re.search(r"cannot import name '(\w+)' from '([\w.]+)'", str(exc))
        if match:
            return "missing", f"{torch_name(match.group(2))}.{match.group(1)}"
        return "missing", _torchify(str(exc))[:200]
    message = str(exc)
    match = _PLACEHOLDER.search(message)
    if match:  # a placeholder was passed on as an argument and the reference refused it
        return "missing", match.group(1)
    if isinstance(exc, AttributeError):
        match = _SETTER.search(message)
        if match:
            return "missing", f"{match.group(2)}.{match.group(1)} (assignment)"
        for pattern, fmt in ((_MODULE_ATTR, "{}.{}"), (_TYPE_ATTR, "{}.{}"), (_OBJECT_ATTR, "{}.{}")):
            match = pattern.search(message)
            if match:
                return "missing", fmt.format(torch_name(match.group(1)), match.group(2))
    if isinstance(exc, TypeError):
        match = _KEYWORD.search(message)
        if match:
            return "missing", f"{_torchify(match.group(1))}({match.group(2)}=)"
        match = _POSITIONAL.search(message)
        if match:
            return "missing", f"{_torchify(match.group(1))}() with more positional arguments"
    if isinstance(exc, AssertionError) and _MESSAGE.match(message):
        return "message", summary(exc)
    if isinstance(exc, NotImplementedError):
        return "missing", _torchify(message.strip().splitlines()[0] if message.strip() else "NotImplementedError")[:200]
    return "difference", summary(exc)
