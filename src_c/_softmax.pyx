# The predictive of the softmax likelihood, E[softmax(f)] for f ~ N(mean, cov), by a
# Rao-Blackwellised quasi-Monte Carlo rule with a control variate
# (gpc.likelihoods.Softmax.predict sets it up, combines the sums returned here and
# documents the rule).
#
# For each test point and each point u of a shared set of normal points (d = C - 1
# coordinates), with g = mean + R u and t = Q u:
#
#     h_c = Lambda(g_c - t_c - logsumexp(g_{-c}), s2_c),   z = sum_c h_c - 1,
#
# where Lambda(a, v) = E[sigma(a + sqrt(v) z)], z ~ N(0, 1), is read from a slice of
# a universal table: in the scaled coordinates x = a / sqrt(v + pi^2 / 3) and
# r = v / (v + pi^2 / 3) (in [0, 1]), Lambda is smooth on [-X, X] x [0, 1].  The
# table holds Lambda and dLambda/dx times the node spacing on nr x nx nodes; each
# class gets a slice at its r by 4-point Lagrange interpolation, turned into the
# cubic Hermite polynomial of each interval in x.  z has mean exactly 0 (the h_c are
# unbiased for probabilities that sum to 1): the sums of h_c, h_c z, z and z^2 give
# the regression of each class's average on it.  The loop over the points runs in
# blocks, in the SIMD code of _softmax.h.

from libc.math cimport floor, sqrt

import numpy as np

cdef double PI2_3 = 3.289868133696453      # pi^2 / 3, the logistic law's variance


cdef void _slice(const double[:, ::1] tv, const double[:, ::1] td, double r,
                 double* sv, double* sd) noexcept nogil:
    """Values and scaled derivatives of the table at r (4-point Lagrange)."""
    cdef Py_ssize_t nr = tv.shape[0], nx = tv.shape[1], j, k, i0
    cdef double fr = r * (nr - 1), t, L[4], a, b
    i0 = <Py_ssize_t>floor(fr) - 1
    if i0 < 0:
        i0 = 0
    if i0 > nr - 4:
        i0 = nr - 4
    t = fr - i0
    L[0] = -(t - 1.0) * (t - 2.0) * (t - 3.0) / 6.0
    L[1] = t * (t - 2.0) * (t - 3.0) / 2.0
    L[2] = -t * (t - 1.0) * (t - 3.0) / 2.0
    L[3] = t * (t - 1.0) * (t - 2.0) / 6.0
    for j in range(nx):
        a = 0.0
        b = 0.0
        for k in range(4):
            a += L[k] * tv[i0 + k, j]
            b += L[k] * td[i0 + k, j]
        sv[j] = a
        sd[j] = b


cdef extern from "_softmax.h" nogil:
    long GPC_SMX_WORK(int C)
    void gpc_smx_coef(const double* sv, const double* sd, int nx, double* coef)
    void gpc_softmax_sums(int C, int d, long n, const double* Ut, const double* mean,
                          const double* R, const double* RQ, const double* scale,
                          const double* coef, int nx, double X, double* work,
                          double* out)


def rb_sums(const double[:, ::1] mean, const double[:, :, ::1] R,
            const double[:, :, ::1] RQ, const double[:, ::1] s2,
            const double[:, ::1] Ut, const double[:, ::1] table_v,
            const double[:, ::1] table_d, double X):
    """Sums over the points u (the columns of Ut) of h_c = Lambda(a_c - lse(g_{-c}),
    s2_c) with g = mean_i + R_i u, a = mean_i + RQ_i u, and of z = sum_c h_c - 1.

    mean (m, C); R, RQ (m, C, d); s2 (m, C); Ut (d, n); table_v, table_d (nr, nx)
    the table of Lambda on [-X, X] x [0, 1].  Returns (m, 2 C + 2): the sums of h_c,
    of h_c z, of z and of z^2.
    """
    cdef Py_ssize_t m = mean.shape[0], C = mean.shape[1], d = Ut.shape[0]
    cdef Py_ssize_t n = Ut.shape[1], nx = table_v.shape[1], i, c
    out = np.empty((m, 2 * C + 2))
    cdef double[:, ::1] o = out
    cdef double[::1] sv = np.empty(nx), sd = np.empty(nx)
    cdef double[:, ::1] coef = np.empty((C, 4 * (nx - 1)))
    cdef double[::1] scale = np.empty(C), work = np.empty(GPC_SMX_WORK(<int>C))
    with nogil:
        for i in range(m):
            for c in range(C):
                _slice(table_v, table_d, s2[i, c] / (s2[i, c] + PI2_3), &sv[0], &sd[0])
                gpc_smx_coef(&sv[0], &sd[0], <int>nx, &coef[c, 0])
                scale[c] = 1.0 / sqrt(s2[i, c] + PI2_3)
            gpc_softmax_sums(<int>C, <int>d, n, &Ut[0, 0], &mean[i, 0], &R[i, 0, 0],
                             &RQ[i, 0, 0], &scale[0], &coef[0, 0], <int>nx, X,
                             &work[0], &o[i, 0])
    return out
