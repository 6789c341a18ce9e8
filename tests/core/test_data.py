"""ember.data: datasets, random_split, samplers, default_collate / default_convert and the
``ember.utils.data`` import paths."""

import collections
import dataclasses
import os
import sys

import numpy as np
import pytest

import ember
from ember.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    Dataset,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    get_worker_info,
    random_split,
)

Point = collections.namedtuple("Point", ["x", "y"])


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i

    def __len__(self):
        return self.n


class Stream(IterableDataset):
    def __init__(self, values):
        self.values = list(values)

    def __iter__(self):
        return iter(self.values)

    def __len__(self):
        return len(self.values)


# -- datasets ---------------------------------------------------------------------------------

def test_dataset_base_raises_and_add_concatenates():
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement"):
        Dataset()[0]
    both = Squares(3) + Squares(2)
    assert isinstance(both, ConcatDataset)
    assert [both[i] for i in range(len(both))] == [0, 1, 4, 0, 1]
    chained = Stream([1, 2]) + Stream([3])
    assert isinstance(chained, ChainDataset) and list(chained) == [1, 2, 3]
    assert Dataset[int] is not None  # generic like torch's Dataset[T_co]


def test_tensor_dataset():
    x, y = ember.arange(12.).reshape(4, 3), ember.arange(4)
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    xi, yi = ds[2]
    assert xi.tolist() == [6., 7., 8.] and yi.item() == 2
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, ember.arange(5))


def test_stack_dataset():
    a, b = Squares(3), Stream([])
    tup = StackDataset(Squares(3), TensorDataset(ember.arange(3)))
    assert tup[2][0] == 4 and tup[2][1][0].item() == 2 and len(tup) == 3
    assert StackDataset(p=a, q=Squares(3))[1] == {"p": 1, "q": 1}
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(a, Squares(4))
    with pytest.raises(ValueError, match="At least one dataset"):
        StackDataset()
    with pytest.raises(ValueError, match="both types are given"):
        StackDataset(a, q=b)


