"""DDP communication hooks (``register_comm_hook``) on 2 and 4 MPI ranks.

Every rank computes all ranks' local gradients itself (the batches are deterministic), so
each case checks DDP's reduced gradients against the mean it should be: exactly for
``allreduce_hook`` and a hook of one's own, to half precision for the fp16/bf16 hooks, and for
PowerSGD: the plain mean before ``start_powerSGD_iter``, then a rank-1 ``P Q^T`` identical on
every rank, equal to PowerSGD computed in one process, with error feedback keeping the sum of
applied gradients plus the mean error equal to the sum of the true means.
"""

from __future__ import annotations

import pytest
from mpi_launch import case_launches, case_registry, check, check_case, distributed_marks

pytestmark = distributed_marks()
CASES, case = case_registry()


def net():
    import ember
    import ember.nn as nn

    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 4)).double()


def batch(step: int, rank: int):
    import ember

    g = ember.Generator().manual_seed(1000 * step + rank)
    return (ember.randn(5, 6, generator=g, dtype=ember.float64),
            ember.randn(5, 4, generator=g, dtype=ember.float64))


def local_grads(model, step: int, rank: int) -> list:
    model.zero_grad()
    x, y = batch(step, rank)
    ((model(x) - y) ** 2).mean().backward()
    return [p.grad.clone() for p in model.parameters()]


def mean_grads(model, step: int, N: int) -> list:
    per = [local_grads(model, step, r) for r in range(N)]
    return [sum(g[i] for g in per) / N for i in range(len(per[0]))]


def ddp_grads(ddp, step: int, R: int) -> list:
    ddp.zero_grad()
    x, y = batch(step, R)
    ((ddp(x) - y) ** 2).mean().backward()
    return [p.grad.clone() for p in ddp.parameters()]


@case
def case_allreduce_hook_is_ddp(R, N, out):
    import ember
    from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
    from ember.nn.parallel import DistributedDataParallel as DDP

    for kwargs in ({}, {"bucket_cap_mb": 0.0001}):  # one bucket, several (flags apart)
        ddp = DDP(net(), **kwargs)
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
        ref = net()
        for step in range(2):
            for got, want in zip(ddp_grads(ddp, step, R), mean_grads(ref, step, N)):
                check(ember.allclose(got, want, atol=1e-14), f"{kwargs} step {step}")
    try:
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    except RuntimeError as e:
        check("can only be called once" in str(e))
    else:
        raise AssertionError("a second hook was accepted")
    for bad, exc in ((3, TypeError),):
        try:
            DDP(net()).register_comm_hook(None, bad)
        except exc as e:
            check("must be callable" in str(e))
        else:
            raise AssertionError("a non-callable hook was accepted")


@case
def case_own_hook_sums(R, N, out):
    """A hook of one's own: sum instead of mean, through the Work's future."""
    import ember
    import ember.distributed as dist
    from ember.nn.parallel import DistributedDataParallel as DDP

    seen = []

    def summing(state, bucket):
        seen.append((bucket.index(), bucket.is_last(), len(bucket.parameters())))
        check([g.shape for g in bucket.gradients()] == [p.shape for p in bucket.parameters()])
        fut = dist.all_reduce(bucket.buffer(), async_op=True).get_future()
        return fut.then(lambda f: f.value()[0] * state)

    ddp = DDP(net())
    ddp.register_comm_hook(2.0, summing)
    ref = net()
    for got, want in zip(ddp_grads(ddp, 0, R), mean_grads(ref, 0, N)):
        check(ember.allclose(got, want * N * 2.0, atol=1e-13))
    check(seen == [(0, True, 4)], seen)


@case
def case_half_precision_hooks(R, N, out):
    import ember
    from ember.distributed.algorithms.ddp_comm_hooks import default_hooks as hooks
    from ember.nn.parallel import DistributedDataParallel as DDP

    for hook, tol in ((hooks.fp16_compress_hook, 2e-3), (hooks.bf16_compress_hook, 2e-2),
                      (hooks.fp16_compress_wrapper(hooks.allreduce_hook), 2e-3)):
        ddp = DDP(net(), bucket_cap_mb=0.0001)
        ddp.register_comm_hook(None, hook)
        got = ddp_grads(ddp, 0, R)
        for g, want in zip(got, mean_grads(net(), 0, N)):
            check(g.dtype == ember.float64, g.dtype)
            check(ember.allclose(g, want, rtol=tol, atol=tol * float(want.abs().max())),
                  f"{hook}: {(g - want).abs().max().item()}")


