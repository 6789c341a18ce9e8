"""Writes into memory that several elements share, and writes from an input that overlaps the
written tensor in part: PyTorch's rules (its ``has_internal_overlap`` / ``get_overlap_status``).

expand's views share memory between elements. PyTorch still writes through them where every
write to one location is the same (``fill_`` with a number, ``zero_``, a region without shared
elements reached by a basic index), and with a deprecation warning through ``index_put_``,
``masked_fill_`` and ``index_fill_``; other writes are refused. An input that overlaps the
written tensor in part (``x[1:] = x[:-1]``) is refused by ``copy_`` and the elementwise
in-place ops. Each case compares with PyTorch when it is installed."""

import re
import warnings

import pytest

import ember
from tests.testutils import outcome

SHARED = ("unsupported operation: more than one element of the written-to tensor refers to a "
          "single memory location. Please clone() the tensor before performing the operation.")
PARTIAL = ("unsupported operation: some elements of the input tensor and the written-to tensor "
           "refer to a single memory location. Please clone() the tensor before performing the "
           "operation.")


def _expanded(torch):
    x = torch.zeros(1, 4)
    return x, x.expand(3, 4)


def _then(fn, result):
    def run(torch):
        x, y = _expanded(torch)
        fn(torch, x, y)
        return result(x, y).tolist()
    return run


WRITES = {  # name: (program on torch/ember, expected value of x (a list) or error message)
    "fill_": (_then(lambda t, x, y: y.fill_(1.0), lambda x, y: x), [[1.0] * 4]),
    "zero_": (_then(lambda t, x, y: (x.fill_(2), y.zero_()), lambda x, y: y), [[0.0] * 4] * 3),
    "fill_ int": (lambda t: t.zeros(4, dtype=t.int64).expand(3, 4).fill_(2)[0].tolist(),
                  [2] * 4),
    "fill_ t() view": (_then(lambda t, x, y: y.t().fill_(2.0), lambda x, y: x), [[2.0] * 4]),
    "fill_ sliced view": (_then(lambda t, x, y: y[1:, 2:].fill_(2.0), lambda x, y: x),
                          [[0.0, 0.0, 2.0, 2.0]]),
    "fill_ detached": (_then(lambda t, x, y: y.detach().fill_(3.0), lambda x, y: x),
                       [[3.0] * 4]),
    "fill_ tensor": (_then(lambda t, x, y: y.fill_(t.tensor(3.0)), lambda x, y: x), SHARED),
    "setitem row": (_then(lambda t, x, y: y.__setitem__(0, 2.0), lambda x, y: x), [[2.0] * 4]),
    "setitem element": (_then(lambda t, x, y: y.__setitem__((0, 1), 2.0), lambda x, y: x),
                        [[0.0, 2.0, 0.0, 0.0]]),
    "setitem row tensor": (_then(lambda t, x, y: y.__setitem__(0, t.arange(4.0)),
                                 lambda x, y: x), [[0.0, 1.0, 2.0, 3.0]]),
    "setitem all": (_then(lambda t, x, y: y.__setitem__(slice(None), 5.0), lambda x, y: x),
                    SHARED),
    "setitem column": (_then(lambda t, x, y: y.__setitem__((slice(None), 1), t.tensor(7.0)),
                             lambda x, y: x), SHARED),
    "setitem ellipsis tensor": (_then(lambda t, x, y: y.__setitem__(..., t.arange(4.0)),
                                      lambda x, y: x), SHARED),
    "index setitem": (_then(lambda t, x, y: y.__setitem__([0, 1], 3.0), lambda x, y: x),
                      [[3.0] * 4]),
    "mask setitem": (_then(lambda t, x, y: y.__setitem__(y == 0, 3.0), lambda x, y: x),
                     [[3.0] * 4]),
    "index_put_": (_then(lambda t, x, y: y.index_put_((t.tensor([0]),), t.tensor(1.0)),
                         lambda x, y: x), [[1.0] * 4]),
    "index_put_ accumulate": (_then(lambda t, x, y: y.index_put_(
        (t.tensor([0]),), t.tensor(1.0), accumulate=True), lambda x, y: x), [[1.0] * 4]),
    "masked_fill_": (_then(lambda t, x, y: y.masked_fill_(t.ones(3, 4, dtype=t.bool), 3.0),
                           lambda x, y: x), [[3.0] * 4]),
    "index_fill_": (_then(lambda t, x, y: y.index_fill_(1, t.tensor([2]), 3.0),
                          lambda x, y: x), [[0.0, 0.0, 3.0, 0.0]]),
    "add_": (_then(lambda t, x, y: y.add_(1.0), lambda x, y: x), SHARED),
    "copy_": (_then(lambda t, x, y: y.copy_(t.ones(3, 4)), lambda x, y: x), SHARED),
    "exp out=": (_then(lambda t, x, y: t.exp(t.ones(3, 4), out=y), lambda x, y: x), SHARED),
    "mm out=": (_then(lambda t, x, y: t.mm(t.ones(3, 2), t.ones(2, 4), out=y),
                      lambda x, y: x), SHARED),
    "cat out=": (_then(lambda t, x, y: t.cat([t.ones(1, 4)] * 3, out=y), lambda x, y: x),
                 SHARED),
    # an input overlapping the written tensor in part
    "shift right": (lambda t: _shift(t, lambda x: x.__setitem__(slice(1, None), x[:-1])),
                    PARTIAL),
    "shift left": (lambda t: _shift(t, lambda x: x.__setitem__(slice(None, -1), x[1:])),
                   PARTIAL),
    "copy_ shifted": (lambda t: _shift(t, lambda x: x[1:].copy_(x[:-1])), PARTIAL),
    "add_ shifted": (lambda t: _shift(t, lambda x: x[1:].add_(x[:-1])), PARTIAL),
    "mul_ shifted": (lambda t: _shift(t, lambda x: x[:-1].mul_(x[1:])), PARTIAL),
    "copy_ transposed": (lambda t: _square(t, lambda x: x.copy_(x.t())), PARTIAL),
    "add_ transposed": (lambda t: _square(t, lambda x: x.add_(x.t())), PARTIAL),
    "addcmul_ shifted": (lambda t: _shift(t, lambda x: x[1:].addcmul_(t.ones(4), x[:-1])),
                         PARTIAL),
    "clamp_ min= shifted": (lambda t: _shift(t, lambda x: x[1:].clamp_(min=x[:-1])), PARTIAL),
    "sub_ an element of itself": (lambda t: _shift(t, lambda x: x.sub_(x[2])), PARTIAL),
    # the same memory in the same layout, or none of it, is no partial overlap
    "add_ itself": (lambda t: _shift(t, lambda x: x.add_(x)), [0.0, 2.0, 4.0, 6.0, 8.0]),
    "copy_ itself": (lambda t: _shift(t, lambda x: x.copy_(x)), [0.0, 1.0, 2.0, 3.0, 4.0]),
    "setitem itself": (lambda t: _shift(t, lambda x: x.__setitem__(slice(None), x)),
                       [0.0, 1.0, 2.0, 3.0, 4.0]),
    "disjoint halves": (lambda t: _shift(t, lambda x: x[3:].copy_(x[:2])),
                        [0.0, 1.0, 2.0, 0.0, 1.0]),
    "strided, too hard to check": (lambda t: _shift(t, lambda x: x[1::2].copy_(x[::2][:2])),
                                   [0.0, 0.0, 2.0, 2.0, 4.0]),
}


