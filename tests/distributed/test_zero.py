"""``ZeroRedundancyOptimizer`` on 2 and 4 MPI ranks, against the plain optimizer.

One launch per world size runs every case below in each rank (this module is loaded there by
path). Each rank trains a DDP model with a ``ZeroRedundancyOptimizer`` and, beside it, a plain
single-process model with the plain optimizer on the whole batch (float64): the parameters
must agree after every step, while each rank holds the optimizer state of its shard only.

The 2-rank launch consolidates the state on rank 0 and saves it with the model; the 4-rank
launch loads it into a ``ZeroRedundancyOptimizer`` sharded four ways, and this process into
the plain optimizer: both continue exactly as the uninterrupted 2-rank run did.
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
STEPS = 6
SAVE_AT = 3


def case(fn):
    CASES[fn.__name__[5:]] = fn
    return fn


def mlp(seed: int):
    import ember
    import ember.nn as nn

    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 8), nn.ReLU(),
                         nn.Linear(8, 3)).double()


def batch(step: int, n: int = 8):
    import ember

    g = ember.Generator().manual_seed(2000 + step)
    return (ember.randn(n, 5, generator=g, dtype=ember.float64, device="cpu"),
            ember.randn(n, 3, generator=g, dtype=ember.float64, device="cpu"))


def shard(t, R: int, N: int):
    return t.chunk(N)[R]


def loss_fn(out, y):
    return ((out - y) ** 2).mean()


def check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def max_diff(a, b) -> float:
    return max(float((x.detach() - y.detach()).abs().max()) for x, y in zip(a, b))


def setup(R: int, opt_class, bucket_view: bool = False, **opt_kwargs):
    from ember.distributed.optim import ZeroRedundancyOptimizer
    from ember.nn.parallel import DistributedDataParallel as DDP

    ddp = DDP(mlp(seed=R))
    zero = ZeroRedundancyOptimizer(ddp.parameters(), opt_class,
                                   parameters_as_bucket_view=bucket_view, **opt_kwargs)
    ref = mlp(seed=0)
    ref.load_state_dict(ddp.module.state_dict())
    return ddp, zero, ref, opt_class(ref.parameters(), **opt_kwargs)


def step_both(ddp, zero, ref, ref_opt, step: int, R: int, N: int) -> None:
    x, y = batch(step)
    zero.zero_grad()
    loss_fn(ddp(shard(x, R, N)), shard(y, R, N)).backward()
    zero.step()
    ref_opt.zero_grad()
    loss_fn(ref(x), y).backward()
    ref_opt.step()


def compare_states(sd, plain) -> list[str]:
    """What differs between a consolidated state dict and the plain optimizer's."""
    problems = []
    if sorted(sd["state"]) != sorted(plain["state"]):
        return [f"state keys {sorted(sd['state'])} != {sorted(plain['state'])}"]
    for k, st in plain["state"].items():
        if sorted(st) != sorted(sd["state"][k]):
            problems.append(f"state {k}: {sorted(sd['state'][k])} != {sorted(st)}")
            continue
        for name, value in st.items():
            d = float((sd["state"][k][name] - value).abs().max())
            if not d < TOL:
                problems.append(f"state {k} {name} differs by {d}")
    groups = [{k: v for k, v in g.items()} for g in sd["param_groups"]]
    if groups != plain["param_groups"]:
        problems.append(f"param_groups {groups} != {plain['param_groups']}")
    return problems


def check_sharded(zero, R: int, N: int) -> None:
    """This rank holds state for its shard only; the shards partition the parameters as
    PyTorch's greedy rule does (largest first, to the rank with the fewest elements)."""
    import ember.distributed as dist

    params = zero._all_params
    owned = sorted(zero._param_to_index[id(p)] for p in zero.optim.state)
    every = [None] * N
    dist.all_gather_object(every, owned)
    flat = sorted(i for o in every for i in o)
    check(flat == list(range(len(params))), f"shards {every}")
    sizes, want = [0] * N, [[] for _ in range(N)]
    for i in sorted(range(len(params)), key=lambda i: -params[i].numel()):
        r = sizes.index(min(sizes))
        want[r].append(i)
        sizes[r] += params[i].numel()
    check([sorted(w) for w in want] == every, f"shards {every}, expected {want}")


