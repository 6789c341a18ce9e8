"""docs/tutorials/spectrogram.md runs as written: its python blocks are examples/spectrogram.py,
the spectrogram's loudest bins follow the chirp, istft rebuilds the signal, the notch removes
the tone, and the picture is written."""


import numpy as np
import pytest
from testutils import TUTORIALS_DIR, assert_page_is_script

import ember

pytest.importorskip("PIL")

PAGE = "spectrogram.md"


def test_the_page_is_the_example_script():
    assert_page_is_script(PAGE, "spectrogram.py")
    page = (TUTORIALS_DIR / PAGE).read_text()
    assert "](spectrogram.png)" in page
    assert (TUTORIALS_DIR / "spectrogram.png").stat().st_size > 1000


def test_spectrogram_tutorial(run_tutorial, capsys):
    ns = run_tutorial(PAGE)
    out = capsys.readouterr().out
    spec, signal = ns["spec"], ns["signal"]
    assert spec.dtype is ember.complex64 and tuple(spec.shape) == (257, 126)
    assert "stft: (257, 126) ember.complex64" in out
    # the loudest bin of every frame away from the ends is the chirp's frequency, within a bin
    freqs, times, magnitude = ns["freqs"], ns["times"], ns["magnitude"]
    f_start, f_end, duration = ns["f_start"], ns["f_end"], ns["duration"]
    for frame in range(8, 118):
        expected = f_start + (f_end - f_start) * times[frame].item() / duration
        if abs(expected - ns["tone_hz"]) < 60:
            continue  # the chirp crosses the tone
        loudest = freqs[magnitude[:, frame].argmax()].item()
        assert abs(loudest - expected) <= 16, (frame, loudest, expected)
    # the tone is a steady line in its bin
    tone_bin = int(round(ns["tone_hz"] / 15.625))
    assert float(ns["db"][tone_bin, 5:-5].median()) > -6  # 6 dB under the chirp
    # istft inverts stft
    assert ns["error"] < 1e-5 and ns["rebuilt"].shape == signal.shape
    # the notch removes the tone and keeps the chirp
    assert ns["before"] > 0.45 and ns["after"] < 0.01
    kept = float((ns["filtered"] - signal).abs().mean())
    assert kept < 0.5 * float(signal.abs().mean())
    from PIL import Image

    with Image.open(run_tutorial.workdir / "spectrogram.png") as image:
        assert image.size == (504, 257) and image.mode == "RGB"
        pixels = np.asarray(image)
    # bright (pale yellow) pixels along the tone's row, dark noise far from the components
    assert pixels[256 - tone_bin, 100:400, 0].mean() > 230
    assert pixels[10:40, 20:60].mean() < 100
    with Image.open(TUTORIALS_DIR / "spectrogram.png") as committed:
        assert committed.size == (504, 257)
