"""``MultiheadAttention`` and the Transformer layers (``torch.nn.modules.transformer``).

Submodule and parameter names are torch's, so torch ``state_dict``s load unchanged. Ember
has no nested tensors and no fused inference kernels: every call takes torch's reference
("slow") path, which is also the path torch takes whenever gradients are recorded.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable

import ember
from ember import Tensor

from .. import functional as F
from .. import init
from .._mha import _canonical_mask, _none_or_dtype
from .activation import MultiheadAttention
from .container import ModuleList
from .linear import Linear
from .module import Module

__all__ = ["MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerDecoder",
           "TransformerEncoderLayer", "TransformerDecoderLayer"]


def _layers():
    """``Dropout`` and ``LayerNorm``, imported when first needed."""
    from .dropout import Dropout
    from .normalization import LayerNorm

    return Dropout, LayerNorm


def _functional(name: str) -> Callable:
    fn = getattr(F, name, None)
    if fn is None:  # a kernel the functional module does not re-export (yet)
        from ember.ops.registry import OPS

        fn = OPS[name].fn
    return fn


def _generate_square_subsequent_mask(sz, device=None, dtype=None) -> Tensor:
    return ember.triu(ember.full((sz, sz), float("-inf"), dtype=dtype, device=device),
                      diagonal=1)


def _get_seq_len(src: Tensor, batch_first: bool) -> int:
    if src.dim() == 2:
        return src.shape[0]
    return src.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask, is_causal=None, size=None) -> bool:
    """``is_causal`` when given, else whether ``mask`` equals the square subsequent mask."""
    make_causal = is_causal is True
    # while a graph is captured the mask is applied as given (the same values): the test reads
    # the mask's values, which a graph cannot bake in
    if is_causal is None and mask is not None and not ember.jit.is_tracing():
        sz = size if size is not None else mask.size(-2)
        causal = _generate_square_subsequent_mask(sz, device=mask.device, dtype=mask.dtype)
        make_causal = mask.shape == causal.shape and bool((mask == causal).all())
    return make_causal


def _get_clones(module, n):
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _get_activation_fn(activation: str) -> Callable[[Tensor], Tensor]:
    if activation == "relu":
        return _functional("relu")
    if activation == "gelu":
        return _functional("gelu")
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _activation_kind(activation) -> int:
    """torch's ``activation_relu_or_gelu``: 1 for relu, 2 for gelu, 0 otherwise."""
    from .. import modules

    relu_cls, gelu_cls = getattr(modules, "ReLU", ()), getattr(modules, "GELU", ())
    if activation is _functional("relu") or (relu_cls and isinstance(activation, relu_cls)):
        return 1
    if activation is _functional("gelu") or (gelu_cls and isinstance(activation, gelu_cls)):
        return 2
    return 0


class _TransformerLayer(Module):
    """What the encoder and decoder layers share: self-attention (``self_attn``), for the
    decoder attention over the encoder's memory (``multihead_attn``), the feed-forward
    network (``linear1``, ``dropout``, ``linear2``), and a ``LayerNorm`` (``norm<i>``) and a
    ``Dropout`` (``dropout<i>``) per block, registered in torch's order."""

    __constants__ = ["norm_first"]
    #: residual blocks, each with its norm and dropout: self-attention, (for the decoder)
    #: attention over the memory, feed-forward
    _blocks = 2

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        Dropout, LayerNorm = _layers()
        factory = {"device": device, "dtype": dtype}
        super().__init__()

        def attention():
            return MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                      batch_first=batch_first, **factory)

        self.self_attn = attention()
        if self._blocks == 3:
            self.multihead_attn = attention()
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        for i in range(1, self._blocks + 1):
            setattr(self, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias,
                                                **factory))
        for i in range(1, self._blocks + 1):
            setattr(self, f"dropout{i}", Dropout(dropout))
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        self._set_activation(activation)

    def _set_activation(self, activation: Callable[[Tensor], Tensor]) -> None:
        self.activation = activation

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False, fused=False):
        if fused:  # torch's fused layer kernel (no hooks are attached, see _fast_path_ok)
            x = self.self_attn._forward(x, x, x, key_padding_mask, False, attn_mask, True,
                                        is_causal, fused=True)[0]
        else:
            x = self.self_attn(x, x, x, attn_mask=attn_mask,
                               key_padding_mask=key_padding_mask, need_weights=False,
                               is_causal=is_causal)[0]
        return self.dropout1(x)


