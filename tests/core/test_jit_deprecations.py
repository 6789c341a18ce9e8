"""TorchScript's entry points warn as PyTorch 2.13's do (``DeprecationWarning`` naming
``torch.jit.<name>``), ``ScriptModule.save`` does not, and ``torch.jit.isinstance`` /
``script_if_tracing`` exist with PyTorch's behaviour and errors."""
# ruff: noqa: UP006, UP035, UP045  (typing's container names are what TorchScript code writes)

import warnings
from typing import Dict, List, Optional, Tuple

import pytest

import ember
import ember.nn as nn


def _deprecations(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if w.category is DeprecationWarning]


def _msg(name, instead="switch to `torch.compile` or `torch.export`"):
    return f"`torch.jit.{name}` is deprecated. Please {instead}."


class Lin(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(2, 2)

    def forward(self, x):
        return self.l(x)


def _double(x):
    return x * 2


def test_each_entry_point_warns_as_pytorchs(tmp_path):
    x = ember.ones(1, 2)
    compile_ = "use `torch.compile` instead"
    assert _deprecations(lambda: ember.jit.script(Lin())) == [_msg("script")]
    assert _deprecations(lambda: ember.jit.trace(_double, x)) == [_msg("trace")] * 2
    assert _deprecations(lambda: ember.jit.trace(_double, x, check_trace=False)) == \
        [_msg("trace")]
    assert _deprecations(lambda: ember.jit.trace(Lin(), x)) == \
        [_msg("trace"), _msg("trace_method"), _msg("trace_method")]
    assert _deprecations(lambda: ember.jit.trace_module(Lin(), {"forward": x})) == \
        [_msg("trace_method")] * 2
    traced = ember.jit.trace(Lin(), x).eval()
    path = str(tmp_path / "m.pt")
    assert _deprecations(lambda: ember.jit.save(traced, path)) == \
        [_msg("save", "switch to `torch.export`")]
    assert _deprecations(lambda: traced.save(path)) == []
    assert _deprecations(lambda: ember.jit.load(path)) == \
        [_msg("load", "switch to `torch.export`")]
    assert _deprecations(lambda: ember.jit.freeze(traced)) == [_msg("freeze", compile_)]
    assert _deprecations(lambda: ember.jit.optimize_for_inference(traced)) == \
        [_msg("optimize_for_inference", compile_), _msg("freeze", compile_)]
    assert _deprecations(lambda: ember.jit.wait(ember.jit.fork(_double, x))) == \
        [_msg("fork", compile_), _msg("wait", compile_)]
    assert _deprecations(lambda: ember.jit.script_method(_double)) == [_msg("script_method")]
    assert _deprecations(lambda: ember.jit.annotate(int, 3)) == []


def test_optimize_for_inference_and_interface_check_their_argument():
    with pytest.raises(RuntimeError, match="optimize_for_inference expects a ScriptModule"):
        ember.jit.optimize_for_inference(Lin())
    with pytest.raises(RuntimeError, match="interface must be applied to a class"):
        ember.jit.interface(_double)

    class Iface:
        pass

    assert ember.jit.interface(Iface) is Iface


def test_isinstance_refines_containers_element_by_element():
    t = ember.ones(2)
    isinstance_ = ember.jit.isinstance
    assert isinstance_([t, t], List[ember.Tensor])
    assert not isinstance_([t, 1], List[ember.Tensor])
    assert isinstance_({"a": [1, 2]}, Dict[str, List[int]])
    assert not isinstance_({"a": [1, "b"]}, Dict[str, List[int]])
    assert isinstance_((1, "x"), Tuple[int, str])
    assert not isinstance_((1, "x", 2), Tuple[int, str])
    assert isinstance_(None, Optional[int]) and isinstance_(3, Optional[int])
    assert not isinstance_("s", Optional[int])
    assert isinstance_(3, (str, int)) and isinstance_(t, ember.Tensor)
    with pytest.raises(RuntimeError, match=r"Attempted to use list without a contained type. "
                                           r"Please add a contained type, e.g. list\[int\]"):
        isinstance_([1], list)
    with pytest.raises(RuntimeError, match=r"Attempted to use Dict without contained types. "
                                           r"Please add contained type, e.g. Dict\[int, int\]"):
        isinstance_({}, Dict)
    with pytest.raises(RuntimeError, match="must be a type or a tuple of types"):
        isinstance_(1, [int])
    with pytest.warns(UserWarning, match="The inner type of a container is lost"):
        assert isinstance_([], List[int])


def test_isinstance_matches_pytorch():
    torch = pytest.importorskip("torch")
    cases = [([1, 2], List[int]), ([1.0], List[int]), ({"a": (1, 2)}, Dict[str, Tuple[int, int]]),
             ((1,), Tuple[int, int]), (None, Optional[List[int]]), ([[1], [2]], List[List[int]]),
             ([1, 2], list[int]), ({"a": [1]}, dict[str, list[int]]), ((1, "a"), tuple[int, str]),
             (3, int | None), ("s", int | None)]
    for obj, typ in cases:
        assert ember.jit.isinstance(obj, typ) == torch.jit.isinstance(obj, typ), (obj, typ)


def test_script_if_tracing_runs_the_function_and_is_recorded_in_a_trace():
    @ember.jit.script_if_tracing
    def clip(x):
        return x.clamp(max=1.0) if bool((x > 1).any()) else x

    x = ember.tensor([0.5, 2.0])
    assert clip(x).tolist() == [0.5, 1.0]
    assert clip.__name__ == "clip"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        traced = ember.jit.trace(lambda x: clip(x) * 2, x, check_trace=False)
    assert traced(ember.tensor([3.0, 0.0])).tolist() == [2.0, 0.0]
