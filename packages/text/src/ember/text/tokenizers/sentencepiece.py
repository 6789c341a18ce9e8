"""``SentencePieceTokenizer``: Google's SentencePiece (the ``sentencepiece`` package) behind
ember-text's batch interface.

Training, encoding, sampling and decoding are the library's own
(``SentencePieceTrainer``, ``SentencePieceProcessor``); this class passes the options through,
keeps the model's special pieces (``<unk>``, ``<s>``, ``</s>``, ``<pad>`` where the model has
a pad id) as the tokenizer's special tokens, and adds the batch call of
:class:`~ember.text.tokenizers.BaseTokenizer`.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Sequence
from typing import Any

import sentencepiece as spm

from .base import BaseTokenizer, _as_id_list, write_atomic

__all__ = ["SentencePieceTokenizer", "load_processor"]

PathLike = str | os.PathLike


def load_processor(model: PathLike | bytes | io.IOBase) -> spm.SentencePieceProcessor:
    """A ``sentencepiece.SentencePieceProcessor`` for a ``.model`` file (a path or a binary
    file object) or its bytes; a file that is not a SentencePiece model is a ``ValueError``
    that names it."""
    if isinstance(model, bytes):
        name, proto = "the serialized model", model
    elif isinstance(model, (str, os.PathLike)):
        name = os.fspath(model)
        with open(name, "rb") as f:
            proto = f.read()
    elif hasattr(model, "read"):
        name, proto = getattr(model, "name", "the model file object"), model.read()
    else:
        raise TypeError(f"Unsupported type for spm argument: {type(model).__name__}. Supported "
                        "types are: str, os.PathLike, bytes, a binary file object")
    processor = spm.SentencePieceProcessor()
    try:
        processor.LoadFromSerializedProto(proto)
    except RuntimeError as err:
        raise ValueError(f"{name!s} is not a valid SentencePiece model: {err}") from err
    return processor


def _is_files(source: Any) -> bool:
    """A path, or a list of paths to files (anything else is an iterator of sentences)."""
    if isinstance(source, (str, os.PathLike)):
        return True
    return isinstance(source, (list, tuple)) and bool(source) and all(
        isinstance(s, os.PathLike) or (isinstance(s, str) and os.path.isfile(s))
        for s in source)


class SentencePieceTokenizer(BaseTokenizer):
    """A SentencePiece model (``.model``) as a tokenizer.

    Args:
        model_file: path to a ``.model`` file (or give ``model_proto``).
        model_proto: the serialized model, as bytes.
        add_bos: add the model's ``<s>`` in front of each sequence when special tokens are
            added (``add_special_tokens=True``, the default of a call).
        add_eos: add the model's ``</s>`` after each sequence, likewise.
        enable_sampling: sample a segmentation (subword regularization) instead of taking the
            best one, in :meth:`encode` and in a call.
        alpha: the smoothing of the sampling distribution (unigram), or the dropout
            probability of a merge (BPE).
        nbest_size: sample from the ``nbest_size`` best segmentations; ``-1``: from all of
            them (unigram; BPE-dropout needs ``-1`` or ``0``).
        model_max_length, padding_side, truncation_side, **special_tokens: see
            :class:`~ember.text.tokenizers.BaseTokenizer`.

    Example:
        >>> from ember.text.tokenizers import SentencePieceTokenizer
        >>> tok = SentencePieceTokenizer.train(
        ...     lines, vocab_size=1000, pad_id=3)               # doctest: +SKIP
        >>> tok.encode("Hello world", out_type=str)             # doctest: +SKIP
        ['▁He', 'll', 'o', '▁world']
        >>> batch = tok(["Hello world", "Hi"], padding=True,
        ...             return_tensors="ember")                 # doctest: +SKIP
    """

    def __init__(self, model_file: PathLike | None = None, *, model_proto: bytes | None = None,
                 add_bos: bool = False, add_eos: bool = False, enable_sampling: bool = False,
                 alpha: float = 0.1, nbest_size: int = -1, model_max_length: int | None = None,
                 padding_side: str = "right", truncation_side: str = "right",
                 **special_tokens: Any) -> None:
        if (model_file is None) == (model_proto is None):
            raise ValueError("give exactly one of model_file and model_proto")
        self.sp = load_processor(model_file if model_file is not None else model_proto)
        self.add_bos = add_bos
        self.add_eos = add_eos
        self.enable_sampling = enable_sampling
        self.alpha = alpha
        self.nbest_size = nbest_size
        sp = self.sp
        model_roles = {role: sp.id_to_piece(index) for role, index in
                       (("unk", sp.unk_id()), ("bos", sp.bos_id()), ("eos", sp.eos_id()),
                        ("pad", sp.pad_id())) if index >= 0}
        # pieces never produced from text (<s>, </s>, <pad>, control symbols, <unk>): what
        # skip_special_tokens drops
        self._control_ids = frozenset(i for i in range(sp.get_piece_size())
                                      if sp.is_control(i) or sp.is_unknown(i))
        self._init_base(model_max_length=model_max_length, padding_side=padding_side,
                        truncation_side=truncation_side, special_tokens=model_roles,
                        **special_tokens)

    @classmethod
    def from_file(cls, path: PathLike, **kwargs: Any) -> SentencePieceTokenizer:
        """Load a ``.model`` file (keyword arguments as for the constructor)."""
        return cls(path, **kwargs)

    @classmethod
    def train(cls, files_or_iterator: PathLike | Sequence[PathLike] | Iterable[str], *,
              vocab_size: int = 8000, model_type: str = "unigram",
              character_coverage: float | None = None,
              user_defined_symbols: Sequence[str] | None = None,
              control_symbols: Sequence[str] | None = None, model_prefix: PathLike | None = None,
              model_writer: Any = None, tokenizer_options: dict[str, Any] | None = None,
              **trainer_options: Any) -> SentencePieceTokenizer:
        """Train a SentencePiece model with ``sentencepiece.SentencePieceTrainer``.

        Args:
            files_or_iterator: a text file, a list of text files, or an iterable of sentences
                (strings), one sentence per line or item.
            vocab_size: the number of pieces.
            model_type: ``"unigram"`` (default), ``"bpe"``, ``"char"`` or ``"word"``.
            character_coverage: the share of characters the model covers (the library's
                default, 0.9995, when not given; 1.0 for a small alphabet).
            user_defined_symbols: pieces always kept whole, also inside text.
            control_symbols: pieces reserved for special tokens, never produced from text.
            model_prefix: write ``<model_prefix>.model`` and ``<model_prefix>.vocab``; without
                it the model stays in memory.
            model_writer: an object with ``write(bytes)`` that also receives the model.
            tokenizer_options: keyword arguments for the returned tokenizer (``add_bos``,
                ``model_max_length``, ...).
            **trainer_options: any other option of the trainer (``pad_id=3``,
                ``byte_fallback=True``, ``input_sentence_size``, ``minloglevel``, ...).

        Returns:
            the tokenizer of the trained model.
        """
        options: dict[str, Any] = {"vocab_size": vocab_size, "model_type": model_type,
                                   **trainer_options}
        if character_coverage is not None:
            options["character_coverage"] = character_coverage
        if user_defined_symbols:
            options["user_defined_symbols"] = list(user_defined_symbols)
        if control_symbols:
            options["control_symbols"] = list(control_symbols)
        if _is_files(files_or_iterator):
            paths = [files_or_iterator] if isinstance(files_or_iterator, (str, os.PathLike)) \
                else list(files_or_iterator)
            paths = [os.fspath(p) for p in paths]
            for path in paths:
                if not os.path.isfile(path):
                    raise FileNotFoundError(f"No such file: {path!r}")
            options["input"] = ",".join(paths)
        else:
            options["sentence_iterator"] = iter(files_or_iterator)
        if model_prefix is not None:
            spm.SentencePieceTrainer.train(model_prefix=os.fspath(model_prefix), **options)
            with open(os.fspath(model_prefix) + ".model", "rb") as f:
                proto = f.read()
        else:
            buffer = io.BytesIO()
            spm.SentencePieceTrainer.train(model_writer=buffer, **options)
            proto = buffer.getvalue()
        if model_writer is not None:
            model_writer.write(proto)
        return cls(model_proto=proto, **(tokenizer_options or {}))

    def save(self, path: PathLike) -> None:
        """Write the model as a ``.model`` file (atomically)."""
        write_atomic(path, self.sp.serialized_model_proto())

    # -- the library's encode and decode ----------------------------------------------------

    def encode(self, input: str | list[str], out_type: type = int, add_bos: bool | None = None,
               add_eos: bool | None = None, enable_sampling: bool | None = None,
               alpha: float | None = None, nbest_size: int | None = None) -> list:
        """Encode a text (or a list of texts) to ids (``out_type=int``) or pieces
        (``out_type=str``); options left ``None`` take the tokenizer's settings."""
        return self.sp.encode(
            input, out_type=out_type,
            add_bos=self.add_bos if add_bos is None else add_bos,
            add_eos=self.add_eos if add_eos is None else add_eos,
            enable_sampling=self.enable_sampling if enable_sampling is None else enable_sampling,
            alpha=self.alpha if alpha is None else alpha,
            nbest_size=self.nbest_size if nbest_size is None else nbest_size)

    def tokenize(self, text: str) -> list[str]:
        """The pieces of ``text``."""
        return self.encode(text, out_type=str, add_bos=False, add_eos=False)

    def decode(self, token_ids: Any, skip_special_tokens: bool = False) -> str | list[str]:
        """Decode ids or pieces (a list, array or tensor; a list of lists decodes to a list of
        texts). ``skip_special_tokens`` drops control pieces, the unknown piece and any token
        given a special role."""
        ids = _as_id_list(token_ids)
        if skip_special_tokens:
            drop = self._control_ids | set(self.all_special_ids)
            if ids and isinstance(ids[0], list):
                ids = [[i for i in row if i not in drop] for row in ids]
            else:
                ids = [i for i in ids if i not in drop]
        return self.sp.decode(ids)

    # -- vocabulary -------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    def __len__(self) -> int:
        return self.sp.get_piece_size()

    def get_vocab(self) -> dict[str, int]:
        """``{piece: id}`` for every piece of the model."""
        return {self.sp.id_to_piece(i): i for i in range(self.sp.get_piece_size())}

    def token_to_id(self, token: str) -> int | None:
        index = self.sp.piece_to_id(token)
        return index if self.sp.id_to_piece(index) == token else None

    def id_to_token(self, index: int) -> str | None:
        return self.sp.id_to_piece(index) if 0 <= index < self.sp.get_piece_size() else None

    piece_to_id = token_to_id
    id_to_piece = id_to_token

    def _add_tokens(self, tokens: list[str], special: bool) -> int:
        missing = [t for t in tokens if self.token_to_id(t) is None]
        if missing:
            raise ValueError(f"cannot add {missing} to a SentencePiece model: train it with "
                             "user_defined_symbols or control_symbols instead")
        return 0

    # -- the batch call's encoding ----------------------------------------------------------

    def _with_specials(self, ids: list[int]) -> list[int]:
        bos = [self.sp.bos_id()] if self.add_bos and self.sp.bos_id() >= 0 else []
        eos = [self.sp.eos_id()] if self.add_eos and self.sp.eos_id() >= 0 else []
        return bos + ids + eos if bos or eos else ids

    def num_special_tokens_to_add(self, pair: bool = False) -> int:
        """How many special tokens a sequence (or a pair) gets."""
        return len(self._with_specials([])) * (2 if pair else 1)

    def _encode_rows(self, batch: list[tuple[str, str | None]], add_special_tokens: bool,
                     truncation: str | None, max_length: int | None
                     ) -> tuple[list[list[int]], list[list[int]]]:
        firsts = self.encode([a for a, _ in batch], add_bos=False, add_eos=False)
        pairs = [b for _, b in batch if b is not None]
        seconds = iter(self.encode(pairs, add_bos=False, add_eos=False) if pairs else ())
        ids_rows, type_rows = [], []
        for (_, b), a_ids in zip(batch, firsts):
            b_ids = next(seconds) if b is not None else None
            if truncation is not None:
                total = len(a_ids) + len(b_ids or ()) + (
                    self.num_special_tokens_to_add(b is not None) if add_special_tokens else 0)
                a_ids, b_ids = self._truncate_pair(a_ids, b_ids, total - max_length, truncation)
            if add_special_tokens:
                a_ids = self._with_specials(a_ids)
                b_ids = None if b_ids is None else self._with_specials(b_ids)
            ids_rows.append(a_ids if b_ids is None else a_ids + b_ids)
            type_rows.append([0] * len(a_ids) + [1] * len(b_ids or ()))
        return ids_rows, type_rows
