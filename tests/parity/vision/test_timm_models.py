"""timm's models run on Ember unchanged, with PyTorch's numbers.

timm (pytorch-image-models) is a large, real PyTorch code base: ~100 architecture families
written against torch, torchvision and torch.fx internals. Each model here is built by timm's
own ``create_model`` twice: on the real PyTorch (``timm_programs/reference.py``, in this venv)
and on Ember (``timm_programs/check.py`` under ``python -m ember.as_torch``, so that timm's
``import torch`` / ``torchvision`` import Ember). Same weights (a perturbed state dict, so
zero-initialised heads and layer scales carry values), same float64 input; the eval output,
the train-mode output (batch statistics; dropout rates zeroed, as the two random streams
differ) and every parameter's gradient agree to float64 rounding.

Skips unless the oracle venv has torch, torchvision and timm (``nox -s vision_parity``
installs them).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")
pytest.importorskip("timm")

PROGRAMS = Path(__file__).parent / "timm_programs"

#: one small model of each of many timm families (convolutional, attention, hybrid, MLP)
MODELS = [
    "resnet18", "resnetv2_18", "regnetx_002", "efficientnet_b0", "mobilenetv3_small_050",
    "ghostnet_050", "hardcorenas_a", "lcnet_050", "repghostnet_050", "mobileone_s0",
    "convnext_atto", "inception_next_atto", "edgenext_xx_small", "fastvit_t8",
    "cspnext_tiny", "starnet_s1", "repvit_m1", "efficientformerv2_s0", "efficientvit_m0",
    "efficientvit_b0", "mobilevit_xxs", "vit_tiny_patch16_224", "deit_tiny_patch16_224",
    "xcit_nano_12_p8_224", "pvt_v2_b0", "tiny_vit_5m_224", "levit_128s", "convit_tiny",
    "coat_tiny", "swiftformer_xs", "mambaout_femto", "shvit_s1",
    # windowed attention on a transposed 6-d view: found linear's lost bias under no_grad
    "twins_svt_small",
]

RTOL = 1e-9
#: models whose PyTorch arithmetic is not float64 throughout, and by how much
LOOSER = {
    # LiteMLA computes its attention in float32 on purpose (q.float() ... .to(dtype))
    "efficientvit_b0": 1e-5,
    # PyTorch's hardsigmoid backward multiplies by the float32 constant 1.0f / 6.0f, also for
    # float64 (3e-8 relative); Ember by 1 / 6 in the tensor's dtype
    "ghostnet_050": 1e-7, "hardcorenas_a": 1e-7, "repghostnet_050": 1e-7,
    "mobilenetv3_small_050": 1e-7, "lcnet_050": 1e-7, "cspnext_tiny": 1e-7,
    # PositionalEncodingFourier builds its sin/cos encoding in float32 (cumsum(...,
    # dtype=torch.float32), arange(...).to(torch.float32))
    "edgenext_xx_small": 1e-7, "xcit_nano_12_p8_224": 1e-7,
}
BATCH = 6  # models per reference/check round (the reference files are deleted once read)

# each round runs two programs on one core: the file takes ~5 minutes, half of vision_parity's
# test time (marked slow, conftest hands it to a worker first)
pytestmark = pytest.mark.slow


def _env():
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env.pop("EMBER_TEST_DEVICE", None)
    return env


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = {}
    directory = tmp_path_factory.mktemp("timm")
    for i in range(0, len(MODELS), BATCH):
        names = ",".join(MODELS[i:i + BATCH])
        ref = subprocess.run([sys.executable, str(PROGRAMS / "reference.py"), names,
                              str(directory)], capture_output=True, text=True, timeout=900,
                             env=_env())
        assert ref.returncode == 0, ref.stderr[-3000:]
        ours = subprocess.run([sys.executable, "-m", "ember.as_torch",
                               str(PROGRAMS / "check.py"), names, str(directory)],
                              capture_output=True, text=True, timeout=900, env=_env())
        assert ours.returncode == 0, ours.stderr[-3000:]
        for line in ours.stdout.splitlines():
            if line.startswith("{"):
                record = json.loads(line)
                out[record["name"]] = record
    return out


@pytest.mark.parametrize("name", MODELS)
def test_timm_model_matches_pytorch(results, name):
    r = results[name]
    assert "error" not in r, r.get("where", "") + r.get("error", "")
    rtol = LOOSER.get(name, RTOL)
    for mode in ("eval", "train"):
        err, scale = r[mode]
        assert err <= rtol * scale, f"{mode} output: {err:.3g} off at scale {scale:.3g}"
    assert r["missing_grads"] == [] and r["extra_grads"] == []
    overall = max(scale for _, scale in r["grads"].values())
    for key, (err, scale) in r["grads"].items():
        # parameters whose gradient is ~0 (a bias before a batch norm) get the model's own
        # gradient scale as the floor of the tolerance
        assert err <= rtol * scale + 1e-12 * overall, \
            f"gradient of {key}: {err:.3g} off at scale {scale:.3g} (largest {overall:.3g})"
