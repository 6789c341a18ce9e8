"""Jane Austen's six novels, embedded: passages labelled by novel, and a text stream.

The text is that of the R package janeaustenr (see ``_data/ATTRIBUTION.md``), decoded by
``tools/janeausten_decode.py``. Each novel is cut the same deterministic way:

1. **Body.** Paragraphs are separated by blank lines; a paragraph's lines are joined with
   single spaces. The body runs from the first chapter heading to the end of the novel (a
   closing "THE END"/"FINIS" or an editor's "A NOTE ON THE TEXT" ends it); chapter and
   volume headings and paragraphs without a lowercase letter (titles, ``* * *``) are left
   out.
2. **Sentences** (:func:`split_sentences`). A sentence ends at ``.``, ``!`` or ``?`` (and the
   closing quotes, brackets or underscores right after it) when whitespace and an uppercase
   letter (possibly after opening quotes) follow, except after the abbreviations ``Mr.``,
   ``Mrs.``, ``Dr.``, ``St.``, ... and single initials. A sentence never spans paragraphs.
3. **Splits.** A novel's sentences are cut into blocks of ``SPLIT_BLOCK`` (50) consecutive
   sentences; of every ten blocks the ninth goes to ``valid``, the tenth to ``test`` and the
   other eight to ``train`` (80/10/10, spread over the whole novel). No sentence is in two
   splits.
4. **Passages.** Within each run of consecutive blocks of a split, ``sentences_per_passage``
   (5) consecutive sentences make one passage (joined by a space), labelled by its novel; a
   run's last sentences that do not fill a passage are left out.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
from collections.abc import Iterator

from ember.data import Dataset

from ._utils import TextDataset, check_single_split, read_corpus

__all__ = ["NOVELS", "AustenNovels", "AustenText", "split_sentences"]

#: janeaustenr's objects and titles, in its order (publication order): the labels 0..5
NOVELS = (
    ("sensesensibility", "Sense & Sensibility"),
    ("prideprejudice", "Pride & Prejudice"),
    ("mansfieldpark", "Mansfield Park"),
    ("emma", "Emma"),
    ("northangerabbey", "Northanger Abbey"),
    ("persuasion", "Persuasion"),
)
SPLITS = ("train", "valid", "test")
#: sentences per split block; of each ten consecutive blocks, 8 train, 1 valid, 1 test
SPLIT_BLOCK = 50
_BLOCK_SPLITS = ("train",) * 8 + ("valid", "test")

_HEADING = re.compile(r"(chapter|volume)\s+[0-9ivxlc]+\.?", re.IGNORECASE)
_END = re.compile(r"(the end|finis|a note on the text)\.?", re.IGNORECASE)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_SENTENCE_END = re.compile(r"[.!?]+[\"'\u2019\u201d_)\]]*(?=\s+[\"'\u2018\u201c_(\[]*[A-Z])")
_LAST_WORD = re.compile(r"([A-Za-z]+)$")
_ABBREVIATIONS = frozenset({"Mr", "Mrs", "Dr", "St", "Messrs", "Col", "Capt", "Rev", "Lt",
                            "Gen", "Mme", "Mlle"})


def split_sentences(paragraph: str) -> list[str]:
    """The sentences of one paragraph, by the rule in the module docstring.

    >>> split_sentences('"Oh!" said Anne. Mr. Elliot had gone. "Yes," she said, "he has."')
    ['"Oh!" said Anne.', 'Mr. Elliot had gone.', '"Yes," she said, "he has."']
    """
    sentences, start = [], 0
    for match in _SENTENCE_END.finditer(paragraph):
        if match.group().startswith("."):
            word = _LAST_WORD.search(paragraph, start, match.start())
            if word and (word.group(1) in _ABBREVIATIONS
                         or (len(word.group(1)) == 1 and word.group(1).isupper())):
                continue
        sentences.append(paragraph[start:match.end()].strip())
        start = match.end()
    rest = paragraph[start:].strip()
    if rest:
        sentences.append(rest)
    return sentences


def _body_paragraphs(text: str) -> Iterator[str]:
    started = False
    for raw in _PARAGRAPH_BREAK.split(text):
        paragraph = " ".join(raw.split())
        if _HEADING.fullmatch(paragraph):
            started = True
        elif started and _END.fullmatch(paragraph):
            return
        elif started and any(c.islower() for c in paragraph):
            yield paragraph


@functools.lru_cache(maxsize=4)
def _novel_sentences(root: str | None) -> tuple[tuple[tuple[int, str], ...], ...]:
    """Per novel (janeaustenr's order), its ``(paragraph index, sentence)`` pairs."""
    novels = []
    for name, _title in NOVELS:
        text = read_corpus(root, f"janeaustenr/{name}.txt.xz")
        novels.append(tuple((i, sentence)
                            for i, paragraph in enumerate(_body_paragraphs(text))
                            for sentence in split_sentences(paragraph)))
    return tuple(novels)


def _runs(sentences: tuple, split: str) -> Iterator[tuple]:
    """The runs of consecutive ``SPLIT_BLOCK`` blocks of ``sentences`` that go to ``split``."""
    def split_of(item):
        return _BLOCK_SPLITS[(item[0] // SPLIT_BLOCK) % len(_BLOCK_SPLITS)]

    for block_split, run in itertools.groupby(enumerate(sentences), key=split_of):
        if block_split == split:
            yield tuple(sentence for _, sentence in run)


def _root_key(root) -> str | None:
    return None if root is None else os.path.abspath(os.path.expanduser(os.fspath(root)))


class AustenNovels(Dataset):
    """Passages of ``sentences_per_passage`` consecutive sentences from Jane Austen's six
    novels, labelled by novel: items ``(text, label)``, ``label`` indexing :attr:`classes`.

    Args:
        root: ``None`` for the embedded copy, or a folder holding ``janeaustenr/<name>.txt.xz``
            (or ``.txt``) as ``tools/janeausten_decode.py`` writes them.
        split: ``"train"``, ``"valid"`` or ``"test"`` (disjoint; see the module docstring).
        sentences_per_passage: sentences in one passage (5).

    >>> train = AustenNovels(split="train")
    >>> text, label = train[0]
    >>> train.classes[label]
    'Sense & Sensibility'
    """

    #: the labels' names, in janeaustenr's order
    classes = [title for _, title in NOVELS]

    def __init__(self, root: str | os.PathLike | None = None, split: str = "train",
                 sentences_per_passage: int = 5) -> None:
        self.split = check_single_split(split, SPLITS, type(self).__name__)
        if sentences_per_passage < 1:
            raise ValueError(f"sentences_per_passage must be at least 1, got "
                             f"{sentences_per_passage}")
        self.root, self.sentences_per_passage = root, sentences_per_passage
        self.passages: list[str] = []
        self.targets: list[int] = []
        n = sentences_per_passage
        for label, sentences in enumerate(_novel_sentences(_root_key(root))):
            for run in _runs(sentences, self.split):
                for start in range(0, len(run) - n + 1, n):
                    self.passages.append(" ".join(s for _, s in run[start:start + n]))
                    self.targets.append(label)

    @property
    def class_to_idx(self) -> dict[str, int]:
        return {title: i for i, title in enumerate(self.classes)}

    def __getitem__(self, index: int) -> tuple[str, int]:
        return self.passages[index], self.targets[index]

    def __len__(self) -> int:
        return len(self.passages)

    def __repr__(self) -> str:
        return (f"Dataset AustenNovels\n    Number of datapoints: {len(self)}\n"
                f"    Split: {self.split}\n    Sentences per passage: "
                f"{self.sentences_per_passage}")

    @staticmethod
    def text_stream(split: str = "train", root: str | os.PathLike | None = None) -> AustenText:
        """The text of ``split`` for language modelling: :class:`AustenText`."""
        return AustenText(root=root, split=split)


class AustenText(TextDataset):
    """The text of one split of :class:`AustenNovels` as a stream for language modelling:
    the six novels in order, one item per paragraph (the paragraph's sentences that belong
    to the split, joined by spaces). An ``IterableDataset``: DataLoader workers each get
    every ``num_workers``-th line."""

    def __init__(self, root: str | os.PathLike | None = None, split: str = "train") -> None:
        split = check_single_split(split, SPLITS, type(self).__name__)
        lines = []
        for sentences in _novel_sentences(_root_key(root)):
            for run in _runs(sentences, split):
                for _, group in itertools.groupby(run, key=lambda item: item[0]):
                    lines.append(" ".join(s for _, s in group))
        super().__init__("AustenText", split, tuple(lines), iter, len(lines))

    def __repr__(self) -> str:
        return f"AustenText(split={self.split!r}, lines={len(self)})"
