"""Activation layers (``torch.nn.modules.activation``, ``MultiheadAttention`` included, as in
PyTorch, so that pickled class paths and isinstance checks written against it work)."""

from __future__ import annotations

import warnings

import ember
from ember import Tensor

from .. import functional as F
from .. import init
from .._mha import _run
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear
from .module import Module

__all__ = ["Threshold", "ReLU", "RReLU", "Hardtanh", "ReLU6", "Sigmoid", "Hardsigmoid", "Tanh",
           "SiLU", "Mish", "Hardswish", "ELU", "CELU", "SELU", "GLU", "GELU", "Hardshrink",
           "LeakyReLU", "LogSigmoid", "Softplus", "Softshrink", "PReLU", "Softsign",
           "Tanhshrink", "Softmin", "Softmax", "Softmax2d", "LogSoftmax", "MultiheadAttention"]


def _inplace_str(inplace: bool) -> str:
    return ", inplace=True" if inplace else ""


class _Inplace(Module):
    """An activation ``F.<_fn_name>(input, inplace=...)`` whose only option is ``inplace``."""

    __constants__ = ["inplace"]
    _show_inplace = True
    _fn_name: str  # the torch.nn.functional function, looked up at each call

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        fn = getattr(F, self._fn_name)
        return fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace and self._show_inplace else ""


class ReLU(_Inplace):
    """``max(0, x)``."""

    _fn_name = "relu"


class SiLU(_Inplace):
    """``x * sigmoid(x)``."""

    _fn_name = "silu"


class Mish(_Inplace):
    """``x * tanh(softplus(x))``."""

    _fn_name = "mish"


class Hardswish(_Inplace):
    """``x * relu6(x + 3) / 6``."""

    _show_inplace = False
    _fn_name = "hardswish"


class Hardsigmoid(_Inplace):
    """``relu6(x + 3) / 6``."""

    _show_inplace = False
    _fn_name = "hardsigmoid"


class SELU(_Inplace):
    """``scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))`` with SELU's constants."""

    _fn_name = "selu"


class Threshold(Module):
    """``x`` if ``x > threshold`` else ``value``."""

    __constants__ = ["threshold", "value", "inplace"]

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class RReLU(Module):
    """Randomized leaky ReLU: slope ~ U(lower, upper) in training, their mean in eval."""

    __constants__ = ["lower", "upper", "inplace"]

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_str(self.inplace)}"


