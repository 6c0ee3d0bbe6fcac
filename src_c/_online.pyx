# Bayesian online learning (assumed density filtering, ADF) for GP classification
# (Csato, Fokoue, Opper, Schottky, Winther 2000, eq. 10-12).
#
# State after some examples: the posterior mean at x_i is (K alpha)_i and the posterior
# covariance is K + K C K, with C symmetric.  Only the leading t_active x t_active
# block of C and alpha[:t_active] may be non-zero.  Processing example j (label y_j),
# with k = K[:, j]:
#     u = C k,   m = k . alpha,   v = K[j, j] + k . u   (clamped at 0),
#     (log Z, g, h) = log Z and its first two derivatives in m of
#                     int p(y_j | f) N(f; m, v) df,
#     s = u + e_j,   alpha += g s,   C += h s s^T.
# The block size t = max(t_active, j + 1) only bounds the work: C and alpha vanish
# outside their leading t x t block (t entries), so k may be cut to K[:t, j].
#
# Delayed (blocked) updates
# -------------------------
# One pass of the recursion per example would read and write C once per example
# (BLAS-2 speed, memory-bound).  Instead the examples are taken in blocks of b.  At the
# start of a block, with C0 = C, alpha0 = alpha and the block's columns
# Kb = [k_0 .. k_{b-1}] (all known in advance):
#     P = C0 Kb  (dsymm),   A = Kb^T P  (dgemm, b x b),   a0 = Kb^T alpha0.
# Within the block, with D[l, i] = s_l . k_i (l < i), everything example i needs is a
# scalar recursion over the block (C_i = C0 + sum_{l<i} h_l s_l s_l^T):
#     D[l, i] = A[l, i] + K[j_l, j_i] + sum_{r<l} h_r D[r, l] D[r, i]
#               (s_l . k_i = k_l^T C_l k_i + k_i[j_l]),
#     m_i = a0_i + sum_{l<i} g_l D[l, i],
#     v_i = K[j_i, j_i] + A[i, i] + sum_{l<i} h_l D[l, i]^2.
# At the end of the block the vectors s_i = P_i + e_{j_i} + sum_{l<i} h_l D[l, i] s_l,
# i.e. S (I - U) = P + E with U[l, i] = h_l D[l, i] strictly upper triangular, come
# from one dtrsm; then alpha += S g (dgemv) and C += S diag(h) S^T (dsyrk, the columns
# with h < 0 and h > 0 scaled by sqrt|h| in two calls).  All O(t^2) work is BLAS-3;
# the recursion costs O(b^2) per example.  In exact arithmetic this is the sequential
# recursion above, example by example; it differs from it only by rounding.
#
# Storage: K is the FULL symmetric n x n matrix (Fortran; columns K[:t, j] are read,
# including their upper-triangle part).  C is n x n Fortran with leading dimension
# n, read and written in its LOWER triangle (the upper triangle is not touched).

from libc.math cimport fabs, sqrt, isfinite
from libc.stdlib cimport malloc, free
from libc.string cimport memset

from scipy.linalg.cython_blas cimport dgemm, dgemv, dsymm, dsyr, dsyrk, dtrsm
from _model cimport Model, model_moments, model_of, model_raise
from _signals cimport check_signals


cdef enum:
    ST_OK = 0
    ST_NONFINITE = 2           # a moment (log Z, g, h, d log Z/d par) or v not finite
    ST_NEGATIVE_VARIANCE = 3   # v below zero by more than rounding
    ST_NOMEM = 4

STATUS_OK = ST_OK
STATUS_NONFINITE = ST_NONFINITE
STATUS_NEGATIVE_VARIANCE = ST_NEGATIVE_VARIANCE
STATUS_NOMEM = ST_NOMEM

# Default number of examples per block of delayed updates (measured: bench_adf.py).
DEFAULT_BLOCK = 64

# A predictive variance v < -VAR_RTOL * (K[j, j] + |k^T C0 k| + sum_l |h_l| D[l, i]^2)
# is an error; above that (rounding) it is clamped to 0.
cdef double VAR_RTOL = 1.4901161193847656e-08    # sqrt(machine epsilon)


cdef struct Work:
    int n           # leading dimension of every n-row buffer
    int b           # block size
    double* Kb      # n x b: the block's columns of K; then sqrt|h|-scaled columns of S
    double* P       # n x b: C0 Kb, then S
    double* A       # b x b: Kb^T C0 Kb
    double* D       # b x b: D[l + i b] = s_l . k_i (l < i); then I - U for dtrsm
    double* a0      # b: Kb^T alpha0
    double* g       # b: d log Z/dm of the block's examples
    double* h       # b: d2 log Z/dm2
    int* J          # b: the block's example indices


