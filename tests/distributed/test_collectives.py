"""Every collective of ``ember.distributed`` against NumPy, on 2 and 4 MPI ranks.

One launch per world size runs every case below in each rank (this module is loaded there by
path and ``rank_main`` runs the cases in order); each rank computes every rank's inputs, the
expected result in NumPy, and reports per case. The pytest items then check the reports, one
item per collective family and world size. Inputs are small integers (in every dtype), so
sums, products and averages are exact or nearly so in float16 too.

Cases cover the dtypes float32, float64, float16, int64, int32, uint8 and bool, the shapes
scalar, 1-d and 3-d, and non-contiguous views (a strided slice and a transpose: the result is
written back into the view and the rest of its base is left alone), tensors on the strict test
device, ``async_op`` Work handles, the zero-copy path and version counters.
"""

from __future__ import annotations

import functools
import time
import traceback
from pathlib import Path

import numpy as np
import pytest
from mpi_launch import mpi_available, run_ranks

pytestmark = [pytest.mark.distributed,
              pytest.mark.skipif(not mpi_available(), reason="needs mpi4py and mpiexec "
                                 "(pip install 'ember-core[distributed]')")]

DTYPES = ["float32", "float64", "float16", "int64", "int32", "uint8", "bool"]
OPS = ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]
LAYOUTS = {"scalar": (), "1d": (5,), "3d": (2, 3, 4), "strided": (3, 4), "transposed": (3, 4)}

CASES: dict[str, object] = {}


def _register(name: str, fn, *args) -> None:
    assert name not in CASES, name
    CASES[name] = functools.partial(fn, *args)


def family(name: str) -> str:
    return name.split("[", 1)[0]


# -- rank-side helpers (they run inside the MPI ranks) -----------------------------------------
def values(rank: int, shape, dtype: str, salt: int = 0) -> np.ndarray:
    """Rank ``rank``'s input: small integers (-4..4; 0..8 for uint8; bool: > 0)."""
    n = int(np.prod(shape, dtype=np.int64))
    base = (np.arange(n) * 7 + rank * 3 + salt * 5) % 9 - 4
    if dtype == "bool":
        arr = base > 0
    elif dtype == "uint8":
        arr = (base + 4).astype(np.uint8)
    else:
        arr = base.astype(dtype)
    return arr.reshape(shape)


def make(arr: np.ndarray, layout: str, device: str = "cpu"):
    """An ember tensor holding ``arr``: contiguous, or a non-contiguous view of a bigger
    tensor (``strided``: every other column; ``transposed``: a transpose). Returns the tensor
    and a check that the parts of its base outside the view are untouched."""
    import ember

    src = ember.from_numpy(np.array(arr, copy=True)).to(device)
    if layout not in ("strided", "transposed"):
        return src, lambda: None
    if layout == "strided":
        base = ember.full(arr.shape[:-1] + (2 * arr.shape[-1],), 1, dtype=src.dtype,
                          device=device)
        view = base[..., ::2]
    else:
        base = ember.full(arr.shape[::-1], 1, dtype=src.dtype, device=device)
        view = base.t()
    assert not view.is_contiguous()
    view.copy_(src)
    sentinel = np.ones_like(arr)

    def untouched() -> None:
        if layout == "strided":
            rest = host(base)[..., 1::2]
            assert np.array_equal(rest, sentinel), f"the base outside the view changed: {rest}"

    return view, untouched


def host(t) -> np.ndarray:
    return t.cpu().numpy()


MISMATCHES: list[str] = []


def expect(t, want: np.ndarray, what: str = "", tol: float = 0.0) -> None:
    """Compare ``t`` with NumPy's ``want``; a mismatch is recorded, not raised, so that the
    case still runs its remaining collectives and the ranks stay in step."""
    got = host(t)
    if got.dtype != want.dtype or got.shape != want.shape:
        MISMATCHES.append(f"{what}: {got.dtype}{list(got.shape)}, expected "
                          f"{want.dtype}{list(want.shape)}")
        return
    if tol and got.dtype.kind == "f":
        ok = np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)
    else:
        ok = np.array_equal(got, want)
    if not ok:
        MISMATCHES.append(f"{what}: got\n{got}\nexpected\n{want}")


