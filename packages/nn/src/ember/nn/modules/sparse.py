"""``Embedding`` and ``EmbeddingBag`` (``torch.nn.modules.sparse``)."""

from __future__ import annotations

import ember
from ember import Tensor
from ember.ops.nn_misc import check_padding_idx

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module
from .utils import _options_repr

__all__ = ["Embedding", "EmbeddingBag"]


def _init_table(module: Module, num_embeddings: int, embedding_dim: int, padding_idx,
                max_norm, norm_type: float, scale_grad_by_freq: bool, _weight,
                requires_grad: bool, device, dtype) -> None:
    """What ``Embedding`` and ``EmbeddingBag`` share: the lookup options and ``weight``, given
    (``_weight``) or allocated and initialized."""
    module.num_embeddings = num_embeddings
    module.embedding_dim = embedding_dim
    module.padding_idx = check_padding_idx(padding_idx, num_embeddings)
    module.max_norm = max_norm
    module.norm_type = norm_type
    module.scale_grad_by_freq = scale_grad_by_freq
    if _weight is None:
        module.weight = Parameter(ember.empty((num_embeddings, embedding_dim), device=device,
                                              dtype=dtype), requires_grad=requires_grad)
        module.reset_parameters()
    else:
        assert list(_weight.shape) == [num_embeddings, embedding_dim], \
            "Shape of weight does not match num_embeddings and embedding_dim"
        module.weight = Parameter(_weight, requires_grad=requires_grad)


def _lookup_options(module: Module) -> tuple:
    """The ``extra_repr`` options of the lookup itself (see ``_options_repr``)."""
    return ((", max_norm={max_norm}", module.max_norm is not None),
            (", norm_type={norm_type}", module.norm_type != 2),
            (", scale_grad_by_freq={scale_grad_by_freq}", module.scale_grad_by_freq is not False))


def _pretrained_shape(embeddings: Tensor) -> tuple:
    """``(num_embeddings, embedding_dim)`` of a ``from_pretrained`` table."""
    assert embeddings.dim() == 2, "Embeddings parameter is expected to be 2-dimensional"
    return tuple(embeddings.shape)


class Embedding(Module):
    """A lookup table of ``num_embeddings`` vectors of size ``embedding_dim``."""

    __constants__ = ["num_embeddings", "embedding_dim", "padding_idx", "max_norm", "norm_type",
                     "scale_grad_by_freq", "sparse"]

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight: Tensor | None = None, _freeze: bool = False, device=None,
                 dtype=None) -> None:
        super().__init__()
        _init_table(self, num_embeddings, embedding_dim, padding_idx, max_norm, norm_type,
                    scale_grad_by_freq, _weight, not _freeze, device, dtype)
        self.sparse = sparse

    def reset_parameters(self) -> None:
        """N(0, 1) weight, with the ``padding_idx`` row zeroed."""
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            with ember.no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        return _options_repr(self, "{num_embeddings}, {embedding_dim}", (
            (", padding_idx={padding_idx}", self.padding_idx is not None),
            *_lookup_options(self),
            (", sparse=True", self.sparse is not False)))

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        padding_idx: int | None = None, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        """An ``Embedding`` whose weight is the 2-D ``embeddings`` (frozen by default)."""
        rows, cols = _pretrained_shape(embeddings)
        return cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, _freeze=freeze,
                   padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings, without the intermediate lookups."""

    __constants__ = ["num_embeddings", "embedding_dim", "max_norm", "norm_type",
                     "scale_grad_by_freq", "mode", "sparse", "include_last_offset",
                     "padding_idx"]

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight: Tensor | None = None,
                 include_last_offset: bool = False, padding_idx: int | None = None,
                 device=None, dtype=None) -> None:
        super().__init__()
        if padding_idx is not None:
            # EmbeddingBag's own wording (lower case, unlike Embedding's "Padding_idx ...").
            assert (padding_idx < num_embeddings if padding_idx > 0
                    else padding_idx >= -num_embeddings), \
                "padding_idx must be within num_embeddings"
        _init_table(self, num_embeddings, embedding_dim, padding_idx, max_norm, norm_type,
                    scale_grad_by_freq, _weight, True, device, dtype)
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    reset_parameters = Embedding.reset_parameters
    _fill_padding_idx_with_zero = Embedding._fill_padding_idx_with_zero

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Tensor:
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        return _options_repr(self, "{num_embeddings}, {embedding_dim}", (
            *_lookup_options(self),
            (", mode={mode!r}", True),
            (", padding_idx={padding_idx}", self.padding_idx is not None)))

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        max_norm: float | None = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, mode: str = "mean",
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: int | None = None) -> EmbeddingBag:
        """An ``EmbeddingBag`` whose weight is the 2-D ``embeddings`` (frozen by default)."""
        rows, cols = _pretrained_shape(embeddings)
        bag = cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings,
                  max_norm=max_norm, norm_type=norm_type,
                  scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse,
                  include_last_offset=include_last_offset, padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag
