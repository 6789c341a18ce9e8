"""Autocast's cast policy per op and device type: PyTorch's lists (ATen's autocast_mode.cpp),
under Ember's op names. ``registry.install`` copies them onto each ``OpInfo.autocast``.

- ``lower``: run in autocast's lower-precision dtype (float16 or bfloat16);
- ``fp32``: run in float32 (ops whose range or accuracy needs it);
- ``fp32_set_dtype``: run in float32 unless the call passes ``dtype=`` (CUDA's softmax, sum);
- ``promote``: run in the widest floating dtype among the inputs.
Ops on no list run in their inputs' dtypes. Float64 inputs are never cast, as in PyTorch.
On the CPU, softmax and layer_norm follow their input; on CUDA they run in float32.

PyTorch's composite ops (``einsum``, ``tensordot``, ``cov``...) are not on its lists: their
parts are (``bmm``, ``mm``). Ember runs such an op whole, so its policy here is what its parts
give in PyTorch; ``CONDITIONS`` holds the ones whose policy applies to some calls only (an
``einsum`` that contracts nothing runs ``mul``, outside the lists). An op called with
``out=`` is never cast (PyTorch's ``out=`` variants are on no list).
"""

from __future__ import annotations

_CPU_LOWER = (
    "conv1d", "conv2d", "conv3d", "bmm", "mm", "linalg_vecdot", "baddbmm", "addmm", "addbmm",
    "linear", "matmul", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "prelu", "scaled_dot_product_attention",
    # composites of the ops above in PyTorch (bmm, mm, matmul)
    "einsum", "tensordot", "inner", "matrix_power", "linalg_matrix_power", "cov", "corrcoef",
    "affine_grid",
)
_CPU_FP32 = (
    "avg_pool3d", "binary_cross_entropy", "grid_sample", "polar", "prod", "quantile",
    "nanquantile", "stft", "cdist", "trace", "view_as_complex", "cholesky", "cholesky_inverse",
    "cholesky_solve", "inverse", "lu_solve", "orgqr", "ormqr", "pinverse", "max_pool3d",
    "max_unpool2d", "max_unpool3d", "adaptive_avg_pool3d", "mse_loss",
    "cosine_embedding_loss", "nll_loss", "hinge_embedding_loss", "poisson_nll_loss",
    "smooth_l1_loss", "cross_entropy", "l1_loss", "huber_loss", "margin_ranking_loss",
    "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "ctc_loss", "kl_div",
    "multilabel_margin_loss", "binary_cross_entropy_with_logits", "fft_fft", "fft_ifft",
    "fft_fft2", "fft_ifft2", "fft_fftn", "fft_ifftn", "fft_rfft", "fft_irfft", "fft_rfft2",
    "fft_irfft2", "fft_rfftn", "fft_irfftn", "fft_hfft", "fft_ihfft", "linalg_cond",
    "linalg_matrix_rank", "linalg_solve", "linalg_cholesky", "linalg_svdvals",
    "linalg_eigvals", "linalg_eigvalsh", "linalg_inv", "linalg_householder_product",
    "linalg_tensorinv", "linalg_tensorsolve", "geqrf", "qr", "svd", "triangular_solve",
    "fractional_max_pool2d", "fractional_max_pool3d", "adaptive_max_pool3d", "linalg_qr",
    "linalg_cholesky_ex", "linalg_svd", "linalg_eig", "linalg_eigh", "linalg_lstsq",
    "linalg_inv_ex", "lu",
    # reflection_pad1d/2d and replication_pad1d/2d/3d: ``pad`` with those modes (CONDITIONS)
    "pad",
)
_CPU_PROMOTE = ("stack", "cat", "index_copy")

_CUDA_LOWER = (
    "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "prelu", "addmm", "addmv", "addr", "matmul", "einsum", "mm", "mv",
    "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm", "chain_matmul", "linalg_multi_dot",
    "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "scaled_dot_product_attention",
)
_CUDA_FP32 = (
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
    "reciprocal", "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm", "group_norm",
    "norm", "nuclear_norm", "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss",
    "nll_loss", "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss",
    "mse_loss", "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss",
    "triplet_margin_loss", "multi_margin_loss", "binary_cross_entropy_with_logits", "dist",
    "pdist", "cdist", "renorm", "logsumexp", "upsample_nearest1d", "upsample_nearest2d",
    "upsample_nearest3d", "upsample_bilinear2d", "upsample_trilinear3d", "grid_sample",
    "polar", "prod", "quantile", "nanquantile", "stft", "cross_entropy", "trace",
)
_CUDA_FP32_SET_DTYPE = ("softmax", "log_softmax", "cumprod", "cumsum", "linalg_vector_norm",
                        "linalg_matrix_norm", "sum")
_CUDA_PROMOTE = ("addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "index_put",
                 "scatter_add", "tensordot", "stack", "cat", "index_copy")

POLICIES: dict[str, dict[str, str]] = {}
for _device, _lists in (("cpu", ((_CPU_LOWER, "lower"), (_CPU_FP32, "fp32"),
                                 (_CPU_PROMOTE, "promote"))),
                        ("cuda", ((_CUDA_LOWER, "lower"), (_CUDA_FP32, "fp32"),
                                  (_CUDA_FP32_SET_DTYPE, "fp32_set_dtype"),
                                  (_CUDA_PROMOTE, "promote")))):
    for _names, _policy in _lists:
        for _name in _names:
            POLICIES.setdefault(_name, {})[_device] = _policy