class TransformerEncoderLayer(_TransformerLayer):
    """Self-attention then a feed-forward network, each with a residual connection and
    ``LayerNorm`` (after, or before when ``norm_first``) (``torch.nn.TransformerEncoderLayer``).
    """

    def _set_activation(self, activation: Callable[[Tensor], Tensor]) -> None:
        self.activation_relu_or_gelu = _activation_kind(activation)
        self.activation = activation

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "activation"):
            self.activation = _functional("relu")

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        """Pass ``src`` through the layer."""
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               _none_or_dtype(src_mask), "src_mask", src.dtype)
        src_mask = _canonical_mask(src_mask, "src_mask", None, "", src.dtype, check_other=False)
        fused = False
        if (src_mask is not None or src_key_padding_mask is not None) and not self.training:
            fused = self._fast_path_ok(src)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal,
                                   fused)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal,
                                              fused))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _fast_path_ok(self, src) -> bool:
        """Whether torch would run this (inference) call on its fused layer kernel
        (``torch._transformer_encoder_layer_fwd``), whose attention softmax gives NaN rows
        where every key is masked."""
        attn = self.self_attn
        if (src.dim() != 3 or self.training or not attn.batch_first
                or attn.in_proj_bias is None or not attn._qkv_same_embed_dim
                or not self.activation_relu_or_gelu or self.norm1.eps != self.norm2.eps
                or attn.num_heads % 2 or ember.is_autocast_enabled()):
            return False
        if any(len(getattr(m, "_forward_hooks", {})) + len(getattr(m, "_forward_pre_hooks", {}))
               for m in self.modules()):
            return False
        return not (ember.is_grad_enabled() and any(
            t is not None and t.requires_grad
            for t in (src, attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight,
                      attn.out_proj.bias, self.norm1.weight, self.norm1.bias,
                      self.norm2.weight, self.norm2.bias, self.linear1.weight,
                      self.linear1.bias, self.linear2.weight, self.linear2.bias)))

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerDecoderLayer(_TransformerLayer):
    """Self-attention, attention over the encoder's ``memory``, then a feed-forward network,
    each with a residual connection and ``LayerNorm`` (``torch.nn.TransformerDecoderLayer``).
    """

    _blocks = 3

    def __setstate__(self, state):
        state.setdefault("activation", _functional("relu"))
        super().__setstate__(state)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        """Pass ``tgt`` (attending to ``memory``) through the layer."""
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


#: torch warns once per process (TORCH_WARN_ONCE) when it first builds a nested tensor
_nested_warned = False


def _warn_nested_once() -> None:
    global _nested_warned
    if not _nested_warned:
        _nested_warned = True
        warnings.warn("The PyTorch API of nested tensors is in prototype stage and will change "
                      "in the near future. We recommend specifying layout=torch.jagged when "
                      "constructing a nested tensor, as this layout receives active "
                      "development, has better operator coverage, and works with "
                      "torch.compile. (Triggered internally at "
                      "/__w/pytorch/pytorch/aten/src/ATen/NestedTensorImpl.cpp:177.)",
                      UserWarning, stacklevel=3)


def _why_no_nested_tensor(layer) -> str:
    """torch's reason for not using nested tensors with ``layer`` ('' when it would)."""
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    if layer.norm_first:
        return f"{name}.norm_first was True"
    if not layer.self_attn.batch_first:
        return (f"{name}.self_attn.batch_first was not True(use batch_first for better "
                "inference performance)")
    if not layer.self_attn._qkv_same_embed_dim:
        return f"{name}.self_attn._qkv_same_embed_dim was not True"
    if layer.self_attn.in_proj_bias is None:
        return f"{name}.self_attn was passed bias=False"
    if not layer.activation_relu_or_gelu:
        return f"{name}.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return f"{name}.norm1.eps was not equal to {name}.norm2.eps"
    if layer.self_attn.num_heads % 2 == 1:
        return f"{name}.self_attn.num_heads is odd"
    return ""


