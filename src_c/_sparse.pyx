# The sparse online Gaussian process (Csató & Opper 2002; Csató & Opper, "Sparse
# Gaussian processes: inference and model selection"): the posterior process is kept
# on a basis-vector (BV) set of at most `max_basis` inputs,
#     mean(x) = k(x)' alpha,   cov(x, x') = K(x, x') + k(x)' C k(x'),
# with k(x) = K(BV, x).  Memory O(max_basis^2), independent of the number of
# examples.
#
# Online step for an example (x, y), k = K(BV, x), k* = K(x, x):
#     m = k'alpha, s2 = k* + k'C k, (log Z, q, r) = moments of p(y|f) under N(m, s2),
#     e = Q k with Q = K_BV^{-1}, gamma = k* - k'e (the novelty: the residual
#     variance of f(x) given f(BV)).
#   * gamma <= tol k*: projected update, s = C k + e, alpha += q s, C += r s s'.
#   * otherwise x joins: s = (C k, 1), alpha = (alpha, 0) + q s,
#     C = (C 0; 0 0) + r s s' (and Q = (Q 0; 0 0) + (e, -1)(e, -1)' / gamma);
#     then, over capacity, the BV with the smallest score alpha_i^2 / (Q_ii + C_ii) is
#     removed (or, when K_BV became too ill-conditioned, see MAX_COND, the one with
#     the largest Q_ii) by the KL-optimal projection (with a* = alpha_i, c* = C_ii, q* = Q_ii and
#     C*, Q* the i-th columns without row i):
#       alpha <- alpha - a* Q*/q*,  C <- C + c* Q*Q*'/q*^2 - (Q*C*' + C*Q*')/q*,
#       Q <- Q - Q*Q*'/q*.
# K_BV^{-1} is not updated recursively (that loses accuracy fast as the BV set
# becomes ill-conditioned, and then admits BVs whose true novelty is nil): the lower
# Cholesky factor L of K_BV is kept instead, so gamma = k* - |L^{-1} k|^2 and
# e = L^{-T} L^{-1} k come from triangular solves (backward stable); a BV joins by
# appending the row (L^{-1} k, sqrt(gamma)) to L, and a removal deletes row and
# column i of K_BV by a rank-one Cholesky update of the trailing block (the BV order
# is kept); diag(Q), needed for the scores, is kept up to date beside L.
# The projected update is exact assumed density filtering for the model in which f(x)
# is its projection p'f(BV) (p = Q k) plus independent noise of variance gamma: the
# same model the EP sweeps refine (gpc/sparse.py).  Each example's site on
# u = p'f(BV), t(u) = exp(nu u - tau u^2 / 2), is recorded for them:
#     tau = -r / (1 + r v_u),  nu = (q - m r) / (1 + r v_u),  v_u = s2 - gamma
# (v_u = s2 when x joined, as gamma is then 0).
#
# Kernel values come in chunks from Python: Kbx = K(BV at the chunk's start, X_chunk)
# (d0 x B), Kxx = K(X_chunk, X_chunk) (B x B, for the examples that join), kdiag =
# K(x, x).  `src[slot]` says where a BV slot's kernel row is: < d0 a row of Kbx, else
# d0 + the chunk index (a row of Kxx).
#
# Storage: alpha and diag(Q) (cap), C and L (cap x cap, Fortran, leading dimension
# cap, LOWER triangle), cap = max_basis + 1.

from libc.math cimport fabs, isfinite, INFINITY
from libc.stdlib cimport malloc, free

from libc.math cimport sqrt
from scipy.linalg.cython_blas cimport daxpy, dtrsv
from _blas cimport VEC, dot_here, symv_panels
from _lik cimport Quad, lik_gauss_moments, lik_n_params
from _signals cimport SIGNAL_BLOCK, check_signals


cdef enum:
    ST_OK = 0
    ST_NONFINITE = 2
    ST_NOMEM = 4

STATUS_OK = ST_OK
STATUS_NONFINITE = ST_NONFINITE

# When a new BV makes tr(K_BV) tr(K_BV^{-1}), an upper bound on the condition number
# of K_BV, exceed this (beyond, the solves with K_BV lose the accuracy the updates
# need), the most redundant BV (largest [K_BV^{-1}]_ii) is removed by the same
# KL-optimal projection as over capacity.
cdef double MAX_COND = 1e12
MAX_CONDITION = MAX_COND


