"""Run under ``python -m ember.as_torch``: timm's documented scripting path (``create_model(...,
scriptable=True)``, ``torch.jit.script``, ``save``, ``torch.jit.load``) for the models named in
argv[1], in float64; one JSON line per model with the largest differences from eager."""

import json
import sys

import timm
import torch

torch.manual_seed(0)
for name in sys.argv[1].split(","):
    model = timm.create_model(name, pretrained=False, scriptable=True).double().eval()
    scripted = torch.jit.script(model)
    x = torch.randn(2, 3, 224, 224, dtype=torch.float64)
    with torch.no_grad():
        eager = model(x)
        direct = (scripted(x) - eager).abs().max().item()
        path = f"{sys.argv[2]}/{name}.pt"
        scripted.save(path)
        loaded = torch.jit.load(path)
        other = torch.randn(3, 3, 224, 224, dtype=torch.float64)  # another batch size
        saved = max((loaded(x) - eager).abs().max().item(),
                    (loaded(other) - model(other)).abs().max().item())
    print(json.dumps({"name": name, "scripted": direct, "loaded": saved,
                      "type": type(scripted).__name__,
                      "is_module": isinstance(loaded, torch.nn.Module)}))