def reduce_np(arrays, op: str) -> np.ndarray:
    """NumPy's reduction of the ranks' arrays, in their dtype (integers wrap as in MPI)."""
    stack = np.stack(arrays)
    dtype = stack.dtype
    if dtype == np.bool_:
        return {"SUM": np.any, "MAX": np.any, "BOR": np.any, "PRODUCT": np.all,
                "MIN": np.all, "BAND": np.all,
                "BXOR": lambda s, axis: np.logical_xor.reduce(s, axis=axis)}[op](stack, axis=0)
    if op in ("SUM", "AVG"):
        total = np.sum(stack, axis=0, dtype=dtype)
        if op == "SUM":
            return total
        if dtype.kind == "f":
            return (total / len(arrays)).astype(dtype)
        quotient = np.abs(total) // len(arrays)  # integer AVG truncates, as NCCL's does
        return np.where(total < 0, -quotient, quotient).astype(dtype)
    return {"PRODUCT": lambda s: np.prod(s, axis=0, dtype=dtype),
            "MIN": lambda s: np.min(s, axis=0), "MAX": lambda s: np.max(s, axis=0),
            "BAND": lambda s: np.bitwise_and.reduce(s, axis=0),
            "BOR": lambda s: np.bitwise_or.reduce(s, axis=0),
            "BXOR": lambda s: np.bitwise_xor.reduce(s, axis=0)}[op](stack)


def valid(op: str, dtype: str) -> bool:
    if op in ("BAND", "BOR", "BXOR") and dtype.startswith("float"):
        return False
    return not (op == "AVG" and dtype == "bool")


def tolerance(op: str, dtype: str) -> float:
    return 1e-3 if op == "AVG" and dtype == "float16" else (1e-6 if op == "AVG" else 0.0)


def _op(name: str):
    import ember.distributed as dist

    return getattr(dist.ReduceOp, name)


# -- the cases ------------------------------------------------------------------------------------
def case_all_reduce(op: str, dtype: str, layout: str, R: int, N: int, device="cpu") -> None:
    import ember.distributed as dist

    shape = LAYOUTS[layout]
    xs = [values(r, shape, dtype) for r in range(N)]
    t, untouched = make(xs[R], layout, device)
    assert dist.all_reduce(t, op=_op(op)) is None
    expect(t, reduce_np(xs, op), f"all_reduce {op} {dtype} {layout}", tolerance(op, dtype))
    untouched()
    assert t.device.type == device


for _dt in DTYPES:
    for _o in OPS:
        if valid(_o, _dt):
            _register(f"all_reduce[{_o},{_dt}]", case_all_reduce, _o, _dt, "3d")
for _lay in LAYOUTS:
    for _dt in ("float32", "int64", "bool"):
        _register(f"all_reduce_layout[{_lay},{_dt}]", case_all_reduce, "SUM", _dt, _lay)
    _register(f"all_reduce_layout[{_lay},float64,AVG]", case_all_reduce, "AVG", "float64", _lay)
    _register(f"all_reduce_layout[{_lay},int32,MAX]", case_all_reduce, "MAX", "int32", _lay)


def case_broadcast(dtype: str, layout: str, R: int, N: int) -> None:
    import ember.distributed as dist

    shape = LAYOUTS[layout]
    for src in (0, N - 1):
        xs = [values(r, shape, dtype, salt=src) for r in range(N)]
        t, untouched = make(xs[R], layout)
        dist.broadcast(t, src=src)
        expect(t, xs[src], f"broadcast from {src}")
        untouched()