# -- the cases ----------------------------------------------------------------------------------
@case
def case_matches_adam(R, N, out):
    import ember

    ddp, zero, ref, ref_opt = setup(R, ember.optim.Adam, lr=0.01)
    for step in range(STEPS):
        step_both(ddp, zero, ref, ref_opt, step, R, N)
        d = max_diff(ddp.module.parameters(), ref.parameters())
        check(d < TOL, f"step {step}: parameters differ by {d}")
    check_sharded(zero, R, N)


@case
def case_matches_sgd_bucket_view(R, N, out):
    import ember

    ddp, zero, ref, ref_opt = setup(R, ember.optim.SGD, bucket_view=True, lr=0.1,
                                    momentum=0.9)
    buckets = zero._buckets[0][R]
    mine = [p for g in zero.optim.param_groups for p in g["params"]]
    start = buckets.data_ptr()
    end = start + buckets.numel() * buckets.element_size()
    check(all(start <= p.data_ptr() < end for p in mine), "parameters are not bucket views")
    for step in range(STEPS):
        step_both(ddp, zero, ref, ref_opt, step, R, N)
    d = max_diff(ddp.module.parameters(), ref.parameters())
    check(d < TOL, f"parameters differ by {d}")
    check_sharded(zero, R, N)


@case
def case_add_param_group(R, N, out):
    """A group added during training is partitioned too; the old shards stay where they are."""
    import ember

    ddp, _, ref, _ = setup(R, ember.optim.SGD, lr=0.1)
    from ember.distributed.optim import ZeroRedundancyOptimizer

    params = list(ddp.module.parameters())
    ref_params = list(ref.parameters())
    zero = ZeroRedundancyOptimizer(params[:4], ember.optim.Adam, lr=0.01)
    ref_opt = ember.optim.Adam(ref_params[:4], lr=0.01)
    before = {id(p): r for p, r in ((p, zero._param_to_rank[id(p)]) for p in params[:4])}
    for step in range(STEPS):
        if step == 2:
            zero.add_param_group({"params": params[4:], "lr": 0.05})
            ref_opt.add_param_group({"params": ref_params[4:], "lr": 0.05})
        step_both(ddp, zero, ref, ref_opt, step, R, N)
    after = {id(p): zero._param_to_rank[id(p)] for p in params[:4]}
    check(before == after, "the first group's shards moved")
    check(len(zero.param_groups) == 2 and zero.param_groups[1]["lr"] == 0.05,
          f"{zero.param_groups}")
    d = max_diff(ddp.module.parameters(), ref.parameters())
    check(d < TOL, f"parameters differ by {d}")


