"""``ember.distributed.checkpoint`` (DCP) on 2 and 4 MPI ranks: sharded saves, loads into
other placements, meshes and world sizes, async saves, failures seen by every rank."""

from __future__ import annotations

import os

import pytest
from mpi_launch import case_launches, case_registry, check, check_case, distributed_marks

pytestmark = distributed_marks()
CASES, case = case_registry()


def wholes():
    """The full tensors every rank knows (float64, odd sizes: uneven and empty shards)."""
    import ember

    g = ember.Generator().manual_seed(7)
    return {"a": ember.randn(7, 5, generator=g, dtype=ember.float64),
            "b": ember.randn(3, 6, generator=g, dtype=ember.float64),
            "c": ember.randn(5, generator=g).to(ember.bfloat16),
            "d": ember.arange(24, dtype=ember.int64).reshape(4, 6),
            "s": ember.tensor(2.5, dtype=ember.float64)}


def sharded(R, N, layout: str):
    """A state dict of DTensors laid out as ``layout`` says, plus plain values."""
    import ember
    from ember.distributed.device_mesh import init_device_mesh
    from ember.distributed.tensor import Replicate, Shard, distribute_tensor

    w = wholes()
    mesh = init_device_mesh("cpu", (N,))
    if layout == "save":
        pl = {"a": [Shard(0)], "b": [Shard(1)], "c": [Replicate()], "d": [Shard(0)]}
    else:
        pl = {"a": [Shard(1)], "b": [Replicate()], "c": [Shard(0)], "d": [Shard(1)]}
    sd = {k: distribute_tensor(w[k], mesh, p) for k, p in pl.items()}
    if layout != "save" and N == 4:  # a 2-d mesh for one of them
        mesh2 = init_device_mesh("cpu", (2, 2))
        sd["d"] = distribute_tensor(w["d"], mesh2, [Shard(0), Shard(1)])
    sd["s"] = w["s"].clone()
    sd["extra"] = {"step": 12, "names": ["x", "y"], "lr": 0.5, "list": [w["s"] * 2, "z"]}
    if layout != "save":  # placeholders that loading must replace or fill
        for k in ("a", "b", "c", "d"):
            sd[k].to_local().zero_()
        sd["s"].zero_()
        sd["extra"] = {"step": 0, "names": [], "lr": 0.0, "list": [ember.zeros((),
                                                                   dtype=ember.float64), ""]}
    return sd


@case
def case_reshards_on_load(R, N, out):
    import ember
    import ember.distributed as dist
    import ember.distributed.checkpoint as dcp

    path = os.path.join(out, "reshard")
    md = dcp.save(sharded(R, N, "save"), checkpoint_id=path)
    check(isinstance(md, dcp.Metadata) and len(md.state_dict_metadata["a"].chunks) == N)
    check(md.state_dict_metadata["c"].chunks[0].sizes == (5,), "replicated: one chunk")
    files = sorted(f for f in os.listdir(path) if f.endswith(".distcp"))
    check(files == [f"__{r}_0.distcp" for r in range(N)], files)
    sd = sharded(R, N, "load")
    dcp.load(sd, checkpoint_id=path)
    w = wholes()
    for k in ("a", "b", "c", "d"):
        check(ember.equal(sd[k].full_tensor(), w[k]), k)
        check(sd[k].to_local().dtype == w[k].dtype, k)
    check(ember.equal(sd["s"], w["s"]))
    e = sd["extra"]
    check(e["step"] == 12 and e["names"] == ["x", "y"] and e["lr"] == 0.5, e)
    check(ember.equal(e["list"][0], w["s"] * 2) and e["list"][1] == "z", e["list"])
    dist.barrier()
    if R == 0:  # one process, no process group: whole tensors from every rank's chunks
        whole = {k: ember.zeros_like(v) for k, v in w.items()}
        dcp.load(whole, checkpoint_id=path, no_dist=True)
        for k, v in w.items():
            check(ember.equal(whole[k], v), k)
    dist.barrier()


