"""ember.data against torch.utils.data: the same structures, sizes, errors and (for the
deterministic pieces) the same values. RNG streams differ, so random output is compared by
structure and distribution, not value."""

import collections
import re

import numpy as np
import pytest

import ember
import ember.data as ed

torch = pytest.importorskip("torch")
td = torch.utils.data

Pair = collections.namedtuple("Pair", ["a", "b"])


def to_plain(x):
    """A comparable picture of a collated batch: containers by type name, tensors as
    (dtype name, shape, values)."""
    if isinstance(x, (torch.Tensor, ember.Tensor)):
        return ("tensor", str(x.dtype).split(".")[-1], tuple(x.shape), x.tolist())
    if isinstance(x, dict):
        return (type(x).__name__, {k: to_plain(v) for k, v in x.items()})
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__, tuple(to_plain(v) for v in x))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [to_plain(v) for v in x])
    return x


def batches(mk):
    return [
        [1, 2, 3],
        [1.5, 2.5],
        [True, False],
        ["a", "b"],
        [b"x", b"y"],
        [np.float32(1.0), np.float32(2.0)],
        [np.int16(1), np.int16(2)],
        [np.arange(6, dtype=np.int32).reshape(2, 3), np.ones((2, 3), np.int32)],
        [np.zeros(2), np.ones(2)],
        [mk([1.0, 2.0]), mk([3.0, 4.0])],
        [{"x": 1, "y": {"z": [1.0, "s"]}}, {"x": 2, "y": {"z": [2.0, "t"]}}],
        [(1, "a", 2.0), (3, "b", 4.0)],
        [Pair(1, "a"), Pair(2, "b")],
        [Pair(mk([1]), {"k": (1, 2)}), Pair(mk([2]), {"k": (3, 4)})],
        [[np.array(1.5), 2], [np.array(2.5), 3]],
        [collections.OrderedDict(b=1, a=2), collections.OrderedDict(b=3, a=4)],
    ]


@pytest.mark.parametrize("i", range(16))
def test_default_collate_structure(i):
    ours = ed.default_collate(batches(ember.tensor)[i])
    theirs = td.default_collate(batches(torch.tensor)[i])
    assert to_plain(ours) == to_plain(theirs)


@pytest.mark.parametrize("i", range(16))
def test_default_convert_structure(i):
    ours = [ed.default_convert(x) for x in batches(ember.tensor)[i]]
    theirs = [td.default_convert(x) for x in batches(torch.tensor)[i]]
    assert to_plain(ours) == to_plain(theirs)


@pytest.mark.parametrize("batch", [[[1, 2], [3]], [object(), object()],
                                   [np.array(["a"]), np.array(["b"])]])
def test_default_collate_errors(batch):
    with pytest.raises(Exception) as theirs:
        td.default_collate(batch)
    with pytest.raises(type(theirs.value), match=re.escape(str(theirs.value))):
        ed.default_collate(batch)


def test_sequential_and_batch_samplers_exact():
    for n, bs, drop in [(10, 3, False), (10, 3, True), (9, 3, False), (1, 4, False),
                        (7, 1, True)]:
        assert list(ed.SequentialSampler(range(n))) == list(td.SequentialSampler(range(n)))
        ours = ed.BatchSampler(ed.SequentialSampler(range(n)), bs, drop)
        theirs = td.BatchSampler(td.SequentialSampler(range(n)), bs, drop)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


@pytest.mark.parametrize("args", [(0, False), (2.0, False), (True, False), (2, 1), (-3, True)])
def test_batch_sampler_errors(args):
    with pytest.raises(ValueError) as theirs:
        td.BatchSampler(range(4), *args)
    with pytest.raises(ValueError, match=re.escape(str(theirs.value))):
        ed.BatchSampler(range(4), *args)


@pytest.mark.parametrize("kwargs", [{}, {"num_samples": 7}, {"num_samples": 13},
                                    {"replacement": True}, {"replacement": True,
                                                            "num_samples": 40}])
def test_random_sampler_structure(kwargs):
    ours, theirs = list(ed.RandomSampler(range(5), **kwargs)), list(
        td.RandomSampler(range(5), **kwargs))
    assert len(ours) == len(theirs) == len(ed.RandomSampler(range(5), **kwargs))
    if not kwargs.get("replacement"):
        full = len(ours) // 5 * 5  # whole permutations first, as in torch
        assert sorted(ours[:full]) == sorted(theirs[:full])
        assert len(set(ours[full:])) == len(ours[full:])
    assert set(ours) <= set(range(5))


@pytest.mark.parametrize("kwargs", [{"replacement": 1}, {"num_samples": 0},
                                    {"num_samples": -2}, {"num_samples": 1.5}])
def test_random_sampler_errors(kwargs):
    with pytest.raises(Exception) as theirs:
        td.RandomSampler(range(5), **kwargs)
    with pytest.raises(type(theirs.value), match=re.escape(str(theirs.value))):
        ed.RandomSampler(range(5), **kwargs)


def test_weighted_sampler_distribution():
    weights = [0.0, 1.0, 2.0, 7.0]
    ours = np.bincount(list(ed.WeightedRandomSampler(weights, 4000,
                                                     generator=ember.Generator().manual_seed(0))),
                       minlength=4) / 4000
    theirs = np.bincount(list(td.WeightedRandomSampler(weights, 4000,
                                                       generator=torch.Generator().manual_seed(
                                                           0))), minlength=4) / 4000
    assert ours[0] == theirs[0] == 0
    np.testing.assert_allclose(ours, theirs, atol=0.05)
    np.testing.assert_allclose(ours, np.array(weights) / 10, atol=0.05)
    no_repl = list(ed.WeightedRandomSampler([1, 1, 1, 5], 4, replacement=False))
    assert sorted(no_repl) == sorted(td.WeightedRandomSampler([1, 1, 1, 5], 4,
                                                              replacement=False))


