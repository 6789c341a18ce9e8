"""PyTorch's refusals that Ember lacked: uniform_ bounds (infinite or NaN ends, a range wider
than the dtype), fill_ with a value that is no number, and the device-type list of the
device parser's error."""

import re

import pytest

import ember

_INF, _NAN = float("inf"), float("nan")


def _raises(lib, fn):
    try:
        fn(lib)
    except Exception as exc:  # the type and message are compared
        return type(exc).__name__, str(exc)
    return None


_UNIFORM = [
    (lambda lib: lib.empty(3).uniform_(0, _INF), "to is out of bounds for float"),
    (lambda lib: lib.empty(3).uniform_(_NAN, 1), "from is out of bounds for float"),
    (lambda lib: lib.empty(3, dtype=lib.float16).uniform_(0, 70000),
     "to is out of bounds for c10::Half"),
    (lambda lib: lib.empty(3, dtype=lib.bfloat16).uniform_(-_INF, 0),
     "from is out of bounds for c10::BFloat16"),
    (lambda lib: lib.empty(3).uniform_(-3e38, 3e38),
     "uniform_ expects to-from <= std::numeric_limits<Float>::max(), but found to=3e+38 and "
     "from=-3e+38 which result in to-from to exceed the limit"),
    (lambda lib: lib.nn.init.uniform_(lib.empty(3, dtype=lib.float64), 0, _INF),
     "to is out of bounds for double"),
]


@pytest.mark.parametrize("i", range(len(_UNIFORM)))
def test_uniform_bounds(i):
    fn, msg = _UNIFORM[i]
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        fn(ember)


@pytest.mark.parametrize("i", range(len(_UNIFORM)))
def test_uniform_bounds_match_pytorch(i):
    torch = pytest.importorskip("torch")
    fn, _ = _UNIFORM[i]
    assert _raises(ember, fn) == _raises(torch, fn)


def test_uniform_valid_ranges_still_draw():
    t = ember.empty(1000, dtype=ember.float64).uniform_(-1e300, 1e300)
    assert bool((t.abs() <= 1e300).all())
    t = ember.empty(100, dtype=ember.float16).uniform_(-60000, 0)
    assert bool((t <= 0).all())


@pytest.mark.parametrize("value,shown", [("a", "str"), (None, "NoneType"),
                                         ([1], "list of [int]")])
def test_fill_refuses_non_numbers(value, shown):
    with pytest.raises(TypeError, match=re.escape(
            f"fill_() received an invalid combination of arguments - got "
            f"({type(value).__name__}), but expected one of:\n * (Tensor value)\n      didn't "
            f"match because some of the arguments have invalid types: (!{shown}!)")):
        ember.empty(3).fill_(value)
    with pytest.raises(TypeError):
        ember.nn.init.constant_(ember.empty(3), value)


def test_fill_matches_pytorch():
    torch = pytest.importorskip("torch")
    for v in ("a", None, [1, 2.0]):
        assert _raises(ember, lambda lib, v=v: lib.empty(2).fill_(v)) == \
            _raises(torch, lambda lib, v=v: lib.empty(2).fill_(v))


@pytest.mark.parametrize("spec", ["foo", "gpu:0"])
def test_unknown_device_type_lists_pytorchs_types(spec):
    with pytest.raises(RuntimeError, match=re.escape(
            "Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, "
            f"maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type at start "
            f"of device string: {spec.partition(':')[0]}")):
        ember.device(spec)
    torch = pytest.importorskip("torch")
    assert _raises(ember, lambda lib: lib.zeros(1, device=spec)) == \
        _raises(torch, lambda lib: lib.zeros(1, device=spec))
