"""``nn.SyncBatchNorm``: batch norm whose statistics span the ranks of a process group.

The MPI cases run in one 3-rank launch (this module is loaded there by path and ``rank_main``
runs the cases in order, each reporting None or its failure; the pytest items check the
reports). The oracle is one plain ``BatchNorm`` over the concatenated global batch, computed in
every rank: its output rows, input gradients, summed weight/bias gradients and running
statistics must equal the ranks' (float64, to 1e-12). The ranks' batch sizes differ and one
rank may have no rows.

The single-process tests (no process group: a plain batch norm) run in the pytest process:
against ``BatchNorm``, PyTorch's ``SyncBatchNorm`` on the CPU (which falls back the same way),
gradcheck, errors and ``convert_sync_batchnorm``.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
from mpi_launch import case_script, check_case, mpi_available, run_cases, run_ranks
from testutils import assert_allclose, copy_state_to_torch, to_torch

import ember
import ember.nn as nn

needs_mpi = [pytest.mark.distributed,
             pytest.mark.skipif(not mpi_available(), reason="needs mpi4py and mpiexec "
                                "(pip install 'ember-core[distributed]')")]

CASES: dict[str, object] = {}
TOL = 1e-12
WORLD = 3


def case(fn):
    CASES[fn.__name__[5:]] = fn
    return fn


# -- rank-side helpers (they run inside the MPI ranks) -----------------------------------------
def check_close(got, want, what: str, tol: float = TOL) -> None:
    got, want = got.detach().cpu().double(), want.detach().cpu().double()
    if tuple(got.shape) != tuple(want.shape):
        raise AssertionError(f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}")
    if got.numel() and not bool(((got - want).abs() <= tol * (1 + want.abs())).all()):
        raise AssertionError(f"{what}: differs by {float((got - want).abs().max())}")


def global_batch(sizes, rest, seed: int, dtype=ember.float64, device="cpu"):
    """Every rank's rows of one global batch (the same in every rank): input, loss weights."""
    g = ember.Generator().manual_seed(seed)
    x = ember.randn(sum(sizes), *rest, generator=g, dtype=ember.float64) * 2 + 0.5
    dy = ember.randn(sum(sizes), *rest, generator=g, dtype=ember.float64)
    return x.to(device, dtype), dy.to(device, dtype)


def rows(t, sizes, r: int):
    start = sum(sizes[:r])
    return t[start:start + sizes[r]]


def pair(bn_cls, c: int, seed: int, dtype=ember.float64, device="cpu", **kwargs):
    """A SyncBatchNorm and the reference batch norm, with the same random affine."""
    sync = nn.SyncBatchNorm(c, **kwargs).to(device, dtype)
    ref = bn_cls(c, **{k: v for k, v in kwargs.items() if k != "process_group"})
    ref = ref.to(device, dtype)
    if sync.affine:
        g = ember.Generator().manual_seed(seed)
        with ember.no_grad():
            sync.weight.copy_(ember.rand(c, generator=g, dtype=ember.float64) + 0.5)
            ref.weight.copy_(sync.weight)
            if sync.bias is not None:
                sync.bias.copy_(ember.randn(c, generator=g, dtype=ember.float64))
                ref.bias.copy_(sync.bias)
    return sync, ref


def summed(t, group=None):
    """``t`` summed over the ranks of ``group`` (a copy)."""
    import ember.distributed as dist

    t = t.detach().clone()
    dist.all_reduce(t, group=group)
    return t


def compare_steps(R, sync, ref, sizes, rest, steps: int, seed: int, group=None, members=None,
                  tol: float = TOL, dtype=ember.float64, device="cpu") -> None:
    """Train steps of ``sync`` on this rank's rows vs ``ref`` on the global batch (made of the
    ``members``' rows): output, gradients (weight/bias summed over the group) and buffers."""
    me = R if members is None else members.index(R)
    for step in range(steps):
        x, dy = global_batch(sizes, rest, seed + step, dtype, device)
        for m in (sync, ref):
            m.zero_grad()
        xr = rows(x, sizes, me).detach().requires_grad_()
        out = sync(xr)
        (out * rows(dy, sizes, me)).sum().backward()
        xg = x.detach().requires_grad_()
        ref_out = ref(xg)
        (ref_out * dy).sum().backward()
        # the collectives first: a rank that fails a check then leaves none waiting
        grads = [summed(p.grad, group) for p in sync.parameters()]
        what = f"step {step}"
        check_close(out, rows(ref_out, sizes, me), f"{what}: output", tol)
        check_close(xr.grad, rows(xg.grad, sizes, me), f"{what}: input grad", tol)
        for got, (name, p) in zip(grads, ref.named_parameters()):
            check_close(got, p.grad, f"{what}: {name} grad", tol)
        for name, buf in ref.named_buffers():
            check_close(getattr(sync, name), buf, f"{what}: {name}", tol)


