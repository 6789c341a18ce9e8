"""Text processing for Ember: tokenizers (SentencePiece, Hugging Face ``tokenizer.json``),
torchtext's vocab, transforms and data utilities, datasets, and models (BERT, a sentence
encoder, a Transformer encoder classifier, an LSTM language model and a small GPT).

Installed by the ``ember-text`` distribution. The submodules load on first use, so that
``import ember.text`` stays cheap: ``ember.text.tokenizers``, ``vocab``, ``transforms``,
``functional``, ``data``, ``datasets``, ``models``.
"""

import importlib as _importlib

__version__ = "0.1.0"

_SUBMODULES = ("data", "datasets", "functional", "models", "tokenizers", "transforms", "vocab")
__all__ = list(_SUBMODULES)


def __getattr__(name: str):
    if name in _SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES))
