"""Functional text helpers (``torchtext.data.functional``): SentencePiece models as generators
of ids or pieces, regex clean-up, numericalisation and ``to_map_style_dataset``.

Left out: ``filter_wikipedia_xml`` (fastText's ``wikifil.pl`` port, for enwik9 only).
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import sentencepiece

from ember.data import Dataset

from ..tokenizers.sentencepiece import SentencePieceTokenizer, load_processor

__all__ = [
    "generate_sp_model",
    "load_sp_model",
    "sentencepiece_numericalizer",
    "sentencepiece_tokenizer",
    "custom_replace",
    "simple_space_split",
    "numericalize_tokens_from_iterator",
    "to_map_style_dataset",
]


def generate_sp_model(filename: str | os.PathLike, vocab_size: int = 20000,
                      model_type: str = "unigram", model_prefix: str = "m_user") -> None:
    r"""Train a SentencePiece model on a text file; writes ``<model_prefix>.model`` and
    ``<model_prefix>.vocab``.

    Args:
        filename: the data file for training the SentencePiece model.
        vocab_size: the size of the vocabulary.
        model_type: ``"unigram"``, ``"bpe"``, ``"char"`` or ``"word"``.
        model_prefix: the prefix of the files of the model and its vocab.

    Example:
        >>> from ember.text.data.functional import generate_sp_model
        >>> generate_sp_model("test.csv", vocab_size=23456,
        ...                   model_prefix="spm_user")  # doctest: +SKIP
    """
    SentencePieceTokenizer.train(filename, vocab_size=vocab_size, model_type=model_type,
                                 model_prefix=model_prefix)


def load_sp_model(spm: str | os.PathLike | io.BufferedReader
                  ) -> sentencepiece.SentencePieceProcessor:
    r"""Load a SentencePiece model from a path or a binary file object: a
    ``sentencepiece.SentencePieceProcessor`` (``EncodeAsIds``, ``EncodeAsPieces``, ...).

    Example:
        >>> from ember.text.data.functional import load_sp_model
        >>> sp_model = load_sp_model("m_user.model")  # doctest: +SKIP
        >>> sp_model = load_sp_model(open("m_user.model", "rb"))  # doctest: +SKIP
    """
    return load_processor(spm)


def _per_line(encode: Callable[[str], list]) -> Callable[[Iterable[str]], Iterator[list]]:
    def _internal_func(txt_iter: Iterable[str]) -> Iterator[list]:
        for line in txt_iter:
            yield encode(line)

    return _internal_func


def sentencepiece_numericalizer(sp_model: Any) -> Callable[[Iterable[str]], Iterator[list[int]]]:
    r"""A function that maps an iterable of sentences to a generator of their ids under
    ``sp_model``.

    Example:
        >>> from ember.text.data.functional import sentencepiece_numericalizer
        >>> sp_id_generator = sentencepiece_numericalizer(sp_model)  # doctest: +SKIP
        >>> list(sp_id_generator(["sentencepiece encode as pieces"]))  # doctest: +SKIP
        [[9858, 9249, 1629, 1305, 1809, 53, 842]]
    """
    return _per_line(sp_model.EncodeAsIds)


def sentencepiece_tokenizer(sp_model: Any) -> Callable[[Iterable[str]], Iterator[list[str]]]:
    r"""A function that maps an iterable of sentences to a generator of their pieces under
    ``sp_model``.

    Example:
        >>> from ember.text.data.functional import sentencepiece_tokenizer
        >>> sp_tokens_generator = sentencepiece_tokenizer(sp_model)  # doctest: +SKIP
        >>> list(sp_tokens_generator(["sentencepiece encode as pieces"]))  # doctest: +SKIP
        [['▁sentence', 'piece', '▁en', 'co', 'de', '▁as', '▁pieces']]
    """
    return _per_line(sp_model.EncodeAsPieces)


def custom_replace(replace_pattern: Iterable[tuple[str, str]]
                   ) -> Callable[[Iterable[str]], Iterator[str]]:
    r"""A transform of strings by a list of ``(regex, replacement)``, applied in order.

    Example:
        >>> from ember.text.data.functional import custom_replace
        >>> custom_replace_transform = custom_replace([(r"S", "s"), (r"\s+", " ")])
        >>> list(custom_replace_transform(["Sentencepiece encode  aS  pieces",
        ...                                "exampleS to   try!"]))
        ['sentencepiece encode as pieces', 'examples to try!']
    """
    patterns = [(re.compile(p), r) for (p, r) in replace_pattern]

    def _internal_func(txt_iter: Iterable[str]) -> Iterator[str]:
        for line in txt_iter:
            for pattern_re, replaced_str in patterns:
                line = pattern_re.sub(replaced_str, line)
            yield line

    return _internal_func


def simple_space_split(iterator: Iterable[str]) -> Iterator[list[str]]:
    r"""Split each string on whitespace.

    Example:
        >>> from ember.text.data.functional import simple_space_split
        >>> list(simple_space_split(["Sentencepiece encode as pieces", "example to try!"]))
        [['Sentencepiece', 'encode', 'as', 'pieces'], ['example', 'to', 'try!']]
    """
    for line in iterator:
        yield line.split()


def numericalize_tokens_from_iterator(vocab: Mapping[str, int] | Any,
                                      iterator: Iterable[Iterable[str]],
                                      removed_tokens: Iterable[str] | None = None
                                      ) -> Iterator[Iterator[int]]:
    r"""Yield an iterator of ids for each list of tokens, looked up in ``vocab`` (a ``Vocab``
    or a dict), leaving out ``removed_tokens``.

    Example:
        >>> from ember.text.data.functional import (
        ...     numericalize_tokens_from_iterator, simple_space_split)
        >>> vocab = {"Sentencepiece": 0, "encode": 1, "as": 2, "pieces": 3}
        >>> ids_iter = numericalize_tokens_from_iterator(
        ...     vocab, simple_space_split(["Sentencepiece as pieces", "as pieces"]))
        >>> [list(ids) for ids in ids_iter]
        [[0, 2, 3], [2, 3]]
    """
    removed = None if removed_tokens is None else set(removed_tokens)
    for tokens in iterator:
        if removed is None:
            yield iter(vocab[token] for token in tokens)
        else:
            yield iter(vocab[token] for token in tokens if token not in removed)


class _MapStyleDataset(Dataset):
    def __init__(self, iter_data: Iterable) -> None:
        self._data = list(iter_data)

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, idx: int) -> Any:
        return self._data[idx]


def to_map_style_dataset(iter_data: Iterable) -> Dataset:
    r"""An iterable-style dataset (or any iterable) as a map-style ``Dataset`` (it reads the
    whole iterable into memory).

    Example:
        >>> from ember.text.data.functional import to_map_style_dataset
        >>> ds = to_map_style_dataset(iter([(1, "a"), (2, "b")]))
        >>> len(ds), ds[1]
        (2, (2, 'b'))
    """
    return _MapStyleDataset(iter_data)