def case_all_gather(dtype: str, layout: str, R: int, N: int) -> None:
    import ember.distributed as dist

    shape = LAYOUTS[layout]
    xs = [values(r, shape, dtype) for r in range(N)]
    t, _ = make(xs[R], layout)
    outs = [make(np.zeros(shape, dtype=xs[0].dtype), layout) for _ in range(N)]
    dist.all_gather([o for o, _ in outs], t)
    for r, (o, untouched) in enumerate(outs):
        expect(o, xs[r], f"all_gather slot {r}")
        untouched()
    expect(t, xs[R], "all_gather input")


for _lay in LAYOUTS:
    for _dt in DTYPES:
        _register(f"broadcast[{_lay},{_dt}]", case_broadcast, _dt, _lay)
        _register(f"all_gather[{_lay},{_dt}]", case_all_gather, _dt, _lay)


def case_all_gather_into_tensor(dtype: str, stacked: bool, layout: str, R: int, N: int) -> None:
    import ember.distributed as dist

    xs = [values(r, (3, 4), dtype) for r in range(N)]
    want = np.stack(xs) if stacked else np.concatenate(xs)
    t, _ = make(xs[R], layout)
    out, untouched = make(np.zeros_like(want), "strided" if layout == "strided" else "1d")
    dist.all_gather_into_tensor(out, t)
    expect(out, want, f"all_gather_into_tensor stacked={stacked}")
    untouched()


for _dt in DTYPES:
    for _stacked in (False, True):
        _register(f"all_gather_into_tensor[{'stacked' if _stacked else 'concat'},{_dt}]",
                  case_all_gather_into_tensor, _dt, _stacked, "1d")
for _lay in ("strided", "transposed"):
    _register(f"all_gather_into_tensor[concat,{_lay}]", case_all_gather_into_tensor, "float32",
              False, _lay)


def case_reduce_scatter(op: str, dtype: str, layout: str, R: int, N: int) -> None:
    import ember.distributed as dist

    shape = LAYOUTS[layout]
    ins = [[values(r, shape, dtype, salt=i) for i in range(N)] for r in range(N)]
    inputs = [make(a, layout)[0] for a in ins[R]]
    out, untouched = make(np.zeros(shape, dtype=ins[0][0].dtype), layout)
    dist.reduce_scatter(out, inputs, op=_op(op))
    expect(out, reduce_np([ins[r][R] for r in range(N)], op), f"reduce_scatter {op}",
           tolerance(op, dtype))
    untouched()


def case_reduce_scatter_tensor(op: str, dtype: str, stacked: bool, R: int, N: int) -> None:
    import ember
    import ember.distributed as dist

    ins = [values(r, (N, 2, 3), dtype) for r in range(N)]
    inp = ember.from_numpy(ins[R] if stacked else ins[R].reshape(N * 2, 3))
    out = ember.zeros((2, 3), dtype=inp.dtype)
    dist.reduce_scatter_tensor(out, inp, op=_op(op))
    expect(out, reduce_np([ins[r][R] for r in range(N)], op),
           f"reduce_scatter_tensor {op} stacked={stacked}", tolerance(op, dtype))


for _dt in DTYPES:
    for _o in ("SUM", "AVG", "MAX", "BXOR"):
        if valid(_o, _dt):
            _register(f"reduce_scatter[{_o},{_dt}]", case_reduce_scatter, _o, _dt, "1d")
            _register(f"reduce_scatter_tensor[{_o},{_dt}]", case_reduce_scatter_tensor, _o,
                      _dt, False)
    _register(f"reduce_scatter_tensor[stacked,{_dt}]", case_reduce_scatter_tensor, "MIN", _dt,
              True)
for _lay in LAYOUTS:
    _register(f"reduce_scatter[{_lay}]", case_reduce_scatter, "SUM", "float32", _lay)


