"""SparseAdam, like ``torch.optim.SparseAdam``, and its functional form ``sparse_adam``."""

from __future__ import annotations

import math

import ember
from ember import Tensor

from .optimizer import Optimizer

__all__ = ["SparseAdam", "sparse_adam"]


class SparseAdam(Optimizer):
    """Adam masked to the stored elements of sparse gradients (``nn.Embedding(sparse=True)``):
    the moments and the parameter change only where the gradient has values. Dense parameters,
    sparse gradients. Per-parameter state: ``step`` (an int, as PyTorch's), ``exp_avg``,
    ``exp_avg_sq``."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize})
        sparse_params, complex_params = [], []
        for index, group in enumerate(self.param_groups):
            for d_index, p in enumerate(group["params"]):
                if p.is_sparse:
                    sparse_params.append([index, d_index])
                if p.is_complex():
                    complex_params.append([index, d_index])
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires "
                             f"dense parameter tensors")
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not "
                             f"support complex parameters")

    def _step_group(self, group) -> None:
        params, grads, exp_avgs, exp_avg_sqs, steps = [], [], [], [], []
        for p in group["params"]:
            g = p.grad
            if g is None:
                continue
            if not g.is_sparse:
                raise RuntimeError("SparseAdam does not support dense gradients, please "
                                   "consider Adam instead")
            state = self.state[p]
            if len(state) == 0:
                state["step"] = 0
                state["exp_avg"] = ember.zeros_like(p)
                state["exp_avg_sq"] = ember.zeros_like(p)
            state["step"] += 1
            params.append(p)
            grads.append(g)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            steps.append(state["step"])
        beta1, beta2 = group["betas"]
        lr = group["lr"]
        sparse_adam(params, grads, exp_avgs, exp_avg_sqs, steps, eps=group["eps"], beta1=beta1,
                    beta2=beta2, lr=float(lr) if isinstance(lr, Tensor) else lr,
                    maximize=group["maximize"])


def sparse_adam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
                exp_avg_sqs: list[Tensor], state_steps: list[int], *, eps: float, beta1: float,
                beta2: float, lr: float, maximize: bool) -> None:
    """Functional API that performs SparseAdam algorithm computation (see
    :class:`SparseAdam`): ``params``, ``exp_avgs`` and ``exp_avg_sqs`` are updated in place,
    only at the (coalesced) indices of each sparse gradient."""
    with ember.no_grad():
        for i, param in enumerate(params):
            grad = -grads[i] if maximize else grads[i]
            grad = grad.coalesce()  # the update is non-linear: indices must be unique
            values = grad._values()
            if values.numel() == 0:
                continue
            where = tuple(grad._indices())  # one index tensor per sparse dim
            exp_avg, exp_avg_sq = exp_avgs[i], exp_avg_sqs[i]
            # old <- b * old + (1 - b) * new, at the gradient's indices only
            old_avg = exp_avg[where]
            avg_update = (values - old_avg) * (1 - beta1)
            exp_avg.index_put_(where, avg_update, accumulate=True)
            old_sq = exp_avg_sq[where]
            sq_update = (values * values - old_sq) * (1 - beta2)
            exp_avg_sq.index_put_(where, sq_update, accumulate=True)
            numer = avg_update + old_avg
            denom = (sq_update + old_sq).sqrt() + eps
            step = state_steps[i]
            step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
            param.index_put_(where, numer / denom * -step_size, accumulate=True)
