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


def test_same_keys_as_pytorch():
    torch = pytest.importorskip("torch")
    from torch.distributed.checkpoint import state_dict as tsd

    tnet = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 6),
                               torch.nn.ReLU(), torch.nn.Linear(6, 2))
    topt = torch.optim.Adam(tnet.parameters(), lr=0.01)
    net = mlp().float()
    opt = ember.optim.Adam(net.parameters(), lr=0.01)
    t_sd, t_osd = tsd.get_state_dict(tnet, topt)
    e_sd, e_osd = get_state_dict(net, opt)
    assert list(t_sd) == list(e_sd)
    assert list(t_osd["state"]) == list(e_osd["state"])
    assert {k: sorted(v) for k, v in t_osd["state"].items()} == \
        {k: sorted(v) for k, v in e_osd["state"].items()}
    assert t_osd["param_groups"][0]["params"] == e_osd["param_groups"][0]["params"]
    options = tsd.StateDictOptions(flatten_optimizer_state_dict=True)
    t_flat = tsd.get_optimizer_state_dict(tnet, topt, options=options)
    e_flat = get_optimizer_state_dict(net, opt, options=StateDictOptions(
        flatten_optimizer_state_dict=True))
    assert sorted(t_flat) == sorted(e_flat)