def case_reduce(op: str, dtype: str, layout: str, R: int, N: int) -> None:
    import ember.distributed as dist

    shape = LAYOUTS[layout]
    for dst in (0, N - 1):
        xs = [values(r, shape, dtype, salt=dst) for r in range(N)]
        t, untouched = make(xs[R], layout)
        dist.reduce(t, dst=dst, op=_op(op))
        want = reduce_np(xs, op) if R == dst else xs[R]
        expect(t, want, f"reduce {op} to {dst}", tolerance(op, dtype))
        untouched()


for _dt in DTYPES:
    for _o in ("SUM", "AVG", "PRODUCT", "MIN", "BOR"):
        if valid(_o, _dt):
            _register(f"reduce[{_o},{_dt}]", case_reduce, _o, _dt, "3d")
for _lay in LAYOUTS:
    _register(f"reduce[{_lay}]", case_reduce, "SUM", "int64", _lay)


def case_gather(dtype: str, layout: str, R: int, N: int) -> None:
    import ember.distributed as dist

    shape = LAYOUTS[layout]
    dst = N - 1
    xs = [values(r, shape, dtype) for r in range(N)]
    t, _ = make(xs[R], layout)
    outs = [make(np.zeros(shape, dtype=xs[0].dtype), layout) for _ in range(N)]
    dist.gather(t, [o for o, _ in outs] if R == dst else None, dst=dst)
    for r, (o, untouched) in enumerate(outs):
        expect(o, xs[r] if R == dst else np.zeros(shape, dtype=xs[0].dtype), f"gather {r}")
        untouched()


def case_scatter(dtype: str, layout: str, R: int, N: int) -> None:
    import ember.distributed as dist

    shape = LAYOUTS[layout]
    src = 1
    xs = [values(r, shape, dtype, salt=2) for r in range(N)]
    inputs = [make(a, layout)[0] for a in xs] if R == src else None
    out, untouched = make(np.zeros(shape, dtype=xs[0].dtype), layout)
    dist.scatter(out, inputs, src=src)
    expect(out, xs[R], "scatter")
    untouched()


for _lay in LAYOUTS:
    for _dt in ("float32", "float16", "int32", "uint8", "bool") if _lay == "3d" else ("float64",):
        _register(f"gather[{_lay},{_dt}]", case_gather, _dt, _lay)
        _register(f"scatter[{_lay},{_dt}]", case_scatter, _dt, _lay)


def case_all_to_all(dtype: str, layout: str, R: int, N: int) -> None:
    """Uneven sizes: rank i sends rank j a tensor of i + j + 2 rows."""
    import ember.distributed as dist

    def block(i: int, j: int) -> np.ndarray:
        return values(i, (i + j + 2, 2), dtype, salt=j)

    inputs = [make(block(R, j), layout)[0] for j in range(N)]
    outs = [make(np.zeros((j + R + 2, 2), dtype=block(0, 0).dtype), layout) for j in range(N)]
    dist.all_to_all([o for o, _ in outs], inputs)
    for j, (o, untouched) in enumerate(outs):
        expect(o, block(j, R), f"all_to_all from {j}")
        untouched()


def case_all_to_all_single(dtype: str, uneven: bool, R: int, N: int) -> None:
    import ember
    import ember.distributed as dist

    if uneven:
        in_splits = [R + j + 1 for j in range(N)]
        out_splits = [j + R + 1 for j in range(N)]
    else:
        in_splits = out_splits = [2] * N
    blocks = {(i, j): values(i, ((i + j + 1) if uneven else 2, 3), dtype, salt=j)
              for i in range(N) for j in range(N)}
    inp = ember.from_numpy(np.concatenate([blocks[R, j] for j in range(N)]))
    want = np.concatenate([blocks[j, R] for j in range(N)])
    out = ember.zeros(want.shape, dtype=inp.dtype)
    if uneven:
        dist.all_to_all_single(out, inp, out_splits, in_splits)
    else:
        dist.all_to_all_single(out, inp)
    expect(out, want, "all_to_all_single")