cdef struct Model:
    int lik
    const double* par
    Quad quad


cdef inline double _sym(const double* M, int a, int b, int ld) noexcept nogil:
    """M[a, b] of a symmetric matrix held in its lower triangle."""
    return M[a + <size_t> b * ld] if a >= b else M[b + <size_t> a * ld]


# The updates run one example at a time on matrices of the BV set's size, in the
# calling thread: symv in panels (symv_panels), the rank-one and rank-two updates
# and the dot products as daxpy and ddot calls on at most VEC entries (_blas's
# dot_here; OpenBLAS threads dsymv, dsyr and ddot of large orders, and a busy
# machine's spinning workers cost each call milliseconds).
cdef inline void _symv(const double* M, int d, int ld, const double* x,
                       double* out) noexcept nogil:
    if d > 0:
        symv_panels(False, M, d, ld, x, out, 1.0, 0.0)


cdef inline void _axpy(int n, double a, const double* x, double* y) noexcept nogil:
    """y <- y + a x."""
    cdef int one = 1, h
    while n > 0:
        h = VEC if n > VEC else n
        daxpy(&h, &a, <double*> x, &one, y, &one)
        x += h
        y += h
        n -= h


cdef inline void _syr2(double* M, int d, int ld, double a, const double* x,
                       const double* y) noexcept nogil:
    """M <- M + a (x y' + y x') on the lower triangle."""
    cdef int j
    for j in range(d):
        _axpy(d - j, a * y[j], x + j, M + j + <size_t> j * ld)
        _axpy(d - j, a * x[j], y + j, M + j + <size_t> j * ld)


cdef inline void _syr(double* M, int d, int ld, double a, const double* x) noexcept nogil:
    """M <- M + a x x' on the lower triangle."""
    cdef int j
    if a != 0.0:
        for j in range(d):
            _axpy(d - j, a * x[j], x + j, M + j + <size_t> j * ld)


cdef inline double _dot(const double* x, const double* y, int d) noexcept nogil:
    return dot_here(d, x, y)


cdef inline void _trsv(const double* L, int d, int ld, double* x,
                       bint transpose) noexcept nogil:
    """x <- L^{-1} x (or L^{-T} x) for the lower-triangular d x d block of L."""
    cdef char lo = b'L'
    cdef char tr = b'T' if transpose else b'N'
    cdef char nd = b'N'
    cdef int one = 1
    if d > 0:
        dtrsv(&lo, &tr, &nd, &d, <double*> L, &ld, x, &one)


cdef void _shift_out(double* M, int d, int ld, int i) noexcept nogil:
    """Delete row and column i of the symmetric / lower-triangular d x d block held
    in M's lower triangle, moving the later rows and columns up by one."""
    cdef int a, b
    for b in range(d - 1):
        for a in range(b if b > i else i, d - 1):
            M[a + <size_t> b * ld] = M[(a + 1) + <size_t> (b + (1 if b >= i else 0)) * ld]


cdef void _remove(double* alpha, double* C, double* L, double* dq, int* src, int d,
                  int ld, int i, double* qs, double* cs) noexcept nogil:
    """KL-optimal removal of BV slot i from a set of d (order kept, see the header)."""
    cdef int j, t
    cdef double a_star = alpha[i], c_star = C[i + <size_t> i * ld], q_star
    cdef double r, c, sn, lkk, li
    # Q* = K_BV^{-1} e_i by two triangular solves.
    for j in range(d):
        qs[j] = 0.0
    qs[i] = 1.0
    _trsv(L, d, ld, qs, False)
    _trsv(L, d, ld, qs, True)
    q_star = qs[i]
    for j in range(d):
        dq[j] -= qs[j] * qs[j] / q_star
        qs[j] /= q_star                             # u = Q* / q*
        cs[j] = _sym(C, j, i, ld)
    qs[i] = 0.0
    cs[i] = 0.0
    for j in range(d):
        alpha[j] -= a_star * qs[j]
    _syr(C, d, ld, c_star, qs)                      # + c* u u'
    _syr2(C, d, ld, -1.0, qs, cs)                   # - (u C*' + C* u')
    # Cholesky factor of K_BV without row and column i: the trailing block absorbs
    # the column below the diagonal, L22 L22' + v v' (rank-one update, Givens form).
    for j in range(i + 1, d):
        qs[j] = L[j + <size_t> i * ld]
    for t in range(i + 1, d):
        lkk = L[t + <size_t> t * ld]
        r = sqrt(lkk * lkk + qs[t] * qs[t])
        c = r / lkk
        sn = qs[t] / lkk
        L[t + <size_t> t * ld] = r
        for j in range(t + 1, d):
            li = (L[j + <size_t> t * ld] + sn * qs[j]) / c
            qs[j] = c * qs[j] - sn * li
            L[j + <size_t> t * ld] = li
    _shift_out(C, d, ld, i)
    _shift_out(L, d, ld, i)
    for j in range(i, d - 1):
        alpha[j] = alpha[j + 1]
        dq[j] = dq[j + 1]
        src[j] = src[j + 1]