@case
def case_async_save_snapshots(R, N, out):
    import ember
    import ember.distributed as dist
    import ember.distributed.checkpoint as dcp

    path = os.path.join(out, "async")
    sd = sharded(R, N, "save")
    fut = dcp.async_save(sd, checkpoint_id=path)
    sd["a"].to_local().add_(100.0)  # training goes on: the saved values are the old ones
    dist.all_reduce(ember.ones(3))  # collectives of the main thread meanwhile
    md = fut.result(timeout=60)
    check(isinstance(md, dcp.Metadata))
    target = sharded(R, N, "load")
    dcp.load(target, checkpoint_id=path)
    check(ember.equal(target["a"].full_tensor(), wholes()["a"]), "async save copied first")


@case
def case_failures_reach_every_rank(R, N, out):
    import ember
    import ember.distributed.checkpoint as dcp

    path = os.path.join(out, "reshard")
    sd = sharded(R, N, "load")
    if R == N - 1:
        sd["only_here"] = ember.zeros(2)  # one rank asks for a key the checkpoint lacks
    try:
        dcp.load(sd, checkpoint_id=path)
    except dcp.CheckpointException as e:
        check(list(e.failures) == [N - 1], e.failures)
        check("Missing key in checkpoint state_dict: only_here." in str(e), str(e))
    else:
        raise AssertionError("load did not fail on every rank")
    partial = {"a": sharded(R, N, "load")["a"], "only_here": ember.zeros(2)}
    dcp.load(partial, checkpoint_id=path, planner=dcp.DefaultLoadPlanner(allow_partial_load=True))
    check(ember.equal(partial["a"].full_tensor(), wholes()["a"]))
    try:
        dcp.save({"x": ember.zeros(1)}, storage_writer=dcp.FileSystemWriter(path, overwrite=False))
    except dcp.CheckpointException as e:
        check("Checkpoint already exists and self.overwrite=False." in str(e), str(e))
    else:
        raise AssertionError("overwrite=False saved over a checkpoint")




@case
def case_huggingface_layout(R, N, out):
    import ember
    import ember.distributed as dist
    import ember.distributed.checkpoint as dcp
    from ember.safetensors import load_file

    w = wholes()
    tensors = {k: w[k] for k in ("a", "b", "c", "d")}
    mapping = {"a": 1, "b": 1, "c": 2, "d": 2}
    # whole files from one rank's full state dict, as from_pretrained reads them
    full_dir = os.path.join(out, "hf_full")
    if R == 0:
        dcp.save(tensors, storage_writer=dcp.HuggingFaceStorageWriter(
            full_dir, fqn_to_index_mapping=mapping), no_dist=True)
    dist.barrier()
    files = sorted(os.listdir(full_dir))
    check(files == ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                    "model.safetensors.index.json"], files)
    check(ember.equal(load_file(os.path.join(full_dir, "model-00002-of-00002.safetensors"))["d"],
                      w["d"]))
    # each rank reads only its shards of the whole files
    sd = sharded(R, N, "load")
    del sd["s"], sd["extra"]
    dcp.load(sd, storage_reader=dcp.HuggingFaceStorageReader(full_dir))
    for k in tensors:
        check(ember.equal(sd[k].full_tensor(), w[k]), k)
    # every rank writes its shards; consolidation joins them into whole files
    shard_dir = os.path.join(out, "hf_sharded")
    saved = {k: v for k, v in sharded(R, N, "save").items() if k in tensors}
    dcp.save(saved, storage_writer=dcp.HuggingFaceStorageWriter(
        shard_dir, fqn_to_index_mapping=mapping, save_distributed=True,
        enable_consolidation=True))
    dist.barrier()
    whole = load_file(os.path.join(shard_dir, "model-00001-of-00002.safetensors"))
    whole.update(load_file(os.path.join(shard_dir, "model-00002-of-00002.safetensors")))
    for k in tensors:
        check(ember.equal(whole[k], w[k]), k)
    # and the shards alone load too (offsets from their DCP_SHARDING_INFO)
    again = sharded(R, N, "load")
    del again["s"], again["extra"]
    dcp.load(again, storage_reader=dcp.HuggingFaceStorageReader(
        os.path.join(shard_dir, "sharded")))
    for k in tensors:
        check(ember.equal(again[k].full_tensor(), w[k]), k)


rank_main, runs = case_launches(__file__, "dcp_cases", CASES)


@pytest.mark.parametrize("n", [2, 4], ids=["2ranks", "4ranks"])
@pytest.mark.parametrize("name", list(CASES))
def test_dcp_case(runs, n, name):
    check_case(runs[n], n, name)
