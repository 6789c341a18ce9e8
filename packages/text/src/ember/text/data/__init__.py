"""Text data helpers (``torchtext.data``): tokenizer functions, n-grams and functional
transforms.

``ember.text.data.metrics.bleu_score`` is torchtext's BLEU. Left out: the legacy
``Field``/``Iterator`` API that torchtext itself removed.
"""

from . import functional, metrics, utils
from .functional import (
    custom_replace,
    generate_sp_model,
    load_sp_model,
    numericalize_tokens_from_iterator,
    sentencepiece_numericalizer,
    sentencepiece_tokenizer,
    simple_space_split,
    to_map_style_dataset,
)
from .metrics import bleu_score
from .utils import get_tokenizer, interleave_keys, ngrams_iterator

__all__ = utils.__all__ + functional.__all__ + metrics.__all__
