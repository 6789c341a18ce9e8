"""PyTorch Lightning runs on Ember unchanged, with PyTorch's numbers.

``lightning_programs/fit.py`` is a Lightning program as users write them: a LightningModule
with logging, Adam and a per-step StepLR, ``Trainer.fit`` with ModelCheckpoint, EarlyStopping
and LearningRateMonitor callbacks, gradient clipping and accumulation, a CSV logger,
``validate``/``test``/``predict``, ``load_from_checkpoint`` and resuming from ``ckpt_path``,
then a Lightning Fabric loop with ``fabric.save``/``load``. It runs once on PyTorch and once
under ``python -m ember.as_torch``, in float64 (``precision="64-true"``); everything it
records must agree. Under Ember it also fits a ``torch.compile``d LightningModule, which must
train as the eager one does (PyTorch 2.13's Dynamo fails on Lightning's logging there).

Importing Lightning needed ``torch._C._TensorMeta``, ``torch.PyTorchFileReader``,
``torch._dynamo.OptimizedModule``, ``torch.ScriptModule``, ``torch.profiler.kineto_available``
and every fit ``torch._C._nn._parse_to`` (Lightning's ``DeviceDtypeModuleMixin.to``).

Skips unless the test venv has torch and lightning (``nox -s tests`` installs both as
optional oracles).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("lightning")

PROGRAM = Path(__file__).parent / "lightning_programs" / "fit.py"

pytestmark = pytest.mark.slow


def _run(directory: Path, *prefix: str, extra=()) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env.pop("EMBER_TEST_DEVICE", None)
    directory.mkdir()
    proc = subprocess.run([sys.executable, *prefix, str(PROGRAM), str(directory), *extra],
                          capture_output=True, text=True, timeout=600, env=env,
                          cwd=directory)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((directory / "result.json").read_text())


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    base = tmp_path_factory.mktemp("lightning")
    return (_run(base / "torch"),
            _run(base / "ember", "-m", "ember.as_torch", extra=("--compile",)))


def _assert_close(theirs, ours, where=""):
    """Equal structure, strings and ints; floats to 1e-6 relative: the program is float64,
    but Fabric returns float32 outputs (its precision plugin) and Lightning logs the learning
    rate as a float32 tensor, so those agree to float32's rounding (the rest to 1e-12)."""
    if isinstance(theirs, dict):
        assert theirs.keys() == ours.keys(), where
        for k in theirs:
            _assert_close(theirs[k], ours[k], f"{where}.{k}")
    elif isinstance(theirs, list):
        assert len(theirs) == len(ours), where
        for i, (a, b) in enumerate(zip(theirs, ours)):
            _assert_close(a, b, f"{where}[{i}]")
    elif isinstance(theirs, float):
        assert ours == pytest.approx(theirs, rel=1e-6, abs=1e-9), where
    else:
        assert theirs == ours, where


def test_lightning_program_matches_pytorch(results):
    theirs, ours = results
    compiled = ours.pop("seed1_compiled")
    assert ours.pop("dispatch") is False  # Lightning leaves Ember's ops undispatched
    theirs.pop("dispatch")
    _assert_close(theirs, ours)
    # the float64 parts agree to float64 rounding, not only float32's
    for key in ("weights", "resumed", "seed1_eager", "seed1_profiled"):
        for name, value in theirs[key].items():
            assert ours[key][name] == pytest.approx(value, rel=1e-12, abs=1e-13), (key, name)
    assert theirs["global_step"] == 9 and theirs["resumed_step"] == 15
    assert theirs["checkpoints"] == ["epoch=1-step=6.ckpt", "epoch=2-step=9.ckpt", "last.ckpt"]
    # profiling changes nothing (the profiler's mode keeps reduce_fx=torch.mean itself)
    assert ours["seed1_profiled"] == ours["seed1_eager"]
    # a compiled LightningModule trains as the eager one
    for name, value in ours["seed1_eager"].items():
        assert compiled[name] == pytest.approx(value, rel=1e-12, abs=1e-13), name