cdef int _online(const double* Kbx, int d0, const double* Kxx, const double* kdiag,
                 const double* y, int B, const Model* md, double* alpha, double* C,
                 double* L, double* dq, int* src, int* d_io, int ld, int max_basis,
                 double tol,
                 double* logz, double* tau, double* nu, int* joined, int* n_done,
                 long* counts, double* work) except -1 nogil:
    """Process the B examples of a chunk in turn (see the header); -1 with an
    exception set when a signal handler raised (checked every SIGNAL_BLOCK
    examples)."""
    cdef int j, i, t, d = d_io[0], worst
    cdef double kstar, m, s2, gamma, vu, lz, q, r, dp, den, score, best
    cdef double tr_k = 0.0, tr_q = 0.0, e2, next_check = 0.0
    cdef double* k = work
    cdef double* Ck = work + ld
    cdef double* e = work + 2 * ld
    cdef double* qs = work + 3 * ld
    cdef double* cs = work + 4 * ld
    cdef double* lk = work + 5 * ld
    for i in range(d):
        tr_q += dq[i]
        for t in range(i + 1):
            tr_k += L[i + <size_t> t * ld] * L[i + <size_t> t * ld]
    for j in range(B):
        if j % SIGNAL_BLOCK == 0:
            check_signals(&next_check)
        kstar = kdiag[j]
        for i in range(d):
            t = src[i]
            k[i] = Kbx[t + <size_t> j * d0] if t < d0 else Kxx[(t - d0) + <size_t> j * B]
        _symv(C, d, ld, k, Ck)
        for i in range(d):
            lk[i] = k[i]
        _trsv(L, d, ld, lk, False)                   # L^{-1} k
        for i in range(d):
            e[i] = lk[i]
        _trsv(L, d, ld, e, True)                     # e = Q k
        m = _dot(k, alpha, d)
        s2 = kstar + _dot(k, Ck, d)
        gamma = kstar - _dot(lk, lk, d)
        if s2 < 0.0:
            s2 = 0.0
        if not (isfinite(m) and isfinite(s2) and isfinite(gamma)):
            d_io[0] = d
            n_done[0] = j
            return ST_NONFINITE
        lik_gauss_moments(md.lik, y[j], m, s2, md.par, &md.quad, &lz, &q, &r, &dp)
        logz[j] = lz
        if not (isfinite(lz) and isfinite(q) and isfinite(r)):
            # The example has (numerically) zero predictive probability, e.g. a
            # hard-constraint likelihood far outside its support under a narrow
            # predictive: it is skipped (no update, no site), and counted.
            joined[j] = 0
            tau[j] = 0.0
            nu[j] = 0.0
            counts[3] += 1
            continue
        e2 = _dot(e, e, d)
        if gamma <= tol * kstar or d == 0 and kstar <= 0.0:
            # Projected update: x stays out of the BV set.
            vu = s2 - gamma if gamma > 0.0 else s2
            for i in range(d):
                e[i] += Ck[i]                        # s = C k + e
                alpha[i] += q * e[i]
            _syr(C, d, ld, r, e)
            joined[j] = 0
            counts[0] += 1
        else:
            # x joins the BV set as slot d.
            vu = s2
            for i in range(d + 1):
                C[d + <size_t> i * ld] = 0.0
            for i in range(d):
                L[d + <size_t> i * ld] = lk[i]
                dq[i] += e[i] * e[i] / gamma
            L[d + <size_t> d * ld] = sqrt(gamma)
            dq[d] = 1.0 / gamma
            tr_k += kstar
            tr_q += (e2 + 1.0) / gamma
            Ck[d] = 1.0                              # s = (C k, 1)
            alpha[d] = 0.0
            for i in range(d + 1):
                alpha[i] += q * Ck[i]
            _syr(C, d + 1, ld, r, Ck)
            src[d] = d0 + j
            d += 1
            joined[j] = 1
            counts[1] += 1
            worst = -1
            if d > max_basis:
                # Over capacity: the BV of smallest score goes.
                best = INFINITY
                worst = 0
                for i in range(d):
                    den = dq[i] + C[i + <size_t> i * ld]
                    score = alpha[i] * alpha[i] / den if den > 0.0 else INFINITY
                    if score < best:
                        best = score
                        worst = i
            elif tr_k * tr_q > MAX_COND:
                # K_BV too ill-conditioned: the most redundant BV goes (largest
                # [K_BV^{-1}]_ii = 1 / its novelty given the others).
                best = -1.0
                worst = 0
                for i in range(d):
                    if dq[i] > best:
                        best = dq[i]
                        worst = i
            if worst >= 0:
                if worst == d - 1:
                    joined[j] = 0                    # the newcomer itself goes
                for t in range(worst + 1):
                    tr_k -= L[worst + <size_t> t * ld] * L[worst + <size_t> t * ld]
                _remove(alpha, C, L, dq, src, d, ld, worst, qs, cs)
                d -= 1
                tr_q = 0.0
                for i in range(d):
                    tr_q += dq[i]
                counts[2] += 1
        den = 1.0 + r * vu
        if den > 0.0 and vu > 0.0:
            tau[j] = -r / den
            nu[j] = (q - m * r) / den
        else:
            tau[j] = 0.0
            nu[j] = 0.0
    d_io[0] = d
    n_done[0] = B
    return ST_OK


