"""DeviceMesh, DTensor and the functional collectives on 2 and 4 MPI ranks.

One launch per world size runs every case below in each rank (this module is loaded there by
path). Every rank draws the same global tensors from one seed, so each case checks its
DTensor against the plain computation on the whole tensor: shards as ``torch.chunk`` cuts
them, redistributions between every pair of placements, ops on sharded and replicated
DTensors, gradients through them (tensor-parallel linear layers included), and the errors
PyTorch gives.
"""

from __future__ import annotations

import pytest
from mpi_launch import case_launches, case_registry, check, check_case, distributed_marks

pytestmark = distributed_marks()
CASES, case = case_registry()


def raises(exc, fragment, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc as e:
        check(fragment in str(e), f"{type(e).__name__}: {e}")
    else:
        raise AssertionError(f"no {exc.__name__} ({fragment})")


def data(*shape, seed=0):
    import ember

    g = ember.Generator().manual_seed(seed)
    return ember.randn(*shape, generator=g, dtype=ember.float64)


def mesh1(N):
    from ember.distributed.device_mesh import init_device_mesh

    return init_device_mesh("cpu", (N,))


@case
def case_mesh_layout(R, N, out):
    import ember.distributed as dist
    from ember.distributed.device_mesh import DeviceMesh, init_device_mesh

    m = mesh1(N)
    check(m.ndim == 1 and m.shape == (N,) and m.size() == N and m.get_rank() == R)
    check(m.get_local_rank() == R and m.get_coordinate() == [R])
    check(m.get_group() is dist.group.WORLD or dist.get_world_size(m.get_group()) == N)
    check(m.mesh.tolist() == list(range(N)))
    if N == 4:
        m2 = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
        check(m2.get_coordinate() == [R // 2, R % 2], m2.get_coordinate())
        tp, dp = m2.get_group("tp"), m2.get_group("dp")
        check(dist.get_process_group_ranks(tp) == [R - R % 2, R - R % 2 + 1])
        check(dist.get_process_group_ranks(dp) == [R % 2, R % 2 + 2])
        check(m2.get_local_rank("tp") == R % 2 and m2.get_local_rank(0) == R // 2)
        sub = m2["tp"]
        check(sub.mesh.tolist() == [R - R % 2, R - R % 2 + 1] and sub.mesh_dim_names == ("tp",))
        check(sub.get_group() is tp)
        raises(RuntimeError, "Optional kwarg `mesh_dim` needs to be specified", m2.get_group)
        raises(KeyError, "Invalid mesh_dim_names", m2.__getitem__, "pp")
        raises(KeyError, "ascending order", m2.__getitem__, ("tp", "dp"))
        check("dp=2, tp=2" in repr(m2), repr(m2))
        # a mesh of the ranks in another order, made on every rank
        rev = DeviceMesh("cpu", list(reversed(range(N))))
        check(rev.get_local_rank() == N - 1 - R)
    raises(RuntimeError, "Mesh should not be bigger", init_device_mesh, "cpu", (N + 1,))
    raises(RuntimeError, "same length", init_device_mesh, "cpu", (N,),
           mesh_dim_names=("a", "b"))
    raises(RuntimeError, "Device type with index is not supported", init_device_mesh,
           "cpu:0", (N,))


@case
def case_shards_are_torch_chunks(R, N, out):
    import ember
    from ember.distributed.tensor import Replicate, Shard, distribute_tensor
    from ember.distributed.tensor._utils import compute_local_shape_and_global_offset

    m = mesh1(N)
    for shape, dim in [((7, 3), 0), ((5, 6), 1), ((3, 4), 0), ((2, 3, 5), -1)]:
        x = data(*shape)
        d = distribute_tensor(x, m, [Shard(dim)])
        chunks = x.chunk(N, dim)
        mine = chunks[R] if R < len(chunks) else x.narrow(dim, 0, 0)
        check(d.shape == x.shape and d.placements == (Shard(dim % x.ndim),))
        check(ember.equal(d.to_local(), mine), (shape, dim, d.to_local().shape))
        check(ember.equal(d.full_tensor(), x))
        lshape, offset = compute_local_shape_and_global_offset(x.shape, m, [Shard(dim % x.ndim)])
        check(lshape == tuple(mine.shape), (lshape, mine.shape))
        start = sum(c.shape[dim] for c in chunks[:R])
        check(offset[dim % x.ndim] == min(start, x.shape[dim]), offset)
    r = distribute_tensor(data(4, 4), m, [Replicate()])
    check(ember.equal(r.to_local(), data(4, 4)))
    # rank 0's data is what every rank gets (src_data_rank=0): other ranks pass garbage
    mine = data(6, 2) if R == 0 else ember.full((6, 2), -1.0, dtype=ember.float64)
    check(ember.equal(distribute_tensor(mine, m, [Shard(0)]).full_tensor(), data(6, 2)))
    local = distribute_tensor(mine, m, [Replicate()], src_data_rank=None).to_local()
    check(ember.equal(local, mine))


@case
def case_redistribute_every_pair(R, N, out):
    import ember
    from ember.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

    m = mesh1(N)
    x = data(6, 5)
    kinds = [Shard(0), Shard(1), Replicate()]
    for a in kinds:
        for b in kinds:
            d = distribute_tensor(x, m, [a]).redistribute(m, [b])
            check(d.placements == (b,))
            check(ember.equal(d.full_tensor(), x), (a, b))
            check(ember.equal(d.to_local(), distribute_tensor(x, m, [b]).to_local()), (a, b))
    terms = data(3, 4, seed=10 + R)
    total = sum(data(3, 4, seed=10 + k) for k in range(N))
    p = DTensor.from_local(terms, m, [Partial()])
    check(ember.allclose(p.full_tensor(), total))
    s = p.redistribute(m, [Shard(0)])
    chunks = total.chunk(N)  # 3 rows on 4 ranks: three chunks, the last rank holds none
    check(ember.allclose(s.full_tensor(), total))
    check(s.to_local().shape[0] == (chunks[R].shape[0] if R < len(chunks) else 0))
    hi = DTensor.from_local(terms, m, [Partial("max")]).full_tensor()
    check(ember.equal(hi, ember.stack([data(3, 4, seed=10 + k) for k in range(N)]).amax(0)))
    avg = DTensor.from_local(terms, m, [Partial("avg")]).full_tensor()
    check(ember.allclose(avg, total / N))
    raises(RuntimeError, "Can not redistribute to Partial",
           distribute_tensor(x, m, [Replicate()]).redistribute, m, [Partial()])
    raises(RuntimeError, "placements is needed", distribute_tensor(x, m, [Shard(0)])
           .redistribute, m)
    raises(ValueError, "same length as `device_mesh.ndim`", distribute_tensor, x, m,
           [Shard(0), Shard(1)])


@case
def case_two_d_mesh_and_strided_shard(R, N, out):
    import ember
    from ember.distributed.device_mesh import init_device_mesh
    from ember.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor
    from ember.distributed.tensor.placement_types import _StridedShard

    if N != 4:
        return
    m = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    x = ember.arange(64, dtype=ember.float64).reshape(8, 8)
    # PyTorch's docstring: [Shard(0), Shard(0)] gives rank r rows 2r..2r+1;
    # [_StridedShard(0, split_factor=2), Shard(0)] gives ranks 0..3 row blocks 0, 2, 1, 3
    d = distribute_tensor(x, m, [Shard(0), Shard(0)])
    check(ember.equal(d.to_local(), x[2 * R:2 * R + 2]))
    s = distribute_tensor(x, m, [_StridedShard(0, split_factor=2), Shard(0)])
    block = [0, 2, 1, 3][R]
    check(ember.equal(s.to_local(), x[2 * block:2 * block + 2]), s.to_local())
    check(ember.equal(s.full_tensor(), x))
    check(ember.equal(s.redistribute(m, [Shard(0), Shard(0)]).to_local(), d.to_local()))
    for pl in ([Shard(0), Shard(1)], [Replicate(), Shard(1)], [Shard(1), Replicate()],
               [Shard(1), Shard(0)]):
        y = d.redistribute(m, pl)
        check(ember.equal(y.full_tensor(), x), pl)
        check(ember.equal(y.to_local(), distribute_tensor(x, m, pl).to_local()), pl)
    # local rows from each rank's coordinates, global shape from the even-shard rule
    local = x[2 * R:2 * R + 2]
    f = DTensor.from_local(local, m, [Shard(0), Shard(0)])
    check(f.shape == (8, 8) and ember.equal(f.full_tensor(), x))
    r = DTensor.from_local(x, m, [Replicate(), Replicate()])
    check(ember.equal((r + 1).full_tensor(), x + 1))
    tp = m["tp"]
    t = distribute_tensor(x, tp, [Shard(1)])
    check(ember.equal(t.to_local(), x.chunk(2, 1)[R % 2]))


@case
def case_ops_on_dtensors(R, N, out):
    import numpy as np

    import ember
    from ember.distributed.tensor import Replicate, Shard, distribute_tensor

    m = mesh1(N)
    x, y = data(6, 4), data(6, 4, seed=1)
    dx, dy = distribute_tensor(x, m, [Shard(0)]), distribute_tensor(y, m, [Shard(0)])
    z = (dx * dy + 2).tanh()
    check(z.placements == (Shard(0),) and z.shape == (6, 4))  # ran on the local shards
    check(ember.allclose(z.full_tensor(), (x * y + 2).tanh()))
    check(ember.allclose(ember.where(dx > 0, dx, dy).full_tensor(), ember.where(x > 0, x, y)))
    check((dx > 0).dtype == ember.bool and dx.float().dtype == ember.float32)
    w = distribute_tensor(data(4, 3, seed=2), m, [Replicate()])
    check(ember.allclose((dx @ w).full_tensor(), x @ data(4, 3, seed=2)))
    check(ember.allclose(dx.sum(), x.sum()) and abs(dx.mean().item() - x.mean().item()) < 1e-12)
    check(ember.allclose(dx.softmax(-1).full_tensor(), x.softmax(-1)))
    check(ember.allclose(dx.t().full_tensor(), x.t()) and dx.t().shape == (4, 6))
    check(ember.allclose(dx[1:4, 2].full_tensor(), x[1:4, 2]))
    check(ember.equal(ember.cat([dx, dy]).full_tensor(), ember.cat([x, y])))
    check(ember.allclose((dx + dy.redistribute(m, [Replicate()])).full_tensor(), x + y))
    c = dx.clone()
    c.add_(1)  # in place on the shard
    check(c.placements == (Shard(0),) and ember.allclose(c.full_tensor(), x + 1))
    c[0, 0] = 100.0  # a write through the whole tensor, back into the shards
    check(c.placements == (Shard(0),) and c.full_tensor()[0, 0].item() == 100.0)
    check(float(dx.sum()) == float(x.sum()) or abs(float(dx.sum()) - float(x.sum())) < 1e-12)
    check(len(dx) == 6 and dx.numel() == 24 and dx.dim() == 2 and dx.stride() == (4, 1))
    # foreach ops run tensor by tensor; a replicated scalar DTensor is whole on every rank
    a, b = dx.clone(), distribute_tensor(y, m, [Replicate()])
    ember._foreach_mul_([a, b], 2.0)
    check(ember.allclose(a.full_tensor(), 2 * x) and ember.allclose(b.to_local(), 2 * y))
    sums = ember._foreach_add([a, b], [dx, dy.redistribute(m, [Replicate()])])
    check(sums[0].placements == (Shard(0),) and ember.allclose(sums[0].full_tensor(), 3 * x))
    check(ember.allclose(sums[1].full_tensor(), 2 * y + y))
    three = distribute_tensor(ember.tensor(3.0, dtype=ember.float64), m, [Replicate()])
    c3 = dx * three
    check(c3.placements == (Shard(0),) and ember.allclose(c3.full_tensor(), 3 * x))
    raises(RuntimeError, "got mixed torch.Tensor and DTensor", lambda: dx + x)
    check(ember.allclose((dx + ember.tensor(1.0, dtype=ember.float64)).full_tensor(), x + 1))
    raises(RuntimeError, "no global array", np.asarray, dx._data)
    raises(TypeError, "", np.add, dx._data, 1)  # NumPy refuses it: nothing computes on it
    check("DTensor(local_tensor=" in repr(dx) and "Shard(dim=0)" in repr(dx))


@case
def case_gradients_through_dtensors(R, N, out):
    import ember
    from ember.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor

    m = mesh1(N)
    x = data(5, 3)
    leaf = distribute_tensor(x.clone().requires_grad_(), m, [Shard(0)])
    check(leaf.requires_grad and leaf.is_leaf)
    w = distribute_tensor(data(3, 2, seed=3).requires_grad_(), m, [Replicate()])
    loss = ((leaf @ w).sin() * leaf.sum(1, keepdim=True)).sum()
    loss.backward()
    xr, wr = x.clone().requires_grad_(), data(3, 2, seed=3).requires_grad_()
    ((xr @ wr).sin() * xr.sum(1, keepdim=True)).sum().backward()
    check(leaf.grad.placements == (Shard(0),))
    check(ember.allclose(leaf.grad.full_tensor(), xr.grad), "input grad")
    check(w.grad.placements == (Replicate(),) and ember.allclose(w.grad.to_local(), wr.grad))
    # from_local keeps the local tensor: its gradient arrives there
    local = x.chunk(N)[R].clone().requires_grad_() if R < len(x.chunk(N)) else None
    if local is not None and N == 2:
        d = DTensor.from_local(local, m, [Shard(0)], shape=x.shape)
        (d.full_tensor() ** 2).sum().backward()
        check(ember.allclose(local.grad, 2 * local.detach()))
    # redistribute's backward: Shard -> Replicate gradients go back sharded
    a = distribute_tensor(x.clone().requires_grad_(), m, [Shard(1)])
    (a.redistribute(m, [Replicate()]).to_local() * 3).sum().backward()
    check(a.grad.placements == (Shard(1),) and ember.allclose(a.grad.full_tensor(),
                                                              ember.full_like(x, 3.0)))


@case
def case_tensor_parallel_mlp(R, N, out):
    """Column-wise then row-wise linear layers (Megatron's MLP) on sharded weights: outputs
    and every gradient equal the single-process MLP's."""
    import ember
    import ember.nn.functional as F
    from ember.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

    m = mesh1(N)
    x = data(4, 6)
    w1, b1, w2, b2 = data(8, 6, seed=1), data(8, seed=2), data(5, 8, seed=3), data(5, seed=4)
    params = [t.clone().requires_grad_() for t in (w1, b1, w2, b2)]
    xr = x.clone().requires_grad_()
    ref = F.linear(F.gelu(F.linear(xr, params[0], params[1])), params[2], params[3])
    (ref ** 2).sum().backward()
    W1 = distribute_tensor(w1.clone().requires_grad_(), m, [Shard(0)])
    B1 = distribute_tensor(b1.clone().requires_grad_(), m, [Shard(0)])
    W2 = distribute_tensor(w2.clone().requires_grad_(), m, [Shard(1)])
    B2 = distribute_tensor(b2.clone().requires_grad_(), m, [Replicate()])
    xl = x.clone().requires_grad_()  # each rank's replica: its gradient sums the ranks'
    X = DTensor.from_local(xl, m, [Replicate()])
    h = F.linear(X, W1, B1)
    check(h.placements == (Shard(1),) and h.to_local().shape == (4, 8 // N), h.placements)
    y = F.linear(F.gelu(h), W2, B2)
    check(y.placements == (Replicate(),))
    check(ember.allclose(y.to_local(), ref), "forward")
    (y ** 2).sum().backward()
    for name, d, p in zip(("w1", "b1", "w2", "b2"), (W1, B1, W2, B2), params):
        check(d.grad.placements == d.placements, name)
        check(ember.allclose(d.grad.full_tensor(), p.grad), name)
    check(ember.allclose(xl.grad, xr.grad), "input gradient (all-reduced)")
    # to_local(grad_placements=[Partial()]): the local gradient is a term, summed backward
    a = x.clone().requires_grad_()
    local = DTensor.from_local(a, m, [Replicate()]).to_local(grad_placements=[Partial()])
    (local * (R + 1)).sum().backward()
    check(ember.allclose(a.grad, ember.full_like(x, sum(k + 1 for k in range(N)))))


@case
def case_parallelize_module(R, N, out):
    """PyTorch's tensor_parallel_example (a Megatron MLP by ColwiseParallel/RowwiseParallel),
    a plan with a wildcard, SequenceParallel around a LayerNorm and PrepareModuleInput, trained
    with AdamW(foreach=True) against the same model in one process."""
    import ember
    import ember.nn as nn
    from ember.distributed.device_mesh import init_device_mesh
    from ember.distributed.tensor import DTensor, Replicate, Shard
    from ember.distributed.tensor.parallel import (
        ColwiseParallel,
        PrepareModuleInput,
        RowwiseParallel,
        SequenceParallel,
        parallelize_module,
    )

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(8)
            self.up = nn.Linear(8, 4 * N)
            self.down = nn.Linear(4 * N, 8)

        def forward(self, x):
            return x + self.down(ember.relu(self.up(self.norm(x))))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([Block(), Block()])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    def make():
        ember.manual_seed(7)
        return Net().double()

    m = mesh1(N)
    tp, ref = make(), make()
    plan = {"layers.*.up": ColwiseParallel(), "layers.*.down": RowwiseParallel()}
    parallelize_module(tp, m, plan)
    check(tp.layers[1].up.weight.placements == (Shard(0),))
    check(tp.layers[0].down.weight.placements == (Shard(1),))
    check(tp.layers[0].down.bias.placements == (Replicate(),))
    opt = ember.optim.AdamW(tp.parameters(), lr=0.05, foreach=True)
    ref_opt = ember.optim.AdamW(ref.parameters(), lr=0.05, foreach=True)
    for i in range(3):
        x = data(2, 6, 8, seed=30 + i)
        y = tp(x)
        check(type(y) is ember.Tensor and y.shape == (2, 6, 8), (type(y), y.shape))
        check(ember.allclose(y, ref(x)), f"forward {i}")
        y.pow(2).sum().backward()
        ref(x).pow(2).sum().backward()
        opt.step()
        ref_opt.step()
        opt.zero_grad()
        ref_opt.zero_grad()
        for (name, p), q in zip(tp.named_parameters(), ref.parameters()):
            whole = p.full_tensor() if isinstance(p, DTensor) else p  # the norms: plain
            check(ember.allclose(whole, q), f"step {i}: {name}")
    # sequence parallelism: each rank feeds its slice of the sequence (dim 1) to the norm;
    # PrepareModuleInput gathers the norm's sharded output for a replicated consumer
    seq = nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 3)).double()
    whole = data(2, 2 * N, 8, seed=40)
    want = seq(whole)
    parallelize_module(seq, m, {"0": SequenceParallel(), "1": PrepareModuleInput(
        input_layouts=Shard(1), desired_input_layouts=Replicate(), use_local_output=True)})
    check(seq[0].weight.placements == (Replicate(),))
    normed = seq[0](whole.chunk(N, 1)[R])
    check(normed.placements == (Shard(1),) and normed.shape == (2, 2 * N, 8))
    check(ember.allclose(seq(whole.chunk(N, 1)[R]), want))
    raises(ValueError, "only accepts a 1D DeviceMesh", parallelize_module, make(),
           init_device_mesh("cpu", (1, N)), ColwiseParallel())
    raises(NotImplementedError, "only support nn.Linear and nn.Embedding",
           parallelize_module, nn.ReLU(), m, ColwiseParallel())
    raises(ValueError, "no submodule matches", parallelize_module, make(), m,
           {"blocks.*": ColwiseParallel()})


@case
def case_module_parameters(R, N, out):
    import copy

    import ember
    import ember.nn as nn
    from ember.distributed.tensor import (
        DTensor,
        Replicate,
        Shard,
        distribute_module,
        distribute_tensor,
    )

    m = mesh1(N)
    ember.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2)).double()
    ref = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2)).double()
    ref.load_state_dict(net.state_dict())

    def shard_first(name, module, mesh):
        if name == "0":
            for key, p in list(module.named_parameters(recurse=False)):
                module.register_parameter(key, nn.Parameter(
                    distribute_tensor(p.data, mesh, [Shard(0)])))

    distribute_module(net, m, shard_first,
                      input_fn=lambda mod, inputs, mesh: tuple(
                          DTensor.from_local(i, mesh, [Replicate()]) for i in inputs),
                      output_fn=lambda mod, outputs, mesh: outputs.to_local())
    check(isinstance(net[0].weight, DTensor) and isinstance(net[0].weight, nn.Parameter))
    w0 = net[0].weight
    net.float()  # Module._apply swaps data: the same parameter, its local tensor converted
    check(net[0].weight is w0 and w0.dtype == ember.float32
          and w0.to_local().dtype == ember.float32, w0.to_local().dtype)
    net.double()
    twin = copy.deepcopy(net)  # DTensor parameters stay DTensor parameters, their own data
    check(isinstance(twin[0].weight, nn.Parameter) and isinstance(twin[0].weight, DTensor))
    check(twin[0].weight.to_local() is not net[0].weight.to_local())
    check(net[0].weight.placements == (Shard(0),) and net[2].weight.placements == (Replicate(),))
    check(len(list(net.parameters())) == 4)
    x = data(3, 4)
    out_ = net(x)
    check(type(out_) is ember.Tensor and ember.allclose(out_, ref(x)))
    out_.sum().backward()
    ref(x).sum().backward()
    for (name, p), q in zip(net.named_parameters(), ref.parameters()):
        check(ember.allclose(p.grad.full_tensor(), q.grad), name)
    total = ember.nn.utils.clip_grad_norm_(net.parameters(), 0.5)
    want = ember.nn.utils.clip_grad_norm_(ref.parameters(), 0.5)
    check(abs(total.full_tensor().item() - want.item()) < 1e-12, "clip total norm")
    for (name, p), q in zip(net.named_parameters(), ref.parameters()):
        check(ember.allclose(p.grad.full_tensor(), q.grad), f"clipped {name}")
    # elementwise optimizers step the shards: the same parameters as the whole tensors'
    for make in (lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.9),
                 lambda ps: ember.optim.AdamW(ps, lr=0.01)):
        opt, ref_opt = make(net.parameters()), make(ref.parameters())
        for step in range(3):
            opt.zero_grad()
            ref_opt.zero_grad()
            check(all(p.grad is None for p in net.parameters()), "zero_grad")
            xs = data(3, 4, seed=20 + step)
            (net(xs) ** 2).sum().backward()
            (ref(xs) ** 2).sum().backward()
            opt.step()
            ref_opt.step()
        for (name, p), q in zip(net.named_parameters(), ref.parameters()):
            check(ember.allclose(p.full_tensor(), q), f"after steps: {name}")
        first = opt.state[net[0].weight]  # filed under the parameter, this rank's shard
        check(first and all(v.shape == net[0].weight.to_local().shape
                            for k, v in first.items() if k != "step"), list(first))
    raises(RuntimeError, "needs whole parameters",
           ember.optim.Adafactor(net.parameters(), lr=0.01).step)


