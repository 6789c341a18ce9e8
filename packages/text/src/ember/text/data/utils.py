"""Tokenizer functions and n-grams (``torchtext.data.utils``)."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator
from functools import partial

__all__ = ["get_tokenizer", "ngrams_iterator", "interleave_keys"]


def _split_tokenizer(x: str) -> list[str]:
    return x.split()


def _spacy_tokenize(x: str, spacy) -> list[str]:
    return [tok.text for tok in spacy.tokenizer(x)]


_patterns = [r"\'", r"\"", r"\.", r"<br \/>", r",", r"\(", r"\)", r"\!", r"\?", r"\;", r"\:",
             r"\s+"]

_replacements = [" '  ", "", " . ", " ", " , ", " ( ", " ) ", " ! ", " ? ", " ", " ", " "]

_patterns_dict = [(re.compile(p), r) for p, r in zip(_patterns, _replacements)]


def _basic_english_normalize(line: str) -> list[str]:
    r"""Basic normalization for a line of text, then split on whitespace.

    Lowercases, then: adds spaces around ``'``, ``.``, ``,``, ``(``, ``)``, ``!`` and ``?``;
    removes ``"``; replaces ``<br />``, ``;`` and ``:`` with a space; collapses whitespace.
    """
    line = line.lower()
    for pattern_re, replaced_str in _patterns_dict:
        line = pattern_re.sub(replaced_str, line)
    return line.split()


def _optional(module: str, purpose: str, url: str):
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(f"Please install {purpose}. See the docs at {url} for more "
                          "information.") from err


def get_tokenizer(tokenizer: str | Callable[[str], list[str]] | None,
                  language: str = "en") -> Callable[[str], list[str]]:
    r"""Generate a tokenizer function for a string sentence.

    Args:
        tokenizer: ``None`` for ``str.split``; ``"basic_english"`` for torchtext's basic
            English normalisation followed by ``split``; a callable, returned as it is; or the
            name of a tokenizer library (``"spacy"``, ``"moses"``, ``"toktok"``, ``"revtok"``,
            ``"subword"``), which must be installed.
        language: the language, ``"en"`` by default (``basic_english`` supports only English).

    Example:
        >>> from ember.text.data.utils import get_tokenizer
        >>> tokenizer = get_tokenizer("basic_english")
        >>> tokenizer("You can now install TorchText using pip!")
        ['you', 'can', 'now', 'install', 'torchtext', 'using', 'pip', '!']
    """
    if tokenizer is None:
        return _split_tokenizer
    if tokenizer == "basic_english":
        if language != "en":
            raise ValueError("Basic normalization is only available for Enlish(en)")
        return _basic_english_normalize
    if callable(tokenizer):
        return tokenizer
    if tokenizer == "spacy":
        spacy = _optional("spacy", "SpaCy", "https://spacy.io")
        try:
            nlp = spacy.load(language)
        except OSError:
            # model shortcuts ("en") no longer work in spaCy 3: try the full name
            shortcuts = getattr(spacy.errors, "OLD_MODEL_SHORTCUTS", {})
            if language not in shortcuts:
                raise
            nlp = spacy.load(shortcuts[language])
        return partial(_spacy_tokenize, spacy=nlp)
    if tokenizer == "moses":
        sacremoses = _optional("sacremoses", "SacreMoses",
                               "https://github.com/alvations/sacremoses")
        return sacremoses.MosesTokenizer().tokenize
    if tokenizer == "toktok":
        toktok = _optional("nltk.tokenize.toktok", "NLTK", "https://nltk.org")
        return toktok.ToktokTokenizer().tokenize
    if tokenizer in ("revtok", "subword"):
        revtok = _optional("revtok", "revtok", "https://github.com/jekbradbury/revtok")
        return revtok.tokenize if tokenizer == "revtok" else partial(revtok.tokenize, decap=True)
    raise ValueError(
        f"Requested tokenizer {tokenizer}, valid choices are a "
        "callable that takes a single string as input, "
        '"revtok" for the revtok reversible tokenizer, '
        '"subword" for the revtok caps-aware tokenizer, '
        '"spacy" for the SpaCy English tokenizer, or '
        '"moses" for the NLTK port of the Moses tokenization '
        "script.")


def interleave_keys(a: int, b: int) -> int:
    """Interleave the bits of two sort keys into one joint sort key.

    Examples similar in both keys get similar joint keys: useful to sort pairs of texts
    (translation, inference) by both lengths at once.
    """
    bits = "".join(x + y for x, y in zip(format(a, "016b"), format(b, "016b")))
    return int(bits, base=2)


def ngrams_iterator(token_list: list[str], ngrams: int) -> Iterator[str]:
    """Yield the given tokens, then their n-grams for n = 2 .. ``ngrams``.

    Args:
        token_list: a list of tokens.
        ngrams: the largest n.

    Example:
        >>> from ember.text.data.utils import ngrams_iterator
        >>> list(ngrams_iterator(["here", "we", "are"], 2))
        ['here', 'we', 'are', 'here we', 'we are']
    """
    yield from token_list
    for n in range(2, ngrams + 1):
        for gram in zip(*[token_list[i:] for i in range(n)]):
            yield " ".join(gram)
