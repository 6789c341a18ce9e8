"""A small GPT (decoder-only Transformer) in the shape of Karpathy's nanoGPT, with a
key/value cache and Hugging Face's ``generate`` options.

The module tree and ``state_dict`` names are nanoGPT's (``transformer.wte``,
``transformer.wpe``, ``transformer.h.N.ln_1``, ``attn.c_attn``, ``attn.c_proj``, ``ln_2``,
``mlp.c_fc``, ``mlp.c_proj``, ``transformer.ln_f``, ``lm_head``), so a nanoGPT checkpoint
loads as it is. Causal self-attention runs through
``scaled_dot_product_attention(is_causal=True)``; while decoding with a cache, the new
tokens attend to the cached ones through a bottom-right aligned causal mask (none at all for
a single new token).

The language-model head is tied to the token embedding: ``lm_head.weight`` and
``transformer.wte.weight`` are one ``Parameter``, so its gradient sums both uses.
``parameters()`` yields it once; ``state_dict()`` holds it under both keys, as PyTorch's
does (nanoGPT's checkpoints have both), and ``load_state_dict`` fills the one tensor twice.
``ember.safetensors.save_model`` stores it once (as ``lm_head.weight``) and ``load_model``
restores both; ``save_file`` on the ``state_dict`` refuses the shared tensors, as
``safetensors`` does for PyTorch.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import ember
import ember.nn.functional as F
from ember import Tensor, nn

__all__ = ["GPT", "GPTConfig", "GPTOutput", "gpt_small"]

#: a layer's cache: keys and values, each ``(batch, n_head, past_length, head_size)``
LayerPast = tuple[Tensor, Tensor]


@dataclasses.dataclass
class GPTConfig:
    """GPT's hyperparameters, with nanoGPT's names and defaults (GPT-2 124M, its vocabulary
    padded to a multiple of 64). ``bias``: biases in the Linear layers and LayerNorms."""

    block_size: int = 1024
    vocab_size: int = 50304
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    bias: bool = True

    def __post_init__(self) -> None:
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd ({self.n_embd}) must be a multiple of n_head "
                             f"({self.n_head})")


class GPTOutput(NamedTuple):
    """What :meth:`GPT.forward` returns: ``logits`` ``(batch, seq, vocab_size)``, ``loss``
    (cross entropy against ``targets``, else None) and ``past_key_values`` (the cache, one
    ``(key, value)`` pair per layer, with ``use_cache=True``, else None). Unpacks like a
    tuple: ``logits, loss, _ = model(x, y)``."""

    logits: Tensor
    loss: Tensor | None = None
    past_key_values: tuple[LayerPast, ...] | None = None


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention: one ``c_attn`` projection to queries, keys and
    values, ``scaled_dot_product_attention``, the ``c_proj`` output projection."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout

    def forward(self, x: Tensor, layer_past: LayerPast | None = None,
                use_cache: bool = False) -> tuple[Tensor, LayerPast | None]:
        batch, length, channels = x.shape
        heads = (batch, length, self.n_head, channels // self.n_head)
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(heads).transpose(1, 2)  # (batch, n_head, length, head_size)
        k = k.view(heads).transpose(1, 2)
        v = v.view(heads).transpose(1, 2)
        if layer_past is not None:
            k = ember.cat((layer_past[0], k), dim=2)
            v = ember.cat((layer_past[1], v), dim=2)
        dropout_p = self.dropout if self.training else 0.0
        past_length = k.shape[2] - length
        if past_length == 0:
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True)
        else:  # the new tokens see every cached one and the new ones up to themselves
            mask = None if length == 1 else ember.ones(
                length, past_length + length, dtype=ember.bool, device=x.device,
            ).tril(diagonal=past_length)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
        y = y.transpose(1, 2).reshape(batch, length, channels)
        return self.resid_dropout(self.c_proj(y)), ((k, v) if use_cache else None)


class MLP(nn.Module):
    """The feed-forward block: ``c_fc`` to 4x the width, GELU, ``c_proj`` back, dropout."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    """One pre-LayerNorm Transformer block: ``x + attn(ln_1(x))``, then ``x + mlp(ln_2(x))``."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x: Tensor, layer_past: LayerPast | None = None,
                use_cache: bool = False) -> tuple[Tensor, LayerPast | None]:
        attended, present = self.attn(self.ln_1(x), layer_past, use_cache)
        x = x + attended
        return x + self.mlp(self.ln_2(x)), present


class GPT(nn.Module):
    """A GPT language model (nanoGPT's ``GPT``): token and learned position embeddings,
    ``n_layer`` pre-LayerNorm blocks, a final LayerNorm and a head tied to the token
    embedding.

    ``forward(idx, targets=None, past_key_values=None, use_cache=False)`` takes token ids
    ``(batch, seq)`` and returns a :class:`GPTOutput`: the logits of every position, the
    mean cross entropy against ``targets`` (positions where ``targets`` is ``-1`` are
    ignored, as in nanoGPT) and, with ``use_cache``, the keys and values to pass back as
    ``past_key_values`` so that the next call feeds only the new tokens. A sequence longer
    than ``block_size`` (cached tokens included) raises ``ValueError`` naming the limit.
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList(Block(config) for _ in range(config.n_layer)),
            ln_f=nn.LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        # weight tying (Press & Wolf, 2017): one Parameter for the embedding and the head
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)
        # GPT-2's scaled initialisation of the projections into the residual stream
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def get_num_params(self, non_embedding: bool = True) -> int:
        """The number of parameters (the tied head counted once); ``non_embedding`` leaves
        out the position embeddings, as nanoGPT does."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.transformer.wpe.weight.numel()
        return n

    def _check_length(self, length: int) -> None:
        limit = self.config.block_size
        if length > limit:
            raise ValueError(f"Cannot forward sequence of length {length}, block size is only "
                             f"{limit} (the model's maximum of {limit} positions); crop the "
                             "input to its last block_size tokens, or pass truncation=True "
                             "to generate")

    def forward(self, idx: Tensor, targets: Tensor | None = None,
                past_key_values: tuple[LayerPast, ...] | None = None,
                use_cache: bool = False) -> GPTOutput:
        if idx.dim() != 2:
            raise ValueError(f"idx must be (batch_size, sequence_length), got shape "
                             f"{tuple(idx.shape)}")
        length = idx.shape[1]
        past_length = 0 if past_key_values is None else past_key_values[0][0].shape[2]
        self._check_length(past_length + length)
        tok_emb = self.transformer.wte(idx)
        pos_emb = self.transformer.wpe.weight[past_length:past_length + length]
        x = self.transformer.drop(tok_emb + pos_emb)
        presents = []
        for i, block in enumerate(self.transformer.h):
            x, present = block(x, None if past_key_values is None else past_key_values[i],
                               use_cache)
            presents.append(present)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1),
                                   ignore_index=-1)
        return GPTOutput(logits, loss, tuple(presents) if use_cache else None)

    def configure_optimizers(self, weight_decay: float, learning_rate: float,
                             betas: tuple[float, float] = (0.9, 0.95),
                             device_type: str | None = None) -> ember.optim.AdamW:
        """nanoGPT's AdamW: weight decay on the matrices (Linear and embedding weights), none
        on biases and LayerNorm parameters. ``device_type`` is accepted for nanoGPT's
        signature (Ember has no fused AdamW to choose)."""
        params = [p for p in self.parameters() if p.requires_grad]
        groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
                  {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
        return ember.optim.AdamW(groups, lr=learning_rate, betas=betas)

    @ember.no_grad()
    def generate(self, idx: Tensor, max_new_tokens: int, *, do_sample: bool = False,
                 temperature: float = 1.0, top_k: int | None = None,
                 top_p: float | None = None, generator: ember.Generator | None = None,
                 seed: int | None = None, eos_token_id: int | None = None,
                 truncation: bool = False) -> Tensor:
        """Continue the token ids ``idx`` ``(batch, seq)`` by ``max_new_tokens`` tokens and
        return ``(batch, seq + new)``.

        Greedy (the most likely token) unless ``do_sample``; sampling divides the logits by
        ``temperature``, keeps the ``top_k`` most likely tokens and then the smallest set
        whose probability reaches ``top_p`` (Hugging Face's order), and draws with
        ``generator``, or with a fresh generator seeded with ``seed`` (the same seed gives
        the same tokens). The prompt is run once, then each step feeds only the new token
        through the key/value cache. A row that produced ``eos_token_id`` is padded with it;
        generation stops when every row has.

        ``seq + max_new_tokens`` beyond ``block_size`` raises ``ValueError`` unless
        ``truncation``: then, as nanoGPT does, the model sees the last ``block_size`` tokens
        (each step past the limit recomputes that window, the positions having shifted).
        Dropout follows the module's mode: call ``eval()`` first.
        """
        _check_generation_args(do_sample, temperature, top_k, top_p, generator, seed)
        if idx.dim() != 2 or idx.shape[1] == 0:
            raise ValueError(f"idx must be (batch_size, sequence_length) with at least one "
                             f"token, got shape {tuple(idx.shape)}")
        block_size = self.config.block_size
        if not truncation:
            self._check_length(idx.shape[1] + max_new_tokens)
        if do_sample and generator is None and seed is not None:
            generator = ember.Generator(device=idx.device).manual_seed(seed)
        tokens, step_input, past = idx, idx[:, -block_size:], None
        finished = None
        for _ in range(max_new_tokens):
            if past is not None and past[0][0].shape[2] >= block_size:
                past, step_input = None, tokens[:, -block_size:]  # slide the window
            out = self(step_input, past_key_values=past, use_cache=True)
            past = out.past_key_values
            logits = out.logits[:, -1, :]
            if do_sample:
                probs = _warp(logits, temperature, top_k, top_p).softmax(-1)
                next_token = ember.multinomial(probs, 1, generator=generator)
            else:
                next_token = logits.argmax(-1, keepdim=True)
            if eos_token_id is not None:
                if finished is not None:
                    next_token = next_token.masked_fill(finished, eos_token_id)
                finished = next_token == eos_token_id
            tokens = ember.cat((tokens, next_token), dim=1)
            if finished is not None and bool(finished.all()):
                break
            step_input = next_token
        return tokens


def _check_generation_args(do_sample, temperature, top_k, top_p, generator, seed) -> None:
    if generator is not None and seed is not None:
        raise ValueError("Pass either generator or seed to generate, not both")
    if not do_sample:
        return
    if not temperature > 0:
        raise ValueError(f"`temperature` (={temperature}) has to be a strictly positive "
                         "float, otherwise your next token scores will be invalid. If you're "
                         "looking for greedy decoding strategies, set `do_sample=False`.")
    if top_k is not None and (not isinstance(top_k, int) or top_k <= 0):
        raise ValueError(f"`top_k` has to be a strictly positive integer, but is {top_k}")
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(f"`top_p` has to be a float > 0 and <= 1, but is {top_p}")


def _warp(logits: Tensor, temperature: float, top_k: int | None,
          top_p: float | None) -> Tensor:
    """The logits to sample from: scaled by the temperature, then the tokens outside the
    top-k and outside the top-p nucleus set to -inf (Hugging Face's logits warpers)."""
    if temperature != 1.0:
        logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = ember.topk(logits, top_k, dim=-1)[0][:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        sorted_logits, order = ember.sort(logits, dim=-1)  # ascending
        cumulative = sorted_logits.softmax(-1).cumsum(-1)
        drop = cumulative <= 1.0 - top_p
        drop[:, -1] = False  # the most likely token always stays
        logits = logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))
    return logits


def gpt_small(*, vocab_size: int = 8000, block_size: int = 128, n_layer: int = 4,
              n_head: int = 4, n_embd: int = 128, dropout: float = 0.0,
              bias: bool = True) -> GPT:
    """A small GPT language model (nanoGPT's architecture: 4 layers, 4 heads, 128
    dimensions, 128 positions by default), randomly initialised: no pretrained weights.
    Pass ``vocab_size`` to match your tokenizer (8000 by default, SentencePiece's default
    vocabulary size); every ``GPTConfig`` field is a keyword argument."""
    return GPT(GPTConfig(block_size=block_size, vocab_size=vocab_size, n_layer=n_layer,
                         n_head=n_head, n_embd=n_embd, dropout=dropout, bias=bias))
