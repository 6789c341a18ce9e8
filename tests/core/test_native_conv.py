"""The direct convolution kernels of ember._native (``ember_conv2d_f32`` and friends, the
"direct" path of ember.ops._conv_kernels): small stride-1 float32 2-d convolutions, their
input gradient (the forward form with the flipped kernel) and their weight gradient, in both
vector layouts (along output rows, along output channels) and both vector widths (AVX2's 8
floats, AVX-512's 16), checked against the float64
computation of the NumPy paths, against the float32 NumPy paths (``_DIRECT`` off) and against
PyTorch; the path selection (float64, strides, dilation, groups, wide layers and kernels
wider than 7 keep the NumPy paths) and the thread split (results independent of the number
of threads, bit for bit).
"""

import numpy as np
import pytest
from testutils import on_one_and_two_threads

import ember
import ember.nn.functional as F
from ember import _native
from ember.ops import _conv_kernels

# skipped without a C compiler; the kernels run on the CPU under a strict or cuda run too
from .test_native_kernels import on_the_cpu, pytestmark  # noqa: F401


@pytest.fixture
def direct():
    """Skip where the library lacks the direct kernels (no AVX2/FMA: they return 0)."""
    lib = _native.library()
    if lib is None or not _conv_kernels._direct_built(id(lib)):
        pytest.skip(f"no direct kernels here ({_native.status()})")


@pytest.fixture(params=[8, 16], ids=["avx2", "avx512"])
def width(request, direct):
    """The kernels' vector width: 8 floats (the AVX2 kernels) or 16 (their AVX-512 twins,
    which run by default where the CPU has AVX-512; skipped where it has not)."""
    wide = _native.kernel("ember_conv_wide")
    before = wide(-1)
    if request.param == 16 and not before:
        pytest.skip("the direct kernels were built without AVX-512 here")
    wide(int(request.param == 16))
    yield request.param
    wide(before)


def _run(x, w, b, gy, **kw):
    """Forward, input gradient, weight gradient, bias gradient of ember's conv2d."""
    xt = ember.tensor(x, requires_grad=True)
    wt = ember.tensor(w, requires_grad=True)
    bt = None if b is None else ember.tensor(b, requires_grad=True)
    y = F.conv2d(xt, wt, bt, **kw)
    y.backward(ember.tensor(gy))
    return y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()


