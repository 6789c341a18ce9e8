"""transformers' ``Trainer`` (over HuggingFace accelerate) training a BERT classifier.

``python trainer.py reference DIR`` (real PyTorch) saves a small BERT with perturbed weights
(``save_pretrained``), trains it with ``Trainer`` in float64 for two epochs and writes the
logged losses, gradient norms and final weights to ``DIR/trainer.npz``.
``python -m ember.as_torch trainer.py check DIR`` loads the saved model with
``from_pretrained``, trains it the same way on Ember and prints one JSON line with the
largest differences. ``reference-ddp``/``check-ddp`` do the same on 2 ranks (started by
``torch.distributed.run`` on PyTorch, ``ember.distributed.run`` on Ember): accelerate wraps
the model in DistributedDataParallel and shards the batches; rank 0 writes/compares. The data
are arithmetic and the sampler sequential (Ember's random streams are not PyTorch's), dropout
is off.
"""

import json
import sys
import traceback

import numpy as np
import torch
from torch.utils.data import Dataset, SequentialSampler


class Tokens(Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, i):
        ids = torch.tensor([(7 * i + 13 * j) % 90 + 4 for j in range(12)])
        return {"input_ids": ids, "attention_mask": torch.ones(12, dtype=torch.long),
                "labels": int(ids[0] > 50)}


def train(model, directory):
    import transformers as tf

    class SequentialTrainer(tf.Trainer):
        def _get_train_sampler(self, *args, **kwargs):
            return SequentialSampler(self.train_dataset)

    args = tf.TrainingArguments(output_dir=f"{directory}/out", per_device_train_batch_size=8,
                                num_train_epochs=2, learning_rate=1e-3, logging_steps=1,
                                report_to=[], save_strategy="no", use_cpu=True, seed=0,
                                disable_tqdm=True, max_grad_norm=1.0)
    trainer = SequentialTrainer(model=model, args=args, train_dataset=Tokens())
    result = trainer.train()
    logs = [h for h in trainer.state.log_history if "loss" in h]
    out = {"loss": np.array([float(h["loss"]) for h in logs]),
           "grad_norm": np.array([float(h["grad_norm"]) for h in logs]),
           "train_loss": np.array(result.training_loss)}
    for key, value in model.state_dict().items():
        out["w." + key] = value.detach().numpy()
    return out


def config():
    import transformers as tf

    return tf.BertConfig(vocab_size=97, hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=4, intermediate_size=64,
                         max_position_embeddings=64, num_labels=2, hidden_dropout_prob=0.0,
                         attention_probs_dropout_prob=0.0)


def _rank() -> int:
    import os

    return int(os.environ.get("RANK", "0"))


def reference_ddp(directory):
    import transformers as tf

    model = tf.BertForSequenceClassification.from_pretrained(f"{directory}/init",
                                                             dtype=torch.float64)
    out = train(model, directory)
    if _rank() == 0:
        np.savez(f"{directory}/trainer_ddp.npz", **out)


def reference(directory):
    import transformers as tf

    torch.manual_seed(0)
    model = tf.BertForSequenceClassification(config()).double()
    rng = np.random.default_rng(3)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.from_numpy(0.02 * rng.standard_normal(tuple(p.shape))))
    model.save_pretrained(f"{directory}/init")
    np.savez(f"{directory}/trainer.npz", **train(model, directory))


def check(directory, ddp: bool = False):
    import transformers as tf

    record = {"name": "trainer_ddp" if ddp else "trainer"}
    try:
        model = tf.BertForSequenceClassification.from_pretrained(f"{directory}/init",
                                                                 dtype=torch.float64)
        got = train(model, directory)
        want = np.load(f"{directory}/trainer{'_ddp' if ddp else ''}.npz")
        record["diffs"] = {k: "missing" if k not in got else
                           [float(np.abs(got[k] - want[k]).max()),
                            float(np.abs(want[k]).max())] for k in want.files}
        record["steps"] = len(got["loss"])
    except Exception as exc:
        record["error"] = f"{type(exc).__name__}: {exc}"
        record["where"] = traceback.format_exc()[-3000:]
    if _rank() == 0:
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    mode, directory = sys.argv[1], sys.argv[2]
    {"reference": reference, "reference-ddp": reference_ddp, "check": check,
     "check-ddp": lambda d: check(d, ddp=True)}[mode](directory)
