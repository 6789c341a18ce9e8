"""timm's scripting path runs on Ember: ``create_model(..., scriptable=True)`` then
``torch.jit.script``, ``save`` and ``torch.jit.load`` (timm documents it for deployment). The
scripted module runs the model's Python, so it equals eager exactly; the saved program,
captured from the first call, equals it at another batch size too."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("timm")

PROGRAM = Path(__file__).parent / "timm_programs" / "script.py"
MODELS = "resnet18,efficientnet_b0,vit_tiny_patch16_224,convnext_atto"


def test_timm_scripted_models_save_and_load(tmp_path):
    r = subprocess.run([sys.executable, "-m", "ember.as_torch", str(PROGRAM), MODELS,
                        str(tmp_path)], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    records = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert [rec["name"] for rec in records] == MODELS.split(",")
    for rec in records:
        assert rec["type"] == "RecursiveScriptModule" and rec["is_module"], rec
        assert rec["scripted"] == 0.0, rec
        assert rec["loaded"] < 1e-10, rec
