"""PyTorch's small ``torch.utils`` modules in Ember: ``hooks``, ``model_zoo``, ``dlpack``,
``weak`` and ``collect_env``."""

from __future__ import annotations

import copy
import ctypes
import gc
import hashlib
import io
import pickle
import subprocess
import sys
import threading
import warnings
import weakref
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler

import numpy as np
import pytest
from testutils import local_http_server

import ember
from ember.utils import collect_env, dlpack, hooks, model_zoo, weak
from ember.utils.hooks import BackwardHook, RemovableHandle

# -- hooks: RemovableHandle -------------------------------------------------------------------


def test_removable_handle_removes_its_hook_and_extra_entries():
    hooks_dict, extra1, extra2 = OrderedDict(), OrderedDict(), OrderedDict()
    h = RemovableHandle(hooks_dict, extra_dict=[extra1, extra2])
    hooks_dict[h.id] = "hook"
    extra1[h.id] = True
    extra2[h.id] = True
    other = RemovableHandle(hooks_dict, extra_dict=extra1)
    hooks_dict[other.id] = "other"
    extra1[other.id] = True
    assert other.id == h.id + 1
    assert RemovableHandle.next_id == other.id + 1
    h.remove()
    assert list(hooks_dict) == [other.id] and list(extra1) == [other.id] and extra2 == {}
    h.remove()  # a second remove does nothing
    with other as same:
        assert same is other
    assert hooks_dict == {} and extra1 == {}


def test_removable_handle_on_a_collected_dict_removes_nothing():
    hooks_dict, extra = OrderedDict(), OrderedDict()
    h = RemovableHandle(hooks_dict, extra_dict=extra)
    del hooks_dict, extra
    gc.collect()
    assert h.hooks_dict_ref() is None
    h.remove()  # no error


def test_removable_handle_needs_a_weak_referenceable_dict():
    with pytest.raises(TypeError, match="weak reference"):
        RemovableHandle({})


def test_removable_handle_deepcopy_and_pickle_follow_the_dicts():
    hooks_dict, extra = OrderedDict(), OrderedDict()
    h = RemovableHandle(hooks_dict, extra_dict=extra)
    hooks_dict[h.id] = 1
    extra[h.id] = 1
    d2, e2, h2 = copy.deepcopy((hooks_dict, extra, h))
    h2.remove()
    assert h2.id == h.id and d2 == {} and e2 == {} and hooks_dict == {h.id: 1}
    d3, h3 = pickle.loads(pickle.dumps((hooks_dict, h)))
    assert h3.id == h.id and h3.hooks_dict_ref() is d3
    h3.remove()
    assert d3 == {} and hooks_dict == {h.id: 1}


def test_removable_handle_setstate_with_dead_dicts_and_higher_id():
    h = RemovableHandle.__new__(RemovableHandle)
    h.__setstate__((None, RemovableHandle.next_id + 10, (None, OrderedDict())))
    assert h.hooks_dict_ref() is None
    assert len(h.extra_dict_ref) == 1
    assert RemovableHandle.next_id == h.id + 1  # later handles never reuse the id
    h.remove()
    h2 = RemovableHandle.__new__(RemovableHandle)
    h2.__setstate__((OrderedDict(), 3))  # PyTorch's old two-item state
    assert h2.extra_dict_ref == ()


def test_removable_handle_ids_are_unique_across_threads():
    d = OrderedDict()
    ids, lock = [], threading.Lock()

    def work():
        mine = [RemovableHandle(d).id for _ in range(300)]
        with lock:
            ids.extend(mine)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == len(ids) == 1200