class Counting:
    """Count the calls of ``ember.distributed``'s collectives while it is active."""

    NAMES = ("all_gather_into_tensor", "all_gather", "all_reduce", "broadcast")

    def __enter__(self):
        import ember.distributed as dist

        self.calls = {n: 0 for n in self.NAMES}
        self.saved = {n: getattr(dist, n) for n in self.NAMES}

        def counted(name):
            def call(*args, **kwargs):
                self.calls[name] += 1
                return self.saved[name](*args, **kwargs)
            return call

        for n in self.NAMES:
            setattr(dist, n, counted(n))
        return self

    def __exit__(self, *exc):
        import ember.distributed as dist

        for n, fn in self.saved.items():
            setattr(dist, n, fn)


def check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


# -- the cases ------------------------------------------------------------------------------
@case
def case_batchnorm1d_uneven_batches(R, N, out):
    """2-D and 3-D input, batch sizes 3, 0 (rank 1 has no rows) and 5; two steps."""
    for rest, sizes in (((4,), [3, 0, 5]), ((4, 6), [3, 0, 5]), ((4, 6), [1, 2, 1])):
        sync, ref = pair(nn.BatchNorm1d, 4, seed=1, momentum=0.3)
        compare_steps(R, sync, ref, sizes, rest, steps=2, seed=10)


@case
def case_batchnorm2d(R, N, out):
    sync, ref = pair(nn.BatchNorm2d, 3, seed=2)
    compare_steps(R, sync, ref, [2, 1, 3], (3, 4, 5), steps=2, seed=20)


@case
def case_batchnorm3d_float32(R, N, out):
    sync, ref = pair(nn.BatchNorm3d, 2, seed=3, dtype=ember.float32)
    compare_steps(R, sync, ref, [2, 3, 1], (2, 3, 2, 2), steps=2, seed=30, tol=1e-5,
                  dtype=ember.float32)


@case
def case_half_precision(R, N, out):
    """float16 and bfloat16 input and parameters: close to a float32 batch norm of the same
    values, in the input's dtype."""
    sizes = [3, 2, 4]
    for dtype, tol in ((ember.float16, 2e-3), (ember.bfloat16, 1.6e-2)):  # ~2 roundings
        sync, ref = pair(nn.BatchNorm1d, 3, seed=31)
        sync = sync.to(dtype)
        x, dy = global_batch(sizes, (3, 5), seed=32, dtype=dtype)
        xr = rows(x, sizes, R).requires_grad_()
        y = sync(xr)
        (y * rows(dy, sizes, R)).sum().backward()
        xg = x.float().requires_grad_()
        ref_y = ref.float()(xg)
        (ref_y * dy.float()).sum().backward()
        grads = [summed(p.grad.float()) for p in sync.parameters()]
        check(y.dtype == dtype and xr.grad.dtype == dtype, "dtypes")
        check_close(y, rows(ref_y, sizes, R), f"{dtype}: output", tol)
        check_close(xr.grad, rows(xg.grad, sizes, R), f"{dtype}: input grad", tol)
        for got, p in zip(grads, ref.parameters()):
            check_close(got, p.grad, f"{dtype}: parameter grad", tol)
        check_close(sync.running_var, ref.running_var, f"{dtype}: running_var", tol)


@case
def case_momentum_none(R, N, out):
    """A cumulative average of the global statistics over three steps."""
    sync, ref = pair(nn.BatchNorm1d, 3, seed=4, momentum=None)
    compare_steps(R, sync, ref, [4, 2, 3], (3,), steps=3, seed=40)
    check(int(sync.num_batches_tracked) == 3, "num_batches_tracked")


@case
def case_affine_false(R, N, out):
    sync, ref = pair(nn.BatchNorm1d, 3, seed=5, affine=False)
    check(sync.weight is None and sync.bias is None, "no affine parameters")
    compare_steps(R, sync, ref, [2, 5, 0], (3, 2), steps=2, seed=50)


