"""``Join`` and ``DistributedDataParallel.join()``: training on uneven inputs, 2 and 4 ranks.

Rank ``r`` has ``3 + r`` batches. Inside ``with model.join():`` the ranks that run out first
answer the others' gradient all-reduces with zeros, so nobody hangs and each step's gradient
is the sum over the ranks still training divided by the world size (or by the ranks still
training, ``divide_by_initial_world_size=False``). Every rank recomputes that whole schedule
in one process (float64) and checks its parameters after each of its steps, and, once all
have joined, the last joiner's model everywhere.
"""

from __future__ import annotations

import pytest
from mpi_launch import case_launches, case_registry, check, check_case, distributed_marks

pytestmark = distributed_marks()
CASES, case = case_registry()


def model(seed: int = 0, norm: bool = False):
    import ember
    import ember.nn as nn

    ember.manual_seed(seed)
    layers = [nn.Linear(4, 8), nn.Tanh()]
    if norm:
        layers.append(nn.BatchNorm1d(8))
    layers += [nn.Linear(8, 2)]
    return nn.Sequential(*layers).double()


def batch(step: int, rank: int):
    import ember

    g = ember.Generator().manual_seed(100 * step + rank)
    return (ember.randn(5, 4, generator=g, dtype=ember.float64),
            ember.randn(5, 2, generator=g, dtype=ember.float64))


def steps_of(rank: int) -> int:
    return 3 + rank


def reference(N: int, divide_initial: bool = True):
    """The parameters after each step of the whole uneven schedule, in one process."""
    import ember

    net = model()
    history = []
    for k in range(steps_of(N - 1)):
        active = [r for r in range(N) if k < steps_of(r)]
        grads = [ember.zeros_like(p) for p in net.parameters()]
        for r in active:
            net.zero_grad()
            x, y = batch(k, r)
            ((net(x) - y) ** 2).mean().backward()
            for g, p in zip(grads, net.parameters()):
                g.add_(p.grad)
        with ember.no_grad():
            for g, p in zip(grads, net.parameters()):
                p.sub_(0.1 * g / (N if divide_initial else len(active)))
        history.append([p.detach().clone() for p in net.parameters()])
    return history


def train(R, N, divide_initial=True, **ddp_kwargs):
    import ember
    from ember.nn.parallel import DistributedDataParallel as DDP

    ddp = DDP(model(), **ddp_kwargs)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
    want = reference(N, divide_initial)
    with ddp.join(divide_by_initial_world_size=divide_initial):
        for k in range(steps_of(R)):
            opt.zero_grad()
            x, y = batch(k, R)
            ((ddp(x) - y) ** 2).mean().backward()
            opt.step()
            for p, q in zip(ddp.parameters(), want[k]):
                check(ember.allclose(p, q, atol=1e-12), f"step {k}")
    for p, q in zip(ddp.parameters(), want[-1]):  # the last joiner's model everywhere
        check(ember.allclose(p, q, atol=1e-12), "after join")


@case
def case_uneven_inputs_divided_by_world_size(R, N, out):
    train(R, N)


@case
def case_uneven_inputs_divided_by_ranks_training(R, N, out):
    train(R, N, divide_initial=False)


@case
def case_uneven_inputs_small_buckets_and_unused_search(R, N, out):
    import warnings

    # several buckets (the early ones go out during backward) and the used-flags bucket
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "did not find any unused parameters"
        train(R, N, bucket_cap_mb=0.0001, find_unused_parameters=True)


@case
def case_buffers_and_eval_forwards(R, N, out):
    import ember
    from ember.nn.parallel import DistributedDataParallel as DDP

    ddp = DDP(model(norm=True))
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
    with ddp.join():
        for k in range(steps_of(R)):
            opt.zero_grad()
            x, y = batch(k, R)
            ((ddp(x) - y) ** 2).mean().backward()
            opt.step()
    # every rank holds the last joiner's parameters and batch-norm statistics
    import ember.distributed as dist

    state = [t.detach().clone() for t in ddp.module.state_dict().values()
             if t.dtype == ember.float64]
    gathered = [None] * N
    dist.all_gather_object(gathered, [t.tolist() for t in state])
    check(all(g == gathered[0] for g in gathered), "models differ after join")


@case
def case_throw_on_early_termination(R, N, out):
    import ember
    from ember.nn.parallel import DistributedDataParallel as DDP

    ddp = DDP(model())
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
    caught = None
    done = 0
    try:
        with ddp.join(throw_on_early_termination=True):
            for k in range(steps_of(R)):
                opt.zero_grad()
                x, y = batch(k, R)
                ((ddp(x) - y) ** 2).mean().backward()
                opt.step()
                done += 1
    except RuntimeError as e:
        caught = str(e)
    check(caught is not None, "no rank raised")
    if R == 0:
        check(caught == "Rank 0 exhausted all inputs.", caught)
    else:
        check("Detected at least one rank that exhausted inputs" in caught, caught)
    check(done == steps_of(0), f"rank {R} did {done} steps")
    ember.distributed.barrier()


@case
def case_generic_joinable(R, N, out):
    """A Joinable of one's own: main_hook shadows its per-iteration all-reduce; exactly the
    rank with the most inputs is told it joined last."""
    import ember
    import ember.distributed as dist
    from ember.distributed.algorithms import Join, Joinable, JoinHook

    class Counter(Joinable):
        def __init__(self):
            super().__init__()
            self.total = 0.0
            self.last = None

        def step(self, value):
            Join.notify_join_context(self)
            t = ember.tensor([value], dtype=ember.float64)
            dist.all_reduce(t)
            self.total += t.item()

        def join_hook(self, **kwargs):
            counter = self

            class Hook(JoinHook):
                def main_hook(self):
                    t = ember.zeros(1, dtype=ember.float64)
                    dist.all_reduce(t)
                    counter.total += t.item()

                def post_hook(self, is_last_joiner):
                    counter.last = is_last_joiner

            return Hook()

        @property
        def join_device(self):
            return ember.device("cpu")

        @property
        def join_process_group(self):
            return dist.group.WORLD

    c = Counter()
    with Join([c]):
        for _ in range(steps_of(R)):
            c.step(float(R + 1))
    want = sum((r + 1) * steps_of(r) for r in range(N))
    check(c.total == want, (c.total, want))
    check(c.last == (R == N - 1), c.last)
    try:
        Join([])
    except ValueError as e:
        check("at least one joinable" in str(e))
    else:
        raise AssertionError("Join([]) accepted")


rank_main, runs = case_launches(__file__, "join_cases", CASES)


@pytest.mark.parametrize("n", [2, 4], ids=["2ranks", "4ranks"])
@pytest.mark.parametrize("name", list(CASES))
def test_join_case(runs, n, name):
    check_case(runs[n], n, name)
