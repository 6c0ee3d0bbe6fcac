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
from _model cimport Model, model_moments, model_of, model_raise
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


cdef struct Online:
    # One online pass over a chunk (online_chunk): the chunk's kernel values and
    # labels, the BV set, the per-example outputs (pointers into the caller's
    # arrays), the running traces and the counts.
    const double* Kbx       # d0 x B
    int d0
    const double* Kxx       # B x B
    const double* kdiag
    const double* y
    int B
    const Model* md
    double* alpha
    double* C
    double* L
    double* dq              # diag(K_BV^{-1})
    int* src
    int d                   # the BV set's size
    int ld                  # its capacity, max_basis + 1
    int max_basis
    double tol
    double tr_k             # tr(K_BV) ...
    double tr_q             # ... and tr(K_BV^{-1}): their product bounds its condition
    double* logz
    double* tau
    double* nu
    int* joined
    int n_done
    long counts[4]          # projected, joined, removed, skipped
    double* work            # 6 ld: k, C k, e, two columns for _remove, L^{-1} k


cdef void _traces(Online* o) noexcept nogil:
    """tr(K_BV) = |L|_F^2 and tr(K_BV^{-1}) = sum diag(Q) of the current set."""
    cdef int i, t
    o.tr_k = 0.0
    o.tr_q = 0.0
    for i in range(o.d):
        o.tr_q += o.dq[i]
        for t in range(i + 1):
            o.tr_k += o.L[i + <size_t> t * o.ld] * o.L[i + <size_t> t * o.ld]


cdef int _worst(const Online* o) noexcept nogil:
    """The BV that goes after a join, or -1: over capacity, the one of smallest
    score; when K_BV became too ill-conditioned (MAX_COND), the most redundant
    one (largest [K_BV^{-1}]_ii = 1 / its novelty given the others)."""
    cdef int i, worst = -1
    cdef double best, den, score
    if o.d > o.max_basis:
        best = INFINITY
        worst = 0
        for i in range(o.d):
            den = o.dq[i] + o.C[i + <size_t> i * o.ld]
            score = o.alpha[i] * o.alpha[i] / den if den > 0.0 else INFINITY
            if score < best:
                best = score
                worst = i
    elif o.tr_k * o.tr_q > MAX_COND:
        best = -1.0
        worst = 0
        for i in range(o.d):
            if o.dq[i] > best:
                best = o.dq[i]
                worst = i
    return worst


cdef void _project(Online* o, double q, double r) noexcept nogil:
    """Projected update: x stays out of the BV set (s = C k + e)."""
    cdef int i, d = o.d
    cdef double* Ck = o.work + o.ld
    cdef double* e = o.work + 2 * o.ld
    for i in range(d):
        e[i] += Ck[i]                            # s = C k + e
        o.alpha[i] += q * e[i]
    _syr(o.C, d, o.ld, r, e)


cdef void _join(Online* o, int j, double kstar, double gamma, double q,
                double r) noexcept nogil:
    """Example j joins the BV set as slot d (s = (C k, 1)); then, over capacity or
    too ill-conditioned, a BV is removed (``_worst``)."""
    cdef int i, t, d = o.d, ld = o.ld, worst
    cdef double* Ck = o.work + ld
    cdef double* e = o.work + 2 * ld
    cdef double* lk = o.work + 5 * ld
    cdef double e2 = _dot(e, e, d)
    for i in range(d + 1):
        o.C[d + <size_t> i * ld] = 0.0
    for i in range(d):
        o.L[d + <size_t> i * ld] = lk[i]
        o.dq[i] += e[i] * e[i] / gamma
    o.L[d + <size_t> d * ld] = sqrt(gamma)
    o.dq[d] = 1.0 / gamma
    o.tr_k += kstar
    o.tr_q += (e2 + 1.0) / gamma
    Ck[d] = 1.0                                  # s = (C k, 1)
    o.alpha[d] = 0.0
    for i in range(d + 1):
        o.alpha[i] += q * Ck[i]
    _syr(o.C, d + 1, ld, r, Ck)
    o.src[d] = o.d0 + j
    o.d = d = d + 1
    o.joined[j] = 1
    o.counts[1] += 1
    worst = _worst(o)
    if worst < 0:
        return
    if worst == d - 1:
        o.joined[j] = 0                          # the newcomer itself goes
    for t in range(worst + 1):
        o.tr_k -= o.L[worst + <size_t> t * ld] * o.L[worst + <size_t> t * ld]
    _remove(o.alpha, o.C, o.L, o.dq, o.src, d, ld, worst, o.work + 3 * ld,
            o.work + 4 * ld)
    o.d = d = d - 1
    o.tr_q = 0.0
    for i in range(d):
        o.tr_q += o.dq[i]
    o.counts[2] += 1


