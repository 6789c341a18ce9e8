"""Ready-made parametrizations (``torch.nn.utils.parametrizations``): ``orthogonal``,
``weight_norm`` and ``spectral_norm``, registered through ``parametrize``."""

from __future__ import annotations

from enum import Enum, auto

import ember
from ember import Tensor, geqrf
from ember.linalg import householder_product, matrix_exp

from .. import functional as F
from ..modules.module import Module
from . import parametrize
from .spectral_norm import _default_dim, _reshape_weight_to_matrix
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# -- orthogonal -------------------------------------------------------------------------------

def _is_orthogonal(Q: Tensor) -> bool:
    n, k = Q.size(-2), Q.size(-1)
    eye = ember.eye(k, dtype=Q.dtype, device=Q.device)
    eps = 10.0 * n * ember.finfo(Q.dtype).eps
    return ember.allclose(Q.mH @ Q, eye, atol=eps)


def _make_orthogonal(A: Tensor) -> Tensor:
    """The ``Q`` of the QR decomposition of ``A``, its columns' signs fixed so that ``R``
    has a positive diagonal."""
    Q, R = ember.linalg.qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """Maps an unconstrained matrix to an orthogonal one (``orthogonal``'s parametrization).

    With ``use_trivialization`` the result is ``base @ map(X)``, ``base`` a buffer holding
    an orthogonal matrix that ``right_inverse`` sets; ``X`` then starts at the identity.
    """

    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex "
                             "tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map == _OrthMaps.householder:
            Q = self._householder(X)
        else:
            Q = self._from_skew(X, n, k)
        if hasattr(self, "base"):
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def _from_skew(self, X: Tensor, n: int, k: int) -> Tensor:
        """``matrix_exp`` or Cayley map of the skew-symmetric matrix that the lower triangle
        of the tall ``X`` (n x k) defines, cut to ``k`` columns."""
        X = X.tril()
        if n != k:
            X = ember.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
        A = X - X.mH
        if self.orthogonal_map == _OrthMaps.matrix_exp:
            Q = matrix_exp(A)
        else:  # Cayley: (I + A/2)(I - A/2)^{-1}
            eye = ember.eye(n, dtype=A.dtype, device=A.device)
            Q = ember.linalg.solve(eye - 0.5 * A, eye + 0.5 * A)
        return Q[..., :k] if n != k else Q

    @staticmethod
    def _householder(X: Tensor) -> Tensor:
        """The product of the reflectors below the diagonal of ``X``; the diagonal (+-1) sets
        the columns' signs and is not differentiated."""
        A = X.tril(diagonal=-1)
        tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
        Q = householder_product(A, tau)
        return Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)

    def right_inverse(self, Q: Tensor) -> Tensor:
        with ember.no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            transpose = Q.size(-2) < Q.size(-1)
            Q_tall = Q.mT if transpose else Q
            if not hasattr(self, "base"):
                A = self._householder_right_inverse(Q_tall)
                return A.mT if transpose else A
            self.base = self._orthogonal_completion(Q_tall)
            # -Id: householder(zeros) is the identity, and matrix_exp/cayley of 0 too
            neg_eye = ember.zeros_like(Q)
            neg_eye.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_eye

    def _householder_right_inverse(self, Q: Tensor) -> Tensor:
        if self.orthogonal_map != _OrthMaps.householder:
            raise NotImplementedError("It is not possible to assign to the matrix exponential "
                                      "or the Cayley parametrizations when "
                                      "use_trivialization=False.")
        A, tau = geqrf(Q)
        # the diagonal holds the sign of R's diagonal; a skipped reflection (tau == 0) is
        # undone by flipping it, since the forward always reflects
        signs = A.diagonal(dim1=-2, dim2=-1).sign()
        signs = ember.where(tau == 0.0, -signs, signs)
        diagonal = ember.eye(A.size(-2), A.size(-1), dtype=ember.bool, device=A.device)
        return ember.where(diagonal, signs.unsqueeze(-2), A)

    @staticmethod
    def _orthogonal_completion(Q: Tensor) -> Tensor:
        """A square orthogonal matrix whose first columns span those of the tall ``Q``."""
        n, k = Q.size(-2), Q.size(-1)
        if n == k:
            return Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        N = ember.randn(*(Q.size()[:-2] + (n, n - k)), dtype=Q.dtype, device=Q.device)
        return _make_orthogonal(ember.cat([Q, N], dim=-1))


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Parametrize the matrix (or batch of matrices) ``module.<name>`` to be orthogonal.

    ``W^T W = I`` (or ``W W^T = I`` for a wide matrix) holds at every step. The map from the
    unconstrained original is ``"matrix_exp"``, ``"cayley"`` or ``"householder"``; the default
    is ``matrix_exp`` for square matrices and ``householder`` otherwise. With
    ``use_trivialization=True`` (default) the result is ``base @ map(X)``, ``base`` an
    orthogonal buffer set on registration and on assignment, so the current weight's
    orthogonalized value is kept. Returns ``module``.

    Example::

        >>> m = orthogonal(ember.nn.Linear(20, 40))
        >>> Q = m.weight
        >>> bool(ember.allclose(Q.T @ Q, ember.eye(20), atol=1e-5))
        True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.size(-2) == weight.size(-1)
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# -- weight norm ------------------------------------------------------------------------------