@case
def case_factories(R, N, out):
    import ember
    import ember.distributed.tensor as dt

    m = mesh1(N)
    z = dt.zeros(7, 2, device_mesh=m, placements=[dt.Shard(0)])
    check(z.shape == (7, 2) and z.to_local().shape == ember.zeros(7, 2).chunk(N)[R].shape
          if R < len(ember.zeros(7, 2).chunk(N)) else z.to_local().shape[0] == 0)
    check(ember.equal(dt.ones(3, 4, device_mesh=m).full_tensor(), ember.ones(3, 4)))
    f = dt.full((4, 2), 1.5, device_mesh=m, placements=[dt.Shard(1)], requires_grad=True)
    check(f.requires_grad and ember.equal(f.full_tensor(), ember.full((4, 2), 1.5)))
    ember.manual_seed(5)
    r = dt.randn(6, 3, device_mesh=m, placements=[dt.Shard(0)])
    ember.manual_seed(5)
    check(ember.equal(r.full_tensor(), ember.randn(6, 3)))


@case
def case_functional_collectives(R, N, out):
    import ember
    import ember.distributed._functional_collectives as funcol

    m = mesh1(N)
    g = m.get_group()
    x = data(2, 3, seed=R)
    every = [data(2, 3, seed=k) for k in range(N)]
    s = funcol.all_reduce(x, "sum", g)
    check(ember.allclose(funcol.wait_tensor(s), sum(every)) and ember.equal(x, every[R]))
    check(ember.equal(funcol.all_gather_tensor(x, 0, m), ember.cat(every, 0)))
    check(ember.equal(funcol.all_gather_tensor(x, 1, (m, 0)), ember.cat(every, 1)))
    big = data(2 * N, 2 * N, seed=R)
    bigs = [data(2 * N, 2 * N, seed=k) for k in range(N)]
    check(ember.allclose(funcol.reduce_scatter_tensor(big, "sum", 0, g),
                         sum(bigs).chunk(N, 0)[R]))
    check(ember.allclose(funcol.reduce_scatter_tensor(big, "sum", 1, g),
                         sum(bigs).chunk(N, 1)[R]))
    raises(ValueError, "Unrecognized reduce_op", funcol.all_reduce, x, "mean", g)
    # all_to_all_single with splits: rank r sends k+1 rows to rank k
    rows = ember.arange(sum(k + 1 for k in range(N)), dtype=ember.float64) + 100 * R
    got = funcol.all_to_all_single(rows, [R + 1] * N, [k + 1 for k in range(N)], g)
    start = sum(k + 1 for k in range(R))
    want = ember.cat([ember.arange(start, start + R + 1, dtype=ember.float64) + 100 * k
                      for k in range(N)])
    check(ember.equal(got, want), got)
    # the autograd forms: all-gather's backward reduce-scatters
    leaf = x.clone().requires_grad_()
    (funcol.all_gather_tensor_autograd(leaf, 0, g) * (R + 1)).sum().backward()
    check(ember.allclose(leaf.grad, ember.full_like(x, sum(k + 1 for k in range(N)))))
    leaf = rows.clone().requires_grad_()
    y = funcol.all_to_all_single_autograd(leaf, [R + 1] * N, [k + 1 for k in range(N)], g)
    (y * 2).sum().backward()
    check(ember.equal(leaf.grad, ember.full_like(rows, 2.0)))