cdef void _predictive(Online* o, int j, double* m, double* s2,
                      double* gamma) noexcept nogil:
    """The predictive N(m, s2) of example j's latent and its novelty gamma, with
    k = K(BV, x), C k, e = Q k and L^{-1} k left in the work vectors."""
    cdef int i, t, d = o.d, ld = o.ld
    cdef double kstar = o.kdiag[j]
    cdef double* k = o.work
    cdef double* Ck = o.work + ld
    cdef double* e = o.work + 2 * ld
    cdef double* lk = o.work + 5 * ld
    for i in range(d):
        t = o.src[i]
        k[i] = o.Kbx[t + <size_t> j * o.d0] if t < o.d0 \
            else o.Kxx[(t - o.d0) + <size_t> j * o.B]
    _symv(o.C, d, ld, k, Ck)
    for i in range(d):
        lk[i] = k[i]
    _trsv(o.L, d, ld, lk, False)                 # L^{-1} k
    for i in range(d):
        e[i] = lk[i]
    _trsv(o.L, d, ld, e, True)                   # e = Q k
    m[0] = _dot(k, o.alpha, d)
    s2[0] = kstar + _dot(k, Ck, d)
    gamma[0] = kstar - _dot(lk, lk, d)
    if s2[0] < 0.0:
        s2[0] = 0.0


cdef int _online_step(Online* o, int j) noexcept nogil:
    """Example j of the chunk (see the header); ST_NONFINITE when its predictive
    moments are not finite (the state broke down)."""
    cdef double kstar = o.kdiag[j], m, s2, gamma, vu, lz, q, r, dp, den
    _predictive(o, j, &m, &s2, &gamma)
    if not (isfinite(m) and isfinite(s2) and isfinite(gamma)):
        return ST_NONFINITE
    model_moments(o.md, o.y[j], m, s2, &lz, &q, &r, &dp)
    o.logz[j] = lz
    if not (isfinite(lz) and isfinite(q) and isfinite(r)):
        # The example has (numerically) zero predictive probability, e.g. a
        # hard-constraint likelihood far outside its support under a narrow
        # predictive: it is skipped (no update, no site), and counted.
        o.joined[j] = 0
        o.tau[j] = 0.0
        o.nu[j] = 0.0
        o.counts[3] += 1
        return ST_OK
    if gamma <= o.tol * kstar or o.d == 0 and kstar <= 0.0:
        vu = s2 - gamma if gamma > 0.0 else s2
        _project(o, q, r)
        o.joined[j] = 0
        o.counts[0] += 1
    else:
        vu = s2                                  # gamma is 0 once x joined
        _join(o, j, kstar, gamma, q, r)
    den = 1.0 + r * vu
    if den > 0.0 and vu > 0.0:
        o.tau[j] = -r / den
        o.nu[j] = (q - m * r) / den
    else:
        o.tau[j] = 0.0
        o.nu[j] = 0.0
    return ST_OK


cdef int _online(Online* o) except -1 nogil:
    """Process the B examples of a chunk in turn (see the header); ST_NONFINITE at
    the first example whose predictive moments are not finite (o.n_done), -1
    with an exception set when a signal handler raised (checked every
    SIGNAL_BLOCK examples)."""
    cdef int j
    cdef double next_check = 0.0
    _traces(o)
    for j in range(o.B):
        if j % SIGNAL_BLOCK == 0:
            check_signals(&next_check)
        if _online_step(o, j) != ST_OK:
            o.n_done = j
            return ST_NONFINITE
    o.n_done = o.B
    return ST_OK


