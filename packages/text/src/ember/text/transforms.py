"""Text transforms (``torchtext.transforms``): modules that map strings, token lists and id
lists, one sequence or a batch of them, to the next stage of a pipeline.

Each accepts what torchtext's accepts: ``str`` or ``List[str]`` for a tokenizer, ``List[str]``
or ``List[List[str]]`` of tokens, ``List[int]`` or ``List[List[int]]`` of ids; any other input
is a ``TypeError("Input type not supported")``.

Left out: torchtext's re-implementations of GPT-2's, CLIP's and BERT's tokenizers
(``GPT2BPETokenizer``, ``CLIPTokenizer``, ``BERTTokenizer``), ``RegexTokenizer`` and
``CharBPETokenizer``: :class:`ember.text.tokenizers.Tokenizer` loads those models'
``tokenizer.json`` with the reference library.
"""

from __future__ import annotations

import os
from typing import Any

import ember
from ember import nn
from ember.nn.utils.rnn import pad_sequence

from .tokenizers.sentencepiece import load_processor
from .vocab import Vocab

__all__ = [
    "SentencePieceTokenizer",
    "VocabTransform",
    "ToTensor",
    "LabelToIndex",
    "Truncate",
    "AddToken",
    "PadTransform",
    "StrToIntTransform",
    "Sequential",
    "to_tensor",
    "truncate",
    "add_token",
    "str_to_int",
]

_UNSUPPORTED = "Input type not supported"


def _is_list_of(value: Any, kind: type | tuple[type, ...]) -> bool:
    """``torch.jit.isinstance(value, List[kind])`` in eager mode (an empty list is one)."""
    return isinstance(value, list) and all(isinstance(v, kind) for v in value)


def _is_batch_of(value: Any, kind: type | tuple[type, ...]) -> bool:
    """``torch.jit.isinstance(value, List[List[kind]])`` in eager mode."""
    return isinstance(value, list) and all(_is_list_of(v, kind) for v in value)


def _is_sequence(value: Any) -> bool:
    return _is_list_of(value, int) or _is_list_of(value, str)


def _is_batch(value: Any) -> bool:
    return _is_batch_of(value, int) or _is_batch_of(value, str)


# -- functional forms (torchtext.functional) ------------------------------------------------

def to_tensor(input: Any, padding_value: int | None = None,
              dtype: ember.dtype = ember.long) -> ember.Tensor:
    r"""Convert a sequence or a batch of token ids to a tensor.

    Args:
        input: a sequence (``List[int]``) or a batch (``List[List[int]]``) of token ids.
        padding_value: pad each sequence of a batch to the longest one with this value;
            ``None``: the sequences must already be of equal length.
        dtype: the tensor's dtype.
    """
    if _is_list_of(input, int):
        # torchtext ignores dtype here (always int64); Ember honours it
        return ember.tensor(input, dtype=dtype)
    if _is_batch_of(input, int):
        if padding_value is None:
            return ember.tensor(input, dtype=dtype)
        return pad_sequence([ember.tensor(ids, dtype=dtype) for ids in input],
                            batch_first=True, padding_value=float(padding_value))
    raise TypeError(_UNSUPPORTED)


def truncate(input: Any, max_seq_len: int) -> Any:
    """Truncate a sequence or each sequence of a batch (of str or int) to ``max_seq_len``."""
    if _is_sequence(input):
        return input[:max_seq_len]
    if _is_batch(input):
        return [ids[:max_seq_len] for ids in input]
    raise TypeError(_UNSUPPORTED)


def add_token(input: Any, token_id: int | str, begin: bool = True) -> Any:
    """Add ``token_id`` at the start (``begin=True``) or end of a sequence, or of each sequence
    of a batch; the token's type (int or str) must be the sequences'."""
    kind = int if isinstance(token_id, int) else str if isinstance(token_id, str) else None
    if kind is None:
        raise TypeError(_UNSUPPORTED)
    if _is_list_of(input, kind):
        return [token_id] + input if begin else input + [token_id]
    if _is_batch_of(input, kind):
        if begin:
            return [[token_id] + ids for ids in input]
        return [ids + [token_id] for ids in input]
    raise TypeError(_UNSUPPORTED)


def str_to_int(input: Any) -> Any:
    """Convert string tokens to integers (a sequence or a batch)."""
    if _is_list_of(input, str):
        return [int(element) for element in input]
    if _is_batch_of(input, str):
        return [[int(element) for element in ids] for ids in input]
    raise TypeError(_UNSUPPORTED)


# -- modules --------------------------------------------------------------------------------

class SentencePieceTokenizer(nn.Module):
    """Transform for a SentencePiece tokenizer from a pre-trained SentencePiece model.

    Args:
        sp_model_path: path to the ``.model`` file.

    Example:
        >>> from ember.text.transforms import SentencePieceTokenizer
        >>> transform = SentencePieceTokenizer("spm_model")  # doctest: +SKIP
        >>> transform(["hello world", "attention is all you need!"])  # doctest: +SKIP
    """

    def __init__(self, sp_model_path: str | os.PathLike) -> None:
        super().__init__()
        self.sp_model = load_processor(sp_model_path)

    def forward(self, input: Any) -> Any:
        """The pieces of a sentence (``str``), or of each sentence of a list."""
        if _is_list_of(input, str):
            return [self.sp_model.EncodeAsPieces(text) for text in input]
        if isinstance(input, str):
            return self.sp_model.EncodeAsPieces(input)
        raise TypeError(_UNSUPPORTED)


