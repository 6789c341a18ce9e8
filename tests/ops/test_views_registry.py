"""The registry's ``view`` flag, checked with the op database's samples.

An op registered ``view=True`` returns views, as in PyTorch: each tensor it returns shares
memory with one of its inputs, so that a write through the result changes that input (as
PyTorch's does on the same sample) and bumps the version counter they share. An expanded
result, which Ember keeps read-only where PyTorch lets single elements be written, is checked
from the input's side: it follows in-place changes of the input.

An op tagged ``view_if_possible`` (reshape, flatten, ravel, atleast_*) returns a view exactly
where PyTorch does: sample by sample, its result shares memory with an input in both or in
neither.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.ops.opdb import load_all
from ember.ops.registry import OPS

ENTRIES = load_all()
VIEW_OPS = sorted(n for n, info in OPS.items() if info.view)
MAYBE_VIEW_OPS = sorted(n for n, info in OPS.items() if "view_if_possible" in info.tags)

#: ops whose results are views in PyTorch (``torch.Tensor._is_view()``), by name
TORCH_VIEW_OPS = {"adjoint", "as_strided", "broadcast_to", "broadcast_tensors", "chunk",
                  "diagonal", "dsplit", "hsplit", "meshgrid", "movedim", "narrow", "permute",
                  "select", "split", "split_with_sizes", "squeeze", "swapaxes", "swapdims",
                  "t", "tensor_split", "transpose", "unbind", "unflatten", "unsqueeze",
                  "vsplit"}

#: written through a result, far from the samples' values
MARK = 1234.5


def _torch():
    return pytest.importorskip("torch")


def _results(r, cls=ember.Tensor) -> list:
    """The tensors (of class ``cls``) an op returned: one, or those of a tuple or list."""
    if isinstance(r, cls):
        return [r]
    if isinstance(r, (tuple, list)):
        return [o for o in r if isinstance(o, cls)]
    return []


def _torch_sample(torch, s):
    """Sample ``s`` with every tensor replaced by a PyTorch copy (same values, contiguous):
    ``(input, args, kwargs)``, and the copies in the order of ``s.tensors()``."""
    copies = {}

    def conv(x):
        if isinstance(x, ember.Tensor):
            if id(x) not in copies:
                copies[id(x)] = torch.from_numpy(np.array(x.numpy()))
            return copies[id(x)]
        if type(x) in (list, tuple):
            return type(x)(conv(v) for v in x)
        if type(x) is dict:
            return {k: conv(v) for k, v in x.items()}
        return x

    call = (conv(s.input), conv(s.args), conv(s.kwargs))
    return call, [copies[id(t)] for t in s.tensors()]


def _torch_fn(torch, name):
    for ns in (torch, torch.Tensor):
        fn = getattr(ns, name, None)
        if fn is not None:
            return fn
    raise AttributeError(name)


def test_the_registry_marks_pytorchs_view_ops():
    assert TORCH_VIEW_OPS - set(VIEW_OPS) == set(), "view ops not registered view=True"
    assert {"reshape", "flatten", "ravel", "atleast_1d", "atleast_2d",
            "atleast_3d"} <= set(MAYBE_VIEW_OPS)
    both = set(VIEW_OPS) & set(MAYBE_VIEW_OPS)
    assert not both, f"ops both view=True and view_if_possible: {both}"


@pytest.mark.parametrize("name", VIEW_OPS + MAYBE_VIEW_OPS)
def test_view_ops_have_samples(name):
    assert name in ENTRIES, f"{name}: no samples in ember.ops.opdb to check its views with"


@pytest.mark.parametrize("name", VIEW_OPS)
def test_view_results_write_through_to_the_input(name):
    torch = _torch()
    e, op = ENTRIES[name], OPS[name].fn
    tfn = _torch_fn(torch, e.torch or name)
    checked = 0
    for s in e.samples("cpu", "float64"):
        inputs = s.tensors()
        (t_input, t_args, t_kwargs), t_inputs = _torch_sample(torch, s)
        outs = _results(s.call(op))
        t_outs = _results(tfn(t_input, *t_args, **t_kwargs), torch.Tensor)
        assert len(outs) == len(t_outs), f"{name} {s}: {len(outs)} results, torch's " \
                                         f"{len(t_outs)}"
        for k, (out, t_out) in enumerate(zip(outs, t_outs)):
            what = f"{name} {s} result {k}"
            if any(out is t for t in inputs):  # PyTorch's too: ``real`` of a real tensor is it
                assert any(t_out is t for t in t_inputs), f"{what}: the input itself, not torch's"
                checked += 1
                continue
            assert out._base is not None, f"{what}: not a view (no _base)"
            if not out.numpy().flags.writeable:
                _check_from_the_input_side(what, inputs, t_inputs, out, t_out)
                checked += out.numel() > 0
                continue
            versions = [t._version for t in inputs]
            if out.numel() == 0:  # nothing to write through; the version is still shared
                out.zero_()
                assert any(t._version > v for t, v in zip(inputs, versions)), \
                    f"{what}: an in-place op on the (empty) result bumped no input's version"
                continue
            before = [np.array(t.numpy()) for t in inputs]
            first = (0,) * out.ndim
            out[first] = MARK
            t_out[first] = MARK
            changed = [i for i, (t, b) in enumerate(zip(inputs, before))
                       if not np.array_equal(t.numpy(), b)]
            assert changed, f"{what}: writing through the result changed no input"
            for i in changed:
                assert inputs[i]._version > versions[i], \
                    f"{what}: input {i} changed, but its version did not"
                assert inputs[i]._version == out._version, \
                    f"{what}: input {i} and the result do not share the version counter"
            for i, (t, tt) in enumerate(zip(inputs, t_inputs)):
                np.testing.assert_array_equal(t.numpy(), tt.numpy(),
                                              err_msg=f"{what}: input {i} vs torch's")
            checked += 1
    assert checked, f"{name}: no sample with a non-empty result"


def _check_from_the_input_side(what, inputs, t_inputs, out, t_out):
    """For a result that Ember keeps read-only (an expanded view: elements that share memory),
    where PyTorch lets a single element be written: change the inputs in place, one at a
    time, and check that the result follows as PyTorch's does and shares a version counter
    with one of them."""
    shared = False
    for t, tt in zip(inputs, t_inputs):
        if not t.is_floating_point():
            continue
        v = out._version
        t.add_(1.0)
        tt.add_(1.0)
        shared = shared or out._version > v
    assert shared, f"{what}: the result shares no input's version counter"
    np.testing.assert_array_equal(out.numpy(), t_out.numpy(),
                                  err_msg=f"{what}: after changing the inputs, vs torch's")


def _shares(out, inp) -> bool:
    return bool(np.shares_memory(out, inp))


@pytest.mark.parametrize("name", MAYBE_VIEW_OPS)
def test_views_where_pytorch_gives_views(name):
    """Same memory as PyTorch's result, sample by sample: PyTorch runs on the very arrays
    (``torch.from_numpy`` keeps their strides), and each result either shares memory with
    an input in both or in neither."""
    torch = _torch()
    e, op = ENTRIES[name], OPS[name].fn
    tfn = _torch_fn(torch, e.torch or name)
    for s in e.samples("cpu", "float64"):
        inputs = s.tensors()
        arrays = [t.numpy() for t in inputs]
        shared = {id(t): torch.from_numpy(a) for t, a in zip(inputs, arrays)}
        t_call = s.map_tensors(lambda t, sh=shared: sh[id(t)])
        outs = _results(s.call(op))
        t_outs = _results(t_call.call(tfn), torch.Tensor)
        assert len(outs) == len(t_outs)
        for k, (out, t_out) in enumerate(zip(outs, t_outs)):
            ours = [_shares(out.numpy(), a) for a in arrays]
            theirs = [_shares(t_out.numpy(), a) for a in arrays]
            assert ours == theirs, f"{name} {s} result {k}: shares memory with inputs " \
                                   f"{ours}, torch's {theirs}"
            same = [out is t for t in inputs]
            assert same == [t_out is shared[id(t)] for t in inputs], \
                f"{name} {s} result {k}: returns an input itself {same}, unlike torch"
            if not any(same):  # a view has a base, a copy (or the input itself) none
                assert (out._base is None) == (t_out._base is None), \
                    f"{name} {s} result {k}: _base {out._base is not None}, torch's " \
                    f"{t_out._base is not None}"
            if any(ours):
                i = ours.index(True)
                v = inputs[i]._version
                out.add_(0)
                assert inputs[i]._version > v and inputs[i]._version == out._version


def test_ravel_copies_a_noncontiguous_input():
    x = ember.arange(12.0).reshape(3, 4).clone()
    assert ember.ravel(x)._base is x and ember.ravel(x[1:])._base is x
    r = ember.ravel(x[:, ::2])
    assert r.is_contiguous() and not np.shares_memory(r.numpy(), x.numpy())
    np.testing.assert_array_equal(r.numpy(), [0, 2, 4, 6, 8, 10])
    x.requires_grad_(True)
    r = x.t().ravel()
    assert r.grad_fn.name() == "ViewBackward0"
    r.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((3, 4)))


def test_diff_of_order_zero_is_a_copy():
    x = ember.arange(5.0, requires_grad=True)
    d = ember.diff(x, n=0)
    assert d is not x and not np.shares_memory(d.detach().numpy(), x.detach().numpy())
    d.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(5))
