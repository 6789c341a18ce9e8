"""Evaluation metrics for generated text (``torchtext.data.metrics``)."""

from __future__ import annotations

import collections
import math
from collections.abc import Iterable, Sequence

__all__ = ["bleu_score"]


def _ngram_counter(tokens: Sequence[str], max_n: int) -> collections.Counter:
    """The n-grams of ``tokens`` for n = 1 .. ``max_n``, as tuples, with their counts."""
    tokens = list(tokens)
    return collections.Counter(tuple(tokens[i:i + n]) for n in range(1, max_n + 1)
                               for i in range(len(tokens) - n + 1))


def bleu_score(candidate_corpus: Iterable[Sequence[str]],
               references_corpus: Iterable[Iterable[Sequence[str]]], max_n: int = 4,
               weights: Sequence[float] = (0.25, 0.25, 0.25, 0.25)) -> float:
    """The corpus BLEU score of candidate translations against their references
    (Papineni et al., 2002, https://www.aclweb.org/anthology/P02-1040.pdf).

    N-gram counts are clipped by the largest count of the n-gram in any one reference and
    summed over the corpus; the brevity penalty compares the candidates' total length with
    the total length of, for each candidate, the reference closest to it in length. The
    result is 0.0 when some order of n-gram has no match at all (no smoothing). The sums run
    in float64; torchtext's run in float32, so its scores differ from these in the 7th
    significant digit (0.8408964276 there for the example below, exactly 2**-0.25 here).

    Args:
        candidate_corpus: candidate translations, each an iterable of tokens.
        references_corpus: for each candidate, an iterable of reference translations, each
            an iterable of tokens.
        max_n: the largest n-gram order (``max_n=3``: unigrams, bigrams and trigrams).
        weights: one weight per order (uniform by default); ``len(weights) == max_n``.

    Example:
        >>> from ember.text.data.metrics import bleu_score
        >>> candidate_corpus = [['My', 'full', 'pytorch', 'test'], ['Another', 'Sentence']]
        >>> references_corpus = [[['My', 'full', 'pytorch', 'test'], ['Completely', 'Different']],
        ...                      [['No', 'Match']]]
        >>> bleu_score(candidate_corpus, references_corpus)
        0.8408964152537145
    """
    candidates = [list(candidate) for candidate in candidate_corpus]
    references = [[list(ref) for ref in refs] for refs in references_corpus]
    if max_n != len(weights):
        raise ValueError('Length of the "weights" list has be equal to max_n')
    if len(candidates) != len(references):
        raise ValueError("The length of candidate and reference corpus should be the same")
    if max_n < 1:
        raise ValueError(f"max_n must be at least 1, got {max_n}")

    clipped = [0] * max_n
    total = [0] * max_n
    candidate_len = 0.0
    refs_len = 0.0
    for candidate, refs in zip(candidates, references):
        if not refs:
            raise ValueError("every candidate needs at least one reference translation")
        candidate_len += len(candidate)
        # the reference closest in length to the candidate (the first one on a tie)
        refs_len += min((float(len(ref)) for ref in refs),
                        key=lambda length: abs(len(candidate) - length))
        reference_counts = collections.Counter()
        for ref in refs:
            reference_counts |= _ngram_counter(ref, max_n)
        candidate_counts = _ngram_counter(candidate, max_n)
        for ngram, count in (candidate_counts & reference_counts).items():
            clipped[len(ngram) - 1] += count
        for ngram, count in candidate_counts.items():
            total[len(ngram) - 1] += count

    if min(clipped) == 0:
        return 0.0
    score = math.exp(math.fsum(w * math.log(c / t) for w, c, t in zip(weights, clipped, total)))
    brevity_penalty = math.exp(min(1 - refs_len / candidate_len, 0))
    return brevity_penalty * score
