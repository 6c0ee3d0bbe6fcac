"""Contractions against cross-covariances and diagonals: the gradients of sparse
(inducing-point) models, which work on ``K(X, Z)`` in chunks and on ``k(x, x)``
instead of ``K(X)``.

:func:`contract_cross` and :func:`contract_diag` give the gradients with respect to
the hyperparameters, :func:`contract_inputs` the gradient with respect to the
inducing inputs Z.
"""

import numpy as np
from sklearn.gaussian_process import kernels as _sk

from .._blocks import frob, matmul
from ._base import (_LINEAR_IN_K, Exponentiation, Product, Sum, White, _constant_value,
                    _contract, _ordered)
from ._distances import (_check_norms, _matern_weight, _scaled_inputs, _se_matrix,
                         _sqdist)
from ._inputs import _check_X, _length_scale_for, as_kernel
from ._matrices import _se_form, cross_covariance
from ._stationary import Matern, SquaredExponential


def _se_cross_sum(X, Z, length_scale, P):
    """``sum_ij P_ij (x_ik - z_jk)^2 / l_k^2`` per k (summed over k when the
    length scale is a scalar), by one GEMM: O(n m d), no n x m x d tensor."""
    Xs, Zs = _scaled_inputs(X, Z, length_scale)
    _check_norms(np.einsum("ij,ij->i", Xs, Xs))
    _check_norms(np.einsum("ij,ij->i", Zs, Zs))
    g = (P.sum(axis=1) @ (Xs * Xs) + P.sum(axis=0) @ (Zs * Zs)
         - 2.0 * np.einsum("ik,ik->k", Xs, matmul(P, Zs)))
    return g if np.ndim(length_scale) == 1 else np.array([g.sum()])


def _contract_cross_stacked(kernel, X, Z, G):
    """Any kernel: ``contract`` on the stacked inputs [X; Z] with G in the
    off-diagonal blocks (exact; O((n + m)^2) per call, so callers pass chunks)."""
    n, m = X.shape[0], Z.shape[0]
    W = np.zeros((n + m, n + m))
    W[:n, n:] = 0.5 * G
    W[n:, :n] = 0.5 * G.T
    return _contract(kernel, np.concatenate([X, Z]), W, None)


def _contract_cross(kernel, X, Z, G, K):
    """Dispatch of :func:`contract_cross` (inputs already checked)."""
    if kernel.n_dims == 0:
        return np.zeros(0)
    t = type(kernel)
    c = _constant_value(kernel)
    if c is not None:
        return np.array([c * G.sum()])
    if t in (White, _sk.WhiteKernel):              # zero off the training diagonal
        return np.zeros(kernel.n_dims)
    if t in (SquaredExponential, _sk.RBF):
        K = kernel(X, Z) if K is None else K
        P = G * K
        if t is _sk.RBF:
            return _se_cross_sum(X, Z, _length_scale_for(kernel.length_scale, X, "RBF"),
                                 P)
        ls, _ = kernel._values(X)
        parts = {"variance": np.array([P.sum()])}
        if not kernel.hyperparameter_length_scale.fixed:
            parts["length_scale"] = _se_cross_sum(X, Z, ls, P)
        return _ordered(kernel, parts)
    if t in (Sum, _sk.Sum):
        return np.concatenate([_contract_cross(kernel.k1, X, Z, G, None),
                               _contract_cross(kernel.k2, X, Z, G, None)])
    if t in (Product, _sk.Product):
        k1, k2 = kernel.k1, kernel.k2
        c1, c2 = _constant_value(k1), _constant_value(k2)
        if K is not None and (c1 is not None or c2 is not None):
            # A constant factor c: d/dlog c = sum(G * K); the other factor gets
            # c * contract(other, G, K / c), which is contract(other, G, K) for
            # the squared exponential (linear in K).
            c, other = (c1, k2) if c1 is not None else (c2, k1)
            K_o, scale = (K, 1.0) if type(other) in _LINEAR_IN_K else (K / c, c)
            g_c = np.array([frob(G, K)]) if (k1 if c1 is not None else k2).n_dims \
                else np.zeros(0)
            g_o = scale * _contract_cross(other, X, Z, G, K_o)
            return np.concatenate([g_c, g_o] if c1 is not None else [g_o, g_c])
        K1 = k1(X, Z) if k2.n_dims else None
        K2 = k2(X, Z) if k1.n_dims else None
        return np.concatenate([
            _contract_cross(k1, X, Z, G * K2, None) if k1.n_dims else np.zeros(0),
            _contract_cross(k2, X, Z, G * K1, None) if k2.n_dims else np.zeros(0)])
    return np.asarray(_contract_cross_stacked(kernel, X, Z, G),
                      dtype=np.float64).reshape(-1)