def _data(n, c, h, w, o, kh, kw, seed=0, **geometry):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wgt = rng.standard_normal((o, c, kh, kw)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    y = F.conv2d(ember.tensor(x), ember.tensor(wgt), **geometry)
    gy = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    return x, wgt, b, gy


def _close(a, ref, k):
    """float32 sums of ``k`` terms of unit-variance products against the float64 value."""
    np.testing.assert_allclose(a, ref, rtol=1e-4, atol=2e-6 * k)


GEOMETRIES = [
    # (N, C, H, W, O, KH, KW, conv2d keywords)
    (64, 1, 28, 28, 6, 5, 5, dict(padding=2)),  # LeNet-5's first conv
    (64, 6, 14, 14, 16, 5, 5, {}),  # its second: rows of 10, channels fill the vectors
    (4, 16, 12, 12, 16, 3, 3, dict(padding=1)),  # a ResNet basic block's
    (2, 3, 9, 7, 10, 3, 3, dict(padding=1)),
    (1, 5, 6, 11, 17, 3, 2, dict(padding=(0, 1))),  # a batch of one, a tail of channels
    (2, 2, 5, 5, 33, 1, 1, {}),  # 1x1
    (2, 4, 7, 9, 3, 7, 7, dict(padding=3)),  # the widest kernel served
    (1, 3, 4, 4, 8, 2, 7, dict(padding=(1, 3))),
    (3, 2, 6, 20, 13, 4, 3, dict(padding="same")),  # asymmetric padding
    (2, 4, 3, 1, 5, 1, 1, {}),  # rows of one
    (2, 3, 2, 2, 4, 3, 3, dict(padding=2)),  # output rows that read padding only
    (2, 3, 5, 32, 40, 3, 3, dict(padding=1)),  # two whole 16-lane vectors a row, 32 + 8 channels
    (2, 2, 4, 21, 24, 2, 5, dict(padding=(0, 2))),  # a 16-lane row tail of 5; 16 + 8 channels
    (1, 3, 3, 40, 64, 1, 7, dict(padding=(0, 3))),  # 32 + 8 positions; 64 channels
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: "x".join(map(str, g[:7])))
@pytest.mark.parametrize("kind", ["rows", "channels"])
def test_direct_conv_equals_the_float64_convolution(width, monkeypatch, native_calls, geometry,
                                                    kind):
    n, c, h, w, o, kh, kw, geo = geometry
    x, wgt, b, gy = _data(n, c, h, w, o, kh, kw, **geo)
    monkeypatch.setattr(_conv_kernels, "_DIRECT_KIND", kind)
    monkeypatch.setattr(_conv_kernels, "_DIRECT_MIN_K", 1)  # the kernels on every geometry
    y, gx, gw = _run(x, wgt, b, gy, **geo)
    assert ("ember_conv2d_f32" if kind == "rows" else "ember_conv2d_ovec_f32") in native_calls
    y64, gx64, gw64 = _run(*(a.astype(np.float64) for a in (x, wgt, b, gy)), **geo)
    _close(y, y64, c * kh * kw)
    _close(gx, gx64, o * kh * kw)
    _close(gw, gw64, n * y.shape[2] * y.shape[3])
    # the weight gradient's direct kernels, wherever the selection would not take them
    xd, gd = x, gy
    g = _geom(x, wgt, geo)
    r = _conv_kernels._weight_grad_direct(xd, gd, g, wgt.shape)
    assert r.shape == wgt.shape and r.dtype == np.float32 and r.flags.c_contiguous
    _close(r, gw64, n * y.shape[2] * y.shape[3])


def _geom(x, w, geo):
    """The Geom that F.conv2d builds for ``geo`` (stride 1, no dilation)."""
    kh, kw = w.shape[2:]
    pad = geo.get("padding", 0)
    if pad == "same":
        lo = ((kh - 1) // 2, (kw - 1) // 2)
    elif isinstance(pad, int):
        lo = (pad, pad)
    else:
        lo = tuple(pad)
    hi = lo if pad != "same" else (kh - 1 - lo[0], kw - 1 - lo[1])
    H, W = x.shape[2:]
    y = (H + lo[0] + hi[0] - kh + 1, W + lo[1] + hi[1] - kw + 1)
    return _conv_kernels.Geom((kh, kw), (1, 1), (1, 1), lo, (H, W), y, 1)


@pytest.mark.parametrize("geometry", GEOMETRIES[:3], ids=["lenet1", "lenet2", "resnet"])
def test_direct_conv_agrees_with_the_numpy_paths_and_pytorch(direct, monkeypatch, geometry):
    n, c, h, w, o, kh, kw, geo = geometry
    x, wgt, b, gy = _data(n, c, h, w, o, kh, kw, seed=1, **geo)
    got = _run(x, wgt, b, gy, **geo)
    terms = (c * kh * kw, o * kh * kw, n * got[0].shape[2] * got[0].shape[3])
    monkeypatch.setattr(_conv_kernels, "_DIRECT", False)
    plain = _run(x, wgt, b, gy, **geo)
    for a, p, k in zip(got, plain, terms):
        _close(a, p, k)
    torch = pytest.importorskip("torch")
    xt = torch.tensor(x, requires_grad=True)
    wt = torch.tensor(wgt, requires_grad=True)
    yt = torch.nn.functional.conv2d(xt, wt, torch.tensor(b), **geo)
    yt.backward(torch.tensor(gy))
    for a, t, k in zip(got, (yt.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()), terms):
        _close(a, t, k)


def test_lenet_takes_the_direct_kernels(direct, native_calls):
    """LeNet-5's convolutions: forward, input gradient and weight gradient all direct."""
    x, wgt, b, gy = _data(64, 6, 14, 14, 16, 5, 5)
    native_calls.clear()
    _run(x, wgt, b, gy)
    assert native_calls.count("ember_conv2d_ovec_f32") == 1  # forward: 16 channels, rows of 10
    assert native_calls.count("ember_conv2d_f32") == 1  # input gradient: 6 channels, rows of 14
    assert "ember_conv2d_wgrad_ovec_f32" in native_calls
    assert "ember_col2im_flat_f32" not in native_calls
    x, wgt, b, gy = _data(64, 1, 28, 28, 6, 5, 5, padding=2)
    native_calls.clear()
    _run(x, wgt, b, gy, padding=2)
    assert "ember_conv2d_f32" in native_calls and "ember_conv2d_wgrad_f32" in native_calls


@pytest.mark.parametrize("geometry", [
    # (N, C, L, O, K, conv1d keywords)
    (32, 16, 100, 16, 5, dict(padding=2)),
    (8, 16, 50, 32, 5, {}),
    (3, 4, 9, 5, 7, dict(padding=3)),
    (2, 8, 2, 6, 3, dict(padding=1)),
    (16, 16, 300, 1, 7, dict(padding="same")),
])
def test_direct_conv1d_as_a_2d_conv_of_height_one(direct, native_calls, geometry):
    n, c, length, o, k, geo = geometry
    rng = np.random.default_rng(8)
    x = rng.standard_normal((n, c, length)).astype(np.float32)
    w = rng.standard_normal((o, c, k)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)

    def run(dtype):
        xt = ember.tensor(x.astype(dtype), requires_grad=True)
        wt = ember.tensor(w.astype(dtype), requires_grad=True)
        y = F.conv1d(xt, wt, ember.tensor(b.astype(dtype)), **geo)
        y.backward(ember.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape))
                                .astype(dtype)))
        return y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()

    got = run(np.float32)
    assert "ember_conv2d_f32" in native_calls or "ember_conv2d_ovec_f32" in native_calls
    ref = run(np.float64)
    for a, r, terms in zip(got, ref, (c * k, o * k, n * got[0].shape[2])):
        assert a.dtype == np.float32 and a.shape == r.shape
        _close(a, r, terms)


