"""karpathy/minGPT's two projects run unedited on Ember (``python -m ember.as_torch``):
``projects/adder/adder.py`` trains a GPT to add 2-digit numbers (its own dataset; its
trainer's DataLoader runs 4 worker processes over a 10^10-sample RandomSampler) and scores
it with greedy generation; ``projects/chargpt/chargpt.py`` trains a character-level GPT on
``input.txt`` and samples from it. The programs are read from a local copy of
karpathy/minGPT at the commit ``tools/upstream_sources.py`` pins (upstream/mingpt.md says
what each run checks; without a copy these tests skip, saying so)."""

from __future__ import annotations

import json
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

LOSS = re.compile(r"iter (\d+): train loss ([\d.]+)")
SCORE = re.compile(r"(train|test) final score: (\d+)/(\d+) = ([\d.]+)% correct")

# the adder checkpoint's logits on fixed digits, printed as JSON (run on Ember and PyTorch)
EVALUATE = """
import json, sys
import torch
from mingpt.model import GPT
config = GPT.get_default_config()
config.model_type = "gpt-nano"
config.vocab_size, config.block_size = 10, 6
model = GPT(config)
model.load_state_dict(torch.load(sys.argv[1]))
model.eval()
with torch.no_grad():
    logits, _ = model(torch.tensor([[4, 5, 8, 2, 7, 2]]))
    digits = model.generate(torch.tensor([[1, 7, 2, 5]]), 3, do_sample=False)
print(json.dumps({"logits": logits.reshape(-1).tolist(), "digits": digits.tolist()}))
"""


def run(cwd: Path, script: str, *args: str, root: Path, on_pytorch: bool = False) -> str:
    command = [sys.executable, script, *args]
    if not on_pytorch:
        command[1:1] = ["-m", "ember.as_torch"]
    env = {**os.environ, "PYTHONPATH": str(root)}  # minGPT's projects import its package
    if on_pytorch:
        env["OMP_NUM_THREADS"] = "1"
    r = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900, env=env)
    assert r.returncode == 0, f"{script} {' '.join(args)} failed:\n{r.stderr[-6000:]}"
    return r.stdout


def losses(out: str) -> dict[int, float]:
    return {int(i): float(v) for i, v in LOSS.findall(out)}


@pytest.fixture(scope="module")
def mingpt(tmp_path_factory) -> Path:
    return upstream_copy("karpathy/minGPT", tmp_path_factory.mktemp("mingpt"))


ADDER = ["--trainer.max_iters=501"]


@pytest.fixture(scope="module")
def adder(mingpt) -> str:
    return run(mingpt / "projects" / "adder", "adder.py", *ADDER, root=mingpt)


def test_adder_learns_to_add(adder, mingpt):
    assert "running on device cpu" in adder
    assert "number of parameters: 0.09M" in adder  # gpt-nano: 3 layers, 3 heads, 48 dims
    found = losses(adder)
    assert sorted(found) == list(range(0, 501, 10)), sorted(found)
    assert abs(found[0] - np.log(10)) < 0.25, found[0]  # a uniform guess over 10 digits
    assert found[500] < 1.6 and found[500] < found[0] - 0.6, found
    scores = SCORE.findall(adder)  # scored at iterations 0 and 500, train then test
    assert [(s[0], s[2]) for s in scores] == [("train", "9500"), ("test", "500")] * 2, scores
    first, last = int(scores[0][1]) + int(scores[1][1]), int(scores[2][1]) + int(scores[3][1])
    assert last > first, scores
    assert (mingpt / "projects" / "adder" / "out" / "adder" / "model.pt").exists()
    assert json.loads((mingpt / "projects" / "adder" / "out" / "adder" / "config.json")
                      .read_text())["model"]["model_type"] == "gpt-nano"


def test_adder_prints_what_pytorch_prints(adder, mingpt, tmp_path):
    needs_pytorch()
    theirs_dir = tmp_path / "minGPT"
    shutil.copytree(mingpt, theirs_dir, ignore=shutil.ignore_patterns("out"))
    theirs = run(theirs_dir / "projects" / "adder", "adder.py", *ADDER, root=theirs_dir,
                 on_pytorch=True)
    # the same lines with the numbers masked (the two libraries' random streams differ;
    # the mistakes printed are up to 5 per evaluation on both)
    assert masked(adder) == masked(theirs)
    ours, pytorch = losses(adder), losses(theirs)
    assert abs(ours[500] - pytorch[500]) < 0.25, (ours[500], pytorch[500])
    # the checkpoint Ember saved runs in PyTorch's minGPT to Ember's logits and digits
    (tmp_path / "evaluate.py").write_text(EVALUATE)
    ckpt = str(mingpt / "projects" / "adder" / "out" / "adder" / "model.pt")
    # (the last line: GPT() prints its parameter count first)
    a = json.loads(run(tmp_path, "evaluate.py", ckpt, root=mingpt).splitlines()[-1])
    b = json.loads(run(tmp_path, "evaluate.py", ckpt, root=mingpt,
                       on_pytorch=True).splitlines()[-1])
    assert a["digits"] == b["digits"]
    assert np.allclose(a["logits"], b["logits"], atol=1e-4)


def corpus() -> str:
    """About 30,000 characters of seeded sentences, with the line chargpt.py prompts with."""
    words = ("O God the king and queen of a land where every word is weighed and "
             "measured twice before it is spoken").split()
    rng = np.random.default_rng(1)
    lines = ["O God, O God!"] + [" ".join(rng.choice(words, size=rng.integers(4, 10))) + "."
                                 for _ in range(600)]
    return "\n".join(lines) + "\n"


def test_chargpt_trains_and_samples(mingpt, tmp_path):
    work = mingpt / "projects" / "chargpt"
    (work / "input.txt").write_text(corpus())
    out = run(work, "chargpt.py", "--trainer.max_iters=31", "--model.model_type=gpt-nano",
              "--data.block_size=32", "--trainer.batch_size=16", root=mingpt)
    found = losses(out)
    assert sorted(found) == [0, 10, 20, 30] and found[30] < found[0], found
    # at iteration 0: 500 sampled characters after the prompt, all from the corpus
    sample = out.split("train loss", 1)[1].split("\n", 1)[1].split("saving model")[0]
    assert sample.startswith("O God, O God!") and len(sample.rstrip("\n")) == 13 + 500
    assert set(sample) <= set(corpus()) | {"\n"}
    assert (work / "out" / "chargpt" / "model.pt").exists()