def _cross_arguments(kernel, X, Z, G):
    """``(kernel, X, Z, G)`` checked for :func:`contract_cross` and
    :func:`contract_inputs`: G of shape (n_X, n_Z), X and Z with as many
    features."""
    kernel = as_kernel(kernel)
    X, Z = _check_X(X), _check_X(Z, "Z")
    G = np.asarray(G, dtype=np.float64)
    if G.shape != (X.shape[0], Z.shape[0]):
        raise ValueError(f"G has shape {G.shape}; expected {(X.shape[0], Z.shape[0])}.")
    if X.shape[1] != Z.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features; Z has {Z.shape[1]}.")
    return kernel, X, Z, G


def contract_cross(kernel, X, Z, G, K=None):
    """Gradient of ``sum(G * kernel(X, Z))`` with respect to ``kernel.theta``.

    The cross-covariance counterpart of :func:`contract`, for models that work
    on ``K(X, Z)`` between data and inducing inputs (:mod:`gpc.sparse.ep`).

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        The kernel (gpc or scikit-learn).
    X : array-like of shape (n_samples, n_features)
    Z : array-like of shape (n_inducing, n_features)
    G : array-like of shape (n_samples, n_inducing)
        Derivative of the objective with respect to ``kernel(X, Z)``.
    K : array-like of shape (n_samples, n_inducing), optional
        ``kernel(X, Z)`` if already computed (used by squared-exponential
        kernels standing alone).

    Returns
    -------
    grad : ndarray of shape (kernel.n_dims,)
        In the order of ``kernel.theta`` (log space).

    Notes
    -----
    Squared exponentials (``RBF``, :class:`SquaredExponential`, isotropic or
    ARD), constants, white noise (zero between distinct inputs), sums and
    products are contracted in O(n m d) with one matrix product; any other
    kernel goes through :func:`contract` on the stacked inputs ``[X; Z]``,
    which costs O((n + m)^2 d): call it on chunks of X.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from gpc.kernels import contract_cross
    >>> X, Z = np.array([[0.0, 0.0], [1.0, 2.0]]), np.array([[0.5, 1.0]])
    >>> kernel = ConstantKernel(2.0) * RBF([1.0, 2.0])
    >>> g = contract_cross(kernel, X, Z, np.ones((2, 1)))
    >>> h = 1e-6
    >>> fd = [(kernel.clone_with_theta(kernel.theta + h * e)(X, Z).sum()
    ...        - kernel(X, Z).sum()) / h for e in np.eye(3)]
    >>> np.allclose(g, fd, rtol=1e-5)
    True
    """
    return _contract_cross(*_cross_arguments(kernel, X, Z, G), K)


def contract_diag(kernel, X, s, chunk_size=256):
    """Gradient of ``sum(s * kernel.diag(X))`` with respect to ``kernel.theta``.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
    X : array-like of shape (n_samples, n_features)
    s : array-like of shape (n_samples,)
        Derivative of the objective with respect to ``kernel.diag(X)``.
    chunk_size : int, default=256
        Rows per call of :func:`contract` for non-stationary kernels.

    Returns
    -------
    grad : ndarray of shape (kernel.n_dims,)

    Notes
    -----
    For a stationary kernel ``k(x, x)`` is one number, so the gradient is
    ``sum(s)`` times that of ``k(x, x)``: O(n).  Other kernels contract
    ``diag(s)`` chunk by chunk.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from gpc.kernels import contract_diag
    >>> kernel = ConstantKernel(2.0) * RBF(1.0)
    >>> contract_diag(kernel, np.zeros((3, 1)), np.ones(3))  # 3 * d(2)/dlog 2
    array([6., 0.])
    """
    kernel = as_kernel(kernel)
    X = _check_X(X)
    s = np.asarray(s, dtype=np.float64).reshape(-1)
    if s.shape[0] != X.shape[0]:
        raise ValueError(f"s has {s.shape[0]} entries; X has {X.shape[0]} rows.")
    if kernel.n_dims == 0 or X.shape[0] == 0:
        return np.zeros(kernel.n_dims)
    if kernel.is_stationary():
        return float(s.sum()) * _contract(kernel, X[:1], np.ones((1, 1)), None)
    return sum(_contract(kernel, X[i:i + chunk_size], np.diag(s[i:i + chunk_size]), None)
               for i in range(0, X.shape[0], chunk_size))


def _radial_form(kernel, X):
    """``(variance, length_scale, nu)`` of a squared exponential (nu = inf; alone
    or times a constant, :func:`_se_form`) or a Matern kernel with nu in {0.5,
    1.5, 2.5, inf}, gpc's or scikit-learn's; None for any other kernel."""
    form = _se_form(kernel)
    if form is not None:
        return form[0], _length_scale_for(form[1], X, type(kernel).__name__), np.inf
    t = type(kernel)
    if t is _sk.Matern and kernel.nu in (0.5, 1.5, 2.5, np.inf):
        return 1.0, _length_scale_for(kernel.length_scale, X, "Matern"), kernel.nu
    if t is Matern:
        ls, variance, nu = kernel._values(X)
        return variance, ls, nu
    return None


