"""FSDP1 (``FullyShardedDataParallel``) on 2 and 4 MPI ranks, against one process on the
whole batch, and its wrapping, names and keys against PyTorch 2.13's.

Each rank trains on its own slice of each global batch; the single-process reference trains
the same initial model on the whole batch (float64). After the optimizer steps the gathered
parameters must equal the reference's for every sharding strategy, and the state-dict,
summon, no_sync, clipping, mixed-precision and optimizer-state APIs must behave as
PyTorch's. The last case is PyTorch's "Getting Started with FSDP" tutorial program.
"""

from __future__ import annotations

import json

import pytest

# the model, batches and loss FSDP2's cases use (tests/ is on sys.path, in the ranks too)
from distributed.test_fsdp import global_batch, loss_of, mlp
from mpi_launch import (
    case_launches,
    case_registry,
    check,
    check_case,
    distributed_marks,
    mpi_available,
    run_ranks,
)

pytestmark = distributed_marks()
CASES, case = case_registry()


def wrapped(seed: int = 0, **kwargs):
    """mlp(seed) in FSDP, each Linear (>= 10 parameters) its own nested instance."""
    import functools

    from ember.distributed.fsdp import FullyShardedDataParallel as FSDP
    from ember.distributed.fsdp.wrap import size_based_auto_wrap_policy

    policy = functools.partial(size_based_auto_wrap_policy, min_num_params=10)
    return FSDP(mlp(seed), auto_wrap_policy=policy, **kwargs)


def same(net, ref, what, atol=1e-12):
    import ember

    names = [n for n, _ in ref.named_parameters()]
    ours = list(net.parameters())
    check(len(ours) == len(names), f"{what}: {len(ours)} parameters")
    for name, p, q in zip(names, ours, ref.parameters()):
        check(ember.allclose(p.full_tensor(), q, atol=atol), f"{what}: {name}")


def train_steps(net, ref, opt, ref_opt, R, N, steps, first=0):
    for step in range(first, first + steps):
        x, y = global_batch(step, N)
        opt.zero_grad()
        ref_opt.zero_grad()
        loss_of(net(x[2 * R:2 * R + 2]), y[2 * R:2 * R + 2]).backward()
        loss_of(ref(x), y).backward()
        opt.step()
        ref_opt.step()


