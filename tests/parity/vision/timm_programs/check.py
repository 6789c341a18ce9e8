"""timm models on Ember: the half of test_timm_models.py that runs under ``python -m
ember.as_torch`` (so timm's ``import torch`` / ``torchvision`` are Ember).

``python -m ember.as_torch check.py NAMES DIR`` rebuilds each model, loads the reference's
state dict, runs the same input in float64 and prints one JSON line per model: the largest
difference (and scale) of the eval and train outputs and of each gradient's fingerprint, or
the error it raised. Each reference file is deleted once read.
"""

import json
import os
import sys
import traceback

import numpy as np
import timm
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import fingerprint, no_dropout


def _diff(a, b) -> list[float]:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return [float(np.abs(a - b).max()) if a.size else 0.0,
            float(np.abs(b).max()) if b.size else 0.0]


def check(name: str, path: str) -> dict:
    ref = torch.load(path, weights_only=True)
    os.unlink(path)
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False)
    no_dropout(model, torch.nn)
    model.load_state_dict(ref["state"], strict=True)
    model = model.double()
    model.eval()
    with torch.no_grad():
        y_eval = model(ref["x"])
    model.train()
    y_train = model(ref["x"])
    (y_train * ref["w"]).sum().backward()
    result = {"eval": _diff(y_eval.numpy(), ref["y_eval"].numpy()),
              "train": _diff(y_train.detach().numpy(), ref["y_train"].numpy()), "grads": {}}
    ours = {k: p.grad for k, p in model.named_parameters() if p.grad is not None}
    result["missing_grads"] = sorted(set(ref["grads"]) - set(ours))
    result["extra_grads"] = sorted(set(ours) - set(ref["grads"]))
    for key, theirs in ref["grads"].items():
        if key in ours:  # [difference, scale]: a dot product's size is ~ sqrt(n) * max |a|
            theirs = theirs.numpy()
            err = _diff(fingerprint(ours[key].numpy()), theirs)[0]
            result["grads"][key] = [err, float(theirs[0]) * ours[key].numel() ** 0.5]
    return result


def main(names: list[str], directory: str) -> None:
    for name in names:
        try:
            result = check(name, os.path.join(directory, name + ".pt"))
        except Exception as e:  # reported to the test, which fails on it
            result = {"error": f"{type(e).__name__}: {e}",
                      "where": traceback.format_exc(limit=-4)}
        print(json.dumps({"name": name, **result}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1].split(","), sys.argv[2])