def _radial_inputs(X, Z, G, form, K=None):
    """``d/dZ sum(G * k(X, Z))`` for ``k = variance * f(r)``, r the distance in
    length scales: ``sum_i A_ij (x_i - z_j) / l^2`` with ``A = G * variance *
    (-f'(r) / r)`` (``G * K`` for the squared exponential, K given or formed),
    by one GEMM."""
    variance, ls, nu = form
    Xs, Zs = _scaled_inputs(X, Z, ls)
    if nu == np.inf:
        A = G * (_se_matrix(Xs, Zs, variance) if K is None else K)
    else:
        r = _sqdist(Xs, Zs)
        np.sqrt(np.maximum(r, 0.0, out=r), out=r)
        A = G * _matern_weight(r, nu)
        A *= variance
    return (matmul(A.T, Xs) - A.sum(axis=0)[:, None] * Zs) / ls


def _contract_inputs(kernel, X, Z, G, K=None):
    """Dispatch of :func:`contract_inputs` (inputs already checked; K, when
    given, is ``kernel(X, Z)``)."""
    t = type(kernel)
    if _constant_value(kernel) is not None or t in (White, _sk.WhiteKernel):
        return np.zeros(Z.shape)           # no dependence on distinct inputs
    form = _radial_form(kernel, X)
    if form is not None:
        return _radial_inputs(X, Z, G, form, K)
    if t in (Sum, _sk.Sum):
        return _contract_inputs(kernel.k1, X, Z, G) + _contract_inputs(kernel.k2, X, Z, G)
    if t in (Product, _sk.Product):
        for c, other in ((_constant_value(kernel.k1), kernel.k2),
                         (_constant_value(kernel.k2), kernel.k1)):
            if c is not None:                  # no n x m matrix of the constant
                return c * _contract_inputs(other, X, Z, G)
        return (_contract_inputs(kernel.k1, X, Z, G * cross_covariance(kernel.k2, X, Z))
                + _contract_inputs(kernel.k2, X, Z, G * cross_covariance(kernel.k1, X, Z)))
    if t in (Exponentiation, _sk.Exponentiation):
        p = float(kernel.exponent)
        base = cross_covariance(kernel.kernel, X, Z)
        return _contract_inputs(kernel.kernel, X, Z, G * p * base ** (p - 1.0))
    raise ValueError(
        f"Learning inducing inputs needs the gradient of the kernel {kernel!r} with "
        "respect to its inputs, which gpc has for squared exponential and Matern "
        "(nu 0.5, 1.5, 2.5, inf) kernels, constants, white noise, and their sums, "
        "products and powers.")


def contract_inputs(kernel, X, Z, G, K=None):
    """Gradient of ``sum(G * kernel(X, Z))`` with respect to the inputs Z.

    The derivative that learning a sparse model's inducing inputs needs
    (:mod:`gpc.sparse.ep`).

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        A squared exponential (``RBF``, :class:`SquaredExponential`) or Matern
        kernel with nu in {0.5, 1.5, 2.5, inf} (gpc's or scikit-learn's),
        constants, white noise, or sums, products and powers of these.
    X : array-like of shape (n_samples, n_features)
    Z : array-like of shape (n_inducing, n_features)
    G : array-like of shape (n_samples, n_inducing)
        Derivative of the objective with respect to ``kernel(X, Z)``.
    K : array-like of shape (n_samples, n_inducing), optional
        ``kernel(X, Z)`` if already computed (used by squared exponentials,
        alone or times a constant).

    Returns
    -------
    grad : ndarray of shape (n_inducing, n_features)

    Raises
    ------
    ValueError
        For a kernel outside the list above.

    Notes
    -----
    For ``k(x, z) = v f(r)`` with ``r^2 = sum_k (x_k - z_k)^2 / l_k^2`` the
    derivative is ``dk/dz_k = v (-f'(r) / r) (x_k - z_k) / l_k^2``, so the
    contraction is one matrix product, O(n m d).  White noise is zero between
    distinct inputs and constants do not depend on them.  For ``K(Z, Z)``
    itself (both arguments moving) with a symmetric G the gradient is twice
    ``contract_inputs(kernel, Z, Z, G)``: a stationary kernel's diagonal does
    not depend on Z.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from gpc.kernels import contract_inputs
    >>> X, Z = np.array([[0.0, 0.0], [1.0, 2.0]]), np.array([[0.2, 1.5]])
    >>> kernel = ConstantKernel(2.0) * RBF([1.0, 2.0])
    >>> g = contract_inputs(kernel, X, Z, np.ones((2, 1)))
    >>> h = 1e-6
    >>> fd = [(kernel(X, Z + h * e).sum() - kernel(X, Z - h * e).sum()) / (2 * h)
    ...       for e in np.eye(2)[:, None, :]]
    >>> g.round(4)
    array([[ 0.8301, -0.379 ]])
    >>> np.allclose(g.ravel(), fd, rtol=1e-6)
    True
    """
    return _contract_inputs(*_cross_arguments(kernel, X, Z, G), K)
