"""``python -m ember.as_torch``: a PyTorch program runs on Ember without editing its imports."""

from __future__ import annotations

import os
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
    assert r.stdout.split() == ["torch", "ember.nn", "ember.nn.functional", "['--epochs',",
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


def test_the_working_directory_is_not_on_the_scripts_path(tmp_path):
    # python script.py puts the script's folder on sys.path, not the working directory:
    # a json.py or helper.py there must not shadow the standard library or PYTHONPATH
    (tmp_path / "cwd").mkdir()
    (tmp_path / "lib").mkdir()
    (tmp_path / "prog").mkdir()
    (tmp_path / "cwd" / "helper.py").write_text("WHO = 'working directory'\n")
    (tmp_path / "cwd" / "json.py").write_text("raise SystemExit('shadowed the stdlib')\n")
    (tmp_path / "lib" / "helper.py").write_text("WHO = 'PYTHONPATH'\n")
    (tmp_path / "prog" / "p.py").write_text(
        "import json, sys, helper\nprint(helper.WHO, json.dumps(1), sys.path[0])\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "lib"))
    runs = [subprocess.run([sys.executable, *prefix, "../prog/p.py"], cwd=tmp_path / "cwd",
                           env=env, capture_output=True, text=True, timeout=300)
            for prefix in ((), ("-m", "ember.as_torch"))]
    for r in runs:
        assert r.returncode == 0, r.stderr
    assert runs[1].stdout == runs[0].stdout
    assert runs[0].stdout.split()[:2] == ["PYTHONPATH", "1"]


def test_command_form(tmp_path):
    code = ("import pickle, sys, torch\nclass A: pass\n"
            "print(torch.__name__, sys.argv, __name__, type(pickle.loads(pickle.dumps(A()))))")
    r = subprocess.run([sys.executable, "-m", "ember.as_torch", "-c", code, "x", "--y"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["torch", "['-c',", "'x',", "'--y']", "__main__",
                                "<class", "'__main__.A'>"]


def test_module_form_and_usage(tmp_path):
    (tmp_path / "prog.py").write_text("import torch\nprint(torch.__name__, torch.__spec__.name)\n")
    r = subprocess.run([sys.executable, "-m", "ember.as_torch", "-m", "prog"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.split() == ["torch", "ember"], r.stderr
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
    os.write(1, f"{rank} {torch.__spec__.name}\\n".encode())  # one write: the children share stdout


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


SPELLING = """
import ember
from ember import as_torch

before = (repr(ember.float32), ember.ones(1).type(), str(ember.__version__))
as_torch.install()
import torch
from packaging.version import Version
x = torch.ones(2, 3)
print(repr(x.dtype), repr(x.shape), x.type(), x.double().type(), torch.typename(x),
      repr(torch.strided), repr(torch.channels_last), torch.max(x, 0).__class__.__name__)
print(repr(torch.max(x, 0)).splitlines()[0], repr(torch.tensor([1.5], dtype=torch.float64)))
v = torch.__version__
print(v, v >= "2.0", v >= (2, 13), Version(v) >= Version("2.1"), Version(v).local,
      torch.version.__version__ == v, torch.torch_version.__version__ == v)
# what Ember writes to files keeps its own spelling: an exported program round-trips
import io
ep = torch.export.export(torch.nn.Linear(3, 2).double(), (torch.ones(1, 3, dtype=torch.float64),))
buf = io.BytesIO()
torch.export.save(ep, buf)
buf.seek(0)
print(torch.export.load(buf).module()(torch.ones(1, 3, dtype=torch.float64)).dtype)
as_torch.uninstall()
print(before == (repr(ember.float32), ember.ones(1).type(), str(ember.__version__)), before[0])
"""


def test_pytorch_spellings_and_version_under_the_alias():
    """Under the alias a program sees PyTorch's spellings (it compares x.type() with
    'torch.FloatTensor', prints dtypes) and a torch.__version__ that gates on the PyTorch API
    Ember follows; Ember's files keep their own names; uninstall restores Ember's."""
    r = subprocess.run([sys.executable, "-c", SPELLING], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["torch.float32", "torch.Size([2,", "3])", "torch.FloatTensor",
                                "torch.DoubleTensor", "torch.FloatTensor", "torch.strided",
                                "torch.channels_last", "max"]
    assert lines[1] == "torch.return_types.max( tensor([1.5000], dtype=torch.float64)"
    version, *checks = lines[2].split()
    assert version.startswith("2.13.0+ember.")
    assert checks[:3] == ["True", "True", "True"] and checks[3].startswith("ember.")
    assert checks[4:] == ["True", "True"]
    assert lines[3] == "torch.float64"
    assert lines[4] == "True ember.float32"
