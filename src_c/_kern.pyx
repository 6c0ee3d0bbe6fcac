# Symmetric kernel matrices of stationary kernels in one pass.
#
# K(X, X) for n points is the most repeated O(n^2) step of evidence maximisation.  The
# NumPy expression (Gram matrix, outer sum, subtraction, clipping, exp, scaling) makes
# six full passes over n x n temporaries; here a single tiled pass over the lower
# triangle forms the distances (for up to 16 coordinates from the differences,
# vectorised over the rows in _pairs.h; beyond, from the Gram matrix of one BLAS
# dsyrk), turns them into the squared-exponential values by the vectorised exp of
# _vexp.h, and mirrors them (4 x 4 blocks transposed in registers, _pairs.h), so the
# result is exactly symmetric.  Its cost next to a Cholesky of the same size is in
# bench/results/ep_profile.md ("kernel matrix").
#
# The length-scale gradients of the same kernels contract dK with K and the squared
# coordinate differences; ``weighted_sqdist_sum`` does that in one tiled pass over
# dK and K that sums the pairs directly for up to 16 coordinates (``_pairs.h``; one pass where
# a pass and a dsymm were), and with one pass and one dsymm beyond.

import numpy as np


from _blas cimport Tiles, symm_lower, sync_threads, syrk_lower, tiles_next, tiles_start


cdef extern from "_vexp.h" nogil:
    void gpc_scaled_exp(double* x, int n, double scale)

cdef extern from "_pairs.h" nogil:
    double gpc_pair_sqdiff_sum(const double* W, const double* K, const double* Z,
                               int n, int dp, double* g)
    void gpc_neg_half_sqdist_col(double* col, const double* Zf, long n, int d, int j,
                                 int i0, int i1)
    void gpc_clamp_below(double* x, int n, double lo)
    void gpc_mirror_tile(double* K, long n, long i0, long i1, long j0, long j1)

# Up to this many coordinates the contraction sums over pairs directly
# (``_pairs.h``); beyond it the cost per pair grows with d and the BLAS path wins.
cdef enum:
    PAIRS_MAX_D = 16


