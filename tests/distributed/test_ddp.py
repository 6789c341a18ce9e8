"""``DistributedDataParallel`` and ``DistributedSampler`` on 2 and 4 MPI ranks.

One launch per world size runs every case below in each rank (this module is loaded there by
path and ``rank_main`` runs the cases in order, each reporting None or its failure); the
pytest items then check the reports. The oracle is single-process training: each rank also
trains a plain copy of the model on the whole batch (float64) and the DDP model, fed its
share, must end with the same parameters to 1e-6 (in practice to rounding).

With batch norm in training mode, DDP's ranks normalise their own shards (PyTorch's
semantics: statistics are per process, rank 0's running buffers are broadcast before each
forward), so the single-process reference runs the whole batch as the ranks' shards, one
after the other from the same buffers, averages their gradients and keeps shard 0's buffers.

The 2-rank launch also saves a DDP checkpoint (model with ``module.`` keys and optimizer);
the 4-rank launch and a plain single-process run resume from it and must continue exactly as
the uninterrupted 2-rank run did. PyTorch's own DDP (gloo) is a second oracle where torch is
installed (``test_matches_pytorch_ddp``, marked slow: it starts torch twice).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest
from mpi_launch import case_script, check_case, mpi_available, run_cases, run_ranks

pytestmark = [pytest.mark.distributed,
              pytest.mark.skipif(not mpi_available(), reason="needs mpi4py and mpiexec "
                                 "(pip install 'ember-core[distributed]')")]

CASES: dict[str, object] = {}
TOL = 1e-6


def case(fn):
    CASES[fn.__name__[5:]] = fn
    return fn


# -- rank-side helpers (they run inside the MPI ranks) -----------------------------------------
def mlp(seed: int):
    import ember
    import ember.nn as nn

    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 8), nn.ReLU(),
                         nn.Linear(8, 3)).double()


def cnn(seed: int):
    import ember
    import ember.nn as nn

    ember.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 3)).double()


def batch(step: int, kind: str, n: int = 8):
    import ember

    g = ember.Generator().manual_seed(1000 + step)
    shape = (n, 5) if kind == "mlp" else (n, 1, 8, 8)
    x = ember.randn(*shape, generator=g, dtype=ember.float64, device="cpu")
    y = ember.randn(n, 3, generator=g, dtype=ember.float64, device="cpu")
    return x, y


def shard(t, R: int, N: int):
    return t.chunk(N)[R]


def loss_fn(out, y):
    return ((out - y) ** 2).mean()


def make_optimizer(name: str, params):
    import ember

    if name == "sgd":
        return ember.optim.SGD(params, lr=0.1, momentum=0.9)
    return ember.optim.Adam(params, lr=0.01)


def max_diff(a_params, b_params) -> float:
    return max(float((a.detach() - b.detach()).abs().max()) for a, b in zip(a_params, b_params))


def check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def reference_step(ref, x, y, R: int, N: int, kind: str):
    """One single-process step's gradients (and buffers) as the ranks' DDP step makes them."""
    import ember

    if kind == "mlp":
        loss_fn(ref(x), y).backward()
        return None
    start = {k: v.clone() for k, v in ref.named_buffers()}
    mine = None
    kept = None
    for r in range(N):
        with ember.no_grad():
            for k, v in ref.named_buffers():
                v.copy_(start[k])
        loss_fn(ref(shard(x, r, N)), shard(y, r, N)).backward()
        if r == 0:
            kept = {k: v.clone() for k, v in ref.named_buffers()}
        if r == R:
            mine = {k: v.clone() for k, v in ref.named_buffers()}
    with ember.no_grad():
        for p in ref.parameters():
            p.grad.mul_(1.0 / N)
        for k, v in ref.named_buffers():
            v.copy_(kept[k])
    return mine


def train_and_compare(R: int, N: int, kind: str, opt_name: str, steps: int = 4,
                      device: str = "cpu", set_to_none: bool = True, **ddp_kwargs):
    """DDP on shards vs the single-process reference on the whole batch; returns the DDP
    model."""
    from ember.nn.parallel import DistributedDataParallel as DDP

    model = (mlp if kind == "mlp" else cnn)(seed=R).to(device)  # ranks start different
    ddp = DDP(model, **ddp_kwargs)
    ref = (mlp if kind == "mlp" else cnn)(seed=99).to(device)
    ref.load_state_dict(ddp.module.state_dict())
    opt = make_optimizer(opt_name, ddp.parameters())
    ref_opt = make_optimizer(opt_name, ref.parameters())
    mine = None
    for step in range(steps):
        x, y = batch(step, kind)
        x, y = x.to(device), y.to(device)
        opt.zero_grad(set_to_none)
        loss_fn(ddp(shard(x, R, N)), shard(y, R, N)).backward()
        ref_opt.zero_grad()
        mine = reference_step(ref, x, y, R, N, kind)
        d = max_diff([p.grad for p in ddp.module.parameters()],
                     [p.grad for p in ref.parameters()])
        check(d < TOL, f"step {step}: gradients differ by {d}")
        opt.step()
        ref_opt.step()
    d = max_diff(ddp.module.parameters(), ref.parameters())
    check(d < TOL, f"parameters differ by {d} after {steps} steps")
    if mine is not None:
        d = max_diff([b.double() for b in ddp.module.buffers()],
                     [v.double() for v in mine.values()])
        check(d < TOL, f"buffers differ by {d}")
    return ddp


# -- the cases ----------------------------------------------------------------------------------
@case
def case_mlp_sgd(R, N, out):
    train_and_compare(R, N, "mlp", "sgd")


@case
def case_mlp_adam(R, N, out):
    train_and_compare(R, N, "mlp", "adam")


@case
def case_cnn_batchnorm_sgd(R, N, out):
    train_and_compare(R, N, "cnn", "sgd")


@case
def case_cnn_batchnorm_adam(R, N, out):
    train_and_compare(R, N, "cnn", "adam")


@case
def case_small_buckets(R, N, out):
    """Many buckets (a tiny cap), gradients zeroed rather than None between steps, and
    gradients left as views of the buckets."""
    train_and_compare(R, N, "mlp", "adam", bucket_cap_mb=0.0005)
    train_and_compare(R, N, "mlp", "sgd", bucket_cap_mb=0.0005, set_to_none=False)
    for set_to_none in (True, False):
        ddp = train_and_compare(R, N, "cnn", "sgd", bucket_cap_mb=0.0005,
                                gradient_as_bucket_view=True, set_to_none=set_to_none)
        buckets = [b.flat for b in ddp._reducer.buckets]
        check(len(buckets) > 1, f"{len(buckets)} buckets")
        for p in ddp.module.parameters():
            inside = [b for b in buckets if b.data_ptr() <= p.grad.data_ptr()
                      < b.data_ptr() + b.numel() * b.element_size()]
            check(len(inside) == 1, "a gradient is not a view of a bucket")


@case
def case_strict_device(R, N, out):
    """The model on the strict test device (arrays that refuse implicit NumPy, like CuPy)."""
    from ember.testing import register_strict_device

    register_strict_device()
    train_and_compare(R, N, "mlp", "sgd", steps=2, device="strict", bucket_cap_mb=0.0005)


@case
def case_broadcast_at_construction(R, N, out):
    import ember
    import ember.distributed as dist
    from ember.nn.parallel import DistributedDataParallel as DDP

    model = cnn(seed=R)
    with ember.no_grad():
        model[1].running_mean.fill_(float(R))
    first = [p.detach().clone() for p in model.parameters()]
    everyone = [None] * N
    dist.all_gather_object(everyone, [p.tolist() for p in first])
    check(everyone[0] != everyone[-1], "the ranks should start with different parameters")
    ddp = DDP(model)
    got = [p.tolist() for p in ddp.module.parameters()]
    check(got == everyone[0], "parameters are not rank 0's after construction")
    check(ddp.module[1].running_mean.tolist() == [0.0] * 4, "buffers are not rank 0's")
    check(ddp.module is model, "ddp.module is the wrapped module")
    keys = list(ddp.state_dict())
    check(keys == ["module." + k for k in model.state_dict()], f"state_dict keys {keys}")


@case
def case_broadcast_buffers(R, N, out):
    """Rank 0's buffers before each forward (broadcast_buffers), or each rank's own."""
    import ember
    from ember.nn.parallel import DistributedDataParallel as DDP

    x, _ = batch(0, "cnn")
    for broadcast in (True, False):
        ddp = DDP(cnn(seed=0), broadcast_buffers=broadcast)
        ddp.eval()
        with ember.no_grad():
            ddp.module[1].running_mean.fill_(float(R + 1))
        ddp(shard(x, R, N))
        want = 1.0 if broadcast else float(R + 1)
        check(ddp.module[1].running_mean.tolist() == [want] * 4,
              f"broadcast_buffers={broadcast}: running_mean "
              f"{ddp.module[1].running_mean.tolist()}")


@case
def case_no_sync(R, N, out):
    """Two micro-batches under no_sync, a third synchronised: the averaged sum of all three."""
    import ember.distributed as dist
    from ember.nn.parallel import DistributedDataParallel as DDP

    ddp = DDP(mlp(seed=R), bucket_cap_mb=0.0005)
    ref = mlp(seed=0)
    ref.load_state_dict(ddp.module.state_dict())
    launches = []
    original = dist.all_reduce

    def counting(*args, **kwargs):
        launches.append(1)
        return original(*args, **kwargs)

    dist.all_reduce = counting
    try:
        with ddp.no_sync():
            for step in range(2):
                x, y = batch(step, "mlp")
                loss_fn(ddp(shard(x, R, N)), shard(y, R, N)).backward()
        check(not launches, f"{len(launches)} all_reduce calls under no_sync")
        local = [p.grad.clone() for p in ddp.module.parameters()]
        x, y = batch(2, "mlp")
        loss_fn(ddp(shard(x, R, N)), shard(y, R, N)).backward()
        check(len(launches) == len(ddp._reducer.buckets), f"{len(launches)} all_reduce calls")
    finally:
        dist.all_reduce = original
    everyone = [None] * N
    dist.all_gather_object(everyone, [g.tolist() for g in local])
    check(everyone[0] != everyone[-1], "gradients under no_sync should be each rank's own")
    for step in range(3):
        x, y = batch(step, "mlp")
        for r in range(N):
            (loss_fn(ref(shard(x, r, N)), shard(y, r, N)) / N).backward()
    d = max_diff([p.grad for p in ddp.module.parameters()], [p.grad for p in ref.parameters()])
    check(d < TOL, f"accumulated gradients differ by {d}")


@case
def case_overlap(R, N, out):
    """Buckets go out during backward: with a tiny cap, the first all_reduce is launched
    before the gradient of the input (the last thing backward computes) exists."""
    import ember
    import ember.distributed as dist
    import ember.nn as nn
    from ember.nn.parallel import DistributedDataParallel as DDP

    ember.manual_seed(0)
    model = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(32, 32), nn.Tanh())],
                          nn.Linear(32, 2)).double()
    ddp = DDP(model, bucket_cap_mb=32 * 33 * 8 / 2**20)  # about one layer per bucket
    n_buckets = len(ddp._reducer.buckets)
    check(n_buckets >= 4, f"{n_buckets} buckets")
    events = []
    original = dist.all_reduce

    def recording(tensor, *args, **kwargs):
        events.append("launch")
        return original(tensor, *args, **kwargs)

    dist.all_reduce = recording
    try:
        x0 = ember.randn(4, 32, dtype=ember.float64, requires_grad=True)
        x = x0 * 1.0
        x.register_hook(lambda g: events.append("input grad"))
        ddp(x).sum().backward()
    finally:
        dist.all_reduce = original
    check(events.count("launch") == n_buckets, f"events {events}")
    early = events.index("input grad")
    check(early >= 2, f"only {early} bucket(s) launched before the input's gradient: {events}")


@case
def case_find_unused_parameters(R, N, out):
    """A branch the forward skips: no wait for it, its .grad left None everywhere; a branch
    only rank 0 uses: the others receive rank 0's share of the average."""
    import ember
    import ember.nn as nn
    from ember.nn.parallel import DistributedDataParallel as DDP

    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(5, 4)
            self.b = nn.Linear(4, 4)
            self.c = nn.Linear(4, 3)

        def forward(self, x, use_b: bool):
            h = ember.tanh(self.a(x))
            if use_b:
                h = self.b(h)
            return self.c(h)

    ember.manual_seed(0)
    model = Branchy().double()
    ref = Branchy().double()
    ref.load_state_dict(model.state_dict())
    ddp = DDP(model, find_unused_parameters=True)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    ref_opt = ember.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    for step, who_uses_b in enumerate([(), (), (0,), ()]):
        x, y = batch(step, "mlp")
        opt.zero_grad()
        ref_opt.zero_grad()
        loss_fn(ddp(shard(x, R, N), R in who_uses_b), shard(y, R, N)).backward()
        for r in range(N):
            (loss_fn(ref(shard(x, r, N), r in who_uses_b), shard(y, r, N)) / N).backward()
        b_grads = [p.grad is None for p in ddp.module.b.parameters()]
        check(b_grads == [not who_uses_b] * 2, f"step {step}: b's grads None: {b_grads}")
        d = max_diff([p.grad for p in ddp.module.parameters() if p.grad is not None],
                     [p.grad for p in ref.parameters() if p.grad is not None])
        check(d < TOL, f"step {step}: gradients differ by {d}")
        opt.step()
        ref_opt.step()
    d = max_diff(ddp.module.parameters(), ref.parameters())
    check(d < TOL, f"parameters differ by {d}")


