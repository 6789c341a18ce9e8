"""The batch interface shared by ember-text's tokenizers, with Hugging Face's semantics.

``tok(texts, padding=True, truncation=True, max_length=N, return_tensors="ember")`` returns a
:class:`BatchEncoding` of ``input_ids``, ``attention_mask`` (and ``token_type_ids`` where the
model has them). A subclass encodes (ids with the tokenizer's own special tokens, truncated
when asked); this class resolves the padding and truncation strategies, checks lengths, pads
and converts, the same way for every backend.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections import UserDict
from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from typing import Any

import numpy as np

import ember

__all__ = ["BaseTokenizer", "BatchEncoding", "SPECIAL_TOKEN_ROLES"]

#: The roles a special token can play, as Hugging Face names them (``pad`` -> ``pad_token``).
SPECIAL_TOKEN_ROLES = ("bos", "eos", "unk", "sep", "pad", "cls", "mask")

_PAD_MISSING = (
    "Asking to pad but the tokenizer does not have a padding token. "
    "Please select a token to use as `pad_token` `(tokenizer.pad_token = tokenizer.eos_token "
    "e.g.)` or add a new pad token via `tokenizer.add_special_tokens({'pad_token': '[PAD]'})`."
)
_BAD_TEXT = (
    "text input must be of type `str` (single example), `List[str]` (batch or single "
    "pretokenized example) or `List[List[str]]` (batch of pretokenized examples)."
)
_NO_MAX_LENGTH = (
    "Asking to {} to max_length but no maximum length is provided and the model has no "
    "predefined maximum length. Default to no {}."
)
_PADDING_STRATEGIES = ("longest", "max_length", "do_not_pad")
_TRUNCATION_STRATEGIES = ("only_first", "only_second", "longest_first", "do_not_truncate")
_SIDES = ("right", "left")
# Hugging Face writes a model without a length limit as model_max_length=int(1e30)
_UNLIMITED = int(1e20)


class BatchEncoding(UserDict):
    """The output of a tokenizer call: a dict of ``input_ids``, ``attention_mask`` and, where
    the model has them, ``token_type_ids`` (Hugging Face's ``BatchEncoding``); its keys are
    also attributes (``enc.input_ids``)."""

    def __getattr__(self, item: str) -> Any:
        if item == "data":  # not set yet (unpickling)
            raise AttributeError(item)
        try:
            return self.data[item]
        except KeyError:
            raise AttributeError(item) from None

    def to(self, device: str | ember.device) -> BatchEncoding:
        """Move every tensor to ``device`` (in place, like Hugging Face's); returns ``self``."""
        self.data = {k: v.to(device) if isinstance(v, ember.Tensor) else v
                     for k, v in self.data.items()}
        return self


class _SpecialToken:
    """``tok.pad_token`` and friends (the token playing a role, or ``None``) and
    ``tok.pad_token_id`` and friends (its id); setting either gives the role a token."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.as_id = name.endswith("_id")
        self.role = name.removesuffix("_id").removesuffix("_token")

    def __get__(self, obj: BaseTokenizer | None, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        token = obj._special_tokens.get(self.role)
        return obj.token_to_id(token) if self.as_id and token is not None else token

    def __set__(self, obj: BaseTokenizer, value: Any) -> None:
        if self.as_id and value is not None:
            token = obj.id_to_token(value)
            if token is None:
                raise ValueError(f"{value} is not a token id of this tokenizer")
            value = token
        obj._set_special_token(self.role, value)


def _token_content(token: Any) -> str | None:
    """A special token as a string: configs write them as strings or as ``AddedToken`` dicts."""
    if token is None or isinstance(token, str):
        return token
    if isinstance(token, dict) and isinstance(token.get("content"), str):
        return token["content"]
    content = getattr(token, "content", None)  # tokenizers.AddedToken
    if isinstance(content, str):
        return content
    raise TypeError(f"a special token must be a string, got {type(token).__name__}")


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    path = os.fspath(path)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),
                               prefix=os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _as_id_list(ids: Any) -> list:
    """Token ids given as a list, a NumPy array or an Ember tensor, as (nested) lists."""
    tolist = getattr(ids, "tolist", None)
    return tolist() if tolist is not None else list(ids)


class BaseTokenizer:
    """What :class:`SentencePieceTokenizer` and :class:`Tokenizer` share: the call that makes
    model inputs, decoding, special tokens and vocabulary look-ups.

    A subclass implements ``_encode_rows`` (ids and token type ids, with its special tokens,
    truncated when asked), ``token_to_id``, ``id_to_token``, ``decode``, ``vocab_size``,
    ``__len__`` and ``_add_tokens``.

    Args:
        model_max_length: the most tokens the model takes (its positions); a longer input is
            truncated when ``truncation=True`` and is an error otherwise. ``None``: no limit.
        padding_side: ``"right"`` (default) or ``"left"``.
        truncation_side: ``"right"`` (default) or ``"left"``.
        model_input_names: the keys a call returns by default.
        **special_tokens: ``pad_token="[PAD]"`` and the other roles of
            :data:`SPECIAL_TOKEN_ROLES`, overriding what the tokenizer says.
    """

    model_input_names: list[str] = ["input_ids", "attention_mask"]
    pad_token_type_id = 0

    bos_token = _SpecialToken()
    eos_token = _SpecialToken()
    unk_token = _SpecialToken()
    sep_token = _SpecialToken()
    pad_token = _SpecialToken()
    cls_token = _SpecialToken()
    mask_token = _SpecialToken()
    bos_token_id = _SpecialToken()
    eos_token_id = _SpecialToken()
    unk_token_id = _SpecialToken()
    sep_token_id = _SpecialToken()
    pad_token_id = _SpecialToken()
    cls_token_id = _SpecialToken()
    mask_token_id = _SpecialToken()

    def _init_base(self, *, model_max_length: int | None = None, padding_side: str = "right",
                   truncation_side: str = "right",
                   model_input_names: Sequence[str] | None = None,
                   special_tokens: dict[str, Any] | None = None,
                   **role_tokens: Any) -> None:
        """Set what the base class keeps; ``special_tokens`` are the tokenizer's own roles
        (``{"pad": "<pad>"}``), ``role_tokens`` the caller's overrides (``pad_token=...``)."""
        if model_max_length is not None and model_max_length > _UNLIMITED:
            model_max_length = None
        self.model_max_length = model_max_length
        self.padding_side = _check_side("padding_side", padding_side)
        self.truncation_side = _check_side("truncation_side", truncation_side)
        if model_input_names is not None:
            self.model_input_names = list(model_input_names)
        self._special_tokens: dict[str, str] = {}
        for role, token in (special_tokens or {}).items():
            if token is not None:
                self._special_tokens[role] = token
        for key, token in role_tokens.items():
            role = key.removesuffix("_token")
            if not key.endswith("_token") or role not in SPECIAL_TOKEN_ROLES:
                raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument "
                                f"'{key}'")
            self._set_special_token(role, _token_content(token))

    # -- what a backend provides ------------------------------------------------------------

    def _encode_rows(self, batch: list[tuple[str, str | None]], add_special_tokens: bool,
                     truncation: str | None, max_length: int | None
                     ) -> tuple[list[list[int]], list[list[int]]]:
        """The ids and token type ids of each ``(text, pair or None)``, with the special
        tokens when ``add_special_tokens``, truncated to ``max_length`` by ``truncation``
        (a strategy name) when it is not ``None``."""
        raise NotImplementedError

    def token_to_id(self, token: str) -> int | None:
        """The id of ``token``, or ``None`` when it is not in the vocabulary."""
        raise NotImplementedError

    def id_to_token(self, index: int) -> str | None:
        """The token with id ``index``, or ``None`` when there is none."""
        raise NotImplementedError

    def decode(self, token_ids: Any, skip_special_tokens: bool = False) -> str:
        """The text of ``token_ids`` (a list, array or 1-D tensor)."""
        raise NotImplementedError

    @property
    def vocab_size(self) -> int:
        """The size of the base vocabulary (without added tokens)."""
        raise NotImplementedError

    def __len__(self) -> int:
        """The size of the full vocabulary (with added tokens)."""
        raise NotImplementedError

    def _add_tokens(self, tokens: list[str], special: bool) -> int:
        """Add ``tokens`` to the vocabulary; the number actually added."""
        raise NotImplementedError

    # -- special tokens ---------------------------------------------------------------------

    def _set_special_token(self, role: str, token: str | None) -> None:
        if token is None:
            self._special_tokens.pop(role, None)
            return
        if not isinstance(token, str):
            raise TypeError(f"{role}_token must be a string or None, got "
                            f"{type(token).__name__}")
        if self.token_to_id(token) is None:
            raise ValueError(f"{token!r} is not in the vocabulary of this tokenizer: add it "
                             f"with add_special_tokens({{'{role}_token': {token!r}}})")
        self._special_tokens[role] = token

    @property
    def special_tokens_map(self) -> dict[str, str]:
        """``{"pad_token": "[PAD]", ...}`` for the roles that are set."""
        return {f"{role}_token": self._special_tokens[role] for role in SPECIAL_TOKEN_ROLES
                if role in self._special_tokens}

    @property
    def all_special_tokens(self) -> list[str]:
        """Every token that plays a special role, once each."""
        return list(dict.fromkeys(self.special_tokens_map.values()))

    @property
    def all_special_ids(self) -> list[int]:
        """The ids of :attr:`all_special_tokens`."""
        return [self.token_to_id(token) for token in self.all_special_tokens]

    def add_special_tokens(self, special_tokens_dict: dict[str, Any]) -> int:
        """Add special tokens and give them their roles: ``{"pad_token": "[PAD]"}``, and
        ``"additional_special_tokens"`` for tokens without a role. Returns the number of
        tokens added to the vocabulary (a token already there is not added again)."""
        added = 0
        for key, value in special_tokens_dict.items():
            if key == "additional_special_tokens":
                added += self._add_tokens([_token_content(t) for t in value], special=True)
                continue
            role = key.removesuffix("_token")
            if not key.endswith("_token") or role not in SPECIAL_TOKEN_ROLES:
                raise ValueError(f"Key {key} is not a special token")
            token = _token_content(value)
            added += self._add_tokens([token], special=True)
            self._set_special_token(role, token)
        return added

    def add_tokens(self, new_tokens: str | Iterable[str], special_tokens: bool = False) -> int:
        """Add ordinary tokens to the vocabulary; the number actually added."""
        tokens = [new_tokens] if isinstance(new_tokens, str) else list(new_tokens)
        return self._add_tokens([_token_content(t) for t in tokens], special=special_tokens)

    # -- vocabulary -------------------------------------------------------------------------

    def convert_tokens_to_ids(self, tokens: str | Iterable[str]) -> int | list[int]:
        """Ids of ``tokens``; an unknown token maps to the unknown token's id (``None`` when
        the tokenizer has none)."""
        if isinstance(tokens, str):
            return self._id_or_unk(tokens)
        return [self._id_or_unk(token) for token in tokens]

    def _id_or_unk(self, token: str) -> int | None:
        index = self.token_to_id(token)
        return self.unk_token_id if index is None else index

    def convert_ids_to_tokens(self, ids: int | Iterable[int],
                              skip_special_tokens: bool = False) -> str | list[str]:
        """Tokens of ``ids`` (an int, or a list, array or tensor of them)."""
        if isinstance(ids, int):
            return self.id_to_token(ids)
        special = set(self.all_special_ids) if skip_special_tokens else ()
        return [self.id_to_token(i) for i in _as_id_list(ids) if i not in special]

    def batch_decode(self, sequences: Any, skip_special_tokens: bool = False) -> list[str]:
        """:meth:`decode` each sequence of a batch (a list of lists, or a 2-D tensor)."""
        return [self.decode(ids, skip_special_tokens=skip_special_tokens)
                for ids in _as_id_list(sequences)]

    # -- the call ---------------------------------------------------------------------------

    def __call__(self, text: str | Sequence[str] | Sequence[tuple[str, str]],
                 text_pair: str | Sequence[str] | None = None, *,
                 add_special_tokens: bool = True, padding: bool | str = False,
                 truncation: bool | str = False, max_length: int | None = None,
                 pad_to_multiple_of: int | None = None, return_tensors: str | None = None,
                 return_token_type_ids: bool | None = None,
                 return_attention_mask: bool | None = None) -> BatchEncoding:
        """Tokenize one text, a batch of texts, or (batches of) text pairs into model inputs.

        Args:
            text: a string, a list of strings, or a list of ``(text, pair)`` tuples.
            text_pair: the second sequences (a string, or a list as long as ``text``).
            add_special_tokens: add the tokenizer's special tokens (``[CLS] a [SEP] b [SEP]``
                for BERT; SentencePiece's ``<s>``/``</s>`` when it was made to add them).
            padding: ``True`` or ``"longest"`` pads to the longest sequence of the batch,
                ``"max_length"`` to ``max_length`` (or ``model_max_length``); ``False`` (the
                default) does not pad. Pads with the tokenizer's pad token on
                :attr:`padding_side`; an error when the tokenizer has none.
            truncation: ``True`` or ``"longest_first"`` (for a pair: one token at a time from
                the longer sequence), ``"only_first"``, ``"only_second"``; truncates to
                ``max_length`` (or ``model_max_length``), special tokens included. ``False``
                (the default): an input longer than ``max_length`` or ``model_max_length`` is
                an error that names the limit.
            max_length: the length to truncate or pad to.
            pad_to_multiple_of: round the padded length up to a multiple of this.
            return_tensors: ``"ember"`` (or ``"pt"``) for int64 Ember tensors, ``"np"`` for
                NumPy arrays, ``None`` for lists. A single text gets a batch axis of one.
            return_token_type_ids: default: when the model has them.
            return_attention_mask: default: yes.
        """
        batched, batch = _as_batch(text, text_pair)
        padding_strategy, truncation_strategy, max_length = self._strategies(
            padding, truncation, max_length)
        pad_id = None
        if padding_strategy is not None:
            pad_id = self.pad_token_id
            if pad_id is None or pad_id < 0:
                raise ValueError(_PAD_MISSING)
        ids, type_ids = self._encode_rows(batch, add_special_tokens, truncation_strategy,
                                          max_length)
        if truncation_strategy is None:
            self._check_lengths(ids, max_length)

        if return_token_type_ids is None:
            return_token_type_ids = "token_type_ids" in self.model_input_names
        if return_attention_mask is None:
            return_attention_mask = "attention_mask" in self.model_input_names
        convert = None
        if return_tensors is not None:
            convert = _CONVERTERS.get(return_tensors)
            if convert is None:
                raise ValueError(f"return_tensors should be 'ember', 'pt', 'np' or None, got "
                                 f"{return_tensors!r}")
        lengths = [len(row) for row in ids]
        if padding_strategy is not None:
            length = max(lengths, default=0)
            if padding_strategy == "max_length":
                length = max(length, max_length)
            if pad_to_multiple_of and length % pad_to_multiple_of:
                length = (length // pad_to_multiple_of + 1) * pad_to_multiple_of
        elif convert is not None and len(set(lengths)) > 1:
            raise ValueError(_RAGGED)
        else:
            length = None
        # each key: its rows and its padding value; the attention mask follows the lengths
        rows = {"input_ids": (ids, 0 if pad_id is None else pad_id)}
        if return_token_type_ids:
            rows["token_type_ids"] = (type_ids, self.pad_token_type_id)
        if convert is None:
            return self._as_lists(rows, lengths, length, return_attention_mask, batched)
        if length is None:  # unpadded rows, all of one length
            length = lengths[0] if lengths else 0
        filled = self._filled(np.array(lengths, dtype=np.intp), length)
        data = {key: convert(_fill(seqs, filled, value)) for key, (seqs, value) in rows.items()}
        if return_attention_mask:
            data["attention_mask"] = convert(filled.astype(np.int64))
        return BatchEncoding(data)

    def _as_lists(self, rows: dict[str, tuple[list[list[int]], int]], lengths: list[int],
                  length: int | None, attention_mask: bool, batched: bool) -> BatchEncoding:
        """The lists of a call without tensors, padded to ``length`` unless it is ``None``;
        a single text's rows unwrapped."""
        data = {key: seqs if length is None else self._pad_rows(seqs, length, value)
                for key, (seqs, value) in rows.items()}
        if attention_mask:
            masks = [[1] * n for n in lengths]
            data["attention_mask"] = masks if length is None else self._pad_rows(masks, length, 0)
        if not batched:
            data = {key: seqs[0] for key, seqs in data.items()}
        return BatchEncoding(data)

    def _filled(self, lengths: np.ndarray, length: int) -> np.ndarray:
        """Where the tokens go in a ``(batch, length)`` array (the rest is padding)."""
        positions = np.arange(length)
        if self.padding_side == "right":
            return positions < lengths[:, None]
        return positions >= (length - lengths)[:, None]

    def _strategies(self, padding: bool | str, truncation: bool | str, max_length: int | None
                    ) -> tuple[str | None, str | None, int | None]:
        """Hugging Face's padding and truncation strategies (``None`` for none), and the
        length they work to."""
        padding_strategy = _strategy(padding, "longest", "do_not_pad", _PADDING_STRATEGIES,
                                     "PaddingStrategy")
        truncation_strategy = _strategy(truncation, "longest_first", "do_not_truncate",
                                        _TRUNCATION_STRATEGIES, "TruncationStrategy")
        if max_length is None and (padding_strategy == "max_length" or truncation_strategy):
            max_length = self.model_max_length
        if max_length is None:
            if padding_strategy == "max_length":
                warnings.warn(_NO_MAX_LENGTH.format("pad", "padding"), stacklevel=3)
                padding_strategy = None
            if truncation_strategy is not None:
                warnings.warn(_NO_MAX_LENGTH.format("truncate", "truncation"), stacklevel=3)
                truncation_strategy = None
        return padding_strategy, truncation_strategy, max_length

    def _check_lengths(self, ids: list[list[int]], max_length: int | None) -> None:
        """Without truncation, an input longer than the limit is an error that names it."""
        if max_length is not None:
            limit, name = max_length, "max_length"
        elif self.model_max_length is not None:
            limit, name = self.model_max_length, "model_max_length"
        else:
            return
        longest = max(map(len, ids), default=0)
        if longest > limit:
            raise ValueError(
                f"Token indices sequence length is longer than the specified maximum sequence "
                f"length ({longest} > {limit}, the {name}): pass truncation=True to truncate "
                f"the input to {limit} tokens")

    def _pad_rows(self, rows: list[list[int]], length: int, value: int) -> list[list[int]]:
        if self.padding_side == "right":
            return [row + [value] * (length - len(row)) for row in rows]
        return [[value] * (length - len(row)) + row for row in rows]

    def _truncate_pair(self, ids: list[int], pair_ids: list[int] | None,
                       num_tokens_to_remove: int, strategy: str
                       ) -> tuple[list[int], list[int] | None]:
        """Remove ``num_tokens_to_remove`` tokens from a sequence or a pair by ``strategy``
        (Hugging Face's ``truncate_sequences``), on :attr:`truncation_side`."""
        if num_tokens_to_remove <= 0:
            return ids, pair_ids

        def cut(seq: list[int], n: int) -> list[int]:
            return seq[: len(seq) - n] if self.truncation_side == "right" else seq[n:]

        if strategy == "longest_first" and pair_ids is not None:
            n_ids, n_pair = len(ids), len(pair_ids)
            for _ in range(num_tokens_to_remove):  # one at a time from the longer one
                if n_ids > n_pair:
                    n_ids -= 1
                else:
                    n_pair -= 1
            if n_pair < 0:
                raise ValueError(f"We need to remove {num_tokens_to_remove} tokens to "
                                 "truncate the input but the sequences are too short.")
            return cut(ids, len(ids) - n_ids), cut(pair_ids, len(pair_ids) - n_pair)
        if strategy == "only_second":
            if pair_ids is None or len(pair_ids) <= num_tokens_to_remove:
                length = 0 if pair_ids is None else len(pair_ids)
                raise ValueError(
                    f"We need to remove {num_tokens_to_remove} to truncate the input but the "
                    f"second sequence has a length {length}. Please select another truncation "
                    "strategy than only_second, for instance 'longest_first' or 'only_first'.")
            return ids, cut(pair_ids, num_tokens_to_remove)
        if len(ids) <= num_tokens_to_remove:  # only_first, or longest_first on one sequence
            hint = ("Please select another truncation strategy than only_first, for instance "
                    "'longest_first' or 'only_second'." if strategy == "only_first" else "")
            raise ValueError(f"We need to remove {num_tokens_to_remove} to truncate the input "
                             f"but the first sequence has a length {len(ids)}. {hint}".rstrip())
        return cut(ids, num_tokens_to_remove), pair_ids

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(vocab_size={self.vocab_size}, "
                f"model_max_length={self.model_max_length}, "
                f"padding_side={self.padding_side!r}, truncation_side={self.truncation_side!r}, "
                f"special_tokens={self.special_tokens_map})")


def _strategy(value: bool | str | None, when_true: str, off: str, choices: tuple[str, ...],
              kind: str) -> str | None:
    """A padding or truncation argument as a strategy name, ``None`` for off."""
    if value is True:
        value = when_true
    elif value is False or value is None:
        value = off
    if value not in choices:
        raise ValueError(f"{value} is not a valid {kind}, please select one of {list(choices)}")
    return None if value == off else value


def _check_side(name: str, side: str) -> str:
    if side not in _SIDES:
        raise ValueError(f"{name} should be 'right' or 'left', got {side!r}")
    return side


def _as_batch(text: Any, text_pair: Any) -> tuple[bool, list[tuple[str, str | None]]]:
    """Whether the call is batched, and its ``(text, pair or None)`` items."""
    if isinstance(text, str):
        if text_pair is not None and not isinstance(text_pair, str):
            raise ValueError("text_pair input must be of type `str` when text is a `str`")
        return False, [(text, text_pair)]
    if not isinstance(text, (list, tuple)):
        raise ValueError(_BAD_TEXT)
    if text_pair is not None:
        if isinstance(text_pair, str) or not isinstance(text_pair, (list, tuple)):
            raise ValueError("text_pair input must be a list of `str` when text is a list")
        if len(text) != len(text_pair):
            raise ValueError(f"batch length of `text`: {len(text)} does not match batch length "
                             f"of `text_pair`: {len(text_pair)}.")
        items = list(zip(text, text_pair))
    else:
        items = [(t, None) if isinstance(t, str) else tuple(t) for t in text]
    for item in items:
        if len(item) != 2 or not all(isinstance(s, str) for s in item if s is not None) or \
                not isinstance(item[0], str):
            raise ValueError(_BAD_TEXT)
    return True, items


_RAGGED = (
    "Unable to create tensor, you should probably activate truncation and/or padding with "
    "'padding=True' 'truncation=True' to have batched tensors with the same length. Perhaps "
    "your features (`input_ids` in this case) have excessive nesting (inputs type `list` where "
    "type `int` is expected)."
)


def _fill(rows: list[list[int]], filled: np.ndarray, value: int) -> np.ndarray:
    """``rows`` laid into an int64 array where ``filled`` is true, ``value`` elsewhere."""
    out = np.full(filled.shape, value, dtype=np.int64)
    out[filled] = np.fromiter(chain.from_iterable(rows), dtype=np.int64,
                              count=int(filled.sum()))
    return out


_CONVERTERS: dict[str, Callable[[np.ndarray], Any]] = {
    "ember": ember.tensor, "pt": ember.tensor, "np": lambda a: a,
}


def clean_up_tokenization(text: str) -> str:
    """Hugging Face's clean-up of decoded text: no space before punctuation and English
    contractions (``"do n't"`` -> ``"don't"``)."""
    return (text.replace(" .", ".").replace(" ?", "?").replace(" !", "!").replace(" ,", ",")
            .replace(" ' ", "'").replace(" n't", "n't").replace(" 'm", "'m")
            .replace(" 's", "'s").replace(" 've", "'ve").replace(" 're", "'re"))