@case
def case_no_bias(R, N, out):
    sync, ref = pair(nn.BatchNorm1d, 3, seed=6, bias=False)
    check(sync.bias is None and sync.weight is not None, "weight without bias")
    x, dy = global_batch([2, 3, 1], (3,), seed=60)
    xr = rows(x, [2, 3, 1], R).requires_grad_()
    (sync(xr) * rows(dy, [2, 3, 1], R)).sum().backward()
    xg = x.requires_grad_()
    (ref(xg) * dy).sum().backward()
    weight_grad = summed(sync.weight.grad)
    check_close(xr.grad, rows(xg.grad, [2, 3, 1], R), "input grad")
    check_close(weight_grad, ref.weight.grad, "weight grad")


@case
def case_strict_device(R, N, out):
    """The same on the strict test device (arrays that refuse implicit NumPy, like CuPy)."""
    from ember.testing import register_strict_device

    register_strict_device()
    sync, ref = pair(nn.BatchNorm2d, 3, seed=7, device="strict")
    compare_steps(R, sync, ref, [2, 0, 3], (3, 2, 2), steps=2, seed=70, device="strict")
    check(sync.running_mean.device.type == "strict", "buffers stay on their device")


@case
def case_one_collective_each_way(R, N, out):
    """One all-gather in forward, one all-reduce in backward (none when the input needs no
    gradient); eval mode communicates nothing."""
    sync = nn.SyncBatchNorm(3).double()
    x = ember.randn(4, 3, 5, dtype=ember.float64, requires_grad=True)
    with Counting() as c:
        y = sync(x)
        check(c.calls == {"all_gather_into_tensor": 1, "all_gather": 0, "all_reduce": 0,
                          "broadcast": 0}, f"forward: {c.calls}")
        y.sum().backward()
        check(c.calls["all_reduce"] == 1 and c.calls["all_gather_into_tensor"] == 1,
              f"backward: {c.calls}")
        sync(x.detach()).sum().backward()  # only weight and bias need gradients
        check(c.calls["all_reduce"] == 1 and c.calls["all_gather_into_tensor"] == 2,
              f"input without grad: {c.calls}")
        sync.eval()
        sync(x).sum().backward()
        check(sum(c.calls.values()) == 3, f"eval: {c.calls}")


@case
def case_eval_uses_running_stats(R, N, out):
    """After training steps, eval mode normalizes with the (global) running statistics: each
    rank's own rows, the same as the reference's eval output."""
    sync, ref = pair(nn.BatchNorm2d, 3, seed=8, momentum=0.5)
    compare_steps(R, sync, ref, [3, 2, 2], (3, 2, 3), steps=2, seed=80)
    sync.eval()
    ref.eval()
    x, _ = global_batch([1, 4, 2], (3, 2, 3), seed=81)
    xr = rows(x, [1, 4, 2], R).requires_grad_()
    xg = x.requires_grad_()
    out_eval, ref_eval = sync(xr), ref(xg)
    check_close(out_eval, rows(ref_eval, [1, 4, 2], R), "eval output")
    out_eval.sum().backward()
    ref_eval.sum().backward()
    check_close(xr.grad, rows(xg.grad, [1, 4, 2], R), "eval input grad")


@case
def case_eval_without_running_stats(R, N, out):
    """``track_running_stats=False`` in eval mode: batch statistics, not synchronized (as in
    PyTorch), so each rank normalizes its own rows alone."""
    import ember.nn.functional as F

    sync = nn.SyncBatchNorm(3, track_running_stats=False).double().eval()
    x = ember.randn(R + 2, 3, 4, dtype=ember.float64)
    with Counting() as c:
        y = sync(x)
    check(sum(c.calls.values()) == 0, f"collectives in eval: {c.calls}")
    check_close(y, F.batch_norm(x, None, None, sync.weight, sync.bias, True), "local stats")
    sync.train()  # ... and synchronized in training
    sizes = [2, 3, 4]
    xg, _ = global_batch(sizes, (3, 4), seed=90)
    check_close(sync(rows(xg, sizes, R)), rows(F.batch_norm(xg, None, None, training=True),
                                                sizes, R), "training")


@case
def case_every_rank_empty(R, N, out):
    sync = nn.SyncBatchNorm(2).double()
    x = ember.zeros(0, 2, 3, dtype=ember.float64, requires_grad=True)
    y = sync(x)
    y.sum().backward()
    check(tuple(y.shape) == (0, 2, 3) and tuple(x.grad.shape) == (0, 2, 3), "shapes")
    check(bool((sync.running_mean == 0).all()) and bool((sync.running_var == 1).all()),
          "running statistics left alone")
    check(int(sync.num_batches_tracked) == 1, "the step is counted")
    check(bool((sync.weight.grad == 0).all()), "zero weight grad")


