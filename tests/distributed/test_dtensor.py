"""DeviceMesh, DTensor and the functional collectives on 2 and 4 MPI ranks.

One launch per world size runs every case below in each rank (this module is loaded there by
path). Every rank draws the same global tensors from one seed, so each case checks its
DTensor against the plain computation on the whole tensor: shards as ``torch.chunk`` cuts
them, redistributions between every pair of placements, ops on sharded and replicated
DTensors, gradients through them (tensor-parallel linear layers included), and the errors
PyTorch gives. The sharding rules' cases check each result's placements against PyTorch's
strategies, that it ran without communication where PyTorch needs none, its whole tensor and
the gradient of every input (Llama-2's tensor-parallel attention among them).
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
    return ember.randn(shape, generator=g, dtype=ember.float64)


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


# -- sharding rules: ops that keep their operands sharded ---------------------------------------
class no_comm:
    """A block in which any collective raises: what PyTorch runs without communication must
    run on the local tensors."""

    NAMES = ("all_gather", "all_reduce", "broadcast", "reduce_scatter", "all_to_all",
             "all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single")

    def __enter__(self):
        import ember.distributed.distributed_c10d as c10d

        def refuse(*args, **kwargs):
            raise AssertionError("a collective where the sharding rule needs none")

        self.saved = {n: getattr(c10d, n) for n in self.NAMES if hasattr(c10d, n)}
        for n in self.saved:
            setattr(c10d, n, refuse)

    def __exit__(self, *exc):
        import ember.distributed.distributed_c10d as c10d

        for n, f in self.saved.items():
            setattr(c10d, n, f)
        return False


def close(a, b, tol=1e-10):
    import ember

    return a.shape == b.shape and ember.allclose(a, b, rtol=tol, atol=tol)


def check_rule(m, fn, inputs, placements, want, what, local=True):
    """``fn`` on DTensors of ``inputs`` placed as ``placements`` (None: a plain value passed
    as is) gives a DTensor placed ``want`` (``local``: computed without communication) whose
    whole tensor and the gradients of every input equal the plain computation's."""
    from ember.distributed.tensor import distribute_tensor

    leaves = [t.clone().requires_grad_(t.is_floating_point()) for t in inputs]
    ref = fn(*leaves)
    dts = [t if pl is None else distribute_tensor(t.clone().requires_grad_(
        t.is_floating_point()), m, pl) for t, pl in zip(inputs, placements)]
    if local:
        with no_comm():
            out = fn(*dts)
    else:
        out = fn(*dts)
    check(out.placements == tuple(want), f"{what}: {out.placements} != {tuple(want)}")
    check(close(out.full_tensor(), ref), f"{what}: values")
    if not ref.requires_grad:
        return out
    weights = data(*ref.shape, seed=99).to(ref.dtype)
    (ref * weights).sum().backward()
    (out.full_tensor() * weights).sum().backward()
    for i, (leaf, d, pl) in enumerate(zip(leaves, dts, placements)):
        if pl is None or leaf.grad is None:
            continue
        check(d.grad is not None and d.grad.placements == d.placements, f"{what}: grad {i}")
        check(close(d.grad.full_tensor(), leaf.grad), f"{what}: gradient of input {i}")
    return out