@case
def case_unused_parameters_error(R, N, out):
    """Without find_unused_parameters, a skipped parameter leaves the reduction unfinished
    and the next forward raises PyTorch's error naming the parameters."""
    import ember
    import ember.nn as nn
    from ember.nn.parallel import DistributedDataParallel as DDP

    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(5, 3)
            self.b = nn.Linear(5, 3)

        def forward(self, x):
            return self.a(x)

    ember.manual_seed(0)
    ddp = DDP(TwoHeads().double())
    x, _ = batch(0, "mlp")
    ddp(shard(x, R, N)).sum().backward()
    try:
        ddp(shard(x, R, N))
    except RuntimeError as e:
        text = str(e)
    else:
        raise AssertionError("the second forward did not raise")
    check(text.startswith("Expected to have finished reduction in the prior iteration before "
                          "starting a new one."), text)
    check(f"Parameter indices which did not receive grad for rank {R}: 2 3" in text, text)
    # the reduction was abandoned: each rank keeps its own gradient, as without DDP
    import ember.distributed as dist

    plain = TwoHeads().double()
    plain.load_state_dict(ddp.module.state_dict())
    plain(shard(x, R, N)).sum().backward()
    d = max_diff([ddp.module.a.weight.grad], [plain.a.weight.grad])
    check(d == 0.0 and ddp.module.b.weight.grad is None, f"local gradients differ by {d}")
    everyone = [None] * N
    dist.all_gather_object(everyone, ddp.module.a.weight.grad.tolist())
    check(everyone[0] != everyone[-1], "the gradients were averaged after all")


