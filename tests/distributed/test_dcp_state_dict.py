"""``ember.distributed.checkpoint.state_dict``: model and optimizer state dicts by parameter
name, sharded or full, on 2 and 4 MPI ranks (FSDP2, DDP) and in one process."""

from __future__ import annotations

import os

import pytest
from mpi_launch import case_launches, case_registry, check, check_case, distributed_marks

import ember
import ember.nn as nn
from ember.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    get_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
    set_state_dict,
)

CASES, case = case_registry()


def mlp(seed: int = 0):
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 6), nn.ReLU(),
                         nn.Linear(6, 2)).double()


def sharded(seed: int = 0):
    from ember.distributed.fsdp import fully_shard

    net = mlp(seed)
    for layer in net:
        if list(layer.parameters()):
            fully_shard(layer)
    return fully_shard(net)


def train(net, opt, steps, start, R, N):
    for step in range(start, start + steps):
        g = ember.Generator().manual_seed(900 + step)
        x = ember.randn(2 * N, 3, generator=g, dtype=ember.float64)
        y = ember.randn(2 * N, 2, generator=g, dtype=ember.float64)
        opt.zero_grad()
        ((net(x[2 * R:2 * R + 2]) - y[2 * R:2 * R + 2]) ** 2).mean().backward()
        opt.step()


def full_params(net) -> dict:
    return {k: v.full_tensor() for k, v in net.state_dict().items()}


