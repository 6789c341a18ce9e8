"""ember.text.data.metrics.bleu_score against torchtext's documented behaviour."""

import math

import pytest

from ember.text.data import bleu_score as exported
from ember.text.data.metrics import bleu_score


def test_torchtext_docstring_example():
    candidates = [["My", "full", "pytorch", "test"], ["Another", "Sentence"]]
    references = [[["My", "full", "pytorch", "test"], ["Completely", "Different"]],
                  [["No", "Match"]]]
    # torchtext prints 0.8408964276313782 (float32 sums); the exact value is 2 ** -0.25:
    # unigram precision 4/6, bigrams 3/4, trigrams and 4-grams 1, lengths equal.
    assert bleu_score(candidates, references) == pytest.approx(0.8408964276313782, abs=1e-7)
    assert bleu_score(candidates, references) == pytest.approx(2 ** -0.25, rel=1e-15)
    assert exported is bleu_score


def test_identical_translation_scores_one_and_no_match_scores_zero():
    sentence = "the cat sat on the mat".split()
    assert bleu_score([sentence], [[sentence]]) == pytest.approx(1.0)
    assert bleu_score([sentence], [[["a", "dog"]]]) == 0.0
    # one order without any match makes the whole (unsmoothed) score 0
    assert bleu_score([["a", "b", "c", "d"]], [[["a", "x", "c", "y"]]]) == 0.0


def test_clipping_uses_the_largest_count_in_any_one_reference():
    candidate = ["the"] * 7
    references = ["the cat is on the mat".split(), "there is a cat on the mat".split()]
    # Papineni et al.'s example: unigram precision 2/7 (clipped by the first reference)
    assert bleu_score([candidate], [references], max_n=1, weights=[1.0]) == pytest.approx(2 / 7)


def test_brevity_penalty_uses_the_closest_reference_length():
    candidate = ["a", "b", "c"]
    references = [["a", "b", "c", "d", "e"], ["a", "b", "c", "d", "e", "f", "g", "h"]]
    # precisions are all 1; the closest reference has 5 tokens: exp(1 - 5/3)
    expected = math.exp(1 - 5 / 3)
    score = bleu_score([candidate], [references], max_n=2, weights=[0.5, 0.5])
    assert score == pytest.approx(expected)
    # a longer candidate is not rewarded
    long = ["a", "b", "c", "d", "e", "f"]
    assert bleu_score([long], [[long[:5], long]], max_n=1, weights=[1.0]) == pytest.approx(1.0)


def test_weights_and_corpus_sums():
    candidates = [["a", "b", "c", "d"], ["x", "y"]]
    references = [[["a", "b", "c", "e"]], [["x", "y"]]]
    # corpus sums: unigrams 5/6, bigrams 3/4
    expected = math.exp(0.3 * math.log(5 / 6) + 0.7 * math.log(3 / 4))
    score = bleu_score(candidates, references, max_n=2, weights=[0.3, 0.7])
    assert score == pytest.approx(expected)
    # iterables of any kind
    score = bleu_score(iter(candidates), (r for r in references), 2, (0.3, 0.7))
    assert score == pytest.approx(expected)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="has be equal to max_n"):
        bleu_score([["a"]], [[["a"]]], max_n=2)
    with pytest.raises(ValueError, match="should be the same"):
        bleu_score([["a"], ["b"]], [[["a"]]])
    with pytest.raises(ValueError, match="at least one reference"):
        bleu_score([["a"]], [[]], max_n=1, weights=[1.0])