@pytest.mark.parametrize("case", [
    dict(dtype=np.float64),
    dict(stride=2),
    dict(dilation=2),
    dict(groups=2),
    dict(o=128),  # wide layers are BLAS's
    dict(kw=9),
    dict(c=128),  # C * KH * KW past _DIRECT_MAX_K
    dict(c=1, kw=1),  # 3 taps: too little work per tile (_DIRECT_MIN_K)
])
def test_other_convolutions_keep_the_numpy_paths(direct, native_calls, case):
    case = dict(case)
    dtype = case.pop("dtype", np.float32)
    o, c, kw = case.pop("o", 4), case.pop("c", 4), case.pop("kw", 3)
    rng = np.random.default_rng(2)
    x = ember.tensor(rng.standard_normal((2, c, 12, 12)).astype(dtype), requires_grad=True)
    w = ember.tensor(rng.standard_normal((o, c // case.get("groups", 1), 3, kw))
                     .astype(dtype), requires_grad=True)
    F.conv2d(x, w, **case).sum().backward()
    assert not [n for n in native_calls if n.startswith("ember_conv2d")]


def test_native_off_keeps_the_numpy_paths(direct, monkeypatch, native_calls):
    x, wgt, b, gy = _data(4, 6, 14, 14, 16, 5, 5)
    native_calls.clear()
    got = _run(x, wgt, b, gy)
    monkeypatch.setenv("EMBER_NATIVE", "0")
    plain = _run(x, wgt, b, gy)
    for a, p, k in zip(got, plain, (150, 400, 400)):
        _close(a, p, k)
    assert native_calls.count("ember_conv2d_ovec_f32") == 1  # the first run's forward only


@pytest.mark.parametrize("geometry", [(8, 6, 14, 14, 16, 5, 5, {}),
                                      (1, 16, 32, 32, 16, 3, 3, dict(padding=1)),
                                      (16, 1, 28, 28, 6, 5, 5, dict(padding=2))])
def test_results_do_not_depend_on_the_threads(width, geometry):
    """Forward rows are computed whole by one thread each (a batch of one splits by rows);
    the weight gradient sums fixed blocks of samples in order: bit-identical on 1 and 2
    threads."""
    n, c, h, w, o, kh, kw, geo = geometry
    x, wgt, b, gy = _data(n, c, h, w, o, kh, kw, seed=3, **geo)
    one, two = on_one_and_two_threads(lambda: _run(x, wgt, b, gy, **geo))
    for a, t in zip(one, two):
        np.testing.assert_array_equal(a, t)


def test_infinities_and_nan_propagate_as_in_the_numpy_paths(width, monkeypatch):
    """An infinite input is summed where a window reads it and nowhere else: the vectors'
    masked tail lanes (past a row's end) must not turn it into NaN."""
    x, wgt, b, gy = _data(2, 3, 9, 10, 5, 3, 3, seed=4, padding=1)
    x[0, 1, 4, 9] = np.inf  # the last column: the rows kernel's tail lanes read past it
    x[0, 0, 2, 0] = -np.inf  # the first: the previous row's tail lanes read it
    x[1, 2, 0, 0] = np.nan
    for kind in ("rows", "channels"):
        monkeypatch.setattr(_conv_kernels, "_DIRECT_KIND", kind)
        g = _geom(x, wgt, dict(padding=1))
        got = (_conv_kernels._conv_direct(x, wgt, g),
               _conv_kernels._weight_grad_direct(x, gy, g, wgt.shape))
        monkeypatch.setattr(_conv_kernels, "_DIRECT", False)
        plain = (_conv_kernels.conv_array(x, wgt, g),
                 _conv_kernels.weight_grad_array(x, gy, g, wgt.shape))
        monkeypatch.setattr(_conv_kernels, "_DIRECT", True)
        for a, p in zip(got, plain):
            np.testing.assert_array_equal(np.isnan(a), np.isnan(p))
            np.testing.assert_array_equal(np.isinf(a), np.isinf(p))
            ok = np.isfinite(p)
            np.testing.assert_allclose(a[ok], p[ok], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("geometry", [GEOMETRIES[0], GEOMETRIES[2], GEOMETRIES[-2]],
                         ids=["lenet1", "resnet", "tail"])
@pytest.mark.parametrize("kind", ["rows", "channels"])
def test_both_vector_widths_give_the_same_forward_bits(direct, monkeypatch, geometry, kind):
    """The AVX-512 forward kernels sum each output's taps in the AVX2 ones' order (one FMA
    per tap from the bias): the same bits; the weight gradient's lane-wise partials differ
    in width, so it agrees to rounding only."""
    wide = _native.kernel("ember_conv_wide")
    if not wide(-1):
        pytest.skip("the direct kernels were built without AVX-512 here")
    n, c, h, w, o, kh, kw, geo = geometry
    x, wgt, b, gy = _data(n, c, h, w, o, kh, kw, seed=6, **geo)
    monkeypatch.setattr(_conv_kernels, "_DIRECT_KIND", kind)
    g = _geom(x, wgt, geo)
    try:
        wide(0)
        narrow = (_conv_kernels._conv_direct(x, wgt, g, b),
                  _conv_kernels._weight_grad_direct(x, gy, g, wgt.shape))
    finally:
        wide(1)
    wide_ = (_conv_kernels._conv_direct(x, wgt, g, b),
             _conv_kernels._weight_grad_direct(x, gy, g, wgt.shape))
    np.testing.assert_array_equal(wide_[0], narrow[0])
    _close(wide_[1], narrow[1], n * g.y[0] * g.y[1])


def test_a_channels_last_input_and_a_non_contiguous_gradient(direct):
    x, wgt, b, gy = _data(4, 6, 14, 14, 16, 5, 5, seed=5)
    xt = ember.tensor(x).to(memory_format=ember.channels_last).requires_grad_()
    wt = ember.tensor(wgt, requires_grad=True)
    y = F.conv2d(xt, wt, ember.tensor(b))
    assert y.is_contiguous(memory_format=ember.channels_last)
    y.backward(ember.tensor(np.ascontiguousarray(gy.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2))
    ref = _run(*(a.astype(np.float64) for a in (x, wgt, b, gy)))
    _close(y.detach().numpy(), ref[0], 150)
    _close(xt.grad.numpy(), ref[1], 400)
    _close(wt.grad.numpy(), ref[2], 400)


def test_lenet_trains_the_same_with_and_without_the_direct_kernels(direct, monkeypatch):
    """Ten SGD steps of LeNet-5 on the direct kernels track the NumPy paths' steps."""
    def train():
        ember.manual_seed(0)
        nn = ember.nn
        m = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 10))
        opt = ember.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
        rng = np.random.default_rng(0)
        x = ember.tensor(rng.standard_normal((32, 1, 28, 28)).astype(np.float32))
        y = ember.tensor(rng.integers(0, 10, 32))
        losses = []
        for _ in range(10):
            loss = F.cross_entropy(m(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return np.array(losses)

    got = train()
    monkeypatch.setattr(_conv_kernels, "_DIRECT", False)
    plain = train()
    assert got[-1] < 0.95 * got[0]
    np.testing.assert_allclose(got, plain, rtol=2e-3, atol=1e-4)


def _pool_conv(x, wgt, geo):
    """Forward and weight gradient through the direct kernels on two threads of the native
    pool (``kernels.c``'s pool_for)."""
    from ember import _parallel
    _parallel._blas_last[0] = float("-inf")  # no threaded product has just run (serial then)
    g = _geom(x, wgt, geo)
    gy = np.cos(np.arange(x.shape[0] * wgt.shape[0] * g.y[0] * g.y[1], dtype=np.float32))
    gy = gy.reshape((x.shape[0], wgt.shape[0]) + g.y)
    return (_conv_kernels._conv_direct(x, wgt, g),
            _conv_kernels._weight_grad_direct(x, gy, g, wgt.shape))


def test_the_native_pool_splits_the_work_and_matches_one_thread(direct):
    """On two threads the direct kernels run their second chunk on a worker of the native
    pool, with the one-thread bits."""
    x, wgt, b, gy = _data(64, 6, 14, 14, 16, 5, 5, seed=9)
    jobs = _native.kernel("ember_pool_jobs")()
    one, two = on_one_and_two_threads(lambda: _pool_conv(x, wgt, {}))
    assert _native.kernel("ember_pool_jobs")() == jobs + 2  # the forward, the weight gradient
    assert _native.kernel("ember_pool_workers")() >= 1
    for a, t in zip(one, two):
        np.testing.assert_array_equal(a, t)


def test_python_threads_sharing_the_native_pool(direct):
    """Several Python threads calling the kernels at once: one job holds the pool, the others
    run serially in their own thread; every result is right."""
    import threading
    x, wgt, b, gy = _data(64, 6, 14, 14, 16, 5, 5, seed=10)
    want = on_one_and_two_threads(lambda: _pool_conv(x, wgt, {}))[0]
    errors, before = [], ember.get_num_threads()
    ember.set_num_threads(2)

    def work():
        try:
            for _ in range(20):
                for a, t in zip(_pool_conv(x, wgt, {}), want):
                    np.testing.assert_array_equal(a, t)
        except BaseException as e:  # reported below, in the test's thread
            errors.append(e)

    try:
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads)
    finally:
        ember.set_num_threads(before)
    assert not errors, errors[0]


def _conv_in_child(queue):
    ember.set_num_threads(2)
    x, wgt, b, gy = _data(64, 6, 14, 14, 16, 5, 5, seed=11)
    queue.put(([a.tolist() for a in _pool_conv(x, wgt, {})],
               _native.kernel("ember_pool_workers")()))


def test_a_forked_child_starts_a_pool_of_its_own(direct):
    """The parent's workers do not exist in a forked child (DataLoader workers): its first
    split job starts new ones instead of waiting on the parent's forever."""
    import multiprocessing as mp
    if "fork" not in mp.get_all_start_methods():
        pytest.skip("no fork here")
    x, wgt, b, gy = _data(64, 6, 14, 14, 16, 5, 5, seed=11)
    want = on_one_and_two_threads(lambda: _pool_conv(x, wgt, {}))[1]  # the parent's pool runs
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_conv_in_child, args=(queue,))
    child.start()
    try:
        got, workers = queue.get(timeout=120)
        child.join(timeout=60)
        assert child.exitcode == 0
    finally:
        if child.is_alive():
            child.kill()
            child.join()
    assert workers >= 1  # the child's own (the parent's count was reset at the fork)
    for a, t in zip(got, want):
        np.testing.assert_array_equal(np.array(a, dtype=np.float32), t)