@case
def case_gradient_changed_after_sending(R, N, out):
    """A loss term outside the forward's outputs, a hook on a parameter and two forwards
    before one backward change a gradient after its bucket went out: it is reduced again."""
    import ember
    from ember.nn.parallel import DistributedDataParallel as DDP

    ddp = DDP(mlp(seed=R), bucket_cap_mb=0.0005)
    ref = mlp(seed=0)
    ref.load_state_dict(ddp.module.state_dict())
    last_w = list(ddp.module.parameters())[-2]
    ref_last_w = list(ref.parameters())[-2]
    x, y = batch(0, "mlp")
    xs, ys = shard(x, R, N), shard(y, R, N)

    def extra(model, w):
        return 0.1 * (w ** 2).sum()

    loss_fn(ddp(xs), ys).add(extra(ddp, last_w)).backward()
    for r in range(N):
        ((loss_fn(ref(shard(x, r, N)), shard(y, r, N)) + extra(ref, ref_last_w)) / N).backward()
    d = max_diff([p.grad for p in ddp.module.parameters()], [p.grad for p in ref.parameters()])
    check(d < TOL, f"extra loss term: gradients differ by {d}")

    for model in (ddp.module, ref):
        model.zero_grad()
    handle = last_w.register_hook(lambda g: g * 3)
    loss_fn(ddp(xs), ys).backward()
    handle.remove()
    for r in range(N):
        (loss_fn(ref(shard(x, r, N)), shard(y, r, N)) / N).backward()
    with ember.no_grad():
        ref_last_w.grad.mul_(3)
    d = max_diff([p.grad for p in ddp.module.parameters()], [p.grad for p in ref.parameters()])
    check(d < TOL, f"hook on a parameter: gradients differ by {d}")

    for model in (ddp.module, ref):
        model.zero_grad()
    x2, y2 = batch(1, "mlp")
    (loss_fn(ddp(xs), ys) + loss_fn(ddp(shard(x2, R, N)), shard(y2, R, N))).backward()
    for r in range(N):
        ((loss_fn(ref(shard(x, r, N)), shard(y, r, N))
          + loss_fn(ref(shard(x2, r, N)), shard(y2, r, N))) / N).backward()
    d = max_diff([p.grad for p in ddp.module.parameters()], [p.grad for p in ref.parameters()])
    check(d < TOL, f"two forwards, one backward: gradients differ by {d}")


