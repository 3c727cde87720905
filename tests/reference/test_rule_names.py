"""The reference names the rules it implements: every MUST rule of the catalogue is named in a
comment of reference/ (``# rule: <id>`` where the engine makes the decision), or declared below
as needing no engine code of its own, with the reason."""
from pathlib import Path

from conformance.rules import load_catalogue
from conformance.spec import reference_lines

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = load_catalogue(ROOT / "conformance" / "catalogue")
NAMED = reference_lines(ROOT / "reference")

#: MUST rules that hold because of how Python and the engine's ordinary data structures work,
#: with no line of the engine deciding them (naming a line would point at nothing in particular).
NO_ENGINE_CODE = {
    "engine.unsaved-graph-reusable": "nodes that saved nothing have nothing to free; no check exists to refuse them",
    "engine.threads-independent-graphs": "graphs share no state; per-thread grad mode is engine.grad-mode-thread-local",
    "identity.grad-same-object": "`.grad` is a plain attribute returning the stored object",
    "identity.grad-stable-id": "`.grad` is a plain attribute returning the stored object",
    "identity.grad-fn-same-object": "`grad_fn` returns the node object itself; edges hold the same object",
    "identity.attributes-survive-framework-ownership": "tensors are Python objects; the engine holds them, never copies",
    "identity.subclass-survives-framework-ownership": "tensors are Python objects; the engine holds them, never copies",
    "identity.weakref-survives-framework-ownership": "Tensor has __weakref__; the engine holds the object itself",
    "identity.weakref-released-with-last-owner": "ordinary reference counting",
    "gc_cycles.plain-graph-freed-by-refcount": "nodes own their inputs' nodes only through edges; no back references",
    "gc_cycles.hook-self-closure-leaf-collectable": "hook dicts are ordinary containers the cyclic collector traverses",
    "gc_cycles.hook-self-closure-nonleaf-collectable": "hook dicts are ordinary containers the cyclic collector traverses",
    "gc_cycles.ctx-attribute-cycle-collected": "ctx is an ordinary Python object the cyclic collector traverses",
    "gc_cycles.dict-cycle-collected-unless-grad-holds-it": "tensor __dict__ and .grad are ordinary references",
    "gc_cycles.garbage-cycle-does-not-free-live-graph": "the collector frees only unreachable objects; the engine has no finalizers",
    "engine.deep-graph-freed": "nodes link through slots and tuples only and have no __del__: CPython's "
                               "trashcan deallocates a deep chain without recursing",
    "gc_cycles.deep-graph-freed-without-recursion": "nodes link through slots and tuples only and have no "
                                                    "__del__: CPython's trashcan deallocates a deep chain "
                                                    "without recursing",
    "gc_cycles.finalizer-collect-during-teardown-safe": "no engine object has a finalizer or a teardown of its "
                                                        "own; a collection started from a user's __del__ "
                                                        "only meets ordinary Python objects",
}

#: MUST rules whose engine lines are not named yet: this list only shrinks (empty now).
NOT_YET_NAMED: set[str] = set()


def test_every_must_rule_is_named_in_the_reference_or_declared():
    must = {r.id for r in CATALOGUE.rules.values() if r.level == "MUST"}
    missing = sorted(must - set(NAMED) - set(NO_ENGINE_CODE) - NOT_YET_NAMED)
    assert missing == [], ("MUST rules neither named in reference/ (# rule: <id> where the engine "
                           "decides it) nor declared in NO_ENGINE_CODE with a reason: " + ", ".join(missing))


def test_declarations_are_current():
    assert sorted(set(NO_ENGINE_CODE) - set(CATALOGUE.rules)) == []
    assert sorted(NOT_YET_NAMED - set(CATALOGUE.rules)) == []
    assert sorted(NOT_YET_NAMED & set(NAMED)) == [], "named now: remove them from NOT_YET_NAMED"
    assert sorted(set(NO_ENGINE_CODE) & set(NAMED)) == [], "named in reference/: drop the declaration"


def test_named_ids_exist():
    unknown = sorted(rule_id for rule_id in NAMED if rule_id not in CATALOGUE.rules
                     and rule_id.partition(".")[0] in CATALOGUE.suites)
    assert unknown == [], f"reference/ names rule ids the catalogue does not have: {unknown}"
