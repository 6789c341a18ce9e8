"""``Tokenizer``: a ``tokenizer.json`` (Hugging Face's ``tokenizers`` package: WordPiece,
BPE, Unigram, as published with BERT, GPT-2, MiniLM, ...) behind ember-text's batch
interface.

Normalisation, pre-tokenisation, the model, the post-processor's special tokens
(``[CLS] a [SEP] b [SEP]``) and truncation are the library's own; padding, length checks and
tensors are :class:`~ember.text.tokenizers.BaseTokenizer`'s, as for SentencePiece.

The special tokens' roles come from the tokenizer itself, first found first:

1. keyword arguments (``pad_token="[PAD]"``);
2. ``tokenizer_config.json`` and ``special_tokens_map.json`` beside the file, as Hugging Face
   publishes them (also ``model_max_length``, ``padding_side``, ``model_input_names``);
3. ``tokenizer.json``: the padding section (pad), the post-processor (cls, sep), the model
   (unk);
4. the tokenizer's special added tokens with the conventional spellings (``[PAD]``,
   ``<pad>``, ``<s>``, ``</s>``, ``<|endoftext|>``, ...), as Hugging Face's model classes
   assume them.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

import tokenizers

from .base import BaseTokenizer, _as_id_list, _token_content, clean_up_tokenization, write_atomic

__all__ = ["Tokenizer"]

PathLike = str | os.PathLike

#: Hugging Face's file names beside ``tokenizer.json``.
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
SPECIAL_TOKENS_MAP_FILE = "special_tokens_map.json"

# role -> spellings that Hugging Face's tokenizer classes give that role by default
_CONVENTIONAL = {
    "pad": ("[PAD]", "<pad>", "<|pad|>"),
    "unk": ("[UNK]", "<unk>"),
    "cls": ("[CLS]", "<cls>"),
    "sep": ("[SEP]", "<sep>"),
    "mask": ("[MASK]", "<mask>"),
    "bos": ("<s>", "<|endoftext|>"),
    "eos": ("</s>", "<|endoftext|>"),
}
_CONFIG_KEYS = ("model_max_length", "padding_side", "truncation_side", "model_input_names",
                "clean_up_tokenization_spaces")


def _read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path} is not a valid JSON file: {err}") from err


def _post_processors(post: dict | None) -> list[dict]:
    """The post-processor's parts (a ``Sequence`` post-processor holds several)."""
    if not post:
        return []
    if post.get("type") == "Sequence":
        return [p for part in post.get("processors", []) for p in _post_processors(part)]
    return [post]


def _roles_from_json(spec: dict) -> tuple[dict[str, str], bool]:
    """The roles ``tokenizer.json`` gives its special tokens, and whether its post-processor
    writes token type ids (BERT's does)."""
    roles: dict[str, str] = {}
    model = spec.get("model") or {}
    if isinstance(model.get("unk_token"), str):
        roles["unk"] = model["unk_token"]
    elif model.get("type") == "Unigram" and model.get("unk_id") is not None:
        roles["unk"] = model["vocab"][model["unk_id"]][0]
    padding = spec.get("padding")
    if padding and padding.get("pad_token"):
        roles["pad"] = padding["pad_token"]
    has_type_ids = False
    for post in _post_processors(spec.get("post_processor")):
        kind = post.get("type")
        if kind in ("BertProcessing", "RobertaProcessing"):
            roles.setdefault("cls", post["cls"][0])
            roles.setdefault("sep", post["sep"][0])
            if kind == "RobertaProcessing":
                roles.setdefault("bos", post["cls"][0])
                roles.setdefault("eos", post["sep"][0])
            has_type_ids |= kind == "BertProcessing"
        elif kind == "TemplateProcessing":
            single = post.get("single") or []
            if single and "SpecialToken" in single[0]:
                roles.setdefault("cls", single[0]["SpecialToken"]["id"])
            if len(single) > 1 and "SpecialToken" in single[-1]:
                roles.setdefault("sep", single[-1]["SpecialToken"]["id"])
            has_type_ids |= any(next(iter(piece.values()))["type_id"] != 0
                                for piece in post.get("pair") or [])
    return roles, has_type_ids


def _roles_from_config(config: dict) -> dict[str, str]:
    return {role: _token_content(config[f"{role}_token"]) for role in _CONVENTIONAL
            if config.get(f"{role}_token") is not None}