@case
def case_view_rules(R, N, out):
    """views map a shard through the shape change as PyTorch's _view_ops do"""
    import ember
    from ember.distributed.tensor import Replicate, Shard
    from ember.distributed.tensor.placement_types import _StridedShard

    m = mesh1(N)
    S, Rep = Shard, Replicate()
    x = data(2, 2 * N, 8 * N)
    heads = (2, 2 * N, 2 * N, 4)
    for fn, pl, want, what in [
        (lambda t: t.view(*heads), S(2), S(2), "split keeps the first part"),
        (lambda t: t.view(2, 2 * N, -1, 4), S(2), S(2), "split with -1"),
        (lambda t: t.reshape(2, 2 * N, 2 * N, 4), S(1), S(1), "untouched dim"),
        (lambda t: t.view(2, 2 * N, 2 * N, 4).reshape(2, 2 * N, -1), S(2), S(2),
         "merge keeps the first dim's shard"),
        (lambda t: t.view(2, 2 * N, 2 * N, 4).flatten(2), S(2), S(2), "flatten"),
        (lambda t: t.unflatten(2, (2 * N, -1)), S(2), S(2), "unflatten"),
        (lambda t: t.unflatten(1, (2, N)), S(1), S(1) if 2 % N == 0 else Rep,
         "a split whose first part does not divide by the mesh gathers"),
        (lambda t: t.view(4 * N, 8 * N), S(1), _StridedShard(0, split_factor=2),
         "merging a later dim: strided"),
        (lambda t: t.view(4 * N, 8 * N).view(2, 2 * N, 8 * N), S(1), S(1),
         "the strided shard splits back"),
        (lambda t: t.transpose(0, 1).flatten(), S(1), S(0), "flatten all, first dim sharded"),
        (lambda t: t.transpose(1, 2), S(1), S(2), "transpose"),
        (lambda t: t.transpose(1, 2).contiguous(), S(2), S(1), "contiguous"),
        (lambda t: t.permute(2, 0, 1), S(2), S(0), "permute"),
        (lambda t: t.movedim(0, 2), S(1), S(0), "movedim"),
        (lambda t: t.swapaxes(0, 1), S(1), S(0), "swapaxes"),
        (lambda t: t[0].t(), S(2), S(0), "t"),
        (lambda t: t.unsqueeze(1).squeeze(), S(1), S(1), "unsqueeze, squeeze"),
        (lambda t: t.unsqueeze(0).squeeze(0), S(2), S(2), "squeeze(dim)"),
        (lambda t: t.unsqueeze(2).expand(2, 2 * N, 3, 8 * N), S(1), S(1), "expand"),
        (lambda t: t.unsqueeze(0).expand(3, -1, -1, -1), S(2), S(3), "expand new dims"),
        (lambda t: t.float().double(), S(1), S(1), "casts"),
        (lambda t: t.clone().detach(), S(1), S(1), "clone, detach"),
        (lambda t: ember.view_as_real(ember.view_as_complex(t.view(2, 2 * N, 4 * N, 2))
                                      * 2).flatten(2), S(1), S(1),
         "view_as_complex, view_as_real"),
    ]:
        check_rule(m, fn, [x], [[pl]], [want], what, local=want != Rep)
    # what cannot stay sharded is gathered on its mesh dim, and the op runs on the whole
    uneven = data(2, 2 * N + 1, 3)
    check_rule(m, lambda t: t.view(2, -1), [uneven], [[S(1)]], [Rep], "uneven merge",
               local=False)
    check_rule(m, lambda t: ember.view_as_complex(t.view(2, 2 * N, 4 * N, 2)).abs(), [x],
               [[S(2)]], [S(2)], "view_as_complex with a shard before the pair")
    pairs = data(3, 2 * N, 2)
    check_rule(m, lambda t: ember.view_as_real(ember.view_as_complex(t) * 3), [pairs],
               [[S(2)]], [Rep], "view_as_complex of the pair dim's shard", local=False)
    other = data(2, 2 * N, 2 * N, 4, seed=5)
    check_rule(m, lambda t, o: t.view_as(o) * o, [x, other], [[S(2)], [S(2)]], [S(2)],
               "view_as")


