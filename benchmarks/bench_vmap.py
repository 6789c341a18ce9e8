"""``vmap`` against a Python loop, in Ember and in ``torch.func`` (issue 17's 5x target).

Three workloads, two from PyTorch's tutorials, each written once against the PyTorch API and
run with ``lib`` bound to ember and to torch, from the same weights and data:

- per-sample gradients of a CNN on MNIST-shaped data (64 examples):
  ``vmap(grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, data, targets)``
  against one forward and backward per example;
- the same for a small MLP on 8x8 digits (differentially private training's per-example
  gradients), where the loop's per-step overhead, not arithmetic, is the cost;
- model ensembling: 10 MLPs on one minibatch, ``vmap(fmodel, in_dims=(0, 0, None))`` over
  ``stack_module_state``, forward and per-model gradients, against a loop over the models.

The table gives each library's loop and vmap times and the speedup (loop / vmap), the number
the issue asks to be at least 5 for Ember; the last column compares Ember's vmap with
PyTorch's. Run: ``python benchmarks/run.py bench_vmap`` (``BENCH_ONLY=cnn`` for one);
``BENCH_DEVICE=cuda`` runs both libraries on the GPU (each call ends with a synchronize).
"""

from __future__ import annotations

import copy
import os
import time

import numpy as np
from harness import compare, fmt_time

BATCH = 64
MODELS = 10
DEVICE = os.environ.get("BENCH_DEVICE", "cpu")


def _cnn(lib):
    nn, F = lib.nn, lib.nn.functional

    class SimpleCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, 1)
            self.conv2 = nn.Conv2d(32, 64, 3, 1)
            self.fc1 = nn.Linear(9216, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.relu(self.conv2(x))
            x = F.max_pool2d(x, 2)
            x = lib.flatten(x, 1)
            x = F.relu(self.fc1(x))
            x = self.fc2(x)
            return F.log_softmax(x, dim=1)

    return SimpleCNN()


def _digits_mlp(lib):
    """The small model of differentially private training (per-example gradients clipped each
    step): 8x8 digits through one hidden layer of 128."""
    nn = lib.nn
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10),
                         nn.LogSoftmax(dim=1))


_MLP_CLASSES: dict = {}


def _mlp(lib):
    if lib.__name__ not in _MLP_CLASSES:
        _MLP_CLASSES[lib.__name__] = _mlp_class(lib)
    return _MLP_CLASSES[lib.__name__]()


def _mlp_class(lib):
    nn, F = lib.nn, lib.nn.functional

    class SimpleMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(784, 128)
            self.fc2 = nn.Linear(128, 128)
            self.fc3 = nn.Linear(128, 10)

        def forward(self, x):
            x = x.flatten(1)
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            return self.fc3(x)

    return SimpleMLP


def _copy_weights(src, dst) -> None:
    import ember

    dst.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in
                         src.state_dict().items()})


def _per_sample(lib, model, data, targets):
    F = lib.nn.functional
    func = lib.func
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        batch = sample.unsqueeze(0)
        t = target.unsqueeze(0)
        predictions = func.functional_call(model, (params, buffers), (batch,))
        return F.nll_loss(predictions, t)

    ft = func.vmap(func.grad(compute_loss), in_dims=(None, None, 0, 0))

    def vmapped():
        return ft(params, buffers, data, targets)

    def loop():
        grads = []
        for i in range(data.shape[0]):
            model.zero_grad()
            loss = F.nll_loss(model(data[i:i + 1]), targets[i:i + 1])
            loss.backward()
            grads.append([p.grad for p in model.parameters()])
        return grads

    return loop, vmapped


def _ensemble(lib, models, minibatch, targets):
    F = lib.nn.functional
    func = lib.func
    params, buffers = func.stack_module_state(models)
    base = copy.deepcopy(models[0])

    def loss(p, b, x, t):
        return F.cross_entropy(func.functional_call(base, (p, b), (x,)), t)

    ft = func.vmap(func.grad(loss), in_dims=(0, 0, None, None))

    def vmapped():
        return ft(params, buffers, minibatch, targets)

    def loop():
        grads = []
        for m in models:
            m.zero_grad()
            F.cross_entropy(m(minibatch), targets).backward()
            grads.append([p.grad for p in m.parameters()])
        return grads

    return loop, vmapped


def _pairs(torch):
    import ember

    rng = np.random.default_rng(0)
    data = rng.standard_normal((BATCH, 1, 28, 28)).astype(np.float32)
    digits = rng.standard_normal((BATCH, 1, 8, 8)).astype(np.float32)
    targets = rng.integers(0, 10, BATCH)
    out = {}
    e_cnn = _cnn(ember)
    e_small = _digits_mlp(ember)
    e_models = [_mlp(ember) for _ in range(MODELS)]
    t_cnn = t_models = t_small = None
    if torch is not None:
        torch.manual_seed(0)
        t_cnn = _cnn(torch)
        _copy_weights(t_cnn, e_cnn)
        t_small = _digits_mlp(torch)
        _copy_weights(t_small, e_small)
        t_models = [_mlp(torch) for _ in range(MODELS)]
        for t, e in zip(t_models, e_models):
            _copy_weights(t, e)

    def on_device(lib, model):
        for m in model if isinstance(model, list) else [model]:
            m.to(DEVICE)
        return model

    def synced(lib, fns):
        if DEVICE == "cpu":
            return fns
        sync = lib.cuda.synchronize

        def wrap(fn):
            def call():
                out = fn()
                sync()
                return out
            return call
        return tuple(wrap(fn) for fn in fns)

    def libs(make, e_model, t_model, x, y):
        e = synced(ember, make(ember, on_device(ember, e_model),
                               ember.tensor(x, device=DEVICE), ember.tensor(y, device=DEVICE)))
        t = synced(torch, make(torch, on_device(torch, t_model), torch.tensor(x, device=DEVICE),
                               torch.tensor(y, device=DEVICE))) if torch is not None \
            else (None, None)
        return e, t

    out["per-sample grads, CNN (64 MNIST images)"] = libs(_per_sample, e_cnn, t_cnn, data,
                                                          targets)
    out["per-sample grads, MLP (64 8x8 digits)"] = libs(_per_sample, e_small, t_small, digits,
                                                        targets)
    out[f"ensemble of {MODELS} MLPs, per-model grads (64 images)"] = libs(
        _ensemble, e_models, t_models, data, targets)
    return out


