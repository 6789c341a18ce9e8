"""FSDP2 (``fully_shard``) on 2 and 4 MPI ranks, against one process on the whole batch.

Each rank trains on its own slice of each global batch; the single-process reference trains
the same initial model on the whole batch (float64). After every optimizer step the gathered
DTensor parameters must equal the reference's, while each rank holds (and its optimizer
updates) only its chunk of each parameter.
"""

from __future__ import annotations

import pytest
from mpi_launch import case_launches, case_registry, check, check_case, distributed_marks

pytestmark = distributed_marks()
CASES, case = case_registry()


def mlp(seed: int = 0):
    import ember
    import ember.nn as nn

    ember.manual_seed(seed)
    # 5 rows: uneven chunks on 2 ranks, an empty one on 4 (torch.chunk's 2, 2, 1, 0)
    return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 6), nn.ReLU(),
                         nn.Linear(6, 2)).double()


def global_batch(step: int, N: int):
    import ember

    g = ember.Generator().manual_seed(500 + step)
    return (ember.randn(2 * N, 3, generator=g, dtype=ember.float64),
            ember.randn(2 * N, 2, generator=g, dtype=ember.float64))


def loss_of(out, y):
    return ((out - y) ** 2).mean()


def shard_layers(net, **kwargs):
    from ember.distributed.fsdp import fully_shard

    for layer in net:
        if len(list(layer.parameters())):
            fully_shard(layer, **kwargs)
    return fully_shard(net, **kwargs)


def same(net, ref, what, atol=1e-12):
    import ember

    for (name, p), q in zip(net.named_parameters(), ref.parameters()):
        check(ember.allclose(p.full_tensor(), q, atol=atol), f"{what}: {name}")


@case
def case_trains_as_one_process(R, N, out):
    import ember
    from ember.distributed.fsdp import FSDPModule
    from ember.distributed.tensor import DTensor, Shard

    net, ref = shard_layers(mlp()), mlp()
    check(isinstance(net, FSDPModule) and type(net).__name__ == "FSDPSequential")
    check(isinstance(net[0], FSDPModule) and not isinstance(net[1], FSDPModule))
    w = net[0].weight
    check(isinstance(w, DTensor) and isinstance(w, ember.nn.Parameter))
    check(w.placements == (Shard(0),) and w.shape == (5, 3))
    rows = [c.shape[0] for c in ember.zeros(5).chunk(N)] + [0] * N
    check(w.to_local().shape == (rows[R], 3), w.to_local().shape)
    opt = ember.optim.AdamW(net.parameters(), lr=0.02)
    ref_opt = ember.optim.AdamW(ref.parameters(), lr=0.02)
    for step in range(4):
        x, y = global_batch(step, N)
        opt.zero_grad()
        ref_opt.zero_grad()
        out_ = net(x[2 * R:2 * R + 2])
        check(type(out_) is ember.Tensor and isinstance(net[0].weight, DTensor),
              "after forward the shards are registered again")
        loss_of(out_, y[2 * R:2 * R + 2]).backward()
        loss_of(ref(x), y).backward()
        check(net[0].weight.grad.placements == (Shard(0),))
        for (name, p), q in zip(net.named_parameters(), ref.parameters()):
            check(ember.allclose(p.grad.full_tensor(), q.grad, atol=1e-12), f"grad {name}")
        opt.step()
        ref_opt.step()
        same(net, ref, f"step {step}")
    state = opt.state[net[0].weight]  # the optimizer state is this rank's chunk
    check(state["exp_avg"].shape == net[0].weight.to_local().shape)


@case
def case_gradient_accumulation_without_sync(R, N, out):
    import ember

    net, ref = shard_layers(mlp(1)), mlp(1)
    opt = ember.optim.SGD(net.parameters(), lr=0.1)
    ref_opt = ember.optim.SGD(ref.parameters(), lr=0.1)
    for step in range(2):
        opt.zero_grad()
        ref_opt.zero_grad()
        for micro in range(3):
            x, y = global_batch(10 * step + micro, N)
            net.set_requires_gradient_sync(micro == 2)
            loss_of(net(x[2 * R:2 * R + 2]), y[2 * R:2 * R + 2]).backward()
            if micro < 2:
                check(all(p.grad is None for p in net.parameters()), "no grad while unsynced")
            loss_of(ref(x), y).backward()
        opt.step()
        ref_opt.step()
        same(net, ref, f"accumulated step {step}")


