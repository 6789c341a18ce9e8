"""Ember's public API used the way a program uses it, for the type checker.

``nox -s typecheck`` runs mypy (strict; tools/typecheck/mypy.ini) over this file and over
ember-core's generated stubs (tools/gen_stubs.py): a stub that loses a name, or types an op
wrong, stops this file from type-checking. ``assert_type`` pins what the stubs promise. It
runs as well (tests/integration/test_stubs.py runs it), so every line here is real usage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ember
import ember.nn as nn
from ember import Tensor, optim
from ember.return_types import max as MaxResult

if TYPE_CHECKING:
    from typing_extensions import assert_type
else:
    def assert_type(value, _type):
        return value


class MLP(nn.Module):
    def __init__(self, n_in: int, n_hidden: int, n_out: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(n_in, n_hidden)
        self.fc2 = nn.Linear(n_hidden, n_out)

    def forward(self, x: Tensor) -> Tensor:
        hidden: Tensor = ember.relu(self.fc1(x))
        out: Tensor = self.fc2(hidden)
        return out


def tensors() -> None:
    x = ember.randn(4, 3, dtype=ember.float32)
    assert_type(x, Tensor)
    y = (x @ x.T + 1.0).clamp(min=0.0)
    assert_type(y, Tensor)
    assert_type(y.sum(dim=1, keepdim=True), Tensor)
    assert_type(ember.sum(y, (0, 1)), Tensor)
    assert_type(y.max(), Tensor)
    best = y.max(dim=1)
    assert_type(best, MaxResult)
    values, indices = best
    assert_type(values, Tensor)
    assert_type(best.indices, Tensor)
    assert_type(ember.max(y, x @ x.T), Tensor)
    assert_type(y.size(), ember.Size)
    assert_type(y.size(0), int)
    assert_type(y.shape, ember.Size)
    assert_type(y.dtype, ember.dtype)
    assert_type(y.device, ember.device)
    assert_type(y.view(-1), Tensor)
    assert_type(y.view(2, 8), Tensor)
    assert_type(y.permute(1, 0), Tensor)
    assert_type(y.permute((1, 0)), Tensor)
    assert_type(ember.split(y, 2), tuple[Tensor, ...])
    assert_type(y.chunk(2, dim=0), tuple[Tensor, ...])
    assert_type(ember.where(y > 0, y, 0.0), Tensor)
    assert_type(y.sort(dim=0, descending=True).values, Tensor)
    assert_type(ember.equal(y, y), bool)
    assert_type(ember.nonzero(y > 1), Tensor)
    assert_type(ember.nonzero(y > 1, as_tuple=True), tuple[Tensor, ...])
    assert_type(y.add_(1).mul_(2.0), Tensor)
    assert_type(y.is_floating_point(), bool)
    assert_type(y.to(ember.float64).double().float(), Tensor)
    assert_type(y.to("cpu", ember.float32), Tensor)
    mean: float = float(y.mean())
    first = y[0, 1].item()
    assert_type(first, int | float | bool)
    assert mean == mean and first == first
    assert_type(y.numel(), int)
    assert_type(y.tolist(), Any)
    assert_type(ember.cat([x, x], dim=0), Tensor)
    assert_type(ember.stack((x, x)), Tensor)
    assert_type(ember.zeros(2, 3).new_ones(3), Tensor)
    assert_type(ember.softmax(y, dim=-1), Tensor)
    assert_type(ember.concat([x, x]).absolute().clip(max=1.0), Tensor)  # aliases
    assert_type(y.ndimension(), int)


def autograd() -> float:
    w = ember.ones(3, requires_grad=True)
    assert_type(w.requires_grad, bool)
    loss = (w * 2).pow(2).sum()
    loss.backward()
    grad = w.grad
    assert_type(grad, Tensor | None)
    assert grad is not None
    with ember.no_grad():
        w.sub_(grad, alpha=0.1)
    return float(loss)


def train(steps: int = 3) -> float:
    ember.manual_seed(0)
    model = MLP(3, 8, 2)
    opt = optim.SGD(model.parameters(), lr=0.1)
    # ember.nn builds part of its __all__ in a loop, which type checkers cannot follow: its
    # losses and most layers are invisible to them (strict mypy flags this ignore once fixed)
    loss_fn = nn.CrossEntropyLoss()  # type: ignore[attr-defined]
    x = ember.randn(16, 3)
    target = ember.randint(0, 2, (16,))
    loss = ember.zeros(())
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(x), target)
        loss.backward()
        opt.step()
    model.eval()
    with ember.no_grad():
        logits: Tensor = model(x)
        accuracy = (logits.argmax(dim=1) == target).float().mean()
    assert_type(accuracy, Tensor)
    return float(loss)


def main() -> None:
    tensors()
    autograd()
    train()


if __name__ == "__main__":
    main()
