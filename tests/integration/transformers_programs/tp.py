"""transformers' tensor parallelism (``from_pretrained(..., tp_plan="auto")``) on Ember's DTensor.

``python tp.py reference NAMES DIR`` (real PyTorch, one process) builds each model from a
small config with perturbed float64 weights, saves it with ``save_pretrained`` to
``DIR/<name>`` and writes the logits, loss, every gradient and greedy ``generate`` output of
the whole model to ``DIR/<name>.npz``. ``python -m ember.distributed.run --nproc-per-node 2
-m ember.as_torch tp.py check NAMES DIR`` loads the saved model in each rank sharded by the
model's own tensor-parallel plan (its linear layers' weights become DTensors ``Shard(0)`` or
``Shard(1)`` over a 1-d mesh), runs the same and prints, on rank 0, one JSON line per model
with the largest differences (gradients gathered with ``full_tensor()``).
"""

import json
import sys
import traceback

import numpy as np
import torch

IDS = [[5, 7, 9, 11, 3, 4, 8, 2]]


def build(name):
    import transformers as tf

    common = dict(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                  bos_token_id=1, eos_token_id=2, pad_token_id=0)
    if name == "llama":
        return tf.LlamaForCausalLM(tf.LlamaConfig(**common))
    if name == "qwen2":
        return tf.Qwen2ForCausalLM(tf.Qwen2Config(**common))
    raise ValueError(name)


def run(model):
    ids = torch.tensor(IDS)
    out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    result = {"logits": out.logits, "loss": out.loss}
    for key, p in model.named_parameters():
        g = p.grad
        if g is not None:
            result["grad." + key] = g.full_tensor() if hasattr(g, "full_tensor") else g
    model.eval()
    with torch.no_grad():
        result["generated"] = model.generate(input_ids=ids, max_new_tokens=6, do_sample=False)
    return {k: v.detach().numpy() for k, v in result.items()}


def reference(names, directory):
    for name in names:
        torch.manual_seed(0)
        model = build(name).double()
        rng = np.random.default_rng(1)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.from_numpy(0.02 * rng.standard_normal(tuple(p.shape))))
        model.save_pretrained(f"{directory}/{name}")
        np.savez(f"{directory}/{name}.npz", **run(model))


def check(names, directory):
    rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else 0
    for name in names:
        record = {"name": name}
        try:
            cls = type(build(name))
            model = cls.from_pretrained(f"{directory}/{name}", tp_plan="auto",
                                        dtype=torch.float64)
            rank = torch.distributed.get_rank()
            weight = model.model.layers[0].self_attn.q_proj.weight
            record["sharded"] = [type(weight).__name__, [repr(p) for p in weight.placements],
                                 list(weight.to_local().shape)]
            out = run(model)
            want = np.load(f"{directory}/{name}.npz")
            diffs = {}
            for key in want.files:
                got = out.get(key)
                if got is None:
                    diffs[key] = "missing"
                elif key == "generated":
                    diffs[key] = "equal" if np.array_equal(got, want[key]) else \
                        f"{got.tolist()} != {want[key].tolist()}"
                else:
                    diffs[key] = [float(np.abs(got - want[key]).max()),
                                  float(np.abs(want[key]).max())]
            record["diffs"] = diffs
            record["dispatch"] = __import__("ember").overrides.is_active()
        except Exception as exc:
            record["error"] = f"{type(exc).__name__}: {exc}"
            record["where"] = traceback.format_exc()[-3000:]
        if rank == 0:
            print(json.dumps(record), flush=True)


if __name__ == "__main__":
    mode, names, directory = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
    (reference if mode == "reference" else check)(names, directory)