cdef void _work_free(Work* w) noexcept nogil:
    free(w.Kb); free(w.P); free(w.A); free(w.D); free(w.a0); free(w.g); free(w.h)
    free(w.J)
    w.Kb = NULL; w.P = NULL; w.A = NULL; w.D = NULL; w.a0 = NULL; w.g = NULL
    w.h = NULL; w.J = NULL


cdef int _work_init(Work* w, int n, int b) noexcept nogil:
    """Allocate the buffers; returns non-zero (everything freed) when out of memory."""
    cdef size_t nb = <size_t> n * <size_t> b
    w.n = n
    w.b = b
    w.Kb = <double*> malloc(nb * sizeof(double))
    w.P = <double*> malloc(nb * sizeof(double))
    w.A = <double*> malloc(<size_t> b * b * sizeof(double))
    w.D = <double*> malloc(<size_t> b * b * sizeof(double))
    w.a0 = <double*> malloc(b * sizeof(double))
    w.g = <double*> malloc(b * sizeof(double))
    w.h = <double*> malloc(b * sizeof(double))
    w.J = <int*> malloc(b * sizeof(int))
    if (w.Kb == NULL or w.P == NULL or w.A == NULL or w.D == NULL or w.a0 == NULL
            or w.g == NULL or w.h == NULL or w.J == NULL):
        _work_free(w)
        return 1
    return 0


cdef inline double _klow(const double* K, int i, int j, int n) noexcept nogil:
    """K[i, j] read from the lower triangle."""
    return K[i + <size_t> j * n] if i >= j else K[j + <size_t> i * n]


cdef void _block_start(const double* K, const double* C, const double* alpha, int n,
                       int nb, int t0, int T, Work* w) noexcept nogil:
    """Kb = K[:T, J], P = C0 Kb (rows t0..T zero), A = Kb^T P, a0 = Kb^T alpha."""
    cdef char side = b'L'
    cdef char lo = b'L'
    cdef char tr = b'T'
    cdef char notr = b'N'
    cdef double one = 1.0, zero = 0.0
    cdef int i, r, b = w.b, inc = 1
    cdef const double* col
    cdef double* dst
    for i in range(nb):
        col = K + <size_t> w.J[i] * n
        dst = w.Kb + <size_t> i * n
        for r in range(T):
            dst[r] = col[r]
    if t0 > 0:
        dsymm(&side, &lo, &t0, &nb, &one, <double*> C, &n, w.Kb, &n, &zero, w.P, &n)
        dgemm(&tr, &notr, &nb, &nb, &t0, &one, w.Kb, &n, w.P, &n, &zero, w.A, &b)
        dgemv(&tr, &t0, &nb, &one, w.Kb, &n, <double*> alpha, &inc, &zero, w.a0, &inc)
    else:
        memset(w.A, 0, <size_t> b * b * sizeof(double))
        memset(w.a0, 0, b * sizeof(double))
    if T > t0:
        for i in range(nb):
            memset(w.P + <size_t> i * n + t0, 0, (T - t0) * sizeof(double))


cdef void _block_finish(double* C, double* alpha, int n, int nb, int T,
                        Work* w) noexcept nogil:
    """Apply the first nb examples of the block: S from P by dtrsm, alpha += S g,
    C += S diag(h) S^T (lower triangle of the leading T x T block)."""
    cdef char right = b'R'
    cdef char up = b'U'
    cdef char lo = b'L'
    cdef char notr = b'N'
    cdef char unit = b'U'
    cdef double one = 1.0, minus = -1.0, c
    cdef int i, l, r, b = w.b, inc = 1, cneg = 0, cpos = 0
    cdef double* src
    cdef double* dst
    if nb <= 0 or T <= 0:
        return
    # I - U in place of D (upper, unit diagonal not referenced).
    for i in range(nb):
        for l in range(i):
            w.D[l + i * b] = -w.h[l] * w.D[l + i * b]
    for i in range(nb):
        w.P[w.J[i] + <size_t> i * n] += 1.0
    dtrsm(&right, &up, &notr, &unit, &T, &nb, &one, w.D, &b, w.P, &n)
    dgemv(&notr, &T, &nb, &one, w.P, &n, w.g, &inc, &one, alpha, &inc)
    # sqrt(-h) s for h < 0 from the front of Kb, sqrt(h) s for h > 0 from the back.
    for i in range(nb):
        if w.h[i] < 0.0:
            c = sqrt(-w.h[i])
            dst = w.Kb + <size_t> cneg * n
            cneg += 1
        elif w.h[i] > 0.0:
            c = sqrt(w.h[i])
            cpos += 1
            dst = w.Kb + <size_t> (nb - cpos) * n
        else:
            continue
        src = w.P + <size_t> i * n
        for r in range(T):
            dst[r] = c * src[r]
    if cneg > 0:
        dsyrk(&lo, &notr, &T, &cneg, &minus, w.Kb, &n, &one, C, &n)
    if cpos > 0:
        dsyrk(&lo, &notr, &T, &cpos, &one, w.Kb + <size_t> (nb - cpos) * n, &n, &one,
              C, &n)