def _jacobian_pairs(torch):
    """PyTorch's Jacobians-and-Hessians tutorial: ``predict(weight, bias, x) =
    F.linear(x, weight, bias).tanh()`` with D = 16, a Jacobian-vector product (``jvp``, the
    bias as the vector), its Jacobian with respect to ``x`` by ``jacrev`` and ``jacfwd``,
    the Hessian (``jacfwd(jacrev)``) of its sum, and ``vmap`` over a batch of 64 inputs (one
    backward pass per batch of rows in Ember since session 33; one per row before)."""
    import ember

    rng = np.random.default_rng(0)
    D = 16
    arrays = (rng.standard_normal((D, D)), rng.standard_normal(D), rng.standard_normal(D),
              rng.standard_normal((BATCH, D)))

    def make(lib):
        if lib is None:
            return None
        F, func = lib.nn.functional, lib.func
        weight, bias, x, xs = (lib.tensor(a, dtype=lib.float64) for a in arrays)

        def predict(weight, bias, x):
            return F.linear(x, weight, bias).tanh()

        def total(weight, bias, x):
            return predict(weight, bias, x).sum()

        return {
            "jvp (16 -> 16)": lambda: func.jvp(lambda x: predict(weight, bias, x), (x,),
                                               (bias,)),
            "jacrev (16 -> 16)": lambda: func.jacrev(predict, argnums=2)(weight, bias, x),
            "jacfwd (16 -> 16)": lambda: func.jacfwd(predict, argnums=2)(weight, bias, x),
            "hessian (jacfwd(jacrev), 16)": lambda: func.hessian(total, argnums=2)(
                weight, bias, x),
            "vmap(jacrev) over 64 inputs": lambda: func.vmap(
                func.jacrev(predict, argnums=2), in_dims=(None, None, 0))(weight, bias, xs),
            "jacrev wrt weight (16 -> 16x16)": lambda: func.jacrev(predict, argnums=0)(
                weight, bias, x),
        }

    e, t = make(ember), make(torch)
    return {name: (fn, None if t is None else t[name]) for name, fn in e.items()}


def jacobians(torch):
    """The Markdown table of Jacobians and Hessians: Ember / PyTorch per transform."""
    rows = ["| transform (float64) | Ember | PyTorch | Ember / PyTorch |", "|---|---|---|---|"]
    for name, (e_fn, t_fn) in _jacobian_pairs(torch).items():
        r = compare(name, e_fn, t_fn, number=50, repeat=6)
        if r is None:
            continue
        ratio = "-" if r.torch_s is None else f"{r.ember_s / r.torch_s:.2f}x"
        rows.append(f"| {name} | {fmt_time(r.ember_s)} | {fmt_time(r.torch_s)} | {ratio} |")
    return "\n".join(rows)


def workloads(torch):
    """The Markdown tables: loop and vmap per library, speedups, Ember vmap / PyTorch vmap;
    then Jacobians and Hessians."""
    rows = ["| workload | Ember loop | Ember vmap | Ember speedup | PyTorch loop | "
            "PyTorch vmap | PyTorch speedup | Ember vmap / PyTorch vmap |",
            "|---|---|---|---|---|---|---|---|"]
    for name, ((e_loop, e_vmap), (t_loop, t_vmap)) in _pairs(torch).items():
        start = time.perf_counter()
        e_vmap()
        # calls per timing: ~0.1 s of them, so a 2 ms call is not timed alone
        number = max(1, round(0.1 / (time.perf_counter() - start)))
        loop = compare(name + " loop", e_loop, t_loop, number=max(1, number // 4), repeat=6)
        vm = compare(name + " vmap", e_vmap, t_vmap, number=number, repeat=6)
        if loop is None or vm is None:
            continue
        e_speed = loop.ember_s / vm.ember_s
        t_speed = "-" if loop.torch_s is None else f"{loop.torch_s / vm.torch_s:.1f}x"
        ratio = "-" if vm.torch_s is None else f"{vm.ember_s / vm.torch_s:.2f}x"
        rows.append(f"| {name} | {fmt_time(loop.ember_s)} | {fmt_time(vm.ember_s)} | "
                    f"{e_speed:.1f}x | {fmt_time(loop.torch_s)} | {fmt_time(vm.torch_s)} | "
                    f"{t_speed} | {ratio} |")
    return "\n".join(rows) + "\n\n" + jacobians(torch)


if __name__ == "__main__":
    try:
        import torch as _torch
    except ImportError:
        _torch = None
    print(workloads(_torch))
