"""ember.text.models' own models: the small GPT (key/value cache, generate), the LSTM
language model, the Transformer encoder classifier, and their hub names."""

from __future__ import annotations

import copy
import importlib.metadata

import numpy as np
import pytest

import ember
import ember.hub
from ember import nn
from ember.text.models import (
    GPT,
    GPTConfig,
    GPTOutput,
    LSTMLanguageModel,
    TransformerClassifier,
    gpt_small,
    lstm_lm,
    transformer_classifier,
)

TINY_GPT = {"block_size": 16, "vocab_size": 23, "n_layer": 2, "n_head": 2, "n_embd": 16}


def tiny_gpt(seed: int = 0, dtype=ember.float32, **overrides) -> GPT:
    ember.manual_seed(seed)
    return GPT(GPTConfig(**{**TINY_GPT, **overrides})).to(dtype).eval()


def token_ids(*shape, high: int = TINY_GPT["vocab_size"], seed: int = 0) -> ember.Tensor:
    return ember.tensor(np.random.default_rng(seed).integers(0, high, shape))


# -- GPT: structure ---------------------------------------------------------------------------

def test_gpt_state_dict_names_are_nanogpts():
    keys = list(tiny_gpt().state_dict())
    block = [f"transformer.h.0.{m}.{p}" for m in ("ln_1", "attn.c_attn", "attn.c_proj", "ln_2",
                                                   "mlp.c_fc", "mlp.c_proj")
             for p in ("weight", "bias")]
    assert keys[:2] == ["transformer.wte.weight", "transformer.wpe.weight"]
    assert keys[2:14] == block
    assert keys[-3:] == ["transformer.ln_f.weight", "transformer.ln_f.bias", "lm_head.weight"]
    assert not any(".bias" in k for k in GPT(GPTConfig(**TINY_GPT, bias=False)).state_dict())


def test_gpt_shapes_and_cache_layout():
    model = tiny_gpt()
    idx = token_ids(3, 7)
    out = model(idx, use_cache=True)
    assert isinstance(out, GPTOutput) and out.loss is None
    assert out.logits.shape == (3, 7, 23)
    assert len(out.past_key_values) == 2
    for key, value in out.past_key_values:
        assert key.shape == value.shape == (3, 2, 7, 8)  # (batch, heads, seq, head size)
    logits, loss, past = model(idx, token_ids(3, 7, seed=1))
    assert loss.shape == () and past is None
    np.testing.assert_allclose(loss.item(), np.log(23), rtol=0.05)  # near-uniform at init


def test_gpt_head_is_tied_to_the_token_embedding():
    model = tiny_gpt()
    assert model.lm_head.weight is model.transformer.wte.weight
    assert isinstance(model.lm_head.weight, nn.Parameter)
    names = [name for name, _ in model.named_parameters()]
    assert names.count("transformer.wte.weight") + names.count("lm_head.weight") == 1
    # state_dict keeps both names, as PyTorch's does, and loading keeps the one Parameter
    state = model.state_dict()
    assert {"lm_head.weight", "transformer.wte.weight"} <= state.keys()
    fresh = tiny_gpt(seed=1)
    fresh.load_state_dict(state)
    assert fresh.lm_head.weight is fresh.transformer.wte.weight
    np.testing.assert_array_equal(fresh.lm_head.weight.detach().numpy(),
                                  model.lm_head.weight.detach().numpy())
    with ember.no_grad():  # both entries are views of the one weight
        state["lm_head.weight"][0, 0] = 5.0
    assert state["transformer.wte.weight"][0, 0].item() == 5.0
    assert model.transformer.wte.weight[0, 0].item() == 5.0