@case
def case_elementwise_rules(R, N, out):
    """broadcasting and mixed placements keep the shard; replicated operands sliced or
    used whole (their gradients summed over the ranks)"""
    import contextlib

    import ember
    from ember.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

    m = mesh1(N)
    S, Rep = Shard, Replicate()
    x, w = data(2, 2 * N, 6), data(6, seed=1)

    def rms_norm(t, weight):
        return (t * (t.pow(2).mean(-1, keepdim=True) + 1e-6).rsqrt()).type_as(t) * weight

    check_rule(m, rms_norm, [x, w], [[S(1)], [Rep]], [S(1)], "RMSNorm, replicated weight")
    q, f = data(2, 2 * N, 2 * N, 4), data(1, 2 * N, 1, 4, seed=2)
    check_rule(m, lambda a, b: a * b, [q, f], [[S(2)], [Rep]], [S(2)],
               "a replicated operand broadcast along the shard")
    check_rule(m, lambda a, b: a * b, [q, f], [[S(1)], [Rep]], [S(1)],
               "a replicated operand sliced to the shard")
    y = data(2, 2 * N, 6, seed=3)
    check_rule(m, lambda a, b: a + b, [x, y], [[S(1)], [Rep]], [S(1)], "shard + replicate")
    check_rule(m, lambda a, b: b * a - a, [x, y], [[S(2)], [Rep]], [S(2)], "replicate * shard")
    check_rule(m, lambda a, b: ember.where(a > 0, a, b), [x, w], [[S(1)], [Rep]], [S(1)],
               "where")
    check_rule(m, lambda a, b: a.masked_fill(b > 0, 0.5) * b, [x, w], [[S(0)], [Rep]],
               [S(0)], "masked_fill")
    check_rule(m, lambda a, b: a * b, [x, data(2, 2 * N, 1, seed=4)], [[S(1)], [S(1)]],
               [S(1)], "both sharded, one broadcast on another dim")
    scale = data(seed=6)
    check_rule(m, lambda a, s: a * s, [x, scale], [[S(1)], [Rep]], [S(1)],
               "a replicated scalar that needs a gradient")
    # shards on different dims: the cheaper one stays (a tie: the lower dim), unless it would
    # cut a dim into fewer rows than ranks
    check_rule(m, lambda a, b: (a + b).sin(), [x, y], [[S(0)], [S(1)]],
               [S(0) if N == 2 else S(1)], "shards on different dims", local=False)
    check_rule(m, lambda a, b: a * b, [x, w], [[S(1)], [S(0)]], [S(1)],
               "a sharded operand broadcast along the result's shard", local=False)
    # in place: the target keeps its placements
    c = distribute_tensor(x.clone(), m, [S(1)])
    dw, dy = distribute_tensor(w, m, [Rep]), distribute_tensor(y, m, [Rep])
    with no_comm():
        c.mul_(dw)
        c.add_(dy)
    check(c.placements == (S(1),) and close(c.full_tensor(), x * w + y), "in place")
    # partial terms: linear ops keep them (PyTorch's rules), others reduce them first
    terms = [data(2, 4, seed=20 + k) for k in range(N)]
    terms2 = [data(2, 4, seed=40 + k) for k in range(N)]
    rv = data(2, 4, seed=60)
    for fn, want, what in [
        (lambda p, p2, r: p + p2, Partial(), "P + P"),
        (lambda p, p2, r: p - r, Partial(), "P - R"),
        (lambda p, p2, r: r + p, Partial(), "R + P"),
        (lambda p, p2, r: p * r, Partial(), "P * R"),
        (lambda p, p2, r: r * p, Partial(), "R * P"),
        (lambda p, p2, r: p / (r.abs() + 1), Partial(), "P / R"),
        (lambda p, p2, r: -p * 2, Partial(), "-P * 2"),
        (lambda p, p2, r: p.clone().to(ember.float64), Partial(), "P copies"),
        (lambda p, p2, r: p * p2, Partial(), "P * P"),  # the second one reduced
        (lambda p, p2, r: p * p, Rep, "P * P of one tensor"),
        (lambda p, p2, r: p / p, Rep, "P / P of one tensor"),
        (lambda p, p2, r: 2 - p, Rep, "2 - P"),
        (lambda p, p2, r: r / (p.abs() + 1), Rep, "R / P"),
        (lambda p, p2, r: p + 1, Rep, "P + 1"),
        (lambda p, p2, r: p.exp(), Rep, "exp(P)"),
    ]:
        mine = terms[R].clone().requires_grad_()
        mine2 = terms2[R].clone().requires_grad_()
        rl = rv.clone().requires_grad_()
        p = DTensor.from_local(mine, m, [Partial()])
        p2 = DTensor.from_local(mine2, m, [Partial()])
        r = DTensor.from_local(rl, m, [Rep])
        with no_comm() if want != Rep and what != "P * P" else contextlib.nullcontext():
            got = fn(p, p2, r)
        check(got.placements == (want,), f"{what}: {got.placements}")
        whole = sum(terms).requires_grad_()
        whole2 = sum(terms2).requires_grad_()
        rr = rv.clone().requires_grad_()
        ref = fn(whole, whole2, rr)
        check(close(got.full_tensor(), ref), f"{what}: values")
        weights = data(2, 4, seed=98)
        (ref * weights).sum().backward()
        (got.full_tensor() * weights).sum().backward()
        # a partial term's gradient is the gradient of the whole value
        check(close(mine.grad, whole.grad), f"{what}: gradient of the partial")
        if whole2.grad is not None:
            check(close(mine2.grad, whole2.grad), f"{what}: gradient of the second partial")
        if rr.grad is not None:
            check(close(rl.grad, rr.grad), f"{what}: gradient of the replicated operand")
    top = DTensor.from_local(terms[R], m, [Partial("max")])
    rr = DTensor.from_local(rv, m, [Rep])
    best = ember.stack(terms).amax(0)
    for got, want, value in [(top + rr, Partial("max"), best + rv),
                             (-top, Partial("min"), -best),
                             (top.clone(), Partial("max"), best),
                             (top * 2, Rep, best * 2)]:
        check(got.placements == (want,) and close(got.full_tensor(), value), want)
    avg = DTensor.from_local(terms[R], m, [Partial("avg")])
    got = avg * rr + rr
    check(got.placements == (Partial("avg"),), got.placements)
    check(close(got.full_tensor(), sum(terms) / N * rv + rv))