def test_removable_handle_is_the_one_handle_class():
    import ember.autograd.graph as graph

    assert graph.RemovableHandle is RemovableHandle
    t = ember.ones(2, requires_grad=True)
    h = t.register_hook(lambda g: g * 2)
    assert type(h) is RemovableHandle
    (t * 1).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [2.0, 2.0])
    h.remove()
    t.grad = None
    (t * 1).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [1.0, 1.0])
    assert type(t.register_post_accumulate_grad_hook(lambda p: None)) is RemovableHandle
    node = (t * 2).grad_fn
    assert type(node.register_hook(lambda gi, go: None)) is RemovableHandle
    assert type(node.register_prehook(lambda go: None)) is RemovableHandle


def test_nn_module_handles_are_ember_utils_hooks_handles():
    nn = pytest.importorskip("ember.nn")
    from ember.nn.modules import module

    assert module.RemovableHandle is RemovableHandle
    lin = nn.Linear(2, 2)
    h = lin.register_forward_hook(lambda m, a, o: None, with_kwargs=True, always_call=True)
    assert type(h) is RemovableHandle
    assert h.id in lin._forward_hooks_with_kwargs and h.id in lin._forward_hooks_always_called
    h.remove()
    assert not lin._forward_hooks and not lin._forward_hooks_with_kwargs
    assert not lin._forward_hooks_always_called


# -- hooks: unserializable_hook, warn_if_has_hooks ---------------------------------------------


def test_unserializable_hook_marks_the_function():
    def f(grad):
        return grad

    assert hooks.unserializable_hook(f) is f
    assert f.__torch_unserializable__ is True


@pytest.mark.parametrize("leaf", [True, False])
def test_warn_if_has_hooks(leaf):
    base = ember.ones(2, requires_grad=True)
    t = base if leaf else base * 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hooks.warn_if_has_hooks(t)  # no hooks: silent

    def plain(grad):
        return grad

    t.register_hook(plain)
    t.register_hook(hooks.unserializable_hook(lambda g: g))
    with pytest.warns(UserWarning, match="backward hook .*plain.* will not be serialized") as rec:
        hooks.warn_if_has_hooks(t)
    assert len(rec) == 1
    assert "torch.utils.hooks.unserializable_hook" in str(rec[0].message)


