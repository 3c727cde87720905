"""Which of the reference's public names lifetime rules cover, and which lie outside their scope.

The data is ``reference/scope.toml`` (data only): entries ``[[covered]]`` (``names`` and the
catalogue ``rules`` that specify their lifetime behaviour: what they keep alive, when they run,
what they refuse, what they do when re-entered) and ``[[outside]]`` (``names`` and the
``reason`` they have no lifetime behaviour to specify). ``public_names()`` lists the names the
file must account for, so that a project test (tests/model/test_reference_scope.py) fails when
a name is added to the reference without a rule or a reason; ``render_html`` is the spec page's
section (``python -m conformance.spec``).
"""
from __future__ import annotations

import html
import importlib
import inspect
import re
from dataclasses import dataclass
from pathlib import Path

from conformance.tomlfile import FileError, read_toml

ROOT = Path(__file__).resolve().parents[2]
SCOPE_FILE = ROOT / "reference" / "scope.toml"

#: the namespaces whose public names are accounted for: torch's own (``torch``, ``torch.autograd``,
#: ``torch.autograd.graph``, ``torch.autograd.forward_ad``, ``torch.autograd.function``, ``torch.nn``,
#: ``torch.nn.functional``, ``torch.utils.weak``) and the Tensor class's attributes
NAMESPACES = ("reference", "reference.autograd", "reference.autograd.graph", "reference.autograd.forward_ad",
              "reference.autograd.function", "reference.nn", "reference.nn.functional", "reference.utils.weak")
CLASSES = ("reference.Tensor", "reference.nn.Module", "reference.autograd.graph.NodeBase",
           "reference.autograd.function.FunctionCtx")
#: torch names that a namespace re-exports from a module of its own (so not found by origin)
EXTRA = ("reference.autograd.gradcheck", "reference.autograd.gradgradcheck",
         "reference.autograd.graph.register_multi_grad_hook", "reference.autograd.graph.increment_version")
_CONSTANT = re.compile(r"^[A-Z][A-Z0-9_]*$")  # message texts and other constants are no API


class ScopeError(FileError):
    """reference/scope.toml is malformed; the message says what to fix."""


@dataclass(frozen=True)
class Entry:
    names: tuple[str, ...]
    rules: tuple[str, ...] = ()  # covered by these rules
    reason: str = ""  # or outside the lifetime scope, for this reason


def _module_names(module_name: str) -> set[str]:
    module = importlib.import_module(module_name)
    exported = set(getattr(module, "__all__", ()))
    names = set()
    for name in dir(module):
        if name.startswith("_") or _CONSTANT.match(name):
            continue
        value = getattr(module, name)
        if inspect.ismodule(value):
            continue
        defined_here = getattr(value, "__module__", None) == module_name
        if name in exported or defined_here:
            names.add(f"{module_name}.{name}")
    return names


def _class_names(path: str) -> set[str]:
    module_name, _, class_name = path.rpartition(".")
    cls = getattr(importlib.import_module(module_name), class_name)
    return {f"{path}.{name}" for name in dir(cls) if not name.startswith("_")}


def public_names() -> set[str]:
    """Every public name of the reference the scope file must account for."""
    names: set[str] = set()
    for module_name in NAMESPACES:
        names |= _module_names(module_name)
    for path in CLASSES:
        names |= _class_names(path)
    return names | set(EXTRA)


def load(path: Path = SCOPE_FILE) -> list[Entry]:
    """The entries of the scope file, checked for shape (not yet against the names or rules)."""
    data = read_toml(path, ScopeError)
    unknown = set(data) - {"covered", "outside"}
    if unknown:
        raise ScopeError(f"{path}: unknown table(s) {sorted(unknown)}; use [[covered]] and [[outside]]")
    entries = []
    for kind in ("covered", "outside"):
        for i, raw in enumerate(data.get(kind, [])):
            where = f"{path}: [[{kind}]] #{i + 1}"
            names = raw.get("names")
            if not names or not all(isinstance(n, str) for n in names):
                raise ScopeError(f"{where}: 'names' must be a non-empty list of dotted names")
            if kind == "covered":
                rules = raw.get("rules")
                if not rules or not all(isinstance(r, str) for r in rules) or set(raw) != {"names", "rules"}:
                    raise ScopeError(f"{where}: a covered entry has 'names' and a non-empty list 'rules', nothing else")
                entries.append(Entry(tuple(names), rules=tuple(rules)))
            else:
                reason = raw.get("reason")
                if not isinstance(reason, str) or not reason.strip() or set(raw) != {"names", "reason"}:
                    raise ScopeError(f"{where}: an outside entry has 'names' and a non-empty 'reason', nothing else")
                entries.append(Entry(tuple(names), reason=reason.strip()))
    return entries


def problems(entries: list[Entry], names: set[str], rule_ids: set[str]) -> list[str]:
    """What makes the file incomplete or stale: one line per problem, empty when it is right."""
    found: list[str] = []
    seen: dict[str, int] = {}
    for entry in entries:
        for name in entry.names:
            seen[name] = seen.get(name, 0) + 1
        for rule_id in entry.rules:
            if rule_id not in rule_ids:
                found.append(f"{rule_id}: no such rule in conformance/catalogue (named for {entry.names[0]})")
    for name in sorted(names - set(seen)):
        found.append(f"{name}: a public name of the reference with no rule and no out-of-scope reason "
                     "(add it to reference/scope.toml)")
    for name in sorted(set(seen) - names):
        found.append(f"{name}: listed in reference/scope.toml but not a public name of the reference (remove it)")
    for name, count in sorted(seen.items()):
        if count > 1:
            found.append(f"{name}: listed {count} times in reference/scope.toml")
    return found


def render_html(path: Path = SCOPE_FILE) -> str:
    """The spec page's section: each public name with its rules (links) or its reason (nothing
    where the file is absent: an installed copy without the reference's sources)."""
    if not path.exists():
        return ""
    entries = load(path)
    covered = sum(len(e.names) for e in entries if e.rules)
    outside = sum(len(e.names) for e in entries if not e.rules)
    rows = []
    for entry in entries:
        names = ", ".join(f"<code>{html.escape(n)}</code>" for n in entry.names)
        if entry.rules:
            what = ", ".join(f'<a href="#{html.escape(r)}">{html.escape(r)}</a>' for r in entry.rules)
        else:
            what = f'<span class="muted">outside the lifetime scope:</span> {html.escape(entry.reason)}'
        rows.append(f"<tr><td>{names}</td><td>{what}</td></tr>")
    return (f'<h2 id="reference-scope">The reference\'s public names <span class="muted">({covered} covered by '
            f"rules, {outside} outside the lifetime scope; reference/scope.toml)</span></h2>"
            '<table class="scope"><tr><th>names</th><th>rules, or why outside</th></tr>'
            + "".join(rows) + "</table>")
