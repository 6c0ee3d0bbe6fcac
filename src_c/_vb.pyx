# The Gaussian of the variational lower bound (gpc/inference/variational.py):
# q ∝ N(0, K) exp(b'f - f'W f / 2), W = sW^2 > 0, through B = I + sW K sW = L L'.
# Since Sigma = (K^{-1} + W)^{-1} = W^{-1/2} (I - B^{-1}) W^{-1/2}, the marginal
# variances are (1 - diag(B^{-1})) / W, the column norms of L^{-1}; the mean is K alpha
# with alpha = b - sW B^{-1} sW K b.  One pass, preallocated buffers, no GIL.
#
# Storage: n x n Fortran buffers with leading dimension n, LOWER triangles.

from _blas cimport (chol_lower, lower_gram, symv_lower, sync_threads,
                   tri_inverse_lower, trmv_lower)


def gaussian(const double[::1, :] K, const double[::1] sW, const double[::1] b,
             double[::1, :] L, double[::1, :] Linv, double[::1] mean, double[::1] var,
             double[::1] alpha, double[::1] work):
    """Factorise B, form L^{-1}, the mean, the variances and alpha in the given
    buffers (``work``: n).  Returns the LAPACK info of the Cholesky (or, when it
    succeeded, of the inversion; 0 on success)."""
    cdef int n = K.shape[0], i, j, info = 0
    cdef double s, d
    if not (K.shape[1] == n and L.shape[0] == n and L.shape[1] == n
            and Linv.shape[0] == n and Linv.shape[1] == n and sW.shape[0] == n
            and b.shape[0] == n and mean.shape[0] == n and var.shape[0] == n
            and alpha.shape[0] == n and work.shape[0] == n):
        raise ValueError("gaussian: inconsistent sizes")
    if n == 0:
        return 0
    sync_threads(n)
    with nogil:
        for j in range(n):
            for i in range(j, n):
                L[i, j] = sW[i] * K[i, j] * sW[j]
            L[j, j] += 1.0
        info = chol_lower(&L[0, 0], n)
        if info == 0:
            for j in range(n):
                for i in range(j, n):
                    Linv[i, j] = L[i, j]
            info = tri_inverse_lower(&Linv[0, 0], n)
        if info == 0:
            for j in range(n):
                s = 0.0
                for i in range(j, n):
                    s = s + Linv[i, j] * Linv[i, j]
                d = sW[j] * sW[j]
                var[j] = (1.0 - s) / d
                if var[j] < 0.0:
                    var[j] = 0.0
            # alpha = b - sW L^{-T} L^{-1} sW K b
            symv_lower(&K[0, 0], n, &b[0], &work[0], 1.0, 0.0)
            for i in range(n):
                work[i] = work[i] * sW[i]
            trmv_lower(&Linv[0, 0], n, &work[0], False)
            trmv_lower(&Linv[0, 0], n, &work[0], True)
            for i in range(n):
                alpha[i] = b[i] - sW[i] * work[i]
            symv_lower(&K[0, 0], n, &alpha[0], &mean[0], 1.0, 0.0)
    return info


def b_inverse(const double[::1, :] Linv, double[::1, :] Binv):
    """``Binv = L^{-T} L^{-1} = B^{-1}`` (full symmetric) from ``Linv`` (lower),
    by LAPACK's lauum (``_blas.lower_gram``).  Returns the LAPACK info."""
    cdef int n = Linv.shape[0], i, j, info = 0
    if Linv.shape[1] != n or Binv.shape[0] != n or Binv.shape[1] != n:
        raise ValueError("b_inverse: inconsistent sizes")
    if n == 0:
        return 0
    sync_threads(n)
    with nogil:
        for j in range(n):
            for i in range(j, n):
                Binv[i, j] = Linv[i, j]
        info = lower_gram(&Binv[0, 0], n)
        for j in range(n):
            for i in range(j + 1, n):
                Binv[j, i] = Binv[i, j]
    return info
