"""Dense block products on SciPy's BLAS: the matrix products, Gram matrices and
Frobenius inner products of gpc's Python layer.

They take any float64 arrays (any memory order, vectors too) and hand them to the
compiled routines of :mod:`gpc._linalg` (see :func:`matmul` for why SciPy's BLAS and
not numpy's).  The kernels, the posteriors, the inference methods and the sparse
models use them; they use nothing of gpc but :mod:`gpc._linalg`.
"""

import numpy as np
from scipy.linalg import blas as _blas

from . import _linalg

__all__ = ["frob", "gram", "matmul"]


def frob(A, B):
    """``sum(A * B)`` for equal-shape arrays in one pass, without the copies that
    ``np.vdot`` makes of Fortran-ordered arrays, on SciPy's BLAS (see
    :func:`matmul`)."""
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    if A.size and A.strides == B.strides and (A.flags.c_contiguous
                                              or A.flags.f_contiguous):
        return float(_blas.ddot(A.ravel(order="K"), B.ravel(order="K")))
    return float(np.multiply(A, B).sum())


def matmul(A, B):
    """``A @ B`` for a float64 matrix A and a matrix or vector B through SciPy's
    BLAS, planned by gpc (:func:`gpc._linalg.matmul`).

    All of gpc's heavy linear algebra (the Cython loops use
    ``scipy.linalg.cython_blas``) runs on SciPy's BLAS.  numpy may ship its own
    OpenBLAS, whose worker threads keep spinning for a while after each call and
    then compete for the cores with SciPy's threads in the factorisation that
    follows.  One thread pool avoids that, and the plan keeps a busy machine's
    products in the calling thread and gpc's own.
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    if A.ndim == 2 and B.ndim == 1:
        return _linalg.matmul(A, B[:, None])[:, 0]
    if A.ndim != 2 or B.ndim != 2:
        return A @ B
    return _linalg.matmul(A, B)


def gram(Z):
    """``Z @ Z.T``, exactly symmetric (:func:`gpc._linalg.gram`: syrk on one
    triangle, planned, then mirrored)."""
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2:
        return Z @ Z.T
    return _linalg.gram(Z)
