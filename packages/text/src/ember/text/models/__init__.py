"""Text models (``ember.text.models``): BERT with Hugging Face's names, and the sentence
encoder built on it (``all-MiniLM-L6-v2``)."""

from . import bert as _bert
from . import sentence_encoder as _sentence_encoder
from .bert import *  # noqa: F403
from .sentence_encoder import *  # noqa: F403

__all__ = [*_bert.__all__, *_sentence_encoder.__all__]
