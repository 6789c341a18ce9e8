"""``python -m ember.as_torch``: a PyTorch program runs on Ember without editing its imports."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROGRAM = '''
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x = torch.randn(64, 4)
y = (x.sum(1, keepdim=True) > 0).float()
model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.5)
for _ in range(30):
    for xb, yb in DataLoader(TensorDataset(x, y), batch_size=16):
        opt.zero_grad()
        loss = F.binary_cross_entropy_with_logits(model(xb), yb)
        loss.backward()
        opt.step()
print(torch.__name__, nn.__name__, F.__name__, sys.argv[1:], round(loss.item(), 3) < 0.3)
'''


def _run(tmp_path, *args):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(PROGRAM))
    return subprocess.run([sys.executable, "-m", "ember.as_torch", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


def test_a_pytorch_script_runs_on_ember(tmp_path):
    r = _run(tmp_path, "train.py", "--epochs", "2")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ember", "ember.nn", "ember.nn.functional", "['--epochs',",
                                "'2']", "True"]


def test_the_script_sees_itself_as_python_shows_it(tmp_path):
    # __file__ absolute (python script.py makes it so: a script that changes directory still
    # finds its files), the script's folder first on sys.path, argparse's program name
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "prog.py").write_text(
        "import argparse, os, sys\n"
        "print(__file__, sys.path[0], argparse.ArgumentParser().prog, os.path.isabs(__file__))\n")
    r = subprocess.run([sys.executable, "-m", "ember.as_torch", "sub/prog.py"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    plain = subprocess.run([sys.executable, "sub/prog.py"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == plain.stdout
    assert r.stdout.split()[-1] == "True"


def test_module_form_and_usage(tmp_path):
    (tmp_path / "prog.py").write_text("import torch\nprint(torch.__name__)\n")
    r = subprocess.run([sys.executable, "-m", "ember.as_torch", "-m", "prog"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ember", r.stderr
    r = subprocess.run([sys.executable, "-m", "ember.as_torch"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 2 and "usage: python -m ember.as_torch" in r.stderr


IN_PROCESS = """
import sys
import ember
from ember import as_torch

as_torch.install()
import torch
import torch.nn.functional as F
assert torch is ember and F is ember.nn.functional and as_torch.installed()
import functorch
assert functorch is ember.functorch and functorch.vmap(torch.sin)(torch.zeros(2)).tolist() == [0, 0]
try:
    import torch.no_such_module
except ModuleNotFoundError as exc:
    print(exc)
as_torch.uninstall()
assert not as_torch.installed() and "torch" not in sys.modules
print("ok")
"""


def test_install_in_process_and_missing_submodules():
    # in a fresh interpreter: this one may hold the real torch (the test oracle)
    r = subprocess.run([sys.executable, "-c", IN_PROCESS], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "No module named 'torch.no_such_module': running on Ember (ember.as_torch), which has "
        "no 'ember.no_such_module'", "ok"]


HOGWILD = '''
import os
import sys
import torch
import torch.multiprocessing as mp
import torch.nn as nn


def train(rank, model):
    torch.manual_seed(rank)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(20):
        x = torch.randn(16, 4)
        loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    os.write(1, f"{rank} {torch.__name__}\\n".encode())  # one write: the children share stdout


if __name__ == "__main__":
    mp.set_start_method(sys.argv[1], force=True)
    model = nn.Linear(4, 1)
    nn.init.zeros_(model.weight)
    model.share_memory()
    procs = [mp.Process(target=train, args=(r, model)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    print([p.exitcode for p in procs], bool((model.weight.detach() != 0).all()))
'''


def test_spawned_children_import_ember_too(tmp_path):
    """``spawn``/``forkserver`` children re-import the program in a fresh interpreter: they
    get the alias as well, and train a shared model (PyTorch's mnist_hogwild pattern)."""
    (tmp_path / "hogwild.py").write_text(HOGWILD)
    for method in ("spawn", "forkserver"):
        r = subprocess.run([sys.executable, "-m", "ember.as_torch", "hogwild.py", method],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert sorted(lines[:2]) == ["0 ember", "1 ember"], (method, r.stdout, r.stderr)
        assert lines[2] == "[0, 0] True", (method, r.stdout)
