"""docs/tutorials/vae.md runs as written: its python blocks are examples/vae_digits.py, the
held-out ELBO improves, the model's pieces are the distributions the page describes, and the
picture of reconstructions and samples is written."""


import pytest
from testutils import TUTORIALS_DIR, assert_page_is_script

import ember

pytest.importorskip("ember.vision")
pytest.importorskip("PIL")

PAGE = "vae.md"


def test_the_page_is_the_example_script():
    assert_page_is_script(PAGE, "vae_digits.py")
    page = (TUTORIALS_DIR / PAGE).read_text()
    assert "](vae_digits.png)" in page and (TUTORIALS_DIR / "vae_digits.png").stat().st_size > 1000


def test_vae_tutorial(run_tutorial, capsys):
    threads = ember.get_num_threads()
    try:
        ns = run_tutorial(PAGE)  # it sets one thread
    finally:
        ember.set_num_threads(threads)
    out = capsys.readouterr().out
    elbos = ns["elbos"]
    assert len(elbos) == ns["epochs"] + 1
    assert out.count("held-out ELBO") == ns["epochs"] + 1
    # the bound improves: from about -46 nats per image (every pixel a coin flip) to about -24
    assert elbos[0] < -40
    assert elbos[-1] > -26
    assert elbos[-1] > max(elbos[:5]) + 1
    # the distributions the page describes
    model, x = ns["model"], ns["test_binary"][:4]
    q = model.posterior(x)
    assert isinstance(q, ember.distributions.Independent)
    assert isinstance(q.base_dist, ember.distributions.Normal)
    assert q.batch_shape == (4,) and q.event_shape == (8,) and q.has_rsample
    likelihood = model.likelihood(q.mean)
    assert likelihood.batch_shape == (4,) and likelihood.event_shape == (64,)
    # rsample carries the reconstruction term's gradient back into the encoder
    model.zero_grad()
    model.likelihood(q.rsample()).log_prob(x).sum().backward()
    assert float(model.encoder[0].weight.grad.abs().sum()) > 0
    # reconstructions are closer to their digits than samples from the prior are
    originals, recon, samples = ns["originals"], ns["reconstructions"], ns["samples"]
    assert float((recon - originals).abs().mean()) < float((samples[:10] - originals).abs().mean())
    picture = run_tutorial.workdir / "vae_digits.png"
    from PIL import Image

    with Image.open(picture) as image:
        assert image.size == (408, 168) and image.mode == "L"
    with Image.open(TUTORIALS_DIR / "vae_digits.png") as committed:
        assert committed.size == (408, 168)
