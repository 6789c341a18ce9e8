"""docs/tutorials/object_detection.md runs as written: its python blocks are
examples/object_detection.py, the dataset's targets are what a detection model takes, the flip
moves boxes and masks with the image, training lowers the loss, and the trained model finds the
held-out pedestrians."""

import re

import pytest
from testutils import assert_page_is_script

import ember

PAGE = "object_detection.md"


def test_the_page_is_the_example_script():
    assert_page_is_script(PAGE, "object_detection.py")


@pytest.mark.slow
def test_object_detection_tutorial(run_tutorial, capsys):
    ns = run_tutorial(PAGE)
    out = capsys.readouterr().out
    image, target = ns["train_set"][0]
    assert tuple(image.shape) == (3, 128, 128) and image.dtype is ember.float32
    n = len(target["boxes"])
    assert 1 <= n <= 3 and tuple(target["masks"].shape) == (n, 128, 128)
    assert target["labels"].tolist() == [1] * n
    # every box is its mask's bounding box
    for box, mask in zip(target["boxes"], target["masks"]):
        rows, cols = mask.nonzero().unbind(1)
        assert box.tolist() == [cols.min().item(), rows.min().item(), cols.max().item() + 1,
                                rows.max().item() + 1]
    # the flip mirrors x: x0' = 128 - x1, x1' = 128 - x0
    raw, flipped = ns["raw_target"]["boxes"][0].tolist(), ns["flipped_target"]["boxes"][0].tolist()
    assert flipped == [128 - raw[2], raw[1], 128 - raw[0], raw[3]]
    losses = [float(v) for v in re.findall(r"epoch \d+: loss ([0-9.]+)", out)]
    assert len(losses) == 4 and losses[-1] < 0.6 * losses[0]
    prediction = ns["prediction"]
    assert set(prediction) == {"boxes", "labels", "scores"}
    scores = prediction["scores"].tolist()
    assert scores == sorted(scores, reverse=True)
    # chance is 0; the run reaches recall 0.88 and precision 0.97
    assert ns["recall"] > 0.7 and ns["precision"] > 0.7
    assert f"recall {ns['recall']:.2f}, precision {ns['precision']:.2f}" in out