@case
def case_strategies_train_as_one_process(R, N, out):
    import ember
    from ember.distributed.device_mesh import init_device_mesh
    from ember.distributed.fsdp import FullyShardedDataParallel as FSDP
    from ember.distributed.fsdp import ShardingStrategy
    from ember.distributed.tensor import DTensor, Replicate, Shard

    hybrid_mesh = init_device_mesh("cpu", (2, N // 2)) if N == 4 else None
    setups = [(ShardingStrategy.FULL_SHARD, {}, (Shard(0),)),
              (ShardingStrategy.SHARD_GRAD_OP, {}, (Shard(0),)),
              (ShardingStrategy.NO_SHARD, {}, (Replicate(),)),
              (ShardingStrategy.HYBRID_SHARD, {}, (Replicate(), Shard(0)))]  # (1, world)
    if hybrid_mesh is not None:
        setups += [(ShardingStrategy.HYBRID_SHARD, {"device_mesh": hybrid_mesh},
                    (Replicate(), Shard(0))),
                   (ShardingStrategy._HYBRID_SHARD_ZERO2, {"device_mesh": hybrid_mesh},
                    (Replicate(), Shard(0)))]
    for i, (strategy, extra, placements) in enumerate(setups):
        what = f"{strategy} {extra and 'given mesh'}"
        net, ref = wrapped(i, sharding_strategy=strategy, **extra), mlp(i)
        check(isinstance(net, FSDP) and isinstance(net.module[0], FSDP), what)
        w = net.module[0].module.weight
        check(isinstance(w, DTensor) and isinstance(w, ember.nn.Parameter), what)
        check(w.placements == placements and w.shape == (5, 3), f"{what}: {w.placements}")
        if strategy == ShardingStrategy.NO_SHARD:
            check(w.to_local().shape == (5, 3), what)
        elif "device_mesh" in extra:  # sharded over the 2 ranks of a node
            check(w.to_local().shape == ((3, 3) if R % 2 == 0 else (2, 3)), what)
        else:
            rows = [c.shape[0] for c in ember.zeros(5).chunk(N)] + [0] * N
            check(w.to_local().shape == (rows[R], 3), f"{what}: {w.to_local().shape}")
        if i % 2:
            opt = ember.optim.Adam(net.parameters(), lr=0.02)
            ref_opt = ember.optim.Adam(ref.parameters(), lr=0.02)
        else:
            opt = ember.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
            ref_opt = ember.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
        train_steps(net, ref, opt, ref_opt, R, N, 3)
        same(net, ref, what)
        check(all(isinstance(p, DTensor) for p in net.parameters()), "shards after training")


@case
def case_state_dicts(R, N, out):
    import ember
    from ember.distributed.fsdp import FullStateDictConfig, LocalStateDictConfig, StateDictType
    from ember.distributed.fsdp import FullyShardedDataParallel as FSDP
    from ember.distributed.tensor import DTensor

    net, ref = wrapped(3), mlp(3)
    opt = ember.optim.SGD(net.parameters(), lr=0.1)
    ref_opt = ember.optim.SGD(ref.parameters(), lr=0.1)
    train_steps(net, ref, opt, ref_opt, R, N, 2)
    plain_keys = list(ref.state_dict())
    sd = net.state_dict()  # FULL_STATE_DICT by default, on every rank
    check(list(sd) == plain_keys, list(sd))
    check(all(type(v) is ember.Tensor for v in sd.values()))
    check(all(ember.allclose(sd[k], v, atol=1e-12) for k, v in ref.state_dict().items()))
    cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    with FSDP.state_dict_type(net, StateDictType.FULL_STATE_DICT, cfg):
        check(FSDP.get_state_dict_type(net).state_dict_config is cfg)
        full = net.state_dict()
    check(FSDP.get_state_dict_type(net).state_dict_type == StateDictType.FULL_STATE_DICT)
    check((list(full) == plain_keys) if R == 0 else full == {}, f"rank0_only: {list(full)}")
    # a plain model loads it and computes the same outputs; the FSDP model loads it back
    x, _ = global_batch(9, N)
    plain = mlp(11)
    plain.load_state_dict(sd)
    check(ember.allclose(plain(x), ref(x), atol=1e-12), "plain model from the state dict")
    fresh = wrapped(12)
    fresh.load_state_dict(mlp(3).state_dict())  # the initial weights
    fresh.load_state_dict(sd)
    check(ember.allclose(fresh(x[2 * R:2 * R + 2]), ref(x)[2 * R:2 * R + 2], atol=1e-12))
    try:
        fresh.load_state_dict({"0.weight": sd["0.weight"]})
    except RuntimeError as e:
        check('Missing key(s) in state_dict: "0.bias"' in str(e), str(e))
    else:
        raise AssertionError("a partial state dict loaded with strict=True")
    # SHARDED: DTensors under the same keys; LOCAL: this rank's shards
    prev = FSDP.set_state_dict_type(net, StateDictType.SHARDED_STATE_DICT)
    check(prev.state_dict_type == StateDictType.FULL_STATE_DICT)
    sharded = net.state_dict()
    check(list(sharded) == plain_keys and all(isinstance(v, DTensor) for v in sharded.values()))
    other = wrapped(13)
    with FSDP.state_dict_type(other, StateDictType.SHARDED_STATE_DICT):
        other.load_state_dict(sharded)
    same(other, ref, "sharded round trip")
    with FSDP.state_dict_type(net, StateDictType.LOCAL_STATE_DICT, LocalStateDictConfig()):
        local = net.state_dict()
        check(type(local["0.weight"]) is ember.Tensor)
        check(local["0.weight"].shape == net.module[0].module.weight.to_local().shape)
    third = wrapped(14)
    with FSDP.state_dict_type(third, StateDictType.LOCAL_STATE_DICT):
        third.load_state_dict(local)
    same(third, ref, "local round trip")
    try:
        FSDP.set_state_dict_type(net, StateDictType.FULL_STATE_DICT, LocalStateDictConfig())
    except RuntimeError as e:
        check("Expected state_dict_config of type" in str(e))
    else:
        raise AssertionError("a mismatched config was taken")


@case
def case_summon_full_params(R, N, out):
    import ember
    from ember.distributed.fsdp import FullyShardedDataParallel as FSDP
    from ember.distributed.tensor import DTensor

    net, ref = wrapped(4), mlp(4)
    names = [n for n, _ in ref.named_parameters()]
    check([n for n, _ in net.named_parameters()][0]
          == "_fsdp_wrapped_module.0._fsdp_wrapped_module.weight", "PyTorch's names outside")
    with FSDP.summon_full_params(net):
        inside = dict(net.named_parameters())
        check(list(inside) == names, list(inside))  # clean inside, as PyTorch's
        check(not any(isinstance(p, DTensor) for p in inside.values()))
        check(all(ember.equal(inside[n], q) for n, q in ref.named_parameters()))
        with ember.no_grad():
            net.module[0].module.weight.add_(1.0)  # written back to the shards
    check(isinstance(net.module[0].module.weight, DTensor))
    check(ember.allclose(net.module[0].module.weight.full_tensor(), ref[0].weight + 1))
    with FSDP.summon_full_params(net, writeback=False):
        with ember.no_grad():
            net.module[2].module.bias.zero_()
    check(ember.equal(net.module[2].module.bias.full_tensor(), ref[2].bias), "no writeback")
    with FSDP.summon_full_params(net, writeback=False, rank0_only=True):
        w = net.module[4].module.weight
        check((not isinstance(w, DTensor)) == (R == 0), "rank0_only registers on rank 0 only")
    try:
        with FSDP.summon_full_params(net, rank0_only=True):
            pass
    except NotImplementedError as e:
        check("writeback=True and rank0_only=True" in str(e))
    else:
        raise AssertionError("writeback with rank0_only was taken")
    x, y = global_batch(0, N)
    loss_of(net(x[2 * R:2 * R + 2]), y[2 * R:2 * R + 2]).backward()
    with ember.no_grad():
        ref[0].weight.add_(1.0)
    loss_of(ref(x), y).backward()
    with FSDP.summon_full_params(net, with_grads=True, writeback=False):
        for (n, p), q in zip(net.named_parameters(), ref.parameters()):
            check(ember.allclose(p.grad, q.grad, atol=1e-12), f"summoned grad {n}")
    # apply gathers too: an init function sees (and sets) whole parameters
    seen = []

    def init(m):
        if isinstance(m, ember.nn.Linear):
            seen.append(tuple(m.weight.shape))
            with ember.no_grad():
                m.weight.fill_(0.5)

    check(net.apply(init) is net and sorted(seen) == [(2, 6), (5, 3), (6, 5)], seen)
    check(ember.equal(net.module[2].module.weight.full_tensor(), ember.full((6, 5), 0.5,
                                                                          dtype=ember.float64)))


@case
def case_no_sync_accumulates_a_double_batch(R, N, out):
    import ember

    net, ref = wrapped(5), mlp(5)
    opt = ember.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)
    ref_opt = ember.optim.SGD(ref.parameters(), lr=0.1, momentum=0.5)
    for step in range(2):
        opt.zero_grad()
        ref_opt.zero_grad()
        x, y = global_batch(20 + step, 2 * N)  # 4 rows a rank: two micro-batches of 2
        mine = slice(4 * R, 4 * R + 4)
        with net.no_sync():
            loss_of(net(x[mine][:2]), y[mine][:2]).backward()
        check(all(p.grad is None for p in net.parameters()), "no gradient while unsynced")
        loss_of(net(x[mine][2:]), y[mine][2:]).backward()
        (2 * loss_of(ref(x), y)).backward()  # the mean over micro-batches, summed
        opt.step()
        ref_opt.step()
        same(net, ref, f"accumulated step {step}")


@case
def case_clip_grad_norm(R, N, out):
    import ember

    for norm_type in (2.0, float("inf"), 1):
        net, ref = wrapped(6), mlp(6)
        x, y = global_batch(3, N)
        (100 * loss_of(net(x[2 * R:2 * R + 2]), y[2 * R:2 * R + 2])).backward()
        (100 * loss_of(ref(x), y)).backward()
        total = net.clip_grad_norm_(0.5, norm_type=norm_type)
        expected = ember.nn.utils.clip_grad_norm_(ref.parameters(), 0.5, norm_type=norm_type)
        check(total.dtype == ember.float64 and total.dim() == 0, total)
        check(ember.allclose(total, expected, atol=1e-10), f"{norm_type}: {total} {expected}")
        check(float(total) > 0.5, "the case clips")
        for p, q in zip(net.parameters(), ref.parameters()):
            check(ember.allclose(p.grad.full_tensor(), q.grad, atol=1e-12), f"{norm_type}")
    try:
        net.module[0].clip_grad_norm_(1.0)
    except RuntimeError as e:
        check("should only be called on the root FSDP instance" in str(e))
    else:
        raise AssertionError("an inner instance clipped")


@case
def case_mixed_precision(R, N, out):
    import ember
    from ember.distributed.fsdp import MixedPrecision

    policy = MixedPrecision(param_dtype=ember.float32, reduce_dtype=ember.float64,
                            buffer_dtype=ember.float32)
    net, ref = wrapped(7, mixed_precision=policy), mlp(7)
    seen = []
    net.module[0].module.register_forward_pre_hook(
        lambda m, i: seen.append((i[0].dtype, m.weight.dtype)))
    x, y = global_batch(0, N)
    out_ = net(x[2 * R:2 * R + 2])
    check(seen == [(ember.float32, ember.float32)], seen)  # root input cast, weights gathered
    check(out_.dtype == ember.float32, out_.dtype)
    loss_of(out_, y[2 * R:2 * R + 2]).backward()
    loss_of(ref(x), y).backward()
    for p, q in zip(net.parameters(), ref.parameters()):
        check(p.dtype == ember.float64 and p.grad.dtype == ember.float64)
        check(ember.allclose(p.grad.full_tensor(), q.grad, rtol=1e-4, atol=1e-5))
    # batch norm is wrapped apart in full precision; buffers kept in buffer_dtype
    import functools

    import ember.nn as nn
    from ember.distributed.fsdp import FullyShardedDataParallel as FSDP
    from ember.distributed.fsdp.wrap import size_based_auto_wrap_policy

    ember.manual_seed(8)
    model = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Linear(6, 3))
    bf16 = MixedPrecision(param_dtype=ember.bfloat16, buffer_dtype=ember.bfloat16)
    net = FSDP(model, mixed_precision=bf16,
               auto_wrap_policy=functools.partial(size_based_auto_wrap_policy,
                                                  min_num_params=1000))
    check(isinstance(net.module[1], FSDP) and net.module[1].mixed_precision is None)
    check(not isinstance(net.module[0], FSDP))
    check(net.module[1].module.running_mean.dtype == ember.float32)
    y = net(ember.randn(4, 4))
    check(y.dtype == ember.bfloat16, y.dtype)
    y.float().sum().backward()
    check(all(p.grad is not None and p.grad.dtype == ember.float32 for p in net.parameters()))


