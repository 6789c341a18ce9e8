"""``AdaptiveLogSoftmaxWithLoss`` (``torch.nn.modules.adaptive``)."""

from __future__ import annotations

import itertools
from collections import namedtuple
from collections.abc import Sequence

import ember
from ember import Tensor

from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


def _check_cutoffs(cutoffs: list, n_classes: int) -> None:
    if len(cutoffs) == 0:
        raise ValueError("cutoffs should be a sequence of length larger than 0")
    if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
        raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in "
                         "an increasing order, where each value is between 1 and n_classes-1")


class AdaptiveLogSoftmaxWithLoss(Module):
    """Efficient softmax approximation (Grave et al., 2016) for many classes.

    The classes, sorted by decreasing frequency, are split at ``cutoffs``: the first
    ``cutoffs[0]`` (the shortlist) and one token per further cluster form the ``head``
    (a ``Linear``); the classes of cluster ``i`` get a two-layer projection in ``tail[i]``
    whose hidden size is ``in_features // div_value ** (i + 1)``.

    ``forward(input, target)`` takes ``(N, in_features)`` and ``(N,)`` (or ``(in_features,)``
    and ``()``) and returns ``_ASMoutput(output, loss)``: each target's log-probability and
    their negative mean. ``log_prob(input)`` gives the full ``(N, n_classes)`` distribution
    and ``predict(input)`` the most likely class of each row.
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int],
                 div_value: float = 4.0, head_bias: bool = False, device=None,
                 dtype=None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        cutoffs = list(cutoffs)
        _check_cutoffs(cutoffs, n_classes)
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(self.in_features, self.head_size, bias=self.head_bias,
                           **factory_kwargs)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(self.in_features // (self.div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(
                Linear(self.in_features, hsz, bias=False, **factory_kwargs),
                Linear(hsz, osz, bias=False, **factory_kwargs)))

    def reset_parameters(self) -> None:
        """Re-initialise the head and every tail projection as their ``Linear`` layers do."""
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def _batched(self, input: Tensor, target: Tensor):
        """``input`` and ``target`` with a batch dim, PyTorch's shape errors."""
        if target.dim() == 1:
            if input.size(0) != target.size(0):
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {input.size()}")
            return input, target
        if target.dim() == 0:
            if input.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {input.size()}")
            return input.unsqueeze(0), target.unsqueeze(0)
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        input, target = self._batched(input_, target_)
        if target.numel() and (int(target.min()) < 0 or int(target.max()) >= self.n_classes):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{target.min().item()}, "
                               f"{target.max().item()}] were found. ")
        output = input.new_zeros(target.size(0))
        head_index = target  # each row's column of the head: its class, or its cluster
        for i, (low, high) in enumerate(itertools.pairwise(self.cutoffs)):
            rows = ((target >= low) & (target < high)).nonzero().squeeze(1)
            if rows.numel() == 0:
                continue
            head_index = head_index.index_fill(0, rows, self.shortlist_size + i)
            cluster_logprob = F.log_softmax(self.tail[i](input.index_select(0, rows)), dim=1)
            relative = target.index_select(0, rows) - low
            local = cluster_logprob.gather(1, relative.unsqueeze(1)).squeeze(1)
            output = output.index_copy(0, rows, local)
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + head_logprob.gather(1, head_index.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        if target_.dim() == 0:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        """The log of the full distribution, from ``input`` and ``self.head(input)``."""
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            cluster = self.shortlist_size + i
            parts.append(cluster_logprob + head_logprob[:, cluster:cluster + 1])
        return ember.cat(parts, dim=1)

    def log_prob(self, input: Tensor) -> Tensor:
        """Log-probabilities of every class, ``(N, n_classes)``."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row of ``input``; the tail clusters are evaluated
        only for the rows whose best head entry is a cluster."""
        head_output = self.head(input)
        output = ember.argmax(head_output, dim=1)
        not_in_shortlist = output >= self.shortlist_size
        if not bool(not_in_shortlist.any()):
            return output
        if bool(not_in_shortlist.all()):
            return ember.argmax(self._get_full_log_prob(input, head_output), dim=1)
        log_prob = self._get_full_log_prob(input[not_in_shortlist],
                                           head_output[not_in_shortlist])
        output[not_in_shortlist] = ember.argmax(log_prob, dim=1)
        return output
