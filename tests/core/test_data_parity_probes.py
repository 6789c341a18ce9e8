"""``ember.utils.data`` against ``torch.utils.data`` (PyTorch 2.13): the differences that
differential probes found, one test each. Every test asserts the plain expected behaviour and,
where PyTorch is importable, checks that PyTorch behaves the same."""

import collections.abc
import dataclasses
import os
import re
import warnings

import numpy as np
import pytest

import ember


def _torch():
    return pytest.importorskip("torch")


def _both():
    """``ember`` always, then ``torch`` when it is installed."""
    libs = [ember]
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        libs.append(torch)
    return libs


# -- samplers -----------------------------------------------------------------------------------

def test_sampler_takes_no_arguments():
    for lib in _both():
        with pytest.raises(TypeError, match=re.escape("Sampler() takes no arguments")):
            lib.utils.data.Sampler([1, 2])

        class Old(lib.utils.data.Sampler):
            def __init__(self, data_source):
                super().__init__(data_source)  # fine before PyTorch 2.2, an error now

        with pytest.raises(TypeError, match=re.escape("object.__init__() takes exactly one")):
            Old([1])


def test_distributed_sampler_without_a_process_group_raises_get_world_sizes_error():
    msg = ("Default process group has not been initialized, please make sure to call "
           "init_process_group.")
    for lib in _both():
        for kwargs in ({}, {"num_replicas": 2}, {"rank": 0}):
            with pytest.raises(ValueError, match=re.escape(msg)):
                lib.utils.data.DistributedSampler(range(10), **kwargs)


# -- datasets -----------------------------------------------------------------------------------

def test_iterable_dataset_is_abstract_and_iterable():
    for lib in _both():
        class NoIter(lib.utils.data.IterableDataset):
            pass

        with pytest.raises(TypeError, match="Can't instantiate abstract class NoIter with "
                                            "abstract method __iter__"):
            NoIter()

        class Counts(lib.utils.data.IterableDataset):
            def __iter__(self):
                return iter(range(3))

        assert isinstance(Counts(), collections.abc.Iterable)
        assert list(Counts()) == [0, 1, 2]


def test_stack_dataset_getitems():
    for lib in _both():
        data = lib.utils.data
        stacked = data.StackDataset([1, 2], data.Subset([3, 4], [1, 0]))
        assert stacked.__getitems__([0, 1]) == [(1, 4), (2, 3)]
        keyed = data.StackDataset(a=[1, 2], b=data.Subset([3, 4], [1, 0]))
        assert keyed.__getitems__([1, 0]) == [{"a": 2, "b": 3}, {"a": 1, "b": 4}]

        class Short(data.Dataset):
            def __getitem__(self, i):
                return i

            def __len__(self):
                return 2

            def __getitems__(self, indices):
                return [0]

        with pytest.raises(ValueError, match=re.escape(
                "Nested dataset's output size mismatch. Expected 2, got 1")):
            data.StackDataset(Short(), Short()).__getitems__([1, 0])
        loader = data.DataLoader(data.StackDataset(a=[1, 2], b=[3, 4]), batch_size=2)
        batch = next(iter(loader))
        assert batch["a"].tolist() == [1, 2] and batch["b"].tolist() == [3, 4]


def test_concat_dataset_cummulative_sizes_is_deprecated():
    for lib in _both():
        concat = lib.utils.data.ConcatDataset([[1, 2, 3], [4, 5]])
        with pytest.warns(FutureWarning, match="`cummulative_sizes` attribute is renamed to "
                                               "`cumulative_sizes`"):
            assert concat.cummulative_sizes == [3, 5]


def test_subset_subclass_overriding_getitem_only_is_refused():
    for lib in _both():
        class Doubled(lib.utils.data.Subset):
            def __getitem__(self, idx):
                return 2 * super().__getitem__(idx)

        with pytest.raises(NotImplementedError, match=re.escape(
                "Doubled overrides __getitem__ but not __getitems__. When subclassing Subset")):
            Doubled([1, 2], [0])

        class Complete(Doubled):
            def __getitems__(self, indices):
                return [self[i] for i in indices]

        assert Complete([1, 2], [1])[0] == 4


def test_tensor_dataset_of_a_scalar_tensor():
    for lib in _both():
        with pytest.raises(IndexError, match=re.escape(
                "Dimension specified as 0 but tensor has no dimensions")):
            lib.utils.data.TensorDataset(lib.tensor(1.0))
        assert lib.ones(2, 3).size(-1) == 3


# -- the DataLoader -----------------------------------------------------------------------------

def test_dataloader_is_generic():
    for lib in _both():
        assert lib.utils.data.DataLoader[int].__origin__ is lib.utils.data.DataLoader


def test_dataloader_private_attributes_programs_read():
    for lib in _both():
        data = lib.utils.data
        loader = data.DataLoader(list(range(5)), batch_size=2)
        assert loader._dataset_kind == data._DatasetKind.Map == 0
        assert loader._DataLoader__initialized is True
        assert loader._DataLoader__multiprocessing_context is None
        assert loader.check_worker_number_rationality() is None

        class Stream(data.IterableDataset):
            def __iter__(self):
                return iter(range(3))

        assert data.DataLoader(Stream())._dataset_kind == data._DatasetKind.Iterable == 1


def test_dataloader_iterator_attributes():
    for lib in _both():
        it = iter(lib.utils.data.DataLoader(list(range(5)), batch_size=2))
        assert (it._dataset_kind, it._pin_memory, it._pin_memory_device, it._world_size,
                it._rank, it._shared_seed, it._pg) == (0, False, None, 1, 0, None, None)
        assert it._profile_name == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
        assert type(it._dataset_fetcher).__name__ == "_MapDatasetFetcher"
        assert next(it).tolist() == [0, 1]