cdef class Basis:
    """The basis-vector set of the online pass (``online_chunk``), updated in
    place: ``alpha`` and ``diag_q`` (diag of K_BV^{-1}) (cap), ``C`` and ``L``
    (the Cholesky factor of K_BV) (cap x cap, Fortran, lower triangle) with cap =
    ``max_basis`` + 1, holding the state of the first ``d`` slots; ``src`` (cap)
    the slots' kernel rows (see ``online_chunk``); ``tol`` the novelty threshold
    (an example joins when gamma > tol k(x, x))."""

    cdef double[::1] alpha, diag_q
    cdef double[::1, :] C, L
    cdef int[::1] src
    cdef readonly int d, max_basis
    cdef readonly double tol

    def __init__(self, double[::1] alpha, double[::1, :] C, double[::1, :] L,
                 double[::1] diag_q, int[::1] src, int d, int max_basis, double tol):
        cdef int ld = C.shape[0]
        if not (C.shape[1] == ld and L.shape[0] == ld and L.shape[1] == ld
                and alpha.shape[0] == ld and diag_q.shape[0] == ld
                and src.shape[0] == ld and ld == max_basis + 1):
            raise ValueError("alpha, diag_q, C, L and src must have capacity "
                             "max_basis + 1")
        if not 0 <= d <= max_basis:
            raise ValueError("d must be in [0, max_basis]")
        self.alpha = alpha
        self.C = C
        self.L = L
        self.diag_q = diag_q
        self.src = src
        self.d = d
        self.max_basis = max_basis
        self.tol = tol


cdef class ChunkOutput:
    """What ``online_chunk`` writes per example of a chunk of B: ``logz`` (the log
    predictive probability), ``tau`` and ``nu`` (its site on the projected
    latent) and ``joined`` (1 if it is in the BV set at the end of its step)."""

    cdef double[::1] logz, tau, nu
    cdef int[::1] joined

    def __init__(self, double[::1] logz, double[::1] tau, double[::1] nu,
                 int[::1] joined):
        cdef Py_ssize_t B = logz.shape[0]
        if tau.shape[0] != B or nu.shape[0] != B or joined.shape[0] != B:
            raise ValueError("per-example arrays must have the chunk's length")
        self.logz = logz
        self.tau = tau
        self.nu = nu
        self.joined = joined


cdef class BasisPosterior:
    """The posterior N(mu, S) of f(BV) that ``ep_chunk`` updates in place, with the
    BV set fixed: ``mu`` (cap), ``S`` (cap x cap, Fortran, lower triangle) and
    ``L`` (the Cholesky factor of K_BV, same capacity), for the first ``d``
    slots."""

    cdef double[::1] mu
    cdef double[::1, :] S
    cdef const double[::1, :] L
    cdef readonly int d

    def __init__(self, double[::1] mu, double[::1, :] S, const double[::1, :] L,
                 int d):
        cdef int ld = S.shape[0]
        if not (S.shape[1] == ld and L.shape[0] == ld and L.shape[1] == ld
                and mu.shape[0] == ld and 0 <= d <= ld):
            raise ValueError("mu, S and L must share their capacity, d within it")
        self.mu = mu
        self.S = S
        self.L = L
        self.d = d


def online_chunk(const double[::1, :] Kbx, const double[::1, :] Kxx,
                 const double[::1] kdiag, const double[::1] y, model,
                 Basis basis not None, ChunkOutput out not None):
    """One online pass over a chunk of B examples (see ``src_c/_sparse.pyx``).

    ``Kbx``: K(BV at the start, X_chunk), d x B (d rows, the current BV set in slot
    order, as ``basis.src`` says on entry: ``src[i] = i``); ``Kxx``:
    K(X_chunk, X_chunk); ``kdiag``: K(x, x) of the chunk; ``y``: its labels;
    ``model``: the likelihood, a ``gpc._model.LikelihoodModel``.  ``basis`` (a
    :class:`Basis`) holds the BV set, updated in place; ``out`` (a
    :class:`ChunkOutput`) receives per example ``logz`` (log predictive
    probability), ``tau``/``nu`` (its site on the projected latent) and ``joined``
    (1 if it is in the BV set at the end of its step).  ``basis.src`` receives,
    per final slot, its kernel row: < d (the entry d) an old BV's row of Kbx, else
    d + chunk index.  An example whose predictive moments are not finite (zero
    predictive probability) is skipped: no update, site 0, its log Z (-inf or
    NaN) in ``logz``.

    A KeyboardInterrupt (``check_signals``) leaves the state part-updated.

    Returns ``(status, n_done, d, n_projected, n_joined, n_removed, n_skipped)``;
    status NONFINITE when the state itself broke down (non-finite predictive mean
    or variance; example ``n_done`` not processed).
    """
    cdef int d0 = basis.d, B = kdiag.shape[0], st, i
    cdef Online o
    if Kbx.shape[0] != d0 or Kbx.shape[1] != B and d0 > 0:
        raise ValueError("Kbx must be d x B")
    if Kxx.shape[0] != B or Kxx.shape[1] != B:
        raise ValueError("Kxx must be B x B")
    if y.shape[0] != B or out.logz.shape[0] != B:
        raise ValueError("per-example arrays must have the chunk's length")
    o.md = model_of(model)
    for i in range(d0):
        basis.src[i] = i
    if B == 0:
        return ST_OK, 0, d0, 0, 0, 0, 0
    _online_arrays(&o, Kbx, Kxx, kdiag, y, basis, out)
    o.work = <double*> malloc(6 * <size_t> o.ld * sizeof(double))
    if o.work == NULL:
        raise MemoryError()
    try:
        with nogil:
            st = _online(&o)
    finally:
        free(o.work)
        model_raise(model)
    basis.d = o.d
    return (st, o.n_done, o.d, o.counts[0], o.counts[1], o.counts[2],
            o.counts[3])