for _dt in DTYPES:
    _register(f"all_to_all[{_dt}]", case_all_to_all, _dt, "1d")
    _register(f"all_to_all_single[uneven,{_dt}]", case_all_to_all_single, _dt, True)
    _register(f"all_to_all_single[even,{_dt}]", case_all_to_all_single, _dt, False)
for _lay in ("strided", "transposed"):
    _register(f"all_to_all[{_lay}]", case_all_to_all, "float32", _lay)


def case_barrier(R: int, N: int) -> None:
    """Nobody leaves the barrier before the last rank (rank 0, late) has entered it."""
    import ember.distributed as dist

    if R == 0:
        time.sleep(0.3)
    entered = time.time()
    dist.barrier()
    left = time.time()
    times = [None] * N
    dist.all_gather_object(times, (entered, left))
    latest_entry = max(t[0] for t in times)
    assert all(t[1] >= latest_entry for t in times), times
    work = dist.barrier(async_op=True)
    assert work.wait() is True and work.is_completed()


def case_monitored_barrier(R: int, N: int) -> None:
    import datetime

    import ember.distributed as dist

    dist.monitored_barrier(timeout=datetime.timedelta(seconds=20))
    dist.monitored_barrier(wait_all_ranks=True)


_register("barrier[]", case_barrier)
_register("monitored_barrier[pass]", case_monitored_barrier)


def case_send_recv(dtype: str, layout: str, R: int, N: int) -> None:
    """A ring: each rank sends to the next and receives from the previous."""
    import ember.distributed as dist

    shape = LAYOUTS[layout]
    nxt, prev = (R + 1) % N, (R - 1) % N
    payload = values(R, shape, dtype, salt=4)
    out, untouched = make(np.zeros(shape, dtype=payload.dtype), layout)
    send, _ = make(payload, layout)
    work = dist.isend(send, dst=nxt)
    assert dist.recv(out, src=prev) == prev
    work.wait()
    expect(out, values(prev, shape, dtype, salt=4), "recv")
    untouched()
    # and the other way round, with irecv and a blocking send
    back, _ = make(np.zeros(shape, dtype=payload.dtype), layout)
    work = dist.irecv(back, src=nxt, tag=7)
    dist.send(send, dst=prev, tag=7)
    work.wait()
    assert work.is_completed()
    expect(back, values(nxt, shape, dtype, salt=4), "irecv")


for _lay in LAYOUTS:
    for _dt in DTYPES if _lay == "1d" else ("float32",):
        _register(f"send_recv[{_lay},{_dt}]", case_send_recv, _dt, _lay)


def case_recv_any_source(R: int, N: int) -> None:
    import ember
    import ember.distributed as dist

    if R == 0:
        seen = set()
        for _ in range(N - 1):
            t = ember.zeros(3, dtype=ember.int64)
            sender = dist.recv(t, tag=5)
            assert t.tolist() == [sender] * 3, (sender, t.tolist())
            seen.add(sender)
        assert seen == set(range(1, N)), seen
        t = ember.zeros(3, dtype=ember.int64)
        work = dist.irecv(t, tag=3)
        work.wait()
        assert work.source_rank() == int(t[0].item()) == N - 1
    else:
        dist.send(ember.full((3,), R, dtype=ember.int64), dst=0, tag=5)
        if R == N - 1:
            dist.send(ember.full((3,), R, dtype=ember.int64), dst=0, tag=3)