@case
def case_mixed_precision_policy(R, N, out):
    import ember
    from ember.distributed.fsdp import MixedPrecisionPolicy

    policy = MixedPrecisionPolicy(param_dtype=ember.float32, reduce_dtype=ember.float64,
                                  output_dtype=ember.float64)
    net, ref = shard_layers(mlp(2), mp_policy=policy), mlp(2)
    seen = []
    # after fully_shard's own pre-hook: the gathered weights and the cast inputs
    net[0].register_forward_pre_hook(lambda m, i: seen.append((i[0].dtype, m.weight.dtype)))
    x, y = global_batch(0, N)
    out_ = net(x[2 * R:2 * R + 2])
    check(seen == [(ember.float32, ember.float32)], seen)  # inputs and weights cast
    check(out_.dtype == ember.float64 and net[0].weight.dtype == ember.float64)
    loss_of(out_, y[2 * R:2 * R + 2]).backward()
    loss_of(ref(x), y).backward()
    for (name, p), q in zip(net.named_parameters(), ref.parameters()):
        check(p.grad.dtype == ember.float64, name)
        check(ember.allclose(p.grad.full_tensor(), q.grad, rtol=1e-5, atol=1e-6), name)


@case
def case_hybrid_sharding_on_a_2d_mesh(R, N, out):
    import ember
    from ember.distributed.device_mesh import init_device_mesh
    from ember.distributed.tensor import Replicate, Shard

    if N != 4:
        return
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("replicate", "shard"))
    net, ref = shard_layers(mlp(3), mesh=mesh), mlp(3)
    check(net[2].weight.placements == (Replicate(), Shard(0)))
    opt = ember.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    ref_opt = ember.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    for step in range(3):
        x, y = global_batch(step, N)
        opt.zero_grad()
        ref_opt.zero_grad()
        loss_of(net(x[2 * R:2 * R + 2]), y[2 * R:2 * R + 2]).backward()
        loss_of(ref(x), y).backward()
        opt.step()
        ref_opt.step()
        same(net, ref, f"HSDP step {step}")


@case
def case_gathered_parameters_leave_the_graph(R, N, out):
    """reshard_after_forward (default: every module but the root) frees a layer's gathered
    parameters after its forward, as PyTorch's FSDP2: the autograd graph keeps a mark and
    the backward gathers them again. The root, and reshard_after_forward=False, keep them
    until backward. Gradients are the one-process ones either way."""
    import gc
    import weakref

    import ember
    from ember.distributed.fsdp import fully_shard

    for setting in (None, False, True):
        net, ref = mlp(6), mlp(6)
        seen = {}

        def keep(name, seen=seen):
            def hook(module, args, output):
                seen[name] = weakref.ref(module.weight)  # the gathered weight in forward
            return hook

        net[0].register_forward_hook(keep("layer"))
        net[4].register_forward_hook(keep("root's own"))
        fully_shard(net[0], reshard_after_forward=setting)
        fully_shard(net[2], reshard_after_forward=setting)
        fully_shard(net, reshard_after_forward=setting)
        x, y = global_batch(0, N)
        loss = loss_of(net(x[2 * R:2 * R + 2]), y[2 * R:2 * R + 2])
        gc.collect()
        frees = setting is not False
        check((seen["layer"]() is None) == frees, f"{setting}: layer's gathered weight")
        check((seen["root's own"]() is None) == (setting is True),
              f"{setting}: root's gathered weight")
        loss.backward()
        loss_of(ref(x), y).backward()
        for (name, p), q in zip(net.named_parameters(), ref.parameters()):
            check(ember.allclose(p.grad.full_tensor(), q.grad, atol=1e-12), f"{setting}: {name}")
        check(not net[0]._fsdp_group.regathered and not net._fsdp_group.regathered,
              "the regathered parameters are dropped after their backward")
    # a failing forward leaves no hooks behind: the next forward and backward still work
    net = mlp(7)
    fully_shard(net[0])
    fully_shard(net)
    try:
        net(ember.ones(2, 4, dtype=ember.float64))  # wrong width
    except RuntimeError:
        pass
    else:
        raise AssertionError("a bad input went through")
    net(ember.ones(2, 3, dtype=ember.float64)).sum().backward()
    check(net[0].weight.grad is not None)