cdef void _online_arrays(Online* o, const double[::1, :] Kbx,
                         const double[::1, :] Kxx, const double[::1] kdiag,
                         const double[::1] y, Basis basis,
                         ChunkOutput out) noexcept:
    """Point the pass at the chunk's (checked, B > 0) and the BV set's arrays."""
    o.d0 = basis.d
    o.Kbx = &Kbx[0, 0] if o.d0 > 0 else NULL
    o.Kxx = &Kxx[0, 0]
    o.kdiag = &kdiag[0]
    o.y = &y[0]
    o.B = kdiag.shape[0]
    o.alpha = &basis.alpha[0]
    o.C = &basis.C[0, 0]
    o.L = &basis.L[0, 0]
    o.dq = &basis.diag_q[0]
    o.src = &basis.src[0]
    o.d = basis.d
    o.ld = basis.C.shape[0]
    o.max_basis = basis.max_basis
    o.tol = basis.tol
    o.logz = &out.logz[0]
    o.tau = &out.tau[0]
    o.nu = &out.nu[0]
    o.joined = &out.joined[0]
    o.n_done = 0
    o.counts[0] = o.counts[1] = o.counts[2] = o.counts[3] = 0


cdef struct EPChunk:
    # One EP pass over a chunk (ep_chunk): the chunk's kernel values, labels and
    # sites, the posterior of f(BV) (pointers into the caller's arrays) and the
    # counts.
    const double* Kbx       # d x B
    const double* kdiag
    const double* y
    int B
    const Model* md
    double* mu
    double* S
    const double* L
    int d
    int ld
    double* tau
    double* nu
    double damping
    long counts[2]          # skipped: improper cavity; zero mass or improper update
    double change           # the largest relative site change
    double* work            # 2 ld


