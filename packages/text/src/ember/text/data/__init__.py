"""Text data helpers (``torchtext.data``): tokenizer functions, n-grams and functional
transforms.

Left out: ``bleu_score`` (``torchtext.data.metrics``) and the legacy ``Field``/``Iterator``
API that torchtext itself removed.
"""

from . import functional, utils
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
from .utils import get_tokenizer, interleave_keys, ngrams_iterator

__all__ = utils.__all__ + functional.__all__