def _shift(torch, write):
    x = torch.arange(5.0)
    write(x)
    return x.tolist()


def _square(torch, write):
    x = torch.arange(4.0).view(2, 2)
    write(x)
    return x.tolist()


@pytest.mark.parametrize("name", list(WRITES))
def test_writes_match_pytorch(name):
    fn, expected = WRITES[name]
    got = outcome(fn, ember)
    if isinstance(expected, str):
        assert got == ("RuntimeError", expected)
    else:
        assert got == ("ok", repr(expected))
    try:
        import torch
    except ImportError:
        return
    assert got == outcome(fn, torch)


@pytest.mark.parametrize("write, names", [
    (lambda t, y: y.__setitem__([0], 1.0), ["index_put_"]),
    (lambda t, y: y.__setitem__(y == 0, 1.0), ["index_put_", "masked_fill_"]),
    (lambda t, y: y.masked_fill_(t.ones(3, 4, dtype=t.bool), 3.0), ["masked_fill_"]),
    (lambda t, y: y.index_fill_(0, t.tensor([0]), 3.0), ["index_fill_"]),
    (lambda t, y: y.__setitem__(0, 1.0), []),
    (lambda t, y: y.fill_(1.0), []),
])
def test_deprecation_warnings_of_writes_into_expanded_tensors(write, names):
    def warned(torch):
        _, y = _expanded(torch)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            write(torch, y)
        return [str(w.message) for w in caught]

    got = warned(ember)
    assert [m.split(" ")[2] for m in got] == names
    for m in got:
        assert re.fullmatch(r"Use of \w+_ on expanded tensors is deprecated\. Please clone\(\) "
                            r"the tensor before performing this operation\. This also applies "
                            r"to advanced indexing e\.g\. tensor\[(indices|mask)\] = "
                            r"(tensor|scalar)", m)
    try:
        import torch
    except ImportError:
        return
    want = [m.split(" (Triggered internally")[0] for m in warned(torch)]
    assert got == want


def test_fill_through_an_expanded_view_under_autograd():
    # the write is recorded (CopySlices); PyTorch's backward then refuses to scatter the
    # gradient through the expanded view, and so does Ember's
    def run(torch):
        x = torch.zeros(1, 4, requires_grad=True)
        z = x.clone()
        z.expand(3, 4).zero_()
        z[0, 1] = 2.0
        assert "CopySlices" in z.grad_fn.name() and z.tolist() == [[0.0, 2.0, 0.0, 0.0]]
        z.sum().backward()
        return x.grad

    assert outcome(run, ember) == ("RuntimeError", SHARED)
    try:
        import torch
    except ImportError:
        return
    assert outcome(run, torch) == ("RuntimeError", SHARED)


def test_read_only_numpy_memory_is_not_made_writable():
    import numpy as np

    a = np.zeros(3)
    a.flags.writeable = False
    with warnings.catch_warnings():  # PyTorch's not-writable warning, once a process
        warnings.simplefilter("ignore")
        t = ember.from_numpy(a)
    with pytest.raises((RuntimeError, ValueError)):
        t.expand(2, 3).fill_(1.0)
    assert a.tolist() == [0.0] * 3