def case_batch_isend_irecv(R: int, N: int) -> None:
    import ember
    import ember.distributed as dist

    nxt, prev = (R + 1) % N, (R - 1) % N
    send_next = ember.full((2, 2), float(R), dtype=ember.float64)
    send_prev = ember.full((4,), R * 10, dtype=ember.int32)
    from_prev = ember.zeros((2, 2), dtype=ember.float64)
    from_next = ember.zeros(4, dtype=ember.int32)
    ops = [dist.P2POp(dist.isend, send_next, nxt), dist.P2POp(dist.irecv, from_prev, prev),
           dist.P2POp(dist.isend, send_prev, prev, tag=1),
           dist.P2POp(dist.irecv, from_next, nxt, tag=1)]
    works = dist.batch_isend_irecv(ops)
    assert len(works) == 4
    for w in works:
        w.wait()
    expect(from_prev, np.full((2, 2), float(prev)), "from previous")
    expect(from_next, np.full(4, nxt * 10, dtype=np.int32), "from next")


_register("recv_any_source[]", case_recv_any_source)
_register("batch_isend_irecv[]", case_batch_isend_irecv)


def case_objects(R: int, N: int) -> None:
    import ember
    import ember.distributed as dist

    objs = [{"rank": R, "s": "x" * R}, [R, (R, 2.5)], None] if R == N - 1 else [0, 0, 0]
    dist.broadcast_object_list(objs, src=N - 1)
    assert objs == [{"rank": N - 1, "s": "x" * (N - 1)}, [N - 1, (N - 1, 2.5)], None], objs
    gathered = [None] * N
    dist.all_gather_object(gathered, {"r": R, "payload": list(range(R * 50))})
    assert gathered == [{"r": r, "payload": list(range(r * 50))} for r in range(N)]
    dst = 1
    box = [None] * N if R == dst else None
    dist.gather_object(("from", R), box, dst=dst)
    if R == dst:
        assert box == [("from", r) for r in range(N)], box
    out = [None]
    dist.scatter_object_list(out, [f"item {r}" * (r + 1) for r in range(N)] if R == 0 else None,
                             src=0)
    assert out == [f"item {R}" * (R + 1)], out
    tensor_obj = [ember.arange(3) + R]
    dist.broadcast_object_list(tensor_obj, src=0)
    assert tensor_obj[0].tolist() == [0, 1, 2]
    if R == 0:
        dist.send_object_list([{"hello": 1}, "there"], dst=N - 1)
    elif R == N - 1:
        got = [None, None]
        assert dist.recv_object_list(got, src=0) == 0
        assert got == [{"hello": 1}, "there"], got


_register("objects[]", case_objects)


def case_async_work(R: int, N: int) -> None:
    """A Work is pending until every rank joined; wait() finishes it and result() returns
    the outputs. Rank 1 joins late, so rank 0's first is_completed() must say False."""
    import ember
    import ember.distributed as dist

    t = ember.full((4,), float(R + 1))
    if R == 1:
        time.sleep(0.3)
    work = dist.all_reduce(t, async_op=True)
    assert isinstance(work, dist.Work)
    if R == 0:
        assert not work.is_completed(), "completed before rank 1 joined"
    assert work.wait() is True
    assert work.is_completed() and work.is_success()
    assert work.result()[0] is t
    expect(t, np.full(4, N * (N + 1) / 2, dtype=np.float32), "async all_reduce")
    # several in flight at once, waited for in reverse order
    ts = [ember.full((3,), float(R + k)) for k in range(3)]
    works = [dist.all_reduce(x, async_op=True) for x in ts]
    for w in reversed(works):
        w.wait()
    for k, x in enumerate(ts):
        expect(x, np.full(3, sum(r + k for r in range(N)), dtype=np.float32), f"in flight {k}")
    out = [ember.zeros(2) for _ in range(N)]
    work = dist.all_gather(out, ember.full((2,), float(R)), async_op=True)
    assert work.wait() and [o.tolist() for o in work.result()] == [[r, r] for r in range(N)]
    work = dist.broadcast(ember.zeros(2), src=0, async_op=True)
    assert work.wait()