def test_warn_if_has_hooks_ignores_node_prehooks_and_other_outputs():
    a, b = ember.ones(2, requires_grad=True).unbind(0)  # two outputs of one node
    b.register_hook(lambda g: g)
    a.grad_fn.register_prehook(lambda go: None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hooks.warn_if_has_hooks(a)
    with pytest.warns(UserWarning):
        hooks.warn_if_has_hooks(b)


# -- hooks: BackwardHook ------------------------------------------------------------------------


def _run_module_hooks(lib, record):
    """A module ``forward(a, s, b) -> (a * s + b, s)`` with full backward (pre-)hooks that
    record what they get; a requires grad, b does not, s is a float."""

    class M(lib.nn.Module):
        def forward(self, a, s, b):
            return a * s + b, s

    m = M()
    m.register_full_backward_pre_hook(lambda mod, go: record.append(("pre", go)))
    m.register_full_backward_hook(lambda mod, gi, go: record.append(("hook", gi, go)))
    a = lib.ones(2, requires_grad=True)
    out, s = m(a, 3.0, lib.ones(2))
    assert s == 3.0
    assert out.grad_fn.name() == "BackwardHookFunctionBackward"
    out.sum().backward()
    return a.grad


def _arrays(values):
    return [None if v is None else np.asarray(v.detach().numpy()) for v in values]


def test_full_backward_hook_gradients_match_torch():
    pytest.importorskip("ember.nn")
    torch = pytest.importorskip("torch")
    got, want = [], []
    g = _run_module_hooks(ember, got)
    g_ref = _run_module_hooks(torch, want)
    np.testing.assert_array_equal(g.numpy(), g_ref.numpy())
    assert [r[0] for r in got] == [r[0] for r in want] == ["pre", "hook"]
    for mine, ref in zip(got, want):
        for a, b in zip(mine[1:], ref[1:]):
            a, b = _arrays(a), _arrays(b)
            assert len(a) == len(b)
            for x, y in zip(a, b):
                assert (x is None) == (y is None)
                if x is not None:
                    np.testing.assert_array_equal(x, y)


class _Owner:
    """Stands in for the module a BackwardHook reports to its hooks."""


def test_backward_hook_replaces_gradients_and_checks_their_number():
    owner = _Owner()
    seen = []

    def hook(mod, grad_input, grad_output):
        seen.append((mod, grad_input, grad_output))
        return (grad_input[0] * 10, None)

    def pre_hook(mod, grad_output):
        return (grad_output[0] * 2,)

    bw = BackwardHook(owner, [hook], [pre_hook])
    x = ember.ones(3, requires_grad=True)
    (xi, flag) = bw.setup_input_hook((x, "flag"))
    assert flag == "flag" and xi is not x
    y = bw.setup_output_hook(xi * 3)
    assert isinstance(y, ember.Tensor)
    y.sum().backward()
    assert seen[0][0] is owner and seen[0][1][1] is None
    np.testing.assert_array_equal(seen[0][2][0].numpy(), [2.0, 2.0, 2.0])  # pre-hook doubled
    np.testing.assert_array_equal(x.grad.numpy(), [60.0, 60.0, 60.0])

    bad = BackwardHook(owner, [lambda m, gi, go: (gi[0],)], [])
    z = ember.ones(2, requires_grad=True)
    zi, _ = bad.setup_input_hook((z, 1))
    with pytest.raises(RuntimeError, match="invalid number of grad_input, got 1, but expected 2"):
        bad.setup_output_hook(zi * 1).sum().backward()

    bad_pre = BackwardHook(owner, [], [lambda m, go: (go[0], go[0])])
    w = ember.ones(2, requires_grad=True)
    (wi,) = bad_pre.setup_input_hook((w,))
    with pytest.raises(RuntimeError, match="invalid number of grad_output, got 2, but expected 1"):
        bad_pre.setup_output_hook(wi * 1).sum().backward()


def test_backward_hook_without_input_grad_and_without_grad_mode():
    owner = _Owner()
    seen = []
    bw = BackwardHook(owner, [lambda m, gi, go: seen.append(gi)], [])
    x = ember.ones(2)  # no gradient for the input
    w = ember.ones(2, requires_grad=True)
    args = bw.setup_input_hook((x,))
    assert args[0] is x and bw.input_tensors_index is None
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        (bw.setup_output_hook(args[0] * w)).sum().backward()
    assert seen == [(None,)]

    bad = BackwardHook(owner, [lambda m, gi, go: (ember.ones(2),)], [])
    bad.setup_input_hook((x,))
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="should always return None"):
        bad.setup_output_hook(x * w).sum().backward()

    with ember.no_grad():
        quiet = BackwardHook(owner, [], [])
        assert quiet.setup_input_hook((w,))[0] is w
        out = w * 2
        assert quiet.setup_output_hook(out) is out


def test_backward_hook_input_side_alone_passes_the_gradient_through():
    # a gradient reaching the inputs without passing the outputs (double backward): the
    # user hooks are not called
    called = []
    bw = BackwardHook(_Owner(), [lambda *a: called.append(a)], [])
    x = ember.ones(2, requires_grad=True)
    (xi,) = bw.setup_input_hook((x,))
    (xi * 2).sum().backward()
    assert called == []
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


# -- model_zoo ------------------------------------------------------------------------------------


def _checkpoint_bytes() -> bytes:
    buf = io.BytesIO()
    ember.save({"weight": ember.arange(6.0).reshape(2, 3), "bias": ember.zeros(2)}, buf)
    return buf.getvalue()