def test_concat_dataset_indices():
    ds = ConcatDataset([Squares(2), Squares(3), Squares(1)])
    assert ds.cumulative_sizes == [2, 5, 6] and len(ds) == 6
    assert [ds[i] for i in range(6)] == [0, 1, 0, 1, 4, 0]
    assert ds[-1] == 0 and ds[-2] == 4 and ds[-6] == 0
    with pytest.raises(ValueError, match="absolute value of index should not exceed"):
        ds[-7]
    with pytest.raises(AssertionError, match="should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([Squares(1), Stream([1])])


def test_chain_dataset():
    ds = ChainDataset([Stream([1, 2]), Stream([3])])
    assert list(ds) == [1, 2, 3] and len(ds) == 3
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(ChainDataset([Squares(2)]))


def test_subset():
    sub = Subset(Squares(10), [9, 0, 3])
    assert len(sub) == 3 and [sub[i] for i in range(3)] == [81, 0, 9]
    assert sub.__getitems__([0, 2]) == [81, 9]
    tsub = Subset(TensorDataset(ember.arange(10) * 2), [4, 1])
    assert tsub[[0, 1]][0].tolist() == [8, 2]


# -- random_split -----------------------------------------------------------------------------

def test_random_split_lengths_partition_and_determinism():
    parts = random_split(range(10), [3, 7], generator=ember.Generator().manual_seed(1))
    assert [len(p) for p in parts] == [3, 7]
    everything = sorted(i for p in parts for i in p.indices)
    assert everything == list(range(10))
    again = random_split(range(10), [3, 7], generator=ember.Generator().manual_seed(1))
    assert [p.indices for p in parts] == [p.indices for p in again]
    ember.manual_seed(3)
    a = random_split(range(10), [5, 5])
    ember.manual_seed(3)
    b = random_split(range(10), [5, 5])
    assert [p.indices for p in a] == [p.indices for p in b]


def test_random_split_fractions_round_robin_remainder():
    # floor(0.3*11)=3, floor(0.3*11)=3, floor(0.4*11)=4 -> remainder 1 goes to split 0
    parts = random_split(range(11), [0.3, 0.3, 0.4])
    assert [len(p) for p in parts] == [4, 3, 4]
    parts = random_split(range(5), [0.25, 0.25, 0.25, 0.25])  # 1,1,1,1 + 1 -> 2,1,1,1
    assert [len(p) for p in parts] == [2, 1, 1, 1]
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        parts = random_split(range(2), [0.9, 0.1])
    assert [len(p) for p in parts] == [2, 0]


def test_random_split_errors():
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        random_split(range(10), [1.5, -0.5])


# -- samplers ---------------------------------------------------------------------------------

def test_sequential_sampler():
    s = SequentialSampler(range(5))
    assert list(s) == [0, 1, 2, 3, 4] and len(s) == 5
    with pytest.raises(NotImplementedError):
        iter(Sampler())


def test_random_sampler_permutation_and_determinism():
    s = RandomSampler(range(20), generator=ember.Generator().manual_seed(5))
    first = list(s)
    assert sorted(first) == list(range(20)) and len(s) == 20
    assert list(RandomSampler(range(20), generator=ember.Generator().manual_seed(5))) == first
    ember.manual_seed(11)
    a = list(RandomSampler(range(20)))
    ember.manual_seed(11)
    assert list(RandomSampler(range(20))) == a


def test_random_sampler_num_samples_and_replacement():
    s = RandomSampler(range(4), num_samples=10)
    out = list(s)
    assert len(out) == 10 and len(s) == 10
    assert sorted(out[:8]) == [0, 0, 1, 1, 2, 2, 3, 3]  # two full permutations, then 2 more
    r = list(RandomSampler(range(3), replacement=True, num_samples=70))
    assert len(r) == 70 and set(r) <= {0, 1, 2} and set(r) == {0, 1, 2}
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler([])


def test_subset_random_sampler():
    s = SubsetRandomSampler([10, 20, 30], generator=ember.Generator().manual_seed(0))
    assert sorted(s) == [10, 20, 30] and len(s) == 3


def test_weighted_random_sampler():
    g = ember.Generator().manual_seed(0)
    s = WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 200, generator=g)
    out = list(s)
    assert len(out) == 200 and len(s) == 200 and set(out) == {1, 3}
    assert out.count(3) > out.count(1)
    s = WeightedRandomSampler([1, 2, 3, 4], 4, replacement=False)
    assert sorted(s) == [0, 1, 2, 3]
    assert s.weights.dtype == ember.float64
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        WeightedRandomSampler([1.0], True)
    with pytest.raises(ValueError, match="replacement should be a boolean value"):
        WeightedRandomSampler([1.0], 1, replacement=0)
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights "
                                         r"have shape \(1, 2\)"):
        WeightedRandomSampler([[1.0, 2.0]], 1)


def test_batch_sampler():
    assert list(BatchSampler(SequentialSampler(range(10)), 3, False)) == \
        [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert list(BatchSampler(range(10), 3, True)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(BatchSampler(range(10), 3, False)) == 4
    assert len(BatchSampler(range(10), 3, True)) == 3
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
            BatchSampler(range(3), bad, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got "
                                         "drop_last=1"):
        BatchSampler(range(3), 2, 1)


def test_distributed_sampler_shards_cover_the_dataset():
    shards = [list(DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=False))
              for r in range(3)]
    assert shards == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]
    s = DistributedSampler(range(10), num_replicas=3, rank=0, drop_last=True)
    assert len(s) == 3 and len(list(s)) == 3
    s.set_epoch(1)
    assert sorted(set(list(s))) == sorted(set(list(s)))
    with pytest.raises(ValueError, match="Invalid rank 3"):
        DistributedSampler(range(4), num_replicas=3, rank=3)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(4))  # PyTorch's error, from get_world_size()


# -- collate ----------------------------------------------------------------------------------

def test_collate_tensors_are_stacked():
    out = default_collate([ember.ones(2, 3), ember.zeros(2, 3)])
    assert out.shape == (2, 2, 3) and out.dtype == ember.float32
    assert out[0].sum().item() == 6 and out[1].sum().item() == 0