@case
def case_sub_groups(R, N, out):
    """A group of ranks 0 and 2 synchronizes them alone; rank 1, outside it, and a group of
    one rank, run a plain batch norm (no collective)."""
    import ember.distributed as dist

    pair_group = dist.new_group([0, 2])
    single = dist.new_group([1])
    sizes = [3, 4]  # the pair's rows: rank 0's then rank 2's
    if R in (0, 2):
        sync, ref = pair(nn.BatchNorm1d, 3, seed=9, process_group=pair_group)
        compare_steps(R, sync, ref, sizes, (3, 2), steps=2, seed=100, group=pair_group,
                      members=[0, 2])
    # outside a group (its NON_GROUP_MEMBER), or alone in one: a plain batch norm
    for group in ([pair_group, single] if R == 1 else [single]):
        sync, ref = pair(nn.BatchNorm1d, 3, seed=9, process_group=group)
        x = ember.randn(5, 3, 2, dtype=ember.float64)
        with Counting() as c:
            y = sync(x)
        check(sum(c.calls.values()) == 0, f"collectives: {c.calls}")
        check_close(y, ref(x), "plain batch norm")
        check_close(sync.running_var, ref.running_var, "running_var")


@case
def case_ddp_trains_with_converted_model(R, N, out):
    """A CNN's BatchNorm2d converted and wrapped in DDP trains exactly as one process on the
    global batch (uneven shards; each rank's loss is scaled so DDP's average is the global
    mean)."""
    from ember.nn.parallel import DistributedDataParallel as DDP

    def cnn():
        ember.manual_seed(5)
        return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                             nn.Flatten(), nn.Linear(64, 2), nn.BatchNorm1d(2)).double()

    model = nn.SyncBatchNorm.convert_sync_batchnorm(cnn())
    check(isinstance(model[1], nn.SyncBatchNorm) and isinstance(model[5], nn.SyncBatchNorm),
          "converted")
    ddp = DDP(model)
    ref = cnn()
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    ref_opt = ember.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    sizes = [2, 3, 4]
    total = sum(sizes)
    for step in range(3):
        x, _ = global_batch(sizes, (1, 4, 4), seed=200 + step)
        target = global_batch(sizes, (2,), seed=300 + step)[0]
        opt.zero_grad()
        loss = ((ddp(rows(x, sizes, R)) - rows(target, sizes, R)) ** 2).sum() * (N / total)
        loss.backward()
        ref_opt.zero_grad()
        (((ref(x) - target) ** 2).sum() / total).backward()
        opt.step()
        ref_opt.step()
    for (name, a), b in zip(model.state_dict().items(), ref.state_dict().values()):
        check_close(a, b, name, 1e-10)


@case
def case_not_twice_differentiable(R, N, out):
    sync = nn.SyncBatchNorm(2).double()
    x = ember.randn(3, 2, dtype=ember.float64, requires_grad=True)
    (gx,) = ember.autograd.grad(sync(x).pow(2).sum(), x, create_graph=True)
    try:
        gx.sum().backward()
    except RuntimeError as e:
        check("once_differentiable" in str(e), str(e))
    else:
        raise AssertionError("double backward did not raise")


def rank_main(emit, out: str) -> None:
    """Run every case in this rank, reporting each (None, or the traceback)."""
    run_cases(emit, CASES, out)


# -- the pytest side: the MPI launch ----------------------------------------------------------
RANK_SCRIPT = case_script(__file__, "sync_batchnorm_cases")


@functools.cache
def _launch(tmp: str):
    return run_ranks(WORLD, RANK_SCRIPT, Path(tmp), tmp, timeout=180)


@pytest.fixture(scope="module")
def launch(tmp_path_factory):
    return _launch(str(tmp_path_factory.mktemp("sync_bn")))


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.distributed
@pytest.mark.skipif(not mpi_available(), reason="needs mpi4py and mpiexec "
                    "(pip install 'ember-core[distributed]')")
def test_sync_batchnorm_case(launch, name):
    check_case(launch, WORLD, name)


# -- single process: no process group, a plain batch norm ----------------------------------
def _train_steps(m, xs):
    outs = []
    for x in xs:
        x = x.detach().requires_grad_()
        y = m(x)
        (y * y.detach().cos()).sum().backward()
        outs.append((y, x.grad))
    return outs