def test_model_zoo_load_url_downloads_from_a_local_server(tmp_path, monkeypatch):
    hub = pytest.importorskip("ember.hub")
    from ember.hub import _cache

    monkeypatch.delenv(_cache.ENV_OFFLINE, raising=False)
    data = _checkpoint_bytes()
    digest = hashlib.sha256(data).hexdigest()
    requests_seen = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            requests_seen.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    name = f"tiny-{digest[:8]}.pth"
    with local_http_server(Handler) as server:
        url = f"{server.url}/weights/{name}"
        sd = model_zoo.load_url(url, model_dir=str(tmp_path), progress=False, check_hash=True)
        again = model_zoo.load_url(url, model_dir=str(tmp_path), progress=False)
    assert requests_seen == [f"/weights/{name}"]  # the second call read the cached file
    assert (tmp_path / name).read_bytes() == data
    for d in (sd, again):
        assert sorted(d) == ["bias", "weight"]
        np.testing.assert_array_equal(d["weight"].numpy(), np.arange(6.0).reshape(2, 3))
    assert model_zoo.load_url.__module__ == "ember.utils.model_zoo"
    assert callable(hub.load_state_dict_from_url)


def test_model_zoo_without_ember_hub_names_the_distribution(monkeypatch):
    monkeypatch.setitem(sys.modules, "ember.hub", None)  # what a missing package looks like
    with pytest.raises(ImportError, match="pip install ember-hub") as info:
        model_zoo.load_url("http://127.0.0.1:9/never.pth")
    assert info.value.name == "ember.hub"


def test_model_zoo_other_import_errors_are_not_disguised(monkeypatch):
    def fail(name):
        raise ModuleNotFoundError("No module named 'requests'", name="requests")

    monkeypatch.setattr(model_zoo.importlib, "import_module", fail)
    with pytest.raises(ModuleNotFoundError, match="requests") as info:
        model_zoo.load_url("http://127.0.0.1:9/never.pth")
    assert "ember-hub" not in str(info.value)


def test_model_zoo_tqdm(monkeypatch):
    tqdm_auto = pytest.importorskip("tqdm.auto")
    assert model_zoo.tqdm is tqdm_auto.tqdm
    from ember.utils.model_zoo import tqdm  # noqa: F401  (a from-import works too)

    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    with pytest.raises(ImportError, match="pip install ember-hub"):
        model_zoo.tqdm  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        model_zoo.nope  # noqa: B018


# -- dlpack -------------------------------------------------------------------------------------


def test_dldevicetype_members():
    assert issubclass(dlpack.DLDeviceType, int)
    assert {m.name: int(m) for m in dlpack.DLDeviceType} == {
        "kDLCPU": 1, "kDLCUDA": 2, "kDLCUDAHost": 3, "kDLOpenCL": 4, "kDLVulkan": 7,
        "kDLMetal": 8, "kDLVPI": 9, "kDLROCM": 10, "kDLROCMHost": 11, "kDLExtDev": 12,
        "kDLCUDAManaged": 13, "kDLOneAPI": 14, "kDLWebGPU": 15, "kDLHexagon": 16,
        "kDLMAIA": 17}
    assert dlpack.__all__ == ["DLDeviceType", "from_dlpack"]
    assert dlpack.from_dlpack is ember.from_dlpack
    assert ember.ones(1).__dlpack_device__() == (dlpack.DLDeviceType.kDLCPU, 0)


def test_dldevicetype_equals_torch():
    pytest.importorskip("torch")
    from torch.utils.dlpack import DLDeviceType as TorchDL

    assert {m.name: int(m) for m in dlpack.DLDeviceType} == {m.name: int(m) for m in TorchDL}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int8", "uint8",
                                   "bool", "complex64"])
def test_to_dlpack_from_dlpack_round_trip_with_numpy(dtype):
    a = (np.arange(6) % 2).astype(dtype).reshape(2, 3)
    t = ember.from_dlpack(a.__dlpack__())  # a legacy capsule
    assert t.dtype == ember.from_numpy(a).dtype and t.shape == (2, 3)
    assert np.shares_memory(t.numpy(), a)
    t2 = ember.from_dlpack(a.__dlpack__(max_version=(1, 0)))  # a versioned one
    assert np.shares_memory(t2.numpy(), a)

    cap = dlpack.to_dlpack(t)
    assert type(cap).__name__ == "PyCapsule" and "dltensor" in repr(cap)
    back = dlpack.from_dlpack(cap)
    assert np.shares_memory(back.numpy(), a)
    np.testing.assert_array_equal(back.numpy(), a)