def sym_stationary(const double[:, ::1] Z, double variance, bint se):
    """Exactly symmetric n x n matrix from the rows z_i of Z (n x d, C order).

    With ``se`` False: ``-0.5 |z_i - z_j|^2``, clipped at 0, zero diagonal (the scaled
    squared distances of a stationary kernel).  With ``se`` True: the
    squared-exponential ``variance * exp(-0.5 |z_i - z_j|^2)``, diagonal ``variance``.

    For d <= 16 the distances are summed coordinate by coordinate from the
    differences (no cancellation); beyond, as ``z_i . z_j - (h_i + h_j)`` with
    ``h = |z|^2 / 2`` (one BLAS dsyrk; the arithmetic of the NumPy path in
    gpc.kernels).  Either way on the lower triangle, then mirrored.  Returns a
    Fortran-ordered float64 array (symmetric, so its C-order reading is the same
    matrix).

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
    cdef int i, j, k, i0
    cdef Tiles t
    cdef double v
    cdef bint direct = d <= PAIRS_MAX_D
    cdef double* col
    out = np.empty((n, n), order="F")
    if n == 0:
        return out
    cdef double[::1, :] K = out
    cdef double[::1] h = np.zeros(n)
    # the coordinates column by column for the direct path (d > 0 only: no element)
    cdef double[::1, :] Zf = np.asfortranarray(
        Z if direct and d > 0 else np.zeros((1, 1)))
    if not direct:
        sync_threads(n)
    with nogil:
        if not direct:
            for i in range(n):
                v = 0.0
                for k in range(d):
                    v = v + Z[i, k] * Z[i, k]
                h[i] = 0.5 * v
            # Z (C order, n x d) is the Fortran d x n matrix Z'; K = (Z')' Z' = Z Z'.
            syrk_lower(False, &Z[0, 0], d, d, n, 1.0, 0.0, &K[0, 0])
        tiles_start(&t, n, 64)
        while tiles_next(&t):
            for j in range(t.j0, t.j1):
                i0 = t.i0 if t.i0 > j + 1 else j + 1
                col = &K[0, j]
                if t.i1 <= i0:
                    continue
                if direct:
                    # differences summed: exactly <= 0
                    gpc_neg_half_sqdist_col(col, &Zf[0, 0], Zf.shape[0], d, j, i0,
                                            t.i1)
                else:
                    for i in range(i0, t.i1):
                        v = col[i] - (h[i] + h[j])
                        col[i] = 0.0 if v > 0.0 else v     # NaN kept
                if se:
                    # exp underflows to 0 from -745.2
                    gpc_clamp_below(&col[i0], t.i1 - i0, -746.0)
                    gpc_scaled_exp(&col[i0], t.i1 - i0, variance)
            gpc_mirror_tile(&K[0, 0], n, t.i0, t.i1, t.j0, t.j1)
        for j in range(n):
            K[j, j] = variance if se else 0.0
    return out


def weighted_sqdist_sum(double[::1, :] W, const double[:, ::1] Z, K=None):
    """``g_k = sum_ij W_ij K_ij (z_ik - z_jk)^2`` for every column k of Z, and the
    sum of ``W o K`` (without K: ``K_ij = 1``).

    The contraction behind every stationary kernel's length-scale gradient, over
    the pair weights ``m_ij = (W_ij + W_ji) K_ij`` (W need not be symmetric; K is,
    and only its lower triangle is read).  For d <= 16 one tiled pass sums
    ``m_ij (z_ik - z_jk)^2`` over the pairs i > j (``_pairs.h``), writing nothing.
    Beyond, with the row sums ``r`` of M, ``g_k = sum_i z_ik (r_i z_ik - (M Z)_ik)``:
    one tiled pass over W (and K) and one BLAS ``dsymm``; without K, W is then
    scratch: its strictly lower triangle receives M, its diagonal zeros; with K
    (n x n, Fortran-ordered, symmetric) M goes to a scratch array.  Pairs on the
    diagonal contribute exactly zero and are left out, which avoids the largest
    cancellation of the identity.

    Returns ``(g, total)``: g of length d, total = sum(W o K).

    Examples
    --------
    >>> import numpy as np
    >>> from gpc._kern import weighted_sqdist_sum
    >>> Z = np.array([[0.0, 1.0], [2.0, 0.0]])
    >>> W = np.asfortranarray([[5.0, 1.0], [3.0, 7.0]])
    >>> weighted_sqdist_sum(W, Z, K=np.asfortranarray([[1.0, 0.5], [0.5, 1.0]]))
    (array([8., 2.]), 14.0)
    >>> weighted_sqdist_sum(W, Z)   # (1 + 3) * (2^2, 1^2), 1 + 3 + 5 + 7
    (array([16.,  4.]), 16.0)
    """
    cdef int n = W.shape[0], d = Z.shape[1]
    cdef int i, j, k
    cdef Tiles t
    cdef double m, total = 0.0, acc, zik
    cdef bint weighted = K is not None
    cdef double[::1, :] Kv = W
    cdef double[::1, :] M = W
    if W.shape[1] != n or Z.shape[0] != n:
        raise ValueError("weighted_sqdist_sum: W must be n x n and Z n x d.")
    if weighted:
        Kv = K
        if Kv.shape[0] != n or Kv.shape[1] != n:
            raise ValueError("weighted_sqdist_sum: K must be n x n like W.")
    g = np.zeros(d)
    if n == 0:
        return g, 0.0
    # The diagonal of W o K: in the total only (diagonal pairs add nothing to g).
    for j in range(n):
        total += W[j, j] * Kv[j, j] if weighted else W[j, j]
    if 0 < d <= PAIRS_MAX_D:
        return g, total + _pair_sum(W, Z, Kv if weighted else None, g)
    if weighted:
        M = np.empty((n, n), order="F")          # only its lower triangle is used
    cdef double[::1] r = np.zeros(n)
    cdef double[::1] gv = g
    cdef double[::1, :] Zf = np.asfortranarray(Z)
    cdef double[::1, :] MZ = np.empty((n, d), order="F")
    sync_threads(n)
    with nogil:
        tiles_start(&t, n, 64)
        while tiles_next(&t):
            for j in range(t.j0, t.j1):
                acc = 0.0
                for i in range(t.i0 if t.i0 > j + 1 else j + 1, t.i1):
                    m = W[i, j] + W[j, i]
                    if weighted:
                        m = m * Kv[i, j]           # K symmetric: one triangle read
                    M[i, j] = m
                    r[i] += m
                    acc += m
                r[j] += acc
                total += acc
        for j in range(n):
            M[j, j] = 0.0
        if d > 0:
            symm_lower(&M[0, 0], n, &Zf[0, 0], n, d, 1.0, 0.0, &MZ[0, 0], n)
        for k in range(d):
            acc = 0.0
            for i in range(n):
                zik = Zf[i, k]
                acc += zik * (r[i] * zik - MZ[i, k])
            gv[k] = acc
    return g, total


cdef double _pair_sum(double[::1, :] W, const double[:, ::1] Z, K, g):
    """For d <= PAIRS_MAX_D: g += the pair sums of ``_pairs.h`` (the coordinates
    padded with zero columns to a multiple of 4); returns the sum of the pair
    weights m_ij over i > j."""
    cdef int n = W.shape[0], d = Z.shape[1], dp = (d + 3) // 4 * 4
    cdef double total
    cdef double[:, ::1] Zp = np.zeros((n, dp))
    cdef double[::1] gp = np.zeros(dp)
    cdef bint weighted = K is not None
    cdef double[::1, :] Kv = K if weighted else W
    Zp[:, :d] = Z
    with nogil:
        total = gpc_pair_sqdiff_sum(&W[0, 0], &Kv[0, 0] if weighted else NULL,
                                    &Zp[0, 0], n, dp, &gp[0])
    g[:] = gp[:d]
    return total
