# Symmetric kernel matrices of stationary kernels in one pass.
#
# K(X, X) for n points is the most repeated O(n^2) step of evidence maximisation.  The
# NumPy expression (Gram matrix, outer sum, subtraction, clipping, exp, scaling) makes
# six full passes over n x n temporaries; here the Gram matrix comes from one BLAS
# dsyrk on the lower triangle and a single tiled pass turns it into the distances (or
# the squared-exponential values) and mirrors them, so the result is exactly
# symmetric and costs about a third of a Cholesky of the same size at n = 2000.

from libc.math cimport exp

import numpy as np

from scipy.linalg.cython_blas cimport dsyrk


def sym_stationary(const double[:, ::1] Z, double variance, bint se):
    """Exactly symmetric n x n matrix from the rows z_i of Z (n x d, C order).

    With ``se`` False: ``-0.5 |z_i - z_j|^2``, clipped at 0, zero diagonal (the scaled
    squared distances of a stationary kernel).  With ``se`` True: the
    squared-exponential ``variance * exp(-0.5 |z_i - z_j|^2)``, diagonal ``variance``.

    Distances are ``z_i . z_j - (h_i + h_j)`` with ``h = |z|^2 / 2`` (the same
    arithmetic as the NumPy path in gpc.kernels), computed on the lower triangle and
    mirrored.  Returns a Fortran-ordered float64 array (symmetric, so its C-order
    reading is the same matrix).

    Examples
    --------
    >>> import numpy as np
    >>> from gpc._kern import sym_stationary
    >>> Z = np.array([[0.0], [1.0], [3.0]])
    >>> sym_stationary(Z, 1.0, False)
    array([[ 0. , -0.5, -4.5],
           [-0.5,  0. , -2. ],
           [-4.5, -2. ,  0. ]])
    """
    cdef int n = Z.shape[0], d = Z.shape[1]
    cdef int i, j, k, i0, j0, i1, j1, tile = 64
    cdef double v, zero = 0.0, one = 1.0
    cdef char lo = b'L'
    cdef char tr = b'T'
    out = np.empty((n, n), order="F")
    if n == 0:
        return out
    cdef double[::1, :] K = out
    cdef double[::1] h = np.empty(n)
    with nogil:
        for i in range(n):
            v = 0.0
            for k in range(d):
                v = v + Z[i, k] * Z[i, k]
            h[i] = 0.5 * v
        if d > 0:
            # Z (C order, n x d) is the Fortran d x n matrix Z'; K = (Z')' Z' = Z Z'.
            dsyrk(&lo, &tr, &n, &d, &one, <double*> &Z[0, 0], &d, &zero, &K[0, 0], &n)
        else:
            for j in range(n):
                for i in range(j, n):
                    K[i, j] = 0.0
        j0 = 0
        while j0 < n:
            j1 = j0 + tile if j0 + tile < n else n
            i0 = j0
            while i0 < n:
                i1 = i0 + tile if i0 + tile < n else n
                for j in range(j0, j1):
                    for i in range(i0 if i0 > j + 1 else j + 1, i1):
                        v = K[i, j] - (h[i] + h[j])
                        if v > 0.0:
                            v = 0.0
                        if se:
                            v = variance * exp(v)
                        K[i, j] = v
                        K[j, i] = v
                i0 = i1
            for j in range(j0, j1):
                K[j, j] = variance if se else 0.0
            j0 = j1
    return out
