"""Distributed checkpoints in one process: PyTorch's file format both ways, conversions,
and bad or hostile files (loading never runs code)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import pytest

import ember
import ember.distributed.checkpoint as dcp
from ember.distributed.checkpoint.format_utils import dcp_to_torch_save, torch_save_to_dcp

pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")


def state():
    def values(*shape):  # deterministic values on any default device (no generator)
        n = 1
        for d in shape:
            n *= d
        return (ember.arange(n, dtype=ember.float64) * 0.7 + 0.3).sin().reshape(shape)

    return {"w": values(3, 4),
            "half": values(5).to(ember.float16),
            "bf": values(2, 2).to(ember.bfloat16),
            "ids": ember.arange(6).reshape(2, 3),
            "mask": ember.tensor([True, False]),
            "z": ember.tensor([1 + 2j, 3 - 1j], dtype=ember.complex64),
            "scalar": ember.tensor(1.5),
            "empty": ember.zeros(0, 3),
            "optim": {"state": {0: {"step": ember.tensor(3.0), "exp_avg": ember.ones(2, 2)}},
                      "param_groups": [{"lr": 0.1, "betas": (0.9, 0.99), "params": [0]}]},
            "epoch": 4, "name": "run-1", "history": [1.0, 2.0]}


def blank(sd):
    """``sd`` with every tensor zeroed and other values changed: what a load must fill."""
    if isinstance(sd, ember.Tensor):
        return ember.zeros_like(sd)
    if isinstance(sd, dict):
        return {k: blank(v) for k, v in sd.items()}
    if isinstance(sd, list):
        return [blank(v) for v in sd]
    return None if not isinstance(sd, tuple) else sd


def on_cpu(sd):
    if isinstance(sd, ember.Tensor):
        return sd.cpu()
    if isinstance(sd, dict):
        return {k: on_cpu(v) for k, v in sd.items()}
    if isinstance(sd, list):
        return [on_cpu(v) for v in sd]
    return sd


def same(a, b) -> bool:
    if isinstance(a, ember.Tensor):
        return isinstance(b, ember.Tensor) and a.dtype == b.dtype and ember.equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def test_save_load_one_process(tmp_path):
    sd = state()
    md = dcp.save(sd, checkpoint_id=tmp_path / "ck", no_dist=True)
    assert set(md.state_dict_metadata) >= {"w", "optim.state.0.exp_avg", "epoch", "history"}
    assert isinstance(md.state_dict_metadata["epoch"], dcp.BytesStorageMetadata)
    assert sorted(os.listdir(tmp_path / "ck")) == [".metadata", "__0_0.distcp"]
    target = blank(state())
    dcp.load(target, checkpoint_id=tmp_path / "ck", no_dist=True)
    assert same(target, state())


def test_load_casts_into_the_target_dtype_and_checks_sizes(tmp_path):
    dcp.save({"w": ember.arange(6.0).reshape(2, 3)}, checkpoint_id=tmp_path, no_dist=True)
    target = {"w": ember.zeros(2, 3, dtype=ember.float64)}
    dcp.load(target, checkpoint_id=tmp_path, no_dist=True)
    assert target["w"].dtype == ember.float64 and target["w"][1, 2] == 5
    with pytest.raises(dcp.CheckpointException, match=r"Size mismatch between saved "
                       r"ember.Size\(\[2, 3\]\) and current: ember.Size\(\[3\]\) for w"):
        dcp.load({"w": ember.zeros(3)}, checkpoint_id=tmp_path, no_dist=True)
    with pytest.raises(dcp.CheckpointException, match="Missing key in checkpoint state_dict: v"):
        dcp.load({"v": ember.zeros(3)}, checkpoint_id=tmp_path, no_dist=True)


def test_stateful_values_load_through_load_state_dict(tmp_path):
    class Counter:
        def __init__(self, n):
            self.n = ember.tensor(float(n))

        def state_dict(self):
            return {"n": self.n}

        def load_state_dict(self, sd):
            self.loaded = sd
            self.n = sd["n"]

    assert isinstance(Counter(1), dcp.Stateful)
    dcp.save({"c": Counter(5)}, checkpoint_id=tmp_path, no_dist=True)
    c = Counter(0)
    dcp.load({"c": c}, checkpoint_id=tmp_path, no_dist=True)
    assert c.n.item() == 5.0 and c.loaded == {"n": c.n}


def test_conversions_to_and_from_one_file(tmp_path):
    dcp.save(state(), checkpoint_id=tmp_path / "ck", no_dist=True)
    dcp_to_torch_save(tmp_path / "ck", tmp_path / "one.pt")
    whole = ember.load(tmp_path / "one.pt")
    expected = state()  # nested back as saved; keys are strings (PyTorch's flattening too)
    expected["optim"]["state"] = {"0": expected["optim"]["state"][0]}
    assert same(whole, expected)
    torch_save_to_dcp(tmp_path / "one.pt", tmp_path / "ck2")
    target = blank(state())
    dcp.load(target, checkpoint_id=tmp_path / "ck2", no_dist=True)
    assert same(target, state())


def test_async_save_one_process(tmp_path):
    sd = {"w": ember.ones(3)}
    fut = dcp.async_save(sd, checkpoint_id=tmp_path, no_dist=True)
    sd["w"].add_(1)
    assert isinstance(fut.result(timeout=60), dcp.Metadata)
    out = {"w": ember.zeros(3)}
    dcp.load(out, checkpoint_id=tmp_path, no_dist=True)
    assert out["w"].tolist() == [1.0, 1.0, 1.0]


def test_needs_a_checkpoint_id():
    with pytest.raises(RuntimeError, match="`checkpoint_id` must be specified"):
        dcp.save({"w": ember.ones(1)}, no_dist=True)


# -- bad and hostile files -----------------------------------------------------------------------
class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_hostile_bytes_item_is_refused(tmp_path):
    marker = tmp_path / "ran"
    dcp.save({"x": _Evil(marker), "w": ember.ones(2)}, checkpoint_id=tmp_path / "ck",
             no_dist=True)
    with pytest.raises(dcp.CheckpointException, match="system"):
        dcp.load({"x": None, "w": ember.zeros(2)}, checkpoint_id=tmp_path / "ck", no_dist=True)
    assert not marker.exists()


def test_hostile_metadata_is_refused(tmp_path):
    dcp.save({"w": ember.ones(2)}, checkpoint_id=tmp_path, no_dist=True)
    marker = tmp_path / "ran"
    (tmp_path / ".metadata").write_bytes(pickle.dumps(_Evil(marker)))
    with pytest.raises(dcp.CheckpointException, match="posix.system|os.system"):
        dcp.load({"w": ember.zeros(2)}, checkpoint_id=tmp_path, no_dist=True)
    assert not marker.exists()


def test_truncated_and_missing_files(tmp_path):
    dcp.save({"w": ember.ones(50)}, checkpoint_id=tmp_path, no_dist=True)
    data = tmp_path / "__0_0.distcp"
    data.write_bytes(data.read_bytes()[:100])
    with pytest.raises(dcp.CheckpointException, match="truncated"):
        dcp.load({"w": ember.zeros(50)}, checkpoint_id=tmp_path, no_dist=True)
    meta = tmp_path / ".metadata"
    meta.write_bytes(meta.read_bytes()[:40])
    with pytest.raises(dcp.CheckpointException, match="truncated or corrupt"):
        dcp.load({"w": ember.zeros(50)}, checkpoint_id=tmp_path, no_dist=True)
    meta.unlink()
    with pytest.raises(dcp.CheckpointException, match="metadata read failed"):
        dcp.load({"w": ember.zeros(50)}, checkpoint_id=tmp_path, no_dist=True)


# -- PyTorch's own files -------------------------------------------------------------------------
def _torch(code: str, tmp_path):
    pytest.importorskip("torch")
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", textwrap.dedent(code)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


TORCH_STATE = """
    import torch
    g = torch.Generator().manual_seed(1)
    sd = {"w": torch.randn(3, 4, generator=g, dtype=torch.float64),
          "bf": torch.randn(2, 2, generator=g).to(torch.bfloat16),
          "ids": torch.arange(6).reshape(2, 3), "mask": torch.tensor([True, False]),
          "z": torch.tensor([1 + 2j], dtype=torch.complex64), "scalar": torch.tensor(1.5),
          "optim": {"state": {0: {"step": torch.tensor(3.0), "exp_avg": torch.ones(2, 2)}},
                    "param_groups": [{"lr": 0.1, "betas": (0.9, 0.99), "params": [0]}]},
          "epoch": 4, "name": "run-1", "history": [1.0, 2.0]}