class _WeightNorm(Module):
    """``weight = g * v / ||v||`` from ``original0 = g`` and ``original1 = v``."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Parametrize ``module.<name>`` as ``g * v / ||v||`` (weight normalization).

    The magnitude ``g`` (one norm per slice along ``dim``; ``dim=None`` for a single norm) is
    ``parametrizations.<name>.original0`` and the direction ``v`` is ``original1``. State
    dicts saved with the older ``weight_norm`` (``<name>_g``, ``<name>_v``) load into it.
    Returns ``module``.

    Example::

        >>> m = weight_norm(ember.nn.Linear(20, 40))
        >>> m.parametrizations.weight.original0.size()
        ember.Size([40, 1])
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(module, state_dict, prefix, local_metadata, strict,
                                 missing_keys, unexpected_keys, error_msgs) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module.register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


# -- spectral norm ----------------------------------------------------------------------------

class _SpectralNorm(Module):
    """``weight / sigma``, ``sigma`` the largest singular value of ``weight`` (as a matrix
    with rows along ``dim``) estimated by power iteration on the buffers ``_u`` and ``_v``;
    the iteration runs in training mode only."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:  # a vector needs no estimate (see forward)
            self.n_power_iterations = n_power_iterations
            weight_mat = _reshape_weight_to_matrix(weight, self.dim)
            h, w = weight_mat.size()
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        """Refine ``_u`` and ``_v`` in place (their objects are kept: they may be shared)."""
        with ember.no_grad():
            for _ in range(n_power_iterations):
                F.normalize(ember.mv(weight_mat, self._v), dim=0, eps=self.eps, out=self._u)
                F.normalize(ember.mv(weight_mat.mH, self._u), dim=0, eps=self.eps,
                            out=self._v)

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = _reshape_weight_to_matrix(weight, self.dim)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # clones: a later forward's in-place update must not touch what backward saved
        u = self._u.clone()
        v = self._v.clone()
        sigma = ember.vdot(u, ember.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Parametrize ``module.<name>`` as ``W / sigma(W)`` (spectral normalization).

    ``sigma`` is the largest singular value of ``W`` reshaped to a matrix with rows along
    ``dim`` (default 0; 1 for transposed convolutions), estimated by ``n_power_iterations``
    steps of power iteration per training forward on the buffers
    ``parametrizations.<name>.0._u`` and ``_v``. Returns ``module``.

    Example::

        >>> m = spectral_norm(ember.nn.Linear(20, 40))
        >>> m.parametrizations.weight.original.size()
        ember.Size([40, 20])
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = _default_dim(module)
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
