"""karpathy/makemore's ``makemore.py`` runs unedited on Ember (``python -m ember.as_torch``):
its six models (bigram, MLP, RNN, GRU, bag-of-words, Transformer) train on its own
``names.txt`` with its 4-worker infinite DataLoader, evaluate, sample names, log to
TensorBoard through ``torch.utils.tensorboard.SummaryWriter`` and save their best model; the
Transformer resumes and samples from its checkpoint (``--resume``, ``--sample-only``), and
learns as on PyTorch. The program is read from a local copy of karpathy/makemore at the
commit ``tools/upstream_sources.py`` pins (upstream/makemore.md says what each run checks;
without a copy these tests skip, saying so)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from integration.test_pytorch_examples import masked, needs_pytorch
from testutils import upstream_copy

pytestmark = pytest.mark.slow

STEP = re.compile(r"step (\d+) \| loss ([\d.]+) \| step time")
EVAL = re.compile(r"step (\d+) train loss: ([\d.]+) test loss: ([\d.]+)")
FIRST = float(np.log(27))  # a uniform guess over 26 letters and the stop token


def run(cwd: Path, *args: str, on_pytorch: bool = False) -> str:
    command = [sys.executable, "makemore.py", *args]
    if not on_pytorch:
        command[1:1] = ["-m", "ember.as_torch"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"} if on_pytorch else None
    r = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900, env=env)
    assert r.returncode == 0, f"makemore.py {' '.join(args)} failed:\n{r.stderr[-6000:]}"
    return r.stdout


def samples(out: str) -> list[str]:
    """The names the last ``print_samples`` printed (in train, in test and new; a name may be
    empty: the stop token first)."""
    block = out.rsplit("-" * 80, 2)[-2].strip("\n").split("\n")
    names, i = [], 0
    while i < len(block):
        m = re.fullmatch(r"(\d+) samples that are (in train|in test|new):", block[i])
        assert m, block
        names += block[i + 1:i + 1 + int(m[1])]
        i += 1 + int(m[1])
    return names


@pytest.fixture(scope="module")
def makemore(tmp_path_factory) -> Path:
    return upstream_copy("karpathy/makemore", tmp_path_factory.mktemp("makemore"))


@pytest.fixture(scope="module")
def transformer(makemore) -> str:
    return run(makemore, "--type", "transformer", "--max-steps", "501", "-o", "out")


@pytest.mark.parametrize("model", ["bigram", "mlp", "rnn", "gru", "bow"])
def test_every_model_trains_and_samples(makemore, model):
    out = run(makemore, "--type", model, "--max-steps", "201", "-o", f"out_{model}")
    assert f"'type': '{model}'" in out and "model #params:" in out
    assert "dataset determined that: vocab_size=27, block_size=16" in out
    steps = {int(s): float(v) for s, v in STEP.findall(out)}
    assert sorted(steps) == list(range(0, 201, 10)), sorted(steps)
    assert steps[200] < steps[0] - 0.05, steps  # (the bigram table learns slowest)
    names = samples(out)  # 10 sampled names at step 200, lower-case letters only
    assert len(names) == 10 and all(re.fullmatch(r"[a-z]*", n) for n in names), names


def test_transformer_trains_logs_and_resumes(makemore, transformer):
    steps = {int(s): float(v) for s, v in STEP.findall(transformer)}
    assert sorted(steps) == list(range(0, 501, 10))
    assert abs(steps[0] - FIRST) < 0.3, steps[0]
    evals = EVAL.findall(transformer)
    assert [int(e[0]) for e in evals] == [500], evals
    train_loss, test_loss = float(evals[0][1]), float(evals[0][2])
    assert train_loss < 2.5 and test_loss < 2.5, evals  # from ln(27) = 3.3
    assert f"test loss {test_loss} is the best so far, saving model to out/model.pt" \
        in transformer
    # TensorBoard's own reader finds the scalars SummaryWriter logged
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(makemore / "out"))
    events.Reload()
    assert sorted(events.Tags()["scalars"]) == ["Loss/test", "Loss/train"]
    (logged,) = events.Scalars("Loss/test")
    assert logged.step == 500 and abs(logged.value - test_loss) < 1e-6
    # the checkpoint: sampling only, then resuming training from it
    sampled = run(makemore, "--type", "transformer", "--sample-only", "-o", "out")
    assert "resuming from existing model in the workdir" in sampled
    names = samples(sampled)
    assert len(names) == 50 and all(re.fullmatch(r"[a-z]*", n) for n in names)
    resumed = run(makemore, "--type", "transformer", "--resume", "--max-steps", "11",
                  "-o", "out")
    first = {int(s): float(v) for s, v in STEP.findall(resumed)}
    assert first[0] < steps[0] - 0.5, (first, steps[0])  # it starts from the trained model


def test_transformer_learns_as_on_pytorch(makemore, transformer, tmp_path):
    needs_pytorch()
    theirs_dir = tmp_path / "makemore"
    shutil.copytree(makemore, theirs_dir, ignore=shutil.ignore_patterns("out*"))
    theirs = run(theirs_dir, "--type", "transformer", "--max-steps", "501", "-o", "out",
                 on_pytorch=True)

    def shape(out):  # the lines but the sampled names (the random streams differ)
        return masked("\n".join(line for line in out.splitlines()
                                 if not re.fullmatch(r"[a-z]*", line)))

    assert shape(transformer) == shape(theirs)
    ours, pytorch = EVAL.findall(transformer)[0], EVAL.findall(theirs)[0]
    assert abs(float(ours[2]) - float(pytorch[2])) < 0.15, (ours, pytorch)
