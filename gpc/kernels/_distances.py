"""Distances between scaled inputs and the contraction maths of the radial kernels.

The squared exponential's and the Matern kernels' matrices and contractions, from
the inputs centred at their mean and divided by the length scales (see
:mod:`gpc.kernels`, Numerics).  One implementation serves gpc's kernels and the fast
paths for scikit-learn's ``RBF`` and ``Matern``.
"""

import numpy as np

from .._blocks import frob, matmul
from .._kern import sym_stationary, weighted_sqdist_sum
from .._validation import fortran_view


_SQRT3 = np.sqrt(3.0)
_SQRT5 = np.sqrt(5.0)


def _scaled_inputs(X, Y, length_scale):
    """Centre the inputs (common shift) and divide by the length scales."""
    if Y is None:
        shift = X.mean(axis=0)
        return (X - shift) / length_scale, None
    shift = (X.sum(axis=0) + Y.sum(axis=0)) / (X.shape[0] + Y.shape[0])
    return (X - shift) / length_scale, (Y - shift) / length_scale


def _neg_half_sqdist(Z, ZY=None):
    """``-0.5 * |z_i - y_j|^2``, clipped at zero (result <= 0).

    For ``ZY is None`` the compiled one-pass routine
    (:func:`gpc._kern.sym_stationary`) computes the lower triangle and mirrors
    it: exactly symmetric, zero diagonal.  Otherwise it is computed by one BLAS
    ``dgemm`` as ``z_i . y_j - (h_i + h'_j)`` with ``h = |z|^2 / 2`` and
    ``h' = |y|^2 / 2``.
    """
    if ZY is None:
        return sym_stationary(np.ascontiguousarray(Z, dtype=np.float64), 1.0, False)
    # One GEMM on the augmented inputs [z, -|z|^2/2, -1] . [y, 1, |y|^2/2] (no
    # n x m temporary for the subtraction).
    A = np.empty((Z.shape[0], Z.shape[1] + 2))
    A[:, :-2] = Z
    A[:, -2] = -0.5 * np.einsum("ij,ij->i", Z, Z)
    _check_norms(A[:, -2])
    A[:, -1] = -1.0
    B = np.empty((ZY.shape[0], ZY.shape[1] + 2))
    B[:, :-2] = ZY
    B[:, -2] = 1.0
    B[:, -1] = 0.5 * np.einsum("ij,ij->i", ZY, ZY)
    _check_norms(B[:, -1])
    E = matmul(B, A.T).T       # C-ordered (the product's Fortran transpose)
    np.minimum(E, 0.0, out=E)
    return E


class _NormOverflowError(ValueError):
    """Inputs whose squared norms overflow (see :func:`_check_norms`)."""


def _check_norms(h):
    """Refuse inputs whose squared norms (in length scales) overflow: the
    distances formed from them would be NaN."""
    if not np.isfinite(h.sum()):
        raise _NormOverflowError(
            "The inputs' squared norms, in units of the length scales, overflow "
            "float64 (|x| > 1e154), so their distances cannot be computed: rescale "
            "the inputs, e.g. with sklearn.preprocessing.StandardScaler.")


def _sqdist(Z, ZY=None):
    """Squared Euclidean distances (>= 0, exact zero diagonal if ZY is None)."""
    D = _neg_half_sqdist(Z, ZY)
    D *= -2.0
    return D


def _se_matrix(Z, ZY, variance):
    """``variance * exp(-0.5 * |z_i - y_j|^2)`` with a single n x m buffer."""
    if ZY is None:
        return sym_stationary(np.ascontiguousarray(Z, dtype=np.float64), variance, True)
    K = _neg_half_sqdist(Z, ZY)
    np.exp(K, out=K)
    if variance != 1.0:
        K *= variance
    return K


def _pairwise_sqdiff(Z):
    """The (n, n, d) tensor (z_ik - z_jk)^2 (only for eval_gradient)."""
    diff = Z[:, np.newaxis, :] - Z[np.newaxis, :, :]
    diff *= diff
    return diff


