"""Factories for :class:`Vocab` (``torchtext.vocab.vocab_factory``): from an ordered mapping of
token frequencies, or from an iterator of token lists."""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping

from .vocab import Vocab, _VocabTable

__all__ = ["vocab", "build_vocab_from_iterator"]


def vocab(ordered_dict: Mapping[str, int], min_freq: int = 1, specials: list[str] | None = None,
          special_first: bool = True) -> Vocab:
    r"""Factory method for creating a vocab object which maps tokens to indices.

    The order in which the key-value pairs were inserted in ``ordered_dict`` is the order of
    the vocab: sort it by frequency first if that is the order you want.

    Args:
        ordered_dict: ordered mapping of tokens to their occurrence frequencies.
        min_freq: the minimum frequency needed to include a token in the vocabulary.
        specials: special symbols to add. The order of supplied tokens is preserved.
        special_first: whether to insert the specials at the beginning or at the end.

    Returns:
        ember.text.vocab.Vocab: a ``Vocab`` object.

    Example:
        >>> from collections import Counter, OrderedDict
        >>> from ember.text.vocab import vocab
        >>> counter = Counter(["a", "a", "b", "b", "b"])
        >>> sorted_by_freq_tuples = sorted(counter.items(), key=lambda x: x[1], reverse=True)
        >>> v1 = vocab(OrderedDict(sorted_by_freq_tuples))
        >>> v1["a"]
        1
        >>> v2 = vocab(OrderedDict([(token, 1) for token in "edcba"]), specials=["<unk>"])
        >>> v2.set_default_index(v2["<unk>"])
        >>> v2["out of vocab"]
        0
    """
    specials = list(specials or [])
    special_set = set(specials)
    # torchtext pops the specials out of the caller's dict; skipping them leaves it untouched
    tokens = [token for token, freq in ordered_dict.items()
              if token not in special_set and freq >= min_freq]
    tokens = specials + tokens if special_first else tokens + specials
    return Vocab(_VocabTable(tokens))


def build_vocab_from_iterator(iterator: Iterable[Iterable[str]], min_freq: int = 1,
                              specials: list[str] | None = None, special_first: bool = True,
                              max_tokens: int | None = None) -> Vocab:
    """Build a :class:`Vocab` from an iterator of token lists.

    Tokens are ordered by descending frequency, ties broken lexicographically.

    Args:
        iterator: iterator used to build the vocab; must yield lists or iterators of tokens.
        min_freq: the minimum frequency needed to include a token in the vocabulary.
        specials: special symbols to add. The order of supplied tokens is preserved.
        special_first: whether to insert the specials at the beginning or at the end.
        max_tokens: if given, the vocab holds the ``max_tokens - len(specials)`` most frequent
            tokens.

    Returns:
        ember.text.vocab.Vocab: a ``Vocab`` object.

    Example:
        >>> from ember.text.data.utils import get_tokenizer
        >>> from ember.text.vocab import build_vocab_from_iterator
        >>> tokenizer = get_tokenizer("basic_english")
        >>> lines = ["The cat sat.", "The dog sat down."]
        >>> v = build_vocab_from_iterator(map(tokenizer, lines), specials=["<unk>"])
        >>> v.get_itos()
        ['<unk>', '.', 'sat', 'the', 'cat', 'dog', 'down']
    """
    counter: Counter[str] = Counter()
    for tokens in iterator:
        counter.update(tokens)

    specials = specials or []
    # first by descending frequency, then lexicographically
    sorted_by_freq_tuples = sorted(counter.items(), key=lambda x: (-x[1], x[0]))
    if max_tokens is not None:
        if len(specials) >= max_tokens:
            raise AssertionError(
                "len(specials) >= max_tokens, so the vocab will be entirely special tokens.")
        sorted_by_freq_tuples = sorted_by_freq_tuples[: max_tokens - len(specials)]
    return vocab(OrderedDict(sorted_by_freq_tuples), min_freq=min_freq, specials=specials,
                 special_first=special_first)