@case
def case_reduction_rules(R, N, out):
    """reductions over a sharded dim give PyTorch's partials or gather it; over other dims
    the shard stays"""
    import ember
    import ember.nn.functional as F
    from ember.distributed.tensor import Partial, Replicate, Shard

    m = mesh1(N)
    S, Rep = Shard, Replicate()
    x = data(2, 2 * N, 3)
    for fn, want, what, local in [
        (lambda t: t.sum(), Partial(), "sum()", True),
        (lambda t: t.sum(1), Partial(), "sum(sharded)", True),
        (lambda t: t.sum(dim=(0, 1), keepdim=True), Partial(), "sum keepdim", True),
        (lambda t: t.sum(2), S(1), "sum(other)", True),
        (lambda t: t.mean(1), Partial("avg"), "mean(sharded)", True),
        (lambda t: t.mean(), Partial("avg"), "mean()", True),
        (lambda t: t.mean(-1, keepdim=True), S(1), "mean(other, keepdim)", True),
        (lambda t: t.amax(1), Partial("max"), "amax", True),
        (lambda t: t.amin((0, 1)), Partial("min"), "amin", True),
        (lambda t: t.max(), Partial("max"), "max()", True),
        (lambda t: t.min(), Partial("min"), "min()", True),
        (lambda t: t.max(2).values, S(1), "max(other).values", True),
        (lambda t: t.max(1).values, Rep, "max(sharded).values", False),
        (lambda t: t.var(1), Rep, "var(sharded)", False),
        (lambda t: t.std(2, keepdim=True), S(1), "std(other)", True),
        (lambda t: t.norm(), Rep, "norm()", False),
        (lambda t: ember.linalg.vector_norm(t, 3, dim=(1, 2)), Rep, "vector_norm 3", False),
        (lambda t: ember.linalg.vector_norm(t, dim=-1), S(1), "vector_norm(other)", True),
        (lambda t: t.softmax(1), Rep, "softmax(sharded)", False),
        (lambda t: F.softmax(t, -1), S(1), "softmax(other)", True),
        (lambda t: F.log_softmax(t, 2), S(1), "log_softmax(other)", True),
        (lambda t: t.logsumexp(2), S(1), "logsumexp(other)", True),
        (lambda t: t.logsumexp(1), Rep, "logsumexp(sharded)", False),
        (lambda t: t.cumsum(2), S(1), "cumsum(other)", True),
    ]:
        check_rule(m, fn, [x], [[S(1)]], [want], what, local=local)
    check_rule(m, lambda t: t.argmax(1).double(), [x], [[S(1)]], [Rep], "argmax", local=False)
    check_rule(m, lambda t: t.argmax(2).double(), [x], [[S(1)]], [S(1)], "argmax(other)")
    uneven = data(2, 2 * N + 1, 3)
    check_rule(m, lambda t: t.mean(1), [uneven], [[S(1)]], [Rep], "mean of uneven shards",
               local=False)
    check_rule(m, lambda t: t.sum(1), [uneven], [[S(1)]], [Partial()], "sum of uneven shards")
    # ties across ranks: the gradient is split among all of them, as the plain op splits it
    ties = ember.zeros(2, 2 * N, 3, dtype=ember.float64)
    ties[:, ::2] = 5.0
    ties[0, 1, 2] = 7.0
    check_rule(m, lambda t: t.amax(1), [ties], [[S(1)]], [Partial("max")], "amax ties")
    check_rule(m, lambda t: t.max(), [ties - ties.amax()], [[S(1)]], [Partial("max")],
               "max() ties")
    check_rule(m, lambda t: (-t).amin((1, 2)), [ties], [[S(1)]], [Partial("min")],
               "amin ties")


@case
def case_attention_embedding_rules(R, N, out):
    """scaled_dot_product_attention on a batch or head shard; embedding lookups on row- and
    column-sharded weights and on sharded indices"""
    import ember
    import ember.nn.functional as F
    from ember.distributed.tensor import Partial, Replicate, Shard

    m = mesh1(N)
    S, Rep = Shard, Replicate()
    q, k, v = (data(2, 2 * N, 5, 4, seed=s) for s in (1, 2, 3))
    for kw, what in [({"is_causal": True}, "causal"), ({}, "plain"),
                     ({"scale": 0.3}, "scale")]:
        check_rule(m, lambda a, b, c, kw=kw: F.scaled_dot_product_attention(a, b, c, **kw),
                   [q, k, v], [[S(1)]] * 3, [S(1)], f"sdpa heads {what}")
    check_rule(m, lambda a, b, c: F.scaled_dot_product_attention(a, b, c), [q, k, v],
               [[S(0)]] * 3, [S(0)], "sdpa batch")
    mask = data(5, 5, seed=4)
    check_rule(m, lambda a, b, c, msk: F.scaled_dot_product_attention(a, b, c, attn_mask=msk),
               [q, k, v, mask], [[S(1)]] * 3 + [[Rep]], [S(1)], "sdpa broadcast mask")
    big = data(2, 2 * N, 5, 5, seed=5)
    check_rule(m, lambda a, b, c, msk: F.scaled_dot_product_attention(a, b, c, attn_mask=msk),
               [q, k, v, big], [[S(1)]] * 3 + [[Rep]], [S(1)], "sdpa mask sliced")
    check_rule(m, lambda a, b, c: F.scaled_dot_product_attention(a, b, c), [q, k, v],
               [[S(1)], [Rep], [S(1)]], [Rep], "sdpa mixed: gathered", local=False)
    vocab, width = 3 * N + 1, 2 * N
    weight = data(vocab, width, seed=7)
    ids = ember.arange(2 * 5).reshape(2, 5) % vocab
    emb = F.embedding
    check_rule(m, lambda i, w: emb(i, w), [ids, weight], [[Rep], [S(0)]], [Partial()],
               "embedding, rows sharded")
    check_rule(m, lambda i, w: emb(i, w, padding_idx=1), [ids, weight], [[Rep], [S(0)]],
               [Partial()], "embedding, rows sharded, padding_idx")
    check_rule(m, lambda i, w: emb(i, w, padding_idx=-1), [ids, weight], [[Rep], [S(0)]],
               [Partial()], "embedding, padding_idx=-1")
    check_rule(m, lambda i, w: emb(i, w), [ids, weight], [[Rep], [S(1)]], [S(2)],
               "embedding, columns sharded")
    many = ember.arange(2 * N * 3).reshape(2 * N, 3) % vocab
    check_rule(m, lambda i, w: emb(i, w), [many, weight], [[S(0)], [Rep]], [S(0)],
               "embedding, indices sharded")
    check_rule(m, lambda i, w: emb(i, w, scale_grad_by_freq=True), [ids, weight],
               [[Rep], [S(0)]], [Rep], "embedding with scale_grad_by_freq: gathered",
               local=False)


