"""ember.nn.utils.prune: masks, hooks, iterative pruning and removal, against NumPy and,
where installed, PyTorch."""

import numpy as np
import pytest
from testutils import to_numpy

import ember
import ember.nn as nn
from ember.nn.utils import prune


def distinct_linear(out_features=3, in_features=4, seed=0):
    """A float64 Linear whose weights have distinct absolute values (no ties to break)."""
    m = nn.Linear(in_features, out_features, dtype=ember.float64)
    n = out_features * in_features
    values = np.random.default_rng(seed).permutation(np.arange(1, n + 1)) / n
    signs = np.where(np.random.default_rng(seed + 1).random(n) < 0.5, -1, 1)
    with ember.no_grad():
        m.weight.copy_(ember.tensor((values * signs).reshape(out_features, in_features)))
    return m


def torch_twin(m):
    torch = pytest.importorskip("torch")
    t = torch.nn.Linear(m.in_features, m.out_features, dtype=torch.float64)
    with torch.no_grad():
        t.weight.copy_(torch.tensor(to_numpy(m.weight)))
        t.bias.copy_(torch.tensor(to_numpy(m.bias)))
    return t


# -- the pruning layout -------------------------------------------------------------------------

def test_l1_unstructured_layout_and_values():
    m = distinct_linear()
    w = to_numpy(m.weight).copy()
    p = m.weight
    prune.l1_unstructured(m, "weight", amount=5)
    assert m.weight_orig is p and "weight" not in m._parameters
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    expected_mask = (np.abs(w) > np.sort(np.abs(w).ravel())[4]).astype(np.float64)
    np.testing.assert_array_equal(to_numpy(m.weight_mask), expected_mask)
    np.testing.assert_array_equal(to_numpy(m.weight), w * expected_mask)
    assert prune.is_pruned(m) and prune.is_pruned(nn.Sequential(m))
    assert not prune.is_pruned(nn.Linear(2, 2))


def test_forward_pre_hook_recomputes_the_pruned_weight():
    m = distinct_linear()
    prune.l1_unstructured(m, "weight", amount=0.5)
    with ember.no_grad():
        m.weight_orig.add_(1.0)
    m(ember.ones(1, 4, dtype=ember.float64))
    np.testing.assert_allclose(to_numpy(m.weight), to_numpy(m.weight_orig * m.weight_mask))
    m(ember.ones(2, 4, dtype=ember.float64)).sum().backward()
    # the gradient reaches weight_orig only where the mask keeps it
    np.testing.assert_allclose(to_numpy(m.weight_orig.grad), 2 * to_numpy(m.weight_mask))


def test_amount_int_or_fraction_and_validation():
    m = distinct_linear(4, 5)
    prune.random_unstructured(m, "weight", amount=0.3)
    assert int((m.weight_mask == 0).sum()) == 6
    with pytest.raises(ValueError, match=r"amount=1.5 should either be a float in the range "
                                         r"\[0, 1\] or a non-negative integer"):
        prune.l1_unstructured(nn.Linear(2, 2), "weight", amount=1.5)
    with pytest.raises(ValueError, match="should either be a float"):
        prune.l1_unstructured(nn.Linear(2, 2), "weight", amount=-1)
    with pytest.raises(TypeError, match="Invalid type for amount"):
        prune.l1_unstructured(nn.Linear(2, 2), "weight", amount="half")
    m = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="amount=5 should be smaller than the number of "
                                         "parameters to prune=4"):
        prune.l1_unstructured(m, "weight", amount=5)
    assert "weight" in m._parameters and not prune.is_pruned(m)  # rolled back


def test_importance_scores():
    m = distinct_linear()
    scores = ember.arange(12, dtype=ember.float64).reshape(3, 4)
    prune.l1_unstructured(m, "weight", amount=4, importance_scores=scores)
    expected = np.ones((3, 4))
    expected.ravel()[:4] = 0
    np.testing.assert_array_equal(to_numpy(m.weight_mask), expected)
    with pytest.raises(AssertionError, match="importance_scores should have the same shape"):
        prune.l1_unstructured(nn.Linear(2, 2), "weight", 1, importance_scores=ember.ones(3))


def test_ln_structured_prunes_whole_channels():
    m = distinct_linear(4, 5)
    w = to_numpy(m.weight).copy()
    prune.ln_structured(m, "weight", amount=2, n=2, dim=0)
    kept = np.argsort(np.linalg.norm(w, axis=1))[2:]
    expected = np.zeros((4, 5))
    expected[kept] = 1
    np.testing.assert_array_equal(to_numpy(m.weight_mask), expected)
    m = distinct_linear(4, 5)
    prune.ln_structured(m, "weight", amount=0.4, n=1, dim=-1)
    assert (to_numpy(m.weight_mask).sum(0) == 0).sum() == 2
    with pytest.raises(ValueError, match="Structured pruning can only be applied to "
                                         "multidimensional tensors"):
        prune.ln_structured(nn.Linear(2, 2), "bias", amount=1, n=2, dim=0)
    with pytest.raises(IndexError, match="Invalid index 2 for tensor of size"):
        prune.ln_structured(nn.Linear(2, 2), "weight", amount=1, n=2, dim=2)


def test_random_structured_prunes_whole_channels():
    m = nn.Conv2d(3, 6, 3)
    prune.random_structured(m, "weight", amount=2, dim=0)
    per_channel = to_numpy(m.weight_mask).reshape(6, -1)
    assert sorted(per_channel.min(1)) == sorted(per_channel.max(1))  # all or nothing
    assert (per_channel.max(1) == 0).sum() == 2