def case_zero_copy(R: int, N: int) -> None:
    """A contiguous CPU tensor is reduced in its own memory: the engine gets the tensor's own
    array, data_ptr does not move, and a view taken before sees the result."""
    import ember
    import ember.distributed as dist

    pg = dist.group.WORLD
    seen = []
    engine = pg._engine
    original = engine.allreduce

    def spy(arr, op):
        seen.append(arr)
        return original(arr, op)

    engine.allreduce = spy
    try:
        t = ember.arange(12, dtype=ember.float32).reshape(3, 4)
        view = t[1]
        array = t.numpy()
        ptr = t.data_ptr()
        dist.all_reduce(t)
    finally:
        del engine.allreduce
    assert seen[0] is t._data or np.shares_memory(seen[0], array), "the engine got a copy"
    assert t.data_ptr() == ptr
    expect(view, np.arange(4, 8, dtype=np.float32) * N, "a view of the reduced tensor")
    assert np.array_equal(array, np.arange(12, dtype=np.float32).reshape(3, 4) * N)


def case_version_counter(R: int, N: int) -> None:
    """A collective writes in place and counts the write: a tensor saved for backward and then
    all-reduced makes backward raise PyTorch's in-place error."""
    import ember
    import ember.distributed as dist

    for collective in ("all_reduce", "broadcast", "reduce", "recv", "scatter", "all_gather",
                       "view"):
        w = ember.ones(3, requires_grad=True)
        h = w * 2
        if collective == "view":  # a non-contiguous view, written back through a host buffer
            h = (w * 2).reshape(3, 1) * ember.ones(1, 2)
        loss = (h * h).sum()  # saves h
        before = h._version
        written = True
        if collective == "all_reduce":
            dist.all_reduce(h)
        elif collective == "broadcast":
            dist.broadcast(h, src=0)
            written = R != 0
        elif collective == "reduce":
            dist.reduce(h, dst=0)
            written = R == 0
        elif collective == "recv":
            if R == 0:
                dist.send(ember.ones(3), dst=1)
            elif R == 1:
                dist.recv(h, src=0)
            written = R == 1
        elif collective == "scatter":
            dist.scatter(h, [ember.ones(3)] * N if R == 0 else None, src=0)
        elif collective == "all_gather":
            dist.all_gather([h] + [ember.zeros(3) for _ in range(N - 1)], ember.ones(3))
        else:
            dist.all_reduce(h[:, 0])
        if not written:  # this rank's tensor was only read
            continue
        assert h._version > before, f"{collective}: the write was not counted"
        try:
            loss.backward()
        except RuntimeError as exc:
            assert "modified by an inplace operation" in str(exc), str(exc)
        else:
            raise AssertionError(f"{collective}: backward did not notice the in-place write")


def case_strict_device(R: int, N: int) -> None:
    """Tensors on the strict test device go through a host buffer and stay on that device."""
    import ember
    import ember.distributed as dist
    from ember.testing import register_strict_device

    register_strict_device()
    for dtype in ("float32", "int64", "bool"):
        case_all_reduce("SUM", dtype, "3d", R, N, device="strict")
        case_all_reduce("MAX", dtype, "strided", R, N, device="strict")
    xs = [values(r, (2, 3), "float64") for r in range(N)]
    t = ember.from_numpy(xs[R]).to("strict")
    outs = [ember.zeros((2, 3), dtype=ember.float64, device="strict") for _ in range(N)]
    dist.all_gather(outs, t)
    for r, o in enumerate(outs):
        assert o.device.type == "strict"
        expect(o, xs[r], "strict all_gather")
    b = ember.from_numpy(xs[R]).to("strict")
    dist.broadcast(b, src=N - 1)
    assert b.device.type == "strict"
    expect(b, xs[N - 1], "strict broadcast")
    out = ember.zeros((N, 2, 3), dtype=ember.float64, device="strict")
    dist.all_gather_into_tensor(out, t)
    expect(out, np.stack(xs), "strict all_gather_into_tensor")
    rs = ember.zeros(3, dtype=ember.float64, device="strict")
    dist.reduce_scatter_tensor(rs, ember.from_numpy(np.arange(3.0 * N)).to("strict"))
    expect(rs, np.arange(3.0 * N)[3 * R:3 * R + 3] * N, "strict reduce_scatter_tensor")
    objs = [ember.ones(2, device="strict") * R]
    dist.broadcast_object_list(objs, src=N - 1)
    assert objs[0].device.type == "strict" and objs[0].tolist() == [N - 1.0] * 2