def test_collate_numbers_and_numpy():
    f = default_collate([1.5, 2.5])
    assert f.dtype == ember.float64 and f.tolist() == [1.5, 2.5]
    i = default_collate([1, 2])
    assert i.dtype == ember.int64 and i.tolist() == [1, 2]
    b = default_collate([True, False])
    assert b.dtype == ember.bool and b.tolist() == [True, False]
    a = default_collate([np.zeros((2,), np.float32), np.ones((2,), np.float32)])
    assert a.dtype == ember.float32 and a.shape == (2, 2)
    s = default_collate([np.int32(1), np.int32(2)])
    assert s.dtype == ember.int32 and s.tolist() == [1, 2]
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy "
                                        "arrays, numbers, dicts or lists; found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(TypeError, match="found <class 'object'>"):
        default_collate([object(), object()])


def test_collate_containers():
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([b"a", b"b"]) == [b"a", b"b"]
    d = default_collate([{"x": 1, "y": {"z": 1.0}}, {"x": 2, "y": {"z": 2.0}}])
    assert set(d) == {"x", "y"} and d["x"].tolist() == [1, 2]
    assert d["y"]["z"].dtype == ember.float64
    p = default_collate([Point(1, "a"), Point(2, "b")])
    assert isinstance(p, Point) and p.x.tolist() == [1, 2] and p.y == ("a", "b")
    t = default_collate([(1, 2.0), (3, 4.0)])
    assert isinstance(t, list) and t[0].tolist() == [1, 3] and t[1].tolist() == [2.0, 4.0]
    lst = default_collate([[1, 2], [3, 4]])
    assert isinstance(lst, list) and [x.tolist() for x in lst] == [[1, 3], [2, 4]]
    od = default_collate([collections.OrderedDict(a=1), collections.OrderedDict(a=2)])
    assert isinstance(od, collections.OrderedDict) and od["a"].tolist() == [1, 2]
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal "
                                           "size"):
        default_collate([[1, 2], [3]])


def test_default_convert():
    assert default_convert(3) == 3
    t = default_convert(np.array([1, 2]))
    assert isinstance(t, ember.Tensor) and t.tolist() == [1, 2]
    p = default_convert(Point(np.array(0), np.array(1)))
    assert isinstance(p, Point) and isinstance(p.x, ember.Tensor)
    lst = default_convert((np.array([0]), "s"))
    assert isinstance(lst, list) and lst[1] == "s"
    d = default_convert({"a": np.float32(1.0)})
    assert d["a"].dtype == ember.float32
    strs = np.array(["x"])
    assert default_convert(strs) is strs


def test_collate_fn_map_extends_collate():
    from ember.data._utils.collate import collate, default_collate_fn_map

    class Box:
        def __init__(self, v):
            self.v = v

    fmap = {**default_collate_fn_map, Box: lambda batch, *, collate_fn_map: sum(b.v for b in batch)}
    assert collate([{"b": Box(1)}, {"b": Box(2)}], collate_fn_map=fmap) == {"b": 3}


# -- import paths -----------------------------------------------------------------------------

def test_utils_data_aliases():
    import ember.utils.data as ud
    import ember.utils.data._utils.collate as ucollate
    from ember.utils.data import DataLoader
    from ember.utils.data import Dataset as UDataset
    from ember.utils.data.dataloader import DataLoader as DL2
    from ember.utils.data.sampler import BatchSampler as BS2

    assert UDataset is Dataset and DL2 is DataLoader and BS2 is BatchSampler
    assert ucollate.default_collate is default_collate
    assert sys.modules["ember.utils.data.dataset"] is sys.modules["ember.data.dataset"]
    assert ud.get_worker_info is get_worker_info


def test_get_worker_info_is_none_in_main_process():
    from ember.data._utils.worker import WorkerInfo

    assert get_worker_info() is None
    info = WorkerInfo(id=0, num_workers=2, seed=5, dataset=None)
    # PyTorch 2.13's WorkerInfo: a frozen dataclass with ``rng`` and ``worker_method``
    assert repr(info) == ("WorkerInfo(id=0, num_workers=2, seed=5, dataset=None, rng=None, "
                          "worker_method='multiprocessing')")
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'id'"):
        info.id = 1


def test_import_ember_alone_reaches_utils_data():
    import subprocess

    code = ("import ember; from ember.data import DataLoader; "
            "assert ember.utils.data.DataLoader is DataLoader; "
            "assert ember.utils.data.dataloader.DataLoader is DataLoader")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
