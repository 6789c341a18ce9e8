"""Text models (``ember.text.models``): BERT with Hugging Face's names, the sentence
encoder built on it (``all-MiniLM-L6-v2``), a Transformer encoder classifier, an LSTM
language model and a small GPT."""

from . import bert as _bert
from . import classifier as _classifier
from . import gpt as _gpt
from . import lstm as _lstm
from . import sentence_encoder as _sentence_encoder
from .bert import *  # noqa: F403
from .classifier import *  # noqa: F403
from .gpt import *  # noqa: F403
from .lstm import *  # noqa: F403
from .sentence_encoder import *  # noqa: F403

__all__ = [*_bert.__all__, *_sentence_encoder.__all__, *_classifier.__all__,
           *_lstm.__all__, *_gpt.__all__]