cdef int _model(Model* md, int lik, const double[::1] par, const double[::1] qx,
                const double[::1] qw) except -1:
    if lik_n_params(lik) < 0:
        raise ValueError(f"unknown likelihood code {lik}")
    if par.shape[0] < lik_n_params(lik):
        raise ValueError("this likelihood needs its parameter in par[0]")
    if qx.shape[0] != qw.shape[0]:
        raise ValueError("quad_x and quad_logw must have equal lengths")
    md.lik = lik
    md.par = &par[0] if par.shape[0] > 0 else NULL
    md.quad.n = qx.shape[0]
    md.quad.x = &qx[0] if qx.shape[0] > 0 else NULL
    md.quad.logw = &qw[0] if qw.shape[0] > 0 else NULL
    return 0


def online_chunk(const double[::1, :] Kbx, const double[::1, :] Kxx,
                 const double[::1] kdiag, const double[::1] y, int lik,
                 const double[::1] par, const double[::1] quad_x,
                 const double[::1] quad_logw, double[::1] alpha, double[::1, :] C,
                 double[::1, :] L, double[::1] diag_q, int[::1] src, int d,
                 int max_basis, double tol, double[::1] logz, double[::1] tau,
                 double[::1] nu, int[::1] joined):
    """One online pass over a chunk of B examples (see ``src_c/_sparse.pyx``).

    ``Kbx``: K(BV at the start, X_chunk), d x B (d rows, the current BV set in slot
    order, as ``src`` says on entry: ``src[i] = i``); ``Kxx``: K(X_chunk, X_chunk);
    ``kdiag``: K(x, x) of the chunk; ``alpha``, ``diag_q`` (diag of K_BV^{-1})
    (cap), ``C`` and ``L`` (the Cholesky factor of K_BV) (cap x cap, Fortran, lower
    triangle) with cap = max_basis + 1 hold the state for the first ``d`` slots.  Outputs per example: ``logz`` (log predictive probability),
    ``tau``/``nu`` (its site on the projected latent), ``joined`` (1 if it is in the
    BV set at the end of its step).  ``src`` (cap) receives, per final slot, its
    kernel row: < d (the entry d) an old BV's row of Kbx, else d + chunk index.
    An example whose predictive moments are not finite (zero predictive
    probability) is skipped: no update, site 0, its log Z (-inf or NaN) in ``logz``.

    A KeyboardInterrupt (``check_signals``) leaves the state part-updated.

    Returns ``(status, n_done, d, n_projected, n_joined, n_removed, n_skipped)``;
    status NONFINITE when the state itself broke down (non-finite predictive mean
    or variance; example ``n_done`` not processed).
    """
    cdef int d0 = d, B = kdiag.shape[0], ld = C.shape[0], st, n_done = 0
    cdef long counts[4]
    cdef Model md
    cdef double* work
    if Kbx.shape[0] != d0 or Kbx.shape[1] != B and d0 > 0:
        raise ValueError("Kbx must be d x B")
    if Kxx.shape[0] != B or Kxx.shape[1] != B:
        raise ValueError("Kxx must be B x B")
    if (y.shape[0] != B or logz.shape[0] != B or tau.shape[0] != B
            or nu.shape[0] != B or joined.shape[0] != B):
        raise ValueError("per-example arrays must have the chunk's length")
    if not (C.shape[1] == ld and L.shape[0] == ld and L.shape[1] == ld
            and alpha.shape[0] == ld and diag_q.shape[0] == ld and src.shape[0] == ld
            and ld == max_basis + 1):
        raise ValueError("alpha, diag_q, C, L and src must have capacity max_basis + 1")
    if not 0 <= d <= max_basis:
        raise ValueError("d must be in [0, max_basis]")
    for i in range(d):
        src[i] = i
    counts[0] = counts[1] = counts[2] = counts[3] = 0
    if B == 0:
        return ST_OK, 0, d, 0, 0, 0, 0
    _model(&md, lik, par, quad_x, quad_logw)
    work = <double*> malloc(6 * <size_t> ld * sizeof(double))
    if work == NULL:
        raise MemoryError()
    try:
        with nogil:
            st = _online(&Kbx[0, 0] if d0 > 0 else NULL, d0, &Kxx[0, 0], &kdiag[0],
                         &y[0], B, &md, &alpha[0], &C[0, 0], &L[0, 0], &diag_q[0],
                         &src[0], &d, ld, max_basis, tol, &logz[0], &tau[0], &nu[0],
                         &joined[0], &n_done, counts, work)
    finally:
        free(work)
    return st, n_done, d, counts[0], counts[1], counts[2], counts[3]


