"""*Botchan*, embedded: Project Gutenberg #8868, as in sentencepiece's own tests."""

from __future__ import annotations

import os

from ._utils import TextDataset, check_single_split, read_corpus

__all__ = ["Botchan"]

SPLITS = ("train", "valid", "test")
_START = "*** START OF THIS PROJECT GUTENBERG EBOOK"
_END = "*** END OF THIS PROJECT GUTENBERG EBOOK"
_CREDITS = ("Produced by ", "End of Project Gutenberg")
#: the share of the body's lines in each split, as contiguous blocks in this order
_FRACTIONS = {"train": 0.8, "valid": 0.1, "test": 0.1}


def _body_lines(text: str) -> list[str]:
    """The non-empty lines between Project Gutenberg's START and END markers, less its
    credit lines."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(_START)) + 1
    end = next(i for i, line in enumerate(lines) if line.startswith(_END))
    body = [line.strip() for line in lines[start:end]]
    return [line for line in body if line and not line.startswith(_CREDITS)]


class Botchan(TextDataset):
    """*Botchan (Master Darling)* by Natsume Soseki (Project Gutenberg #8868, public domain),
    the ``test/botchan.txt`` of sentencepiece's source distribution, for tokenizer training
    and language modelling.

    Items are the text lines of the novel (Project Gutenberg's header, credits and license
    left out), stripped of surrounding whitespace. ``split`` takes contiguous blocks of
    them: the first 80% ``"train"``, the next 10% ``"valid"``, the last 10% ``"test"``. An
    ``IterableDataset``: DataLoader workers each get every ``num_workers``-th line.
    ``root`` is ``None`` for the embedded copy, or a folder holding ``botchan.txt.xz`` (or
    ``botchan.txt``). :meth:`raw_text` is the whole file as distributed.
    """

    def __init__(self, root: str | os.PathLike | None = None, split: str = "train") -> None:
        split = check_single_split(split, SPLITS, "Botchan")
        lines = _body_lines(self.raw_text(root))
        bounds, start = {}, 0
        for name, fraction in _FRACTIONS.items():
            stop = len(lines) if name == SPLITS[-1] else start + round(fraction * len(lines))
            bounds[name], start = (start, stop), stop
        first, last = bounds[split]
        self.root = root
        super().__init__("Botchan", split, tuple(lines[first:last]), iter, last - first)

    @staticmethod
    def raw_text(root: str | os.PathLike | None = None) -> str:
        """``botchan.txt`` unchanged (its byte-order mark and CRLF line ends included)."""
        return read_corpus(root, "botchan.txt.xz")

    def __repr__(self) -> str:
        return f"Botchan(split={self.split!r}, lines={len(self)})"