@case
def case_shape_mismatch(R, N, out):
    """Ranks with different models: every rank raises, the odd one PyTorch's words."""
    import ember
    import ember.nn as nn
    from ember.nn.parallel import DistributedDataParallel as DDP

    ember.manual_seed(0)
    model = nn.Linear(3, 4 if R == 1 else 3)
    try:
        DDP(model)
    except RuntimeError as e:
        text = str(e)
    else:
        raise AssertionError("no error for different parameter shapes")
    if R == 1:
        want = ("[1]: params[0] in this process with sizes [4, 3] appears not to match sizes "
                "of the same param in process 0.")
    else:
        want = "[1]: params[0] in process 1 with sizes [4, 3] appears not to match sizes"
    check(want in text, text)
    try:
        DDP(nn.Sequential(*[nn.Linear(2, 2) for _ in range(1 + (R == 1))]))
    except RuntimeError as e:
        text = str(e)
    else:
        raise AssertionError("no error for different parameter counts")
    check("DDP expects same model across all ranks" in text, text)


@case
def case_distributed_sampler(R, N, out):
    """DistributedSampler takes the world size and rank from the process group."""
    import ember.distributed as dist
    from ember.data import DistributedSampler

    for drop_last in (False, True):
        s = DistributedSampler(range(11), shuffle=True, seed=3, drop_last=drop_last)
        check((s.num_replicas, s.rank) == (N, R), f"{s.num_replicas}, {s.rank}")
        s.set_epoch(2)
        mine = list(s)
        everyone = [None] * N
        dist.all_gather_object(everyone, mine)
        flat = [i for shard_ in everyone for i in shard_]
        check(all(len(e) == len(s) for e in everyone), f"{everyone}")
        if drop_last:
            check(len(set(flat)) == len(flat) == 11 // N * N, f"{everyone}")
        else:
            check(set(flat) == set(range(11)) and len(flat) == -(-11 // N) * N, f"{everyone}")


@case
def case_checkpoint(R, N, out):
    """2 ranks: train, save a checkpoint at step 3 (rank 0), finish at step 6 and save the
    final parameters. Other world sizes: resume from that checkpoint, end identically."""
    import ember
    import ember.distributed as dist
    from ember.nn.parallel import DistributedDataParallel as DDP

    ckpt = os.path.join(out, "ddp_checkpoint.pt")
    final = os.path.join(out, "ddp_final.pt")
    ddp = DDP(mlp(seed=R))
    opt = ember.optim.Adam(ddp.parameters(), lr=0.01)
    if N == 2:
        first = 0
    else:
        state = ember.load(ckpt)
        check(all(k.startswith("module.") for k in state["model"]), f"{list(state['model'])}")
        ddp.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        first = state["step"]
    for step in range(first, 6):
        if N == 2 and step == 3 and R == 0:
            ember.save({"model": ddp.state_dict(), "optim": opt.state_dict(), "step": step},
                       ckpt)
        x, y = batch(step, "mlp")
        opt.zero_grad()
        loss_fn(ddp(shard(x, R, N)), shard(y, R, N)).backward()
        opt.step()
    if N == 2:
        if R == 0:
            ember.save(ddp.module.state_dict(), final)
        dist.barrier()
    else:
        want = ember.load(final)
        got = ddp.module.state_dict()
        d = max(float((got[k] - want[k]).abs().max()) for k in want)
        check(d < 1e-10, f"resumed on {N} ranks: parameters differ by {d}")


def rank_main(emit, out: str) -> None:
    """Run every case in this rank, reporting each (None, or the traceback)."""
    run_cases(emit, CASES, out)


# -- the pytest side --------------------------------------------------------------------------
RANK_SCRIPT = case_script(__file__, "ddp_cases")


@pytest.fixture(scope="module")
def shared_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("ddp_shared")


@functools.cache
def _launch(n: int, shared: str, tmp: str):
    return run_ranks(n, RANK_SCRIPT, Path(tmp), shared, timeout=180)


@pytest.fixture(scope="module")
def runs(shared_dir, tmp_path_factory):
    """The 2-rank launch first (it writes the checkpoint), then the 4-rank one."""
    results = {}
    for n in (2, 4):
        results[n] = _launch(n, str(shared_dir), str(tmp_path_factory.mktemp(f"ddp{n}")))
    return results


@pytest.mark.parametrize("n", [2, 4], ids=["2ranks", "4ranks"])
@pytest.mark.parametrize("name", list(CASES))
def test_ddp_case(runs, n, name):
    check_case(runs[n], n, name)


def test_checkpoint_resumes_in_one_plain_process(runs, shared_dir):
    """The 2-rank DDP checkpoint (``module.`` keys) resumes in a plain single process."""
    import ember
    from ember.nn.modules.utils import consume_prefix_in_state_dict_if_present

    assert runs[2].returncode == 0, runs[2].output[-4000:]
    state = ember.load(shared_dir / "ddp_checkpoint.pt")
    model = mlp(seed=5)
    consume_prefix_in_state_dict_if_present(state["model"], "module.")
    model.load_state_dict(state["model"])
    opt = ember.optim.Adam(model.parameters(), lr=0.01)
    opt.load_state_dict(state["optim"])
    for step in range(state["step"], 6):
        x, y = batch(step, "mlp")
        x, y = x.to(model[0].weight.device), y.to(model[0].weight.device)
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    want = ember.load(shared_dir / "ddp_final.pt")
    got = model.state_dict()
    assert max(float((got[k].cpu() - want[k]).abs().max()) for k in want) < 1e-10


def test_distributed_sampler_without_process_group():
    from ember.data import DistributedSampler

    # PyTorch's words where the distributed package is available but not initialized
    msg = "Default process group has not been initialized, please make sure to call "
    with pytest.raises(ValueError, match=msg):
        DistributedSampler(range(4))
    with pytest.raises(ValueError, match=msg):
        DistributedSampler(range(4), num_replicas=2)
    s = DistributedSampler(range(5), num_replicas=2, rank=1, shuffle=False)
    assert list(s) == [1, 3, 0] and len(s) == 3


def test_import_paths():
    import ember.nn.parallel
    import ember.nn.parallel.distributed
    from ember.distributed.optim import ZeroRedundancyOptimizer

    assert (ember.nn.parallel.DistributedDataParallel
            is ember.nn.parallel.distributed.DistributedDataParallel)
    assert "DistributedDataParallel" in ember.nn.parallel.__all__
    assert ZeroRedundancyOptimizer.__module__ == (
        "ember.distributed.optim.zero_redundancy_optimizer")


def test_bucket_assignment_follows_pytorch():
    """Reverse parameter order, one dtype and device per bucket, the first bucket's limit
    then the next (PyTorch's ``_compute_bucket_assignment_by_size``)."""
    import ember
    from ember.nn.parallel.distributed import _compute_bucket_assignment_by_size

    params = [ember.zeros(n, dtype=d) for n, d in
              [(10, ember.float32), (30, ember.float32), (5, ember.float64),
               (20, ember.float32), (40, ember.float32)]]
    order = list(range(len(params)))[::-1]
    # float32: 40 el. = 160 B closes the 100 B first bucket; then 200 B buckets
    assert _compute_bucket_assignment_by_size(params, [100, 200], order) == [
        [4], [3, 1], [2], [0]]
    assert _compute_bucket_assignment_by_size(params, [10**6], order) == [[4, 3, 1, 0], [2]]


# -- PyTorch as an oracle: the same CNN, data and steps under torch's DDP (gloo) --------------
PARITY_COMMON = '''
import numpy as np
def init_arrays():
    rng = np.random.default_rng(0)
    return {"0.weight": rng.standard_normal((4, 1, 3, 3)) * 0.3,
            "0.bias": rng.standard_normal(4) * 0.1, "1.weight": 1 + rng.standard_normal(4) * 0.1,
            "1.bias": rng.standard_normal(4) * 0.1, "5.weight": rng.standard_normal((3, 64)) * 0.1,
            "5.bias": rng.standard_normal(3) * 0.1}
def data(step):
    rng = np.random.default_rng(100 + step)
    return rng.standard_normal((8, 1, 8, 8)), rng.standard_normal((8, 3))
def train(lib, nn, optim, ddp_class, rank, world, from_numpy, state_of):
    m = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 3)).double()
    sd = m.state_dict()
    for k, v in init_arrays().items():
        sd[k] = from_numpy(v)
    m.load_state_dict(sd)
    with lib.no_grad():
        m[1].running_mean.fill_(float(rank))  # rank 0's buffers must win
    d = ddp_class(m)
    opt = optim.SGD(d.parameters(), lr=0.1, momentum=0.9)
    for step in range(4):
        x, y = (from_numpy(a) for a in data(step))
        opt.zero_grad()
        ((d(x.chunk(world)[rank]) - y.chunk(world)[rank]) ** 2).mean().backward()
        opt.step()
    return {k: state_of(v) for k, v in m.state_dict().items()}
'''

TORCH_SIDE = '''
import os, sys
import numpy as np, torch, torch.distributed as dist, torch.multiprocessing as mp
sys.path.insert(0, sys.argv[2])
from parity_common import train
def run(rank, world, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    state = train(torch, torch.nn, torch.optim, torch.nn.parallel.DistributedDataParallel,
                  rank, world, torch.from_numpy, lambda t: t.numpy())
    np.savez(os.path.join(out, f"torch{rank}.npz"), **state)
    dist.destroy_process_group()
if __name__ == "__main__":
    mp.spawn(run, args=(2, sys.argv[1], sys.argv[2]), nprocs=2)
'''

EMBER_SIDE = '''
import sys, datetime
import numpy as np, ember, ember.distributed as dist
from ember.nn.parallel import DistributedDataParallel
sys.path.insert(0, sys.argv[1])
from parity_common import train
dist.init_process_group(timeout=datetime.timedelta(seconds=60))
rank = dist.get_rank()
state = train(ember, ember.nn, ember.optim, DistributedDataParallel, rank,
              dist.get_world_size(), ember.from_numpy, lambda t: t.numpy())
want = np.load(sys.argv[1] + f"/torch{rank}.npz")
emit({k: float(np.abs(state[k].astype(np.float64) - want[k]).max()) for k in want.files})
dist.destroy_process_group()
'''


@pytest.mark.parity
@pytest.mark.slow
def test_matches_pytorch_ddp(tmp_path):
    """torch's DDP over gloo and Ember's over MPI, same CNN with batch norm, same shards and
    steps: the same parameters and buffers on every rank (float64)."""
    pytest.importorskip("torch")
    import socket
    import sys

    from mpi_launch import run_command

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    (tmp_path / "parity_common.py").write_text(PARITY_COMMON)
    script = tmp_path / "torch_side.py"
    script.write_text(TORCH_SIDE)
    done = run_command([sys.executable, str(script), port, str(tmp_path)], timeout=120)
    assert done.returncode == 0, done.stderr[-4000:]
    result = run_ranks(2, EMBER_SIDE, tmp_path, str(tmp_path), timeout=60)
    assert result.returncode == 0, result.output[-4000:]
    for rank in (0, 1):
        diffs = result.values[rank][0]
        assert sorted(diffs) == ["0.bias", "0.weight", "1.bias", "1.num_batches_tracked",
                                 "1.running_mean", "1.running_var", "1.weight", "5.bias",
                                 "5.weight"]
        assert max(diffs.values()) < 1e-10, diffs