def _weighted_sqdist_sum(Z, W, anisotropic, K=None):
    """``sum_ij W_ij K_ij (z_ik - z_jk)^2`` for every k (ARD) or summed over k.

    Without ``K`` (all ones), ``W`` is scratch owned by the caller (it may be
    overwritten); it need not be symmetric.  ``K``, when given, is symmetric
    and neither array is written.  The compiled ``weighted_sqdist_sum`` sums
    the pairs directly for up to 16 coordinates; beyond, it uses the identity

        sum_ij W_ij (z_ik - z_jk)^2 = sum_i z_ik (r_i z_ik - (M Z)_ik)

    with M the pair weights W_ij + W_ji off the diagonal (times K) and r their
    row sums: one pass over W (and K) and one BLAS product.  Pairs on the
    diagonal contribute exactly zero and are left out, which avoids the largest
    cancellation (the inputs are also centred).

    Returns ``(g, total)`` with ``total = sum(W o K)`` (computed on the way).
    """
    # The sum is unchanged by transposing W (or the symmetric K).
    W = fortran_view(W)
    if K is not None:
        K = fortran_view(K)
    g, total = weighted_sqdist_sum(W, np.ascontiguousarray(Z, dtype=np.float64), K)
    if not anisotropic:
        g = np.array([g.sum()])
    return g, total


def _se_contract(X, length_scale, variance, dK, K, want_ls, want_var):
    """Contraction for ``variance * exp(-0.5 * sum_k (x_k - x'_k)^2 / l_k^2)``.

    The single implementation of the squared-exponential maths, shared by
    :class:`SquaredExponential`, scikit-learn's ``RBF`` and ``Matern(nu=inf)``.

    ``K`` (optional) is the full kernel matrix including ``variance``.
    Returns ``(g_length_scale, g_variance)`` (``None`` where not wanted).
    With ``M = dK * K``: ``g_variance = sum(M)`` and
    ``g_length_scale[k] = sum_ij M_ij (x_ik - x_jk)^2 / l_k^2``.
    """
    if not want_ls:
        if K is None:
            Z, _ = _scaled_inputs(X, None, length_scale)
            K = _se_matrix(Z, None, variance)
        return None, (np.array([frob(dK, K)]) if want_var else None)
    Z, _ = _scaled_inputs(X, None, length_scale)
    anisotropic = np.ndim(length_scale) == 1
    if K is not None:                      # M = dK o K formed in the pass itself
        g_ls, total = _weighted_sqdist_sum(Z, dK, anisotropic, K)
    else:
        W = _se_matrix(Z, None, variance)  # owned: becomes M in place
        W *= dK
        g_ls, total = _weighted_sqdist_sum(Z, W, anisotropic)
    return g_ls, (np.array([total]) if want_var else None)


def _matern_f(r, nu):
    """Unit-variance Matern correlation as a function of the scaled distance."""
    if nu == 0.5:
        return np.exp(-r)
    if nu == 1.5:
        a = _SQRT3 * r
        out = np.exp(-a)
        out *= 1.0 + a
        return out
    a = _SQRT5 * r
    out = np.exp(-a)
    out *= 1.0 + a + a * a / 3.0
    return out


def _matern_weight(r, nu):
    """``-f'(r) / r`` so that ``dK/dlog l_k = variance * weight * d_k^2``."""
    if nu == 0.5:
        out = np.zeros_like(r)
        np.divide(np.exp(-r), r, out=out, where=r > 0)
        return out
    if nu == 1.5:
        out = np.exp(-_SQRT3 * r)
        out *= 3.0
        return out
    a = _SQRT5 * r
    out = np.exp(-a)
    out *= (5.0 / 3.0) * (1.0 + a)
    return out


def _matern_contract(X, length_scale, variance, nu, dK, K, want_ls, want_var):
    """Contraction for the Matern kernel with nu in {0.5, 1.5, 2.5, inf}.

    Shared by :class:`Matern` and scikit-learn's ``Matern``.  Same structure
    as the SE case with ``M = dK * variance * (-f'(r) / r)``.
    """
    if nu == np.inf:
        return _se_contract(X, length_scale, variance, dK, K, want_ls, want_var)
    Z, _ = _scaled_inputs(X, None, length_scale)
    r = _sqdist(Z)
    np.sqrt(r, out=r)
    g_ls = g_var = None
    if want_var:
        if K is None:
            g_var = np.array([variance * frob(dK, _matern_f(r, nu))])
        else:
            g_var = np.array([frob(dK, K)])
    if want_ls:
        W = _matern_weight(r, nu)
        W *= dK
        if variance != 1.0:
            W *= variance
        if np.ndim(length_scale) == 1:
            del r
            g_ls, _ = _weighted_sqdist_sum(Z, W, True)
        else:
            # isotropic: sum(W * r^2) directly (r is at hand; no cancellation)
            r *= r
            g_ls = np.array([frob(W, r)])
    return g_ls, g_var


def _matern_gradient_tensor(Z, D, variance, nu, anisotropic):
    W = _matern_weight(np.sqrt(D), nu) * variance
    if anisotropic:
        return W[:, :, np.newaxis] * _pairwise_sqdiff(Z)
    return (W * D)[:, :, np.newaxis]
