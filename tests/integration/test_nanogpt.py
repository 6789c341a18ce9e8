"""nanoGPT's ``train.py`` runs unedited on Ember (``python -m ember.as_torch``): it trains the
character-level Shakespeare config (shrunk), with and without ``compile=True``, resumes from
its checkpoint, and the checkpoint runs in PyTorch's own nanoGPT model to the same logits.
The programs are read from a local copy of karpathy/nanoGPT at the commit
``tools/upstream_sources.py`` pins (upstream/nanogpt.md says how; without one these tests
skip, saying so)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from integration.test_pytorch_examples import needs_pytorch
from testutils import upstream

# what the runs need of nanoGPT (sample.py imports tiktoken, which is not installed)
FILES = ["train.py", "model.py", "configurator.py", "config/train_shakespeare_char.py",
         "data/shakespeare_char/prepare.py"]
# (--always_save_checkpoint: the config saves only when the validation loss improves, so the
# checkpoint's step would depend on the data)
TINY = ["config/train_shakespeare_char.py", "--device=cpu", "--eval_iters=4",
        "--always_save_checkpoint=True",
        "--log_interval=5", "--block_size=32", "--batch_size=8", "--n_layer=2", "--n_head=2",
        "--n_embd=32", "--dropout=0.0", "--eval_interval=10", "--max_iters=40",
        "--lr_decay_iters=40", "--warmup_iters=5"]
STEP = re.compile(r"step (\d+): train loss ([\d.]+), val loss ([\d.]+)")

# the checkpoint's logits on fixed tokens, printed as JSON (run on Ember and on PyTorch)
EVALUATE = """
import json, sys
import torch
from model import GPT, GPTConfig
checkpoint = torch.load(sys.argv[1], map_location="cpu")
model = GPT(GPTConfig(**checkpoint["model_args"]))
model.load_state_dict(checkpoint["model"])
model.eval()
idx = torch.tensor([[1, 5, 9, 2, 7, 3, 3, 8]])
with torch.no_grad():
    logits, _ = model(idx, idx)
print(json.dumps({"logits": logits.reshape(-1).tolist(), "iter": checkpoint["iter_num"]}))
"""


def corpus() -> str:
    """A text of about 100,000 characters for prepare.py: seeded sentences of English words
    (this test's own, so the run does not change when some file of the repository does)."""
    words = ("the a model learns to train its weights on data with every step and loss falls "
             "when gradients flow back through layers of attention heads into embeddings").split()
    rng = np.random.default_rng(0)
    lines = [" ".join(rng.choice(words, size=rng.integers(4, 12))).capitalize() + "."
             for _ in range(1700)]
    return "\n".join(lines) + "\n"


def run(cwd: Path, *args: str, on_pytorch: bool = False, script: str = "train.py") -> str:
    command = [sys.executable, script, *args]
    if not on_pytorch:
        command[1:1] = ["-m", "ember.as_torch"]
    r = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{script} {' '.join(args)} failed:\n{r.stderr[-6000:]}"
    return r.stdout


def losses(out: str) -> dict:
    return {int(m[0]): (float(m[1]), float(m[2])) for m in STEP.findall(out)}


@pytest.fixture(scope="module")
def nanogpt(tmp_path_factory) -> Path:
    """nanoGPT in a temporary folder with its data prepared from a local text."""
    nanogpt = upstream("karpathy/nanoGPT")
    work = tmp_path_factory.mktemp("nanogpt") / "nanogpt"
    for name in FILES:
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(nanogpt / name, work / name)
    data = work / "data" / "shakespeare_char"
    (data / "input.txt").write_text(corpus())
    out = run(data, script="prepare.py", on_pytorch=True)  # NumPy and pickle only
    assert "train has" in out and (data / "train.bin").exists()
    return work


@pytest.fixture(scope="module")
def trained(nanogpt) -> str:
    return run(nanogpt, *TINY, "--compile=False", "--out_dir=out-eager")


def test_train_py_trains_and_checkpoints(nanogpt, trained):
    steps = losses(trained)
    assert sorted(steps) == [0, 10, 20, 30, 40]
    assert steps[40][1] < steps[0][1] - 0.5  # the validation loss falls
    assert "using fused AdamW: False" in trained
    assert (nanogpt / "out-eager" / "ckpt.pt").exists()


def test_compile_true_trains_to_the_same_losses(nanogpt, trained):
    compiled = run(nanogpt, *TINY, "--compile=True", "--out_dir=out-compiled")
    assert "compiling the model" in compiled
    eager, steps = losses(trained), losses(compiled)
    assert sorted(steps) == sorted(eager)
    for step, (train, val) in eager.items():
        assert steps[step] == pytest.approx((train, val), abs=2e-4)


def test_resume_continues_from_the_checkpoint(nanogpt, trained, tmp_path):
    shutil.copytree(nanogpt / "out-eager", nanogpt / "out-resume")
    out = run(nanogpt, *TINY, "--init_from=resume", "--out_dir=out-resume",
              "--max_iters=50")
    assert "Resuming training from out-resume" in out
    assert sorted(losses(out)) == [40, 50]


def test_the_checkpoint_runs_in_pytorch(nanogpt, trained):
    needs_pytorch()
    (nanogpt / "evaluate.py").write_text(EVALUATE)
    ckpt = str(nanogpt / "out-eager" / "ckpt.pt")
    # (model.py prints the parameter count first)
    ours = json.loads(run(nanogpt, ckpt, script="evaluate.py").splitlines()[-1])
    theirs = json.loads(run(nanogpt, ckpt, script="evaluate.py", on_pytorch=True)
                        .splitlines()[-1])
    assert ours["iter"] == theirs["iter"] == 40
    np.testing.assert_allclose(ours["logits"], theirs["logits"], rtol=1e-4, atol=1e-5)