@case
def case_matmul_rules(R, N, out):
    """matmul, mm, bmm and linear: batch shards, Megatron's column and row patterns"""
    import ember
    import ember.nn.functional as F
    from ember.distributed.tensor import DTensor, Partial, Replicate, Shard

    m = mesh1(N)
    S, Rep = Shard, Replicate()
    mm = [
        ((3, 5, 4), [Rep], (4, 2 * N), [S(1)], S(2), "R @ column shard"),
        ((3, 5, 2 * N), [S(2)], (2 * N, 6), [S(0)], Partial(), "row: contracted dim"),
        ((3, 5, 2 * N), [S(2)], (2 * N, 6), [Rep], Partial(), "contracted dim, R sliced"),
        ((3, 5, 2 * N), [Rep], (2 * N, 6), [S(0)], Partial(), "R sliced, contracted dim"),
        ((2 * N, 5, 4), [S(0)], (2 * N, 4, 6), [S(0)], S(0), "batch shards"),
        ((2 * N, 5, 4), [S(0)], (4, 6), [Rep], S(0), "batch shard, broadcast R"),
        ((2 * N, 5, 4), [S(0)], (2 * N, 4, 6), [Rep], S(0), "batch shard, R sliced"),
        ((3, 2 * N, 4), [S(1)], (4, 6), [Rep], S(1), "row shard of the left"),
        ((3, 2 * N, 4), [S(1)], (4, 2 * N), [S(1)], Rep, "both output dims: gathered"),
    ]
    for sa, pa, sb, pb, want, what in mm:
        check_rule(m, lambda a, b: a @ b, [data(*sa, seed=1), data(*sb, seed=2)], [pa, pb],
                   [want], what, local=want != Rep)
    a2, b2 = data(2 * N, 4, seed=3), data(4, 2 * N, seed=4)
    check_rule(m, lambda a, b: a.mm(b), [a2, b2], [[S(0)], [Rep]], [S(0)], "mm rows")
    check_rule(m, lambda a, b: ember.mm(a, b), [a2, b2], [[Rep], [S(1)]], [S(1)], "mm cols")
    check_rule(m, lambda a, b: ember.bmm(a, b), [data(2 * N, 3, 4), data(2 * N, 4, 5)],
               [[S(0)], [S(0)]], [S(0)], "bmm")
    check_rule(m, lambda a, b: ember.matmul(a, b), [data(2, 2 * N, 3, 4), data(2 * N, 4, 5)],
               [[S(1)], [S(0)]], [S(1)], "matmul batch shard broadcast")
    # a partial left operand times a replicated right one stays partial
    terms = [data(3, 4, seed=20 + k) for k in range(N)]
    mine = terms[R].clone().requires_grad_()
    right = data(4, 2, seed=30)
    rl = right.clone().requires_grad_()
    with no_comm():
        got = DTensor.from_local(mine, m, [Partial()]) @ DTensor.from_local(rl, m, [Rep])
    check(got.placements == (Partial(),), got.placements)
    whole, rr = sum(terms).requires_grad_(), right.clone().requires_grad_()
    ref = whole @ rr
    check(close(got.full_tensor(), ref))
    (ref * data(3, 2, seed=5)).sum().backward()
    (got.full_tensor() * data(3, 2, seed=5)).sum().backward()
    check(close(mine.grad, whole.grad) and close(rl.grad, rr.grad), "P @ R gradients")
    x, w, b = data(2 * N, 3, 4), data(5, 4, seed=1), data(5, seed=2)
    check_rule(m, lambda t, wt, bs: F.linear(t, wt, bs), [x, w, b], [[S(0)], [Rep], [Rep]],
               [S(0)], "linear, batch shard")
    check_rule(m, lambda t, wt: F.linear(t, wt), [data(3, 2 * N), data(5, 2 * N)],
               [[S(1)], [Rep]], [Partial()], "linear, input sharded on features")