def test_gpt_checkpoints_keep_the_tie(tmp_path):
    model = tiny_gpt()
    ember.save(model.state_dict(), tmp_path / "gpt.pt")
    ember.safetensors.save_model(model, tmp_path / "gpt.safetensors")
    for load in (lambda m: m.load_state_dict(ember.load(tmp_path / "gpt.pt")),
                 lambda m: ember.safetensors.load_model(m, tmp_path / "gpt.safetensors")):
        fresh = tiny_gpt(seed=1)
        load(fresh)
        assert fresh.lm_head.weight is fresh.transformer.wte.weight
        idx = token_ids(2, 5)
        np.testing.assert_array_equal(fresh(idx).logits.detach().numpy(),
                                      model(idx).logits.detach().numpy())


def test_tied_gradient_is_the_sum_of_both_uses():
    idx, targets = token_ids(2, 9), token_ids(2, 9, seed=1)
    tied = tiny_gpt(dtype=ember.float64)
    tied(idx, targets).loss.backward()
    untied = copy.deepcopy(tied)
    untied.transformer.wte.weight = nn.Parameter(untied.lm_head.weight.detach().clone())
    for p in untied.parameters():
        p.grad = None
    untied(idx, targets).loss.backward()
    both = untied.lm_head.weight.grad.numpy() + untied.transformer.wte.weight.grad.numpy()
    assert np.abs(untied.transformer.wte.weight.grad.numpy()).max() > 0
    np.testing.assert_allclose(tied.lm_head.weight.grad.numpy(), both, rtol=1e-10, atol=1e-12)


def test_gpt_too_long_names_the_limit():
    model = tiny_gpt()
    with pytest.raises(ValueError, match="length 17, block size is only 16"):
        model(token_ids(1, 17))
    past = model(token_ids(1, 10), use_cache=True).past_key_values
    with pytest.raises(ValueError, match="length 17, block size is only 16"):
        model(token_ids(1, 7), past_key_values=past)
    with pytest.raises(ValueError, match="block size is only 16.*truncation=True"):
        model.generate(token_ids(1, 10), 7)


def test_gpt_config_checks_the_heads():
    with pytest.raises(ValueError, match=r"n_embd \(10\) must be a multiple of n_head \(4\)"):
        GPTConfig(n_embd=10, n_head=4)


# -- GPT: key/value cache and generate --------------------------------------------------------

@pytest.mark.parametrize("dtype,tol", [(ember.float64, 1e-10), (ember.float32, 1e-5)])
@ember.no_grad()
def test_cached_decoding_matches_the_full_forward(dtype, tol):
    model = tiny_gpt(dtype=dtype)
    idx = token_ids(2, 14)
    full = model(idx).logits.numpy()
    out = model(idx[:, :5], use_cache=True)  # the prompt at once
    pieces = [out.logits.numpy()]
    past = out.past_key_values
    for start, stop in ((5, 6), (6, 9), (9, 10), (10, 14)):  # one token, then chunks
        out = model(idx[:, start:stop], past_key_values=past, use_cache=True)
        pieces.append(out.logits.numpy())
        past = out.past_key_values
    assert past[0][0].shape == (2, 2, 14, 8)
    np.testing.assert_allclose(np.concatenate(pieces, axis=1), full, rtol=tol, atol=tol)


def test_greedy_generate_is_the_argmax_loop_without_cache():
    model = tiny_gpt()
    idx = token_ids(3, 4)
    generated = model.generate(idx, 10)
    expected = idx
    for _ in range(10):
        nxt = model(expected).logits[:, -1].argmax(-1, keepdim=True)
        expected = ember.cat((expected, nxt), dim=1)
    assert generated.shape == (3, 14)
    np.testing.assert_array_equal(generated.numpy(), expected.numpy())


def test_generate_with_truncation_slides_the_window_like_nanogpt():
    model = tiny_gpt()
    idx = token_ids(2, 12)
    generated = model.generate(idx, 9, truncation=True)  # 21 tokens through 16 positions
    expected = idx
    for _ in range(9):
        nxt = model(expected[:, -16:]).logits[:, -1].argmax(-1, keepdim=True)
        expected = ember.cat((expected, nxt), dim=1)
    np.testing.assert_array_equal(generated.numpy(), expected.numpy())
    long_prompt = model.generate(token_ids(1, 20), 2, truncation=True)
    assert long_prompt.shape == (1, 22)


