"""docs/tutorials/per_sample_grads.md runs as written: its python blocks are
examples/per_sample_grads.py, vmap(grad(...)) gives every example's gradient of the CNN as the
loop does, and the ensemble's predictions are each model's own. No timing is asserted (the
page prints its measurement; benchmarks/bench_vmap.py keeps the numbers)."""

from testutils import assert_page_is_script

import ember

PAGE = "per_sample_grads.md"


def test_the_page_is_the_example_script():
    assert_page_is_script(PAGE, "per_sample_grads.py")


def test_per_sample_grads_tutorial(run_tutorial, capsys):
    threads = ember.get_num_threads()
    try:
        ns = run_tutorial(PAGE)  # it sets one thread
    finally:
        ember.set_num_threads(threads)
    out = capsys.readouterr().out
    assert "largest difference from the loop" in out
    model, data, targets = ns["model"], ns["data"], ns["targets"]
    grads = ns["ft_per_sample_grads"]
    names = [name for name, _ in model.named_parameters()]
    assert list(grads) == names
    for name, p in model.named_parameters():
        assert grads[name].shape == (ns["batch_size"], *p.shape)
    # every example's gradient is the gradient of that example's loss alone
    for i in (0, 17, 63):
        model.zero_grad()
        ns["loss_fn"](model(data[i:i + 1]), targets[i:i + 1]).backward()
        for name, p in model.named_parameters():
            assert float((grads[name][i] - p.grad).abs().max()) < 1e-5
    assert ns["max_diff"] < 1e-5
    # examples differ: the per-sample gradients are not one gradient repeated
    assert float((grads["fc2.weight"][0] - grads["fc2.weight"][1]).abs().max()) > 1e-4
    assert ns["loop_seconds"] > 0 and ns["vmap_seconds"] > 0
    assert ns["predictions_same_minibatch"].shape == (10, 64, 10)
    assert ns["predictions_diff_minibatch"].shape == (10, 64, 10)
    assert ns["ensemble_diff"] < 1e-6