"""


def test_loads_pytorch_checkpoints(tmp_path):
    _torch(TORCH_STATE + """
    import torch.distributed.checkpoint as dcp
    dcp.save(sd, checkpoint_id="from_torch", no_dist=True)
    torch.save(sd, "reference.pt")
    """, tmp_path)
    reference = ember.load(tmp_path / "reference.pt")
    target = blank(reference)
    dcp.load(target, checkpoint_id=tmp_path / "from_torch", no_dist=True)
    assert same(target, reference)


def test_pytorch_loads_ember_checkpoints(tmp_path):
    sd = state()
    del sd["half"], sd["empty"]
    dcp.save(sd, checkpoint_id=tmp_path / "from_ember", no_dist=True)
    ember.save(on_cpu(sd), tmp_path / "reference.pt")  # PyTorch reads CPU locations
    out = _torch("""
    import torch, torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save
    ref = torch.load("reference.pt")
    def blank(x):
        if isinstance(x, torch.Tensor): return torch.zeros_like(x)
        if isinstance(x, dict): return {k: blank(v) for k, v in x.items()}
        if isinstance(x, list): return [blank(v) for v in x]
        return None if not isinstance(x, tuple) else x
    def same(a, b):
        if isinstance(a, torch.Tensor): return a.dtype == b.dtype and torch.equal(a, b)
        if isinstance(a, dict): return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        if isinstance(a, (list, tuple)): return all(same(x, y) for x, y in zip(a, b))
        return a == b
    target = blank(ref)
    dcp.load(target, checkpoint_id="from_ember", no_dist=True)
    print(same(target, ref))
    dcp_to_torch_save("from_ember", "converted.pt")
    ref["optim"]["state"] = {"0": ref["optim"]["state"][0]}  # flattening makes keys strings
    print(same(torch.load("converted.pt", weights_only=False), ref))
    """, tmp_path)
    assert out.split() == ["True", "True"], out


def test_huggingface_layout_both_ways_with_pytorch(tmp_path):
    sd = {"a.weight": ember.arange(12.0).reshape(3, 4), "a.bias": ember.ones(3).to(ember.bfloat16),
          "ids": ember.arange(5)}
    dcp.save(on_cpu(sd), storage_writer=dcp.HuggingFaceStorageWriter(
        tmp_path / "from_ember", fqn_to_index_mapping={"a.weight": 1, "a.bias": 2, "ids": 2}),
        no_dist=True)
    out = _torch("""
    import json, torch, torch.distributed.checkpoint as dcp
    from safetensors.torch import load_file
    index = json.load(open("from_ember/model.safetensors.index.json"))
    whole = {}
    for name in sorted(set(index["weight_map"].values())):
        whole.update(load_file("from_ember/" + name))
    target = {"a.weight": torch.zeros(3, 4), "a.bias": torch.zeros(3, dtype=torch.bfloat16),
              "ids": torch.zeros(5, dtype=torch.int64)}
    dcp.load(target, storage_reader=dcp.HuggingFaceStorageReader("from_ember"), no_dist=True)
    print(all(torch.equal(whole[k], target[k]) for k in target), target["a.weight"][2, 3].item())
    dcp.save({k: v * 2 for k, v in target.items()},
             storage_writer=dcp.HuggingFaceStorageWriter("from_torch"), no_dist=True)
    """, tmp_path)
    assert out.split() == ["True", "11.0"], out
    target = {k: ember.zeros_like(v) for k, v in sd.items()}
    dcp.load(target, storage_reader=dcp.HuggingFaceStorageReader(tmp_path / "from_torch"),
             no_dist=True)
    assert all(same(target[k], (v * 2).to(target[k].dtype)) for k, v in sd.items())


def test_huggingface_writer_refuses_non_tensors(tmp_path):
    with pytest.raises(dcp.CheckpointException, match="stores tensors only: 'step'"):
        dcp.save({"w": ember.ones(2), "step": 3},
                 storage_writer=dcp.HuggingFaceStorageWriter(tmp_path), no_dist=True)