@case
def case_index_join_rules(R, N, out):
    """indexing, narrow, index_select, cat, stack, split along unsharded dims keep shards"""
    import ember
    from ember.distributed.tensor import Replicate, Shard

    m = mesh1(N)
    S, Rep = Shard, Replicate()
    x, y = data(3, 2 * N, 5), data(3, 2 * N, 5, seed=1)
    for fn, want, what, local in [
        (lambda t: t[:, :, 1:4], S(1), "slice another dim", True),
        (lambda t: t[1], S(0), "int index", True),
        (lambda t: t[..., None, 2], S(1), "None, Ellipsis", True),
        (lambda t: t[:, 1:], Rep, "slice the sharded dim", False),
        (lambda t: t.narrow(2, 1, 3), S(1), "narrow", True),
        (lambda t: t.narrow(1, 0, 1), Rep, "narrow the sharded dim", False),
        (lambda t: t.select(0, -1), S(0), "select", True),
        (lambda t: t.split(2, 2)[1], S(1), "split", True),
        (lambda t: t.chunk(2, 1)[0], Rep, "chunk the sharded dim", False),
        (lambda t: t.unbind(0)[2], S(0), "unbind", True),
    ]:
        check_rule(m, fn, [x], [[S(1)]], [want], what, local=local)
    for fn, want, what, local in [
        (lambda a, b: ember.cat([a, b], 2), S(1), "cat", True),
        (lambda a, b: ember.cat((a, b), dim=0), S(1), "cat dim 0", True),
        (lambda a, b: ember.cat([a, b], 1), Rep, "cat along the shard", False),
        (lambda a, b: ember.stack([a, b], 1), S(2), "stack before the shard", True),
        (lambda a, b: ember.stack([a, b], -1), S(1), "stack after it", True),
    ]:
        check_rule(m, fn, [x, y], [[S(1)], [S(1)]], [want], what, local=local)
    check_rule(m, lambda t, i: t.index_select(2, i), [x, ember.tensor([4, 0, 2])],
               [[S(1)], [Rep]], [S(1)], "index_select")


@case
def case_rules_on_2d_mesh(R, N, out):
    """the rules run per mesh dim on a 2-d mesh (PyTorch's placements)"""
    from ember.distributed.device_mesh import init_device_mesh
    from ember.distributed.tensor import Partial, Replicate, Shard

    if N != 4:
        return
    m = init_device_mesh("cpu", (2, 2))
    S, Rep = Shard, Replicate()
    x, w = data(4, 4, 8), data(8, seed=1)
    for fn, want, what in [
        (lambda t: t.view(4, 4, 2, 4), [S(0), S(2)], "view"),
        (lambda t: t.flatten(0, 1), [S(0), S(1)], "flatten"),
        (lambda t: t.transpose(0, 2), [S(2), S(0)], "transpose"),
        (lambda t: t.sum(2), [S(0), Partial()], "sum"),
        (lambda t: t.mean(0), [Partial("avg"), S(1)], "mean"),
        (lambda t: t.amax(2), [S(0), Partial("max")], "amax"),
    ]:
        check_rule(m, fn, [x], [[S(0), S(2)]], want, what)
    check_rule(m, lambda t: t.softmax(-1), [x], [[S(0), S(2)]], [S(0), Rep], "softmax",
               local=False)
    check_rule(m, lambda t, v: t * v, [x, w], [[S(0), S(2)], [Rep, Rep]], [S(0), S(2)],
               "broadcast")
    nested = data(2, 8, 3)
    check_rule(m, lambda t: t.transpose(0, 1), [nested], [[S(1), S(1)]], [S(0), S(0)],
               "nested shards moved")
    check_rule(m, lambda t: t.sum(1), [nested], [[S(1), S(1)]], [Partial(), Partial()],
               "nested shards summed")
    check_rule(m, lambda t: t.view(16, 3), [nested], [[S(1), S(1)]], [Rep, Rep],
               "nested shards merged: gathered", local=False)
    check_rule(m, lambda a, b: a @ b, [data(4, 6, 4, seed=2), data(4, 6, seed=3)],
               [[S(0), Rep], [Rep, S(1)]], [S(0), S(2)], "matmul")