class Tokenizer(BaseTokenizer):
    """A ``tokenizers.Tokenizer`` (what a ``tokenizer.json`` holds) as a tokenizer.

    Construct it from a ``tokenizers.Tokenizer`` object (it keeps a copy), or with
    :meth:`from_file` / :meth:`from_str`.

    Args:
        tokenizer: the ``tokenizers.Tokenizer``.
        clean_up_tokenization_spaces: remove the spaces a WordPiece decoder leaves before
            punctuation (``"a , b"`` -> ``"a, b"``) when decoding.
        model_max_length, padding_side, truncation_side, model_input_names, **special_tokens:
            see :class:`~ember.text.tokenizers.BaseTokenizer`; the defaults come from the
            tokenizer (see the module's documentation).

    Example:
        >>> from ember.text.tokenizers import Tokenizer
        >>> tok = Tokenizer.from_file("bert/tokenizer.json")    # doctest: +SKIP
        >>> batch = tok(["a first text", "and a second one"], padding=True,
        ...             return_tensors="ember")                 # doctest: +SKIP
        >>> sorted(batch)                                       # doctest: +SKIP
        ['attention_mask', 'input_ids', 'token_type_ids']
    """

    def __init__(self, tokenizer: tokenizers.Tokenizer, **kwargs: Any) -> None:
        if not isinstance(tokenizer, tokenizers.Tokenizer):
            raise TypeError(f"Tokenizer() takes a tokenizers.Tokenizer, got "
                            f"{type(tokenizer).__name__}")
        self._setup(tokenizers.Tokenizer.from_str(tokenizer.to_str()), kwargs)

    def _setup(self, backend: tokenizers.Tokenizer, kwargs: dict[str, Any],
               config: dict | None = None) -> None:
        """Take ``backend`` (owned: its padding and truncation are switched per call) with the
        roles and settings from ``kwargs``, then ``config``, then the tokenizer itself."""
        spec = json.loads(backend.to_str())
        self._backend = backend
        self._lock = threading.Lock()
        # kept for save(); per call, this class pads and the backend truncates only on demand
        self._saved_padding, self._saved_truncation = spec.get("padding"), spec.get("truncation")
        backend.no_padding()
        backend.no_truncation()
        if self._saved_padding:
            self.pad_token_type_id = self._saved_padding.get("pad_type_id", 0)
        config = dict(config or {})
        roles, has_type_ids = _roles_from_json(spec)
        special = [t["content"] for t in spec.get("added_tokens") or [] if t.get("special")]
        for role, spellings in _CONVENTIONAL.items():
            if role not in roles:
                roles[role] = next((s for s in spellings if s in special), None)
        roles.update(_roles_from_config(config))
        if "model_input_names" not in config:
            config["model_input_names"] = ["input_ids", "token_type_ids", "attention_mask"] \
                if has_type_ids else ["input_ids", "attention_mask"]
        settings = {key: config[key] for key in _CONFIG_KEYS if config.get(key) is not None}
        settings.update(kwargs)
        self.clean_up_tokenization_spaces = bool(
            settings.pop("clean_up_tokenization_spaces", False))
        self._init_base(special_tokens=roles, **settings)

    @classmethod
    def from_str(cls, json_str: str, **kwargs: Any) -> Tokenizer:
        """A tokenizer from the text of a ``tokenizer.json``."""
        try:
            backend = tokenizers.Tokenizer.from_str(json_str)
        except Exception as err:  # the library raises a bare Exception
            raise ValueError(f"not a valid tokenizer.json: {err}") from err
        self = cls.__new__(cls)
        self._setup(backend, kwargs)
        return self

    @classmethod
    def from_file(cls, path: PathLike, **kwargs: Any) -> Tokenizer:
        """Load a ``tokenizer.json``, with the ``tokenizer_config.json`` and
        ``special_tokens_map.json`` beside it when they are there; keyword arguments override
        them."""
        path = os.fspath(path)
        with open(path, "rb") as f:
            raw = f.read()
        try:
            backend = tokenizers.Tokenizer.from_str(raw.decode("utf-8"))
        except Exception as err:  # UnicodeDecodeError, or the library's bare Exception
            raise ValueError(f"{path} is not a valid tokenizer.json: {err}") from err
        config: dict = {}
        folder = os.path.dirname(path)
        for name in (SPECIAL_TOKENS_MAP_FILE, TOKENIZER_CONFIG_FILE):  # the latter wins
            sibling = os.path.join(folder, name)
            if os.path.isfile(sibling):
                config.update(_read_json(sibling))
        self = cls.__new__(cls)
        self._setup(backend, kwargs, config)
        return self

    def to_str(self, pretty: bool = False) -> str:
        """The ``tokenizer.json`` text, with the padding and truncation it was loaded with."""
        spec = json.loads(self._backend.to_str())
        spec["padding"], spec["truncation"] = self._saved_padding, self._saved_truncation
        return json.dumps(spec, ensure_ascii=False, indent=2 if pretty else None)

    def save(self, path: PathLike, pretty: bool = True) -> None:
        """Write ``tokenizer.json`` (atomically)."""
        write_atomic(path, self.to_str(pretty).encode("utf-8"))

    def save_pretrained(self, save_directory: PathLike) -> tuple[str, str]:
        """Write ``tokenizer.json`` and ``tokenizer_config.json`` (the special tokens' roles,
        ``model_max_length``, sides, input names) into ``save_directory``, which
        :meth:`from_file` reads back."""
        folder = os.fspath(save_directory)
        os.makedirs(folder, exist_ok=True)
        tokenizer_file = os.path.join(folder, "tokenizer.json")
        config_file = os.path.join(folder, TOKENIZER_CONFIG_FILE)
        self.save(tokenizer_file)
        config = {**self.special_tokens_map, "model_max_length": self.model_max_length,
                  "padding_side": self.padding_side, "truncation_side": self.truncation_side,
                  "model_input_names": self.model_input_names,
                  "clean_up_tokenization_spaces": self.clean_up_tokenization_spaces}
        write_atomic(config_file, json.dumps(config, indent=2).encode("utf-8"))
        return tokenizer_file, config_file

    @property
    def backend_tokenizer(self) -> tokenizers.Tokenizer:
        """The ``tokenizers.Tokenizer`` underneath (its padding and truncation are set per
        call)."""
        return self._backend

    # -- encoding and decoding --------------------------------------------------------------

    def encode(self, text: str, text_pair: str | None = None,
               add_special_tokens: bool = True) -> list[int]:
        """The ids of a text (or a pair), with the special tokens, untruncated."""
        return self._encode_rows([(text, text_pair)], add_special_tokens, None, None)[0][0]

    def tokenize(self, text: str, pair: str | None = None,
                 add_special_tokens: bool = False) -> list[str]:
        """The tokens of a text (or a pair), by default without special tokens."""
        with self._lock:
            self._configure(None, None)
            return self._backend.encode(text, pair, add_special_tokens=add_special_tokens).tokens

    def _configure(self, truncation: str | None, max_length: int | None) -> None:
        """Switch the backend's truncation to this call's (under the lock)."""
        backend = self._backend
        if backend.padding is not None:  # set by hand on backend_tokenizer
            backend.no_padding()
        wanted = None if truncation is None else {
            "max_length": max_length, "stride": 0, "strategy": truncation,
            "direction": self.truncation_side}
        if backend.truncation != wanted:
            if wanted is None:
                backend.no_truncation()
            else:
                backend.enable_truncation(**wanted)

    def _encode_rows(self, batch: list[tuple[str, str | None]], add_special_tokens: bool,
                     truncation: str | None, max_length: int | None
                     ) -> tuple[list[list[int]], list[list[int]]]:
        inputs = [text if pair is None else (text, pair) for text, pair in batch]
        encode = getattr(self._backend, "encode_batch_fast", self._backend.encode_batch)
        with self._lock:
            try:
                self._configure(truncation, max_length)
                encodings = encode(inputs, add_special_tokens=add_special_tokens)
            except Exception as err:  # the library's truncation errors are bare Exceptions
                if type(err) is not Exception:
                    raise
                raise ValueError(str(err)) from err
        return [e.ids for e in encodings], [e.type_ids for e in encodings]

    def decode(self, token_ids: Any, skip_special_tokens: bool = False,
               clean_up_tokenization_spaces: bool | None = None) -> str:
        """The text of ``token_ids`` (a list, array or 1-D tensor)."""
        text = self._backend.decode(_as_id_list(token_ids),
                                    skip_special_tokens=skip_special_tokens)
        if clean_up_tokenization_spaces is None:
            clean_up_tokenization_spaces = self.clean_up_tokenization_spaces
        return clean_up_tokenization(text) if clean_up_tokenization_spaces else text

    # -- vocabulary -------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return self._backend.get_vocab_size(with_added_tokens=False)

    def __len__(self) -> int:
        return self._backend.get_vocab_size(with_added_tokens=True)

    def get_vocab(self) -> dict[str, int]:
        """``{token: id}``, added tokens included."""
        return self._backend.get_vocab(with_added_tokens=True)

    def token_to_id(self, token: str) -> int | None:
        return self._backend.token_to_id(token)

    def id_to_token(self, index: int) -> str | None:
        return self._backend.id_to_token(index)

    def num_special_tokens_to_add(self, pair: bool = False) -> int:
        """How many special tokens the post-processor adds to a sequence (or a pair)."""
        return self._backend.num_special_tokens_to_add(pair)

    def _add_tokens(self, tokens: list[str], special: bool) -> int:
        with self._lock:
            if special:
                return self._backend.add_special_tokens(tokens)
            return self._backend.add_tokens(tokens)
