"""Saved-tensor hooks see PyTorch's packing order: its generated nodes save their variables
sorted by argument name, so ``a * b``, ``a / b``, ``atan2``, ``mm``... pack (and unpack)
``other`` before ``self`` (the saved-tensors-hooks tutorial prints that order)."""

import numpy as np
import pytest

import ember


def _order(lib, op, n=2):
    seen = []

    def pack(x):
        seen.append(("pack", float(x.reshape(-1)[0])))
        return x.detach()

    def unpack(x):
        seen.append(("unpack", float(x.reshape(-1)[0])))
        return x

    ins = [lib.full((3, 3), float(i + 1), requires_grad=True) * 1 for i in range(n)]
    for t in ins:
        t.retain_grad()
    with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = op(*ins)
    y.sum().backward()
    return seen, ins[0].grad.tolist()


@pytest.mark.parametrize("name", ["mul", "div"])
def test_binary_ops_pack_other_first(name):
    seen, grad = _order(ember, getattr(ember, name))
    assert seen == [("pack", 2.0), ("pack", 1.0), ("unpack", 2.0), ("unpack", 1.0)]
    assert grad == [[2.0] * 3 if name == "mul" else [0.5] * 3] * 3


def test_lerp_packs_end_self_weight():
    seen, _ = _order(ember, ember.lerp, 3)
    assert [v for kind, v in seen if kind == "pack"] == [2.0, 1.0, 3.0]


@pytest.mark.parametrize("name,n", [("mul", 2), ("div", 2), ("sub", 2), ("atan2", 2),
                                    ("maximum", 2), ("minimum", 2), ("fmod", 2), ("xlogy", 2),
                                    ("mm", 2), ("matmul", 2), ("logaddexp", 2), ("lerp", 3),
                                    ("addcmul", 3)])
def test_packing_order_matches_pytorch(name, n):
    torch = pytest.importorskip("torch")
    seen, grad = _order(ember, getattr(ember, name), n)
    want_seen, want_grad = _order(torch, getattr(torch, name), n)
    assert seen == want_seen
    np.testing.assert_allclose(grad, want_grad, rtol=1e-6)