@pytest.mark.parametrize("momentum", [0.1, None])
def test_without_process_group_is_batchnorm(momentum):
    ember.manual_seed(0)
    sync = nn.SyncBatchNorm(3, momentum=momentum).double()
    ref = nn.BatchNorm2d(3, momentum=momentum).double()
    ref.load_state_dict(sync.state_dict())
    xs = [ember.randn(4, 3, 2, 5, dtype=ember.float64) for _ in range(3)]
    for (y, gx), (ry, rgx) in zip(_train_steps(sync, xs), _train_steps(ref, xs)):
        assert_allclose(y, ry, rtol=0, atol=1e-14)
        assert_allclose(gx, rgx, rtol=0, atol=1e-14)
    for a, b in zip(sync.state_dict().values(), ref.state_dict().values()):
        assert_allclose(a, b, rtol=0, atol=1e-14)
    sync.eval()
    ref.eval()
    assert_allclose(sync(xs[0]), ref(xs[0]), rtol=0, atol=1e-14)


@pytest.mark.parametrize("kwargs", [{}, {"momentum": None}, {"affine": False},
                                    {"track_running_stats": False}, {"bias": False}],
                         ids=["default", "momentum_none", "no_affine", "no_running", "no_bias"])
def test_without_process_group_matches_pytorch(kwargs):
    """PyTorch's SyncBatchNorm on the CPU without a process group falls back the same way."""
    torch = pytest.importorskip("torch")
    ember.manual_seed(1)
    e = nn.SyncBatchNorm(3, **kwargs).double()
    t = torch.nn.SyncBatchNorm(3, **kwargs).double()
    if e.affine:
        with ember.no_grad():
            e.weight.uniform_(0.5, 1.5)
            if e.bias is not None:
                e.bias.normal_()
    copy_state_to_torch(e, t)
    for mode in ("train", "train", "eval"):
        e.train(mode == "train")
        t.train(mode == "train")
        x = ember.randn(5, 3, 4, dtype=ember.float64, requires_grad=True)
        tx = to_torch(x).requires_grad_()
        ey, ty = e(x), t(tx)
        assert_allclose(ey, ty, rtol=1e-12, atol=1e-12)
        ey.pow(3).sum().backward()
        ty.pow(3).sum().backward()
        assert_allclose(x.grad, tx.grad, rtol=1e-10, atol=1e-12)
        for name, p in t.named_parameters():
            assert_allclose(getattr(e, name).grad, p.grad, rtol=1e-10, atol=1e-12)
        for name, b in t.named_buffers():
            assert_allclose(getattr(e, name), b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kwargs", [{}, {"track_running_stats": False}],
                         ids=["train", "no_running_stats_eval"])
def test_gradcheck_without_process_group(kwargs):
    """The single-process path (float64, twice differentiable there, as batch norm is)."""
    m = nn.SyncBatchNorm(3, **kwargs).double()
    if kwargs:
        m.eval()  # batch statistics in eval mode too
    x = ember.randn(4, 3, 2, dtype=ember.float64, requires_grad=True)
    w = ember.rand(3, dtype=ember.float64).add(0.5).requires_grad_()
    b = ember.randn(3, dtype=ember.float64, requires_grad=True)

    def forward(x, w, b):
        return ember.func.functional_call(m, {"weight": w, "bias": b}, (x,))

    assert ember.autograd.gradcheck(forward, (x, w, b))
    assert ember.autograd.gradgradcheck(forward, (x, w, b))


def test_signature_matches_pytorch():
    import inspect

    torch = pytest.importorskip("torch")
    for name in ("__init__", "convert_sync_batchnorm"):
        e = inspect.signature(getattr(nn.SyncBatchNorm, name))
        t = inspect.signature(getattr(torch.nn.SyncBatchNorm, name))
        assert [(p.name, p.kind, p.default) for p in e.parameters.values()] == [
            (p.name, p.kind, p.default) for p in t.parameters.values()]
    assert nn.modules.batchnorm.SyncBatchNorm is nn.SyncBatchNorm
    assert nn.SyncBatchNorm.__module__ == "ember.nn.modules.batchnorm"


@pytest.mark.parametrize("shape, message", [
    ((3,), "expected at least 2D input (got 1D input)"),
    ((), "expected at least 2D input (got 0D input)"),
    ((4, 0, 2), "SyncBatchNorm number of input channels should be non-zero"),
])
def test_bad_input(shape, message):
    m = nn.SyncBatchNorm(3)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        m(ember.zeros(shape))