def test_from_dlpack_capsule_writes_through_and_keeps_strides():
    a = np.arange(12.0).reshape(3, 4)[:, ::2]
    t = ember.from_dlpack(a.__dlpack__())
    assert t.stride() == (4, 2)
    t[0, 1] = -1.0  # PyTorch's from_dlpack of a capsule is writable; so is Ember's
    t2 = ember.from_dlpack(dlpack.to_dlpack(t))
    t2.add_(1)
    assert a[0, 1] == 0.0 and a[1, 0] == 5.0


def test_from_dlpack_capsule_keeps_the_memory_alive():
    t = dlpack.from_dlpack(np.full(1000, 7.0).__dlpack__())
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), np.full(1000, 7.0))


def test_from_dlpack_capsule_errors():
    a = np.arange(3)
    cap = a.__dlpack__()
    dlpack.from_dlpack(cap)
    with pytest.raises(RuntimeError, match="can be consumed only once"):
        dlpack.from_dlpack(cap)
    with pytest.raises(RuntimeError, match="invalid capsule"):
        dlpack.from_dlpack(object())
    import datetime

    with pytest.raises(RuntimeError, match="invalid capsule"):
        dlpack.from_dlpack(datetime.datetime_CAPI)  # a capsule, not DLPack's
    with pytest.raises(AssertionError, match="device and copy kwargs not supported"):
        dlpack.from_dlpack(a.__dlpack__(), copy=True)
    with pytest.raises(AssertionError, match="device and copy kwargs not supported"):
        dlpack.from_dlpack(a.__dlpack__(), device="cpu")


def test_to_dlpack_errors_and_grad():
    with pytest.raises(TypeError, match="must be Tensor, not numpy.ndarray"):
        dlpack.to_dlpack(np.ones(2))
    t = ember.ones(2, requires_grad=True, device="cpu")
    back = dlpack.from_dlpack(dlpack.to_dlpack(t))  # exported, as PyTorch's to_dlpack does
    assert not back.requires_grad and np.shares_memory(back.numpy(), t.detach().numpy())


def test_from_dlpack_copy_and_device(testdev):
    a = np.arange(4.0)
    assert np.shares_memory(ember.from_dlpack(a, copy=None).numpy(), a)
    assert np.shares_memory(ember.from_dlpack(a, copy=False, device="cpu").numpy(), a)
    c = ember.from_dlpack(a, copy=True)
    assert not np.shares_memory(c.numpy(), a)
    np.testing.assert_array_equal(c.numpy(), a)
    moved = ember.from_dlpack(a, device=testdev)
    assert moved.device == testdev
    np.testing.assert_array_equal(moved.cpu().numpy(), a)
    with pytest.raises(ValueError, match="without copying"):
        ember.from_dlpack(a, device=testdev, copy=False)


class _DLManagedTensor(ctypes.Structure):
    # DLTensor (data, device, ndim, dtype, shape, strides, byte_offset), manager_ctx, deleter
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("dtype", ctypes.c_uint8 * 4), ("shape", ctypes.c_void_p),
                ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