def _prod(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _arg(args, kwargs, i: int, name: str, default=None):
    return args[i] if len(args) > i else kwargs.get(name, default)


def _einsum_terms(args):
    """``einsum``'s operands as ``(labels, shape)`` (``...`` for an ellipsis) and its output
    labels (None when implicit)."""

    def split(term):
        out = []
        for i, part in enumerate(term.split("...")):
            if i:
                out.append(...)
            out.extend(part)
        return out

    if isinstance(args[0], str):
        ops = args[1:]
        if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
            ops = ops[0]
        lhs, arrow, rhs = args[0].replace(" ", "").partition("->")
        terms = [split(t) for t in lhs.split(",")]
        out = split(rhs) if arrow else None
    else:  # the sublist format: op, [labels], op, [labels], ..., [output labels]
        out = list(args[-1]) if len(args) % 2 else None
        pairs = args[:-1] if len(args) % 2 else args
        ops, terms = pairs[0::2], [list(s) for s in pairs[1::2]]
    return [(t, tuple(o.shape)) for t, o in zip(terms, ops)], out


def _einsum_contracts(args, kwargs) -> bool:
    """Whether ``einsum`` sums over a dimension (of size other than 1) that two operands
    share: PyTorch's einsum runs ``bmm`` then, autocast's lower dtype; else ``mul`` and
    ``sum``, in the inputs' dtypes."""
    try:
        terms, out = _einsum_terms(args)
    except Exception:
        return True
    if len(terms) < 2:
        return False
    where: dict = {}  # label -> operands holding it with a size other than 1
    counts: dict = {}
    for k, (labels, shape) in enumerate(terms):
        n_ell = len(shape) - (len(labels) - 1) if ... in labels else 0
        dims = []
        for lab in labels:
            if lab is ...:
                dims.extend(("...", n_ell - j) for j in range(n_ell))
            else:
                dims.append(lab)
                counts[lab] = counts.get(lab, 0) + 1
        for lab, size in zip(dims, shape):
            if size != 1:
                where.setdefault(lab, set()).add(k)
    if out is None:  # implicit output: the labels seen once, and the ellipsis' dims
        kept = {lab for lab, c in counts.items() if c == 1}
        kept.update(lab for lab in where if isinstance(lab, tuple))
    else:
        kept = {lab for lab in out if lab is not ...}
        if ... in out:
            kept.update(lab for lab in where if isinstance(lab, tuple))
    return any(len(ks) > 1 and lab not in kept for lab, ks in where.items())


def _tensordot_uses_mm(args, kwargs) -> bool:
    """Whether ``tensordot`` runs ``mm`` in PyTorch: unless both sides keep one element, or
    the inputs' dtypes differ (its error, before any cast)."""
    try:
        a, b = _arg(args, kwargs, 0, "a"), _arg(args, kwargs, 1, "b")
        if a.dtype != b.dtype:
            return False
        dims = _arg(args, kwargs, 2, "dims", 2)
        if isinstance(dims, (list, tuple)):
            da = {d % a.ndim for d in (dims[0] if isinstance(dims[0], (list, tuple))
                                       else [dims[0]])}
            db = {d % b.ndim for d in (dims[1] if isinstance(dims[1], (list, tuple))
                                       else [dims[1]])}
        else:
            n = int(dims)
            da, db = set(range(a.ndim - n, a.ndim)), set(range(n))
        free_a = _prod(s for i, s in enumerate(a.shape) if i not in da)
        free_b = _prod(s for i, s in enumerate(b.shape) if i not in db)
        return not (free_a == 1 and free_b == 1)
    except Exception:
        return True


def _inner_uses_mm(args, kwargs) -> bool:
    """``inner``: ``mul`` for a 0-dim side, else ``tensordot`` over the last dims."""
    try:
        a, b = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "other")
        if a.ndim == 0 or b.ndim == 0:
            return False
        return not (_prod(a.shape[:-1]) == 1 and _prod(b.shape[:-1]) == 1)
    except Exception:
        return True


def _matrix_power_multiplies(args, kwargs) -> bool:
    """``matrix_power`` multiplies for ``n >= 2`` (0: eye, 1: a copy). A negative ``n``
    inverts first, in float32 (PyTorch then multiplies in the lower dtype; Ember's inverse has
    no lower-precision kernel, so the call keeps float32)."""
    try:
        return int(_arg(args, kwargs, 1, "n")) >= 2
    except Exception:
        return True


def _pad_kernel_on_fp32_list(args, kwargs) -> bool:
    """``pad`` runs reflection_pad1d/2d or replication_pad1d/2d/3d (PyTorch's CPU fp32 list;
    reflection_pad3d, constant and circular padding are on no list)."""
    mode = _arg(args, kwargs, 2, "mode", "constant")
    if mode == "replicate":
        return True
    if mode == "reflect":
        pad = _arg(args, kwargs, 1, "pad", ())
        return len(pad) // 2 in (1, 2)
    return False


#: op -> device type -> whether its policy there applies to a call, ``(args, kwargs) -> bool``
CONDITIONS = {name: {"cpu": fn} for name, fn in (
    ("einsum", _einsum_contracts), ("tensordot", _tensordot_uses_mm), ("inner", _inner_uses_mm),
    ("matrix_power", _matrix_power_multiplies), ("linalg_matrix_power", _matrix_power_multiplies),
    ("pad", _pad_kernel_on_fp32_list))}

#: ops that refuse to run under CUDA autocast (PyTorch's message)
BANNED = {"binary_cross_entropy": (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional."
    "binary_cross_entropy_with_logits\nor torch.nn.BCEWithLogitsLoss.  "
    "binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast.")}
