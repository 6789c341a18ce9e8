"""docs/tutorials/austen_classifier.md runs as written and reaches what it claims.

The page's ```python blocks are executed in order by the ``run_tutorial`` fixture (see
``conftest.py``): a SentencePiece tokenizer and a Transformer classifier trained on
``AustenNovels``, a held-out test accuracy of at least 80% and a 6x6 confusion matrix, and the
tokenizer and the model saved to files that load again.
"""

import re

import pytest
from testutils import python_blocks

pytestmark = pytest.mark.slow

pytest.importorskip("ember.text")
pytest.importorskip("sentencepiece")
pytest.importorskip("tqdm")

PAGE = "austen_classifier.md"
HEADER = "true \\ predicted "


def test_page_is_a_program_in_pytorch_names():
    blocks = python_blocks(PAGE)
    assert blocks and "import ember as torch" in blocks[0]


def test_austen_classifier(run_tutorial, capsys):
    import ember
    from ember.text.tokenizers import SentencePieceTokenizer

    ns = run_tutorial(PAGE)
    out = capsys.readouterr().out

    # the data: the three disjoint splits of the six novels
    test_set = ns["test_set"]
    assert (len(ns["train_set"]), len(ns["valid_set"]), len(test_set)) == (5056, 610, 610)
    assert len(test_set.classes) == 6

    # the held-out accuracy: the bar (chance is 1/6; the page reports ~88%)
    accuracy = ns["test_accuracy"]
    assert accuracy >= 0.80
    assert f"test accuracy: {accuracy:.1%} of 610 passages" in out
    predictions, targets = ns["predictions"], ns["targets"]
    assert tuple(predictions.shape) == tuple(targets.shape) == (610,)
    assert targets.tolist() == test_set.targets

    # the confusion matrix: 6x6, one count per test passage, its diagonal the correct answers
    confusion = ns["confusion"]
    assert tuple(confusion.shape) == (6, 6)
    assert confusion.sum().item() == len(test_set)
    assert confusion.sum(1).tolist() == [test_set.targets.count(c) for c in range(6)]
    assert confusion.trace().item() / len(test_set) == pytest.approx(accuracy, abs=1e-6)
    assert confusion.trace().item() == (predictions == targets).sum().item()
    # ... printed as the page shows it: the header, then one row per novel
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith(HEADER))
    assert lines[header].split()[3:] == ["Sense", "Pride", "Mansfield", "Emma", "Northanger",
                                         "Persuasion"]
    rows = [line.split() for line in lines[header + 1:header + 7]]
    assert [row[0] for row in rows] == ns["names"]
    assert [[int(n) for n in row[1:]] for row in rows] == confusion.tolist()

    # one validation line per epoch; the kept checkpoint is the best of them
    valid = [float(v) / 100 for v in re.findall(r"validation accuracy ([\d.]+)%", out)]
    assert len(valid) == 5
    assert ns["best_accuracy"] == pytest.approx(max(valid), abs=5e-4)

    # the tokenizer was saved and loads again, with its padding piece and whole names
    workdir = run_tutorial.workdir
    tokenizer = SentencePieceTokenizer(workdir / "austen.model")
    assert len(tokenizer) == 8000
    assert tokenizer.pad_token_id == 3
    assert tokenizer.tokenize("Captain Wentworth") == ["▁Captain", "▁Wentworth"]
    assert tokenizer.encode(test_set[0][0]) == ns["tokenizer"].encode(test_set[0][0])

    # the checkpoint holds the model's state_dict (the best epoch's, which the model reloaded)
    model = ns["model"]
    state = ember.load(workdir / "austen_classifier.pt")
    assert set(state) == set(model.state_dict())
    for name, tensor in model.state_dict().items():
        assert ember.equal(state[name], tensor), name
    # ... and the fresh classifier built from the two files predicts as the trained model does
    classifier = ns["classifier"]
    batch = tokenizer([text for text, _ in (test_set[i] for i in range(0, 610, 61))],
                      padding=True, truncation=True, max_length=128, return_tensors="ember")
    with ember.no_grad():
        expected = model(batch["input_ids"], batch["attention_mask"]).argmax(1)
        got = classifier(batch["input_ids"], batch["attention_mask"]).argmax(1)
    assert ember.equal(got, expected)

    # the page's four sentences: the three with names go to their novels with certainty, the
    # one without a name gets a less sure answer
    probabilities = ns["probabilities"]
    assert tuple(probabilities.shape) == (4, 6)
    assert probabilities.argmax(1).tolist()[:3] == [1, 5, 3]
    top = probabilities.max(1).values.tolist()
    assert min(top[:3]) > 0.95 and top[3] < min(top[:3])
    answers = [line for line in lines if line.endswith(tuple(ns["sentences"]))]
    printed = [line.split("  ")[0].strip() for line in answers]
    assert printed == [test_set.classes[i] for i in probabilities.argmax(1).tolist()]
