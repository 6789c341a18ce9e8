"""Autocast's cast policy per op and device type: PyTorch's lists (ATen's autocast_mode.cpp),
under Ember's op names. ``registry.install`` copies them onto each ``OpInfo.autocast``.

- ``lower``: run in autocast's lower-precision dtype (float16 or bfloat16);
- ``fp32``: run in float32 (ops whose range or accuracy needs it);
- ``fp32_set_dtype``: run in float32 unless the call passes ``dtype=`` (CUDA's softmax, sum);
- ``promote``: run in the widest floating dtype among the inputs.
Ops on no list run in their inputs' dtypes. Float64 inputs are never cast, as in PyTorch.
On the CPU, softmax and layer_norm follow their input; on CUDA they run in float32.
"""

from __future__ import annotations

_CPU_LOWER = (
    "conv1d", "conv2d", "conv3d", "bmm", "mm", "linalg_vecdot", "baddbmm", "addmm", "addbmm",
    "linear", "matmul", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "prelu", "scaled_dot_product_attention",
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
    "linalg_inv_ex",
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

#: ops that refuse to run under CUDA autocast (PyTorch's message)
BANNED = {"binary_cross_entropy": (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional."
    "binary_cross_entropy_with_logits\nor torch.nn.BCEWithLogitsLoss.  "
    "binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast.")}
