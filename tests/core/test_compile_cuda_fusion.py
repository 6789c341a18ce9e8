"""``ember.compile`` on the CUDA backend: each chain of elementwise ops runs as ONE generated
``ElementwiseKernel`` (``ember._compile._cuda_fusion``, ``ember.cuda._kernels``'s
``elementwise_chain``).

Without a GPU the chains run on a test device whose backend carries CUDA's kernels on the
fake CuPy (tests/_fake_cupy.py), twice: the generated kernel body executed by NumPy, and the
same body compiled for the host by g++ as CUDA C (skipped without g++). Each compiled result
is compared with the NumPy sequence the CPU runs (the same ops one by one, ``out=``) and with
eager; ``gpu``-marked tests run the real kernels on a GPU.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import warnings

import _fake_cupy
import numpy as np
import pytest

import ember
from ember._compile import _cuda_fusion, _lowerings, explain
from ember.cuda import _kernels as K

nn = pytest.importorskip("ember.nn")
F = nn.functional

fake_cupy, host_compiler = _fake_cupy.fake_cupy, _fake_cupy.host_compiler  # the fixtures

DEV = "cudafake"
FLOATS = [np.float16, np.float32, np.float64]


@pytest.fixture
def cuda_like(fake_cupy):
    """A device whose backend carries CUDA's kernels (``elementwise_chain`` included) on the
    fake CuPy; yields the fake CuPy (``.built``: the names of the kernels it built)."""
    backend = ember.testing.register_test_device(DEV, 1)
    backend.kernels = dict(K.KERNELS)
    fake_cupy.backend = backend
    yield fake_cupy
    ember.testing.unregister_test_device(DEV)


def _host_mode(fake) -> bool:
    """Whether the fake CuPy runs the kernels as host-compiled C (else NumPy runs them)."""
    return fake.host


def _randn(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _replay(fn, arrays, device):
    """``fn`` compiled, run twice under no_grad (capture, then the replay): the replay's
    result on the host and the entry's generator state."""
    ts = [ember.tensor(a, device=device) for a in arrays]
    compiled = ember.compile(fn)
    with ember.no_grad(), warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("error", UserWarning)  # no graph break
        compiled(*ts)
        out = compiled(*ts)
    return out.to("cpu").numpy(), compiled._entries[0].gen


def _eager(fn, arrays, device):
    ts = [ember.tensor(a, device=device) for a in arrays]
    with ember.no_grad(), np.errstate(all="ignore"):
        return fn(*ts).to("cpu").numpy()


def _source(gen) -> str:
    """The generated function's body."""
    return "\n".join(gen.lines)


def _assert_same(got, want, exact, dtype):
    assert got.dtype == want.dtype and got.shape == want.shape
    if exact:
        np.testing.assert_array_equal(got, want)
        return
    # exp/tanh/erf/log/pow: the host's libm (or the GPU's) against NumPy's SIMD routines and
    # Ember's CPU GELU polynomial (within 4 float32 ulps of the exact value), a few ulps
    tol = {np.float16: 2e-3, np.float32: 2e-6, np.float64: 1e-14}[np.dtype(dtype).type]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# -- the chains of every elementwise op, against the CPU's sequence and eager --------------

def _arith(x, b, c, s):
    # scalars on either side, a row (b), a column (c) and a 0-d tensor (s) broadcast in
    y = x * 0.5 + b
    y = y * c - s
    y = 2.0 / (y + 3.0) - -x
    return (y - 1.5) / (x * x + 0.25)


def _unary(x, b, c, s):
    y = (-x * 3.0).exp()  # overflows to inf for the larger inputs
    return (y.tanh() - 0.5).relu() * x + (x - 1.0).relu()


def _copies(x, b, c, s):
    y = (x + b).clone() * 2.0
    return y.clone() - c


def _activations(x, b, c, s):
    y = (x * 0.5).sigmoid() + F.silu(x) - F.gelu(x) * F.gelu(x - b, approximate="tanh")
    y = (1.0 - y) * y
    y = y + (x.abs() + 1.0).log() + (x.abs() + 0.25).sqrt() * (x.abs() + 0.5).rsqrt()
    return y - (x.clamp(-1.0, 1.0) ** 2.0) * x.pow(3) + (x.abs() + c) ** -0.5


