# The predictive of the softmax likelihood, E[softmax(f)] for f ~ N(mean, cov), by a
# Rao-Blackwellised quasi-Monte Carlo rule (gpc.likelihoods.Softmax.predict sets it up
# and documents it).
#
# For each test point and each point u of a shared set of normal points (d = C - 1
# coordinates), with g = mean + R u and t = Q u:
#
#     p_c += Lambda(g_c - t_c - logsumexp(g_{-c}), s2_c),
#
# where Lambda(a, v) = E[sigma(a + sqrt(v) z)], z ~ N(0, 1), is read from a slice of
# a universal table: in the scaled coordinates x = a / sqrt(v + pi^2 / 3) and
# r = v / (v + pi^2 / 3) (in [0, 1]), Lambda is smooth on [-X, X] x [0, 1].  The
# table holds Lambda and dLambda/dx times the node spacing on nr x nx nodes; each
# class gets a slice at its r by 4-point Lagrange interpolation, then each value is
# a cubic Hermite interpolation in x.  The rows are normalised to sum to 1 at the end.

from libc.math cimport exp, log, floor, sqrt

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


cdef inline double _lookup(const double* sv, const double* sd, Py_ssize_t nx,
                           double x, double X, double inv_h) noexcept nogil:
    """Cubic Hermite interpolation of a slice at x (0 below -X, 1 above X)."""
    cdef double fx, u, u2, u3
    cdef Py_ssize_t j
    if x <= -X:
        return 0.0
    if x >= X:
        return 1.0
    fx = (x + X) * inv_h
    j = <Py_ssize_t>fx
    if j > nx - 2:
        j = nx - 2
    u = fx - j
    u2 = u * u
    u3 = u2 * u
    return ((2.0 * u3 - 3.0 * u2 + 1.0) * sv[j] + (u3 - 2.0 * u2 + u) * sd[j]
            + (3.0 * u2 - 2.0 * u3) * sv[j + 1] + (u3 - u2) * sd[j + 1])


def rb_softmax(const double[:, ::1] mean, const double[:, :, ::1] R,
               const double[:, :, ::1] Q, const double[:, ::1] s2,
               const double[:, ::1] U, const double[:, ::1] table_v,
               const double[:, ::1] table_d, double X):
    """Rao-Blackwellised averages of softmax(mean_i + R_i u) over the rows u of U.

    mean (m, C); R, Q (m, C, d); s2 (m, C) the variances integrated exactly; U (n, d)
    normal points; table_v, table_d (nr, nx) the table of Lambda on [-X, X] x [0, 1].
    Returns (m, C) rows summing to 1.
    """
    cdef Py_ssize_t m = mean.shape[0], C = mean.shape[1], d = U.shape[1]
    cdef Py_ssize_t n = U.shape[0], nx = table_v.shape[1]
    cdef Py_ssize_t i, p, j, k, c, top
    cdef double inv_h = (nx - 1) / (2.0 * X), m1, m2, S, lse, lse_top, acc_sum
    cdef double gj, tj, x
    out = np.empty((m, C))
    cdef double[:, ::1] o = out
    cdef double[:, ::1] sv = np.empty((C, nx)), sd = np.empty((C, nx))
    cdef double[::1] g = np.empty(C), t = np.empty(C), e = np.empty(C)
    cdef double[::1] scale = np.empty(C), acc = np.empty(C)
    cdef const double* u
    with nogil:
        for i in range(m):
            for c in range(C):
                _slice(table_v, table_d, s2[i, c] / (s2[i, c] + PI2_3), &sv[c, 0],
                       &sd[c, 0])
                scale[c] = 1.0 / sqrt(s2[i, c] + PI2_3)
                acc[c] = 0.0
            for p in range(n):
                u = &U[p, 0]
                top = 0
                for j in range(C):
                    gj = mean[i, j]
                    tj = 0.0
                    for k in range(d):
                        gj = gj + R[i, j, k] * u[k]
                        tj = tj + Q[i, j, k] * u[k]
                    g[j] = gj
                    t[j] = tj
                    if gj > g[top]:
                        top = j
                m1 = g[top]
                S = 0.0
                for j in range(C):
                    e[j] = exp(g[j] - m1)
                    S = S + e[j]
                # logsumexp of the others: for the top class, relative to the
                # largest of the others (their exps relative to m1 may underflow).
                m2 = g[1] if top == 0 else g[0]
                for j in range(C):
                    if j != top and g[j] > m2:
                        m2 = g[j]
                lse_top = 0.0
                for j in range(C):
                    if j != top:
                        lse_top = lse_top + exp(g[j] - m2)
                lse_top = m2 + log(lse_top)
                for c in range(C):
                    if c == top:
                        lse = lse_top
                    else:
                        lse = m1 + log(S - e[c])
                    x = (g[c] - t[c] - lse) * scale[c]
                    acc[c] += _lookup(&sv[c, 0], &sd[c, 0], nx, x, X, inv_h)
            acc_sum = 0.0
            for c in range(C):
                acc_sum = acc_sum + acc[c]
            for c in range(C):
                o[i, c] = acc[c] / acc_sum
    return out