def test_dataloader_iterator_pickling_error():
    import pickle

    for lib in _both():
        it = iter(lib.utils.data.DataLoader([1, 2]))
        with pytest.raises(NotImplementedError) as info:
            pickle.dumps(it)
        assert info.value.args == ("{} cannot be pickled", "_SingleProcessDataLoaderIter")


def test_single_process_loader_refuses_a_timeout():
    for lib in _both():
        loader = lib.utils.data.DataLoader(list(range(5)), batch_size=2, timeout=1.5)
        with pytest.raises(AssertionError, match=re.escape(
                "_SingleProcessDataLoaderIter requires timeout == 0")):
            iter(loader)


def test_pin_memory_device_is_deprecated():
    for lib in _both():
        if lib.cuda.is_available():
            continue
        loader = lib.utils.data.DataLoader([1, 2], pin_memory=True, pin_memory_device="cuda")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert next(iter(loader)).tolist() == [1]
        messages = sorted(str(w.message) for w in caught)
        assert messages == [
            "'pin_memory' argument is set as true but no accelerator is found, then device "
            "pinned memory won't be used.",
            "pin_memory_device is deprecated, the current accelerator will be used as the "
            "device,ignore pin_memory_device='cuda'."]


def test_too_many_workers_warns_at_construction():
    count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    for lib in _both():
        with pytest.warns(UserWarning, match=re.escape(
                f"This DataLoader will create {count + 1} worker processes in total. Our "
                f"suggested max number of worker in current system is {count}")):
            lib.utils.data.DataLoader([1, 2], num_workers=count + 1)  # no worker starts here


def test_profiler_records_each_batch():
    loader = ember.utils.data.DataLoader(list(range(4)), batch_size=2)
    with ember.profiler.profile() as prof:
        for batch in loader:
            batch + 1
    names = [e.key for e in prof.key_averages()]
    assert "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__" in names
    assert [b.tolist() for b in loader] == [[0, 1], [2, 3]]  # and nothing when not profiling


# -- workers' helpers ---------------------------------------------------------------------------

def test_worker_info_is_a_frozen_dataclass():
    for lib in _both():
        from importlib import import_module

        worker = import_module(lib.__name__ + ".utils.data._utils.worker")
        info = worker.WorkerInfo(0, 2, 5, None)
        assert (info.id, info.num_workers, info.seed, info.dataset, info.rng,
                info.worker_method) == (0, 2, 5, None, None, "multiprocessing")
        assert info == worker.WorkerInfo(id=0, num_workers=2, seed=5, dataset=None)
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'id'"):
            info.id = 1
        with pytest.raises(TypeError, match="missing 3 required positional arguments"):
            worker.WorkerInfo(id=0)
        assert worker._generate_state(12345678901234, 3) == [
            2677634501, 810098766, 226270600, 4115140591]
        assert worker._ResumeIteration().seed is None


def test_utils_module_constants_and_pin_memory():
    for lib in _both():
        from importlib import import_module

        utils = import_module(lib.__name__ + ".utils.data._utils")
        assert utils.IS_WINDOWS is (os.name == "nt") and utils.HAS_NUMPY is True
        pin = import_module(lib.__name__ + ".utils.data._utils.pin_memory").pin_memory
        assert pin(["a", b"b", 3, None]) == ["a", b"b", 3, None]
        point = collections.namedtuple("point", "x y")(1, "s")
        assert pin(point) == point and type(pin(point)) is type(point)


# -- collation ----------------------------------------------------------------------------------

def test_collate_refuses_sparse_and_nested_tensors():
    msg = ("Batches of {} tensors are not currently supported by the default collate_fn; "
           "please provide a custom collate_fn to handle them appropriately.")
    for lib in _both():
        collate = lib.utils.data.default_collate
        sparse = lib.eye(2).to_sparse()
        with pytest.raises(RuntimeError, match=re.escape(msg.format("sparse"))):
            collate([sparse, sparse])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nested = lib.nested.nested_tensor([lib.ones(2), lib.ones(3)])
        with pytest.raises(RuntimeError, match=re.escape(msg.format("nested"))):
            collate([nested, nested])


def test_collate_numpy_scalars_like_as_tensor_of_the_list():
    for lib in _both():
        out = lib.utils.data.default_collate([np.int64(1), 2.5])
        assert out.dtype == lib.float32 and out.tolist() == [1.0, 2.5]
        out = lib.utils.data.default_collate([np.float32(1), np.float64(2)])
        assert out.dtype == lib.float64


def test_pin_memory_pins_batches_when_an_accelerator_is_present(monkeypatch):
    from ember.data import dataloader

    class Pinnable:
        def __init__(self, pinned=False):
            self.pinned = pinned

        def pin_memory(self):
            return Pinnable(True)

    monkeypatch.setattr(dataloader, "_accelerator_available", lambda: True)
    loader = ember.utils.data.DataLoader([Pinnable(), Pinnable()], batch_size=2,
                                         pin_memory=True, collate_fn=lambda b: {"x": b})
    it = iter(loader)
    assert (it._pin_memory, it._pin_memory_device) == (True, "cuda")
    batch = next(it)
    assert [p.pinned for p in batch["x"]] == [True, True]


# PyTorch's __del__ of its half-made iterator complains (it has no ``_shutdown`` yet)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_zero_prefetch_factor_with_workers_is_refused_before_any_worker_starts():
    for lib in _both():
        loader = lib.utils.data.DataLoader(list(range(4)), batch_size=2, num_workers=1,
                                           prefetch_factor=0)  # accepted here, as in PyTorch
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(AssertionError, match=re.escape(
                    "prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")):
                iter(loader)