def tp_block(seed: int):
    """A pre-norm MLP block on (batch, sequence, 8) inputs, tensor-parallel friendly."""
    import ember
    import ember.nn as nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(8)
            self.up = nn.Linear(8, 12)
            self.down = nn.Linear(12, 8)

        def forward(self, x):
            return x + self.down(ember.tanh(self.up(self.norm(x))))

    ember.manual_seed(seed)
    return nn.Sequential(Block(), Block()).double()


@case
def case_fsdp_over_tensor_parallel_2d(R, N, out):
    """FSDP2 over tensor-parallel layers on a (dp, tp) mesh (pytorch/examples' fsdp_tp): the
    parameters are DTensors on the whole 2-d mesh (the dp dim a _StridedShard where TP shards
    dim 0 too), each rank holds its dp chunk of its TP shard, and training equals one
    process on the whole batch."""
    import ember
    from ember.distributed.device_mesh import DeviceMesh, init_device_mesh
    from ember.distributed.fsdp import fully_shard
    from ember.distributed.tensor import DTensor, Replicate, Shard
    from ember.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        SequenceParallel,
        parallelize_module,
    )
    from ember.distributed.tensor.placement_types import _StridedShard

    dp, tp = N // 2, 2
    mesh = init_device_mesh("cpu", (dp, tp), mesh_dim_names=("dp", "tp"))
    dp_mesh, tp_mesh = mesh["dp"], mesh["tp"]
    check(DeviceMesh._concatenate([dp_mesh, tp_mesh]) == mesh)
    net, ref = tp_block(5), tp_block(5)
    for block in (net[0], net[1]):
        parallelize_module(block, tp_mesh, {
            "norm": SequenceParallel(),
            "up": ColwiseParallel(input_layouts=Shard(1)),
            "down": RowwiseParallel(output_layouts=Shard(1)),
        })
        fully_shard(block, mesh=dp_mesh)
    fully_shard(net, mesh=dp_mesh)
    up, down = net[0].up, net[0].down
    check(isinstance(up.weight, DTensor) and up.weight.device_mesh == mesh)
    check(up.weight.placements == (_StridedShard(0, split_factor=2), Shard(0)),
          up.weight.placements)
    check(down.weight.placements == (Shard(0), Shard(1)), down.weight.placements)
    check(net[0].norm.weight.placements == (Shard(0), Replicate()))
    # this rank's part: the dp chunk of its TP shard
    whole = ref[0].up.weight.detach()
    tp_part = whole.chunk(tp)[R % tp]
    check(ember.equal(up.weight.to_local(), tp_part.chunk(dp)[R // tp]), "up's local chunk")
    check(ember.equal(up.weight.full_tensor(), whole), "up's full tensor")
    opt = ember.optim.AdamW(net.parameters(), lr=0.01, foreach=True)
    ref_opt = ember.optim.AdamW(ref.parameters(), lr=0.01, foreach=True)
    for step in range(3):
        g = ember.Generator().manual_seed(900 + step)
        x = ember.randn(2 * dp, 4, 8, generator=g, dtype=ember.float64)
        # a dp rank's batch, its sequence cut over the TP ranks (sequence parallelism)
        mine = x[2 * (R // tp):2 * (R // tp) + 2].chunk(tp, 1)[R % tp]
        opt.zero_grad()
        ref_opt.zero_grad()
        y = net(mine)
        check(not isinstance(y, DTensor) and y.shape == (2, 2, 8), type(y))  # local rows
        y.pow(2).sum().backward()
        full = ref(x)
        ref_y = full[2 * (R // tp):2 * (R // tp) + 2]
        check(ember.allclose(y, ref_y.chunk(tp, 1)[R % tp], atol=1e-12), f"forward {step}")
        (full.pow(2).sum() / dp).backward()
        for (name, p), q in zip(net.named_parameters(), ref.parameters()):
            check(p.grad.placements == p.placements, name)
            check(ember.allclose(p.grad.full_tensor(), q.grad, atol=1e-10), f"grad {name}")
        opt.step()
        ref_opt.step()
        same(net, ref, f"2-d step {step}", atol=1e-10)
    sd = net.state_dict()
    check(sd["0.up.weight"].placements == up.weight.placements)
    if N == 4:  # a TP mesh that is no slice of the dp mesh's root is refused
        other = init_device_mesh("cpu", (N,))
        lone = ember.nn.Linear(4, 4).double()
        parallelize_module(lone, other, ColwiseParallel())
        try:
            fully_shard(lone, mesh=dp_mesh)
        except ValueError as e:
            check("named slices of one root mesh" in str(e), str(e))
        else:
            raise AssertionError("fully_shard took a DTensor on an unrelated mesh")


@case
def case_module_api_and_errors(R, N, out):
    import copy

    import ember
    import ember.nn as nn
    from ember.distributed.fsdp import fully_shard
    from ember.distributed.tensor import DTensor

    net = shard_layers(mlp(4))
    net[0].unshard()  # each fully_shard call gathers its own group
    check(type(net[0].weight) is ember.Tensor and net[0].weight.shape == (5, 3))
    net[0].reshard()
    check(isinstance(net[0].weight, DTensor))
    tied = nn.Linear(4, 4, bias=False).double()
    holder = nn.Sequential(tied, nn.Linear(4, 4, bias=False).double())
    holder[1].weight = tied.weight  # one parameter in two modules: one shard, one gather
    fully_shard(holder)
    check(holder[0].weight is holder[1].weight and len(list(holder.parameters())) == 1)
    holder(ember.ones(2, 4, dtype=ember.float64)).sum().backward()
    check(holder[0].weight.grad is not None)
    for bad, text in ((nn.ModuleList([nn.Linear(2, 2)]), "containers"),
                      (net, "already applied")):
        try:
            fully_shard(bad)
        except ValueError as e:
            check(text in str(e), str(e))
        else:
            raise AssertionError(f"fully_shard accepted {type(bad).__name__}")
    try:
        copy.deepcopy(net)
    except AssertionError as e:
        check("does not support deepcopy" in str(e))
    else:
        raise AssertionError("deepcopy of an FSDP module worked")
    sliced = nn.Sequential(*list(net.children())[:2])
    check(type(sliced) is nn.Sequential)
    sd = net.state_dict()  # DTensor values, as PyTorch's sharded state dict
    check(isinstance(sd["0.weight"], DTensor))


rank_main, runs = case_launches(__file__, "fsdp_cases", CASES)


@pytest.mark.parametrize("n", [2, 4], ids=["2ranks", "4ranks"])
@pytest.mark.parametrize("name", list(CASES))
def test_fsdp_case(runs, n, name):
    check_case(runs[n], n, name)


def test_policies_and_fsdp1_class():
    import ember
    from ember.distributed import fsdp

    # FSDP1 is provided (tests/distributed/test_fsdp1.py), as an nn.Module wrapper
    assert issubclass(fsdp.FullyShardedDataParallel, ember.nn.Module)
    assert not issubclass(fsdp.FullyShardedDataParallel, fsdp.FSDPModule)
    p = fsdp.MixedPrecisionPolicy(param_dtype=ember.bfloat16)
    assert p.reduce_dtype is None and p.cast_forward_inputs
    assert fsdp.CPUOffloadPolicy().pin_memory