class collectives:
    """Records the collectives called in the block (their names, in order)."""

    def __enter__(self):
        import ember.distributed.distributed_c10d as c10d

        self.calls: list = []
        self.saved = {n: getattr(c10d, n) for n in no_comm.NAMES if hasattr(c10d, n)}

        def recording(name, fn):
            def call(*args, **kwargs):
                self.calls.append(name)
                return fn(*args, **kwargs)

            return call

        for n, f in self.saved.items():
            setattr(c10d, n, recording(n, f))
        return self.calls

    def __exit__(self, *exc):
        import ember.distributed.distributed_c10d as c10d

        for n, f in self.saved.items():
            setattr(c10d, n, f)
        return False


@case
def case_llama_attention(R, N, out):
    """pytorch/examples' Llama-2 attention (wq/wk/wv ColwiseParallel(use_local_output=False),
    rotary embedding through view_as_complex, causal sdpa, wo RowwiseParallel) stays sharded
    by heads from wq to wo (the only collective is wo's sum) and gives the unparallelized
    block's output and gradients; its RMSNorm under SequenceParallel and its token embedding
    under RowwiseParallel likewise"""
    import copy

    import ember
    import ember.nn as nn
    import ember.nn.functional as F
    from ember.distributed.tensor import DTensor, Replicate, Shard
    from ember.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        SequenceParallel,
        parallelize_module,
    )

    seen: dict = {}

    def note(key, t):
        if isinstance(t, DTensor):
            seen[key] = t.placements
        return t

    def apply_rotary_emb(xq, xk, freqs_cis):
        xq_ = ember.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        xk_ = ember.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
        note("complex", xq_)
        shape = [d if i == 1 or i == xq_.ndim - 1 else 1 for i, d in enumerate(xq_.shape)]
        freqs_cis = freqs_cis.view(*shape)
        xq_out = ember.view_as_real(xq_ * freqs_cis).flatten(3)
        xk_out = ember.view_as_real(xk_ * freqs_cis).flatten(3)
        return xq_out.type_as(xq), xk_out.type_as(xk)

    class Attention(nn.Module):
        def __init__(self, dim, n_heads):
            super().__init__()
            self.n_heads, self.head_dim = n_heads, dim // n_heads
            self.wq = nn.Linear(dim, dim, bias=False)
            self.wk = nn.Linear(dim, dim, bias=False)
            self.wv = nn.Linear(dim, dim, bias=False)
            self.wo = nn.Linear(dim, dim, bias=False)

        def forward(self, x, freqs_cis):
            bsz, seqlen, _ = x.shape
            xq, xk, xv = note("wq", self.wq(x)), self.wk(x), self.wv(x)
            xq = note("view", xq.view(bsz, seqlen, self.n_heads, self.head_dim))
            xk = xk.view(bsz, seqlen, self.n_heads, self.head_dim)
            xv = xv.view(bsz, seqlen, self.n_heads, self.head_dim)
            xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)
            note("rotary", xq)
            xq, xk, xv = (note("transpose", t.transpose(1, 2)) for t in (xq, xk, xv))
            output = note("sdpa", F.scaled_dot_product_attention(xq, xk, xv, is_causal=True))
            output = note("merged", output.transpose(1, 2).contiguous().view(bsz, seqlen, -1))
            return self.wo(output)

    class RMSNorm(nn.Module):
        def __init__(self, dim, eps=1e-6):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(ember.ones(dim))

        def forward(self, x):
            normed = x * ember.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
            return normed.type_as(x) * self.weight

    m = mesh1(N)
    dim, heads, seqlen = 8 * N, 2 * N, 6
    ember.manual_seed(3)
    ref = Attention(dim, heads).double()
    tp = parallelize_module(copy.deepcopy(ref), m, {
        "wq": ColwiseParallel(use_local_output=False),
        "wk": ColwiseParallel(use_local_output=False),
        "wv": ColwiseParallel(use_local_output=False),
        "wo": RowwiseParallel()})
    angles = ember.outer(ember.arange(seqlen, dtype=ember.float64),
                         1.0 / 10000 ** (ember.arange(0, 4, 2, dtype=ember.float64) / 4))
    freqs = ember.polar(ember.ones_like(angles), angles)
    x = data(2, seqlen, dim, seed=11)
    xr, xl = x.clone().requires_grad_(), x.clone().requires_grad_()
    want = ref(xr, freqs)
    with collectives() as calls:
        got = tp(DTensor.from_local(xl, m, [Replicate()]),
                 DTensor.from_local(freqs, m, [Replicate()]))
    check(calls == ["all_reduce"], f"collectives in the forward: {calls}")
    check(seen == {"wq": (Shard(2),), "view": (Shard(2),), "complex": (Shard(2),),
                   "rotary": (Shard(2),), "transpose": (Shard(1),), "sdpa": (Shard(1),),
                   "merged": (Shard(2),)}, seen)
    check(type(got) is ember.Tensor and close(got, want, 1e-6), "attention output")
    weights = data(2, seqlen, dim, seed=12)
    (want * weights).sum().backward()
    (got * weights).sum().backward()
    check(close(xl.grad, xr.grad, 1e-6), "input gradient")
    for (name, p), q in zip(tp.named_parameters(), ref.parameters()):
        check(isinstance(p, DTensor) and close(p.grad.full_tensor(), q.grad, 1e-6), name)

    # SequenceParallel RMSNorm: each rank normalizes its slice of the sequence
    norm_ref = RMSNorm(dim).double()
    with ember.no_grad():
        norm_ref.weight.copy_(data(dim, seed=13))
    norm_tp = parallelize_module(copy.deepcopy(norm_ref), m, SequenceParallel())
    h = data(2, 2 * N, dim, seed=14)
    hr, hl = h.clone().requires_grad_(), h.chunk(N, 1)[R].clone().requires_grad_()
    want = norm_ref(hr)
    with no_comm():
        got = norm_tp(hl)
    check(got.placements == (Shard(1),) and close(got.full_tensor(), want), "RMSNorm")
    (want * data(2, 2 * N, dim, seed=15)).sum().backward()
    (got.full_tensor() * data(2, 2 * N, dim, seed=15)).sum().backward()
    check(close(hl.grad, hr.grad.chunk(N, 1)[R]), "RMSNorm input gradient")
    check(close(norm_tp.weight.grad.full_tensor(), norm_ref.weight.grad), "RMSNorm weight")

    # the token embedding: RowwiseParallel with a replicated input and a sequence-sharded
    # output (a masked lookup on each rank's rows, the partial sums reduce-scattered)
    emb_ref = nn.Embedding(5 * N, dim).double()
    emb_tp = parallelize_module(copy.deepcopy(emb_ref), m, RowwiseParallel(
        input_layouts=Replicate(), output_layouts=Shard(1), use_local_output=False))
    tokens = (ember.arange(2 * 2 * N).reshape(2, 2 * N) * 7) % (5 * N)
    want = emb_ref(tokens)
    got = emb_tp(tokens)
    check(got.placements == (Shard(1),) and close(got.full_tensor(), want), "embedding")
    (want * data(2, 2 * N, dim, seed=16)).sum().backward()
    (got.full_tensor() * data(2, 2 * N, dim, seed=16)).sum().backward()
    check(close(emb_tp.weight.grad.full_tensor(), emb_ref.weight.grad), "embedding gradient")