cdef struct Sweep:
    # One call of adf_sweep: the problem and the state (pointers into the caller's
    # arrays), and what the sweep reports.
    const double* K
    const double* y
    const Model* md
    double* alpha
    double* C
    int n
    const int* order
    double* logz_out
    int t_active
    double sum_logz
    double sum_dpar
    Py_ssize_t n_done


cdef int _sweep(Sweep* sw, Py_ssize_t start, Py_ssize_t stop, Work* w) except -1 nogil:
    """Process order[start:stop] block by block (see the header); returns a status,
    or -1 with an exception set when a signal handler raised between blocks."""
    cdef int i, l, r, j, nb, t0, T, Tdone, st = ST_OK, b = w.b, n = sw.n
    cdef Py_ssize_t p0 = start, p
    cdef double d, m, v, kjj, scale, logZ, dlogZ, d2logZ, dpar, next_check = 0.0
    cdef double* Dcol
    cdef const double* K = sw.K
    cdef double* alpha = sw.alpha
    cdef double* C = sw.C
    sw.n_done = 0
    while p0 < stop:
        check_signals(&next_check)
        nb = b if stop - p0 > b else <int> (stop - p0)
        t0 = sw.t_active
        T = t0
        for i in range(nb):
            w.J[i] = sw.order[p0 + i]
            if w.J[i] + 1 > T:
                T = w.J[i] + 1
        _block_start(K, C, alpha, n, nb, t0, T, w)
        Tdone = t0
        for i in range(nb):
            j = w.J[i]
            Dcol = w.D + i * b
            m = w.a0[i]
            kjj = K[j + <size_t> j * n]
            v = w.A[i + i * b]
            scale = fabs(kjj) + fabs(v)
            v += kjj
            for l in range(i):
                d = w.A[l + i * b] + _klow(K, w.J[l], j, n)
                for r in range(l):
                    d += w.h[r] * w.D[r + l * b] * Dcol[r]
                Dcol[l] = d
                m += w.g[l] * d
                d = w.h[l] * d * d
                v += d
                scale += fabs(d)
            if not (isfinite(v) and isfinite(m)):
                st = ST_NONFINITE
            elif v < 0.0:
                if v < -VAR_RTOL * scale:
                    st = ST_NEGATIVE_VARIANCE
                v = 0.0
            if st == ST_OK:
                model_moments(sw.md, sw.y[j], m, v, &logZ, &dlogZ, &d2logZ, &dpar)
                if not (isfinite(logZ) and isfinite(dlogZ) and isfinite(d2logZ)
                        and isfinite(dpar)):
                    st = ST_NONFINITE
            if st != ST_OK:
                nb = i
                break
            w.g[i] = dlogZ
            w.h[i] = d2logZ
            sw.logz_out[p0 + i] = logZ
            sw.sum_logz += logZ
            sw.sum_dpar += dpar
            if j + 1 > Tdone:
                Tdone = j + 1
        _block_finish(C, alpha, n, nb, Tdone, w)
        sw.t_active = Tdone
        sw.n_done += nb
        if st != ST_OK:
            return st
        p0 += nb
    return ST_OK