_register("async_work[]", case_async_work)
_register("zero_copy[]", case_zero_copy)
_register("version_counter[]", case_version_counter)
_register("strict_device[]", case_strict_device)


def rank_main(emit) -> None:
    """Run every case in this rank, reporting each (None, or the traceback)."""
    import datetime

    import ember.distributed as dist

    dist.init_process_group(timeout=datetime.timedelta(seconds=30))
    R, N = dist.get_rank(), dist.get_world_size()
    results = {}
    for name, fn in CASES.items():
        MISMATCHES.clear()
        try:
            fn(R, N)
            results[name] = "\n".join(MISMATCHES) or None
        except Exception:
            results[name] = "\n".join([*MISMATCHES, traceback.format_exc()])
        dist.barrier()  # no rank starts a case (and sends) before every rank ended this one
    emit(results)
    dist.destroy_process_group()


# -- the pytest side --------------------------------------------------------------------------
RANK_SCRIPT = f"""
import importlib.util, sys
sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})
spec = importlib.util.spec_from_file_location("collective_cases", {str(Path(__file__))!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
module.rank_main(emit)
"""

FAMILIES = sorted({family(name) for name in CASES})


@pytest.fixture(scope="module", params=[2, 4], ids=["2ranks", "4ranks"])
def sweep(request, tmp_path_factory):
    n = request.param
    result = run_ranks(n, RANK_SCRIPT, tmp_path_factory.mktemp(f"collectives{n}"), timeout=120)
    assert result.returncode == 0, result.output[-4000:]
    for r in range(n):
        assert r in result.values and len(result.values[r]) == 1, (
            f"rank {r} reported nothing\n{result.output[-4000:]}")
    return n, {r: result.values[r][0] for r in range(n)}


@pytest.mark.parametrize("name", FAMILIES)
def test_collective_against_numpy(sweep, name):
    n, reports = sweep
    names = [c for c in CASES if family(c) == name]
    failures = []
    for r in range(n):
        for c in names:
            assert c in reports[r], f"rank {r} did not run {c}"
            if reports[r][c] is not None:
                failures.append(f"--- {c} on rank {r} of {n}:\n{reports[r][c]}")
    assert not failures, "\n".join(failures[:6]) + f"\n({len(failures)} failures)"


def test_every_dtype_and_op_is_covered():
    """The sweep really has every (op, dtype) pair that is valid, and the invalid ones are the
    ones the argument checks refuse (tests/distributed/test_faults.py)."""
    pairs = {tuple(c[len("all_reduce["):-1].split(",")) for c in CASES
             if family(c) == "all_reduce"}
    assert len(pairs) == sum(valid(o, d) for o in OPS for d in DTYPES) == 46
    assert {("BAND", "float32"), ("AVG", "bool")}.isdisjoint(pairs)


def test_reduce_np_reference():
    """The NumPy reference itself: integer AVG truncates toward zero, bool SUM is OR."""
    a, b = np.array([-3, 3, -4, 5]), np.array([-2, 4, -3, 5])
    assert reduce_np([a, b], "AVG").tolist() == [-2, 3, -3, 5]
    assert reduce_np([np.array([True, False]), np.array([False, False])], "SUM").tolist() == [
        True, False]
    assert reduce_np([np.array([200], np.uint8), np.array([100], np.uint8)], "SUM")[0] == 44
