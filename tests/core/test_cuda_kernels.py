"""``ember.cuda._kernels``: the fused CUDA kernels (softmax, layer norm, GELU, Adam).

Four layers:

- the formulas the kernels are generated from, evaluated with NumPy against Ember's CPU ops
  (on any machine);
- the wrappers on a fake CuPy (fixture ``fake_cupy``), twice: once with NumPy running the
  kernels (the generated elementwise text executed line by line, a NumPy model of each row
  kernel), once with the generated CUDA C compiled for the host by g++ (a block as threads
  meeting at barriers, warp shuffles through memory), which runs the kernels' own reductions
  and indexing (skipped without a C++20 g++); both check shapes, dtypes, launch arguments
  and caching;
- the sources compiled by nvcc when the CUDA toolkit is there;
- ``gpu``-marked tests that run the real kernels against the CPU ops (skipped without a GPU).
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys

import _fake_cupy
import numpy as np
import pytest
from _fake_cupy import (
    FakeCupy,
    FakeElementwiseKernel,
    ev,
    layer_norm_grad_rows,
    layer_norm_rows,
    namespace,
    run,
    softmax_grad_rows,
    softmax_rows,
)

import ember
from ember.cuda import _kernels as K
from ember.ops.activation import gelu as cpu_gelu

fake_cupy, host_compiler = _fake_cupy.fake_cupy, _fake_cupy.host_compiler  # the fixtures


def _cpu(a, requires_grad=False):
    """A CPU tensor: the CPU ops are the oracle (also when the strict device is the default)."""
    return ember.tensor(a, device="cpu", requires_grad=requires_grad)


def _randn(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _tol(dtype):
    return {np.float16: dict(rtol=2e-3, atol=2e-3), np.float32: dict(rtol=2e-5, atol=2e-6),
            np.float64: dict(rtol=1e-12, atol=1e-13)}[np.dtype(dtype).type]


# -- import hygiene and the generated source -----------------------------------------------------

def test_importing_ember_imports_no_cupy():
    code = ("import sys, ember, ember.cuda, ember.cuda._kernels, ember.cuda.memory, "
            "ember.cuda.streams\n"
            "assert 'cupy' not in sys.modules, 'cupy imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_formulas_name_their_constants():
    """No float literal in a formula: a float kernel would compute in double."""
    exprs = [e for table in (K.GELU, K.GELU_GRAD) for st in table.values() for _, e in st]
    exprs += [e for a in (False, True) for b in (False, True) for _, e in K.adam_statements(a, b)]
    exprs += [*K.SOFTMAX.values(), *K.LAYER_NORM.values()]
    for expr in exprs:
        assert not re.search(r"\d\.|\.\d|\de", expr), expr
        names = set(re.findall(r"[A-Za-z_]\w*", expr))
        assert not names & {"i", "n_", "_ind"}, expr  # CuPy's own names in a kernel


@pytest.mark.parametrize("ctype", ["float", "double"])
def test_row_source_is_complete(ctype):
    src = K.row_source(ctype)
    assert "$" not in src and f"typedef {ctype} A;" in src
    for name in ("softmax_forward", "softmax_backward", "layer_norm_forward",
                 "layer_norm_backward"):
        assert f'extern "C" __global__ void ember_{name}(' in src
    assert src.count("{") == src.count("}") and src.count("(") == src.count(")")


def test_elementwise_body():
    body = K.elementwise_body("float", ["x"], K.GELU["tanh"], ["y"])
    assert body.splitlines() == [
        "typedef float A;", "const A K_HALF = A(0.5);",
        f"const A K_GELU = A({math.sqrt(2 / math.pi)!r});", "const A K_GELU_C = A(0.044715);",
        "A x = A(x_);", f"A y = {K.GELU['tanh'][0][1]};", "y_ = T(y);"]


def test_block_sizes():
    assert [K._block(n) for n in (0, 1, 32, 33, 100, 512, 513, 10**6)] == [
        32, 32, 32, 64, 128, 512, 512, 512]


# -- the formulas against the CPU ops -------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_formulas_match_cpu(approximate, dtype):
    x = _randn(200, dtype=dtype) * 3
    env = run(K.GELU[approximate], namespace(dtype, x=x))
    t = _cpu(x, requires_grad=True)
    y = cpu_gelu(t, approximate)
    np.testing.assert_allclose(env["y"], y.detach().numpy(), **_tol(dtype))
    g = _randn(200, dtype=dtype, seed=1)
    y.backward(_cpu(g))
    env = run(K.GELU_GRAD[approximate], namespace(dtype, x=x, g=g))
    np.testing.assert_allclose(env["gx"], t.grad.numpy(), **_tol(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_softmax_formulas_match_cpu(axis, log, dtype):
    x = _randn(3, 5, 4, dtype=dtype) * 4
    shape = x.shape
    n, inner = shape[axis], math.prod(shape[axis + 1:])
    y = softmax_rows(x, n, inner, log, dtype).reshape(shape)
    t = _cpu(x, requires_grad=True)
    out = (ember.log_softmax if log else ember.softmax)(t, axis)
    np.testing.assert_allclose(y, out.detach().numpy(), **_tol(dtype))
    g = _randn(*shape, dtype=dtype, seed=2)
    out.backward(_cpu(g))
    gx = softmax_grad_rows(out.detach().numpy(), g, n, inner, log, dtype).reshape(shape)
    np.testing.assert_allclose(gx, t.grad.numpy(), **_tol(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm_formulas_match_cpu(affine, dtype):
    x = _randn(4, 3, 6, dtype=dtype) * 2 + 1
    w = _randn(3, 6, dtype=dtype, seed=3) if affine else None
    b = _randn(3, 6, dtype=dtype, seed=4) if affine else None
    y, mean, rstd = layer_norm_rows(x, None if w is None else w.ravel(),
                                    None if b is None else b.ravel(), 18, 1e-5, dtype)
    tx = _cpu(x, requires_grad=True)
    tw, tb = (None, None) if not affine else (_cpu(w, requires_grad=True),
                                              _cpu(b, requires_grad=True))
    out = ember.layer_norm(tx, (3, 6), tw, tb, 1e-5)
    np.testing.assert_allclose(y.reshape(x.shape), out.detach().numpy(), **_tol(dtype))
    saved_mean, saved_invstd = out.grad_fn.ctx[4], out.grad_fn.ctx[5]
    np.testing.assert_allclose(mean, saved_mean.ravel(), **_tol(dtype))
    np.testing.assert_allclose(rstd, saved_invstd.ravel(), **_tol(dtype))
    g = _randn(*x.shape, dtype=dtype, seed=5)
    out.backward(_cpu(g))
    gx = layer_norm_grad_rows(g, x, mean, rstd, None if w is None else w.ravel(), 18, dtype)
    np.testing.assert_allclose(gx.reshape(x.shape), tx.grad.numpy(), **_tol(dtype))
    if affine:
        env = namespace(dtype, g=g.reshape(4, 18), x=x.reshape(4, 18), mean=mean[:, None],
                        rstd=rstd[:, None])
        gw = ev(K.LAYER_NORM["weight_grad_term"], env).sum(axis=0)
        np.testing.assert_allclose(gw.reshape(3, 6), tw.grad.numpy(), **_tol(dtype))


# -- the wrappers, on the fake CuPy ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_kernels_match_cpu(fake_cupy, approximate, dtype):
    x = _randn(7, 9, dtype=dtype)[:, ::2]  # strided: the kernel takes any layout
    t = _cpu(x, requires_grad=True)
    out = cpu_gelu(t, approximate)
    y = K.gelu(x, approximate)
    assert y.dtype == dtype and y.shape == x.shape
    np.testing.assert_allclose(y, out.detach().numpy(), **_tol(dtype))
    g = _randn(*x.shape, dtype=dtype, seed=1)
    out.backward(_cpu(g))
    np.testing.assert_allclose(K.gelu_backward(g, x, approximate), t.grad.numpy(),
                               **_tol(dtype))
    assert K.gelu(np.array(1.0, dtype), approximate).shape == ()


def test_kernels_are_built_once_per_compute_type(fake_cupy):
    x = _randn(4)
    K.gelu(x)
    K.gelu(x * 2)
    K.gelu(x.astype(np.float16))  # float16 computes in float: the same kernel
    assert fake_cupy.built == ["ember_gelu_none_float"]
    K.gelu(x.astype(np.float64))
    K.gelu(x, "tanh")
    assert fake_cupy.built[1:] == ["ember_gelu_none_double", "ember_gelu_tanh_float"]
    K.softmax(x, 0)
    K.softmax(x, 0, log=True)
    assert fake_cupy.built[3:] == ["ember_softmax_forward"]
    with pytest.raises(TypeError, match="CUDA kernels take floating-point arrays, not int64"):
        K.gelu(np.arange(3))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_kernels_match_cpu(fake_cupy, axis, log, dtype):
    x = _randn(4, 3, 5, dtype=dtype)[:, :, ::-1]  # not contiguous
    t = _cpu(x, requires_grad=True)
    out = (ember.log_softmax if log else ember.softmax)(t, axis)
    y = K.softmax(x, axis, log)
    assert y.dtype == dtype and y.shape == x.shape
    np.testing.assert_allclose(y, out.detach().numpy(), **_tol(dtype))
    g = _randn(*x.shape, dtype=dtype, seed=2)
    out.backward(_cpu(g))
    gx = K.softmax_backward(out.detach().numpy(), g, axis, log)
    assert gx.dtype == dtype
    np.testing.assert_allclose(gx, t.grad.numpy(), **_tol(dtype))


@pytest.mark.parametrize("log", [False, True])
def test_softmax_kernels_edge_shapes(fake_cupy, log):
    fn = ember.log_softmax if log else ember.softmax
    for x in (np.array(2.5, np.float32), np.zeros((0, 3), np.float32)):
        t = _cpu(x, requires_grad=True)
        out = fn(t, 0)
        np.testing.assert_array_equal(K.softmax(x, 0, log), out.detach().numpy())
        g = np.ones_like(x)
        out.backward(_cpu(g))
        np.testing.assert_allclose(K.softmax_backward(out.detach().numpy(), g, 0, log),
                                   t.grad.numpy())
    x = np.array([[0.0, np.nan, 1.0], [-np.inf, 0.0, 1.0]], np.float32)
    np.testing.assert_allclose(K.softmax(x, 1, log), fn(_cpu(x), 1).numpy(), rtol=1e-6)
    assert fake_cupy.built == ["ember_softmax_forward"]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("affine", ["none", "weight", "both"])
def test_layer_norm_kernels_match_cpu(fake_cupy, affine, dtype):
    x = _randn(2, 3, 4, 5, dtype=dtype)
    w = None if affine == "none" else _randn(4, 5, dtype=dtype, seed=3)
    b = _randn(4, 5, dtype=dtype, seed=4) if affine == "both" else None
    tx = _cpu(x, requires_grad=True)
    tw = None if w is None else _cpu(w, requires_grad=True)
    tb = None if b is None else _cpu(b, requires_grad=True)
    out = ember.layer_norm(tx, (4, 5), tw, tb, 1e-3)
    y, mean, rstd = K.layer_norm(x, w, b, 1e-3, 2)
    saved_mean, saved_invstd = out.grad_fn.ctx[4], out.grad_fn.ctx[5]
    for got, want in ((y, out.detach().numpy()), (mean, saved_mean), (rstd, saved_invstd)):
        assert got.dtype == want.dtype and got.shape == want.shape  # what the CPU keeps
        np.testing.assert_allclose(got, want, **_tol(dtype))
    g = _randn(*x.shape, dtype=dtype, seed=5)
    out.backward(_cpu(g))
    gx, gw, gb = K.layer_norm_backward(g, x, mean, rstd, w, 2, need_weight=w is not None,
                                       need_bias=b is not None)
    tol = dict(rtol=1e-2, atol=1e-2) if dtype == np.float16 else _tol(dtype)
    np.testing.assert_allclose(gx, tx.grad.numpy(), **tol)
    assert gx.dtype == dtype
    for got, t in ((gw, tw), (gb, tb)):
        assert (got is None) == (t is None)
        if t is not None:
            assert got.dtype == dtype and got.shape == t.shape
            np.testing.assert_allclose(got, t.grad.numpy(), **tol)
    assert K.layer_norm_backward(g, x, mean, rstd, w, 2, need_input=False) == (None,) * 3


def test_layer_norm_kernels_empty(fake_cupy):
    for shape, nd in (((0, 4), 1), ((3, 0), 1), ((2, 0, 3), 2)):
        x = np.zeros(shape, np.float32)
        out = ember.layer_norm(_cpu(x), shape[len(shape) - nd:])
        y, mean, rstd = K.layer_norm(x, None, None, 1e-5, nd)
        assert y.shape == shape and mean.shape == rstd.shape == shape[:len(shape) - nd] + (1,) * nd
        assert np.isnan(mean).all() and np.isnan(rstd).all()
        assert out.shape == shape
        gx, gw, gb = K.layer_norm_backward(x, x, mean, rstd, None, nd, need_weight=True,
                                           need_bias=True)
        assert gx.shape == shape and gw.shape == gb.shape == shape[len(shape) - nd:]
        assert not gx.any() and not gw.any() and not gb.any()
    assert fake_cupy.built == []


def _adam_reference(p0, grads, **opts):
    """The CPU optimizer's parameter and state after ``grads`` (``decoupled``: AdamW)."""
    optim = pytest.importorskip("ember.optim")
    nn = pytest.importorskip("ember.nn")
    p = nn.Parameter(_cpu(p0))
    cls = optim.AdamW if opts.pop("decoupled", False) else optim.Adam
    opt = cls([p], **opts)
    for g in grads:
        p.grad = _cpu(g)
        opt.step()
    state = opt.state[p]
    return p.detach().numpy(), state


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("opts", [
    {},
    {"weight_decay": 0.1},
    {"weight_decay": 0.1, "decoupled": True},
    {"amsgrad": True, "maximize": True, "betas": (0.3, 0.5), "lr": 0.1},
    {"amsgrad": True, "weight_decay": 0.05, "decoupled": True, "eps": 1e-3},
])
def test_adam_kernel_matches_the_cpu_optimizer(fake_cupy, opts, dtype):
    p0 = _randn(5, 4, dtype=dtype)
    grads = [_randn(5, 4, dtype=dtype, seed=s) for s in range(1, 5)]
    want, state = _adam_reference(p0, grads, **opts)
    lr = opts.get("lr", 1e-3)
    beta1, beta2 = opts.get("betas", (0.9, 0.999))
    amsgrad = opts.get("amsgrad", False)
    weight_decay = opts.get("weight_decay", 0.0)
    p, m, v = p0.copy(), np.zeros_like(p0), np.zeros_like(p0)
    v_max = np.zeros_like(p0) if amsgrad else None
    for step, g in enumerate(grads, 1):
        K.adam_step_(p, g, m, v, lr=lr, beta1=beta1, beta2=beta2, eps=opts.get("eps", 1e-8),
                     weight_decay=weight_decay, step=float(step), max_exp_avg_sq=v_max,
                     maximize=opts.get("maximize", False), decoupled=opts.get("decoupled", False))
    tol = dict(rtol=0, atol=0)  # the same operations in the same order as the CPU optimizer
    np.testing.assert_allclose(p, want, **tol)
    np.testing.assert_allclose(m, state["exp_avg"].numpy(), **tol)
    np.testing.assert_allclose(v, state["exp_avg_sq"].numpy(), **tol)
    if amsgrad:
        np.testing.assert_allclose(v_max, state["max_exp_avg_sq"].numpy(), **tol)
    assert len(fake_cupy.built) == 1