cdef int _ep(const double* Kbx, const double* kdiag, const double* y, int B,
             const Model* md, double* mu, double* S, const double* L, int d, int ld,
             double* tau, double* nu, double damping, long* counts, double* change,
             double* work) except -1 nogil:
    """One EP pass over a chunk with the BV set fixed (see gpc/sparse.py), on the
    posterior N(mu, S) of f(BV): the marginal of u = p'f(BV), p = Q k, is
    N(p'mu, p'S p) with no cancellation (the (alpha, C) form would subtract Q).
    -1 with an exception set when a signal handler raised (checked every
    SIGNAL_BLOCK examples)."""
    cdef int j, i
    cdef double m, vu, gamma, tc, vc, mc, lz, g, h, dp, v1, m1, tn, nn, dt, dn, den
    cdef double next_check = 0.0
    cdef double* k
    cdef double* s = work
    cdef double* e = work + ld
    for j in range(B):
        if j % SIGNAL_BLOCK == 0:
            check_signals(&next_check)
        k = <double*> Kbx + <size_t> j * d
        for i in range(d):
            e[i] = k[i]
        _trsv(L, d, ld, e, False)
        gamma = kdiag[j] - _dot(e, e, d)             # k* - k'Q k, backward stable
        if gamma < 0.0:
            gamma = 0.0
        _trsv(L, d, ld, e, True)                     # p = Q k
        _symv(S, d, ld, e, s)                        # S p
        m = _dot(e, mu, d)
        vu = _dot(e, s, d)                            # variance of u = p'f(BV)
        # The cavity (site removed), vc = vu / (1 - tau vu), mc = (m - vu nu) / (..),
        # written without dividing by vu.  vu = 0 (k = 0: x unrelated to the BV
        # set) leaves nothing to update, so it is not counted as skipped (a skipped
        # update keeps EP from being called converged).
        if vu == 0.0:
            continue
        tc = 1.0 - tau[j] * vu
        if not (tc > 0.0 and vu > 0.0):
            counts[0] += 1                            # improper cavity: skipped
            continue
        vc = vu / tc
        mc = (m - vu * nu[j]) / tc
        lik_gauss_moments(md.lik, y[j], mc, vc + gamma, md.par, &md.quad, &lz, &g, &h,
                          &dp)
        if not (isfinite(lz) and isfinite(g) and isfinite(h)):
            counts[1] += 1                            # zero tilted mass: skipped
            continue
        v1 = vc + vc * vc * h                         # the new marginal of u
        m1 = mc + vc * g
        if not v1 > 0.0:
            counts[1] += 1                            # tilted variance lost: skipped
            continue
        tn = 1.0 / v1 - 1.0 / vc
        nn = m1 / v1 - mc / vc
        tn = tau[j] + damping * (tn - tau[j])
        nn = nu[j] + damping * (nn - nu[j])
        dt = tn - tau[j]
        dn = nn - nu[j]
        den = 1.0 + dt * vu
        if not den > 0.0:
            counts[1] += 1                            # update would be improper
            continue
        change[0] = max(change[0], fabs(dt) / (1.0 + fabs(tn)))
        change[0] = max(change[0], fabs(dn) / (1.0 + fabs(nn)))
        for i in range(d):
            mu[i] += s[i] * (dn - dt * m) / den
        _syr(S, d, ld, -dt / den, s)
        tau[j] = tn
        nu[j] = nn
    return ST_OK