def test_seeded_sampling_is_reproducible():
    model = tiny_gpt()
    idx = token_ids(4, 3)
    kwargs = {"do_sample": True, "temperature": 1.5, "top_k": 15, "top_p": 0.95}
    first = model.generate(idx, 12, seed=7, **kwargs).numpy()
    np.testing.assert_array_equal(model.generate(idx, 12, seed=7, **kwargs).numpy(), first)
    other = model.generate(idx, 12, seed=8, **kwargs).numpy()
    assert (other != first).any()
    np.testing.assert_array_equal(first[:, :3], idx.numpy())
    generator = ember.Generator(device=idx.device).manual_seed(7)
    np.testing.assert_array_equal(
        model.generate(idx, 12, generator=generator, **kwargs).numpy(), first)
    with pytest.raises(ValueError, match="either generator or seed"):
        model.generate(idx, 2, do_sample=True, seed=1, generator=generator)


#: the next-token distribution of :func:`fixed_distribution_gpt`, over 10 tokens
PROBS = [0.4, 0.3, 0.15, 0.1, 0.05, 0.0, 0.0, 0.0, 0.0, 0.0]


def fixed_distribution_gpt() -> GPT:
    """A GPT whose next-token distribution is PROBS whatever the input: the final LayerNorm
    outputs its bias, the first unit vector, and the tied head's first column holds the log
    probabilities."""
    model = GPT(GPTConfig(block_size=64, vocab_size=10, n_layer=1, n_head=2, n_embd=16)).eval()
    with ember.no_grad():
        model.transformer.ln_f.weight.zero_()
        model.transformer.ln_f.bias.zero_()
        model.transformer.ln_f.bias[0] = 1.0
        log_probs = np.log(np.maximum(PROBS, 1e-30)).astype(np.float32)
        model.lm_head.weight[:, 0] = ember.tensor(log_probs)
    return model


@pytest.mark.parametrize("filters,allowed", [
    ({}, {0, 1, 2, 3, 4}),
    ({"top_k": 2}, {0, 1}),
    ({"top_p": 0.8}, {0, 1, 2}),  # 0.4 + 0.3 < 0.8 <= 0.4 + 0.3 + 0.15
    ({"top_k": 2, "top_p": 0.5}, {0}),  # top-p over the renormalised top-k: 0.57 >= 0.5
    ({"temperature": 0.01}, {0}),
])
def test_top_k_and_top_p_restrict_the_candidates(filters, allowed):
    model = fixed_distribution_gpt()
    out = model.generate(ember.zeros(8, 1, dtype=ember.int64), 60, do_sample=True, seed=0,
                         **filters)
    assert set(out[:, 1:].numpy().ravel().tolist()) == allowed


@pytest.mark.parametrize("kwargs,match", [
    ({"temperature": 0.0}, "temperature"),
    ({"top_k": 0}, "top_k"),
    ({"top_p": 1.5}, "top_p"),
])
def test_bad_sampling_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        tiny_gpt().generate(token_ids(1, 2), 1, do_sample=True, **kwargs)


def test_generate_stops_at_eos_and_pads_with_it():
    model = fixed_distribution_gpt()
    prompt = ember.zeros(2, 1, dtype=ember.int64)
    # greedy picks token 0 every time: with eos 0 both rows end at once
    assert model.generate(prompt, 20, eos_token_id=0).shape == (2, 2)
    out = model.generate(prompt, 40, do_sample=True, seed=6, eos_token_id=2).numpy()
    firsts = []
    for row in out[:, 1:]:
        hits = np.flatnonzero(row == 2)
        assert hits.size, row
        assert (row[hits[0]:] == 2).all()  # padded with eos after the first one
        firsts.append(hits[0])
    assert min(firsts) < max(firsts)  # one row finished first and was padded
    assert out.shape[1] == 1 + max(firsts) + 1 < 41  # stopped when the last row finished


