"""Ops whose output shape depends on the values, under vmap: PyTorch 2.13 refuses nonzero,
unique, unique_consecutive, where(condition), masked_select over a batched mask and indexing
with a batched boolean mask, whatever the examples' counts; ops without such a rule
(argwhere, bincount, repeat_interleave(repeats)) run its fallback loop, which fails with
stack's error only where the examples' shapes differ. The messages are PyTorch's."""
import pytest

import ember
from ember.func import vmap

_DYN = ("vmap: We do not support batching operators that can output dynamic shape. Attempted "
        "to vmap over aten::{}. Please file an issue at https://github.com/pytorch/pytorch/"
        "issues if you need this feature.")
_MASK = ("vmap: We do not support batching operators that can support dynamic shape. "
         "Attempting to batch over indexing with a boolean mask.")

# both rows have two nonzero elements and two above zero: counts alone would stack
X = [[0.0, 1.0, 2.0], [3.0, 0.0, 5.0]]


@pytest.mark.parametrize("fn,message", [
    (lambda t: ember.nonzero(t), _DYN.format("nonzero")),
    (lambda t: t.nonzero(), _DYN.format("nonzero")),
    (lambda t: t.nonzero(as_tuple=True)[0],
     "Batching rule not implemented for aten::nonzero_numpy. We could not generate a "
     "fallback."),
    (lambda t: ember.unique(t), _DYN.format("_unique2")),
    (lambda t: t.unique(sorted=False, return_counts=True)[0], _DYN.format("_unique2")),
    (lambda t: ember.unique(t, dim=0), _DYN.format("unique_dim")),
    (lambda t: ember.unique_consecutive(t), _DYN.format("unique_consecutive")),
    (lambda t: ember.where(t > 0)[0], _DYN.format("where")),
    (lambda t: ember.masked_select(t, t > 0),
     "vmap: Attempted to vmap over `mask` in torch.masked_select(self, mask) We cannot "
     "support this because for each batch this would return a differently shaped Tensor. "
     "Please file an issue at https://github.com/pytorch/pytorch/issues if you need this "
     "feature."),
    (lambda t: t[t > 0], _MASK),
    (lambda t: ember.arange(3.0)[t > 0], _MASK),
], ids=["nonzero", "method", "as_tuple", "unique", "unique_counts", "unique_dim",
        "unique_consecutive", "where1", "masked_select", "bool_index", "bool_index_unbatched"])
def test_value_dependent_shapes_are_refused(fn, message):
    with pytest.raises(RuntimeError) as info:
        vmap(fn)(ember.tensor(X))
    assert str(info.value) == message


def test_what_pytorch_batches_still_runs():
    x = ember.tensor(X)
    mask = ember.tensor([True, False, True])
    assert vmap(lambda t: ember.masked_select(t, mask))(x).tolist() == [[0.0, 2.0], [3.0, 5.0]]
    assert vmap(lambda t: t[mask])(x).tolist() == [[0.0, 2.0], [3.0, 5.0]]
    assert vmap(lambda t: ember.where(t > 0, t, 9.0))(x).tolist() == [[9.0, 1.0, 2.0],
                                                                       [3.0, 9.0, 5.0]]
    # the fallback loop: equal shapes stack
    assert vmap(ember.argwhere)(x).tolist() == [[[1], [2]], [[0], [2]]]
    reps = ember.tensor([[1, 2], [2, 1]])
    assert vmap(ember.repeat_interleave)(reps).tolist() == [[0, 1, 1], [0, 0, 1]]
    assert vmap(lambda t: t.repeat_interleave(2))(x)[1].tolist() == [3.0, 3.0, 0.0, 0.0,
                                                                      5.0, 5.0]


@pytest.mark.parametrize("fn", [lambda t: ember.argwhere(t), lambda t: ember.bincount(t.long()),
                                lambda t: ember.repeat_interleave(t.long())],
                         ids=["argwhere", "bincount", "repeat_interleave"])
def test_the_fallback_fails_with_stacks_error_where_shapes_differ(fn):
    x = ember.tensor([[0.0, 1.0, 2.0], [3.0, 0.0, 5.0], [1.0, 1.0, 1.0]])
    with pytest.raises(RuntimeError, match=r"^stack expects each tensor to be equal size, "
                                           r"but got \[\d+(, 1)?\] at entry 0 and "
                                           r"\[\d+(, 1)?\] at entry \d$"):
        vmap(fn)(x)
