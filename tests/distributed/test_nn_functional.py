"""``ember.distributed.nn.functional`` (``torch.distributed.nn``): collectives that autograd
differentiates, on 2 and 4 MPI ranks. Each case checks the forward values against the plain
computation on every rank's inputs (each rank can make them all from one seed) and the
gradients against PyTorch's definitions of their backward (the adjoint collective)."""

from __future__ import annotations

import pytest
from mpi_launch import case_launches, case_registry, check, check_case, distributed_marks

pytestmark = distributed_marks()
CASES, case = case_registry()


def inputs(N, *shape):
    """Every rank's input (rank r's is ``ranks[r]``), the same on every rank."""
    import ember

    g = ember.Generator().manual_seed(7)
    return [ember.randn(shape, generator=g, dtype=ember.float64) for _ in range(N)]


def close(a, b):
    import ember

    return bool(ember.allclose(a, b, atol=1e-12))


def leaf(t):
    return t.clone().requires_grad_(True)


@case
def case_all_reduce(R, N, out):
    import ember
    import ember.distributed as dist
    from ember.distributed.nn import functional as F

    xs = inputs(N, 3, 2)
    x = leaf(xs[R])
    y = F.all_reduce(x)
    check(close(y, sum(xs)) and close(x.detach(), xs[R]), "the input is left unchanged")
    (y * (R + 1)).sum().backward()  # d/dx_r of sum_s (s+1) * sum(x): the sum of the weights
    check(close(x.grad, ember.full((3, 2), float(sum(range(1, N + 1))), dtype=ember.float64)))
    m = F.all_reduce(xs[R], op=dist.ReduceOp.MAX)
    check(close(m, ember.stack(xs).amax(0)))


@case
def case_broadcast_and_reduce(R, N, out):
    import ember
    from ember.distributed.nn import functional as F

    xs = inputs(N, 4)
    x = leaf(xs[R])
    y = F.broadcast(x, src=1)
    check(close(y, xs[1]))
    (y * (R + 1)).sum().backward()  # the weights' sum reaches the source, zero elsewhere
    want = float(sum(range(1, N + 1))) if R == 1 else 0.0
    check(close(x.grad, ember.full((4,), want, dtype=ember.float64)), f"{x.grad}")
    x2 = leaf(xs[R])
    r = F.reduce(x2, dst=0)
    check(close(r, sum(xs)) if R == 0 else close(r, xs[R]))
    (r * 3).sum().backward()  # the destination's gradient, broadcast
    check(close(x2.grad, ember.full((4,), 3.0, dtype=ember.float64)))


@case
def case_all_gather(R, N, out):
    import ember
    from ember.distributed.nn import functional as F

    xs = inputs(N, 2, 3)
    x = leaf(xs[R])
    got = F.all_gather(x)
    check(isinstance(got, tuple) and len(got) == N)
    check(all(close(g, xs[s]) for s, g in enumerate(got)))
    # rank r weighs piece s by (r + 1) * (s + 1): x_s's gradient is (s + 1) * sum_r (r + 1)
    sum(g * (R + 1) * (s + 1) for s, g in enumerate(got)).sum().backward()
    total = float(sum(range(1, N + 1)))
    check(close(x.grad, ember.full((2, 3), (R + 1) * total, dtype=ember.float64)))


@case
def case_gather_and_scatter(R, N, out):
    import ember
    from ember.distributed.nn import functional as F

    xs = inputs(N, 3)
    x = leaf(xs[R])
    got = F.gather(x, dst=0)
    if R == 0:
        check(all(close(g, xs[s]) for s, g in enumerate(got)))
    else:
        check(all(float(g.abs().sum()) == 0 for g in got))
    sum(g * (s + 2) for s, g in enumerate(got)).sum().backward()
    # only the destination's pieces carry gradient: rank s's input gets (s + 2)
    check(close(x.grad, ember.full((3,), R + 2.0, dtype=ember.float64)))
    pieces = [leaf(t) for t in inputs(N, 2)] if R == 1 else [leaf(ember.zeros(2,
              dtype=ember.float64)) for _ in range(N)]
    mine = F.scatter(pieces, src=1)
    check(close(mine, inputs(N, 2)[R]))
    (mine * (R + 1)).sum().backward()
    if R == 1:  # piece s went to rank s, whose weight was s + 1
        check(all(close(p.grad, ember.full((2,), s + 1.0, dtype=ember.float64))
                  for s, p in enumerate(pieces)))


@case
def case_reduce_scatter_and_all_to_all(R, N, out):
    import ember
    from ember.distributed.nn import functional as F

    every = [inputs(N, 2) for _ in range(N)]  # every[r][s]: rank r's piece for rank s
    ins = [leaf(t) for t in every[R]]
    got = F.reduce_scatter(ember.empty(2, dtype=ember.float64), ins)
    check(close(got, sum(every[r][R] for r in range(N))))
    (got * (R + 1)).sum().backward()  # piece s went to rank s's sum, weighed s + 1
    check(all(close(p.grad, ember.full((2,), s + 1.0, dtype=ember.float64))
              for s, p in enumerate(ins)))
    ins = [leaf(t) for t in every[R]]
    outs = F.all_to_all([ember.empty(2, dtype=ember.float64) for _ in range(N)], ins)
    check(all(close(o, every[s][R]) for s, o in enumerate(outs)))
    sum(o * (R + 1) for o in outs).sum().backward()
    check(all(close(p.grad, ember.full((2,), s + 1.0, dtype=ember.float64))
              for s, p in enumerate(ins)))
    flat = leaf(ember.cat(every[R]))
    single = F.all_to_all_single(ember.empty(2 * N, dtype=ember.float64), flat)
    check(close(single, ember.cat([every[s][R] for s in range(N)])))
    (single * (R + 1)).sum().backward()
    check(close(flat.grad, ember.cat([ember.full((2,), s + 1.0, dtype=ember.float64)
                                      for s in range(N)])))


rank_main, runs = case_launches(__file__, "nn_functional_cases", CASES)


@pytest.mark.parametrize("n", [2, 4], ids=["2ranks", "4ranks"])
@pytest.mark.parametrize("name", list(CASES))
def test_nn_functional_case(runs, n, name):
    check_case(runs[n], n, name)


def test_names():
    import ember.distributed.nn as dnn

    for name in ("all_gather", "all_reduce", "all_to_all", "all_to_all_single", "broadcast",
                 "gather", "reduce", "reduce_scatter", "scatter"):
        assert getattr(dnn, name) is getattr(dnn.functional, name)