def test_from_dlpack_gpu_capsule_goes_to_cupy_as_a_raw_capsule(monkeypatch):
    """A CUDA capsule is read for its device and handed, as it is, to the CUDA backend's
    ``from_dlpack`` (CuPy's takes a raw capsule)."""
    import ember._factory as factory

    managed = _DLManagedTensor(device_type=int(dlpack.DLDeviceType.kDLCUDA), device_id=1)
    new_capsule = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                    ctypes.c_void_p)(("PyCapsule_New", ctypes.pythonapi))
    cap = new_capsule(ctypes.addressof(managed), b"dltensor", None)
    received = []

    class FakeXp:
        @staticmethod
        def from_dlpack(obj):
            received.append(obj)
            return np.zeros(2, dtype=np.float32)

    class FakeBackend:
        xp = FakeXp

    monkeypatch.setattr(factory, "backend_of", lambda dev: FakeBackend)
    t = ember.from_dlpack(cap)
    assert received == [cap]
    assert (t.device.type, t.device.index) == ("cuda", 1)
    assert factory._capsule_device(cap) == (2, 1, True)

    managed.device_type = 4  # kDLOpenCL: no backend
    with pytest.raises(RuntimeError, match="unsupported DLPack device type 4"):
        ember.from_dlpack(new_capsule(ctypes.addressof(managed), b"dltensor", None))


def test_dlpack_round_trips_with_torch():
    torch = pytest.importorskip("torch")
    from torch.utils import dlpack as tdl

    t = torch.arange(6.0).reshape(2, 3)
    e = dlpack.from_dlpack(tdl.to_dlpack(t))  # torch capsule -> ember
    e[0, 0] = 42.0
    assert t[0, 0].item() == 42.0

    back = tdl.from_dlpack(dlpack.to_dlpack(e))  # ember capsule -> torch
    back[1, 2] = -1.0
    assert e[1, 2].item() == -1.0 and t[1, 2].item() == -1.0

    e2 = ember.from_dlpack(torch.ones(3, dtype=torch.int64))  # __dlpack__ objects both ways
    assert e2.dtype == ember.int64
    t2 = torch.from_dlpack(ember.arange(4))
    assert t2.tolist() == [0, 1, 2, 3]


# -- weak ----------------------------------------------------------------------------------------


def test_weak_id_ref_hashes_by_identity():
    a, b = ember.ones(2), ember.ones(2)
    ra, ra2, rb = weak.WeakIdRef(a), weak.WeakIdRef(a), weak.WeakIdRef(b)
    # (``!=`` is weakref.ref's, which compares the referents: elementwise for tensors, as in
    # PyTorch; ``==`` is the identity test)
    assert hash(ra) == id(a) and ra == ra2 and not (ra == rb)
    assert ra() is a
    del a
    gc.collect()
    assert ra() is None and ra2() is None
    assert ra == ra and not (ra == ra2)  # a dead ref equals only itself
    assert not (ra == weak.WeakIdRef(ember.ones(1)))


def test_weak_id_key_dictionary_keys_by_identity_and_forgets_collected_keys():
    d = weak.WeakTensorKeyDictionary()
    assert weak.WeakTensorKeyDictionary is weak.WeakIdKeyDictionary
    a, b = ember.ones(2), ember.ones(2)  # equal values, distinct tensors
    d[a] = "a"
    d[b] = "b"
    assert len(d) == 2 and d[a] == "a" and d[b] == "b"
    assert a in d and ember.ones(2) not in d and 3 not in d  # an int cannot be weakly held
    assert d.get(ember.ones(2), "missing") == "missing"
    assert set(map(id, d.keys())) == {id(a), id(b)} and sorted(d.values()) == ["a", "b"]
    assert [k for k in d] == list(d.keys())
    assert len(d.keyrefs()) == 2
    del b
    gc.collect()
    assert len(d) == 1 and list(d.items())[0][1] == "a"
    with pytest.raises(KeyError):
        d[ember.ones(2)]
    del a
    gc.collect()
    assert len(d) == 0 and list(d.items()) == []
    assert repr(d).startswith("<WeakIdKeyDictionary at 0x")