def test_errors_match_pytorch():
    torch = pytest.importorskip("torch")
    for shape in ((3,), (4, 0, 2), (1, 3)):
        with pytest.raises(ValueError) as expected:
            torch.nn.SyncBatchNorm(3)(torch.zeros(shape))
        with pytest.raises(ValueError) as got:
            nn.SyncBatchNorm(3)(ember.zeros(shape))
        assert str(got.value) == str(expected.value)


def _model(lib):
    torch_nn = lib.nn
    inner = torch_nn.Sequential(torch_nn.Conv2d(2, 3, 1), torch_nn.BatchNorm2d(3, momentum=None))
    return torch_nn.Sequential(torch_nn.Linear(4, 4), torch_nn.BatchNorm1d(4, affine=False),
                               inner, torch_nn.BatchNorm3d(3, eps=1e-3, bias=False),
                               torch_nn.SyncBatchNorm(2, track_running_stats=False))


def _prepare(model):
    model[2][1].weight.requires_grad_(False)
    model[2].eval()
    model[2][1].qconfig = "a qconfig"
    return model


def _summary(before: dict, converted):
    """Per module path: type name, whether the object is the one at that path ``before``
    the conversion, its flags and (batch norms) settings."""
    out = {}
    for path, m in converted.named_modules():
        row = [type(m).__name__, m is before.get(path), m.training]
        if hasattr(m, "num_features"):
            row += [m.num_features, m.eps, m.momentum, m.affine, m.track_running_stats,
                    m.bias is not None, getattr(m, "qconfig", None),
                    m.weight is not None and m.weight.requires_grad]
        out[path] = row
    return out


def _convert_summary(convert, model):
    before = dict(model.named_modules())
    return _summary(before, convert(model))


def test_convert_sync_batchnorm_shares_state():
    ember.manual_seed(2)
    model = _prepare(_model(ember))
    with ember.no_grad():
        model[2][1].running_mean.normal_()
        model[2][1].num_batches_tracked.fill_(7)
    originals = {path: m for path, m in model.named_modules()}
    weight, running = model[2][1].weight, model[2][1].running_mean
    state = {k: v.clone() for k, v in model.state_dict().items()}
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model, process_group="pg")
    assert converted is model  # the container itself is kept, its children replaced
    assert converted[0] is originals["0"] and converted[2] is originals["2"]
    bn = converted[2][1]
    assert isinstance(bn, nn.SyncBatchNorm) and bn is not originals["2.1"]
    assert bn.weight is weight and not bn.weight.requires_grad and bn.running_mean is running
    assert not bn.training and bn.qconfig == "a qconfig" and bn.process_group == "pg"
    assert bn.momentum is None and bn.num_batches_tracked.item() == 7
    assert isinstance(converted[4], nn.SyncBatchNorm) and converted[4] is not originals["4"]
    assert converted.state_dict().keys() == state.keys()
    for k, v in converted.state_dict().items():
        assert_allclose(v, state[k], rtol=0, atol=0)
    single = nn.BatchNorm1d(2)
    out = nn.SyncBatchNorm.convert_sync_batchnorm(single)
    assert isinstance(out, nn.SyncBatchNorm) and out.weight is single.weight


def test_convert_sync_batchnorm_matches_pytorch():
    torch = pytest.importorskip("torch")
    e_model, t_model = _prepare(_model(ember)), _prepare(_model(torch))
    e_summary = _convert_summary(nn.SyncBatchNorm.convert_sync_batchnorm, e_model)
    t_summary = _convert_summary(torch.nn.SyncBatchNorm.convert_sync_batchnorm, t_model)
    assert e_summary == t_summary
    assert [row[1] for row in e_summary.values()] == [True, True, False, True, True, False,
                                                      False, False]
    e_bn, t_bn = nn.BatchNorm1d(2), torch.nn.BatchNorm1d(2)
    e_bn.eval()
    t_bn.eval()
    assert _convert_summary(nn.SyncBatchNorm.convert_sync_batchnorm, e_bn) == _convert_summary(
        torch.nn.SyncBatchNorm.convert_sync_batchnorm, t_bn)


def test_repr_and_state_dict_keys_match_pytorch():
    torch = pytest.importorskip("torch")
    e, t = nn.SyncBatchNorm(5, momentum=None), torch.nn.SyncBatchNorm(5, momentum=None)
    assert repr(e) == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())
    assert np.array_equal(e.running_var.numpy(), t.running_var.numpy())