@case
def case_optim_state_dict_round_trip(R, N, out):
    import copy

    import ember
    from ember.distributed.fsdp import FullyShardedDataParallel as FSDP
    from ember.distributed.tensor import DTensor

    net, ref = wrapped(9), mlp(9)
    opt = ember.optim.Adam(net.parameters(), lr=0.03)
    ref_opt = ember.optim.Adam(ref.parameters(), lr=0.03)
    train_steps(net, ref, opt, ref_opt, R, N, 2)
    osd = FSDP.optim_state_dict(net, opt)
    names = [n for n, _ in ref.named_parameters()]
    check(sorted(osd["state"]) == sorted(names) and osd["param_groups"][0]["params"] == names)
    check(type(osd["state"]["0.weight"]["exp_avg"]) is ember.Tensor)
    check(ember.allclose(osd["state"]["0.weight"]["exp_avg"],
                         ref_opt.state[ref[0].weight]["exp_avg"], atol=1e-12))
    model_sd = net.state_dict()
    full = FSDP.full_optim_state_dict(net, opt)  # rank0_only by default
    check((sorted(full["state"]) == sorted(names)) if R == 0 else full == {})
    # a new model and optimizer, loaded, continue as if never interrupted
    for how in ("optim_state_dict_to_load", "scatter_full_optim_state_dict"):
        net2 = wrapped(10)
        net2.load_state_dict(model_sd)
        opt2 = ember.optim.Adam(net2.parameters(), lr=0.5)
        if how == "optim_state_dict_to_load":
            opt2.load_state_dict(FSDP.optim_state_dict_to_load(net2, opt2, osd))
        else:
            opt2.load_state_dict(FSDP.scatter_full_optim_state_dict(
                full if R == 0 else None, net2, optim=opt2))
        check(opt2.param_groups[0]["lr"] == 0.03, how)
        state = opt2.state[net2.module[0].module.weight]["exp_avg"]  # this rank's chunk
        local = state.to_local() if isinstance(state, DTensor) else state
        check(local.shape == net2.module[0].module.weight.to_local().shape, how)
        ref2 = mlp(9)
        ref2.load_state_dict(ref.state_dict())
        ref_opt2 = ember.optim.Adam(ref2.parameters(), lr=0.03)
        ref_opt2.load_state_dict(copy.deepcopy(ref_opt.state_dict()))
        train_steps(net2, ref2, opt2, ref_opt2, R, N, 2, first=2)
        same(net2, ref2, how)
    train_steps(net, ref, opt, ref_opt, R, N, 2, first=2)
    same(net2, ref, "resumed equals uninterrupted")


