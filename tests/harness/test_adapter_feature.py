"""``Adapter.feature`` maps a missing attribute of the framework to UNSUPPORTED, and nothing else."""
import types

import pytest

from adapters.base import Adapter, Unsupported


class _Adapter(Adapter):
    name = "demo"


def _framework_module():
    """A framework whose code lives outside this repository (its own file), as a real one does."""
    ns = {}
    code = compile("class Node:\n    @property\n    def metadata(self):\n"
                   "        raise AttributeError('internal field _md unset')\n", "/fakefw/node.py", "exec")
    exec(code, ns)
    return types.SimpleNamespace(Node=ns["Node"], autograd=types.SimpleNamespace())


def test_a_missing_attribute_is_unsupported():
    fw = _framework_module()
    with pytest.raises(Unsupported, match="demo does not support forward_ad"):
        _Adapter().feature("forward_ad", fw.autograd, "forward_ad")
    with pytest.raises(Unsupported):
        _Adapter().feature("forward_ad", lambda: fw.autograd.forward_ad)


def test_an_attribute_error_raised_inside_framework_code_is_not_a_missing_feature():
    node = _framework_module().Node()
    with pytest.raises(AttributeError, match="internal field"):
        _Adapter().feature("node_metadata", node, "metadata")
    with pytest.raises(AttributeError, match="internal field"):
        _Adapter().feature("node_metadata", lambda: node.metadata)


def test_a_present_attribute_is_returned():
    fw = types.SimpleNamespace(grad=len)
    assert _Adapter().feature("grad", fw, "grad") is len
    assert _Adapter().feature("grad", lambda: fw.grad) is len