def test_weak_id_key_dictionary_mutations_and_copies():
    a, b, c = ember.ones(1), ember.zeros(1), ember.ones(1)
    d = weak.WeakIdKeyDictionary({a: 1})
    d.update({b: 2})
    assert d.setdefault(c, 3) == 3 and d.setdefault(c, 4) == 3
    assert d.pop(c) == 3 and d.pop(c, None) is None
    del d[b]
    assert len(d) == 1
    d[b] = [2]
    shallow, deep = copy.copy(d), copy.deepcopy(d)
    assert shallow[b] is d[b] and deep[b] == [2] and deep[b] is not d[b]
    assert shallow == d and d != {a: 1}
    merged = d | {c: 5}
    assert len(merged) == 3 and len(d) == 2
    d |= {c: 6}
    assert d[c] == 6
    assert len({c: 7} | weak.WeakIdKeyDictionary({a: 8})) == 2
    key, value = d.popitem()
    assert len(d) == 2 and key is not None
    assert d.__eq__(5) is NotImplemented


def test_weak_id_key_dictionary_defers_removals_while_iterating():
    keys = [ember.ones(1) for _ in range(3)]
    d = weak.WeakIdKeyDictionary({k: i for i, k in enumerate(keys)})
    it = d.items()
    next(it)
    del keys[2]
    gc.collect()
    assert len(d._pending_removals) == 1  # waits for the iteration to end
    list(it)
    assert len(d) == 2 and d._pending_removals == []


def test_tensor_weak_ref():
    t = ember.ones(2)
    r = weak.TensorWeakRef(t)
    assert r() is t
    del t
    gc.collect()
    assert r() is None
    with pytest.raises(AssertionError, match="expected torch.Tensor"):
        weak.TensorWeakRef(np.ones(2))


def test_weak_id_key_dictionary_entry_is_gone_when_its_key_is_collected():
    d = weak.WeakIdKeyDictionary()
    t = ember.ones(3)
    ref = weakref.ref(t)
    d[t] = "x"
    del t
    gc.collect()
    assert ref() is None and len(d) == 0 and d.data == {}


# -- collect_env -------------------------------------------------------------------------------


def test_get_env_info_fields():
    info = collect_env.get_env_info()
    assert isinstance(info, collect_env.SystemEnv)
    assert info.ember_version == str(ember.__version__)
    assert info.numpy_version == np.__version__
    assert info.python_version.startswith(sys.version.split()[0])
    assert isinstance(info.is_cuda_available, bool)
    assert "CPU(s):" in info.cpu_info
    assert "ember-core==" in info.pip_packages and "numpy==" in info.pip_packages
    lines = info.pip_packages.splitlines()
    assert lines[0].split()[1].startswith("ember")  # the Ember distributions come first
    if info.blas_info:
        assert info.blas_info.startswith("[")


def test_pretty_env_info_layout():
    text = collect_env.get_pretty_env_info()
    for label in ("Ember version:", "NumPy version:", "OS:", "Python version:",
                  "Is CUDA available:", "CPU:", "Versions of relevant libraries:"):
        assert label in text
    assert "ember-core==" in text


def test_pretty_str_fills_what_is_missing():
    empty = collect_env.SystemEnv(**{f: None for f in collect_env.SystemEnv._fields})
    text = collect_env.pretty_str(empty._replace(is_cuda_available=False, pip_packages="",
                                                 blas_info=""))
    assert "GPU models and configuration: No CUDA" in text
    assert "Is CUDA available: No" in text
    assert "Ember version: Could not collect" in text
    assert "No relevant packages" in text and "None loaded" in text
    gpus = collect_env.pretty_str(empty._replace(
        is_cuda_available=True, nvidia_gpu_models="GPU 0: A\nGPU 1: B"))
    assert "Is CUDA available: Yes" in gpus
    assert "GPU models and configuration: \nGPU 0: A\nGPU 1: B\n" in gpus
    assert "CUDA runtime version: Could not collect" in gpus


