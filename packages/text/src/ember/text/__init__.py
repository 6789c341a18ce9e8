"""Text processing for Ember: sentencepiece tokenizers, vocab, datasets and models.

Installed by the ``ember-text`` distribution.
"""

__version__ = "0.1.0"
