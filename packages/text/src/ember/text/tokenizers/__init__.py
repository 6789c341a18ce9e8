"""Tokenizers on the field's own libraries, behind one batch interface.

- :class:`SentencePieceTokenizer`: Google's SentencePiece (train, load a ``.model``, encode
  to ids or pieces, sample, decode, save).
- :class:`Tokenizer`: a ``tokenizer.json`` of Hugging Face's ``tokenizers`` (BERT WordPiece,
  GPT-2 BPE, Unigram), loaded as it is published.

Both are called the same way, with Hugging Face's semantics::

    batch = tok(["a text", "another text"], padding=True, truncation=True, max_length=128,
                return_tensors="ember")
    batch["input_ids"], batch["attention_mask"]
"""

from .base import SPECIAL_TOKEN_ROLES, BaseTokenizer, BatchEncoding
from .huggingface import Tokenizer
from .sentencepiece import SentencePieceTokenizer

__all__ = ["BaseTokenizer", "BatchEncoding", "SentencePieceTokenizer", "Tokenizer",
           "SPECIAL_TOKEN_ROLES"]