@pytest.mark.parametrize("n", [33, 700, 1500])
def test_row_kernels_with_many_warps(fake_cupy, n):
    """Rows longer than a warp, and than a block (the threads loop over the row)."""
    x = _randn(3, n, dtype=np.float64) * 3
    t = _cpu(x, requires_grad=True)
    out = ember.softmax(t, 1)
    np.testing.assert_allclose(K.softmax(x, 1), out.detach().numpy(), rtol=1e-12)
    g = _randn(3, n, dtype=np.float64, seed=1)
    out.backward(_cpu(g))
    np.testing.assert_allclose(K.softmax_backward(out.detach().numpy(), g, 1), t.grad.numpy(),
                               rtol=1e-10, atol=1e-14)
    t = _cpu(x, requires_grad=True)
    out = ember.layer_norm(t, (n,))
    y, mean, rstd = K.layer_norm(x, None, None, 1e-5, 1)
    np.testing.assert_allclose(y, out.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rstd, out.grad_fn.ctx[5], rtol=1e-12)
    out.backward(_cpu(g))
    gx, _, _ = K.layer_norm_backward(g, x, mean, rstd, None, 1)
    np.testing.assert_allclose(gx, t.grad.numpy(), rtol=1e-9, atol=1e-12)


def _elementwise_kernels(monkeypatch):
    """Every ElementwiseKernel the wrappers build, as FakeElementwiseKernel objects."""
    monkeypatch.setitem(sys.modules, "cupy", FakeCupy())
    monkeypatch.setattr(K, "_CACHE", {})
    for dtype in (np.float32, np.float64):
        x = _randn(4, dtype=dtype)
        for approximate in ("none", "tanh"):
            K.gelu(x, approximate)
            K.gelu_backward(x, x, approximate)
        for wd, decoupled, amsgrad in ((0, False, False), (0.1, False, False), (0, False, True),
                                       (0.1, False, True), (0.1, True, True)):
            K.adam_step_(x.copy(), x, x * 0, x * 0, lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8,
                         weight_decay=wd, step=1.0, decoupled=decoupled,
                         max_exp_avg_sq=x * 0 if amsgrad else None)
    return [k for k in K._CACHE.values() if isinstance(k, FakeElementwiseKernel)]


