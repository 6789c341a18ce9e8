"""``Vocab``: a token <-> index map with an optional default index (``torchtext.vocab.Vocab``).

torchtext keeps the table in C++ (``torchtext._torchtext.Vocab``); here it is a Python list and
dict with the same behaviour and the same error messages, so a program that catches torchtext's
``RuntimeError`` for an unknown token catches Ember's.
"""

from __future__ import annotations

from collections.abc import Iterable

from ember import nn

__all__ = ["Vocab"]


class _VocabTable:
    """The table behind a :class:`Vocab` (what torchtext's C++ ``Vocab`` object holds)."""

    __slots__ = ("itos_", "stoi_", "default_index_")

    def __init__(self, tokens: Iterable[str], default_index: int | None = None) -> None:
        self.itos_: list[str] = []
        self.stoi_: dict[str, int] = {}
        self.default_index_ = default_index
        for token in tokens:
            if token in self.stoi_:
                raise RuntimeError(f"Duplicate token found in tokens list: {token}")
            self.stoi_[token] = len(self.itos_)
            self.itos_.append(token)

    def __getstate__(self) -> tuple:
        return self.itos_, self.default_index_

    def __setstate__(self, state: tuple) -> None:
        itos, self.default_index_ = state
        self.itos_ = list(itos)
        self.stoi_ = {token: i for i, token in enumerate(self.itos_)}

    def index(self, token: str) -> int:
        index = self.stoi_.get(token)
        if index is not None:
            return index
        if self.default_index_ is None:
            raise RuntimeError(f"Token {token} not found and default index is not set")
        return self.default_index_

    def check_index(self, index: int, position: int | None = None) -> None:
        if not 0 <= index < len(self.itos_):
            where = "" if position is None else f" at position {position}"
            raise RuntimeError(f"Specified index {index}{where} is out of bounds for vocab of "
                               f"size {len(self.itos_)}")

    def check_new(self, token: str) -> None:
        if token in self.stoi_:
            raise RuntimeError(f"Token {token} already exists in the Vocab with index: "
                               f"{self.stoi_[token]}")


class Vocab(nn.Module):
    r"""Creates a vocab object which maps tokens to indices.

    Build one with :func:`ember.text.vocab.vocab` or
    :func:`ember.text.vocab.build_vocab_from_iterator`; ``Vocab(tokens)`` takes the tokens in
    index order directly.

    Args:
        vocab: the table (what the factories build), or the tokens in index order.

    Example:
        >>> from ember.text.vocab import build_vocab_from_iterator
        >>> v = build_vocab_from_iterator([["a", "b", "b"]], specials=["<unk>"])
        >>> v.get_itos()
        ['<unk>', 'b', 'a']
        >>> v.set_default_index(v["<unk>"])
        >>> v(["b", "zzz"])
        [1, 0]
    """

    def __init__(self, vocab: _VocabTable | Iterable[str]) -> None:
        super().__init__()
        if isinstance(vocab, str):
            raise TypeError("Vocab() takes the tokens as a list, not a string")
        self.vocab = vocab if isinstance(vocab, _VocabTable) else _VocabTable(vocab)

    def forward(self, tokens: list[str]) -> list[int]:
        r"""Calls the ``lookup_indices`` method.

        Args:
            tokens: a list of tokens used to lookup their corresponding ``indices``.

        Returns:
            The indices associated with a list of ``tokens``.
        """
        return self.lookup_indices(tokens)

    def __len__(self) -> int:
        r"""The length of the vocab."""
        return len(self.vocab.itos_)

    def __contains__(self, token: str) -> bool:
        r"""Whether ``token`` is a member of the vocab."""
        return token in self.vocab.stoi_

    def __getitem__(self, token: str) -> int:
        r"""The index of ``token``; the default index for an unknown token.

        Raises:
            RuntimeError: if ``token`` is unknown and no default index is set.
        """
        return self.vocab.index(token)

    def set_default_index(self, index: int | None) -> None:
        r"""Set the index returned for an out-of-vocabulary token (``None`` unsets it)."""
        self.vocab.default_index_ = index

    def get_default_index(self) -> int | None:
        r"""The default index, or ``None`` when it is not set."""
        return self.vocab.default_index_

    def insert_token(self, token: str, index: int) -> None:
        r"""Insert ``token`` at ``index``, shifting the tokens at and after it by one.

        Raises:
            RuntimeError: if ``index`` is not in ``[0, len(vocab)]`` or if ``token`` already
                exists in the vocab.
        """
        table = self.vocab
        if not 0 <= index <= len(table.itos_):
            raise RuntimeError(f"Specified index {index} is out of bounds for vocab of size "
                               f"{len(table.itos_)}")
        table.check_new(token)
        table.itos_.insert(index, token)
        for i in range(index, len(table.itos_)):
            table.stoi_[table.itos_[i]] = i

    def append_token(self, token: str) -> None:
        r"""Append ``token`` at the end of the vocab.

        Raises:
            RuntimeError: if ``token`` already exists in the vocab.
        """
        table = self.vocab
        table.check_new(token)
        table.stoi_[token] = len(table.itos_)
        table.itos_.append(token)

    def lookup_token(self, index: int) -> str:
        r"""The token at ``index``.

        Raises:
            RuntimeError: if ``index`` is not in ``[0, len(vocab))``.
        """
        self.vocab.check_index(index)
        return self.vocab.itos_[index]

    def lookup_tokens(self, indices: list[int]) -> list[str]:
        r"""The tokens at ``indices``.

        Raises:
            RuntimeError: if an index within ``indices`` is not in ``[0, len(vocab))``.
        """
        for position, index in enumerate(indices):
            self.vocab.check_index(index, position)
        itos = self.vocab.itos_
        return [itos[index] for index in indices]

    def lookup_indices(self, tokens: list[str]) -> list[int]:
        r"""The indices of ``tokens`` (the default index for unknown ones)."""
        stoi, default = self.vocab.stoi_, self.vocab.default_index_
        if default is not None:
            return [stoi.get(token, default) for token in tokens]
        return [self.vocab.index(token) for token in tokens]

    def get_stoi(self) -> dict[str, int]:
        r"""Dictionary mapping tokens to indices."""
        return dict(self.vocab.stoi_)

    def get_itos(self) -> list[str]:
        r"""List mapping indices to tokens."""
        return list(self.vocab.itos_)