def ep_chunk(const double[::1, :] Kbx, const double[::1] kdiag, const double[::1] y,
             int lik, const double[::1] par, const double[::1] quad_x,
             const double[::1] quad_logw, double[::1] mu, double[::1, :] S,
             const double[::1, :] L, int d, double[::1] tau, double[::1] nu,
             double damping):
    """One EP pass over a chunk with the BV set (d slots) fixed: each example's site
    on its projected latent is removed, the example re-included by moment matching
    (with the residual variance gamma added), the site replaced (damped) and the
    posterior N(mu, S) of f(BV) updated by a rank-one step.

    ``Kbx``: K(BV, X_chunk), d x B; ``L``: the Cholesky factor of K_BV; ``S`` (lower
    triangle) and ``mu`` hold the posterior of f(BV) (capacity as L);
    ``tau``/``nu``: the chunk's sites (updated).

    A KeyboardInterrupt (``check_signals``) leaves them part-updated.

    Returns ``(status, n_skipped_cavity, n_skipped_update, max_change)``.
    """
    cdef int B = kdiag.shape[0], ld = S.shape[0], st
    cdef long counts[2]
    cdef double change = 0.0
    cdef Model md
    cdef double* work
    if d > 0 and (Kbx.shape[0] != d or Kbx.shape[1] != B):
        raise ValueError("Kbx must be d x B")
    if y.shape[0] != B or tau.shape[0] != B or nu.shape[0] != B:
        raise ValueError("per-example arrays must have the chunk's length")
    if not (S.shape[1] == ld and L.shape[0] == ld and L.shape[1] == ld
            and mu.shape[0] == ld and 0 <= d <= ld):
        raise ValueError("mu, S and L must share their capacity, d within it")
    if not 0.0 < damping <= 1.0:
        raise ValueError("damping must be in (0, 1]")
    counts[0] = counts[1] = 0
    if B == 0 or d == 0:
        return ST_OK, 0, 0, 0.0
    _model(&md, lik, par, quad_x, quad_logw)
    work = <double*> malloc(2 * <size_t> ld * sizeof(double))
    if work == NULL:
        raise MemoryError()
    try:
        with nogil:
            st = _ep(&Kbx[0, 0], &kdiag[0], &y[0], B, &md, &mu[0], &S[0, 0], &L[0, 0],
                     d, ld, &tau[0], &nu[0], damping, counts, &change, work)
    finally:
        free(work)
    return st, counts[0], counts[1], change