def test_tiny_gpt_overfits_a_string():
    text = "The quick brown fox jumps over a lazy dog"[:40]
    chars = sorted(set(text))
    ids = ember.tensor([[chars.index(c) for c in text]])
    ember.manual_seed(0)
    model = GPT(GPTConfig(block_size=40, vocab_size=len(chars), n_layer=2, n_head=2,
                          n_embd=32))
    optimizer = model.configure_optimizers(weight_decay=0.0, learning_rate=1e-2)
    for _ in range(150):
        loss = model(ids[:, :-1], ids[:, 1:]).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.05
    model.eval()
    generated = model.generate(ids[:, :1], 39)[0].tolist()
    assert "".join(chars[i] for i in generated) == text


def test_configure_optimizers_decays_only_matrices():
    model = tiny_gpt()
    optimizer = model.configure_optimizers(0.1, 1e-3, betas=(0.9, 0.95), device_type="cpu")
    decay, no_decay = optimizer.param_groups
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert all(p.dim() == 2 for p in decay["params"])
    assert all(p.dim() == 1 for p in no_decay["params"])
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(model.parameters()))


# -- GPT against PyTorch ----------------------------------------------------------------------

def torch_gpt_forward(torch, w: dict, idx, targets, config: GPTConfig):
    """nanoGPT's forward in PyTorch from a state_dict of torch tensors (the tied weight
    used twice)."""
    F = torch.nn.functional
    batch, length = idx.shape
    heads, width = config.n_head, config.n_embd

    def ln(x, name):
        return F.layer_norm(x, (width,), w[name + ".weight"], w[name + ".bias"])

    def lin(x, name):
        return F.linear(x, w[name + ".weight"], w.get(name + ".bias"))

    x = w["transformer.wte.weight"][idx] + w["transformer.wpe.weight"][:length]
    for i in range(config.n_layer):
        p = f"transformer.h.{i}."
        q, k, v = lin(ln(x, p + "ln_1"), p + "attn.c_attn").split(width, dim=2)
        q, k, v = (t.view(batch, length, heads, -1).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + lin(y.transpose(1, 2).reshape(batch, length, width), p + "attn.c_proj")
        x = x + lin(F.gelu(lin(ln(x, p + "ln_2"), p + "mlp.c_fc")), p + "mlp.c_proj")
    logits = F.linear(ln(x, "transformer.ln_f"), w["lm_head.weight"])
    return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                   ignore_index=-1)


def test_gpt_matches_pytorch_forward_and_gradients():
    torch = pytest.importorskip("torch")
    model = tiny_gpt(dtype=ember.float64)
    idx, targets = token_ids(3, 11), token_ids(3, 11, seed=1)
    with ember.no_grad():
        targets[0, 3] = -1  # ignored, as in nanoGPT
    logits, loss, _ = model(idx, targets)
    loss.backward()
    weights = {}
    for name, p in model.named_parameters():
        weights[name] = torch.tensor(p.detach().numpy(), requires_grad=True)
    weights["lm_head.weight"] = weights["transformer.wte.weight"]
    t_logits, t_loss = torch_gpt_forward(torch, weights, torch.tensor(idx.numpy()),
                                         torch.tensor(targets.numpy()), model.config)
    t_loss.backward()
    np.testing.assert_allclose(logits.detach().numpy(), t_logits.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(loss.item(), t_loss.item(), rtol=1e-12)
    for name, p in model.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), weights[name].grad.numpy(), atol=1e-10,
                                   err_msg=name)


# -- LSTM language model ----------------------------------------------------------------------

def test_lstm_lm_forward_like_the_word_language_model_example():
    ember.manual_seed(0)
    model = LSTMLanguageModel(30, 12, 16, 2, dropout=0.2)
    hidden = model.init_hidden(4)
    assert [h.shape for h in hidden] == [(2, 4, 16), (2, 4, 16)]
    output, hidden = model(token_ids(7, 4, high=30), hidden)  # (seq, batch)
    assert output.shape == (28, 30) and hidden[0].shape == (2, 4, 16)
    np.testing.assert_allclose(output.exp().sum(1).detach().numpy(), 1.0, rtol=1e-5)
    batch_first = LSTMLanguageModel(30, 12, 16, 2, batch_first=True)
    assert batch_first(token_ids(4, 7, high=30))[0].shape == (28, 30)