def test_collect_env_gpu_fields_through_ember_cuda(monkeypatch):
    class FakeCuda:
        @staticmethod
        def device_count():
            return 2

        @staticmethod
        def get_device_name(i):
            return f"Fake GPU {i}"

    monkeypatch.setattr(collect_env, "_cuda", lambda: FakeCuda)
    assert collect_env.is_cuda_available()
    assert collect_env.get_gpu_info() == "GPU 0: Fake GPU 0\nGPU 1: Fake GPU 1"


def test_collect_env_main_and_module(capsys):
    collect_env.main()
    out = capsys.readouterr().out
    assert out.startswith("Collecting environment information...\nEmber version:")
    proc = subprocess.run([sys.executable, "-m", "ember.utils.collect_env"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Versions of relevant libraries:" in proc.stdout


def test_small_utils_modules_are_attributes_after_import_ember():
    code = ("import ember\n"
            "u = ember.utils\n"
            "assert u.hooks.RemovableHandle and u.dlpack.DLDeviceType and u.weak.WeakIdRef\n"
            "assert u.collect_env.get_env_info\n"
            "import ember.utils.model_zoo as mz\n"
            "assert mz.load_url\n"
            # the reproducibility and broadcasting notes read these after a plain import
            "assert u.deterministic.fill_uninitialized_memory is True\n"
            "w = u.backcompat.broadcast_warning\n"
            "assert w.enabled is False\n"
            "w.enabled = True\n"
            "assert u.backcompat.broadcast_warning.enabled is True\n"
            "assert u.backcompat.keepdim_warning.enabled is False\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr


# -- ember.utils.deterministic ---------------------------------------------------------------

@pytest.fixture
def deterministic_mode():
    import ember.utils.deterministic as det

    before = (ember.are_deterministic_algorithms_enabled(), det.fill_uninitialized_memory)
    ember.use_deterministic_algorithms(True)
    yield det
    ember.use_deterministic_algorithms(before[0])
    det.fill_uninitialized_memory = before[1]


def test_deterministic_mode_fills_uninitialized_memory(deterministic_mode):
    assert deterministic_mode.fill_uninitialized_memory is True
    assert ember.empty(3).isnan().all()
    assert ember.empty_like(ember.ones(2, dtype=ember.complex64)).isnan().all()
    assert ember.empty_strided((2, 2), (1, 2)).isnan().all()
    assert ember.ones(2).new_empty(3).isnan().all()
    assert ember.empty(2, dtype=ember.int32).tolist() == [2**31 - 1] * 2
    assert ember.empty(2, dtype=ember.uint8).tolist() == [255, 255]
    assert ember.empty(2, dtype=ember.bool).tolist() == [True, True]
    deterministic_mode.fill_uninitialized_memory = False
    assert deterministic_mode.fill_uninitialized_memory is False
    with pytest.raises(RuntimeError, match="expected a bool, but got int"):
        deterministic_mode.fill_uninitialized_memory = 1


def test_uninitialized_memory_is_not_filled_outside_deterministic_mode(monkeypatch):
    import numpy as np

    import ember.utils.deterministic as det

    assert not ember.are_deterministic_algorithms_enabled() and det.fill_uninitialized_memory
    fills = []
    real = np.ndarray.fill
    monkeypatch.setattr(ember._settings, "fill_value_of_uninitialized",
                        lambda dt: fills.append(dt) or None)
    ember.empty(4), ember.empty_like(ember.ones(2)), ember.empty_strided((2,), (1,))
    assert fills == [] and np.ndarray.fill is real  # never asked: the memory is as NumPy gave


def test_deterministic_fill_equals_the_oracle(deterministic_mode):
    torch = pytest.importorskip("torch")
    torch.use_deterministic_algorithms(True)
    try:
        for name in ("float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
                     "complex64", "bfloat16", "float16"):
            e = ember.empty(3, dtype=getattr(ember, name))
            t = torch.empty(3, dtype=getattr(torch, name))
            assert str(e.tolist()) == str(t.tolist()), name
    finally:
        torch.use_deterministic_algorithms(False)