class Hardtanh(Module):
    """``clamp(x, min_val, max_val)``."""

    __constants__ = ["min_val", "max_val", "inplace"]

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and renamed to `min_val`",
                          FutureWarning, stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to `max_val`",
                          FutureWarning, stacklevel=2)
            max_val = max_value
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError(
                f"max_val ({self.max_val}) must be greater than min_val ({self.min_val})")

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    """``min(max(0, x), 6)``."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class _NoArg(Module):
    """An activation ``F.<_fn_name>(input)`` without options."""

    _fn_name: str  # the torch.nn.functional function, looked up at each call

    def forward(self, input: Tensor) -> Tensor:
        fn = getattr(F, self._fn_name)
        return fn(input)


class Sigmoid(_NoArg):
    """``1 / (1 + exp(-x))``."""

    _fn_name = "sigmoid"


class Tanh(_NoArg):
    """``tanh(x)``."""

    _fn_name = "tanh"


class LogSigmoid(_NoArg):
    """``log(sigmoid(x))``."""

    _fn_name = "logsigmoid"


class Softsign(_NoArg):
    """``x / (1 + |x|)``."""

    _fn_name = "softsign"


class Tanhshrink(_NoArg):
    """``x - tanh(x)``."""

    _fn_name = "tanhshrink"


class _Alpha(Module):
    """``ELU``/``CELU``: ``F.<_fn_name>(input, alpha, inplace)``."""

    __constants__ = ["alpha", "inplace"]
    _fn_name: str  # the torch.nn.functional function, looked up at each call

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        fn = getattr(F, self._fn_name)
        return fn(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class ELU(_Alpha):
    """``x`` if ``x > 0`` else ``alpha * (exp(x) - 1)``."""

    _fn_name = "elu"


class CELU(_Alpha):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    _fn_name = "celu"


class GLU(Module):
    """Gated linear unit: ``a * sigmoid(b)`` with ``a, b`` the halves of ``dim``."""

    __constants__ = ["dim"]

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class GELU(Module):
    """``x * Phi(x)`` (``approximate='tanh'``: the tanh approximation)."""

    __constants__ = ["approximate"]

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class _Shrink(Module):
    """``Hardshrink``/``Softshrink``: ``F.<_fn_name>(input, lambd)``."""

    __constants__ = ["lambd"]
    _fn_name: str  # the torch.nn.functional function, looked up at each call

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        fn = getattr(F, self._fn_name)
        return fn(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Hardshrink(_Shrink):
    """``x`` if ``|x| > lambd`` else 0."""

    _fn_name = "hardshrink"


class Softshrink(_Shrink):
    """``x - sign(x) * lambd`` if ``|x| > lambd`` else 0."""

    _fn_name = "softshrink"


class LeakyReLU(Module):
    """``x`` if ``x >= 0`` else ``negative_slope * x``."""

    __constants__ = ["inplace", "negative_slope"]

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta`` (linear above ``threshold``)."""

    __constants__ = ["beta", "threshold"]

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class PReLU(Module):
    """Leaky ReLU with a learnt slope (one, or one per channel)."""

    __constants__ = ["num_parameters"]

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(ember.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Fill the slopes with ``init``."""
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class _SoftmaxNd(Module):
    """``Softmin``/``Softmax``/``LogSoftmax``: ``F.<_fn_name>(input, dim)`` (warning, as torch, when
    ``dim`` is None)."""

    __constants__ = ["dim"]
    _fn_name: str  # the torch.nn.functional function, looked up at each call

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def forward(self, input: Tensor) -> Tensor:
        fn = getattr(F, self._fn_name)
        return fn(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmin(_SoftmaxNd):
    """``softmax(-x)`` along ``dim``."""

    _fn_name = "softmin"


class Softmax(_SoftmaxNd):
    """``exp(x) / sum(exp(x))`` along ``dim``."""

    _fn_name = "softmax"


class LogSoftmax(_SoftmaxNd):
    """``log(softmax(x))`` along ``dim``."""

    _fn_name = "log_softmax"


class Softmax2d(Module):
    """Softmax over the channels of a ``(N, C, H, W)`` or ``(C, H, W)`` input."""

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D "
                             "instead")
        return F.softmax(input, -3, _stacklevel=5)


class MultiheadAttention(Module):
    """Multi-head attention ``Concat(head_1, ..., head_h) W^O`` with
    ``head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)`` (``torch.nn.MultiheadAttention``).

    Returns ``(attn_output, attn_weights)``; the weights are averaged over heads unless
    ``average_attn_weights=False``, and ``None`` when ``need_weights=False`` (which uses
    ``scaled_dot_product_attention``).
    """

    __constants__ = ["batch_first"]

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim="
                             f"{embed_dim} and num_heads={num_heads} instead")
        factory = {"device": device, "dtype": dtype}
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(ember.empty((embed_dim, embed_dim), **factory))
            self.k_proj_weight = Parameter(ember.empty((embed_dim, self.kdim), **factory))
            self.v_proj_weight = Parameter(ember.empty((embed_dim, self.vdim), **factory))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(ember.empty((3 * embed_dim, embed_dim), **factory))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(ember.empty(3 * embed_dim, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        **factory)
        if add_bias_kv:
            self.bias_k = Parameter(ember.empty((1, 1, embed_dim), **factory))
            self.bias_v = Parameter(ember.empty((1, 1, embed_dim), **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def __setstate__(self, state):
        state.setdefault("_qkv_same_embed_dim", True)
        super().__setstate__(state)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        """Attend ``query`` to ``key``/``value``; see the class docstring."""
        fused = False
        if key_padding_mask is not None or attn_mask is not None:
            for mask in (key_padding_mask, attn_mask):
                if mask is not None and not isinstance(mask, Tensor):
                    raise TypeError("is_floating_point(): argument 'input' (position 1) must "
                                    f"be Tensor, not {type(mask).__name__}")
            fused = (not need_weights
                     and not (attn_mask is not None and attn_mask.is_floating_point())
                     and not (key_padding_mask is not None
                              and key_padding_mask.is_floating_point())
                     and self._fast_path_ok(query, key, value))
        return self._forward(query, key, value, key_padding_mask, need_weights, attn_mask,
                             average_attn_weights, is_causal, fused)

    def _fast_path_ok(self, query, key, value) -> bool:
        """Whether torch would run this self-attention call on its fused inference kernel
        (``torch._native_multi_head_attention``; masks are checked by the caller)."""
        if (self.training or not self.batch_first or query.dim() != 3
                or query is not key or key is not value or self.in_proj_bias is None
                or self.in_proj_weight is None or query.dtype != self.in_proj_weight.dtype
                or query.dtype != self.in_proj_bias.dtype or self.num_heads % 2
                or self.bias_k is not None or self.bias_v is not None or self.add_zero_attn
                or not self._qkv_same_embed_dim or ember.is_autocast_enabled()):
            return False
        return not (ember.is_grad_enabled() and any(
            t is not None and t.requires_grad
            for t in (query, self.in_proj_weight, self.in_proj_bias, self.out_proj.weight,
                      self.out_proj.bias)))

    def _forward(self, query, key, value, key_padding_mask, need_weights, attn_mask,
                 average_attn_weights, is_causal, fused=False):
        """``forward`` without the argument checks. ``fused``: emulate torch's fused
        inference kernel, which takes the mask as given (``is_causal`` is only a hint) and
        whose softmax gives NaN rows where every key is masked (``scaled_dot_product_attention``
        gives zeros there)."""
        separate = not self._qkv_same_embed_dim
        out, weights = _run(query, key, value, self.embed_dim, self.num_heads,
                            self.in_proj_weight, self.in_proj_bias, self.bias_k, self.bias_v,
                            self.add_zero_attn, self.dropout, self.out_proj.weight,
                            self.out_proj.bias, self.training, key_padding_mask,
                            need_weights or fused, attn_mask, separate,
                            self.q_proj_weight if separate else None,
                            self.k_proj_weight if separate else None,
                            self.v_proj_weight if separate else None, None, None,
                            average_attn_weights, is_causal and not fused, self.batch_first)
        return out, (weights if need_weights else None)

    def merge_masks(self, attn_mask, key_padding_mask, query):
        """Combine ``attn_mask`` and ``key_padding_mask`` into one ``(N, H, L, L)`` mask and
        its type (0 = attn_mask, 1 = key_padding_mask, 2 = both/merged), as torch does."""
        mask_type = merged = None
        if key_padding_mask is not None:
            mask_type, merged = 1, key_padding_mask
        if attn_mask is not None:
            batch_size, seq_len, _ = query.shape
            mask_type = 2
            if attn_mask.dim() == 3:
                merged = attn_mask.view(batch_size, -1, seq_len, seq_len)
            else:
                merged = attn_mask.view(1, 1, seq_len, seq_len).expand(
                    batch_size, self.num_heads, -1, -1)
            if key_padding_mask is not None:
                merged = merged + key_padding_mask.view(batch_size, 1, 1, seq_len).expand(
                    -1, self.num_heads, -1, -1)
        return merged, mask_type
