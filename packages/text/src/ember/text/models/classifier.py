"""A Transformer encoder text classifier: token embeddings plus positions, an
``nn.TransformerEncoder`` (batch first), the mean of the token states over the attention
mask, and a linear head."""

from __future__ import annotations

import math

import ember
from ember import Tensor, nn

from .sentence_encoder import mean_pooling

__all__ = ["PositionalEncoding", "TransformerClassifier", "transformer_classifier"]


class PositionalEncoding(nn.Module):
    """The sinusoidal position encodings of "Attention Is All You Need", added to a
    ``(batch, seq, d_model)`` input (PyTorch's Transformer tutorial's ``PositionalEncoding``,
    batch first). The table ``pe`` ``(max_len, d_model)`` is a non-persistent buffer: it is
    recomputed, not saved."""

    def __init__(self, d_model: int, max_len: int = 5000) -> None:
        super().__init__()
        position = ember.arange(max_len, dtype=ember.float32).unsqueeze(1)
        div_term = ember.exp(ember.arange(0, d_model, 2, dtype=ember.float32)
                             * (-math.log(10000.0) / d_model))
        pe = ember.zeros(max_len, d_model)
        pe[:, 0::2] = ember.sin(position * div_term)
        pe[:, 1::2] = ember.cos(position * div_term[:d_model // 2])
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        return x + self.pe[:x.shape[1]]


class TransformerClassifier(nn.Module):
    """Classify token sequences with a Transformer encoder.

    ``vocab_size`` tokens (``padding_idx``'s embedding is zero and gets no gradient),
    ``d_model``-dimensional states, ``num_layers`` ``nn.TransformerEncoderLayer``\\ s of
    ``nhead`` heads and ``dim_feedforward`` hidden units (pre-LayerNorm with a final
    LayerNorm when ``norm_first``, as is usual for training from scratch), ``positional``
    ``"sinusoidal"`` (fixed) or ``"learned"`` position embeddings for at most ``max_len``
    tokens, and ``num_classes`` outputs.

    ``forward(input_ids, attention_mask=None)`` takes ``(batch, seq)`` token ids and a mask
    that is 1 for tokens and 0 for padding, and returns ``(batch, num_classes)`` logits:
    padded positions are neither attended to nor averaged, so padding does not change the
    result. Without a mask every position counts. A sequence longer than ``max_len`` raises
    ``ValueError`` naming the limit.
    """

    def __init__(self, vocab_size: int, num_classes: int, d_model: int = 128, nhead: int = 4,
                 num_layers: int = 2, dim_feedforward: int = 512, dropout: float = 0.1,
                 max_len: int = 512, padding_idx: int | None = 0,
                 positional: str = "sinusoidal", activation: str = "gelu",
                 norm_first: bool = True) -> None:
        super().__init__()
        if positional not in ("sinusoidal", "learned"):
            raise ValueError(f"positional must be 'sinusoidal' or 'learned', got "
                             f"{positional!r}")
        self.max_len = max_len
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)
        if positional == "sinusoidal":
            self.pos_encoder = PositionalEncoding(d_model, max_len)
        else:
            self.pos_encoder = nn.Embedding(max_len, d_model)
        self.dropout = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout,
                                           activation=activation, batch_first=True,
                                           norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, num_layers,
                                             norm=nn.LayerNorm(d_model) if norm_first else None,
                                             enable_nested_tensor=False)
        self.classifier = nn.Linear(d_model, num_classes)

    def _positions(self, x: Tensor) -> Tensor:
        if isinstance(self.pos_encoder, nn.Embedding):
            return x + self.pos_encoder.weight[:x.shape[1]]
        return self.pos_encoder(x)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be (batch_size, sequence_length), got shape "
                             f"{tuple(input_ids.shape)}")
        length = input_ids.shape[1]
        if length > self.max_len:
            raise ValueError(f"Input sequence length {length} is longer than the model's "
                             f"maximum of {self.max_len} positions (max_len={self.max_len}); "
                             "truncate the input, e.g. with the tokenizer's truncation=True, "
                             f"max_length={self.max_len}")
        x = self.dropout(self._positions(self.embedding(input_ids)))
        padding = None
        if attention_mask is not None and not bool(attention_mask.all()):
            padding = attention_mask == 0
        hidden = self.encoder(x, src_key_padding_mask=padding)
        return self.classifier(mean_pooling(hidden, attention_mask))


def transformer_classifier(*, vocab_size: int = 8000, num_classes: int = 2,
                           **kwargs) -> TransformerClassifier:
    """A small Transformer encoder text classifier (2 layers, 4 heads, 128 dimensions,
    sinusoidal positions, masked mean pooling), randomly initialised: no pretrained
    weights. Pass ``vocab_size`` and ``num_classes`` (8000 and 2 by default) to match your
    tokenizer and labels; the other :class:`TransformerClassifier` arguments are keyword
    arguments."""
    return TransformerClassifier(vocab_size, num_classes, **kwargs)