class TransformerEncoder(Module):
    """A stack of ``num_layers`` deep copies of ``encoder_layer``, then ``norm`` if given
    (``torch.nn.TransformerEncoder``). ``enable_nested_tensor`` is accepted (and warns as
    torch does) but Ember has no nested tensors; ``mask_check`` is accepted."""

    __constants__ = ["norm"]

    def __init__(self, encoder_layer, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why_not = _why_no_nested_tensor(encoder_layer)
        if enable_nested_tensor and why_not:
            warnings.warn("enable_nested_tensor is True, but self.use_nested_tensor is False "
                          f"because {why_not}", stacklevel=2)
            self.use_nested_tensor = False

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        """Pass ``src`` through every layer (``is_causal=None`` detects a causal ``mask``)."""
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               _none_or_dtype(mask), "mask", src.dtype)
        mask = _canonical_mask(mask, "mask", None, "", src.dtype, check_other=False)
        padded = self._nested_padding(src, mask, src_key_padding_mask)
        if padded is not None:
            _warn_nested_once()
            # the nested tensor keeps the first (number of unpadded) positions of each row
            src_key_padding_mask = _canonical_mask(padded, "src_key_padding_mask", None, "",
                                                   src.dtype, check_other=False)
        seq_len = _get_seq_len(src, self.layers[0].self_attn.batch_first)
        is_causal = _detect_is_causal_mask(mask, is_causal, seq_len)
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=is_causal,
                         src_key_padding_mask=src_key_padding_mask)
        if padded is not None:  # torch's nested-tensor path returns zeros at padded positions
            output = output.masked_fill(padded.unsqueeze(-1), 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output


    def _nested_padding(self, src, mask, key_padding_mask):
        """The padded positions (bool) where torch would run this call on nested tensors
        (inference, batch-first, left-aligned padding only), else ``None``."""
        first = self.layers[0]
        if not getattr(self, "use_nested_tensor", False) or first.training or src.dim() != 3 \
                or key_padding_mask is None or mask is not None:
            return None
        padded = key_padding_mask != 0
        if getattr(self, "mask_check", True):
            pd = padded._data
            if (pd[:, 1:] < pd[:, :-1]).any():  # a kept position after a padded one
                return None
        if ember.is_grad_enabled() and any(
                p is not None and p.requires_grad
                for p in (src, *first.parameters())):
            return None
        # torch reads only the number of kept positions of each row (left-aligned)
        kept = (~padded).sum(1, keepdim=True)
        return ember.arange(padded.shape[1], device=padded.device) >= kept


class TransformerDecoder(Module):
    """A stack of ``num_layers`` deep copies of ``decoder_layer``, then ``norm`` if given
    (``torch.nn.TransformerDecoder``)."""

    __constants__ = ["norm"]

    def __init__(self, decoder_layer, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        """Pass ``tgt`` through every layer, each attending to ``memory``."""
        seq_len = _get_seq_len(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        output = tgt
        for mod in self.layers:
            output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                         tgt_key_padding_mask=tgt_key_padding_mask,
                         memory_key_padding_mask=memory_key_padding_mask,
                         tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """The encoder-decoder Transformer of "Attention Is All You Need"
    (``torch.nn.Transformer``)."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = F.relu,
                 custom_encoder=None, custom_decoder=None, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None) -> None:
        _, LayerNorm = _layers()
        factory = {"device": device, "dtype": dtype}
        super().__init__()

        def stack(custom, stack_cls, layer_cls, num_layers):
            """``custom``, else ``num_layers`` ``layer_cls`` layers and a final norm."""
            if custom is not None:
                return custom
            layer = layer_cls(d_model, nhead, dim_feedforward, dropout, activation,
                              layer_norm_eps, batch_first, norm_first, bias, **factory)
            return stack_cls(layer, num_layers,
                             LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))

        self.encoder = stack(custom_encoder, TransformerEncoder, TransformerEncoderLayer,
                             num_encoder_layers)
        self.decoder = stack(custom_decoder, TransformerDecoder, TransformerDecoderLayer,
                             num_decoder_layers)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        """Encode ``src`` and decode ``tgt`` against it."""
        is_batched = src.dim() == 3
        bdim = 0 if self.batch_first else 1
        if is_batched and src.size(bdim) != tgt.size(bdim):
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.size(-1) != self.d_model or tgt.size(-1) != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """A float ``(sz, sz)`` mask: ``-inf`` above the diagonal, ``0`` elsewhere."""
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