def test_lstm_lm_state_dict_keys_are_the_examples():
    model = LSTMLanguageModel(30, 12, 16, 2)
    rnn = [f"rnn.{kind}_{part}_l{i}" for i in range(2) for kind in ("weight", "bias")
           for part in ("ih", "hh")]
    assert sorted(model.state_dict()) == sorted(
        ["encoder.weight", "decoder.weight", "decoder.bias", *rnn])


def test_lstm_lm_tying():
    model = LSTMLanguageModel(30, 16, 16, 2, tie_weights=True)
    assert model.decoder.weight is model.encoder.weight
    with pytest.raises(ValueError, match="^When using the tied flag, nhid must be equal to "
                                         "emsize$"):
        LSTMLanguageModel(30, 16, 32, 2, tie_weights=True)


def test_lstm_lm_matches_pytorch():
    torch = pytest.importorskip("torch")
    ember.manual_seed(0)
    model = LSTMLanguageModel(30, 16, 16, 2, dropout=0.0, tie_weights=True).eval()
    t_embed = torch.nn.Embedding(30, 16)
    t_rnn = torch.nn.LSTM(16, 16, 2)
    t_decoder = torch.nn.Linear(16, 30)
    t_decoder.weight = t_embed.weight
    t_model = torch.nn.ModuleDict({"encoder": t_embed, "rnn": t_rnn, "decoder": t_decoder})
    t_model.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    idx = token_ids(6, 3, high=30)
    output, (h, c) = model(idx, model.init_hidden(3))
    t_out, (t_h, t_c) = t_rnn(t_embed(torch.tensor(idx.numpy())))
    t_log_probs = torch.log_softmax(t_decoder(t_out).view(-1, 30), dim=1)
    np.testing.assert_allclose(output.detach().numpy(), t_log_probs.detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(c.detach().numpy(), t_c.detach().numpy(), atol=1e-5)


# -- Transformer encoder classifier -----------------------------------------------------------

def tiny_classifier(**overrides) -> TransformerClassifier:
    ember.manual_seed(0)
    config = {"d_model": 16, "nhead": 2, "num_layers": 2, "dim_feedforward": 32,
              "max_len": 20, "dropout": 0.0, **overrides}
    return TransformerClassifier(40, 3, **config).eval()


@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
@pytest.mark.parametrize("norm_first", [True, False])
def test_classifier_padding_does_not_change_the_logits(positional, norm_first):
    model = tiny_classifier(positional=positional, norm_first=norm_first)
    ids = token_ids(2, 6, high=40)
    ones = ember.ones(2, 6, dtype=ember.int64)
    logits = model(ids, ones)
    assert logits.shape == (2, 3)
    np.testing.assert_allclose(model(ids).detach().numpy(), logits.detach().numpy(),
                               atol=1e-6)  # no mask: every position counts
    padded = ember.cat((ids, ember.zeros(2, 5, dtype=ember.int64)), dim=1)
    mask = ember.cat((ones, ember.zeros(2, 5, dtype=ember.int64)), dim=1)
    np.testing.assert_allclose(model(padded, mask).detach().numpy(),
                               logits.detach().numpy(), atol=1e-5)
    # ragged batch: the short row alone gives the same logits as in the batch
    with ember.no_grad():
        mask[1, 3:] = 0
    alone = model(padded[1:, :3], mask[1:, :3])
    np.testing.assert_allclose(model(padded, mask)[1:].detach().numpy(),
                               alone.detach().numpy(), atol=1e-5)


def test_classifier_positions_matter_and_the_limit_is_named():
    model = tiny_classifier()
    ids = token_ids(1, 6, high=40)
    reversed_ids = ember.tensor(ids.numpy()[:, ::-1].copy())
    assert not np.allclose(model(ids).detach().numpy(), model(reversed_ids).detach().numpy())
    with pytest.raises(ValueError, match="length 21 is longer than the model's maximum of 20"):
        model(token_ids(1, 21, high=40))
    with pytest.raises(ValueError, match="'sinusoidal' or 'learned'"):
        TransformerClassifier(40, 3, positional="rotary")
    assert "pos_encoder.pe" not in model.state_dict()  # recomputed, not saved


def test_classifier_trains():
    model = tiny_classifier().train()
    ids = token_ids(8, 6, high=40)
    labels = ember.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    optimizer = ember.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        loss = nn.functional.cross_entropy(model(ids), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]


def test_classifier_matches_pytorch():
    torch = pytest.importorskip("torch")
    model = tiny_classifier(positional="learned", norm_first=True)
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, 0.0, activation="gelu",
                                             batch_first=True, norm_first=True)
    t_encoder = torch.nn.TransformerEncoder(layer, 2, norm=torch.nn.LayerNorm(16),
                                            enable_nested_tensor=False)
    t_model = torch.nn.ModuleDict({"embedding": torch.nn.Embedding(40, 16, padding_idx=0),
                                   "pos_encoder": torch.nn.Embedding(20, 16),
                                   "encoder": t_encoder,
                                   "classifier": torch.nn.Linear(16, 3)}).eval()
    t_model.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    ids = token_ids(2, 7, high=40)
    mask = np.ones((2, 7), dtype=np.int64)
    mask[1, 4:] = 0
    t_ids, t_mask = torch.tensor(ids.numpy()), torch.tensor(mask)
    x = t_model["embedding"](t_ids) + t_model["pos_encoder"].weight[:7]
    hidden = t_encoder(x, src_key_padding_mask=t_mask == 0)
    m = t_mask.unsqueeze(-1).float()
    t_logits = t_model["classifier"]((hidden * m).sum(1) / m.sum(1))
    logits = model(ids, ember.tensor(mask))
    np.testing.assert_allclose(logits.detach().numpy(), t_logits.detach().numpy(), atol=1e-5)


