"""Optimizer checkpoints between C++ and Python (test_optimizer_interop.cpp runs this):

    python optim_interop.py FRAMEWORK MODE DIR KIND...

FRAMEWORK is torch (PyTorch) or ember (Python Ember); each KIND one of KINDS below: the
optimizer and options both sides use, over two parameters (a 2x3 weight and a bias of 2) in
two parameter groups, the second with its own lr. The files of a kind are in DIR/KIND
(torch.save'd dicts of tensors).

MODE load: reads data.pt (p0, p1: the parameters when C++ saved its optimizer; g0, g1: the
    next gradients), makes the optimizer with other options (lr=0.5, the rest default),
    loads cpp_opt.pt (ember::save(optimizer, ...)) with optimizer.load_state_dict(
    load(path, weights_only=True)), steps once and writes the parameters to py_after.pt.
MODE save: reads data.pt (p0, p1: initial; g<i>_<k>: the gradient of parameter i at step
    k = 1, 2, 3), steps twice, writes optimizer.state_dict() to py_opt.pt and the
    parameters to py_params.pt, steps once more and writes the parameters to py_next.pt.
"""

from __future__ import annotations

import os
import sys

KINDS = {
    # kind: (class name, defaults, the second group's lr)
    "sgd": ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}, 0.05),
    "nesterov": ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}, 0.05),
    "adam": ("Adam", {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.01,
                      "amsgrad": True}, 0.02),
    "adamw": ("AdamW", {"lr": 0.01, "betas": (0.9, 0.95), "weight_decay": 0.1}, 0.02),
}


def main(framework: str, mode: str, folder: str, kinds: list[str]) -> int:
    if framework == "torch":
        import torch as fw
    else:
        import ember as fw
        import ember.optim
    for kind in kinds:
        run(fw, mode, kind, os.path.join(folder, kind))
    return 0


def run(fw, mode: str, kind: str, folder: str) -> None:
    cls_name, defaults, lr1 = KINDS[kind]
    cls = getattr(fw.optim, cls_name)

    def load(name):
        return fw.load(os.path.join(folder, name), weights_only=True)

    def save(obj, name):
        fw.save(obj, os.path.join(folder, name))

    data = load("data.pt")
    params = [data["p0"].clone().requires_grad_(), data["p1"].clone().requires_grad_()]

    def make(options):
        return cls([{"params": [params[0]]}, {"params": [params[1]], "lr": lr1}], **options)

    def step(grads):
        for p, g in zip(params, grads):
            p.grad = g.clone()
        opt.step()

    def values():
        return {f"p{i}": p.detach().clone() for i, p in enumerate(params)}

    if mode == "load":
        opt = make({"lr": 0.5})
        opt.load_state_dict(load("cpp_opt.pt"))
        groups = [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]
        print("param_groups:", groups)
        step([data["g0"], data["g1"]])
        save(values(), "py_after.pt")
    else:
        opt = make(defaults)
        for k in (1, 2):
            step([data[f"g0_{k}"], data[f"g1_{k}"]])
        save(opt.state_dict(), "py_opt.pt")
        save(values(), "py_params.pt")
        step([data["g0_3"], data["g1_3"]])
        save(values(), "py_next.pt")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]))
