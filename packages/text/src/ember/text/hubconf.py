"""ember-text's hub entry module (the ``ember.hub`` entry point ``text``).

Like a torch.hub ``hubconf.py``: a ``dependencies`` list and one public callable per
published model. ``ember.hub.load("all-MiniLM-L6-v2")`` returns the sentence encoder
(:func:`ember.text.models.all_minilm_l6_v2`), in eval mode. ``gpt_small``, ``lstm_lm`` and
``transformer_classifier`` build untrained models whose sizes are keyword arguments
(``ember.hub.load("gpt_small", vocab_size=1000)``). A model's hub name need not be a Python
identifier: it is the attribute name here.
"""

from ember.text.models import classifier as _classifier
from ember.text.models import gpt as _gpt
from ember.text.models import lstm as _lstm
from ember.text.models import sentence_encoder as _sentence_encoder

dependencies = ["ember", "tokenizers"]

_MODELS = {
    "all-MiniLM-L6-v2": _sentence_encoder.all_minilm_l6_v2,
    "gpt_small": _gpt.gpt_small,
    "lstm_lm": _lstm.lstm_lm,
    "transformer_classifier": _classifier.transformer_classifier,
}

globals().update(_MODELS)

__all__ = ["dependencies", *_MODELS]