# -- hub --------------------------------------------------------------------------------------

@pytest.fixture
def text_entry_point(tmp_path, monkeypatch):
    """ember-text's ``ember.hub`` entry point, declared by a stand-in distribution on
    sys.path when ember-text is not installed with its metadata."""
    if "text" in importlib.metadata.entry_points(group="ember.hub").names:
        return
    dist_info = tmp_path / "ember_text_models_test-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: ember-text-models-test\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text("[ember.hub]\ntext = ember.text.hubconf\n")
    monkeypatch.syspath_prepend(str(tmp_path))


@pytest.mark.parametrize("name,kwargs,cls,check", [
    ("gpt_small", {"vocab_size": 50, "block_size": 32}, GPT,
     lambda m: m.config.n_layer == 4 and m.config.n_embd == 128 and
     m.lm_head.weight.shape == (50, 128)),
    ("lstm_lm", {"vocab_size": 50}, LSTMLanguageModel,
     lambda m: m.decoder.weight is m.encoder.weight and m.nlayers == 2),
    ("transformer_classifier", {"vocab_size": 50, "num_classes": 6}, TransformerClassifier,
     lambda m: m.classifier.out_features == 6 and m.embedding.num_embeddings == 50),
])
def test_hub_loads_the_text_models_by_name(text_entry_point, name, kwargs, cls, check):
    assert name in ember.hub.list()
    assert "no pretrained weights" in " ".join(ember.hub.help(name).split())
    model = ember.hub.load(name, **kwargs)
    assert isinstance(model, cls) and not model.training and check(model)


def test_builders_default_to_small_models():
    assert gpt_small().config == GPTConfig(block_size=128, vocab_size=8000, n_layer=4,
                                           n_head=4, n_embd=128)
    assert lstm_lm().rnn.hidden_size == 200
    assert transformer_classifier().classifier.out_features == 2