rank_main, runs = case_launches(__file__, "dtensor_cases", CASES)


@pytest.mark.parametrize("n", [2, 4], ids=["2ranks", "4ranks"])
@pytest.mark.parametrize("name", list(CASES))
def test_dtensor_case(runs, n, name):
    check_case(runs[n], n, name)


def test_import_costs_no_dispatch():
    """Importing the DTensor modules (transformers does, at import) leaves dispatch off."""
    import subprocess
    import sys

    code = ("import ember, ember.overrides as o\n"
            "import ember.distributed.tensor, ember.distributed.device_mesh\n"
            "import ember.distributed.fsdp, ember.distributed._functional_collectives\n"
            "import ember.distributed._composable.fsdp\n"
            "assert not o.is_active()\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_placements():
    from ember.distributed.tensor import Partial, Replicate, Shard
    from ember.distributed.tensor.placement_types import _StridedShard

    assert Shard(0) == Shard(0) and Shard(0) != Shard(1) and Shard(0) != _StridedShard(0, 2)
    assert not isinstance(_StridedShard(0, 2), Shard)
    assert repr(Shard(1)) == "Shard(dim=1)" and repr(Replicate()) == "Replicate()"
    assert repr(Partial()) == "Partial(sum)" and Partial().is_partial("sum")
    assert {Shard(0), Shard(0), Replicate()} == {Shard(0), Replicate()}
    assert Shard.local_shard_size_and_offset(7, 4, 3) == (1, 6)
    assert Shard.local_shard_size_and_offset(3, 4, 3) == (0, 3)
    assert _StridedShard(0, 2).local_shard_size_and_offset(8, 2, 1) == (4, [2, 3, 6, 7])
    with pytest.raises(ValueError, match="unknown reduce_op"):
        Partial("mean")
