"""BERT (Devlin et al., 2018) with Hugging Face's module tree, config and state_dict names.

``BertModel`` and ``BertForSequenceClassification`` mirror ``transformers``' classes: the
same submodule names (``embeddings.word_embeddings``, ``encoder.layer.N.attention.self.query``,
``pooler.dense``, ...), so a ``model.safetensors`` published for ``transformers`` loads as
it is (:meth:`BertPreTrainedModel.from_pretrained`). Attention runs through
``scaled_dot_product_attention`` with the padding mask as an additive float mask, and with
no mask at all when nothing is padded.
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
import os
import warnings
from typing import Any

import numpy as np

import ember
import ember.nn.functional as F
from ember import Tensor, nn
from ember.ops import api

__all__ = [
    "BaseModelOutputWithPooling",
    "BertConfig",
    "BertForSequenceClassification",
    "BertModel",
    "BertPreTrainedModel",
    "ModelOutput",
    "SequenceClassifierOutput",
    "load_safetensors",
]

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"


def read_json(path: str | os.PathLike) -> dict:
    """The content of a JSON file; a file that is not JSON raises ``ValueError`` naming it."""
    path = os.fspath(path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not a valid JSON file: {exc}") from exc


# -- configuration ----------------------------------------------------------------------------

@dataclasses.dataclass
class BertConfig:
    """BERT's hyperparameters, with the names and defaults of ``transformers.BertConfig``
    (bert-base-uncased). ``from_json_file`` reads a published ``config.json``; keys that
    BERT does not use (``architectures``, ``transformers_version``, ...) are ignored."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    position_embedding_type: str = "absolute"
    classifier_dropout: float | None = None
    num_labels: int = 2
    problem_type: str | None = None

    def __post_init__(self) -> None:
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"The hidden size ({self.hidden_size}) is not a multiple of the "
                             f"number of attention heads ({self.num_attention_heads})")
        if self.position_embedding_type != "absolute":
            raise NotImplementedError(f"position_embedding_type={self.position_embedding_type!r}"
                                      ": only 'absolute' position embeddings are supported")
        if self.hidden_act not in _ACTIVATIONS:
            raise ValueError(f"hidden_act={self.hidden_act!r} is not supported; choose one of "
                             f"{sorted(_ACTIVATIONS)}")

    @classmethod
    def from_dict(cls, config: dict[str, Any], **kwargs) -> BertConfig:
        """A config from a dict (``config.json``'s content); ``kwargs`` override it."""
        values = {**config, **kwargs}
        if "id2label" in values and "num_labels" not in kwargs:
            values["num_labels"] = len(values["id2label"])
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names})

    @classmethod
    def from_json_file(cls, json_file: str | os.PathLike, **kwargs) -> BertConfig:
        """Read a ``config.json``; a file that is not JSON raises naming it."""
        return cls.from_dict(read_json(json_file), **kwargs)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# -- outputs ----------------------------------------------------------------------------------

class ModelOutput:
    """Base of the model outputs, as ``transformers.utils.ModelOutput``: fields by attribute
    (``out.last_hidden_state``), by name (``out["logits"]``) or by position over the fields
    that are not None (``out[0]``, ``out.to_tuple()``)."""

    def to_tuple(self) -> tuple:
        return tuple(v for v in (getattr(self, f.name) for f in dataclasses.fields(self))
                     if v is not None)

    def keys(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self) if getattr(self, f.name) is not None]

    def values(self) -> list:
        return list(self.to_tuple())

    def items(self) -> list[tuple[str, Any]]:
        return list(zip(self.keys(), self.to_tuple(), strict=True))

    def __getitem__(self, key):
        if isinstance(key, str):
            if key not in self.keys():
                raise KeyError(key)
            return getattr(self, key)
        return self.to_tuple()[key]

    def __iter__(self):  # a ModelOutput iterates over its keys, like transformers' (a dict)
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def __contains__(self, key) -> bool:
        return key in self.keys()


@dataclasses.dataclass
class BaseModelOutputWithPooling(ModelOutput):
    """``last_hidden_state`` ``(batch, seq, hidden)`` and ``pooler_output`` ``(batch,
    hidden)``: the first token's state through the pooler's dense layer and tanh (None
    without a pooling layer)."""

    last_hidden_state: Tensor
    pooler_output: Tensor | None = None