cdef int _ep(EPChunk* c) except -1 nogil:
    """One EP pass over a chunk with the BV set fixed (see gpc/sparse.py), on the
    posterior N(mu, S) of f(BV): the marginal of u = p'f(BV), p = Q k, is
    N(p'mu, p'S p) with no cancellation (the (alpha, C) form would subtract Q).
    -1 with an exception set when a signal handler raised (checked every
    SIGNAL_BLOCK examples)."""
    cdef int j, i, d = c.d, ld = c.ld
    cdef double m, vu, gamma, tc, vc, mc, lz, g, h, dp, v1, m1, tn, nn, dt, dn, den
    cdef double next_check = 0.0
    cdef double* k
    cdef double* s = c.work
    cdef double* e = c.work + ld
    cdef double* tau = c.tau
    cdef double* nu = c.nu
    for j in range(c.B):
        if j % SIGNAL_BLOCK == 0:
            check_signals(&next_check)
        k = <double*> c.Kbx + <size_t> j * d
        for i in range(d):
            e[i] = k[i]
        _trsv(c.L, d, ld, e, False)
        gamma = c.kdiag[j] - _dot(e, e, d)           # k* - k'Q k, backward stable
        if gamma < 0.0:
            gamma = 0.0
        _trsv(c.L, d, ld, e, True)                   # p = Q k
        _symv(c.S, d, ld, e, s)                      # S p
        m = _dot(e, c.mu, d)
        vu = _dot(e, s, d)                            # variance of u = p'f(BV)
        # The cavity (site removed), vc = vu / (1 - tau vu), mc = (m - vu nu) / (..),
        # written without dividing by vu.  vu = 0 (k = 0: x unrelated to the BV
        # set) leaves nothing to update, so it is not counted as skipped (a skipped
        # update keeps EP from being called converged).
        if vu == 0.0:
            continue
        tc = 1.0 - tau[j] * vu
        if not (tc > 0.0 and vu > 0.0):
            c.counts[0] += 1                          # improper cavity: skipped
            continue
        vc = vu / tc
        mc = (m - vu * nu[j]) / tc
        model_moments(c.md, c.y[j], mc, vc + gamma, &lz, &g, &h, &dp)
        if not (isfinite(lz) and isfinite(g) and isfinite(h)):
            c.counts[1] += 1                          # zero tilted mass: skipped
            continue
        v1 = vc + vc * vc * h                         # the new marginal of u
        m1 = mc + vc * g
        if not v1 > 0.0:
            c.counts[1] += 1                          # tilted variance lost: skipped
            continue
        tn = 1.0 / v1 - 1.0 / vc
        nn = m1 / v1 - mc / vc
        tn = tau[j] + c.damping * (tn - tau[j])
        nn = nu[j] + c.damping * (nn - nu[j])
        dt = tn - tau[j]
        dn = nn - nu[j]
        den = 1.0 + dt * vu
        if not den > 0.0:
            c.counts[1] += 1                          # update would be improper
            continue
        c.change = max(c.change, fabs(dt) / (1.0 + fabs(tn)))
        c.change = max(c.change, fabs(dn) / (1.0 + fabs(nn)))
        for i in range(d):
            c.mu[i] += s[i] * (dn - dt * m) / den
        _syr(c.S, d, ld, -dt / den, s)
        tau[j] = tn
        nu[j] = nn
    return ST_OK


def ep_chunk(const double[::1, :] Kbx, const double[::1] kdiag, const double[::1] y,
             model, BasisPosterior post not None, double[::1] tau, double[::1] nu,
             double damping):
    """One EP pass over a chunk with the BV set (``post.d`` slots) fixed: each
    example's site on its projected latent is removed, the example re-included by
    moment matching (with the residual variance gamma added; the likelihood of
    ``model``, a ``gpc._model.LikelihoodModel``), the site replaced (damped) and
    the posterior N(mu, S) of f(BV) updated by a rank-one step.

    ``Kbx``: K(BV, X_chunk), d x B; ``post`` (a :class:`BasisPosterior`): mu, S
    (lower triangle) and the Cholesky factor L of K_BV; ``tau``/``nu``: the chunk's
    sites (updated).

    A KeyboardInterrupt (``check_signals``) leaves them part-updated.

    Returns ``(status, n_skipped_cavity, n_skipped_update, max_change)``.
    """
    cdef int B = kdiag.shape[0], d = post.d, st
    cdef EPChunk c
    if d > 0 and (Kbx.shape[0] != d or Kbx.shape[1] != B):
        raise ValueError("Kbx must be d x B")
    if y.shape[0] != B or tau.shape[0] != B or nu.shape[0] != B:
        raise ValueError("per-example arrays must have the chunk's length")
    if not 0.0 < damping <= 1.0:
        raise ValueError("damping must be in (0, 1]")
    c.md = model_of(model)
    if B == 0 or d == 0:
        return ST_OK, 0, 0, 0.0
    c.Kbx = &Kbx[0, 0]
    c.kdiag = &kdiag[0]
    c.y = &y[0]
    c.B = B
    c.mu = &post.mu[0]
    c.S = &post.S[0, 0]
    c.L = &post.L[0, 0]
    c.d = d
    c.ld = post.S.shape[0]
    c.tau = &tau[0]
    c.nu = &nu[0]
    c.damping = damping
    c.counts[0] = c.counts[1] = 0
    c.change = 0.0
    c.work = <double*> malloc(2 * <size_t> c.ld * sizeof(double))
    if c.work == NULL:
        raise MemoryError()
    try:
        with nogil:
            st = _ep(&c)
    finally:
        free(c.work)
        model_raise(model)
    return st, c.counts[0], c.counts[1], c.change
