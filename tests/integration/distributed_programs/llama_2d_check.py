"""The Llama-2 of pytorch/examples' tensor_parallelism (its ``llama2_model.py``, imported
from the working directory, unedited) under ``fsdp_tp_example.py``'s plan: tensor and
sequence parallelism on the ``tp`` dim of a (dp, tp) mesh, FSDP2 on ``dp``; three AdamW steps
of the example's loss (the sum of the logits), compared on every rank with the same model in
one process trained on all the dp ranks' batches (float64 but for the rotary embedding, which
the model computes in float32 whatever the dtype). Exits non-zero on a mismatch; prints the
largest differences and the placements tensor parallelism kept."""

import copy
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.getcwd())
from llama2_model import ModelArgs, Transformer
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor, Replicate, Shard
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    PrepareModuleInput,
    RowwiseParallel,
    SequenceParallel,
    parallelize_module,
)

tp_size = 2
world = int(os.environ["WORLD_SIZE"])
rank = int(os.environ["RANK"])
dp_size = world // tp_size
mesh = init_device_mesh("cpu", (dp_size, tp_size), mesh_dim_names=("dp", "tp"))
tp_mesh, dp_mesh = mesh["tp"], mesh["dp"]
dp_rank = dp_mesh.get_local_rank()

torch.manual_seed(0)
args = ModelArgs(dim=64, n_layers=2, n_heads=4, vocab_size=96, multiple_of=32, max_seq_len=8)
model = Transformer.from_model_args(args).double()
reference = copy.deepcopy(model)

# fsdp_tp_example.py's plan
model = parallelize_module(model, tp_mesh, {
    "tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
    "norm": SequenceParallel(),
    "output": ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate()),
})
for block in model.layers:
    parallelize_module(block, tp_mesh, {
        "attention_norm": SequenceParallel(),
        "attention": PrepareModuleInput(input_layouts=(Shard(1), Replicate()),
                                        desired_input_layouts=(Replicate(), Replicate())),
        "attention.wq": ColwiseParallel(use_local_output=False),
        "attention.wk": ColwiseParallel(use_local_output=False),
        "attention.wv": ColwiseParallel(use_local_output=False),
        "attention.wo": RowwiseParallel(output_layouts=Shard(1)),
        "ffn_norm": SequenceParallel(),
        "feed_forward": PrepareModuleInput(input_layouts=(Shard(1),),
                                           desired_input_layouts=(Replicate(),)),
        "feed_forward.w1": ColwiseParallel(),
        "feed_forward.w2": RowwiseParallel(output_layouts=Shard(1)),
        "feed_forward.w3": ColwiseParallel(),
    })
model = fully_shard(model, mesh=dp_mesh)

seen = {}


def record(name):
    def hook(module, inputs, output):
        if isinstance(output, DTensor):
            seen[name] = tuple(output.placements)
    return hook


attention = model.layers[0].attention
attention.wq.register_forward_hook(record("attention.wq"))
attention.register_forward_hook(record("attention"))

optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, foreach=True)
ref_optimizer = torch.optim.AdamW(reference.parameters(), lr=3e-3, foreach=True)
worst = {"logits": 0.0, "grad": 0.0, "param": 0.0}
for step in range(3):
    g = torch.Generator().manual_seed(100 + step)
    tokens = torch.randint(args.vocab_size, (2 * dp_size, 8), generator=g)
    mine = tokens[2 * dp_rank:2 * dp_rank + 2]  # a dp rank's batch, the same on its TP ranks
    optimizer.zero_grad()
    ref_optimizer.zero_grad()
    logits = model(mine)
    logits.sum().backward()
    ref_logits = reference(tokens)
    (ref_logits.sum() / dp_size).backward()
    worst["logits"] = max(worst["logits"], float(
        (logits - ref_logits[2 * dp_rank:2 * dp_rank + 2]).abs().max()))
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        assert isinstance(p, DTensor) and p.device_mesh in (mesh, dp_mesh), name
        scale = float(q.grad.abs().max()) or 1.0
        worst["grad"] = max(worst["grad"], float((p.grad.full_tensor() - q.grad).abs().max())
                            / scale)
    optimizer.step()
    ref_optimizer.step()
    for p, q in zip(model.parameters(), reference.parameters()):
        worst["param"] = max(worst["param"], float((p.full_tensor() - q).abs().max()))
wq = model.layers[0].attention.wq.weight
if rank == 0:
    print(f"placements: wq.weight {tuple(wq.placements)}; "
          + "; ".join(f"{k} output {v}" for k, v in seen.items()))
    print("max differences: " + ", ".join(f"{k} {v:.3g}" for k, v in worst.items()))
ok = worst["logits"] < 1e-5 and worst["grad"] < 1e-5 and worst["param"] < 1e-6
dist.destroy_process_group()
sys.exit(0 if ok else 1)