@case
def case_state_dict(R, N, out):
    """2 ranks: consolidate at step 3, save (rank 0), finish and save the parameters. 4 ranks:
    load the 2-rank state into a four-way sharded optimizer and end identically."""
    import ember
    import ember.distributed as dist

    ckpt = os.path.join(out, "zero_checkpoint.pt")
    final = os.path.join(out, "zero_final.pt")
    ddp, zero, ref, ref_opt = setup(R, ember.optim.Adam, lr=0.01, betas=(0.8, 0.99))
    first = 0
    problems = []  # reported after the collectives: a rank that left early would hang the rest
    if N != 2:
        state = ember.load(ckpt)
        ddp.load_state_dict(state["model"])
        zero.load_state_dict(state["optim"])
        first = SAVE_AT
        owned = {zero._param_to_index[id(p)] for p in zero.optim.state}
        mine = {i for i, p in enumerate(zero._all_params) if zero._param_to_rank[id(p)] == R}
        if owned != mine:
            problems.append(f"loaded state for {owned}, this rank owns {mine}")
        if zero.param_groups[0]["betas"] != (0.8, 0.99):
            problems.append(f"{zero.param_groups}")
    for step in range(first, STEPS):
        if N == 2 and step == SAVE_AT:
            try:
                zero.state_dict()
            except RuntimeError as e:
                if "Optimizer state has not been consolidated on this rank" not in str(e):
                    problems.append(str(e))
            else:
                problems.append("state_dict() before consolidate_state_dict() did not raise")
            zero.consolidate_state_dict(to=0)
            if R == 0:
                sd = zero.state_dict()
                problems += compare_states(sd, ref_opt.state_dict())
                ember.save({"model": ddp.state_dict(), "optim": sd}, ckpt)
            else:
                try:
                    zero.state_dict()
                except RuntimeError:
                    pass
                else:
                    problems.append("state_dict() on a rank that did not consolidate")
        if N == 2:
            step_both(ddp, zero, ref, ref_opt, step, R, N)
        else:
            x, y = batch(step)
            zero.zero_grad()
            loss_fn(ddp(shard(x, R, N)), shard(y, R, N)).backward()
            zero.step()
    if N == 2:
        if R == 0:
            ember.save(ddp.module.state_dict(), final)
        dist.barrier()
    else:
        want = ember.load(final)
        got = ddp.module.state_dict()
        d = max(float((got[k] - want[k]).abs().max()) for k in want)
        if not d < 1e-10:
            problems.append(f"resumed on {N} ranks: parameters differ by {d}")
    check(not problems, "\n".join(problems))


@case
def case_overlap_with_ddp_refused(R, N, out):
    import ember
    from ember.distributed.optim import ZeroRedundancyOptimizer

    try:
        ZeroRedundancyOptimizer(mlp(0).parameters(), ember.optim.SGD, overlap_with_ddp=True,
                                lr=0.1)
    except NotImplementedError as e:
        check("communication hook" in str(e), str(e))
    else:
        raise AssertionError("overlap_with_ddp=True was accepted")


def rank_main(emit, out: str) -> None:
    """Run every case in this rank, reporting each (None, or the traceback)."""
    run_cases(emit, CASES, out)


# -- the pytest side --------------------------------------------------------------------------
RANK_SCRIPT = case_script(__file__, "zero_cases")


@pytest.fixture(scope="module")
def shared_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("zero_shared")


@functools.cache
def _launch(n: int, shared: str, tmp: str):
    return run_ranks(n, RANK_SCRIPT, Path(tmp), shared, timeout=180)


@pytest.fixture(scope="module")
def runs(shared_dir, tmp_path_factory):
    """The 2-rank launch first (it writes the checkpoint), then the 4-rank one."""
    return {n: _launch(n, str(shared_dir), str(tmp_path_factory.mktemp(f"zero{n}")))
            for n in (2, 4)}


@pytest.mark.parametrize("n", [2, 4], ids=["2ranks", "4ranks"])
@pytest.mark.parametrize("name", list(CASES))
def test_zero_case(runs, n, name):
    check_case(runs[n], n, name)


def test_consolidated_state_loads_into_the_plain_optimizer(runs, shared_dir):
    """The consolidated state is a plain optimizer's: Adam in this one process resumes it."""
    import ember

    assert runs[2].returncode == 0, runs[2].output[-4000:]
    state = ember.load(shared_dir / "zero_checkpoint.pt")
    model = mlp(seed=5)
    model.load_state_dict({k[len("module."):]: v for k, v in state["model"].items()})
    opt = ember.optim.Adam(model.parameters(), lr=0.5)
    opt.load_state_dict(state["optim"])
    assert opt.param_groups[0]["lr"] == 0.01 and opt.param_groups[0]["betas"] == (0.8, 0.99)
    device = model[0].weight.device
    for step in range(SAVE_AT, STEPS):
        x, y = batch(step)
        opt.zero_grad()
        loss_fn(model(x.to(device)), y.to(device)).backward()
        opt.step()
    want = ember.load(shared_dir / "zero_final.pt")
    got = model.state_dict()
    assert max(float((got[k].cpu() - want[k]).abs().max()) for k in want) < 1e-10