def test_iterative_pruning_combines_masks_in_a_container():
    m = distinct_linear(4, 5)
    prune.l1_unstructured(m, "weight", amount=4)
    first = to_numpy(m.weight_mask).copy()
    prune.ln_structured(m, "weight", amount=1, n=2, dim=0)
    hooks = [h for h in m._forward_pre_hooks.values() if isinstance(h, prune.BasePruningMethod)]
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer)
    assert [type(h) for h in hooks[0]] == [prune.L1Unstructured, prune.LnStructured]
    second = to_numpy(m.weight_mask)
    assert np.all(second <= first)  # nothing pruned comes back
    assert (second.sum(1) == 0).sum() == 1  # plus one whole row
    prune.l1_unstructured(m, "weight", amount=3)
    third = to_numpy(m.weight_mask)
    assert np.all(third <= second) and (second - third).sum() == 3
    assert len(hooks[0]) == 3


def test_remove_makes_pruning_permanent():
    m = distinct_linear()
    p = m.weight
    prune.l1_unstructured(m, "weight", amount=6)
    pruned = to_numpy(m.weight).copy()
    prune.remove(m, "weight")
    assert m.weight is p and isinstance(m.weight, nn.Parameter)
    assert list(m.state_dict()) == ["bias", "weight"] and not prune.is_pruned(m)
    np.testing.assert_array_equal(to_numpy(m.weight), pruned)
    with pytest.raises(ValueError, match="Parameter 'weight' of module .* has to be pruned "
                                         "before pruning can be removed"):
        prune.remove(m, "weight")


def test_identity_and_custom_from_mask():
    m = prune.identity(nn.Linear(3, 2), "weight")
    np.testing.assert_array_equal(to_numpy(m.weight_mask), np.ones((2, 3)))
    mask = ember.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    prune.custom_from_mask(m, "weight", mask)
    np.testing.assert_array_equal(to_numpy(m.weight_mask), to_numpy(mask))
    np.testing.assert_array_equal(to_numpy(m.weight), to_numpy(m.weight_orig) * to_numpy(mask))


def test_global_unstructured_ranks_all_tensors_together():
    a, b = distinct_linear(2, 3, seed=1), distinct_linear(3, 2, seed=2)
    with ember.no_grad():
        b.weight.mul_(10)  # b's entries are all larger: a loses them all first
    prune.global_unstructured([(a, "weight"), (b, "weight")], prune.L1Unstructured, amount=6)
    assert int(a.weight_mask.sum()) == 0 and int(b.weight_mask.sum()) == 6
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE supported'):
        prune.global_unstructured([(nn.Linear(2, 2), "weight")], prune.LnStructured, amount=1,
                                  n=2, dim=0)


def test_prune_method_on_a_tensor():
    t = ember.tensor([[0.1, -3.0], [2.0, -0.5]])
    np.testing.assert_array_equal(to_numpy(prune.L1Unstructured(amount=2).prune(t)),
                                  [[0.0, -3.0], [2.0, 0.0]])


def test_custom_pruning_method():
    class EveryOther(prune.BasePruningMethod):
        PRUNING_TYPE = "unstructured"

        def compute_mask(self, t, default_mask):
            mask = default_mask.clone()
            mask.view(-1)[::2] = 0
            return mask

    m = nn.Linear(2, 2)
    EveryOther.apply(m, "bias")
    np.testing.assert_array_equal(to_numpy(m.bias_mask), [0.0, 1.0])


# -- PyTorch parity ---------------------------------------------------------------------------

def test_matches_torch_iterative_pruning_and_remove():
    torch = pytest.importorskip("torch")
    import torch.nn.utils.prune as tprune

    e = distinct_linear(5, 6, seed=3)
    t = torch_twin(e)
    for fn, kwargs in [("l1_unstructured", {"amount": 0.2}),
                       ("ln_structured", {"amount": 1, "n": 1, "dim": 1}),
                       ("l1_unstructured", {"amount": 4}),
                       ("ln_structured", {"amount": 0.25, "n": float("inf"), "dim": 0})]:
        getattr(prune, fn)(e, "weight", **kwargs)
        getattr(tprune, fn)(t, "weight", **kwargs)
        assert list(e.state_dict()) == list(t.state_dict())
        np.testing.assert_array_equal(to_numpy(e.weight_mask), to_numpy(t.weight_mask))
    x = np.random.default_rng(0).standard_normal((2, 6))
    np.testing.assert_allclose(to_numpy(e(ember.tensor(x))), to_numpy(t(torch.tensor(x))))
    prune.remove(e, "weight")
    tprune.remove(t, "weight")
    assert list(e.state_dict()) == list(t.state_dict())
    np.testing.assert_array_equal(to_numpy(e.weight), to_numpy(t.weight))


def test_global_unstructured_matches_torch():
    pytest.importorskip("torch")
    import torch.nn.utils.prune as tprune

    e1, e2 = distinct_linear(3, 4, seed=4), distinct_linear(4, 2, seed=5)
    with ember.no_grad():
        e2.weight.mul_(0.7)
    t1, t2 = torch_twin(e1), torch_twin(e2)
    prune.global_unstructured([(e1, "weight"), (e2, "weight")], prune.L1Unstructured,
                              amount=0.5)
    tprune.global_unstructured([(t1, "weight"), (t2, "weight")], tprune.L1Unstructured,
                               amount=0.5)
    for e, t in ((e1, t1), (e2, t2)):
        np.testing.assert_array_equal(to_numpy(e.weight_mask), to_numpy(t.weight_mask))