@case
def case_implicit_replication_and_local_map(R, N, out):
    """``tensor.experimental``: plain tensors in an op with DTensors count as replicas inside
    ``implicit_replication`` (and raise outside it); ``local_map`` runs a function written
    for local tensors on DTensors, checking or redistributing their placements."""
    import ember
    from ember.distributed._tensor.experimental import implicit_replication as old_path
    from ember.distributed.tensor import Partial, Replicate, Shard, distribute_tensor
    from ember.distributed.tensor.experimental import implicit_replication, local_map

    check(old_path is implicit_replication)
    m = mesh1(N)
    x, y = data(2 * N, 3), data(2 * N, 3, seed=1)
    dx = distribute_tensor(x, m, [Shard(0)])
    raises(RuntimeError, "got mixed torch.Tensor and DTensor", lambda: dx + y)
    with implicit_replication():
        s = dx + y  # y taken as replicated: each rank adds its rows of y
        check(s.placements == (Shard(0),) and ember.allclose(s.full_tensor(), x + y))
        noise = data(2 * N, 3, seed=2)
        g = distribute_tensor(x.clone(), m, [Replicate()])
        g.add_(noise)  # opacus adds noise to replicated gradients so
        check(ember.allclose(g.to_local(), x + noise))
    raises(RuntimeError, "got mixed torch.Tensor and DTensor", lambda: dx * y)

    def scaled_rows(local, k):
        return local * k, local.sum(0)

    mapped = local_map(scaled_rows, out_placements=([Shard(0)], [Partial()]),
                       in_placements=([Shard(0)], None))
    a, b = mapped(dx, 2.0)
    check(a.placements == (Shard(0),) and ember.allclose(a.full_tensor(), 2 * x))
    check(ember.allclose(b.full_tensor(), x.sum(0)))
    rx = distribute_tensor(x, m, [Replicate()])
    raises(ValueError, "mismatched placements", mapped, rx, 2.0)
    redistributing = local_map(scaled_rows, out_placements=([Shard(0)], [Replicate()]),
                               in_placements=([Shard(0)], None), redistribute_inputs=True)
    a2, _ = redistributing(rx, 3.0)
    check(a2.placements == (Shard(0),) and ember.allclose(a2.full_tensor(), 3 * x))
    plain_a, plain_b = mapped(x, 2.0)  # no DTensor: the function on the tensors as they are
    check(type(plain_a) is ember.Tensor and ember.allclose(plain_a, 2 * x))
    decorated = local_map(out_placements=[Shard(0)])(lambda t: t.relu())
    check(ember.allclose(decorated(dx).full_tensor(), x.relu()))


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
