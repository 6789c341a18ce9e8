"""timm models on the real PyTorch: the reference half of test_timm_models.py.

``python reference.py NAMES DIR`` builds each timm model (comma-separated NAMES) with its
dropout rates zeroed, gives every float tensor of its state dict non-trivial values (timm
zero-initialises many heads and layer scales), and writes ``DIR/<name>.pt``: the float32
state dict, the float64 input, the float64 eval- and train-mode outputs, and a fingerprint of
every parameter gradient of ``(train output * weights).sum()``. The model runs in float64, so
that the two libraries' results agree to rounding, not to float32 noise.
"""

import os
import sys

import timm
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import fingerprint, no_dropout


def main(names: list[str], out: str) -> None:
    torch.set_num_threads(1)
    for name in names:
        torch.manual_seed(0)
        model = timm.create_model(name, pretrained=False)
        no_dropout(model, torch.nn)
        g = torch.Generator().manual_seed(2)
        with torch.no_grad():
            for key, value in model.state_dict().items():
                if value.is_floating_point():
                    if "running_var" in key:
                        value.copy_(0.5 + torch.rand(value.shape, generator=g))
                    else:
                        value.add_(0.05 * torch.randn(value.shape, generator=g))
        state = {k: v.clone() for k, v in model.state_dict().items()}
        model = model.double()
        size = tuple(model.pretrained_cfg.get("input_size", (3, 224, 224)))
        x = torch.randn((2,) + size, generator=g, dtype=torch.float64)
        model.eval()
        with torch.no_grad():
            y_eval = model(x)
        model.train()
        y_train = model(x)
        w = torch.randn(y_train.shape, generator=g, dtype=torch.float64)
        (y_train * w).sum().backward()
        grads = {k: torch.from_numpy(fingerprint(p.grad.numpy()))
                 for k, p in model.named_parameters() if p.grad is not None}
        torch.save({"state": state, "x": x, "y_eval": y_eval, "y_train": y_train.detach(),
                    "w": w, "grads": grads}, os.path.join(out, name + ".pt"))
        print(name, "done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1].split(","), sys.argv[2])