@dataclasses.dataclass
class SequenceClassifierOutput(ModelOutput):
    """``loss`` (when labels were given) and ``logits`` ``(batch, num_labels)``."""

    loss: Tensor | None = None
    logits: Tensor | None = None


# -- weights ----------------------------------------------------------------------------------

def _safetensor_errors() -> tuple[type[BaseException], ...]:
    try:  # the parser ember.safetensors is built on (a dependency of ember-core)
        from safetensors import SafetensorError
    except ImportError:  # pragma: no cover
        return (ValueError,)
    return (SafetensorError, ValueError)


def load_safetensors(path: str | os.PathLike) -> dict[str, Tensor]:
    """The tensors of a ``.safetensors`` file; a truncated or corrupt file raises ``OSError``
    naming it (the parser's own error does not)."""
    path = os.fspath(path)
    try:
        return ember.safetensors.load_file(path)
    except _safetensor_errors() as exc:
        raise OSError(f"Unable to load weights from {path}: it is not a complete safetensors "
                      f"file ({exc}). The file is truncated or corrupt: delete it and "
                      "download or copy it again.") from exc


# -- modules ----------------------------------------------------------------------------------

_ACTIVATIONS = {
    "gelu": F.gelu,
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
    "silu": F.silu,
    "swish": F.silu,
    "tanh": ember.tanh,
}


