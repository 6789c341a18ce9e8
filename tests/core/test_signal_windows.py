"""``ember.signal.windows``: the window functions of ``torch.signal.windows``, their values
(float32 and float64, symmetric and periodic, lengths 0, 1, 2, odd and even, parameters),
keyword arguments and checks, against PyTorch; and how the module is reached."""

from __future__ import annotations

import inspect
import subprocess
import sys

import numpy as np
import pytest
from testutils import assert_same_error

import ember


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


NAMES = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
         "general_hamming", "hamming", "hann", "kaiser", "nuttall"]

#: keyword arguments per window: its defaults ({}), then other parameter values
PARAMS = {
    "bartlett": [{}], "blackman": [{}], "cosine": [{}], "hamming": [{}], "hann": [{}],
    "nuttall": [{}],
    "exponential": [{}, {"tau": 0.5}, {"tau": 3.0}, {"center": 1.0, "sym": False}],
    "gaussian": [{}, {"std": 0.3}, {"std": 4.0}],
    "general_cosine": [{"a": [0.46, 0.23, 0.31]}, {"a": (1.0,)}, {"a": [0.5, 0.5]}],
    "general_hamming": [{}, {"alpha": 0.5}, {"alpha": 0.9}],
    "kaiser": [{}, {"beta": 0.0}, {"beta": 2.5}, {"beta": 30.0}],
}
LENGTHS = (0, 1, 2, 3, 4, 7, 10, 33)


def test_the_module_is_torchs(torch):
    assert ember.signal.windows.__all__ == torch.signal.windows.__all__ == NAMES
    for name in NAMES:
        mine = inspect.signature(getattr(ember.signal.windows, name))
        theirs = inspect.signature(getattr(torch.signal.windows, name))
        assert list(mine.parameters) == list(theirs.parameters), name
        for p, q in zip(mine.parameters.values(), theirs.parameters.values()):
            assert p.kind == q.kind, (name, p.name)
            if p.name not in ("layout",):
                assert p.default == q.default or (p.default is q.default is inspect._empty), \
                    (name, p.name)
        assert getattr(ember.signal.windows, name).__doc__


def test_import_ember_reaches_signal_windows_lazily():
    code = ("import sys, ember; assert 'ember.signal' not in sys.modules; "
            "w = ember.signal.windows.hann(5); print(w.tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[0.0, 0.5, 1.0, 0.5, 0.0]"
    import ember.signal.windows as w

    assert w is ember.signal.windows


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_match_pytorch(name, dtype, torch):
    checked = 0
    for kwargs in PARAMS[name]:
        for sym in (True, False):
            if "center" in kwargs and sym:
                continue
            kw = {**kwargs, "sym": sym}
            for m in LENGTHS:
                got = getattr(ember.signal.windows, name)(m, dtype=getattr(ember, dtype), **kw)
                expected = getattr(torch.signal.windows, name)(
                    m, dtype=getattr(torch, dtype), **kw)
                assert got.dtype == getattr(ember, dtype) and tuple(got.shape) == (m,)
                tol = 1e-6 if dtype == "float32" else 1e-12
                np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=tol,
                                           atol=tol, err_msg=f"{name}({m}, {kw})")
                checked += 1
    assert checked >= 2 * len(LENGTHS)


def test_default_dtype_device_and_requires_grad(torch, testdev):
    w = ember.signal.windows.hann(4)
    assert w.dtype == ember.float32 and w.device == ember.get_default_device()
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.signal.windows.kaiser(5).dtype == ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    on = ember.signal.windows.gaussian(6, device=testdev)
    assert on.device == testdev
    np.testing.assert_allclose(on.cpu().numpy(), torch.signal.windows.gaussian(6).numpy(),
                               rtol=1e-6)
    for name in NAMES:
        kw = {"a": [0.5, 0.5]} if name == "general_cosine" else {}
        for m in (0, 1, 5):
            mine = getattr(ember.signal.windows, name)(m, requires_grad=True, **kw)
            theirs = getattr(torch.signal.windows, name)(m, requires_grad=True, **kw)
            assert mine.requires_grad == theirs.requires_grad, (name, m)
            assert (mine.grad_fn is None) == (theirs.grad_fn is None), (name, m)


@pytest.mark.parametrize("call", [
    lambda w, lib: w.hann(-1),
    lambda w, lib: w.hamming(-3),
    lambda w, lib: w.nuttall(-1),
    lambda w, lib: w.general_hamming(-1),
    lambda w, lib: w.blackman(-1),
    lambda w, lib: w.bartlett(-1),
    lambda w, lib: w.cosine(-2),
    lambda w, lib: w.kaiser(-1),
    lambda w, lib: w.gaussian(-1),
    lambda w, lib: w.exponential(-1),
    lambda w, lib: w.general_cosine(-1, a=[1.0]),
    lambda w, lib: w.general_cosine(4, a=[]),
    lambda w, lib: w.general_cosine(4, a=3),
    lambda w, lib: w.exponential(4, tau=0.0),
    lambda w, lib: w.exponential(4, tau=-1.0),
    lambda w, lib: w.exponential(4, center=1.0),
    lambda w, lib: w.gaussian(4, std=0.0),
    lambda w, lib: w.kaiser(4, beta=-1.0),
    lambda w, lib: w.general_cosine(4),
    lambda w, lib: w.hann(4, 1),
])
def test_checks_are_pytorchs(call, torch):
    assert_same_error(lambda: call(ember.signal.windows, ember),
                      lambda: call(torch.signal.windows, torch))


@pytest.mark.parametrize("name", ["hann", "kaiser", "general_cosine", "bartlett"])
def test_dtype_and_layout_checks_name_ember_objects(name, torch):
    kw = {"a": [1.0]} if name == "general_cosine" else {}
    fn, tfn = getattr(ember.signal.windows, name), getattr(torch.signal.windows, name)
    for bad, tbad in ((ember.int64, torch.int64), (ember.float16, torch.float16),
                      (ember.complex64, torch.complex64)):
        with pytest.raises(ValueError) as theirs:
            tfn(4, dtype=tbad, **kw)
        with pytest.raises(ValueError) as mine:
            fn(4, dtype=bad, **kw)
        assert str(mine.value) == str(theirs.value).replace("torch.", "ember.")
    with pytest.raises(ValueError) as theirs:
        tfn(4, layout=torch.sparse_coo, **kw)
    with pytest.raises(ValueError) as mine:
        fn(4, layout=ember.sparse_coo, **kw)
    assert str(mine.value) == str(theirs.value).replace("torch.", "ember.")


def test_zero_and_one_points_skip_the_coefficient_checks(torch):
    # PyTorch returns the trivial windows before it looks at the coefficients
    for m in (0, 1):
        for lib in (ember, torch):
            assert lib.signal.windows.general_cosine(m, a=[]).shape == (m,)