def copied(obj):
    """``obj`` with its tensors cloned, as a checkpoint read back from a file gives it: a live
    state dict shares the optimizer's ``step`` tensors (in PyTorch too), and an optimizer
    loaded from it would step them twice."""
    if isinstance(obj, ember.Tensor):
        return obj.clone()
    if isinstance(obj, dict):
        return {k: copied(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [copied(v) for v in obj]
    return obj


NAMES = ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"]


@case
def case_sharded_and_full_state_dicts(R, N, out):
    from ember.distributed.tensor import DTensor

    net = sharded()
    opt = ember.optim.AdamW(net.parameters(), lr=0.02)
    train(net, opt, 2, 0, R, N)
    sd, osd = get_state_dict(net, opt)
    check(list(sd) == NAMES and all(isinstance(v, DTensor) for v in sd.values()), list(sd))
    check(sorted(osd["state"]) == sorted(NAMES) and osd["param_groups"][0]["params"] == NAMES)
    check(isinstance(osd["state"]["0.weight"]["exp_avg"], DTensor))
    check(osd["state"]["0.weight"]["step"].item() == 2.0)
    full, full_osd = get_state_dict(net, opt, options=StateDictOptions(full_state_dict=True))
    for k, v in full_params(net).items():
        check(type(full[k]) is not DTensor and ember.equal(full[k], v), k)
    check(full_osd["state"]["0.weight"]["exp_avg"].shape == (5, 3))
    check(ember.equal(full_osd["state"]["0.weight"]["exp_avg"],
                      osd["state"]["0.weight"]["exp_avg"].full_tensor()))
    only0 = get_model_state_dict(net, options=StateDictOptions(full_state_dict=True,
                                                               cpu_offload=True))
    check((len(only0) == 6) if R == 0 else only0 == {}, len(only0))
    flat = get_optimizer_state_dict(net, opt, options=StateDictOptions(
        flatten_optimizer_state_dict=True))
    check("state.2.weight.exp_avg_sq" in flat and flat["param_groups.4.bias.lr"] == 0.02)


@case
def case_full_state_dict_from_rank0_resumes(R, N, out):
    path = os.path.join(out, "full.pt")
    net = sharded()
    opt = ember.optim.AdamW(net.parameters(), lr=0.02, weight_decay=0.1)
    train(net, opt, 2, 0, R, N)
    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    sd, osd = get_state_dict(net, opt, options=options)
    if R == 0:
        ember.save({"model": sd, "optim": osd}, path)
    ember.distributed.barrier()
    train(net, opt, 2, 2, R, N)
    want = full_params(net)

    fresh = sharded(seed=5)
    fresh_opt = ember.optim.AdamW(fresh.parameters(), lr=0.5, weight_decay=0.1)
    loaded = ember.load(path) if R == 0 else {"model": {}, "optim": {}}
    load_options = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
    set_model_state_dict(fresh, loaded["model"], options=load_options)
    set_optimizer_state_dict(fresh, fresh_opt, loaded["optim"], options=load_options)
    check(fresh_opt.param_groups[0]["lr"] == 0.02)
    train(fresh, fresh_opt, 2, 2, R, N)
    for k, v in full_params(fresh).items():
        check(ember.allclose(v, want[k], rtol=0, atol=1e-12), k)


@case
def case_dcp_round_trip_of_app_state(R, N, out):
    import ember.distributed.checkpoint as dcp

    class AppState(dcp.Stateful):
        def __init__(self, model, optimizer):
            self.model, self.optimizer = model, optimizer

        def state_dict(self):
            sd, osd = get_state_dict(self.model, self.optimizer)
            return {"model": sd, "optim": osd}

        def load_state_dict(self, state_dict):
            set_state_dict(self.model, self.optimizer, model_state_dict=state_dict["model"],
                           optim_state_dict=state_dict["optim"])

    path = os.path.join(out, "app")
    net = sharded()
    opt = ember.optim.Adam(net.parameters(), lr=0.03)
    train(net, opt, 2, 0, R, N)
    dcp.save({"app": AppState(net, opt)}, checkpoint_id=path)
    train(net, opt, 2, 2, R, N)
    want = full_params(net)
    fresh = sharded(seed=9)
    fresh_opt = ember.optim.Adam(fresh.parameters(), lr=0.03)
    dcp.load({"app": AppState(fresh, fresh_opt)}, checkpoint_id=path)
    train(fresh, fresh_opt, 2, 2, R, N)
    for k, v in full_params(fresh).items():
        check(ember.allclose(v, want[k], rtol=0, atol=1e-12), k)


@case
def case_ddp_names_have_no_module_prefix(R, N, out):
    from ember.nn.parallel import DistributedDataParallel as DDP

    net = DDP(mlp())
    opt = ember.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    train(net, opt, 1, 0, R, N)
    sd, osd = get_state_dict(net, opt)
    check(list(sd) == NAMES, list(sd))
    check(osd["param_groups"][0]["params"] == NAMES)
    other = DDP(mlp(seed=3))
    other_opt = ember.optim.SGD(other.parameters(), lr=0.1, momentum=0.9)
    result = set_state_dict(other, other_opt, model_state_dict=sd, optim_state_dict=osd)
    check(result.missing_keys == [] and result.unexpected_keys == [], result)
    for (k, a), b in zip(net.module.state_dict().items(), other.module.state_dict().values()):
        check(ember.equal(a, b), k)
    check(ember.equal(other_opt.state[other.module[0].weight]["momentum_buffer"],
                      opt.state[net.module[0].weight]["momentum_buffer"]))
    third = DDP(mlp(seed=5))
    full = get_model_state_dict(net, options=StateDictOptions(full_state_dict=True,
                                                               cpu_offload=True))
    check(list(full) == (NAMES if R == 0 else []), list(full))
    set_model_state_dict(third, full, options=StateDictOptions(full_state_dict=True,
                                                               broadcast_from_rank0=True))
    for (k, a), b in zip(net.module.state_dict().items(), third.module.state_dict().values()):
        check(ember.equal(a, b), k)


@case
def case_full_state_dict_on_every_rank_flattened(R, N, out):
    from ember.distributed.tensor import DTensor

    net = sharded()
    opt = ember.optim.AdamW(net.parameters(), lr=0.02, weight_decay=0.1)
    train(net, opt, 2, 0, R, N)
    options = StateDictOptions(full_state_dict=True, flatten_optimizer_state_dict=True)
    sd, flat = get_state_dict(net, opt, options=options)
    check("state.0.weight.exp_avg" in flat and type(flat["state.0.weight.exp_avg"]) is not DTensor)
    check(flat["param_groups.2.bias.weight_decay"] == 0.1 and flat["state.4.bias.step"] == 2.0)
    sd, flat = copied(sd), copied(flat)  # as every rank would read it back from a file
    fresh = sharded(seed=5)
    fresh_opt = ember.optim.AdamW(fresh.parameters(), lr=0.5, weight_decay=0.1)
    set_state_dict(fresh, fresh_opt, model_state_dict=sd, optim_state_dict=flat, options=options)
    check(isinstance(fresh[0].weight, DTensor) and fresh_opt.param_groups[0]["lr"] == 0.02)
    check(ember.equal(fresh_opt.state[fresh[2].weight]["exp_avg_sq"],
                      opt.state[net[2].weight]["exp_avg_sq"]))  # this rank's shard
    train(net, opt, 2, 2, R, N)
    train(fresh, fresh_opt, 2, 2, R, N)
    want = full_params(net)
    for k, v in full_params(fresh).items():
        check(ember.allclose(v, want[k], rtol=0, atol=1e-12), k)


@case
def case_meta_model_takes_broadcast_full_state_dict(R, N, out):
    from ember.distributed.fsdp import fully_shard
    from ember.distributed.tensor import DTensor, Shard

    source = sharded()
    full = get_model_state_dict(source, options=StateDictOptions(full_state_dict=True,
                                                                 cpu_offload=True))

    def full_or_none(sd, key):  # rank 0's value, for every rank to compare with
        box = [sd.get(key)]
        ember.distributed.broadcast_object_list(box, src=0)
        return box[0]

    with ember.device("meta"):
        net = mlp(seed=7)
    for layer in net:
        if list(layer.parameters()):
            fully_shard(layer)
    fully_shard(net)
    check(net[0].weight.is_meta)
    result = set_model_state_dict(net, full, options=StateDictOptions(
        full_state_dict=True, broadcast_from_rank0=True))
    check(result.missing_keys == [] and result.unexpected_keys == [], result)
    weight = net[0].weight
    check(isinstance(weight, DTensor) and not weight.is_meta and weight.device.type == "cpu")
    check(tuple(weight.placements) == (Shard(0),) and ember.equal(weight.full_tensor(),
                                                                  full_or_none(full, "0.weight")))
    opts = [ember.optim.Adam(m.parameters(), lr=0.05) for m in (source, net)]
    train(source, opts[0], 2, 0, R, N)
    train(net, opts[1], 2, 0, R, N)
    want = full_params(source)
    for k, v in full_params(net).items():
        check(ember.allclose(v, want[k], rtol=0, atol=1e-12), k)


@case
def case_frozen_and_strict_on_sharded_model(R, N, out):
    net = sharded()
    net[0].weight.requires_grad_(False)
    opt = ember.optim.AdamW([p for p in net.parameters() if p.requires_grad], lr=0.02)
    train(net, opt, 1, 0, R, N)
    options = StateDictOptions(full_state_dict=True, ignore_frozen_params=True)
    sd, osd = get_state_dict(net, opt, options=options)
    check(list(sd) == NAMES[1:], list(sd))
    check(sorted(osd["state"]) == sorted(NAMES[1:]))
    fresh = sharded(seed=3)
    before = fresh[0].weight.full_tensor()
    load = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
    try:
        set_model_state_dict(fresh, sd if R == 0 else {}, options=load)
        raised = ""
    except RuntimeError as e:
        raised = str(e)
    check('Missing key(s) in state_dict: "0.weight"' in raised, raised)  # on every rank
    load.strict = False
    result = set_model_state_dict(fresh, sd if R == 0 else {}, options=load)
    check(result.missing_keys == [] and result.unexpected_keys == [], result)
    check(ember.equal(fresh[0].weight.full_tensor(), before))  # kept its own value
    for k, v in full_params(net).items():
        if k != "0.weight":
            check(ember.equal(fresh.state_dict()[k].full_tensor(), v), k)


@case
def case_hsdp_full_state_dict_round_trip(R, N, out):
    from ember.distributed.device_mesh import init_device_mesh
    from ember.distributed.fsdp import fully_shard
    from ember.distributed.tensor import Replicate, Shard

    def hsdp(seed):
        mesh = init_device_mesh("cpu", (2, N // 2), mesh_dim_names=("replicate", "shard"))
        net = mlp(seed)
        for layer in net:
            if list(layer.parameters()):
                fully_shard(layer, mesh=mesh)
        return fully_shard(net, mesh=mesh)

    net = hsdp(0)
    check(tuple(net[2].weight.placements) == (Replicate(), Shard(0)))
    opt = ember.optim.Adam(net.parameters(), lr=0.02)
    train(net, opt, 2, 0, R, N)
    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    sd, osd = get_state_dict(net, opt, options=options)
    check(R == 0 or (sd == {} and osd == {}))
    sd, osd = copied(sd), copied(osd)
    fresh = hsdp(4)
    fresh_opt = ember.optim.Adam(fresh.parameters(), lr=0.3)
    # one call for both, the other ranks passing {}: each rank loads the model too (PyTorch's
    # set_state_dict would skip it there, and hang)
    set_state_dict(fresh, fresh_opt, model_state_dict=sd, optim_state_dict=osd,
                   options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=True))
    check(tuple(fresh_opt.state[fresh[0].weight]["exp_avg"].shape)
          == tuple(opt.state[net[0].weight]["exp_avg"].shape))
    train(net, opt, 2, 2, R, N)
    train(fresh, fresh_opt, 2, 2, R, N)
    want = full_params(net)
    for k, v in full_params(fresh).items():
        check(ember.allclose(v, want[k], rtol=0, atol=1e-12), k)


rank_main, runs = case_launches(__file__, "dcp_state_dict_cases", CASES)


@pytest.mark.parametrize("n", [2, 4], ids=["2ranks", "4ranks"])
@pytest.mark.parametrize("name", list(CASES))
def test_state_dict_case(runs, n, name):
    check_case(runs[n], n, name)


for _mark in distributed_marks():  # the MPI cases only: the one-process tests run anywhere
    test_state_dict_case = _mark(test_state_dict_case)


# -- one process --------------------------------------------------------------------------------
def trained(seed=0, frozen=False):
    net = mlp(seed)
    if frozen:
        net[0].weight.requires_grad_(False)
    opt = ember.optim.Adam([p for p in net.parameters() if p.requires_grad], lr=0.01)
    net(ember.ones(4, 3, dtype=ember.float64)).sum().backward()
    opt.step()
    return net, opt


def test_one_process_names_and_round_trip():
    net, opt = trained()
    sd, osd = get_state_dict(net, opt)
    assert list(sd) == NAMES and osd["param_groups"][0]["params"] == NAMES
    before = net[0].bias.detach().clone()
    sd["0.bias"].add_(1.0)  # the values share the parameters' memory (in-place loads work)
    assert ember.equal(net[0].bias.detach(), before + 1.0)
    sd["0.bias"].sub_(1.0)
    other, other_opt = mlp(4), None
    other_opt = ember.optim.Adam(other.parameters(), lr=0.5)
    set_state_dict(other, other_opt, model_state_dict=sd, optim_state_dict=osd)
    assert other_opt.param_groups[0]["lr"] == 0.01
    assert ember.equal(other_opt.state[other[2].weight]["exp_avg"],
                       opt.state[net[2].weight]["exp_avg"])
    assert ember.equal(other[4].bias, net[4].bias)


def test_fresh_optimizer_gets_its_state_first():
    net = mlp()
    opt = ember.optim.AdamW(net.parameters(), lr=0.1)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    osd = get_optimizer_state_dict(net, opt)
    assert osd["state"]["0.weight"]["step"].item() == 1.0  # one step at lr 0, as PyTorch
    assert all(ember.equal(v, before[k]) for k, v in net.state_dict().items())
    assert all(p.grad is None for p in net.parameters())
    assert opt.param_groups[0]["lr"] == 0.1


def test_flattened_optimizer_state_round_trip():
    net, opt = trained()
    options = StateDictOptions(flatten_optimizer_state_dict=True)
    flat = get_optimizer_state_dict(net, opt, options=options)
    assert "state.0.weight.exp_avg" in flat and flat["param_groups.0.weight.lr"] == 0.01
    other = mlp(2)
    other_opt = ember.optim.Adam(other.parameters(), lr=0.3)
    set_optimizer_state_dict(other, other_opt, flat, options=options)
    assert other_opt.param_groups[0]["lr"] == 0.01
    assert ember.equal(other_opt.state[other[0].weight]["exp_avg_sq"],
                       opt.state[net[0].weight]["exp_avg_sq"])


def test_frozen_compiled_and_several_optimizers():
    net, opt = trained(frozen=True)
    sd = get_model_state_dict(net, options=StateDictOptions(ignore_frozen_params=True))
    assert "0.weight" not in sd and "0.bias" in sd
    compiled = ember.compile(net)
    assert list(get_model_state_dict(compiled)) == NAMES  # no "_orig_mod."
    first = ember.optim.SGD(list(net[0].parameters()) + list(net[2].parameters()), lr=0.1,
                            momentum=0.5)
    second = ember.optim.Adam(net[4].parameters(), lr=0.2)
    net(ember.ones(2, 3, dtype=ember.float64)).sum().backward()
    first.step()
    second.step()
    osd = get_optimizer_state_dict(net, [first, second])
    assert [g["params"] for g in osd["param_groups"]] == [NAMES[:4], NAMES[4:]]
    assert "momentum_buffer" in osd["state"]["2.weight"] and "exp_avg" in osd["state"]["4.bias"]


def test_errors_as_pytorch():
    net, opt = trained()
    with pytest.raises(ValueError, match="full_state_dict must be True when "
                                         "broadcast_from_rank0 is True."):
        get_model_state_dict(net, options=StateDictOptions(broadcast_from_rank0=True))
    with pytest.raises(RuntimeError, match="model state_dict is empty"):
        set_model_state_dict(net, {})
    with pytest.raises(RuntimeError, match="Missing key"):
        set_model_state_dict(net, {"0.weight": net[0].weight.detach()})
    result = set_model_state_dict(net, {"0.weight": net[0].weight.detach() * 2},
                                  options=StateDictOptions(strict=False))
    assert "0.bias" in result.missing_keys
    osd = get_optimizer_state_dict(net, opt)
    del osd["state"]["2.bias"]
    with pytest.raises(RuntimeError, match="Missing optimizer state for parameter '2.bias'"):
        set_optimizer_state_dict(net, opt, osd)


def tied(nn, lib):
    """A model with a tied weight, a persistent and a non-persistent buffer (``nn``/``lib``:
    torch's or Ember's)."""

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(7, 4)
            self.body = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
            self.head = nn.Linear(4, 7, bias=False)
            self.head.weight = self.emb.weight
            self.register_buffer("running", lib.zeros(3))
            self.register_buffer("scratch", lib.zeros(2), persistent=False)

        def forward(self, x):
            return self.head(self.body(self.emb(x)))

    lib.manual_seed(0)
    model = Tied()
    opt = lib.optim.Adam([{"params": model.emb.parameters(), "lr": 0.1},
                          {"params": model.body.parameters()}], lr=0.01)
    return model, opt


def structure(obj):
    """Keys, shapes and plain values of a state dict, comparable between torch and Ember."""
    if hasattr(obj, "shape"):
        return "tensor", tuple(obj.shape), str(obj.dtype).split(".")[-1]
    if isinstance(obj, dict):
        return {k: structure(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj).__name__, [structure(v) for v in obj]
    return obj


def test_same_state_dicts_as_pytorch():
    torch = pytest.importorskip("torch")
    from torch.distributed.checkpoint import state_dict as tsd

    for (model, opt), api in ((tied(torch.nn, torch), tsd),
                              (tied(nn, ember), __import__(get_state_dict.__module__,
                                                           fromlist=["_"]))):
        sd, osd = api.get_state_dict(model, opt)
        flat = api.get_optimizer_state_dict(model, opt, options=api.StateDictOptions(
            flatten_optimizer_state_dict=True))
        with pytest.warns(FutureWarning, match="Getting submodules only"):
            sub = api.get_model_state_dict(model, submodules={model.body}, options=api.
                                           StateDictOptions(keep_submodule_prefixes=False))
        full = api.get_model_state_dict(model, options=api.StateDictOptions(
            full_state_dict=True, cpu_offload=True))  # no process group: every value, on CPU
        api.set_optimizer_state_dict(model, opt, opt.state_dict())  # integer keys load as is
        got = (structure(sd), structure(osd), structure(flat), list(sub), list(full))
        if api is tsd:
            want = got
    assert got == want
    assert list(want[0]) == ["running", "emb.weight", "body.0.weight", "body.0.bias",
                             "head.weight"]
    assert list(want[1]["state"]) == ["emb.weight", "body.0.weight", "body.0.bias"]
    assert list(want[3]) == ["0.weight", "0.bias"]


def test_wrapper_prefixes_are_not_in_the_names():
    class CheckpointWrapper(nn.Module):  # PyTorch's wrapper: its attribute name, and it
        def __init__(self, module):  # forwards other attributes to the wrapped module
            super().__init__()
            self._checkpoint_wrapped_module = module

        def __getattr__(self, name):
            try:
                return super().__getattr__(name)
            except AttributeError:
                return getattr(self._checkpoint_wrapped_module, name)

        def forward(self, x):
            return self._checkpoint_wrapped_module(x)

    net = mlp()
    net[2] = CheckpointWrapper(net[2])
    compiled = ember.compile(net)
    assert "_orig_mod.2._checkpoint_wrapped_module.weight" in compiled.state_dict()
    opt = ember.optim.SGD(compiled.parameters(), lr=0.1, momentum=0.9)
    sd, osd = get_state_dict(compiled, opt)
    assert list(sd) == NAMES and osd["param_groups"][0]["params"] == NAMES
    other = ember.compile(mlp(seed=1))
    other_opt = ember.optim.SGD(other.parameters(), lr=0.5, momentum=0.9)
    result = set_state_dict(other, other_opt, model_state_dict=sd, optim_state_dict=osd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert ember.equal(other._orig_mod[2].weight, net[2]._checkpoint_wrapped_module.weight)
    with pytest.raises(RuntimeError, match="Missing key: 0.bias."):
        set_model_state_dict(other, {k: v for k, v in sd.items() if k != "0.bias"})


def test_submodules_and_module_keyed_state_dicts():
    net, opt = trained()
    with pytest.warns(FutureWarning, match="Getting submodules only model/optim state_dict"):
        kept = get_model_state_dict(net, submodules={net[2]})
    with pytest.warns(FutureWarning):
        bare = get_model_state_dict(net, submodules={net[2]}, options=StateDictOptions(
            keep_submodule_prefixes=False))
    assert list(kept) == ["2.weight", "2.bias"] and list(bare) == ["weight", "bias"]
    other = mlp(seed=6)
    with pytest.warns(FutureWarning, match="Passing model_state_dict as a"):
        result = set_model_state_dict(other, {other[2]: bare},
                                      options=StateDictOptions(strict=False))
    assert ember.equal(other[2].weight, net[2].weight)
    assert result.missing_keys == ["0.weight", "0.bias", "4.weight", "4.bias"]


def test_patched_state_dict_methods():
    from ember.distributed.checkpoint.state_dict import (
        _patch_model_state_dict,
        _patch_optimizer_state_dict,
    )

    net, opt = trained()
    compiled = ember.compile(net)
    _patch_model_state_dict(compiled)
    assert list(compiled.state_dict()) == NAMES
    first = ember.optim.SGD(net[0].parameters(), lr=0.1)
    second = ember.optim.Adam(list(net[2].parameters()) + list(net[4].parameters()), lr=0.2)
    _patch_optimizer_state_dict(compiled, optimizers=(first, second))
    osd = first.state_dict()
    assert structure(osd) == structure(second.state_dict())
    assert [g["params"] for g in osd["param_groups"]] == [NAMES[:2], NAMES[2:]]
    other = ember.compile(mlp(seed=2))
    _patch_model_state_dict(other)
    other.load_state_dict(compiled.state_dict())
    assert ember.equal(other._orig_mod[4].weight, net[4].weight)
    second.param_groups[0]["lr"] = 0.7
    first.load_state_dict(osd)  # both optimizers load the merged dict (stateless SGD too)
    assert second.param_groups[0]["lr"] == 0.2 and first.param_groups[0]["lr"] == 0.1


def test_init_optim_state_as_pytorch():
    from ember.distributed.checkpoint.state_dict import _init_optim_state

    net = mlp()
    net[0].weight.requires_grad_(False)
    lr = ember.tensor(0.05)
    opt = ember.optim.Adam(net.parameters(), lr=lr)
    before = [p.detach().clone() for p in net.parameters()]
    _init_optim_state(opt)
    assert opt.param_groups[0]["lr"] is lr and lr.item() == pytest.approx(0.05)  # restored
    assert all(ember.equal(p, b) for p, b in zip(net.parameters(), before))
    assert all(p.grad is None for p in net.parameters())
    assert net[0].weight not in opt.state and opt.state[net[0].bias]["step"].item() == 1.0
    _init_optim_state(opt)  # has state already: nothing happens
    assert opt.state[net[0].bias]["step"].item() == 1.0
    sgd = ember.optim.SGD(net.parameters(), lr=0.1)
    net[2].bias.grad = ember.ones_like(net[2].bias)
    _init_optim_state(sgd)  # a gradient exists: nothing happens either
    assert ember.equal(net[2].bias.grad, ember.ones_like(net[2].bias))


def test_several_optimizers_round_trip():
    net = mlp()
    opts = [ember.optim.SGD(list(net[0].parameters()) + list(net[2].parameters()), lr=0.1,
                            momentum=0.5),
            ember.optim.Adam(net[4].parameters(), lr=0.2)]
    net(ember.ones(2, 3, dtype=ember.float64)).sum().backward()
    for opt in opts:
        opt.step()
    sd, osd = get_state_dict(net, opts)
    other = mlp(seed=8)
    other_opts = [ember.optim.SGD(list(other[0].parameters()) + list(other[2].parameters()),
                                  lr=0.9, momentum=0.5),
                  ember.optim.Adam(other[4].parameters(), lr=0.9)]
    set_state_dict(other, other_opts, model_state_dict=sd, optim_state_dict=osd)
    assert [o.param_groups[0]["lr"] for o in other_opts] == [0.1, 0.2]
    assert ember.equal(other_opts[0].state[other[2].weight]["momentum_buffer"],
                       opts[0].state[net[2].weight]["momentum_buffer"])
    assert ember.equal(other_opts[1].state[other[4].bias]["exp_avg"],
                       opts[1].state[net[4].bias]["exp_avg"])
    flat_options = StateDictOptions(flatten_optimizer_state_dict=True)
    flat = get_optimizer_state_dict(net, opts, options=flat_options)
    set_optimizer_state_dict(other, other_opts, flat, options=flat_options)
    assert other_opts[1].param_groups[0]["lr"] == 0.2


def test_more_errors_as_pytorch():
    net, opt = trained()
    with pytest.raises(RuntimeError, match="Optimizers are not passed in but optim_only is "
                                           "set to True."):
        get_optimizer_state_dict(net, [])
    with pytest.raises(RuntimeError, match="or load but optim state_dict is empty"):
        set_optimizer_state_dict(net, opt, {})
    with pytest.raises(RuntimeError, match=r"model state_dict is empty.rank = "
                                           r"dist.get_rank\(\)=0."):
        set_model_state_dict(net, {})
    options = StateDictOptions(flatten_optimizer_state_dict=True)
    flat = get_optimizer_state_dict(net, opt, options=options)
    del flat["param_groups.2.bias.lr"]  # PyTorch reads a group's values from its first name
    set_optimizer_state_dict(net, opt, flat, options=options)
    del flat["param_groups.0.weight.lr"]
    with pytest.raises(KeyError, match="param_groups.0.weight.lr"):
        set_optimizer_state_dict(net, opt, flat, options=options)

    class Odd(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def get_extra_state(self):
            return {1, 2}

        def set_extra_state(self, state):
            pass

    with pytest.raises(ValueError, match="Unexpected value type <class 'set'>"):
        get_model_state_dict(Odd(), options=StateDictOptions(full_state_dict=True))
    one = ember.optim.SGD([{"params": net[0].parameters()}, {"params": []}], lr=0.1)
    two = ember.optim.SGD(list(net[2].parameters()) + list(net[4].parameters()), lr=0.1)
    osd = get_optimizer_state_dict(net, [one, two])
    with pytest.raises(ValueError, match="multiple optimizers are not supported"):
        set_optimizer_state_dict(net, [one, two], osd)
