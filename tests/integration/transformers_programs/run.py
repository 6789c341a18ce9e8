"""HuggingFace ``transformers`` models, built by transformers' own code, on PyTorch and on Ember.

``python run.py reference NAMES DIR`` (real PyTorch) builds each model from a small config,
perturbs its weights (so that zero-initialised biases and norms carry values), runs it in
float64 and writes the weights, inputs and results to ``DIR/<name>.npz``.
``python -m ember.as_torch run.py check NAMES DIR`` runs the same on Ember from those weights
and prints one JSON line per model with the largest differences (the test compares them).
"""

import json
import sys
import traceback

import numpy as np
import torch


def build(name):
    import transformers as tf

    if name == "bert":
        cfg = tf.BertConfig(vocab_size=97, hidden_size=32, num_hidden_layers=2,
                            num_attention_heads=4, intermediate_size=64,
                            max_position_embeddings=64, hidden_dropout_prob=0.0,
                            attention_probs_dropout_prob=0.0)
        return tf.BertForMaskedLM(cfg)
    if name == "gpt2":
        cfg = tf.GPT2Config(vocab_size=97, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                            bos_token_id=1, eos_token_id=2, pad_token_id=0)
        return tf.GPT2LMHeadModel(cfg)
    if name == "llama":
        cfg = tf.LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64,
                             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                             max_position_embeddings=64, bos_token_id=1, eos_token_id=2,
                             pad_token_id=0)
        return tf.LlamaForCausalLM(cfg)
    if name in ("qwen2", "mistral"):
        cls = {"qwen2": (tf.Qwen2Config, tf.Qwen2ForCausalLM),
               "mistral": (tf.MistralConfig, tf.MistralForCausalLM)}[name]
        cfg = cls[0](vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                     bos_token_id=1, eos_token_id=2, pad_token_id=0,
                     **({"sliding_window": 4} if name == "mistral" else {}))
        return cls[1](cfg)
    if name == "distilbert":
        cfg = tf.DistilBertConfig(vocab_size=97, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                                  max_position_embeddings=64, dropout=0.0, attention_dropout=0.0)
        return tf.DistilBertForMaskedLM(cfg)
    if name == "roberta":
        cfg = tf.RobertaConfig(vocab_size=97, hidden_size=32, num_hidden_layers=2,
                               num_attention_heads=4, intermediate_size=64,
                               max_position_embeddings=64, hidden_dropout_prob=0.0,
                               attention_probs_dropout_prob=0.0, pad_token_id=0)
        return tf.RobertaForMaskedLM(cfg)
    if name == "t5":
        cfg = tf.T5Config(vocab_size=97, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                          num_heads=4, dropout_rate=0.0, decoder_start_token_id=0,
                          pad_token_id=0, eos_token_id=2)
        return tf.T5ForConditionalGeneration(cfg)
    if name == "bart":
        cfg = tf.BartConfig(vocab_size=97, d_model=32, encoder_layers=2, decoder_layers=2,
                            encoder_attention_heads=4, decoder_attention_heads=4,
                            encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
                            dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
                            pad_token_id=0, bos_token_id=1, eos_token_id=2,
                            decoder_start_token_id=2, forced_eos_token_id=None)
        return tf.BartForConditionalGeneration(cfg)
    raise ValueError(name)


#: encoder-decoder models: their eval pass needs the decoder's inputs (given as labels)
SEQ2SEQ = ("t5", "bart")
#: masked-LM models: no generation
MASKED = ("bert", "distilbert", "roberta")


def inputs(rng):
    ids = rng.integers(3, 97, size=(2, 9))
    mask = np.ones((2, 9), dtype=np.int64)
    mask[1, :3] = 0  # left padding on the second row
    return ids, mask


def run(name, model, ids, mask):
    """Eval logits, the training loss and every parameter's gradient, greedy generation."""
    model = model.double()
    ids_t, mask_t = torch.from_numpy(ids), torch.from_numpy(mask)
    out = {}
    model.eval()
    extra = {"labels": ids_t} if name in SEQ2SEQ else {}
    with torch.no_grad():
        out["logits"] = model(input_ids=ids_t, attention_mask=mask_t, **extra).logits.numpy()
    model.train()
    model.zero_grad()
    loss = model(input_ids=ids_t, attention_mask=mask_t, labels=ids_t).loss
    loss.backward()
    out["loss"] = np.array(loss.item())
    for key, p in model.named_parameters():
        if p.grad is not None:
            out["grad." + key] = p.grad.numpy()
    if name not in MASKED:
        model.eval()
        gen = model.generate(input_ids=ids_t, attention_mask=mask_t, max_new_tokens=6,
                             do_sample=False)
        out["generated"] = gen.numpy()
    return out


def reference(names, directory):
    for name in names:
        torch.manual_seed(0)
        model = build(name).double()
        rng = np.random.default_rng(0)
        state = {k: v.double().numpy() + 0.02 * rng.standard_normal(v.shape)
                 if v.is_floating_point() else v.numpy()
                 for k, v in model.state_dict().items()}
        model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
        ids, mask = inputs(rng)
        out = run(name, model, ids, mask)
        np.savez(f"{directory}/{name}.npz", ids=ids, mask=mask,
                 **{"w." + k: v for k, v in state.items()},
                 **{"o." + k: v for k, v in out.items()})


def check(names, directory):
    for name in names:
        record = {"name": name}
        try:
            data = np.load(f"{directory}/{name}.npz")
            model = build(name).double()
            state = {k[2:]: torch.from_numpy(data[k]) for k in data.files
                     if k.startswith("w.")}
            model.load_state_dict(state)
            out = run(name, model, data["ids"], data["mask"])
            diffs = {}
            for key in [k[2:] for k in data.files if k.startswith("o.")]:
                want = data["o." + key]
                got = out.get(key)
                if got is None:
                    diffs[key] = "missing"
                elif key == "generated":
                    diffs[key] = "equal" if np.array_equal(got, want) else \
                        f"{got.tolist()} != {want.tolist()}"
                else:
                    diffs[key] = [float(np.abs(got - want).max()),
                                  float(np.abs(want).max())]
            record["diffs"] = diffs
            record["extra"] = sorted(k for k in out if "o." + k not in data.files)
            # transformers imports torch.distributed.tensor & co.; none of it may turn on
            # Ember's __torch_function__ dispatch (a cost on every op) unless a DTensor is made
            record["dispatch"] = __import__("ember").overrides.is_active()
        except Exception as exc:  # reported to the test, which names the model
            record["error"] = f"{type(exc).__name__}: {exc}"
            record["where"] = traceback.format_exc()[-3000:]
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    mode, names, directory = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
    (reference if mode == "reference" else check)(names, directory)
