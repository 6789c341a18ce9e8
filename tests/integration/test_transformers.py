"""HuggingFace ``transformers`` models run on Ember unchanged, with PyTorch's numbers.

``transformers`` is the largest PyTorch code base users run; it reaches deep into
``torch`` at import time (``torch._dynamo`` helpers, ``torch.compiler`` decorators,
``torch.cuda.CUDAGraph`` annotations, float8 dtypes, ``torch.distributed.tensor``) and its
models use SDPA, vmap-built attention masks, RoPE and in-place buffer initialisation. Each
model below is built by transformers' own classes twice: on the real PyTorch
(``transformers_programs/run.py reference``) and on Ember (the same program under
``python -m ember.as_torch``), from the same perturbed float64 weights: the eval logits, the
training loss, every parameter's gradient and greedy ``generate`` output must agree.

Skips unless the test venv has torch and transformers (``nox -s tests`` installs both as
optional oracles).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from testutils import run_in_session

pytest.importorskip("torch")
pytest.importorskip("transformers")

PROGRAM = Path(__file__).parent / "transformers_programs" / "run.py"
TP_PROGRAM = Path(__file__).parent / "transformers_programs" / "tp.py"
TRAINER_PROGRAM = Path(__file__).parent / "transformers_programs" / "trainer.py"
MODELS = ["bert", "distilbert", "roberta", "gpt2", "llama", "qwen2", "mistral", "t5", "bart"]
#: transformers computes some of these models' arithmetic in float32 on purpose, so float64
#: runs agree to float32's rounding there: the causal-LM loss upcasts the logits
#: (``logits.float()`` in ``ForCausalLMLoss``); the RMSNorms of Llama, Qwen2, Mistral and T5
#: and the rotary embeddings compute in float32. The others agree to float64 rounding.
RTOL = {"bert": 1e-10, "distilbert": 1e-10, "roberta": 1e-10, "bart": 1e-10, "gpt2": 1e-7,
        "llama": 1e-6, "qwen2": 1e-6, "mistral": 1e-6, "t5": 1e-6}

pytestmark = pytest.mark.slow


def _env():
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               TRANSFORMERS_VERBOSITY="error", HF_HUB_OFFLINE="1")
    env.pop("EMBER_TEST_DEVICE", None)
    return env


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    directory = tmp_path_factory.mktemp("transformers")
    names = ",".join(MODELS)
    ref = subprocess.run([sys.executable, str(PROGRAM), "reference", names, str(directory)],
                         capture_output=True, text=True, timeout=900, env=_env())
    assert ref.returncode == 0, ref.stderr[-3000:]
    ours = subprocess.run([sys.executable, "-m", "ember.as_torch", str(PROGRAM), "check",
                           names, str(directory)],
                          capture_output=True, text=True, timeout=900, env=_env())
    assert ours.returncode == 0, ours.stderr[-3000:]
    return {r["name"]: r for r in map(json.loads, (line for line in ours.stdout.splitlines()
                                                    if line.startswith("{")))}


@pytest.mark.parametrize("name", MODELS)
def test_transformers_model_matches_pytorch(results, name):
    r = results[name]
    assert "error" not in r, r.get("where", "") + r.get("error", "")
    assert r["extra"] == []
    assert r["dispatch"] is False  # importing transformers costs Ember's ops nothing
    diffs = r["diffs"]
    overall = max(v[1] for k, v in diffs.items() if k.startswith("grad."))
    for key, value in diffs.items():
        if key == "generated":
            assert value == "equal", value
            continue
        assert value != "missing", key
        err, scale = value
        floor = 1e-12 * overall if key.startswith("grad.") else 0.0
        assert err <= RTOL[name] * scale + floor, f"{key}: {err:.3g} off at scale {scale:.3g}"
    if name not in ("bert", "distilbert", "roberta"):
        assert "generated" in diffs


# -- tensor parallelism: transformers' own TP plan over Ember's DTensor ----------------------
TP_MODELS = ["llama", "qwen2"]


def _run_group(cmd, timeout: float):
    """Run ``cmd`` in a session of its own (the launcher's ranks end with it)."""
    return run_in_session(cmd, timeout, env=_env())


@pytest.fixture(scope="module")
def tp_results(tmp_path_factory):
    pytest.importorskip("accelerate")  # transformers loads with a device plan through it
    from mpi_launch import mpi_available

    if not mpi_available():
        pytest.skip("needs mpi4py and mpiexec (pip install 'ember-core[distributed]')")
    directory = tmp_path_factory.mktemp("transformers_tp")
    names = ",".join(TP_MODELS)
    code, out, err = _run_group([sys.executable, str(TP_PROGRAM), "reference", names,
                                 str(directory)], 600)
    assert code == 0, err[-3000:]
    code, out, err = _run_group([sys.executable, "-m", "ember.distributed.run",
                                 "--nproc-per-node", "2", "-m", "ember.as_torch",
                                 str(TP_PROGRAM), "check", names, str(directory)], 600)
    assert code == 0, (out + err)[-3000:]
    return {r["name"]: r for r in map(json.loads, (line for line in out.splitlines()
                                                    if line.startswith("{")))}


@pytest.mark.parametrize("name", TP_MODELS)
def test_transformers_tensor_parallel_matches_pytorch(tp_results, name):
    """``from_pretrained(..., tp_plan="auto")`` on 2 ranks: the weights are DTensor shards,
    and logits, loss, every gradient (gathered) and generated tokens are the single-process
    PyTorch model's (to float32 rounding: these models compute RoPE and the loss in
    float32)."""
    r = tp_results[name]
    assert "error" not in r, r.get("where", "") + r.get("error", "")
    assert r["sharded"] == ["DTensor", ["Shard(dim=0)"], [16, 32]]  # q_proj: 32 rows, 2 ranks
    assert r["dispatch"] is True  # DTensors were made: dispatch is on
    diffs = r["diffs"]
    assert diffs.pop("generated") == "equal"
    assert sum(k.startswith("grad.") for k in diffs) > 10
    overall = max(v[1] for k, v in diffs.items() if k.startswith("grad."))
    for key, value in diffs.items():
        assert value != "missing", key
        err, scale = value
        floor = 1e-12 * overall if key.startswith("grad.") else 0.0
        assert err <= 1e-6 * scale + floor, f"{key}: {err:.3g} off at scale {scale:.3g}"


# -- Trainer: transformers' training loop over HuggingFace accelerate ------------------------
@pytest.fixture(scope="module")
def trainer_dir(tmp_path_factory):
    """The saved model and PyTorch's single-process Trainer run (reference)."""
    pytest.importorskip("accelerate")  # Trainer runs on it
    directory = tmp_path_factory.mktemp("trainer")
    code, out, err = _run_group([sys.executable, str(TRAINER_PROGRAM), "reference",
                                 str(directory)], 600)
    assert code == 0, err[-3000:]
    return directory


def _trainer_record(out: str) -> dict:
    return next(json.loads(line) for line in out.splitlines() if line.startswith('{"'))


def test_trainer_trains_as_on_pytorch(trainer_dir):
    """``Trainer`` (AdamW, linear schedule, gradient clipping, logging every step) trains a
    saved BERT classifier loaded with ``from_pretrained``: every logged loss and gradient
    norm and the final weights are PyTorch's to float64 rounding."""
    code, out, err = _run_group([sys.executable, "-m", "ember.as_torch",
                                 str(TRAINER_PROGRAM), "check", str(trainer_dir)], 600)
    assert code == 0, err[-3000:]
    _check_trainer(_trainer_record(out), steps=8)


def test_trainer_ddp_trains_as_on_pytorch(trainer_dir):
    """The same Trainer on 2 ranks (accelerate wraps the model in DistributedDataParallel,
    with find_unused_parameters, and shards the batches), PyTorch's run by its own launcher
    and Ember's by ``ember.distributed.run``: the same numbers."""
    from mpi_launch import mpi_available

    if not mpi_available():
        pytest.skip("needs mpi4py and mpiexec (pip install 'ember-core[distributed]')")
    from testutils import torchrun

    code, out, err = _run_group(torchrun(2, TRAINER_PROGRAM, "reference-ddp", str(trainer_dir)),
                                600)
    assert code == 0, (out + err)[-3000:]
    code, out, err = _run_group([sys.executable, "-m", "ember.distributed.run",
                                 "--nproc-per-node", "2", "-m", "ember.as_torch",
                                 str(TRAINER_PROGRAM), "check-ddp", str(trainer_dir)], 600)
    assert code == 0, (out + err)[-3000:]
    _check_trainer(_trainer_record(out), steps=4)


def _check_trainer(r: dict, steps: int) -> None:
    assert "error" not in r, r.get("where", "") + r.get("error", "")
    assert r["steps"] == steps
    for key, value in r["diffs"].items():
        assert value != "missing", key
        err_, scale = value
        assert err_ <= 1e-12 * max(scale, 1.0), f"{key}: {err_:.3g} off at scale {scale:.3g}"