def _masks(x, b, c, s):
    # comparisons (tensor, broadcast row, 0-d, number), where (tensors and numbers), casts of
    # the masks, clamps and abs: every value selected or exactly rounded
    y = ember.where(x > b, x, c) + ember.where(x <= s, 0.25, x * 2.0)
    y = y * (x < 0.5).type_as(x) - (x == c).to(x.dtype) + ember.where(x != x, 1.0, -x)
    y = y + (x >= b).type_as(x) * x.abs() + ember.where(x.bool(), 0.5, x * 3.0)
    y = y - (x - 1.0).bool().to(x.dtype)
    return y.clamp(-3.0, 3.0) - x.clamp_min(0.0) + (y - x).clamp_max(0.5) + x.clamp(1.0, -1.0)


CHAINS = {  # name -> (function, exact): True: only + - * /, copies and selections; False:
    # exact when NumPy runs the kernel body (the same ufuncs as the CPU); None: never (the
    # CPU's exact GELU is a float32 polynomial, the kernel's is erf)
    "arith": (_arith, True),
    "unary": (_unary, False),
    "copies": (_copies, True),
    "activations": (_activations, None),
    "masks": (_masks, True),
}


def _inputs(dtype):
    x = _randn(6, 7, dtype=dtype) * 2
    x[0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    x[1, :2] = [0.0, 40.0]
    return [x, _randn(7, dtype=dtype, seed=1), _randn(6, 1, dtype=dtype, seed=2),
            np.asarray(0.75, dtype=dtype)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_chain_equals_the_cpu_sequence_and_eager(cuda_like, chain, dtype):
    fn, exact = CHAINS[chain]
    arrays = _inputs(dtype)
    got, gen = _replay(fn, arrays, DEV)
    want, cpu_gen = _replay(fn, arrays, "cpu")
    assert gen.fused_chains and not cpu_gen.fused_chains
    assert all(len(c) > 1 for c in gen.fused_chains)
    # NumPy running the body calls NumPy's exp
    exact = exact is True or exact is False and not _host_mode(cuda_like)
    with np.errstate(all="ignore"):
        _assert_same(got, want, exact, dtype)
        _assert_same(got, _eager(fn, arrays, DEV), exact, dtype)
        _assert_same(got, _eager(fn, arrays, "cpu"), exact, dtype)


def test_arith_is_one_kernel_with_broadcast_inputs_and_scalars(cuda_like):
    arrays = _inputs(np.float32)
    _, gen = _replay(_arith, arrays, DEV)
    assert gen.fused_chains == [["mul", "add", "mul", "sub", "add", "div", "neg", "sub",
                                 "sub", "mul", "add", "div"]]
    (kernel,) = [k for k in K._CACHE.values() if k.name.startswith("ember_chain_")]
    assert kernel.options == K.CHAIN_OPTIONS == ("--fmad=false",)
    assert [t for t, _ in kernel.ins] == ["T"] * 4 + ["float32"] * 5
    assert len(kernel.outs) == 1  # only the result leaves the kernel
    assert "A t0 = A(T(x0 * s0));" in kernel.body.splitlines()


def test_float16_rounds_after_every_op_as_the_sequence(cuda_like):
    # a chain computed in float32 and rounded once would differ from NumPy's float16 ops
    x = np.array([1000.0, 1.0, 3.0, 0.1], np.float16)

    def fn(x):
        return (x + 0.3) * 1.7 - x

    got, gen = _replay(fn, [x], DEV)
    want = _eager(fn, [x], "cpu")
    assert gen.fused_chains == [["add", "mul", "sub"]]
    np.testing.assert_array_equal(got, want)
    once = ((x.astype(np.float32) + np.float32(np.float16(0.3))) * np.float32(np.float16(1.7))
            - x.astype(np.float32)).astype(np.float16)
    assert not np.array_equal(once, want)  # the test can tell the two apart


def test_kernels_are_cached_per_signature_and_compute_type(cuda_like):
    def fn(x):
        return (x * 2.0 + 1.0).tanh()

    for dtype in (np.float32, np.float16, np.float64, np.float32):
        _replay(fn, [_randn(3, 4, dtype=dtype)], DEV)

    def other(x):  # the same chain with other scalars and shapes: the same kernel
        return (x * -3.0 + 0.5).tanh()

    _replay(other, [_randn(5, dtype=np.float32)], DEV)
    chains = [n for n in cuda_like.built if n.startswith("ember_chain_")]
    assert chains == ["ember_chain_mul_add_tanh_float", "ember_chain_mul_add_tanh_double"]


# -- which values come out, and where they go -------------------------------------------------

def test_values_read_outside_the_chain_are_written_the_rest_stay_in_registers(cuda_like):
    def fn(x):
        a = (x * 2.0).exp()  # read by the sum below: an output of the kernel
        b = (a - 1.0) * 0.5  # read by the next chain only
        return a.sum() + (b * b).tanh().sum()

    arrays = [_randn(4, 5)]
    got, gen = _replay(fn, arrays, DEV)
    assert gen.fused_chains == [["mul", "exp", "sub", "mul"], ["mul", "tanh"]]
    first = next(k for k in K._CACHE.values() if k.name.startswith("ember_chain_mul_exp"))
    assert [n for _, n in first.outs] == ["t1_", "t3_"]  # a and b
    np.testing.assert_allclose(got, _eager(fn, arrays, "cpu"), rtol=1e-6)


def test_a_chain_writes_into_a_buffer_only_it_reads(cuda_like):
    # inference: linear's output buffer is read by the chain alone, so the chain's result
    # goes into it (the kernel reads it first), as the CPU's ops write in place
    ember.manual_seed(0)
    lin = nn.Linear(5, 6).to(DEV)

    def fn(x):
        return (lin(x) * 2.0 + 1.0).tanh().sum(1)

    x = _randn(4, 5)
    got, gen = _replay(fn, [x], DEV)
    (kernel,) = [k for k in K._CACHE.values() if k.name.startswith("ember_chain_")]
    assert [n for _, n in kernel.ins] == ["s0", "s1"] and [n for _, n in kernel.outs] == ["x0_"]
    assert kernel.body.splitlines()[1] == "A x0 = A(x0_);"
    assert "(2.0, 1.0, v_linear)  # mul -> add -> tanh" in _source(gen)
    lin_cpu = nn.Linear(5, 6).to("cpu")
    lin_cpu.load_state_dict({k: v.to("cpu") for k, v in lin.state_dict().items()})
    want = _eager(lambda t: (lin_cpu(t) * 2.0 + 1.0).tanh().sum(1), [x], "cpu")
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    # a value that leaves the call never lands in a reused buffer
    with ember.no_grad():
        compiled = ember.compile(lambda t: (lin(t) * 2.0 + 1.0).tanh())
        t = ember.tensor(x, device=DEV)
        compiled(t)
        first = compiled(t)
        keep = first.clone()
        compiled(t * 3)
    np.testing.assert_array_equal(first.to("cpu").numpy(), keep.to("cpu").numpy())


def test_a_real_in_place_write_ends_a_chain(cuda_like):
    def fn(x):
        h = x * 2.0 - 1.0
        h.relu_()  # a write the replay makes as it is
        return ((h + 1.0) * 3.0).sum()

    arrays = [_randn(4, 5)]
    got, gen = _replay(fn, arrays, DEV)
    assert gen.fused_chains == [["mul", "sub"], ["add", "mul"]]
    assert "xp.maximum(" in _source(gen)
    np.testing.assert_allclose(got, _eager(fn, arrays, "cpu"), rtol=1e-6)


def test_what_is_not_fused(cuda_like):
    def ints(x):
        return (x * 2 + 1) * x

    def single(x):
        return x.exp().sum()

    def shapes(x):  # a node of another shape ends the chain
        return ((x.sum(0) * 2.0) + x).tanh()

    for fn, arrays in ((ints, [np.arange(6)]), (single, [_randn(3)]), (shapes, [_randn(3, 4)])):
        got, gen = _replay(fn, arrays, DEV)
        np.testing.assert_allclose(got, _eager(fn, arrays, "cpu"), rtol=1e-6)
        if fn is shapes:
            assert gen.fused_chains == [["add", "tanh"]]
        else:
            assert gen.fused_chains == [] and "_ew" not in _source(gen)


def test_scalars_that_overflow_the_dtype_are_left_to_the_array_code(cuda_like):
    # NumPy (and CuPy) turn 70000.0 into float16's inf with an overflow warning: that op stays
    # the array call, which does so as it does alone; the rest of the chain is fused
    def fn(t):
        return (t * 70000.0 + 1.0) * 2.0

    x = np.array([1.0, -1.0, 0.0], np.float16)
    got, gen = _replay(fn, [x], DEV)
    assert gen.fused_chains == [["add", "mul"]]
    np.testing.assert_array_equal(got, _eager(fn, [x], "cpu"))
    assert _cuda_fusion._scalar(2**1100, np.dtype(np.float64)) is None
    assert _cuda_fusion._scalar(2**70, np.dtype(np.float32)) == float(np.float32(2**70))
    assert _cuda_fusion._scalar(0.1, np.dtype(np.float16)) == float(np.float16(0.1))


def test_an_op_never_overwrites_memory_still_read_later():
    # a view's memory is its base's; a real in-place write's output is the written array (here
    # the caller's tensor): neither may take a later op's result
    ember.manual_seed(0)
    lin = nn.Linear(4, 6).to("cpu")

    def through_a_view(x):
        a = lin(x)
        b = a.view(-1).exp()
        return (a + b.view(3, 6)).sum(1)

    x = _randn(3, 4)
    got, _ = _replay(through_a_view, [x], "cpu")
    np.testing.assert_allclose(got, _eager(through_a_view, [x], "cpu"), rtol=1e-6)

    def after_a_write(t):
        t.relu_()
        return t.exp().sum(0)

    compiled = ember.compile(after_a_write)
    for _ in range(3):
        t = ember.tensor(x, device="cpu")
        with ember.no_grad():
            out = compiled(t)
        np.testing.assert_array_equal(t.numpy(), np.maximum(x, 0))
        np.testing.assert_allclose(out.numpy(), np.exp(np.maximum(x, 0)).sum(0), rtol=1e-6)


def test_no_chain_kernel_on_the_cpu_or_a_device_without_it():
    for device in ("cpu", "testdev"):
        _, gen = _replay(_arith, _inputs(np.float32), device)
        assert gen.fused_chains == [] and "_ew" not in _source(gen)


def test_every_elementwise_lowering_has_a_cuda_expression():
    # the lowerings that compute an elementwise value (zero_ writes in place only)
    elementwise = {"relu", "relu_", "tanh", "exp", "neg", "clone", "Tensor.clone",
                   "Tensor.copy_", "add", "sub", "mul", "div", "add_", "sub_", "mul_", "div_",
                   "log", "sigmoid", "gelu", "silu", "sqrt", "rsqrt", "abs", "where", "lt",
                   "le", "gt", "ge", "eq", "ne", "pow", "clamp", "clamp_min", "clamp_max",
                   "Tensor.float", "Tensor.double", "Tensor.half", "Tensor.to",
                   "Tensor.type_as", "rsub", "Tensor.long", "Tensor.int", "Tensor.bool"}
    assert set(_lowerings.POINTWISE) == elementwise
    assert elementwise <= set(_lowerings.FORWARD)


def test_the_new_ops_join_one_chain(cuda_like):
    _, gen = _replay(_activations, _inputs(np.float32), DEV)
    ops = {op for chain in gen.fused_chains for op in chain}
    assert {"sigmoid", "silu", "gelu", "abs", "log", "sqrt", "rsqrt", "clamp", "pow",
            "rsub"} <= ops
    assert len(gen.fused_chains) == 1 and gen.fallbacks == []
    _, gen = _replay(_masks, _inputs(np.float64), DEV)
    assert len(gen.fused_chains) == 1 and gen.fallbacks == []
    assert {"gt", "le", "lt", "eq", "ne", "ge", "where", "Tensor.type_as", "Tensor.to",
            "Tensor.bool", "clamp_min", "clamp_max"} <= set(gen.fused_chains[0])
    (kernel,) = [k for k in K._CACHE.values() if "where" in k.name or "gt" in k.name]
    assert [t for t, _ in kernel.ins] == ["T"] * 4 + ["float64"] * len(
        [t for t, _ in kernel.ins if t != "T"])  # no bool array among the kernel's parameters
    assert "A t0 = A(x0 > x1);" in kernel.body.splitlines()  # a comparison: 1 or 0


def test_a_comparison_read_outside_the_chain_stays_an_array(cuda_like):
    # the mask leaves the call: its comparison and the where that reads it are array code,
    # the chains before and after them kernels
    def fn(x, b):
        h = x * 2.0 + b
        m = h > 0.5
        y = ember.where(m, h, b)
        return (y * 3.0 - 1.0).tanh(), m

    ts = [ember.tensor(a, device=DEV) for a in (_randn(4, 5), _randn(5, seed=1))]
    compiled = ember.compile(fn)
    with ember.no_grad():
        compiled(*ts)
        y, m = compiled(*ts)
        want_y, want_m = fn(*ts)
    gen = compiled._entries[0].gen
    assert gen.fused_chains == [["mul", "add"], ["mul", "sub", "tanh"]]
    np.testing.assert_array_equal(m.to("cpu").numpy(), want_m.to("cpu").numpy())
    np.testing.assert_allclose(y.to("cpu").numpy(), want_y.to("cpu").numpy(), rtol=1e-6)


# -- training steps ------------------------------------------------------------------------------

class _ChainMLP(nn.Module):
    """An MLP with elementwise chains between its layers (forward and, in-place, functional
    forms that a training step replays as such)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(20, 16), nn.Linear(16, 12), nn.Linear(12, 5)
        self.inplace = inplace

    def forward(self, x):
        h = self.l1(x)
        h = F.relu(h * 0.5 + 1.0) - h.tanh() * 0.25
        h = self.l2(h)
        if self.inplace:
            h.mul_(1.5)
            h.add_(0.1)
            h.relu_()
        else:
            h = (h.exp() / (h * h + 1.0)).neg() + h
        return self.l3(h)


def _train_step(device, opt_name, compiled, inplace, steps=3):
    ember.manual_seed(0)
    model = _ChainMLP(inplace).to(device)
    opt = {"sgd": lambda p: ember.optim.SGD(p, lr=0.1, momentum=0.9),
           "adam": lambda p: ember.optim.Adam(p, lr=1e-2)}[opt_name](model.parameters())

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    run = ember.compile(step) if compiled else step
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.standard_normal((8, 20)).astype(np.float32), device=device)
    y = ember.tensor(rng.integers(0, 5, 8), device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        losses = [run(x, y).item() for _ in range(steps)]
    params = [p.detach().to("cpu").numpy() for p in model.parameters()]
    return losses, params, run


def _check_training(device, opt_name, inplace):
    """The compiled step against eager on ``device`` (as close as the CPU's compiled step is to
    eager: test_compile.py), and its generator state."""
    want_losses, want_params, _ = _train_step(device, opt_name, False, inplace)
    losses, params, run = _train_step(device, opt_name, True, inplace)
    tol = dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(losses, want_losses, **tol)
    for p, q in zip(params, want_params):
        np.testing.assert_allclose(p, q, **tol)
    entry = explain(run)["entries"][0]
    assert not entry["eager"] and entry["fallback_ops"] == [] \
        and entry["grad_fallback_ops"] == []
    assert entry["fused_chains"] == run._entries[0].gen.fused_chains  # what explain reports
    return losses, params, run._entries[0].gen


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
def test_training_step_with_chains_equals_eager(cuda_like, opt_name, inplace):
    losses, params, gen = _check_training(DEV, opt_name, inplace)
    assert gen.fused_chains == [["mul", "add", "relu", "tanh", "mul", "sub"],
                                ["mul_", "add_", "relu_"] if inplace else
                                ["exp", "mul", "add", "div", "neg", "add"]]
    # the unfused compiled step (the same ops one by one, as the CPU runs them) on the same
    # device gives the same numbers: exactly when NumPy runs the kernels, within an ulp of
    # exp/tanh when the host's libm does. (Against the CPU's own step the optimizers differ:
    # the CPU's update runs native float32 kernels.)
    chain_kernel = cuda_like.backend.kernels.pop("elementwise_chain")
    try:
        seq_losses, seq_params, unfused = _train_step(DEV, opt_name, True, inplace)
    finally:
        cuda_like.backend.kernels["elementwise_chain"] = chain_kernel
    assert unfused._entries[0].gen.fused_chains == []
    exact = not _host_mode(cuda_like)
    tol = dict(rtol=0, atol=0) if exact else dict(rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(losses, seq_losses, **tol)
    for p, q in zip(params, seq_params):
        np.testing.assert_allclose(p, q, **tol)


def test_copy_into_an_intermediate_in_a_training_step_is_fused(cuda_like):
    # t.copy_(...) on the gradient's path (an activation's copy-back) replays as its value
    def run(device):
        ember.manual_seed(0)
        lin = nn.Linear(4, 6).to(device)

        def step(x):
            h = lin(x)
            t = h * 2.0
            t.copy_(h.tanh() + 1.0)
            loss = (t * t + 0.5).mean()
            loss.backward()
            return loss

        compiled = ember.compile(step)
        x = ember.tensor(_randn(3, 4), device=device)
        for _ in range(2):
            lin.zero_grad()
            loss = compiled(x)
        return float(loss), lin.weight.grad.to("cpu").numpy(), compiled._entries[0].gen

    loss, grad, gen = run(DEV)
    assert gen.fused_chains == [["mul", "tanh", "add", "Tensor.copy_", "mul", "add"]]
    want_loss, want_grad, cpu_gen = run("cpu")
    assert cpu_gen.fused_chains == []
    tol = dict(rtol=1e-6, atol=1e-7) if _host_mode(cuda_like) else dict(rtol=0, atol=0)
    np.testing.assert_allclose(loss, want_loss, **tol)
    np.testing.assert_allclose(grad, want_grad, **tol)


# -- the generated source, compiled by nvcc --------------------------------------------------

def test_chain_sources_compile_with_nvcc(tmp_path, monkeypatch):
    """The chain kernels' bodies, placed as CuPy places them, compile with nvcc for float,
    __half and double (CuPy's own float16 type behaves as __half here)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("needs nvcc (the CUDA toolkit) to compile the kernels' source")
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy.FakeCupy())
    monkeypatch.setattr(K, "_CACHE", {})
    backend = ember.testing.register_test_device(DEV, 1)
    backend.kernels = dict(K.KERNELS)
    try:
        for dtype in (np.float32, np.float64):
            for fn in (_arith, _unary, _copies, _activations, _masks):
                _replay(fn, _inputs(dtype), DEV)
    finally:
        ember.testing.unregister_test_device(DEV)
    kernels = list(K._CACHE.values())
    assert len(kernels) >= 10
    path = tmp_path / "chains.cu"
    path.write_text(_fake_cupy.elementwise_cuda_source(kernels, "chain"))
    done = subprocess.run([nvcc, "-arch=sm_80", "-cubin", "--fmad=false", "-o",
                           str(path.with_suffix(".cubin")), str(path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr, done.stderr


# -- on a GPU --------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_gpu_chain_equals_eager(chain, dtype):
    fn, exact = CHAINS[chain]
    arrays = _inputs(dtype)
    got, gen = _replay(fn, arrays, "cuda")
    assert gen.fused_chains
    with np.errstate(all="ignore"):
        # eager CuPy runs the same operations one by one: + - * / equal bit for bit (no
        # multiply-add contraction in the kernel); exp/tanh are the device's in both
        _assert_same(got, _eager(fn, arrays, "cuda"), exact, dtype)
        # and NumPy's: + - * / are correctly rounded on both (float16 computed in float32
        # and rounded, on both), exp/tanh within the device's ulps
        _assert_same(got, _eager(fn, arrays, "cpu"), exact, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
def test_gpu_training_step_with_chains_equals_eager(opt_name, inplace):
    losses, _, gen = _check_training("cuda", opt_name, inplace)
    assert len(gen.fused_chains) == 2
    # and the CPU's compiled step, within float32's rounding of another BLAS
    cpu_losses, _, _ = _train_step("cpu", opt_name, True, inplace)
    np.testing.assert_allclose(losses, cpu_losses, rtol=1e-4, atol=1e-5)
