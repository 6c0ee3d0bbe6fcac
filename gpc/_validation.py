"""Input checks shared by the K-level API and the estimators."""

import numpy as np

from ._checks import symmetry_check


class NotPositiveDefiniteError(np.linalg.LinAlgError, ValueError):
    """A covariance matrix is not positive semi-definite, even after jitter.

    Subclasses both :class:`numpy.linalg.LinAlgError` and :class:`ValueError`, so
    either may be caught.
    """


def as_kernel_matrix(K, name="K", symmetry_tol=1e-8):
    """Validate a covariance matrix and return it as a Fortran float64 array.

    A C-ordered symmetric matrix is returned as its transpose (a Fortran view of the
    same memory), so no copy is made for float64 input.

    Raises
    ------
    ValueError
        If ``K`` is not a finite, square, symmetric 2-D array.
    """
    K = np.asarray(K)
    if K.dtype.kind not in "fiub":
        raise ValueError(f"{name} must be a numeric array, got dtype {K.dtype}.")
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(f"{name} must be a square 2-D array, got shape {K.shape}.")
    K = np.asarray(K, dtype=np.float64)
    finite, scale, asym = symmetry_check(K)
    if not finite:
        raise ValueError(f"{name} contains NaN or infinity.")
    if asym > symmetry_tol * max(scale, 1e-300):
        raise ValueError(f"{name} must be symmetric.")
    if K.flags.f_contiguous:
        return K
    if K.flags.c_contiguous:
        return K.T
    return np.asfortranarray(K)