def adf_sweep(const double[::1, :] K, const double[::1] y, model, double[::1] alpha,
              double[::1, :] C, const int[::1] order, Py_ssize_t start, int t_active,
              double[::1] logz_out, int block=DEFAULT_BLOCK):
    """Process the examples ``order[start], order[start + 1], ..., order[-1]`` in turn
    by assumed density filtering, updating ``alpha`` and ``C`` in place.

    ``K``: the full symmetric n x n kernel matrix (Fortran; both triangles are read).
    ``y``: labels (n).  ``model``: the likelihood, a ``gpc._model.LikelihoodModel``
    (its code, parameters and Gauss-Hermite rule).
    ``alpha`` (n) and ``C`` (n x n, Fortran, LOWER triangle) hold the state; only
    ``alpha[:t_active]`` and ``C[:t_active, :t_active]`` may be non-zero on entry (a
    fresh fit: zeros and ``t_active = 0``), and each example j raises t_active to at
    least j + 1.  ``logz_out[p]`` receives log Z (the log predictive probability of
    the example before its update) of the example at position p of ``order``.
    ``block``: examples per block of delayed updates (any size >= 1 gives the same
    result up to rounding).
    Signal handlers get their turn (``check_signals``) before every block: a
    KeyboardInterrupt leaves alpha and C with the blocks before it applied.

    Returns ``(status, n_done, t_active, sum_logz, sum_dpar)``: STATUS_OK, or the
    error status of the example at position ``start + n_done``, which is left
    unprocessed (every example before it is applied, their sums returned); the new
    t_active; the sums of log Z and of d log Z / d par[0] (0 for likelihoods without
    parameters) over the processed examples.
    """
    cdef int n = K.shape[0], st = ST_OK
    cdef Py_ssize_t i, m = order.shape[0]
    cdef const Model* md = model_of(model)
    cdef Sweep sw
    cdef Work w
    if K.shape[1] != n or C.shape[0] != n or C.shape[1] != n:
        raise ValueError("K and C must be n x n")
    if y.shape[0] != n or alpha.shape[0] != n:
        raise ValueError("y and alpha must have length n")
    if logz_out.shape[0] < m:
        raise ValueError("logz_out must have at least len(order) entries")
    if not 0 <= start <= m:
        raise ValueError("start must be in [0, len(order)]")
    if not 0 <= t_active <= n:
        raise ValueError("t_active must be in [0, n]")
    if block < 1:
        raise ValueError("block must be >= 1")
    for i in range(start, m):
        if not 0 <= order[i] < n:
            raise ValueError("order entries must be in [0, n)")
    if start == m:
        return ST_OK, 0, t_active, 0.0, 0.0
    sw.K = &K[0, 0]
    sw.y = &y[0]
    sw.md = md
    sw.alpha = &alpha[0]
    sw.C = &C[0, 0]
    sw.n = n
    sw.order = &order[0]
    sw.logz_out = &logz_out[0]
    sw.t_active = t_active
    sw.sum_logz = 0.0
    sw.sum_dpar = 0.0
    if block > m - start:
        block = <int> (m - start)
    if _work_init(&w, n, block) != 0:
        raise MemoryError()
    try:
        with nogil:
            st = _sweep(&sw, start, m, &w)
    finally:
        _work_free(&w)
        model_raise(model)
    return st, sw.n_done, sw.t_active, sw.sum_logz, sw.sum_dpar


def rank_one_baseline(double[::1, :] C, const double[::1] s, Py_ssize_t n,
                      double a=1.0):
    """C[:t, :t] += a s[:t] s[:t]^T (dsyr, LOWER triangle, lda = C.shape[0]) for
    t = 1, ..., n in turn: the rank-one BLAS work of one ADF sweep done naively, the
    yardstick of bench/bench_adf.py."""
    cdef char lo = b'L'
    cdef int t, nn, lda = C.shape[0], inc = 1
    if not 0 <= n <= lda or C.shape[1] < n or s.shape[0] < n:
        raise ValueError("n must be at most the size of C and of s")
    if n == 0:
        return
    nn = <int> n
    with nogil:
        for t in range(1, nn + 1):
            dsyr(&lo, &t, &a, <double*> &s[0], &inc, &C[0, 0], &lda)


def fill_upper(double[::1, :] C):
    """Copy the lower triangle of the square Fortran matrix C into its upper one
    (in place, in 64 x 64 tiles so that both sides stay in cache)."""
    cdef Py_ssize_t n = C.shape[0], i, j, i0, j0 = 0, i1, j1
    cdef Py_ssize_t tile = 64
    if C.shape[1] != n:
        raise ValueError("C must be square")
    with nogil:
        while j0 < n:
            j1 = min(j0 + tile, n)
            i0 = 0
            while i0 < j1:
                i1 = min(i0 + tile, n)
                for j in range(j0, j1):
                    for i in range(i0, min(i1, j)):
                        C[i, j] = C[j, i]
                i0 += tile
            j0 += tile
