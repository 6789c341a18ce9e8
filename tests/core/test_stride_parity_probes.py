"""``stride()`` of size-1 dims that indexing with None adds: PyTorch gives them the next dim's
size times its stride (as unsqueeze does), where NumPy's newaxis has stride 0."""

import pytest

import ember

_CASES = {
    "front": (lambda lib: lib.arange(6.).reshape(2, 3)[None], (6, 3, 1)),
    "middle": (lambda lib: lib.arange(6.).reshape(2, 3)[:, None], (3, 3, 1)),
    "two": (lambda lib: lib.arange(6.).reshape(2, 3)[:, None, :, None], (3, 3, 1, 1)),
    "selected": (lambda lib: lib.arange(6.).reshape(2, 3)[0][None], (3, 1)),
    "bias_row": (lambda lib: lib.zeros(3)[None, :], (3, 1)),
    "expanded_stays_zero": (lambda lib: lib.zeros(1).expand(1, 3), (0, 0)),
    "expanded_new_dim": (lambda lib: lib.zeros(3)[None].expand(2, 1, 3), (0, 3, 1)),
    "unsqueeze": (lambda lib: lib.arange(6.).reshape(2, 3).unsqueeze(1), (3, 3, 1)),
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_strides(case):
    make, want = _CASES[case]
    t = make(ember)
    assert t.stride() == want
    assert t.stride(0) == want[0] and t.stride(-1) == want[-1]


@pytest.mark.parametrize("case", sorted(_CASES))
def test_strides_match_pytorch(case):
    torch = pytest.importorskip("torch")
    make, _ = _CASES[case]
    t, r = make(ember), make(torch)
    assert (t.stride(), t.is_contiguous()) == (r.stride(), r.is_contiguous())