@case
def case_construction_options(R, N, out):
    import ember
    import ember.distributed as dist
    import ember.nn as nn
    from ember.distributed.fsdp import FullyShardedDataParallel as FSDP
    from ember.distributed.fsdp import ShardingStrategy
    from ember.distributed.fsdp.fully_sharded_data_parallel import (
        FullyShardedDataParallel as FromModulePath,
    )
    from ember.distributed.fsdp.wrap import (
        CustomPolicy,
        ModuleWrapPolicy,
        enable_wrap,
        lambda_auto_wrap_policy,
        wrap,
    )
    from ember.distributed.tensor import DTensor

    check(FromModulePath is FSDP)
    # sync_module_states: every rank starts from rank 0's parameters and buffers
    ember.manual_seed(100 + R)
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)).double()
    net = FSDP(model, sync_module_states=True, device_id=ember.device("cpu"))
    ember.manual_seed(100)
    rank0 = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)).double()
    sd = net.state_dict()
    check(all(ember.equal(sd[k], v) for k, v in rank0.state_dict().items()), "synced")
    # a meta-device module: reset_parameters(), or param_init_fn
    with ember.device("meta"):
        meta = nn.Sequential(nn.Linear(3, 5), nn.Linear(5, 2))
    net = FSDP(meta, auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
    check(all(not p.is_meta for p in net.parameters()))
    w = net.module[0].module.weight.full_tensor()
    check(float(w.abs().max()) <= 3 ** -0.5 + 1e-6 and float(w.abs().max()) > 0)
    with ember.device("meta"):
        meta = nn.Sequential(nn.Linear(3, 5), nn.Linear(5, 2))

    def init_fn(m):
        m.to_empty(device="cpu", recurse=False)
        with ember.no_grad():
            for p in m.parameters(recurse=False):
                p.fill_(0.25)

    net = FSDP(meta, param_init_fn=init_fn)
    check(all(float(p.full_tensor().min()) == 0.25 for p in net.parameters()))
    # the policies: lambda, CustomPolicy (with per-module kwargs), enable_wrap/wrap
    net = FSDP(mlp(), auto_wrap_policy=functools_partial(
        lambda_auto_wrap_policy, lambda_fn=lambda m: isinstance(m, nn.Linear)
        and m.out_features == 6))
    check([type(m).__name__ for m in net.module] == ["Linear", "Tanh",
                                                     "FullyShardedDataParallel", "ReLU",
                                                     "Linear"])
    policy = CustomPolicy(lambda m: {"sharding_strategy": ShardingStrategy.NO_SHARD}
                          if isinstance(m, nn.Linear) and m.in_features == 3 else False)
    net = FSDP(mlp(), auto_wrap_policy=policy)
    check(net.module[0].sharding_strategy == ShardingStrategy.NO_SHARD)
    check(net.sharding_strategy == ShardingStrategy.FULL_SHARD)
    with enable_wrap(wrapper_cls=FSDP, sharding_strategy=ShardingStrategy.SHARD_GRAD_OP):
        inner = wrap(nn.Linear(3, 3))
        check(isinstance(inner, FSDP) and inner.sharding_strategy
              == ShardingStrategy.SHARD_GRAD_OP)
    check(wrap(nn.Linear(2, 2)).__class__ is nn.Linear)
    # the FSDP module API
    net = wrapped()
    check(net.check_is_root() and not net.module[0].check_is_root())
    check(len(FSDP.fsdp_modules(net)) == 4 and FSDP.fsdp_modules(net, root_only=True) == [net])
    check(net[0] is net.module[0], "indexing reaches the wrapped Sequential")
    check(isinstance(net.module[0].weight, DTensor), "attributes reach the wrapped module")
    keep = mlp()
    net = FSDP(keep, ignored_states=[keep[4]])
    check(not isinstance(keep[4].weight, DTensor) and isinstance(keep[0].weight, DTensor))
    try:
        net.register_comm_hook(None, None)
    except NotImplementedError as e:
        check("register_comm_hook" in str(e))
    else:
        raise AssertionError("register_comm_hook was taken")
    try:
        FSDP(mlp(), sharding_strategy=ShardingStrategy.HYBRID_SHARD)
    except ValueError as e:
        check("requires explicit specification of process group or device_mesh" in str(e))
    else:
        raise AssertionError("manual HYBRID_SHARD without a mesh was taken")
    try:
        FSDP(mlp(), process_group=dist.group.WORLD, device_mesh=net._device_mesh)
    except ValueError as e:
        check("Cannot pass both process_group and device_mesh" in str(e))
    else:
        raise AssertionError("both process_group and device_mesh were taken")


def functools_partial(*args, **kwargs):
    import functools

    return functools.partial(*args, **kwargs)


@case
def case_getting_started_tutorial(R, N, out):
    """PyTorch's "Getting Started with FSDP" tutorial (FSDP_mnist.py), its names as it
    writes them, on small synthetic data and the CPU."""
    import functools
    import os

    import ember as torch
    import ember.distributed as dist
    import ember.nn as nn
    import ember.nn.functional as F
    import ember.optim as optim
    from ember.distributed.fsdp import FullyShardedDataParallel as FSDP
    from ember.distributed.fsdp.wrap import size_based_auto_wrap_policy
    from ember.optim.lr_scheduler import StepLR
    from ember.utils.data.distributed import DistributedSampler

    class Net(nn.Module):
        def __init__(self):
            super(Net, self).__init__()  # noqa: UP008 (the tutorial's words)
            self.conv1 = nn.Conv2d(1, 32, 3, 1)
            self.conv2 = nn.Conv2d(32, 64, 3, 1)
            self.dropout1 = nn.Dropout(0.25)
            self.dropout2 = nn.Dropout(0.5)
            self.fc1 = nn.Linear(9216, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = self.conv1(x)
            x = F.relu(x)
            x = self.conv2(x)
            x = F.relu(x)
            x = F.max_pool2d(x, 2)
            x = self.dropout1(x)
            x = torch.flatten(x, 1)
            x = self.fc1(x)
            x = F.relu(x)
            x = self.dropout2(x)
            x = self.fc2(x)
            output = F.log_softmax(x, dim=1)
            return output

    def train(args, model, rank, world_size, train_loader, optimizer, epoch, sampler=None):
        model.train()
        ddp_loss = torch.zeros(2).to(rank)
        if sampler:
            sampler.set_epoch(epoch)
        for batch_idx, (data, target) in enumerate(train_loader):  # noqa: B007
            data, target = data.to(rank), target.to(rank)
            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target, reduction='sum')
            loss.backward()
            optimizer.step()
            ddp_loss[0] += loss.item()
            ddp_loss[1] += len(data)
        dist.all_reduce(ddp_loss, op=dist.ReduceOp.SUM)
        return float(ddp_loss[0] / ddp_loss[1])

    def test(model, rank, world_size, test_loader):
        model.eval()
        correct = 0
        ddp_loss = torch.zeros(3).to(rank)
        with torch.no_grad():
            for data, target in test_loader:
                data, target = data.to(rank), target.to(rank)
                output = model(data)
                ddp_loss[0] += F.nll_loss(output, target, reduction='sum').item()
                pred = output.argmax(dim=1, keepdim=True)
                ddp_loss[1] += pred.eq(target.view_as(pred)).sum().item()
                ddp_loss[2] += len(data)
        dist.all_reduce(ddp_loss, op=dist.ReduceOp.SUM)
        correct = int(ddp_loss[1])
        return float(ddp_loss[0] / ddp_loss[2]), correct

    rank, world_size, device = dist.get_rank(), dist.get_world_size(), torch.device("cpu")
    g = torch.Generator().manual_seed(0)
    images = torch.randn(24, 1, 28, 28, generator=g)
    labels = (images[:, 0, :14].mean((1, 2)) > images[:, 0, 14:].mean((1, 2))).long()
    dataset1 = torch.utils.data.TensorDataset(images[:16], labels[:16])
    dataset2 = torch.utils.data.TensorDataset(images[16:], labels[16:])
    sampler1 = DistributedSampler(dataset1, rank=rank, num_replicas=world_size, shuffle=True)
    sampler2 = DistributedSampler(dataset2, rank=rank, num_replicas=world_size)
    train_kwargs = {'batch_size': 4, 'sampler': sampler1}
    test_kwargs = {'batch_size': 4, 'sampler': sampler2}
    train_loader = torch.utils.data.DataLoader(dataset1, **train_kwargs)
    test_loader = torch.utils.data.DataLoader(dataset2, **test_kwargs)
    my_auto_wrap_policy = functools.partial(size_based_auto_wrap_policy, min_num_params=100)
    torch.manual_seed(1)
    model = Net().to(device)
    model = FSDP(model, auto_wrap_policy=my_auto_wrap_policy)
    optimizer = optim.Adadelta(model.parameters(), lr=0.1)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    losses = []
    for epoch in range(1, 3):
        losses.append(train(None, model, device, world_size, train_loader, optimizer, epoch,
                            sampler=sampler1))
        test_loss, correct = test(model, device, world_size, test_loader)
        check(test_loss == test_loss and 0 <= correct <= 8, (test_loss, correct))
        scheduler.step()
    check(losses[1] < losses[0], f"training loss went down: {losses}")
    check(abs(optimizer.param_groups[0]["lr"] - 0.049) < 1e-12)
    wrapped_names = sorted(n for n, m in model.named_modules() if isinstance(m, FSDP))
    check(wrapped_names == ["", "_fsdp_wrapped_module.conv1", "_fsdp_wrapped_module.conv2",
                            "_fsdp_wrapped_module.fc1", "_fsdp_wrapped_module.fc2"],
          wrapped_names)
    # use a barrier to make sure training is done on all ranks
    dist.barrier()
    states = model.state_dict()
    path = os.path.join(out, f"mnist_cnn_{world_size}.pt")
    if rank == 0:
        torch.save(states, path)
    dist.barrier()
    plain = Net()
    plain.load_state_dict(torch.load(path, weights_only=True))
    plain.eval()
    model.eval()
    with torch.no_grad():
        check(torch.allclose(plain(images[16:]), model(images[16:]), atol=1e-5),
              "the saved checkpoint is the trained model")


rank_main, runs = case_launches(__file__, "fsdp1_cases", CASES)


@pytest.mark.parametrize("n", [2, 4], ids=["2ranks", "4ranks"])
@pytest.mark.parametrize("name", list(CASES))
def test_fsdp1_case(runs, n, name):
    check_case(runs[n], n, name)


# -- against PyTorch 2.13 (one process: its wrapping, names and keys) ----------------------
ORACLE = '''
import functools, sys, warnings
warnings.filterwarnings("ignore")
which, store = sys.argv[1], sys.argv[2]
if which == "torch":
    import torch
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method="file://" + store, rank=0, world_size=1)
    kwargs = {"device_id": torch.device("cpu"), "use_orig_params": True}
else:
    import ember as torch
    import ember.distributed as dist
    dist.init_process_group()
    kwargs = {}
import importlib
nn = torch.nn
FSDP = importlib.import_module(torch.__name__ + ".distributed.fsdp").FullyShardedDataParallel
wrap = importlib.import_module(torch.__name__ + ".distributed.fsdp.wrap")
size_based_auto_wrap_policy = wrap.size_based_auto_wrap_policy
transformer_auto_wrap_policy = wrap.transformer_auto_wrap_policy
ModuleWrapPolicy = wrap.ModuleWrapPolicy

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.fc1 = nn.Linear(64, 16)
        self.bn = nn.BatchNorm1d(16)
        self.blocks = nn.ModuleList([nn.Linear(16, 16) for _ in range(3)])
        self.head = nn.Sequential(nn.Linear(16, 4), nn.ReLU(), nn.Linear(4, 2))

def encoder():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    return nn.Sequential(nn.Linear(4, 8), nn.TransformerEncoder(layer, 2), nn.Linear(8, 3))

models = {
    "size100": (Net, functools.partial(size_based_auto_wrap_policy, min_num_params=100)),
    "size300": (Net, functools.partial(size_based_auto_wrap_policy, min_num_params=300)),
    "size1000": (Net, functools.partial(size_based_auto_wrap_policy, min_num_params=1000)),
    "transformer": (encoder, functools.partial(transformer_auto_wrap_policy,
                    transformer_layer_cls={nn.TransformerEncoderLayer})),
    "module_policy": (Net, ModuleWrapPolicy({nn.Linear})),
    "none": (Net, None),
}
report = {}
for name, (make, policy) in models.items():
    torch.manual_seed(0)
    model = FSDP(make(), auto_wrap_policy=policy, **kwargs)
    report[name] = {
        "wrapped": [n for n, m in model.named_modules() if isinstance(m, FSDP)],
        "state_dict": list(model.state_dict()),
        "named_parameters": [n for n, _ in model.named_parameters()],
        "named_buffers": [n for n, _ in model.named_buffers()],
    }
    with FSDP.summon_full_params(model):
        report[name]["summoned"] = [n for n, _ in model.named_parameters()]
emit(report)
dist.destroy_process_group()
'''


@pytest.mark.skipif(not mpi_available(), reason="needs mpi4py and mpiexec")
def test_wrapping_and_keys_match_pytorch(tmp_path):
    pytest.importorskip("torch")
    reports = {}
    for which in ("torch", "ember"):
        result = run_ranks(1, ORACLE, tmp_path / which, which, str(tmp_path / "store"),
                           timeout=120)
        assert result.returncode == 0 and result.values, result.output[-4000:]
        reports[which] = result.values[0][0]
    ours, theirs = reports["ember"], reports["torch"]
    assert set(ours) == set(theirs)
    for name in theirs:
        for what in theirs[name]:
            assert ours[name][what] == theirs[name][what], (name, what, json.dumps(
                {"ember": ours[name][what], "torch": theirs[name][what]}, indent=1))
    wrapped_size100 = theirs["size100"]["wrapped"]
    assert "_fsdp_wrapped_module.conv1" in wrapped_size100  # the case exercises wrapping


def test_api_names_match_pytorch():
    torch_fsdp = pytest.importorskip("torch.distributed.fsdp")
    import inspect

    import ember.distributed.fsdp as fsdp
    from ember.distributed.fsdp import api, wrap

    assert set(torch_fsdp.__all__) - {"DataParallelMeshDims", "share_comm_ctx"} <= set(
        fsdp.__all__)
    import torch.distributed.fsdp.api as torch_api
    import torch.distributed.fsdp.wrap as torch_wrap

    assert api.__all__ == torch_api.__all__ and wrap.__all__ == torch_wrap.__all__
    for name in ("__init__", "summon_full_params", "clip_grad_norm_", "fsdp_modules",
                 "optim_state_dict", "optim_state_dict_to_load", "full_optim_state_dict",
                 "state_dict_type", "set_state_dict_type", "scatter_full_optim_state_dict",
                 "shard_full_optim_state_dict"):
        ours = inspect.signature(getattr(fsdp.FullyShardedDataParallel, name))
        theirs = inspect.signature(getattr(torch_fsdp.FullyShardedDataParallel, name))
        assert list(ours.parameters) == list(theirs.parameters), name
        assert [p.default for p in ours.parameters.values()
                if not inspect.isclass(p.default) and not hasattr(p.default, "name")] == [
            p.default for p in theirs.parameters.values()
            if not inspect.isclass(p.default) and not hasattr(p.default, "name")], name
    for cls in ("MixedPrecision", "FullStateDictConfig", "ShardedStateDictConfig",
                "FullOptimStateDictConfig", "CPUOffload", "LocalOptimStateDictConfig"):
        ours, theirs = getattr(api, cls)(), getattr(torch_api, cls)()
        assert list(vars(ours)) == list(vars(theirs)), cls
        assert [v for k, v in vars(ours).items() if not k.startswith("_")] == [
            v for k, v in vars(theirs).items() if not k.startswith("_")], cls
    assert [s.name for s in fsdp.ShardingStrategy] == [s.name for s in
                                                       torch_fsdp.ShardingStrategy]
    for name in ("size_based_auto_wrap_policy", "transformer_auto_wrap_policy",
                 "lambda_auto_wrap_policy"):
        assert list(inspect.signature(getattr(wrap, name)).parameters) == list(
            inspect.signature(getattr(torch_wrap, name)).parameters), name
