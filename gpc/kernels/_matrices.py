"""Kernel matrices evaluated fast and in blocks.

:func:`covariance_matrix` and :func:`cross_covariance` evaluate squared exponentials
(alone or times a constant) by gpc's own routines and call any other kernel;
:func:`kernel_matrix` checks the training matrix where that is needed, and
:func:`cross_covariance_chunks` yields ``K(X, Z)`` block by block of the rows of Z,
so that the estimators' predictions and the sparse models hold one block at a time.
"""

import numpy as np
from sklearn.gaussian_process import kernels as _sk

from .._validation import NotPositiveDefiniteError, as_kernel_matrix, fortran_view
from ._base import Product, _constant_value
from ._distances import _NormOverflowError, _scaled_inputs, _se_matrix
from ._inputs import _length_scale_for
from ._stationary import SquaredExponential


def _se_form(kernel):
    """``(variance, length_scale)`` when the kernel is a squared exponential,
    alone or times a constant; None otherwise."""
    t = type(kernel)
    if t is _sk.RBF:
        return 1.0, kernel.length_scale
    if t is SquaredExponential:
        return float(kernel.variance), kernel.length_scale
    if t in (Product, _sk.Product):
        for a, b in ((kernel.k1, kernel.k2), (kernel.k2, kernel.k1)):
            c, inner = _constant_value(a), _se_form(b)
            if c is not None and inner is not None:
                return c * inner[0], inner[1]
    return None


def cross_covariance(kernel, X, Z):
    """``kernel(X, Z)``, by one matrix product for squared exponentials.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
    X : ndarray of shape (n_samples, n_features)
    Z : ndarray of shape (n_inducing, n_features)

    Returns
    -------
    K : ndarray of shape (n_samples, n_inducing), C-ordered float64

    Notes
    -----
    A squared exponential (scikit-learn's ``RBF`` or :class:`SquaredExponential`,
    alone or times a constant) is evaluated as
    ``variance * exp(x.z - |x|^2 / 2 - |z|^2 / 2)`` on the scaled inputs (one
    GEMM and one exp pass, no distance matrix); other kernels are called.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from gpc.kernels import cross_covariance
    >>> X, Z = np.random.RandomState(0).randn(5, 3), np.zeros((2, 3))
    >>> np.allclose(cross_covariance(2.0 * RBF([1.0, 2.0, 3.0]), X, Z),
    ...             (2.0 * RBF([1.0, 2.0, 3.0]))(X, Z))
    True
    """
    form = _se_form(kernel)
    if form is None:
        return np.ascontiguousarray(kernel(X, Z), dtype=np.float64)
    variance, ls = form
    ls = _length_scale_for(ls, X, type(kernel).__name__)
    Xs, Zs = _scaled_inputs(X, Z, ls)
    return _se_matrix(Xs, Zs, variance)


def covariance_matrix(kernel, X):
    """``kernel(X)``, by gpc's compiled routine for squared exponentials.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
    X : array-like of shape (n_samples, n_features) or list of object

    Returns
    -------
    K : ndarray of shape (n_samples, n_samples)

    Notes
    -----
    A squared exponential (scikit-learn's ``RBF`` or :class:`SquaredExponential`,
    alone or times a constant) on a numeric array is evaluated as gpc's own
    :class:`SquaredExponential` is (:func:`gpc._kern.sym_stationary`: one pass over
    the lower triangle, mirrored; exactly symmetric), instead of through
    scikit-learn's distance matrix and its copies; the values agree to rounding.
    Other kernels and inputs are called.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from gpc.kernels import covariance_matrix
    >>> X = np.random.RandomState(0).randn(5, 3)
    >>> np.allclose(covariance_matrix(2.0 * RBF([1.0, 2.0, 3.0]), X),
    ...             (2.0 * RBF([1.0, 2.0, 3.0]))(X))
    True
    """
    return _covariance_matrix(kernel, X)[0]


def _covariance_matrix(kernel, X):
    """``(covariance_matrix(kernel, X), exact)``: ``exact`` when the matrix came
    from the compiled routine with finite inputs, norms and variance, so that it
    is finite and exactly symmetric by construction (a Fortran float64 array that
    needs no check)."""
    form = _se_form(kernel)
    if (form is None or not isinstance(X, np.ndarray) or X.ndim != 2
            or X.dtype.kind not in "fiu"):
        return kernel(X), False
    variance, ls = form
    ls = _length_scale_for(ls, X, type(kernel).__name__)
    Xs, _ = _scaled_inputs(np.asarray(X, dtype=np.float64), None, ls)
    K = _se_matrix(Xs, None, variance)
    # Finite squared norms (in length scales) bound every distance: no inf - inf.
    exact = bool(np.isfinite(variance) and np.isfinite(np.einsum("ij,ij->", Xs, Xs)))
    return K, exact


def kernel_matrix(kernel, X, error=ValueError):
    """``kernel(X)`` (by :func:`covariance_matrix`) checked by
    :func:`gpc._validation.as_kernel_matrix` (a Fortran float64 array), unless it
    is finite and symmetric by construction; a failed check raises ``error`` with
    its message, naming the kernel (a NotPositiveDefiniteError stays one)."""
    try:
        K, exact = _covariance_matrix(kernel, X)
        return fortran_view(K) if exact else as_kernel_matrix(K)
    except ValueError as exc:
        kind = type(exc) if isinstance(exc, NotPositiveDefiniteError) else error
        raise kind(f"The kernel {kernel!r}: {exc}") from None


def cross_covariance_chunks(kernel, X, Z, chunk_size):
    """``kernel(X, Z)`` and ``kernel.diag(Z)`` in blocks of the rows of Z.

    Yields ``(start, K, k_diag)`` per block ``Z[start:start + chunk_size]``: ``K``
    of shape (n_X, block) is Fortran-ordered float64 and freshly allocated (the
    caller may overwrite it), computed by :func:`cross_covariance`, or by the
    kernel itself (from differences) where the inputs' squared norms overflow.
    Memory stays at one block however many rows Z has.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
    X : array-like of shape (n_X, n_features) or list of object
    Z : array-like of shape (n_Z, n_features) or list of object
    chunk_size : int
        Rows of Z per block (at least 1).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from gpc.kernels import cross_covariance_chunks
    >>> X, Z = np.zeros((2, 1)), np.arange(5.0)[:, None]
    >>> [(start, K.shape) for start, K, _ in cross_covariance_chunks(RBF(), X, Z, 2)]
    [(0, (2, 2)), (2, (2, 2)), (4, (2, 1))]
    """
    step = max(int(chunk_size), 1)
    for start in range(0, len(Z), step):
        Zc = Z[start:start + step]
        try:
            K = cross_covariance(kernel, Zc, X)
        except _NormOverflowError:
            K = np.asarray(kernel(Zc, X), dtype=np.float64)
        yield (start, np.asfortranarray(K.T),
               np.ascontiguousarray(kernel.diag(Zc), dtype=np.float64))