def _powersgd_reference(state_seed, grads_by_rank, members, N, rank_r=1):
    """PowerSGD's first compressed step of one bucket, in one process: ``grads_by_rank[r]`` is
    rank r's list of parameter gradients in bucket order."""
    import numpy as np

    import ember
    from ember.distributed.algorithms.ddp_comm_hooks.powerSGD_hook import (
        _orthogonalize,
        _should_compress,
    )

    rng = np.random.RandomState(state_seed)
    g = ember.Generator().manual_seed(int(rng.randint(1_000_000_000)))
    first = grads_by_rank[0]
    shapes = [(t.shape[0], t.numel() // t.shape[0]) if t.ndim else (1, 1) for t in first]
    compress = [_should_compress(n, m, min(n, m, rank_r), 2)[0] for n, m in shapes]
    qs = {}
    for i, ((n, m), c) in enumerate(zip(shapes, compress)):
        if c:
            q = ember.randn((m, min(n, m, rank_r)), generator=g, dtype=ember.float64)
            _orthogonalize(q.unsqueeze(0))
            qs[i] = q
    out = []
    for i, ((n, m), c) in enumerate(zip(shapes, compress)):
        mats = [gr[i].reshape(n, m) for gr in grads_by_rank]
        if not c:
            out.append(sum(mats) / N)
            continue
        p = sum(mat @ qs[i] for mat in mats)
        _orthogonalize(p.unsqueeze(0))
        q = sum(mat.t() @ p for mat in mats) / N
        out.append(p @ q.t())
    return out, compress


@case
def case_powersgd(R, N, out):
    import ember
    import ember.distributed as dist
    from ember.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd
    from ember.nn.parallel import DistributedDataParallel as DDP

    try:
        psgd.PowerSGDState(None, start_powerSGD_iter=1)
    except ValueError as e:
        check("start_powerSGD_iter" in str(e))
    else:
        raise AssertionError("start_powerSGD_iter=1 with error feedback was accepted")
    state = psgd.PowerSGDState(None, matrix_approximation_rank=1, start_powerSGD_iter=2)
    ddp = DDP(net())
    ddp.register_comm_hook(state, psgd.powerSGD_hook)
    ref = net()
    members = ddp._reducer.buckets[0].members  # the bucket's parameter order
    applied = [ember.zeros_like(p) for p in ref.parameters()]
    true = [ember.zeros_like(p) for p in ref.parameters()]
    for step in range(4):
        got = ddp_grads(ddp, step, R)
        want = mean_grads(ref, step, N)
        for a, g in zip(applied, got):
            a.add_(g)
        for t, w in zip(true, want):
            t.add_(w)
        if step < 2:  # plain averaging before start_powerSGD_iter
            for g, w in zip(got, want):
                check(ember.allclose(g, w, atol=1e-14), f"step {step}")
            continue
        gathered = [None] * N
        dist.all_gather_object(gathered, [g.tolist() for g in got])
        check(all(x == gathered[0] for x in gathered), "ranks differ")
        for g in got:
            if g.ndim == 2:
                check(int(ember.linalg.matrix_rank(g)) <= 1, "not rank 1")
        if step == 2:  # the first compressed step, simulated in one process
            params = list(ref.parameters())
            by_rank = [[local_grads(ref, step, r)[i] for i in members] for r in range(N)]
            sim, compress = _powersgd_reference(0, by_rank, members, N)
            check(any(compress) and not all(compress), compress)
            for k, i in enumerate(members):
                check(ember.allclose(got[i], sim[k].view(params[i].shape), atol=1e-12),
                      f"param {i}")
    check(state.iter == 4, state.iter)
    # error feedback: what was applied plus the mean error left is the sum of the means
    error = state.error_dict[0].clone()
    dist.all_reduce(error)
    error /= N
    flat_applied = ember.cat([applied[i].reshape(-1) for i in members])
    flat_true = ember.cat([true[i].reshape(-1) for i in members])
    check(ember.allclose(flat_applied + error, flat_true, atol=1e-12), "error feedback")
    rate, before, after = state.compression_stats()
    check(before > after > 0 and rate > 1, (rate, before, after))


@case
def case_batched_powersgd_and_join(R, N, out):
    """batched_powerSGD_hook trains (rank-1 square view of the bucket, the same on every
    rank), also inside join() with uneven inputs: a joined rank runs the hook on zeros."""
    import ember
    import ember.distributed as dist
    from ember.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd
    from ember.nn.parallel import DistributedDataParallel as DDP

    state = psgd.PowerSGDState(None, start_powerSGD_iter=2, use_error_feedback=True)
    ddp = DDP(net())
    ddp.register_comm_hook(state, psgd.batched_powerSGD_hook)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
    with ddp.join():
        for step in range(3 + R):
            opt.zero_grad()
            x, y = batch(step, R)
            ((ddp(x) - y) ** 2).mean().backward()
            opt.step()
    gathered = [None] * N
    dist.all_gather_object(gathered, [p.tolist() for p in ddp.parameters()])
    check(all(x == gathered[0] for x in gathered), "models differ after join")
    check(state.iter == 3 + N - 1, state.iter)


rank_main, runs = case_launches(__file__, "comm_hook_cases", CASES)


@pytest.mark.parametrize("n", [2, 4], ids=["2ranks", "4ranks"])
@pytest.mark.parametrize("name", list(CASES))
def test_comm_hook_case(runs, n, name):
    check_case(runs[n], n, name)


def test_work_future_drives_its_chain():
    """``Work.get_future()`` and the futures its ``then`` makes complete when waited (MPI
    moves data only inside calls); a callback's error is PyTorch's RuntimeError."""
    from ember.futures import _DrivenFuture

    f = _DrivenFuture(lambda: [1])
    assert f.then(lambda fu: fu.value()[0] + 1).then(lambda fu: fu.value() * 10).wait() == 20
    bad = _DrivenFuture(lambda: 1 / 0).then(lambda fu: fu.value())
    with pytest.raises(RuntimeError, match="Got the following error when running the callback"):
        bad.wait()