class VocabTransform(nn.Module):
    r"""Vocab transform: a batch of tokens to the corresponding token ids.

    Args:
        vocab: an :class:`ember.text.vocab.Vocab`.

    Example:
        >>> from collections import OrderedDict
        >>> from ember.text.vocab import vocab
        >>> from ember.text.transforms import VocabTransform
        >>> vocab_transform = VocabTransform(vocab(OrderedDict([("a", 1), ("b", 1), ("c", 1)])))
        >>> vocab_transform([["a", "b"], ["a", "b", "c"]])
        [[0, 1], [0, 1, 2]]
    """

    def __init__(self, vocab: Vocab) -> None:
        super().__init__()
        assert isinstance(vocab, Vocab)
        self.vocab = vocab

    def forward(self, input: Any) -> Any:
        """Ids of ``List[str]``, or of each list of a ``List[List[str]]``."""
        if _is_list_of(input, str):
            return self.vocab.lookup_indices(input)
        if _is_batch_of(input, str):
            return [self.vocab.lookup_indices(tokens) for tokens in input]
        raise TypeError(_UNSUPPORTED)


class ToTensor(nn.Module):
    r"""Convert input to an Ember tensor.

    Args:
        padding_value: pad value to make each input in the batch of length equal to the
            longest sequence in the batch.
        dtype: dtype of the output tensor.
    """

    def __init__(self, padding_value: int | None = None,
                 dtype: ember.dtype = ember.long) -> None:
        super().__init__()
        self.padding_value = padding_value
        self.dtype = dtype

    def forward(self, input: Any) -> ember.Tensor:
        """A sequence (``List[int]``) or a batch (``List[List[int]]``) of token ids as a
        tensor."""
        return to_tensor(input, padding_value=self.padding_value, dtype=self.dtype)


class LabelToIndex(nn.Module):
    r"""Transform labels from string names to ids.

    Args:
        label_names: a list of unique label names.
        label_path: a path to a file of unique label names, one per line. Give either
            ``label_names`` or ``label_path``, not both.
        sort_names: sort the names before numbering them.
    """

    def __init__(self, label_names: list[str] | None = None, label_path: str | None = None,
                 sort_names: bool = False) -> None:
        assert label_names or label_path, "label_names or label_path is required"
        assert not (label_names and label_path), \
            "label_names and label_path are mutually exclusive"
        super().__init__()
        if label_path:
            with open(label_path, encoding="utf-8") as f:
                label_names = [line.strip() for line in f if line.strip()]
        if sort_names:
            label_names = sorted(label_names)
        self._label_vocab = Vocab(label_names)
        self._label_names = self._label_vocab.get_itos()

    def forward(self, input: Any) -> Any:
        """The id of a label (``str``) or the ids of a list of labels."""
        if _is_list_of(input, str):
            return self._label_vocab.lookup_indices(input)
        if isinstance(input, str):
            return self._label_vocab[input]
        raise TypeError(_UNSUPPORTED)

    @property
    def label_names(self) -> list[str]:
        return self._label_names


class Truncate(nn.Module):
    r"""Truncate an input sequence (or each sequence of a batch).

    Args:
        max_seq_len: the maximum allowable length for an input sequence.
    """

    def __init__(self, max_seq_len: int) -> None:
        super().__init__()
        self.max_seq_len = max_seq_len

    def forward(self, input: Any) -> Any:
        """``input`` (a sequence or a batch of str or int) truncated."""
        return truncate(input, self.max_seq_len)


class AddToken(nn.Module):
    """Add a token to the beginning or end of a sequence (or of each sequence of a batch).

    Args:
        token: the token to add (an id or a string).
        begin: insert at the start (default) or at the end.
    """

    def __init__(self, token: int | str, begin: bool = True) -> None:
        super().__init__()
        self.token = token
        self.begin = begin

    def forward(self, input: Any) -> Any:
        """``input`` (a sequence or a batch) with the token added."""
        return add_token(input, self.token, self.begin)


class PadTransform(nn.Module):
    """Pad a tensor's last dimension to a fixed length with a given value (a longer tensor is
    returned as it is).

    Args:
        max_length: the length to pad to.
        pad_value: the value to pad with.
    """

    def __init__(self, max_length: int, pad_value: int) -> None:
        super().__init__()
        self.max_length = max_length
        self.pad_value = float(pad_value)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        """``x`` padded up to ``max_length`` in its last dimension."""
        max_encoded_length = x.size(-1)
        if max_encoded_length < self.max_length:
            pad_amount = self.max_length - max_encoded_length
            x = nn.functional.pad(x, (0, pad_amount), value=self.pad_value)
        return x


class StrToIntTransform(nn.Module):
    """Convert string tokens to integers (a sequence or a batch)."""

    def forward(self, input: Any) -> Any:
        """``input`` with each string converted by ``int``."""
        return str_to_int(input)


class Sequential(nn.Sequential):
    r"""A container of text transforms, applied in order.

    Example:
        >>> from ember.text import transforms as T
        >>> pipeline = T.Sequential(T.Truncate(max_seq_len=3), T.ToTensor(padding_value=0))
        >>> pipeline([[1, 2, 3, 4], [5]])
        tensor([[1, 2, 3],
                [5, 0, 0]])
    """