class BertEmbeddings(nn.Module):
    """Word, position and token-type embeddings, summed, then LayerNorm and dropout."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size,
                                            padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings,
                                                config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: Tensor | None = None, token_type_ids: Tensor | None = None,
                position_ids: Tensor | None = None,
                inputs_embeds: Tensor | None = None) -> Tensor:
        if inputs_embeds is None:
            inputs_embeds = self.word_embeddings(input_ids)
        seq_length = inputs_embeds.shape[1]
        # without ids, row 0 and the first positions broadcast: no (batch, seq) gather
        if token_type_ids is None:
            embeddings = inputs_embeds + self.token_type_embeddings.weight[0]
        else:
            embeddings = inputs_embeds + self.token_type_embeddings(token_type_ids)
        if position_ids is None:
            embeddings = embeddings + self.position_embeddings.weight[:seq_length]
        else:
            embeddings = embeddings + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class BertSelfAttention(nn.Module):
    """Multi-head scaled dot-product attention: ``query``, ``key``, ``value`` projections."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)
        self.value = nn.Linear(config.hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def forward(self, hidden_states: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        batch, seq_length = hidden_states.shape[:2]
        heads = (batch, seq_length, self.num_attention_heads, self.attention_head_size)
        # (batch, heads, seq, head_size) views of the projections: no copies
        query = self.query(hidden_states).view(heads).transpose(1, 2)
        key = self.key(hidden_states).view(heads).transpose(1, 2)
        value = self.value(hidden_states).view(heads).transpose(1, 2)
        context = F.scaled_dot_product_attention(
            query, key, value, attn_mask=attention_mask,
            dropout_p=self.dropout.p if self.training else 0.0)
        return context.transpose(1, 2).reshape(batch, seq_length, self.all_head_size)


class BertSelfOutput(nn.Module):
    """The attention's output projection, dropout, residual and LayerNorm."""

    def __init__(self, config: BertConfig, in_features: int | None = None) -> None:
        super().__init__()
        self.dense = nn.Linear(in_features or config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states: Tensor, input_tensor: Tensor) -> Tensor:
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class BertAttention(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, hidden_states: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        return self.output(self.self(hidden_states, attention_mask), hidden_states)


#: elements of the activation computed at once on the CPU without autograd: an activation
#: made of several NumPy passes with temporaries (tanh-approximated gelu, silu) keeps them in
#: cache in blocks of this size
_ACT_BLOCK_ELEMENTS = 1 << 18


#: activations run whole: exact gelu's core kernel already works in cache-sized blocks, relu
#: and tanh are single passes, so blocks of rows here only add a copy back (measured on
#: MiniLM's 2048 x 1536, one thread: gelu 7.0 ms whole, 7.8 in blocks; relu 1.1 / 2.0; tanh
#: 1.2 / 1.8; the tanh-approximated gelu gains from blocks, 6.8 -> 5.0)
_PLAIN_ACTIVATIONS = (F.gelu, F.relu, ember.tanh)


def _activate_in_blocks(act_fn, x: Tensor) -> Tensor:
    """``act_fn(x)`` written over ``x`` (a fresh tensor no graph needs) block of rows by
    block of rows."""
    rows = x.view(-1, x.shape[-1])
    step = max(1, _ACT_BLOCK_ELEMENTS // rows.shape[1])
    for start in range(0, rows.shape[0], step):
        rows[start:start + step] = act_fn(rows[start:start + step])
    return x


def _bias_gelu_inference(dense: nn.Linear, act_fn, x: Tensor) -> Tensor | None:
    """``gelu(dense(x))`` (exact GELU) as ``dense(x)``, then GELU in one native pass over it in
    place (kernels.c's bias-and-GELU kernel with a zero bias: the bias is already in the
    product, as the sums' start where kernels.c's product takes it), when nothing needs a
    graph and all is float32 on the CPU: the same values as the two ops (the same linear, then
    the same GELU kernel), without GELU's fresh 4x-wide output. None otherwise, and whenever
    something records or intercepts ops (export/jit/compile capture, vmap, overrides): the
    in-place pass is not an op they could see."""
    if act_fn is not F.gelu or ember.is_grad_enabled() or x.device.type != "cpu" \
            or dense.bias is None or x.dtype != ember.float32 or type(x) is not Tensor:
        return None
    if ember.jit.is_tracing() or ember.overrides.is_active():
        return None  # a capture, vmap or a __torch_function__ class must see the two ops
    kernel = api.native_kernel("ember_bias_gelu_inplace_f32")
    if kernel is None:
        return None
    y = dense(x)
    yd = api.array(y)
    n = yd.shape[-1]
    bd = np.zeros(n, np.float32)
    if not api.native_arrays(yd) or y.requires_grad:
        return None
    rows = yd.size // n
    base, bias = api.native_address(yd), api.native_address(bd)
    grain = max(1, _ACT_BLOCK_ELEMENTS // n)
    api.parallel_for(0, rows, grain, lambda r0, r1: kernel(base + r0 * n * 4, bias, r1 - r0, n))
    return y


class BertIntermediate(nn.Module):
    """The feed-forward block's expansion and activation (``config.hidden_act``)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = _ACTIVATIONS[config.hidden_act]

    def forward(self, hidden_states: Tensor) -> Tensor:
        fused = _bias_gelu_inference(self.dense, self.intermediate_act_fn, hidden_states)
        if fused is not None:
            return fused
        hidden_states = self.dense(hidden_states)
        if ember.is_grad_enabled() or hidden_states.device.type != "cpu" \
                or hidden_states.numel() <= 2 * _ACT_BLOCK_ELEMENTS \
                or self.intermediate_act_fn in _PLAIN_ACTIVATIONS:
            return self.intermediate_act_fn(hidden_states)
        return _activate_in_blocks(self.intermediate_act_fn, hidden_states)


class BertOutput(BertSelfOutput):
    """The feed-forward block's projection back, dropout, residual and LayerNorm."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__(config, config.intermediate_size)


class BertLayer(nn.Module):
    """One post-LayerNorm transformer encoder layer."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, hidden_states: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        attention_output = self.attention(hidden_states, attention_mask)
        return self.output(self.intermediate(attention_output), attention_output)


class BertEncoder(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(config) for _ in range(config.num_hidden_layers))

    def forward(self, hidden_states: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        for layer in self.layer:
            hidden_states = layer(hidden_states, attention_mask)
        return hidden_states


class BertPooler(nn.Module):
    """The first token's hidden state through a dense layer and tanh."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states: Tensor) -> Tensor:
        return self.activation(self.dense(hidden_states[:, 0]))


# -- models -----------------------------------------------------------------------------------

#: True while :meth:`BertPreTrainedModel.from_pretrained` builds a model
_LOADING_PRETRAINED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "ember_text_bert_loading_pretrained", default=False)


class BertPreTrainedModel(nn.Module):
    """Weight initialisation and :meth:`from_pretrained`, shared by the BERT models.

    ``base_model_prefix`` is the attribute holding the ``BertModel`` in a model with a head,
    so a checkpoint of the bare model loads into one with a head and back, as in
    ``transformers``.
    """

    base_model_prefix = "bert"
    # keys of published checkpoints that are not weights (transformers drops them too)
    _keys_to_ignore_on_load_unexpected = ("embeddings.position_ids",)

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config

    def _init_weights(self, module: nn.Module) -> None:
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=std)
            if module.padding_idx is not None:
                with ember.no_grad():
                    module.weight[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    def post_init(self) -> None:
        """Initialise every weight as ``transformers`` does (normal, std
        ``initializer_range``; zero biases; LayerNorm ones and zeros), unless the model is
        being built by :meth:`from_pretrained`, which overwrites them."""
        if not _LOADING_PRETRAINED.get():
            self.apply(self._init_weights)

    def _adapt_keys(self, state_dict: dict[str, Tensor]) -> dict[str, Tensor]:
        """Drop the ignored keys and add or strip ``base_model_prefix`` so that a checkpoint
        of the bare model loads into a model with a head, and back."""
        prefix = self.base_model_prefix + "."
        ignored = tuple(self._keys_to_ignore_on_load_unexpected)
        state_dict = {k: v for k, v in state_dict.items()
                      if not k.removeprefix(prefix).endswith(ignored)}
        own = self.state_dict().keys()
        has_prefix = any(k.startswith(prefix) for k in state_dict)
        wants_prefix = any(k.startswith(prefix) for k in own)
        if wants_prefix and not has_prefix:
            return {prefix + k: v for k, v in state_dict.items()}
        if has_prefix and not wants_prefix:
            return {k.removeprefix(prefix): v for k, v in state_dict.items()
                    if k.startswith(prefix)}
        return state_dict

    def load_pretrained_weights(self, path: str | os.PathLike) -> None:
        """Load a published ``model.safetensors`` (Hugging Face's names) into this model.
        Weights the file lacks (a new classifier head) are initialised as ``transformers``
        does and named in a warning, as are the file's weights that the model lacks."""
        state_dict = self._adapt_keys(load_safetensors(path))
        missing, unexpected = self.load_state_dict(state_dict, strict=False)
        for name in missing:
            self._init_weights(self.get_submodule(name.rpartition(".")[0]))
        if missing or unexpected:
            warnings.warn(f"{type(self).__name__} loaded from {os.fspath(path)}: newly "
                          f"initialized weights {sorted(missing)}; unused weights "
                          f"{sorted(unexpected)}", stacklevel=2)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str | os.PathLike,
                        **kwargs):
        """The model of a local directory holding ``config.json`` and ``model.safetensors``
        as published on the Hugging Face Hub; ``kwargs`` override the config (for example
        ``num_labels``). Returned in eval mode, like ``transformers``."""
        directory = os.fspath(pretrained_model_name_or_path)
        config = BertConfig.from_json_file(os.path.join(directory, CONFIG_NAME), **kwargs)
        token = _LOADING_PRETRAINED.set(True)  # skip an initialisation the file replaces
        try:
            model = cls(config)
        finally:
            _LOADING_PRETRAINED.reset(token)
        model.load_pretrained_weights(os.path.join(directory, WEIGHTS_NAME))
        return model.eval()


def _additive_padding_mask(attention_mask: Tensor, dtype) -> Tensor | None:
    """``(batch, 1, 1, seq)``: 0 where attended, the dtype's minimum where padded; None when
    nothing is padded (attention then skips the mask)."""
    # (while a graph is captured the mask is always applied: the shortcut reads the mask's
    # values, which a graph cannot bake in)
    if not ember.jit.is_tracing() and bool(attention_mask.all()):
        return None
    mask = attention_mask[:, None, None, :].to(dtype)
    return (1.0 - mask) * ember.finfo(dtype).min


class BertModel(BertPreTrainedModel):
    """The BERT encoder (``transformers.BertModel``): embeddings, ``num_hidden_layers``
    transformer layers and, with ``add_pooling_layer``, the pooler.

    ``forward(input_ids, attention_mask=None, token_type_ids=None, *, position_ids=None,
    inputs_embeds=None)`` returns a :class:`BaseModelOutputWithPooling`. ``attention_mask``
    is 1 for tokens and 0 for padding (no mask: every token attends to every token). A
    sequence longer than ``config.max_position_embeddings`` raises ``ValueError`` naming the
    limit: truncate it first (the tokenizer's ``truncation=True``).
    """

    def __init__(self, config: BertConfig, add_pooling_layer: bool = True) -> None:
        super().__init__(config)
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings.word_embeddings = value

    def _check_length(self, seq_length: int) -> None:
        limit = self.config.max_position_embeddings
        if seq_length > limit:
            raise ValueError(f"Input sequence length {seq_length} is longer than the model's "
                             f"maximum of {limit} positions (max_position_embeddings="
                             f"{limit}); truncate the input, e.g. with the tokenizer's "
                             f"truncation=True, max_length={limit}")

    def forward(self, input_ids: Tensor | None = None, attention_mask: Tensor | None = None,
                token_type_ids: Tensor | None = None, *, position_ids: Tensor | None = None,
                inputs_embeds: Tensor | None = None) -> BaseModelOutputWithPooling:
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("You have to specify either input_ids or inputs_embeds")
        shape = input_ids.shape if input_ids is not None else inputs_embeds.shape[:-1]
        if len(shape) != 2:
            raise ValueError(f"input_ids must be (batch_size, sequence_length), got shape "
                             f"{tuple(shape)}")
        if position_ids is None:
            self._check_length(shape[1])
        embedding_output = self.embeddings(input_ids, token_type_ids, position_ids,
                                           inputs_embeds)
        mask = None if attention_mask is None else \
            _additive_padding_mask(attention_mask, embedding_output.dtype)
        sequence_output = self.encoder(embedding_output, mask)
        pooled_output = self.pooler(sequence_output) if self.pooler is not None else None
        return BaseModelOutputWithPooling(sequence_output, pooled_output)


class BertForSequenceClassification(BertPreTrainedModel):
    """BERT with a linear head on the pooled output
    (``transformers.BertForSequenceClassification``): ``config.num_labels`` logits.

    With ``labels`` the loss follows ``config.problem_type`` (inferred when None, as in
    ``transformers``): mean squared error for one label, cross entropy for integer class
    labels, binary cross entropy with logits for multi-label float targets.
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.bert = BertModel(config)
        dropout = config.classifier_dropout
        self.dropout = nn.Dropout(config.hidden_dropout_prob if dropout is None else dropout)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self._init_weights(self.classifier)  # ``bert`` initialised itself

    def forward(self, input_ids: Tensor | None = None, attention_mask: Tensor | None = None,
                token_type_ids: Tensor | None = None, *, position_ids: Tensor | None = None,
                inputs_embeds: Tensor | None = None,
                labels: Tensor | None = None) -> SequenceClassifierOutput:
        outputs = self.bert(input_ids, attention_mask, token_type_ids,
                            position_ids=position_ids, inputs_embeds=inputs_embeds)
        logits = self.classifier(self.dropout(outputs.pooler_output))
        loss = None if labels is None else self._loss(logits, labels)
        return SequenceClassifierOutput(loss=loss, logits=logits)

    def _problem_type(self, labels: Tensor) -> str:
        if self.config.problem_type is not None:
            return self.config.problem_type
        if self.num_labels == 1:
            return "regression"
        if not labels.dtype.is_floating_point:
            return "single_label_classification"
        return "multi_label_classification"

    def _loss(self, logits: Tensor, labels: Tensor) -> Tensor:
        problem_type = self._problem_type(labels)
        if problem_type == "regression":
            if self.num_labels == 1:
                return F.mse_loss(logits.squeeze(), labels.squeeze().to(logits.dtype))
            return F.mse_loss(logits, labels.to(logits.dtype))
        if problem_type == "single_label_classification":
            return F.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1))
        if problem_type == "multi_label_classification":
            return F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
        raise ValueError(f"Unknown problem_type {problem_type!r}: expected 'regression', "
                         "'single_label_classification' or 'multi_label_classification'")
