"""Vocabularies (``torchtext.vocab``): :class:`Vocab` and its factories.

torchtext's pretrained word vectors (``GloVe``, ``FastText``, ``CharNGram``, ``Vectors``) are
not provided.
"""

from .vocab import Vocab
from .vocab_factory import build_vocab_from_iterator, vocab

__all__ = ["Vocab", "vocab", "build_vocab_from_iterator"]