@pytest.mark.parametrize("n, lengths", [(10, [3, 7]), (11, [0.3, 0.3, 0.4]),
                                        (5, [0.25, 0.25, 0.25, 0.25]), (7, [0.5, 0.5]),
                                        (100, [0.1] * 10), (3, [1.0])])
def test_random_split_sizes(n, lengths):
    ours = ed.random_split(range(n), lengths)
    theirs = td.random_split(range(n), lengths)
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    assert sorted(i for s in ours for i in s.indices) == list(range(n))


@pytest.mark.parametrize("lengths", [[3, 3], [1.2, -0.2], [0.5, 0.6]])
def test_random_split_errors(lengths):
    with pytest.raises(ValueError) as theirs:
        td.random_split(range(10), lengths)
    with pytest.raises(ValueError, match=re.escape(str(theirs.value))):
        ed.random_split(range(10), lengths)


def test_concat_and_subset_match():
    parts = [list(range(3)), list(range(10, 12)), list(range(20, 24))]
    ours, theirs = ed.ConcatDataset(parts), td.ConcatDataset(parts)
    assert ours.cumulative_sizes == theirs.cumulative_sizes
    assert [ours[i] for i in range(-9, 9)] == [theirs[i] for i in range(-9, 9)]
    assert [ed.Subset(ours, [8, 0, 4])[i] for i in range(3)] == \
        [td.Subset(theirs, [8, 0, 4])[i] for i in range(3)]


def test_distributed_sampler_unshuffled_matches():
    for n, reps, drop in [(10, 3, False), (10, 3, True), (2, 4, False)]:
        for r in range(reps):
            ours = ed.DistributedSampler(range(n), reps, r, shuffle=False, drop_last=drop)
            theirs = td.DistributedSampler(range(n), reps, r, shuffle=False, drop_last=drop)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)


class _Range(td.Dataset):
    def __getitem__(self, i):
        return i

    def __len__(self):
        return 10


class _ERange(ed.Dataset):
    def __getitem__(self, i):
        return i

    def __len__(self):
        return 10


class _TStream(td.IterableDataset):
    def __iter__(self):
        return iter(range(10))


class _EStream(ed.IterableDataset):
    def __iter__(self):
        return iter(range(10))


LOADER_CASES = [
    {}, {"batch_size": 3}, {"batch_size": 3, "drop_last": True}, {"batch_size": None},
    {"num_workers": -1}, {"timeout": -2}, {"prefetch_factor": 2},
    {"num_workers": 2, "prefetch_factor": -1}, {"persistent_workers": True},
    {"shuffle": True, "sampler": [1]}, {"batch_sampler": [[1]], "batch_size": 2},
    {"batch_sampler": [[1]], "drop_last": True}, {"batch_size": None, "drop_last": True},
    {"multiprocessing_context": "spawn"}, {"num_workers": 1, "multiprocessing_context": "x"},
    {"num_workers": 1, "multiprocessing_context": 5},
]


@pytest.mark.parametrize("kwargs", LOADER_CASES)
@pytest.mark.parametrize("iterable", [False, True])
def test_loader_validation_and_len(kwargs, iterable):
    t_ds, e_ds = (_TStream(), _EStream()) if iterable else (_Range(), _ERange())
    if iterable and ("sampler" in kwargs or "batch_sampler" in kwargs):
        kwargs = dict(kwargs)
    try:
        theirs = td.DataLoader(t_ds, **kwargs)
    except Exception as e:  # the oracle decides which error
        with pytest.raises(type(e), match=re.escape(str(e))):
            ed.DataLoader(e_ds, **kwargs)
        return
    ours = ed.DataLoader(e_ds, **kwargs)
    if not iterable:
        assert len(ours) == len(theirs)
    if kwargs.get("num_workers", 0) == 0:
        assert to_plain(list(ours)) == to_plain(list(theirs))


@pytest.mark.parametrize("kwargs", [{"shuffle": True}, {"sampler": [1, 2]},
                                    {"batch_sampler": [[1]]}])
def test_iterable_loader_restrictions(kwargs):
    with pytest.raises(ValueError) as theirs:
        td.DataLoader(_TStream(), **kwargs)
    with pytest.raises(ValueError, match=re.escape(str(theirs.value))):
        ed.DataLoader(_EStream(), **kwargs)


def test_worker_numpy_seed_matches_torch():
    from torch.utils.data._utils.worker import _generate_state

    from ember.data._utils.worker import _numpy_seed

    rng = np.random.default_rng(0)
    for seed in rng.integers(0, 2 ** 63 - 1, size=20, dtype=np.int64).tolist() + [0, 1]:
        for wid in range(4):
            assert _numpy_seed(seed, wid).tolist() == _generate_state(seed, wid)


def test_exception_wrapper_text_matches_torch():
    from torch._utils import ExceptionWrapper as TWrapper

    from ember.data._utils import ExceptionWrapper as EWrapper

    def fail():
        raise ValueError("boom")

    def wrapped(cls):
        try:
            fail()
        except ValueError:
            return cls(where="in DataLoader worker process 0")

    with pytest.raises(ValueError) as theirs:
        wrapped(TWrapper).reraise()
    with pytest.raises(ValueError) as ours:
        wrapped(EWrapper).reraise()
    first = str(theirs.value).splitlines()[:2]
    assert str(ours.value).splitlines()[:2] == first
    assert first == ["Caught ValueError in DataLoader worker process 0.",
                     "Original Traceback (most recent call last):"]