def test_sources_compile_with_nvcc(tmp_path, monkeypatch):
    """The row kernels and the elementwise bodies (placed as CuPy places them: inputs
    ``const T x_``, outputs ``T& y_``; float16 as CUDA's ``__half``) compile with nvcc."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("needs nvcc (the CUDA toolkit) to compile the kernels' source")
    kernels = _elementwise_kernels(monkeypatch)
    assert len(kernels) == 2 * (4 + 4)  # GELU's four, Adam's four, in float and double
    sources = {"elementwise.cu": _fake_cupy.elementwise_cuda_source(kernels, "ew"),
               "row_float.cu": K.row_source("float"), "row_double.cu": K.row_source("double")}
    for name, source in sources.items():
        path = tmp_path / name
        path.write_text(source)
        done = subprocess.run([nvcc, "-arch=sm_80", "-cubin", "-o", str(path.with_suffix(".cubin")),
                               str(path)], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{name} does not compile:\n{done.stderr}"
        assert "warning" not in done.stderr, done.stderr


def test_kernels_table():
    assert set(K.KERNELS) == {"softmax", "softmax_backward", "layer_norm", "layer_norm_backward",
                              "gelu", "gelu_backward", "adam_step_", "elementwise_chain"}
    assert all(callable(f) for f in K.KERNELS.values())


# -- the real kernels on a GPU ----------------------------------------------------------------

def _gpu(a):
    import cupy

    return cupy.asarray(a)


def _host(a):
    import cupy

    return cupy.asnumpy(a)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gpu_gelu(approximate, dtype):
    x = _randn(3000, dtype=dtype) * 3
    t = _cpu(x, requires_grad=True)
    out = cpu_gelu(t, approximate)
    y = K.gelu(_gpu(x), approximate)
    assert y.dtype == dtype
    np.testing.assert_allclose(_host(y), out.detach().numpy(), **_tol(dtype))
    g = _randn(3000, dtype=dtype, seed=1)
    out.backward(_cpu(g))
    # float32 tanh: where 1 + tanh(u) is a few ulps (x near -5) the gradient's two terms cancel,
    # so one ulp of tanh moves it by ~3e-6 (the GPU's tanh and NumPy's differ there)
    tol = (dict(rtol=1e-2, atol=1e-2) if dtype == np.float16
           else dict(rtol=2e-5, atol=1e-5) if dtype == np.float32 else _tol(dtype))
    np.testing.assert_allclose(_host(K.gelu_backward(_gpu(g), _gpu(x), approximate)),
                               t.grad.numpy(), **tol)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape,axis", [((64, 10), 1), ((8, 3000), -1), ((7, 1500, 3), 1),
                                        ((33, 5, 2), 0), ((4, 1), 1)])
def test_gpu_softmax(shape, axis, log, dtype):
    x = _randn(*shape, dtype=dtype) * 4
    t = _cpu(x, requires_grad=True)
    out = (ember.log_softmax if log else ember.softmax)(t, axis)
    y = K.softmax(_gpu(x), axis, log)
    tol = dict(rtol=1e-2, atol=1e-3) if dtype == np.float16 else _tol(dtype)
    np.testing.assert_allclose(_host(y), out.detach().numpy(), **tol)
    g = _randn(*shape, dtype=dtype, seed=2)
    out.backward(_cpu(g))
    gx = K.softmax_backward(_gpu(out.detach().numpy()), _gpu(g), axis, log)
    tol = dict(rtol=1e-2, atol=1e-2) if dtype == np.float16 else dict(
        rtol=10 * _tol(dtype)["rtol"], atol=10 * _tol(dtype)["atol"])
    np.testing.assert_allclose(_host(gx), t.grad.numpy(), **tol)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape,nd", [((16, 64), 1), ((4, 3000), 1), ((3, 5, 7, 11), 2)])
def test_gpu_layer_norm(shape, nd, dtype):
    x = _randn(*shape, dtype=dtype) * 2 + 1
    norm = shape[len(shape) - nd:]
    w, b = _randn(*norm, dtype=dtype, seed=3), _randn(*norm, dtype=dtype, seed=4)
    tx, tw, tb = (_cpu(a, requires_grad=True) for a in (x, w, b))
    out = ember.layer_norm(tx, norm, tw, tb, 1e-5)
    y, mean, rstd = K.layer_norm(_gpu(x), _gpu(w), _gpu(b), 1e-5, nd)
    tol = dict(rtol=1e-2, atol=1e-2) if dtype == np.float16 else dict(
        rtol=10 * _tol(dtype)["rtol"], atol=10 * _tol(dtype)["atol"])
    for got, want in ((y, out.detach().numpy()), (mean, out.grad_fn.ctx[4]),
                      (rstd, out.grad_fn.ctx[5])):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(_host(got), want, **tol)
    g = _randn(*shape, dtype=dtype, seed=5)
    out.backward(_cpu(g))
    gx, gw, gb = K.layer_norm_backward(_gpu(g), _gpu(x), mean, rstd, _gpu(w), nd,
                                       need_weight=True, need_bias=True)
    tol = dict(rtol=5e-2, atol=5e-2) if dtype == np.float16 else dict(
        rtol=100 * _tol(dtype)["rtol"], atol=100 * _tol(dtype)["atol"])
    for got, t in ((gx, tx), (gw, tw), (gb, tb)):
        np.testing.assert_allclose(_host(got), t.grad.numpy(), **tol)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("opts", [{}, {"weight_decay": 0.1},
                                  {"amsgrad": True, "weight_decay": 0.05, "decoupled": True,
                                   "maximize": True}])
def test_gpu_adam(opts, dtype):
    p0 = _randn(300, 7, dtype=dtype)
    grads = [_randn(300, 7, dtype=dtype, seed=s) for s in range(1, 4)]
    want, state = _adam_reference(p0, grads, **opts)
    amsgrad = opts.get("amsgrad", False)
    p, m, v = _gpu(p0), _gpu(np.zeros_like(p0)), _gpu(np.zeros_like(p0))
    v_max = _gpu(np.zeros_like(p0)) if amsgrad else None
    weight_decay = opts.get("weight_decay", 0.0)
    for step, g in enumerate(grads, 1):
        K.adam_step_(p, _gpu(g), m, v, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                     weight_decay=weight_decay, step=float(step), max_exp_avg_sq=v_max,
                     maximize=opts.get("maximize", False), decoupled=opts.get("decoupled", False))
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(_host(p), want, **tol)
    np.testing.assert_allclose(_host(m), state["exp_avg"].numpy(), **tol)
    np.testing.assert_allclose(_host(v), state["exp_avg_sq"].numpy(), **tol)


# -- the ops and optimizers reach the kernels through the backend --------------------------------

@pytest.mark.parametrize("cls, opts", [
    ("Adam", {}),
    ("Adam", {"amsgrad": True, "weight_decay": 0.1, "maximize": True}),
    ("AdamW", {"weight_decay": 0.05}),
])
def test_optimizer_runs_the_backend_adam_kernel(fake_cupy, cls, opts):
    """``ember.optim.Adam`` on a device whose backend has ``adam_step_`` (CUDA's) runs it once
    per parameter and step, with the result of the array-module path on the CPU."""
    import ember.optim

    backend = ember.testing.register_test_device("fusedev", 1)
    calls = []

    def spy(*args, **kwargs):
        calls.append(kwargs["step"])
        return K.adam_step_(*args, **kwargs)

    backend.kernels = {"adam_step_": spy}
    try:
        p0 = [_randn(4, 3, seed=1), _randn(3, seed=2)]
        grads = [[_randn(4, 3, seed=10 + s), _randn(3, seed=20 + s)] for s in range(3)]
        results = {}
        for dev in ("cpu", "fusedev"):
            params = [ember.tensor(p, device=dev, requires_grad=True) for p in p0]
            opt = getattr(ember.optim, cls)(params, lr=0.1, **opts)
            for gs in grads:
                for p, g in zip(params, gs):
                    p.grad = ember.tensor(g, device=dev)
                opt.step()
            results[dev] = [p.detach().to("cpu").numpy() for p in params]
        assert calls == [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
        for a, b in zip(results["cpu"], results["fusedev"]):
            np.testing.assert_allclose(b, a, rtol=0, atol=0)
    finally:
        ember.testing.unregister_test_device("fusedev")


@pytest.fixture
def fused_device(fake_cupy):
    """A device whose backend carries CUDA's fused kernels (running on the fake CuPy)."""
    backend = ember.testing.register_test_device("fusedev", 1)
    calls = []

    def spying(name, fn):
        def kernel(*args, **kwargs):
            calls.append(name)
            return fn(*args, **kwargs)
        return kernel

    backend.kernels = {name: spying(name, fn) for name, fn in K.KERNELS.items()}
    yield calls
    ember.testing.unregister_test_device("fusedev")


def _both(fn, *arrays, dtype=np.float64):
    """``fn`` on CPU tensors and on the fused device, forward and backward of a weighted sum:
    ((cpu_out, cpu_grads), (dev_out, dev_grads))."""
    runs = []
    for dev in ("cpu", "fusedev"):
        ts = [ember.tensor(a.astype(dtype), device=dev, requires_grad=True) for a in arrays]
        out = fn(*ts)
        w = ember.tensor(_randn(*out.shape, seed=99).astype(dtype), device=dev)
        (out * w).sum().backward()
        runs.append((out.detach().to("cpu").numpy(),
                     [t.grad.to("cpu").numpy() for t in ts]))
    return runs


@pytest.mark.parametrize("log", [False, True])
def test_softmax_runs_the_backend_kernels(fused_device, log):
    op = ember.log_softmax if log else ember.softmax
    (want, gwant), (got, ggot) = _both(lambda x: op(x, dim=1), _randn(3, 5, 2))
    assert fused_device == ["softmax", "softmax_backward"]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(ggot[0], gwant[0], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_runs_the_backend_kernel(fused_device, approximate):
    (want, gwant), (got, ggot) = _both(
        lambda x: ember.nn.functional.gelu(x, approximate=approximate), _randn(4, 3))
    assert fused_device == ["gelu"]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(ggot[0], gwant[0], rtol=1e-10, atol=1e-12)


def test_layer_norm_runs_the_backend_kernel(fused_device):
    import ember.nn.functional as F

    (want, gwant), (got, ggot) = _both(
        lambda x, w, b: F.layer_norm(x, (4,), w, b, 1e-5),
        _randn(3, 4, seed=1), _randn(4, seed=2), _randn(4, seed=3))
    assert fused_device == ["layer_norm"]
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    for g, w in zip(ggot, gwant):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-11)
