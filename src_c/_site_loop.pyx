# Gaussian sites fitted to a GP classifier's likelihood: the loop shared by
# expectation propagation (R&W ch. 3.6, Alg. 3.5 and 5.2) and posterior linearisation.
# The two differ only in how one site is refitted and in their evidence, which come
# from _site_rules.pxd; everything here (the factorisations, marginals, parallel
# steps with their chord-Newton acceleration, sequential sweeps, the evidence
# gradient) serves both.
#
# Sites t_i(f_i) = exp(nu_i f_i - tau_i f_i^2 / 2) (natural parameters).  The posterior
# is N(mu, Sigma) with Sigma = (K^{-1} + T)^{-1}, mu = Sigma nu.  K is never inverted.
#
# Site precisions may be negative (likelihoods that are not log-concave, e.g. the noisy
# threshold), as long as the posterior stays proper.  The positive part is factorised
# as usual, Sigma_+ = (K^{-1} + T_+)^{-1} = K - K S B^{-1} S K with S = sqrt(T_+),
# B = I + S K S = L L'; the m negative sites N (T_N = -s^2) enter through an m x m
# correction (Woodbury):
#   Sigma = Sigma_+ + G s C^{-1} s G',   G = Sigma_+[:, N],   C = I - s G_NN s,
# proper iff C is positive definite; |I + K T| = |B| |C|; with P = K^{-1} G =
# E_N - S B^{-1} S K[:, N], R = (K + T^{-1})^{-1} = S B^{-1} S - Q Q' where
# Q = P s Lc^{-T} (C = Lc Lc'), and b = K^{-1} mu = b_+ + Q (W' nu), W = G s Lc^{-T}.
#
# Storage: n x n buffers are Fortran-ordered with leading dimension n; symmetric ones
# (K, Sigma, B^{-1}) are read and written in the LOWER triangle.  L receives the lower
# Cholesky factor of B; Linv is scratch that ends holding L^{-1} (lower).
#
# Policy for improper updates (documented in gpc/inference/ep.py):
# * a cavity with non-positive precision: the site is left unchanged (counted);
# * a site precision may become negative;
# * a sequential update that would leave another, proper, cavity improper is clipped
#   to precision 0 with nu = d log Z/dm (the tilted mean kept) if its precision was
#   negative, and skipped otherwise (counted);
# * a parallel step that makes the posterior or a proper cavity improper is retried
#   without acceleration, then with halved damping, and at the damping floor with its
#   negative proposals clipped (counted);
# * a tilted variance that rounds to <= 0 is clipped the same way (counted).

from libc.math cimport exp, fabs, log, log1p, sqrt, isfinite, INFINITY, M_PI, NAN
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset

import numpy as np

from scipy.linalg.cython_blas cimport ddot, dgemv
from _blas cimport (chol_lower, chol_solve_lower, fill_site_dK, lower_gram,
                   scale_site_inverse, solve_right_lower_t, symm_lower, symv_any,
                   symv_lower, syr_lower, syrk_lower, sync_threads,
                   tri_inverse_lower, trmm_lower, trmv_lower)
from _lik cimport LIK_GAUSSIAN
from _model cimport (Model, RULE_EP, RULE_PL, model_check_weights, model_of,
                    model_raise, model_site_root)
from _site_rules cimport _log_evidence, _site_update
from _signals cimport SIGNAL_BLOCK, check_signals


cdef extern from "_platform.h":
    void* gpc_big_alloc(size_t size) nogil


cdef extern from *:
    """
    /* Step timers (meson option `timers`, see bench/profile_ep.py): gpc_tic() reads
     * a monotonic clock and gpc_toc(k, t0) adds the time since t0 to step k.  The
     * normal build compiles both to nothing. */
    #define GPC_N_TIMERS 16
    static double gpc_timer_sums[GPC_N_TIMERS];
    #ifdef GPC_TIMERS
    #include <time.h>
    #define GPC_TIMERS_BUILT 1
    static double gpc_tic(void)
    {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
    }
    #define gpc_toc(k, t0) (gpc_timer_sums[(k)] += gpc_tic() - (t0))
    #else
    #define GPC_TIMERS_BUILT 0
    #define gpc_tic() 0.0
    #define gpc_toc(k, t0) ((void) (t0))
    #endif
    """
    int GPC_N_TIMERS
    int GPC_TIMERS_BUILT
    double gpc_timer_sums[16]
    double gpc_tic() nogil
    void gpc_toc(int k, double t0) nogil


cdef enum:
    # The steps gpc_toc times, in the order of TIMER_STEPS.
    T_FORM_B = 0
    T_POTRF = 1
    T_COPY_L = 2
    T_TRTRI = 3
    T_NEGATIVE = 4
    T_SINGLE = 5
    T_MARGINALS = 6
    T_EVIDENCE = 7
    T_PROPOSALS = 8
    T_CHORD_MODEL = 9
    T_LINEARISED = 10
    T_BINV = 11
    T_SEQUENTIAL = 12

TIMER_STEPS = (
    "B = I + S K S formed (and t = K nu)", "dpotrf (double)",
    "L copied for dtrtri (or the weak sites' rows)", "dtrtri (double)",
    "negative sites' correction",
    "single-precision factorisation (B formed, spotrf, strtri, L^{-1} copied)",
    "marginal means and variances", "log evidence",
    "site proposals (outside the linearised sweeps)",
    "chord model (slauum + scaling pass)", "linearised sweeps",
    "dlauum for B^{-1} (gradient)", "sequential site updates (rank-one)")


def timers(bint reset=False):
    """Seconds spent in each step of TIMER_STEPS since the last reset, as a dict;
    with ``reset``, set them to zero afterwards.  Only in a build with the meson
    option ``timers`` (``pip install . -Csetup-args=-Dtimers=true``)."""
    cdef int k
    if not GPC_TIMERS_BUILT:
        raise RuntimeError("gpc was built without timers: reinstall with "
                           "pip install . -Csetup-args=-Dtimers=true")
    out = {name: gpc_timer_sums[k] for k, name in enumerate(TIMER_STEPS)}
    if reset:
        for k in range(GPC_N_TIMERS):
            gpc_timer_sums[k] = 0.0
    return out


cdef extern from "_passes.h" nogil:
    void gpc_site_matrix_symv(const double* K, const double* s, const double* x,
                              double* L, double* t, long n)
    void gpc_site_matrix_symv_f(const double* K, const double* s, const double* x,
                                float* F, double* t, long n)
    void gpc_model_pass(float* M, const float* sf, const float* r, long n, int scale,
                        int square)


RULE_EXPECTATION_PROPAGATION = RULE_EP
RULE_POSTERIOR_LINEARISATION = RULE_PL


cdef enum:
    ST_OK = 0
    ST_NOT_PD = 1
    ST_NONFINITE = 2
    ST_IMPROPER = 3      # negative sites make the posterior improper (C not PD)
    ST_NOMEM = 4

STATUS_OK = ST_OK
STATUS_NOT_PD = ST_NOT_PD
STATUS_NONFINITE = ST_NONFINITE


cdef struct Neg:
    # The negative sites and their correction (see the header).
    int m           # number of negative sites
    int cap         # columns allocated in G, W, Q
    int* idx        # their indices (n)
    double* s       # sqrt(-tau_N) (n)
    double* G       # n x cap: Sigma_+[:, N]
    double* W       # n x cap: G s Lc^{-T}
    double* Q       # n x cap: P s Lc^{-T}
    double* C       # cap x cap: Lc
    double logdet   # log |C| / 2


cdef int _neg_init(Neg* ng, int n) noexcept nogil:
    ng.m = 0
    ng.cap = 0
    ng.logdet = 0.0
    ng.G = NULL; ng.W = NULL; ng.Q = NULL; ng.C = NULL
    ng.idx = <int*> malloc(n * sizeof(int))
    ng.s = <double*> malloc(n * sizeof(double))
    return ng.idx == NULL or ng.s == NULL


cdef void _neg_free(Neg* ng) noexcept nogil:
    free(ng.idx); free(ng.s); free(ng.G); free(ng.W); free(ng.Q); free(ng.C)
    ng.idx = NULL; ng.s = NULL; ng.G = NULL; ng.W = NULL; ng.Q = NULL; ng.C = NULL


cdef struct Run:
    # One EP or PL run (``run``): the problem, its work buffers, its options and
    # its progress, passed to each step.  Pointers into the caller's arrays.
    int n
    const double* K
    double* L             # chol(B), lower
    double* Linv          # L^{-1} (lower); B^{-1} at the end when the caller wants it
    double* tau
    double* nu
    double* S             # sqrt(max(tau, 0))
    double* b             # posterior-mean weights K^{-1} mu
    double* mu
    double* var
    Model md
    Neg ng
    # Work buffers: n x n (M32 for parallel runs, Sigma and V for sequential ones)
    # and O(n); ``owned`` is what run allocated for the n x n ones.
    double* owned
    float* M32
    double* Sigma
    double* V
    double* work
    double* block
    int* idx
    unsigned char* rowmask
    int nb
    double* col
    double* t
    double* w
    double* tau_old
    double* nu_old
    double* tnew
    double* nnew
    double* var_old
    double* mu_old
    double* sweeps_work   # for _linearised_sweeps
    # Options.
    double damping        # current damping of parallel steps
    double damping0       # the damping asked for, which it recovers to
    double min_damping
    double tol
    double keep_single    # residual below which single precision is redone in double
    int max_sweeps
    bint accelerate
    bint keep_factor      # every factorisation keeps L (see _keep_factor)
    # Progress.
    int status
    int sweep
    bint converged
    double logz
    double logz_old
    double change         # the residual of the last proposal (sequential: sweep)
    double change_old
    double best_change
    double dlik0
    double next_check     # when signal handlers next get their turn
    int counts[3]         # the last proposal's skipped, clipped, non-finite sites
    int n_skip
    int n_clip
    int n_nonfinite
    int n_clip_last
    int n_reject
    int n_bad
    int n_inner           # linearised sweeps
    int n_single          # single-precision factorisations
    int n_improper        # sites with an improper cavity before the step
    int n_stalled
    double accel_below    # residual below which chord steps are taken
    double chord_scale
    bint accel_used
    bint clip             # the step's negative proposals are clipped
    bint single           # the last factorisation was in single precision
    bint prev_single
    bint use_single
    bint single_ok
    bint l_kept           # the last factorisation wrote all of L
    bint prev_rough       # the last evidence is no reference for convergence
    bint prior_start


cdef inline double _ksym(const double* K, int i, int j, int n) noexcept nogil:
    """K[i, j] of a symmetric matrix stored in its lower triangle."""
    return K[i + j * n] if i >= j else K[j + i * n]


cdef int _neg_factor(const double* K, const double* Linv, const double* S,
                     const double* tau, int n, Neg* ng) noexcept nogil:
    """The correction for the negative sites at the factorisation in Linv (of the
    positive sites).  Returns ST_OK, ST_IMPROPER (C not positive definite) or
    ST_NOMEM.  O(n^2 m)."""
    cdef int i, c, c2, m = 0, cap
    cdef double* P
    for i in range(n):
        if tau[i] < 0.0:
            ng.idx[m] = i
            ng.s[m] = sqrt(-tau[i])
            m += 1
    ng.m = m
    ng.logdet = 0.0
    if m == 0:
        return ST_OK
    if m > ng.cap:
        cap = m if m > 2 * ng.cap else 2 * ng.cap
        if cap > n:
            cap = n
        free(ng.G); free(ng.W); free(ng.Q); free(ng.C)
        ng.G = <double*> malloc(n * cap * sizeof(double))
        ng.W = <double*> malloc(n * cap * sizeof(double))
        ng.Q = <double*> malloc(n * cap * sizeof(double))
        ng.C = <double*> malloc(cap * cap * sizeof(double))
        if ng.G == NULL or ng.W == NULL or ng.Q == NULL or ng.C == NULL:
            ng.cap = 0
            return ST_NOMEM
        ng.cap = cap
    P = ng.Q
    # P = S B^{-1} S K[:, N] (B^{-1} = L^{-T} L^{-1}); G = K[:, N] - K P = Sigma_+[:, N].
    for c in range(m):
        for i in range(n):
            ng.G[i + c * n] = _ksym(K, i, ng.idx[c], n)
            P[i + c * n] = S[i] * ng.G[i + c * n]
    trmm_lower(Linv, n, P, m, False)
    trmm_lower(Linv, n, P, m, True)
    for c in range(m):
        for i in range(n):
            P[i + c * n] *= S[i]
    symm_lower(K, n, P, n, m, -1.0, 1.0, ng.G, n)
    # P = E_N - P = K^{-1} G.
    for c in range(m):
        for i in range(n):
            P[i + c * n] = -P[i + c * n]
        P[ng.idx[c] + c * n] += 1.0
    # C = I - s G_NN s = Lc Lc'.
    for c2 in range(m):
        for c in range(c2, m):
            ng.C[c + c2 * m] = (1.0 if c == c2 else 0.0) \
                - ng.s[c] * ng.G[ng.idx[c] + c2 * n] * ng.s[c2]
    if chol_lower(ng.C, m) != 0:
        return ST_IMPROPER
    for c in range(m):
        ng.logdet += log(ng.C[c + c * m])
    # W = G s Lc^{-T}, Q = P s Lc^{-T}.
    for c in range(m):
        for i in range(n):
            ng.W[i + c * n] = ng.G[i + c * n] * ng.s[c]
            P[i + c * n] *= ng.s[c]
    if solve_right_lower_t(ng.C, m, ng.W, n) != 0 \
            or solve_right_lower_t(ng.C, m, P, n) != 0:
        return ST_NOMEM
    return ST_OK


cdef bint _no_positive_site(const double* tau, int n) noexcept nogil:
    """Whether no site precision is positive: then S = 0, B = I and Sigma_+ = K
    exactly (the prior, where every run without a warm start begins)."""
    cdef int i
    for i in range(n):
        if tau[i] > 0.0:
            return False
    return True


cdef int _factorise(Run* r, bint keep_l=True,
                    const unsigned char* rows=NULL) noexcept nogil:
    """At the run's sites: S = sqrt(max(tau, 0)), L = chol(I + S K S), Linv = L^{-1}
    (lower), the negative sites' correction in ng, and t = K nu (for
    ``_marginals``, summed in the pass that forms B).  Without ``keep_l`` only the diagonal of L and its rows i
    with ``rows[i]`` are written (for log|B| and the weak sites' variances): B is
    factorised and inverted in Linv, which saves copying L (two passes over n x n
    doubles) where the factor is not needed (see ``_keep_factor``).
    Without a positive site B = I: L and Linv are written as I (O(n^2) instead of
    two O(n^3) LAPACK calls on the identity).
    Returns ST_OK, ST_NOT_PD (B numerically singular), ST_IMPROPER or ST_NOMEM."""
    cdef int i, j, info = 0, n = r.n
    cdef double t0
    cdef const double* K = r.K
    cdef const double* tau = r.tau
    cdef double* S = r.S
    cdef double* L = r.L
    cdef double* Linv = r.Linv
    cdef Neg* ng = &r.ng
    cdef double* F = L if keep_l else Linv
    for i in range(n):
        S[i] = sqrt(tau[i]) if tau[i] > 0.0 else 0.0
    if _no_positive_site(tau, n):
        symv_lower(K, n, r.nu, r.t, 1.0, 0.0)
        for j in range(n):
            for i in range(j, n):
                L[i + j * n] = 1.0 if i == j else 0.0
                Linv[i + j * n] = L[i + j * n]
        return _neg_factor(K, Linv, S, tau, n, ng)
    # B is formed and factorised where the factor is wanted (L, or Linv when only
    # L's diagonal and some rows are), then copied to the other buffer.
    t0 = gpc_tic()
    gpc_site_matrix_symv(K, S, r.nu, F, r.t, n)
    gpc_toc(T_FORM_B, t0)
    t0 = gpc_tic()
    if chol_lower(F, n) != 0:
        return ST_NOT_PD
    gpc_toc(T_POTRF, t0)
    t0 = gpc_tic()
    if keep_l:
        for j in range(n):
            for i in range(j, n):
                Linv[i + j * n] = L[i + j * n]
    else:
        for i in range(n):
            if rows[i]:
                for j in range(i):
                    L[i + j * n] = Linv[i + j * n]
            L[i + i * n] = Linv[i + i * n]
    gpc_toc(T_COPY_L, t0)
    t0 = gpc_tic()
    info = tri_inverse_lower(Linv, n)
    gpc_toc(T_TRTRI, t0)
    if info != 0:
        return ST_NOT_PD
    t0 = gpc_tic()
    info = _neg_factor(K, Linv, S, tau, n, ng)
    gpc_toc(T_NEGATIVE, t0)
    return info


cdef enum:
    ROWS_KEPT_MAX = 64    # possibly weak sites whose rows of L are kept without L

cdef bint _keep_factor(bint accelerated, double change, double tol, const double* tau,
                       const double* var_old, int n, unsigned char* rows,
                       bint always) noexcept nogil:
    """Whether the factorisation after a parallel step must keep L: unless the step
    was a chord step from a residual ``change`` above 100 sqrt(tol) (its
    factorisation is then almost surely not the last, whose L the result returns;
    if it is, ``run`` refactorises: once per run at most) and at most
    ROWS_KEPT_MAX sites may be weak.  Those (tau_i var_i <= 1e-4 at the last
    marginals, ten times the weak sites' bound: their variances use L's rows, see
    ``_marginal_variances``) are marked in ``rows``; a site that turns weak
    unmarked takes the O(n^2) path."""
    cdef int i, m = 0
    if always or not accelerated or change <= 100.0 * sqrt(tol):
        return True
    for i in range(n):
        rows[i] = tau[i] * var_old[i] <= 1e-4
        m += rows[i]
    return m > ROWS_KEPT_MAX


cdef int _factorise_single(const double* K, const double* tau, const double* nu,
                           double* S, double* L, double* Linv, float* F, double* t,
                           int n, Neg* ng) noexcept nogil:
    """``_factorise`` in single precision, for a factorisation whose marginals only
    steer the next step (see ``run``): B = I + S K S, its Cholesky factor and
    L^{-1} computed in F (n x n, where L^{-1} stays for ``_linearisation``) with
    spotrf and strtri, then L^{-1} copied to Linv and diag(L) to L (for log|B|) in
    double; the rest of L is not written.  t = K nu as in ``_factorise`` (in
    double).  The marginals computed from it carry
    relative errors of about 1e-7 (B^{-1})_ii / (1 - (B^{-1})_ii), growing with the
    condition number of B.  Only without negative sites.  Returns ST_OK, or
    ST_NOT_PD when a site precision is negative, none is positive (the prior, which
    ``_factorise`` handles without LAPACK) or B is not positive definite in single
    precision (the caller then factorises in double)."""
    cdef int i, j, info = 0
    if _no_positive_site(tau, n):
        return ST_NOT_PD
    for i in range(n):
        if tau[i] < 0.0:
            return ST_NOT_PD
        S[i] = sqrt(tau[i])
    gpc_site_matrix_symv_f(K, S, nu, F, t, n)
    info = chol_lower(F, n)
    if info != 0:
        return ST_NOT_PD
    for j in range(n):
        L[j + j * n] = F[j + j * n]
    info = tri_inverse_lower(F, n)
    if info != 0:
        return ST_NOT_PD
    for j in range(n):
        for i in range(j, n):
            Linv[i + j * n] = F[i + j * n]
    return _neg_factor(K, Linv, S, tau, n, ng)


cdef void _mean(const double* K, const double* Linv, const double* S, const double* nu,
                int n, double* mu, double* bvec, const double* t,
                double* w) noexcept nogil:
    """mu = Sigma nu and b = nu - S B^{-1} S K nu (the posterior-mean weights), given
    t = K nu (from the factorisation)."""
    cdef int i
    for i in range(n):
        w[i] = S[i] * t[i]
    trmv_lower(Linv, n, w, False)
    trmv_lower(Linv, n, w, True)                   # w = B^{-1} S K nu
    for i in range(n):
        bvec[i] = nu[i] - S[i] * w[i]
    symv_lower(K, n, bvec, mu, 1.0, 0.0)           # mu = K b = Sigma nu


cdef enum:
    SMALL_SITES_TRMM = 8   # fewer small-precision sites: one dtrmv each, not dtrmm


cdef void _marginal_variances(const double* K, const double* L,
                              const unsigned char* rows, const double* Linv,
                              const double* S, int n, double* var, int* idx,
                              double* block, int nb) noexcept nogil:
    """var_i = Sigma_ii.  With q_i = 1 - (B^{-1})_ii = tau_i Sigma_ii, var_i = q_i/tau_i
    when q_i > 1e-5: (B^{-1})_ii, a sum of n squares, carries a rounding error of
    about sqrt(n) 1e-16, so var_i is then accurate to about 5e-10 at n = 2000.  The
    other sites (small site precision: well-classified points) use
    K_ii - |y|^2 with y = L^{-1} S K e_i.  Given the double-precision factor L (not
    NULL; with ``rows`` not NULL, only its rows i with rows[i] and its diagonal), and
    s_i > 1e-100, y costs O(n): L L' = I + S K S gives
    s_i y = L' e_i - L^{-1} e_i, row i of L and column i of L^{-1}, both O(s_i) off
    the diagonal with full relative accuracy; the diagonal entry, a difference of
    two numbers near 1, comes from the factorisation's own recurrence,
    L_ii^2 - 1 = s_i^2 K_ii - sum_{j<i} L_ij^2, without cancellation.  Otherwise y
    is computed nb columns at a time with one triangular matrix product (level-3
    BLAS) per block, or one matrix-vector product per column for fewer than
    SMALL_SITES_TRMM of them."""
    cdef int i, j, k, m = 0, start, cnt, c, one_i = 1
    cdef double binv, q, s, si, u, row, yi
    if _no_positive_site(S, n):
        # S = 0: Sigma_+ = K (every site would otherwise take the O(n^2) path).
        for i in range(n):
            var[i] = K[i + i * n]
        return
    for i in range(n):
        cnt = n - i
        binv = ddot(&cnt, <double*> &Linv[i + i * n], &one_i, <double*> &Linv[i + i * n],
                    &one_i)
        q = 1.0 - binv
        si = S[i]
        if si > 0.0 and q > 1e-5:
            var[i] = q / (si * si)
        elif L != NULL and (rows == NULL or rows[i]) and si > 1e-100:
            row = 0.0                                  # sum_{j<i} (L_ij / s_i)^2
            for j in range(i):
                u = L[i + j * n] / si
                row += u * u
            yi = si * (K[i + i * n] - row) / L[i + i * n]
            cnt = n - i - 1
            s = ddot(&cnt, <double*> &Linv[i + 1 + i * n], &one_i,
                     <double*> &Linv[i + 1 + i * n], &one_i) / (si * si) if cnt > 0 \
                else 0.0
            var[i] = K[i + i * n] - row - yi * yi - s
            if var[i] < 1e-300:
                var[i] = 1e-300
        else:
            idx[m] = i
            m += 1
    start = 0
    while start < m:
        cnt = nb if m - start > nb else m - start
        for c in range(cnt):
            i = idx[start + c]
            for k in range(n):
                # column i of symmetric K from its lower triangle
                block[k + c * n] = S[k] * _ksym(K, k, i, n)
        if cnt >= SMALL_SITES_TRMM:
            trmm_lower(Linv, n, block, cnt, False)
        else:
            # dtrmm packs all of L^{-1} whatever the block's width: for a few
            # columns, matrix-vector products are cheaper.
            for c in range(cnt):
                trmv_lower(Linv, n, block + c * n, False)
        for c in range(cnt):
            i = idx[start + c]
            s = 0.0
            for k in range(n):
                s += block[k + c * n] * block[k + c * n]
            var[i] = K[i + i * n] - s
            if var[i] < 1e-300:
                var[i] = 1e-300
        start += cnt


cdef int _full_sigma(const double* K, const double* Linv, const double* S, double* Sigma,
                     double* V, int n) noexcept nogil:
    """Sigma = K - V'V with V = L^{-1} S K (lower triangle of Sigma)."""
    cdef int i, j
    if _no_positive_site(S, n):
        for j in range(n):                   # S = 0: Sigma = K
            for i in range(j, n):
                Sigma[i + j * n] = K[i + j * n]
        return 0
    for j in range(n):
        for i in range(n):
            V[i + j * n] = S[i] * _ksym(K, i, j, n)
    trmm_lower(Linv, n, V, n, False)
    for j in range(n):
        for i in range(j, n):
            Sigma[i + j * n] = K[i + j * n]
    syrk_lower(False, V, n, n, n, -1.0, 1.0, Sigma)
    return 0


cdef void _marginals(Run* r, const unsigned char* rows) noexcept nogil:
    """Marginal variances and means (and b) at the sites factorised in L (the
    double-precision factor, not used after a single-precision factorisation; with
    ``rows``, only those rows of it and its diagonal, see ``_factorise``), Linv
    and ng, with t = K nu on entry (from the factorisation; then scratch).  With a
    Sigma buffer (sequential EP) the full covariance is rebuilt and its diagonal
    taken; otherwise only the diagonal is computed."""
    cdef char notr = b'N'
    cdef char tr = b'T'
    cdef int i, c, m = r.ng.m, one = 1, n = r.n
    cdef double pone = 1.0, zero = 0.0, acc
    cdef const double* K = r.K
    cdef const double* S = r.S
    cdef const double* nu = r.nu
    cdef double* var = r.var
    cdef double* Sigma = r.Sigma
    cdef double* t = r.t
    cdef const Neg* ng = &r.ng
    if Sigma != NULL:
        _full_sigma(K, r.Linv, S, Sigma, r.V, n)
        if m > 0:
            syrk_lower(True, ng.W, m, n, n, 1.0, 1.0, Sigma)
        for i in range(n):
            var[i] = Sigma[i + i * n]
            if var[i] < 1e-300:
                var[i] = 1e-300
    else:
        _marginal_variances(K, NULL if r.single else r.L, rows, r.Linv, S, n, var,
                            r.idx, r.block, r.nb)
        for i in range(n):
            acc = 0.0
            for c in range(m):
                acc += ng.W[i + c * n] * ng.W[i + c * n]
            var[i] += acc
    _mean(K, r.Linv, S, nu, n, r.mu, r.b, t, r.w)
    if m > 0:
        # u = W' nu;  mu += W u = G s C^{-1} s G' nu;  b += Q u.
        dgemv(&tr, &n, &m, &pone, ng.W, &n, <double*> nu, &one, &zero, t, &one)
        dgemv(&notr, &n, &m, &pone, ng.W, &n, t, &one, &pone, r.mu, &one)
        dgemv(&notr, &n, &m, &pone, ng.Q, &n, t, &one, &pone, r.b, &one)


cdef double _propose(const Model* md, const double[::1] y, const double* tau,
                     const double* nu, const double* var, const double* mu, bint clip,
                     double* tnew, double* nnew, int* counts) noexcept nogil:
    """Undamped EP updates of the n = len(y) sites from the marginals (var, mu)
    into (tnew, nnew); counts[0..2] += skipped, clipped, non-finite.  Returns the
    residual: the largest change of a site parameter relative to 1 + |new value|
    (NaN-propagating)."""
    cdef int i, flags
    cdef double change = 0.0
    for i in range(y.shape[0]):
        flags = _site_update(md, i, y[i], tau[i], nu[i], var[i], mu[i], 1.0, clip,
                             &tnew[i], &nnew[i])
        counts[0] += flags & 1
        counts[1] += (flags >> 1) & 1
        counts[2] += (flags >> 2) & 1
        change = _max_change(change, tau[i], tnew[i])
        change = _max_change(change, nu[i], nnew[i])
    return change


cdef inline double _max_change(double change, double old, double new) noexcept nogil:
    cdef double d = fabs(new - old) / (1.0 + fabs(new))
    if d > change or d != d:
        return d
    return change


cdef int _linearisation(const double* Linv, float* M, const double* S, int n,
                        const Neg* ng, bint have_float) noexcept nogil:
    """The first-order model of the marginals around the current sites, in single
    precision, from the factorisation's L^{-1} (lower, unchanged): off-diagonal
    posterior covariances in the strictly lower triangle of M, their squares in the
    strictly upper triangle (so that symv with uplo L / U gives Sigma x and
    (Sigma o Sigma) x without the diagonal), zero diagonal.  Sigma_+ off the
    diagonal is -(B^{-1})_ij / (s_i s_j), set to 0 where s_i s_j < 1e-6 (rounding
    would dominate); negative sites' rows are G, and W W' is added.  With
    ``have_float``, M already holds L^{-1} in single precision (``_factorise_single``).

    Single precision halves the cost of B^{-1} = L^{-T} L^{-1} (slauum) and the
    memory traffic of the cheap sweeps.  The model only steers those sweeps (the
    exact double-precision factorisation that follows them decides convergence): its
    error, measured below 5e-6 of sqrt(K_ii K_jj) for lambda_max(B) up to 1e5, slows
    the quadratic convergence by a factor that small.  Returns ST_OK or ST_NOMEM."""
    cdef int i, j, c, m = ng.m, info = 0
    cdef float *W32
    cdef float *sf = <float*> malloc(2 * n * sizeof(float))
    cdef float *r
    if sf == NULL:
        return ST_NOMEM
    r = sf + n
    _model_scales(S, n, sf, r)
    if not have_float:
        for j in range(n):
            for i in range(j, n):
                M[i + j * n] = <float> Linv[i + j * n]
    info = lower_gram(M, n)                     # lower triangle: L^{-T} L^{-1} = B^{-1}
    if m == 0:
        gpc_model_pass(M, sf, r, n, True, True)
        free(sf)
        return ST_OK
    gpc_model_pass(M, sf, r, n, True, False)
    free(sf)
    W32 = <float*> malloc(n * m * sizeof(float))
    if W32 == NULL:
        return ST_NOMEM
    for i in range(n * m):
        W32[i] = <float> ng.W[i]
    for c in range(m):
        j = ng.idx[c]
        for i in range(n):
            if i > j:
                M[i + j * n] = <float> ng.G[i + c * n]
            elif i < j:
                M[j + i * n] = <float> ng.G[i + c * n]
    syrk_lower(True, W32, m, n, n, 1.0, 1.0, M)
    free(W32)
    gpc_model_pass(M, NULL, NULL, n, False, True)
    return ST_OK


cdef void _model_scales(const double* S, int n, float* sf, float* r) noexcept nogil:
    """The site scales of ``gpc_model_pass``: sf = s and r = 1 / s (0 where s = 0),
    in single precision."""
    cdef int i
    for i in range(n):
        sf[i] = <float> S[i]
        r[i] = <float> (1.0 / S[i]) if S[i] > 0.0 else 0.0


def model_pass(float[::1, :] M, const double[::1] S, bint scale, bint square):
    """``gpc_model_pass`` (``_passes.h``) on M (n x n, single precision, in place)
    with the site scales S, as ``_linearisation`` calls it (for the tests)."""
    cdef int n = M.shape[0]
    if M.shape[1] != n or S.shape[0] != n:
        raise ValueError("model_pass: M must be n x n and S of length n.")
    cdef float[::1] sf = np.empty(n, dtype=np.float32)
    cdef float[::1] r = np.empty(n, dtype=np.float32)
    if n > 0:
        _model_scales(&S[0], n, &sf[0], &r[0])
        gpc_model_pass(&M[0, 0], &sf[0], &r[0], n, scale, square)


cdef enum:
    AA_MEMORY = 5       # Anderson acceleration: number of past steps mixed
    CHORD_HALVINGS = 3  # chord-Newton steps shortened before acceleration pauses
    STALLED_SWEEPS = 4  # stalled plain sweeps before a paused acceleration resumes
    RUNAWAY_GROWTH = 100  # residual growth (above 1) that stops a parallel run


cdef bint _anderson_weights(const double* dF, const double* f, int m2, int mk,
                            double* gamma) noexcept nogil:
    """gamma = argmin |f - dF gamma| over the mk columns (length m2) of dF, by the
    normal equations with a relative ridge of 1e-10 (mk <= AA_MEMORY).  Returns
    False if they are numerically singular."""
    cdef double A[AA_MEMORY * AA_MEMORY]
    cdef double acc, diag = 0.0
    cdef int i, j, k
    for i in range(mk):
        for j in range(i + 1):
            acc = 0.0
            for k in range(m2):
                acc += dF[k + i * m2] * dF[k + j * m2]
            A[i + j * mk] = acc                      # lower triangle, ld mk
        acc = 0.0
        for k in range(m2):
            acc += dF[k + i * m2] * f[k]
        gamma[i] = acc
        if A[i + i * mk] > diag:
            diag = A[i + i * mk]
    if not (diag > 0.0) or not isfinite(diag):
        return False
    for i in range(mk):
        A[i + i * mk] += 1e-10 * diag
    if chol_lower(A, mk) != 0:
        return False
    return chol_solve_lower(A, mk, gamma, 1) == 0


cdef struct Anderson:
    # Anderson acceleration of the fixed-point iteration x <- x + f(x) on
    # x = (tau, nu) (m2 = 2n entries): the last AA_MEMORY differences of x and of f
    # (columns of dX and dF, a ring from head), the previous point and step.
    int m2
    int mk                # columns held
    int head              # the next column written
    bint stored           # xprev and fprev hold a previous point and step
    bint mixed            # the last step was mixed
    double* dX            # m2 x AA_MEMORY
    double* dF            # m2 x AA_MEMORY
    double* xprev
    double* fprev
    double* f             # the current plain step


cdef void _anderson_init(Anderson* aa, double* work, int n) noexcept nogil:
    """Carve the state from ``work`` ((2 AA_MEMORY + 3) 2n doubles)."""
    aa.m2 = 2 * n
    aa.mk = 0
    aa.head = 0
    aa.stored = False
    aa.mixed = False
    aa.dX = work
    aa.dF = aa.dX + aa.m2 * AA_MEMORY
    aa.xprev = aa.dF + aa.m2 * AA_MEMORY
    aa.fprev = aa.xprev + aa.m2
    aa.f = aa.fprev + aa.m2


cdef void _anderson_step(Anderson* aa, double* tau, double* nu, int n) noexcept nogil:
    """Record the point (tau, nu) and its step aa.f, then move to
    x + f - (dX + dF) gamma (Anderson, type II), or by the plain step."""
    cdef int i, j, m2 = aa.m2, mk
    cdef double fi
    cdef double gamma[AA_MEMORY]
    if aa.stored:
        for i in range(n):
            aa.dX[i + aa.head * m2] = tau[i] - aa.xprev[i]
            aa.dX[n + i + aa.head * m2] = nu[i] - aa.xprev[n + i]
        for i in range(m2):
            aa.dF[i + aa.head * m2] = aa.f[i] - aa.fprev[i]
        aa.head = (aa.head + 1) % AA_MEMORY
        if aa.mk < AA_MEMORY:
            aa.mk += 1
    for i in range(n):
        aa.xprev[i] = tau[i]
        aa.xprev[n + i] = nu[i]
    memcpy(aa.fprev, aa.f, m2 * sizeof(double))
    aa.stored = True
    mk = aa.mk
    aa.mixed = mk > 0 and _anderson_weights(aa.dF, aa.f, m2, mk, gamma)
    for i in range(m2):
        fi = aa.f[i]
        if aa.mixed:
            for j in range(mk):
                fi -= gamma[j] * (aa.dX[i + j * m2] + aa.dF[i + j * m2])
        if i < n:
            tau[i] += fi
        else:
            nu[i - n] += fi


cdef void _anderson_back(Anderson* aa, double* tau, double* nu, int n) noexcept nogil:
    """Back to the plain step from the last point; the history is dropped."""
    cdef int i
    for i in range(n):
        tau[i] = aa.xprev[i] + aa.fprev[i]
        nu[i] = aa.xprev[n + i] + aa.fprev[n + i]
    aa.mixed = False
    aa.mk = 0
    aa.stored = False


cdef bint _linear_marginals(const Run* r, double* work) noexcept nogil:
    """The marginals (var, mu: the first 2n doubles of ``work``) linearised at the
    kept sites (r.tau_old, r.nu_old), where r.var and r.mu are exact, at the
    current sites (see ``_linearised_sweeps``); False where one is unusable
    (non-positive variance or cavity precision)."""
    cdef int i, n = r.n
    cdef bint usable = True
    cdef double *var = work
    cdef double *mu = work + n
    cdef double *dt = work + 2 * n
    cdef double *dn = work + 3 * n
    cdef const double* var0 = r.var
    cdef const double* mu0 = r.mu
    # 4n floats: dn, dt, M dn, M' dt, after the sweeps' and Anderson's doubles
    cdef float *x32 = <float*> (work + 6 * n + (2 * AA_MEMORY + 3) * 2 * n)
    for i in range(n):
        dt[i] = r.tau[i] - r.tau_old[i]
        dn[i] = r.nu[i] - r.nu_old[i] - dt[i] * mu0[i]
        x32[i] = <float> dn[i]
        x32[n + i] = <float> dt[i]
    symv_any(False, <const float*> r.M32, n, x32, x32 + 2 * n, <float> 1.0, <float> 0.0)
    symv_any(True, <const float*> r.M32, n, x32 + n, x32 + 3 * n, <float> 1.0,
             <float> 0.0)
    for i in range(n):
        # diagonal terms in double precision, off-diagonal ones from the model
        mu[i] = mu0[i] + var0[i] * dn[i] + x32[2 * n + i]
        var[i] = var0[i] - (var0[i] * var0[i] * dt[i] + x32[3 * n + i])
        if not (var[i] > 0.0) or not (
                1.0 / var[i] - model_site_root(&r.md, i, r.tau[i]) > 0.0):
            usable = False
    return usable


cdef int _linearised_sweeps(Run* r, const double[::1] y, double inner_tol,
                            int max_inner) noexcept nogil:
    """Parallel EP sweeps, after the exact one that moved the sites from the kept
    ones (tau0, nu0) = (r.tau_old, r.nu_old) to (tau, nu) = (r.tau, r.nu), on the
    marginals linearised at (tau0, nu0) where var0, mu0 = r.var, r.mu are
    exact:  var ~ var0 - (Sigma o Sigma) dtau,  mu ~ mu0 + Sigma (dnu -
    dtau o mu0).  Their fixed point is the EP fixed point up to second order in the
    site change, so alternating them with exact factorisations converges
    quadratically (a chord-Newton method) at O(n^2) per sweep.  The sweeps are a
    fixed-point iteration x <- x + f(x) on x = (tau, nu); Anderson acceleration
    (mixing the last AA_MEMORY steps, O(n) each) makes them converge where the
    iteration contracts slowly; a mixed step whose linearised marginals are unusable
    is replaced by the plain step.  Stops when the change falls below inner_tol,
    when a plain step's linearised marginal is unusable (non-positive variance or
    cavity precision: the last sites are kept) or the change grows three times
    running.  r.M32 is the single-precision model of ``_linearisation``.
    r.sweeps_work holds 8n + (2 AA_MEMORY + 3) 2n doubles.  Returns the number of
    sweeps."""
    cdef int i, k, grew = 0, n = r.n
    cdef int counts[3]
    cdef bint usable
    cdef double change, prev = INFINITY
    cdef double* work = r.sweeps_work
    cdef double *tnew = work + 4 * n
    cdef double *nnew = work + 5 * n
    cdef Anderson aa
    _anderson_init(&aa, work + 6 * n, n)
    for k in range(max_inner):
        usable = _linear_marginals(r, work)
        if usable:
            counts[0] = 0; counts[1] = 0; counts[2] = 0
            change = _propose(&r.md, y, r.tau, r.nu, work, work + n, False, tnew, nnew,
                              counts)
            usable = isfinite(change) and counts[2] == 0
        if not usable:
            if not aa.mixed:
                return k
            _anderson_back(&aa, r.tau, r.nu, n)
            continue
        for i in range(n):
            aa.f[i] = r.damping * (tnew[i] - r.tau[i])
            aa.f[n + i] = r.damping * (nnew[i] - r.nu[i])
        grew = grew + 1 if change > prev else 0
        if change <= inner_tol or grew >= 3:
            for i in range(n):
                r.tau[i] += aa.f[i]
                r.nu[i] += aa.f[n + i]
            return k + 1
        prev = change
        _anderson_step(&aa, r.tau, r.nu, n)
    return max_inner


cdef int _n_improper_cavities(const Model* md, const double* tau, const double* var,
                              int n) noexcept nogil:
    cdef int i, k = 0
    for i in range(n):
        if not (1.0 / var[i] - model_site_root(md, i, tau[i]) > 0.0):
            k += 1
    return k


cdef bint _cavities_stay_proper(const Model* md, const double* Sigma,
                                const double* col, double c, const double* tau, int i,
                                int n) noexcept nogil:
    """Whether Sigma - c col col' (the rank-one update of site i) leaves every other
    cavity that is proper now proper: 1/Sigma_jj - tau_j > 0 (tau_j / w_j with
    weights, see ``_site_update``)."""
    cdef int j
    cdef double v, t
    for j in range(n):
        v = Sigma[j + j * n]
        t = model_site_root(md, j, tau[j])
        if j == i or not (1.0 / v - t > 0.0):
            continue
        v -= c * col[j] * col[j]
        if not (v > 0.0 and 1.0 / v - t > 0.0):
            return False
    return True


cpdef Py_ssize_t scratch_size(Py_ssize_t n, bint parallel, bint want_binv) noexcept:
    """Doubles of the n x n work buffers of ``run``: L^{-1} (n^2, only without
    ``Binv``), then the linearised model in single precision (parallel: n^2 floats)
    or Sigma and V (sequential: 2 n^2)."""
    return (0 if want_binv else n * n) + ((n * n + 1) // 2 if parallel else 2 * n * n)


cdef enum:
    P_STEP = 0            # _parallel_propose: take the step
    P_REDONE = 1          # ... a single-precision factorisation was redone in double
    P_STOP = 2            # ... converged, out of sweeps, running away or failed


class SiteRun:
    """What ``run`` reports (the arrays it was given hold the sites, the factor
    and the marginals): ``status`` (STATUS_*), ``n_sweeps`` (sweeps followed by a
    factorisation), ``converged``, ``log_evidence``, ``dlik0`` (its derivative with
    respect to the likelihood's parameter), ``damping`` (final), the site counts
    ``n_skipped``, ``n_clipped``, ``n_nonfinite``, ``n_improper_final``,
    ``n_clipped_last_sweep`` and ``n_rejected`` (parallel steps retried),
    ``n_linearised`` (linearised sweeps), ``n_single`` (single-precision
    factorisations), ``residual`` (the largest relative site change of the last
    parallel proposal; sequential: of the last sweep) and ``Q`` (n x m, the
    correction of the m negative sites at the end: R = S B^{-1} S - Q Q')."""

    __slots__ = ("status", "n_sweeps", "converged", "log_evidence", "dlik0",
                 "damping", "n_skipped", "n_clipped", "n_nonfinite",
                 "n_improper_final", "n_clipped_last_sweep", "n_rejected",
                 "n_linearised", "n_single", "residual", "Q")

    def __init__(self, **fields):
        for key, value in fields.items():
            setattr(self, key, value)


cdef void _marginals_at(Run* r, const unsigned char* rows) noexcept nogil:
    """Marginals (and b) from the last factorisation (see ``_marginals``)."""
    cdef double t0 = gpc_tic()
    _marginals(r, rows)
    gpc_toc(T_MARGINALS, t0)


cdef void _evidence(Run* r, const double[::1] y) noexcept nogil:
    cdef double t0 = gpc_tic()
    r.logz = _log_evidence(&r.md, y, r.tau, r.nu, r.var, r.mu, r.L, r.ng.logdet,
                           &r.dlik0, &r.n_bad)
    gpc_toc(T_EVIDENCE, t0)


cdef int _single(Run* r) noexcept nogil:
    """``_factorise_single`` at the run's sites (timed)."""
    cdef double t0 = gpc_tic()
    cdef int status = _factorise_single(r.K, r.tau, r.nu, r.S, r.L, r.Linv, r.M32,
                                        r.t, r.n, &r.ng)
    gpc_toc(T_SINGLE, t0)
    return status


cdef double _proposal(Run* r, const double[::1] y, bint clip) noexcept nogil:
    """Every site's update from the current marginals into r.tnew, r.nnew (counted
    in r.counts, reset first); returns the residual."""
    cdef double t0 = gpc_tic(), change
    r.counts[0] = 0
    r.counts[1] = 0
    r.counts[2] = 0
    change = _propose(&r.md, y, r.tau, r.nu, r.var, r.mu, clip, r.tnew, r.nnew,
                      r.counts)
    gpc_toc(T_PROPOSALS, t0)
    return change


cdef int _factorise_double(Run* r) noexcept nogil:
    r.single = False
    r.l_kept = True
    return _factorise(r)


cdef int _start(Run* r, const double[::1] y) noexcept nogil:
    """Factorise at the starting sites (parallel runs: in single precision first),
    then the marginals and the evidence.  Negative precisions of a warm start that
    make the posterior improper under this K are dropped."""
    cdef int i
    r.prior_start = _no_positive_site(r.tau, r.n)
    r.single = r.M32 != NULL and _single(r) == ST_OK
    r.l_kept = not r.single
    if r.single:
        r.status = ST_OK
        r.n_single += 1
    else:
        r.status = _factorise_double(r)
    if r.status == ST_IMPROPER:
        r.n_reject += 1
        for i in range(r.n):
            if r.tau[i] < 0.0:
                r.tau[i] = 0.0
        r.status = _factorise_double(r)
    if r.status == ST_OK:
        _marginals_at(r, NULL)
        _evidence(r, y)
    return r.status


cdef int _parallel_propose(Run* r, const double[::1] y) noexcept nogil:
    """Propose every site from the current marginals (r.tnew, r.nnew; the residual
    in r.change) and decide: P_STEP, P_REDONE (the last factorisation was in single
    precision and only steers steps that leave a residual far above its rounding:
    near convergence, at the last sweep or with a non-finite proposal it has been
    redone in double) or P_STOP (converged, out of sweeps, running away or failed,
    see r.status)."""
    r.change = _proposal(r, y, False)
    if r.single and not (isfinite(r.change) and r.change >= r.keep_single
                         and r.sweep < r.max_sweeps):
        r.status = _factorise_double(r)
        if r.status != ST_OK:
            return P_STOP
        _marginals_at(r, NULL)
        _evidence(r, y)
        return P_REDONE
    r.n_skip += r.counts[0]
    r.n_clip += r.counts[1]
    r.n_nonfinite += r.counts[2]
    r.n_clip_last = r.counts[1]
    if not isfinite(r.change):
        # A site precision overflowed: the posterior has collapsed at that point
        # (e.g. duplicated inputs with conflicting labels under a noise-free
        # likelihood).  Numerically singular, like a failed factorisation: the
        # caller retries with jitter on K.
        r.status = ST_NOT_PD
        return P_STOP
    if r.change < r.best_change:
        r.best_change = r.change
    elif r.change > 1.0 and r.change > RUNAWAY_GROWTH * r.best_change:
        # Running away (e.g. undamped updates on a large, strongly correlated K):
        # stop unconverged; the caller tries its next start.
        return P_STOP
    if r.change <= r.tol and (r.sweep == 0 or r.prev_rough or fabs(r.logz - r.logz_old)
                              <= r.tol * (1.0 + fabs(r.logz))):
        r.converged = True
        return P_STOP
    return P_STOP if r.sweep >= r.max_sweeps else P_STEP


cdef void _adapt_schedule(Run* r) noexcept nogil:
    """Whether the next step is a chord step, its length and the damping, from how
    the residual moved."""
    if r.accel_used and r.change > 0.5 * r.change_old:
        # The chord step overshot: shorten it; after CHORD_HALVINGS failures the
        # linearisation is not good enough here: plain (damped) sweeps until the
        # residual has halved.
        if r.chord_scale > 0.5 ** CHORD_HALVINGS:
            r.chord_scale *= 0.5
        else:
            r.chord_scale = 1.0
            r.accel_below = 0.5 * (r.change if r.change < r.change_old
                                   else r.change_old)
            r.n_stalled = 0
    elif r.accel_used and r.chord_scale < 1.0:
        r.chord_scale *= 2.0
    elif r.accelerate and r.change > r.accel_below and r.change > 0.95 * r.change_old \
            and r.n_stalled >= 0:
        # ... or until STALLED_SWEEPS of them have barely reduced it (a slow or
        # unstable mode): then the chord model is the better bet.
        r.n_stalled += 1
        if r.n_stalled >= STALLED_SWEEPS:
            r.accel_below = r.change
    r.accel_used = r.accelerate and r.change <= r.accel_below
    # Plain parallel EP: a growing residual after the first sweeps means the joint
    # update overshoots; damp it more ... and while the residual falls, let it
    # recover (up to the damping asked for).
    if not r.accel_used and r.sweep > 2 and r.change > r.change_old \
            and r.damping > r.min_damping:
        r.damping = max(r.damping * 0.5, r.min_damping)
    elif r.sweep > 0 and r.change < r.change_old and r.damping < r.damping0:
        r.damping = min(r.damping * 1.25, r.damping0)


cdef void _prepare_step(Run* r) noexcept nogil:
    """Keep the current sites and marginals (a rejected step returns to them) and
    choose the next factorisation's precision."""
    cdef size_t size = r.n * sizeof(double)
    memcpy(r.tau_old, r.tau, size)
    memcpy(r.nu_old, r.nu, size)
    memcpy(r.var_old, r.var, size)
    memcpy(r.mu_old, r.mu, size)
    r.n_improper = r.counts[0]
    r.clip = False
    r.prev_single = r.single
    # The evidence of a single-precision factorisation, or of the prior a run
    # starts from, is no reference for the next one's convergence.
    r.prev_rough = r.single or (r.sweep == 0 and r.prior_start)
    # Single precision after a plain step from far off (the next residual stays far
    # above its rounding), as long as the residual has fallen at every step: its
    # rounding must not be what keeps it up.  The first step from the prior is
    # exempt: the prior's residual comes from no factorisation, and the first
    # step's commonly exceeds it.
    r.single_ok = r.single_ok and (r.sweep == 0 or r.change < r.change_old
                                   or (r.sweep == 1 and r.prior_start))
    r.use_single = r.M32 != NULL and r.single_ok and not r.accel_used \
        and r.change > 0.01


cdef int _move_sites(Run* r, const double[::1] y) noexcept nogil:
    """The damped step from the kept sites towards the proposal, continued by the
    linearised sweeps for a chord step (shortened by r.chord_scale).  Returns ST_OK
    or ST_NOMEM."""
    cdef int i
    cdef double t0
    for i in range(r.n):
        r.tau[i] = r.tau_old[i] + r.damping * (r.tnew[i] - r.tau_old[i])
        r.nu[i] = r.nu_old[i] + r.damping * (r.nnew[i] - r.nu_old[i])
    if not r.accel_used:
        return ST_OK
    t0 = gpc_tic()
    if _linearisation(r.Linv, r.M32, r.S, r.n, &r.ng, r.prev_single) != ST_OK:
        return ST_NOMEM
    gpc_toc(T_CHORD_MODEL, t0)
    t0 = gpc_tic()
    r.n_inner += 1 + _linearised_sweeps(
        r, y, 0.01 * (r.tol if r.tol > r.change * r.change else r.change * r.change),
        49)
    gpc_toc(T_LINEARISED, t0)
    if r.chord_scale < 1.0:
        for i in range(r.n):
            r.tau[i] = r.tau_old[i] + r.chord_scale * (r.tau[i] - r.tau_old[i])
            r.nu[i] = r.nu_old[i] + r.chord_scale * (r.nu[i] - r.nu_old[i])
    return ST_OK


cdef void _factorise_step(Run* r) noexcept nogil:
    """Factorise at the new sites and compute the marginals there (r.status ST_OK,
    ST_IMPROPER when the posterior or another cavity turned improper, or a
    failure).  A single-precision factorisation that fails, or whose marginals
    look improper, is redone in double."""
    cdef int attempt
    for attempt in range(2):
        r.single = r.use_single and attempt == 0
        if r.single:
            r.l_kept = False
            r.status = _single(r)
        else:
            r.l_kept = _keep_factor(r.accel_used, r.change, r.tol, r.tau, r.var_old,
                                    r.n, r.rowmask, r.keep_factor)
            r.status = _factorise(r, r.l_kept, r.rowmask)
        if r.status == ST_OK:
            _marginals_at(r, NULL if r.l_kept else r.rowmask)
            if r.clip or (_n_improper_cavities(&r.md, r.tau, r.var, r.n)
                          <= r.n_improper):
                return
            r.status = ST_IMPROPER
        if not r.single:
            return


cdef int _retreat(Run* r, const double[::1] y) except -1 nogil:
    """The step made the posterior, or a cavity, improper: back to the kept sites,
    to retry without acceleration, then with less damping, then with the negative
    proposals clipped (a proper posterior).  Returns 1, or 0 when nothing is left to
    try (r.status = ST_NOT_PD); -1 with a signal handler's exception set."""
    cdef size_t size = r.n * sizeof(double)
    r.n_reject += 1
    check_signals(&r.next_check)   # before its next factorisation
    memcpy(r.tau, r.tau_old, size)
    memcpy(r.nu, r.nu_old, size)
    memcpy(r.var, r.var_old, size)
    memcpy(r.mu, r.mu_old, size)
    if r.accel_used:
        r.accel_used = False
        r.accel_below = 0.5 * r.change
    elif r.damping > r.min_damping:
        r.damping = max(r.damping * 0.5, r.min_damping)
    elif not r.clip:
        r.clip = True
        _proposal(r, y, True)
        r.n_clip += r.counts[1]
        r.n_clip_last = r.counts[1]
    else:
        r.status = ST_NOT_PD
        return 0
    return 1


cdef int _parallel_step(Run* r, const double[::1] y) except -1 nogil:
    """One parallel step: move the sites, factorise there; a step that makes the
    posterior or a cavity improper is retreated from and retried."""
    while True:
        if _move_sites(r, y) != ST_OK:
            r.status = ST_NOMEM
            return 0
        _factorise_step(r)
        if r.status == ST_OK:
            r.n_single += r.single
        if r.status != ST_IMPROPER or not _retreat(r, y):
            return 0


cdef int _parallel_run(Run* r, const double[::1] y) except -1 nogil:
    """Parallel EP (or PL): every site from the current marginals, one
    factorisation per step, until converged, out of sweeps or failed."""
    cdef int action
    while r.status == ST_OK:
        check_signals(&r.next_check)
        action = _parallel_propose(r, y)
        if action == P_REDONE:
            continue
        if action == P_STOP:
            return 0
        _adapt_schedule(r)
        _prepare_step(r)
        _parallel_step(r, y)
        if r.status != ST_OK:
            return 0
        r.change_old = r.change
        r.sweep += 1
        r.logz_old = r.logz
        _evidence(r, y)
    return 0


cdef int _sequential_site(Run* r, const double[::1] y, int i, int n_neg) noexcept nogil:
    """Update site i from its cavity by a rank-one update of Sigma and mu; returns
    the number of negative site precisions after it."""
    cdef int j, flags, n = r.n
    cdef double t_new, n_new, dtau, dnu, c, coef
    cdef double sii = r.Sigma[i + i * n]
    cdef double mui = r.mu[i]
    cdef double* col = r.col
    cdef bint clip = False
    # s = Sigma e_i, gathered from the lower triangle.
    for j in range(i):
        col[j] = r.Sigma[i + j * n]
    for j in range(i, n):
        col[j] = r.Sigma[j + i * n]
    while True:
        flags = _site_update(&r.md, i, y[i], r.tau[i], r.nu[i], sii, mui, r.damping,
                             clip, &t_new, &n_new)
        dtau = t_new - r.tau[i]
        dnu = n_new - r.nu[i]
        # Unweighted, the rank-one update keeps Sigma positive definite even when
        # the new precision is negative: 1 + dtau Sigma_ii = (tau_cav + t_new) /
        # (tau_cav + tau_i) > 0; with weights (power EP) it may not, and the
        # update is skipped.  With negative sites it may leave another cavity
        # improper: then the update is clipped, and failing that skipped.
        if 1.0 + dtau * sii > 0.0:
            c = dtau / (1.0 + dtau * sii)
            if flags != 0 or n_neg - (r.tau[i] < 0.0) + (t_new < 0.0) == 0 \
                    or _cavities_stay_proper(&r.md, r.Sigma, col, c, r.tau, i, n):
                break
            if not clip and t_new < 0.0:
                clip = True
                continue
        flags = 1
        t_new = r.tau[i]
        n_new = r.nu[i]
        dtau = 0.0
        dnu = 0.0
        break
    if clip and flags == 0:
        flags = 2
    r.n_skip += flags & 1
    r.n_clip += (flags >> 1) & 1
    r.n_nonfinite += (flags >> 2) & 1
    if dtau == 0.0 and dnu == 0.0:
        return n_neg
    n_neg += (t_new < 0.0) - (r.tau[i] < 0.0)
    coef = dnu * (1.0 - c * sii) - c * mui
    for j in range(n):
        r.mu[j] += coef * col[j]
    syr_lower(n, -c, col, r.Sigma)
    r.tau[i] = t_new
    r.nu[i] = n_new
    return n_neg


cdef bint _sequential_refactorise(Run* r, const double[::1] y) noexcept nogil:
    """After a sweep: a fresh factorisation at the new sites (no drift from the
    rank-one updates), the sweep's residual and the evidence.  True when the run
    stops: converged, or failed (r.status)."""
    cdef int i
    # An improper posterior here is rounding (the updates keep it proper):
    # numerically singular, like a failed factorisation.
    r.status = _factorise_double(r)
    if r.status == ST_IMPROPER:
        r.status = ST_NOT_PD
    if r.status != ST_OK:
        return True
    _marginals_at(r, NULL)
    r.change = 0.0
    for i in range(r.n):
        r.change = _max_change(r.change, r.tau_old[i], r.tau[i])
        r.change = _max_change(r.change, r.nu_old[i], r.nu[i])
    if not isfinite(r.change):
        r.status = ST_NONFINITE
        return True
    r.logz_old = r.logz
    _evidence(r, y)
    r.converged = r.change <= r.tol and fabs(r.logz - r.logz_old) \
        <= r.tol * (1.0 + fabs(r.logz))
    return r.converged


cdef int _sequential_run(Run* r, const double[::1] y,
                         const int[:, ::1] orders) except -1 nogil:
    """Sequential EP: sweeps over the sites in ``orders[sweep]``, each followed by a
    fresh factorisation, until converged, out of sweeps or failed."""
    cdef int i, k, n_neg
    cdef double t0
    while r.status == ST_OK and r.sweep < r.max_sweeps:
        memcpy(r.tau_old, r.tau, r.n * sizeof(double))
        memcpy(r.nu_old, r.nu, r.n * sizeof(double))
        r.n_clip_last = r.n_clip
        n_neg = 0
        for i in range(r.n):
            n_neg += r.tau[i] < 0.0
        t0 = gpc_tic()
        for k in range(r.n):
            if k % SIGNAL_BLOCK == 0:    # O(n^2) per site
                check_signals(&r.next_check)
            n_neg = _sequential_site(r, y, orders[r.sweep, k], n_neg)
        gpc_toc(T_SEQUENTIAL, t0)
        r.sweep += 1
        r.n_clip_last = r.n_clip - r.n_clip_last
        if _sequential_refactorise(r, y):
            return 0
    return 0


cdef void _finish(Run* r, bint want_binv) noexcept nogil:
    """L for the result where the last factorisation kept only its diagonal (a
    chord step that converged at once, e.g. a Gaussian likelihood), and B^{-1} =
    L^{-T} L^{-1} from the last inverse factor when the caller wants it."""
    cdef int info = 0, n = r.n
    cdef double t0
    if r.status == ST_OK and not r.l_kept:
        gpc_site_matrix_symv(r.K, r.S, r.nu, r.L, r.w, n)
        if chol_lower(r.L, n) != 0:
            r.status = ST_NOT_PD
    t0 = gpc_tic()
    if r.status == ST_OK and want_binv:
        info = lower_gram(r.Linv, n)
    gpc_toc(T_BINV, t0)


cdef class SiteOptions:
    """The options of one ``run``: ``parallel`` (parallel steps, else sequential
    sweeps), ``damping`` (of the site updates), ``min_damping`` (the floor of its
    halvings), ``tol`` (the convergence tolerance), ``max_sweeps``,
    ``accelerate`` (chord-Newton steps on the linearised marginals),
    ``damping_start`` (parallel only: the damping of the first steps if below
    ``damping``; -1: none) and ``keep_factor`` (every factorisation keeps L: for
    the tests, which check that skipping it changes nothing).  See ``run``."""

    cdef readonly bint parallel, accelerate, keep_factor
    cdef readonly double damping, min_damping, tol, damping_start
    cdef readonly int max_sweeps

    def __init__(self, bint parallel, double damping, double min_damping, double tol,
                 int max_sweeps, bint accelerate, double damping_start=-1.0,
                 bint keep_factor=False):
        self.parallel = parallel
        self.damping = damping
        self.min_damping = min_damping
        self.tol = tol
        self.max_sweeps = max_sweeps
        self.accelerate = accelerate
        self.damping_start = damping_start
        self.keep_factor = keep_factor

    def replace(self, **changes):
        """A copy with the given fields changed."""
        fields = {name: getattr(self, name) for name in (
            "parallel", "damping", "min_damping", "tol", "max_sweeps", "accelerate",
            "damping_start", "keep_factor")}
        fields.update(changes)
        return SiteOptions(**fields)


cdef class SiteBuffers:
    """The arrays ``run`` writes for n sites, reusable across runs: ``L`` (n x n
    Fortran, chol(B) in its lower triangle), ``b`` (the posterior-mean weights
    K^{-1} mu), ``S`` (sqrt(max(tau, 0))), ``mu`` and ``var`` (the marginal means
    and variances), ``Binv`` (n x n Fortran, receives B^{-1} in its lower
    triangle for the gradient, or 0 x 0) and ``scratch`` (None, or at least
    ``scratch_size`` doubles from which the n x n work buffers are carved)."""

    cdef double[::1, :] L
    cdef double[::1] b, S, mu, var
    cdef double[::1, :] Binv
    cdef double[::1] scratch

    def __init__(self, double[::1, :] L, double[::1] b, double[::1] S,
                 double[::1] mu, double[::1] var, double[::1, :] Binv,
                 double[::1] scratch=None):
        self.L = L
        self.b = b
        self.S = S
        self.mu = mu
        self.var = var
        self.Binv = Binv
        self.scratch = scratch


cdef void _run_options(Run* r, SiteOptions opt) noexcept:
    r.damping0 = opt.damping
    r.damping = opt.damping_start if opt.parallel \
        and 0.0 < opt.damping_start < opt.damping else opt.damping
    r.min_damping = opt.min_damping
    r.tol = opt.tol
    r.keep_single = sqrt(10.0 * opt.tol)
    r.max_sweeps = opt.max_sweeps
    r.accelerate = opt.accelerate
    r.keep_factor = opt.keep_factor
    r.status = ST_OK
    r.logz_old = INFINITY
    r.change = INFINITY
    r.change_old = INFINITY
    r.best_change = INFINITY
    r.accel_below = 0.1
    r.chord_scale = 1.0
    r.n_stalled = -1
    r.single_ok = True
    r.l_kept = True


cdef int _run_buffers(Run* r, double* scratch, Py_ssize_t size, bint parallel,
                      double* Binv) noexcept:
    """Point the run's work buffers at ``scratch`` (``size`` doubles, in the order
    of ``scratch_size``) or, without it, at a fresh allocation (r.owned); L^{-1}
    lives in the caller's Binv when there is one (B^{-1} ends there).  Returns ST_OK
    or ST_NOMEM (``_run_free`` frees what was allocated either way)."""
    cdef int n = r.n
    cdef double* region = scratch
    if region == NULL:
        region = r.owned = <double*> gpc_big_alloc(<size_t> size * sizeof(double))
    r.work = <double*> malloc((17 + 2 * (2 * AA_MEMORY + 3)) * n * sizeof(double))
    r.nb = 128 if n > 128 else n
    r.block = <double*> malloc(n * r.nb * sizeof(double))
    r.idx = <int*> malloc(n * sizeof(int))
    r.rowmask = <unsigned char*> malloc(n)
    if _neg_init(&r.ng, n) != 0 or region == NULL or r.work == NULL \
            or r.block == NULL or r.idx == NULL or r.rowmask == NULL:
        return ST_NOMEM
    r.Linv = Binv
    if Binv == NULL:
        r.Linv = region
        region += <size_t> n * n
    if parallel:
        r.M32 = <float*> region
    else:
        r.Sigma = region
        r.V = region + <size_t> n * n
    r.col = r.work
    r.t = r.work + n
    r.w = r.work + 2 * n
    r.tau_old = r.work + 3 * n
    r.nu_old = r.work + 4 * n
    r.tnew = r.work + 5 * n
    r.nnew = r.work + 6 * n
    r.var_old = r.work + 7 * n
    r.mu_old = r.work + 8 * n
    r.sweeps_work = r.work + 9 * n
    return ST_OK


cdef void _run_free(Run* r) noexcept:
    free(r.owned)
    free(r.work)
    free(r.block)
    free(r.idx)
    free(r.rowmask)
    _neg_free(&r.ng)


cdef _check_run(const double[::1, :] K, const double[::1] y, const Model* md,
                double[::1] tau, double[::1] nu, SiteBuffers out, SiteOptions opt,
                const int[:, ::1] orders):
    n = K.shape[0]
    if K.shape[0] != K.shape[1]:
        raise ValueError("K must be square.")
    for name, length in (("y", y.shape[0]), ("tau", tau.shape[0]),
                         ("nu", nu.shape[0]), ("b", out.b.shape[0]),
                         ("S", out.S.shape[0]), ("mu", out.mu.shape[0]),
                         ("var", out.var.shape[0])):
        if length != n:
            raise ValueError(f"{name} must have length {n}.")
    if out.L.shape[0] != n or out.L.shape[1] != n:
        raise ValueError("L must be n x n.")
    if out.Binv.shape[0] > 0 and (out.Binv.shape[0] != n or out.Binv.shape[1] != n):
        raise ValueError("Binv must be n x n or 0 x 0.")
    if not opt.parallel and (orders is None or orders.shape[0] < opt.max_sweeps
                             or orders.shape[1] != n):
        raise ValueError("orders must have one permutation of range(n) per sweep.")
    if md.rule == RULE_PL and md.lik != LIK_GAUSSIAN and md.evq.n == 0:
        raise ValueError("posterior linearisation needs the evidence quadrature rule.")
    model_check_weights(md, n)


cdef void _run_arrays(Run* r, const double[::1, :] K, double[::1] tau,
                      double[::1] nu, SiteBuffers out) noexcept:
    """Point the run at the caller's arrays (checked, n > 0: &K[0, 0] of an empty
    array is an out-of-bounds index)."""
    r.n = K.shape[0]
    r.K = &K[0, 0]
    r.L = &out.L[0, 0]
    r.tau = &tau[0]
    r.nu = &nu[0]
    r.S = &out.S[0]
    r.b = &out.b[0]
    r.mu = &out.mu[0]
    r.var = &out.var[0]


def run(const double[::1, :] K, const double[::1] y, model, double[::1] tau,
        double[::1] nu, SiteBuffers out not None, SiteOptions options not None,
        const int[:, ::1] orders=None):
    """Run EP (``model.rule`` RULE_EP) or posterior linearisation (RULE_PL: sites by
    ``_slr`` at the marginals, log evidence by ``_pl_log_evidence`` with the
    Gauss-Hermite rule ``model.evq``) to convergence from the sites (tau, nu) given
    (updated in place); returns a :class:`SiteRun`.  ``model`` is a
    ``gpc._model.LikelihoodModel``, ``out`` the :class:`SiteBuffers` written,
    ``options`` the :class:`SiteOptions` (the damping, tolerance and schedule
    below), ``orders`` the sequential sweeps' site orders (one permutation of
    range(n) per sweep; unused by parallel runs).  Everything below holds for
    both rules; PL's site precisions are never negative, so its posterior and
    cavities are always proper.

    Sequential updates (``_sequential_run``) visit the sites in ``orders[sweep]``
    with rank-one updates of the full Sigma, which is recomputed from a fresh
    Cholesky after every sweep; they stop when a sweep changes no site parameter by
    more than ``tol`` (relative) and the log evidence by less than
    ``tol * (1 + |log Z|)``.

    Parallel updates (``_parallel_run``) refresh every site from the current
    marginals, then refactorise once; they stop when that update (undamped) would
    change no site by more than ``tol`` (the sites are then kept: they are a fixed
    point to that tolerance) and the log evidence moved by less than
    ``tol * (1 + |log Z|)`` since the previous factorisation (unless that was in
    single precision or at the prior, which needs no factorisation: B = I).  Their
    damping is halved (down to ``min_damping``) whenever the largest site change
    grows from one sweep to the next, and raised by 1.25 (up to its initial value)
    while it falls.  With ``accelerate``, once the residual is below 0.1, each
    factorisation is followed by cheap sweeps on the linearised marginals (see
    ``_linearised_sweeps``): quadratic convergence; after a step that fails to
    halve the residual it is suspended until plain sweeps have halved it.  A
    parallel step whose negative site precisions make the posterior improper is
    rejected and retried (see the header).  The first factorisation and those
    after a plain step from a residual above 0.01 (until the residual first fails
    to fall, the first step from the prior excepted) are done in single precision
    (``_factorise_single``) when no site precision is negative: their marginals
    only steer a step whose result is far from converged.  One whose residual
    comes out below sqrt(10 tol), or that is the last allowed, fails, or gives
    improper marginals, is redone in double, so convergence, the evidence and the
    gradient always come from a double-precision factorisation.

    ``out.Binv``: an n x n buffer that receives B^{-1} (lower triangle) at the
    final sites for the gradient, or a 0 x 0 array.  ``damping_start`` (parallel
    only): the damping of the first steps if below ``damping``, which it recovers
    to while the residual falls.  ``out.scratch`` (optional): at least
    ``scratch_size(n, parallel, Binv.shape[0] > 0)`` doubles from which the n x n
    work buffers are carved (reused across calls, it saves their page faults);
    without it they are allocated here.  ``keep_factor``: every factorisation
    keeps L, which ``_keep_factor`` otherwise skips where it is not needed (for the
    tests, which check that the shortcut changes nothing).

    On return L = chol(B), S = sqrt(max(tau, 0)), b = K^{-1} mu (the posterior-mean
    weights), mu and var the marginal means and variances at the final sites.
    Signal handlers get their turn (``check_signals``) every SIGNAL_BLOCK sites of
    a sequential sweep and before every parallel step and retried factorisation:
    a KeyboardInterrupt leaves with tau, nu, L, b, S, mu and var part-updated.
    """
    cdef Run r
    cdef const Model* md = model_of(model)
    cdef int n = K.shape[0]
    cdef bint want_binv = out.Binv.shape[0] > 0, parallel = options.parallel
    cdef Py_ssize_t size
    _check_run(K, y, md, tau, nu, out, options, orders)
    if n == 0:
        return SiteRun(status=ST_OK, n_sweeps=0, converged=True, log_evidence=0.0,
                       dlik0=0.0, damping=options.damping, n_skipped=0, n_clipped=0,
                       n_nonfinite=0, n_improper_final=0, n_clipped_last_sweep=0,
                       n_rejected=0, n_linearised=0, n_single=0, residual=0.0,
                       Q=np.zeros((0, 0), order="F"))
    memset(&r, 0, sizeof(Run))
    _run_arrays(&r, K, tau, nu, out)
    r.md = md[0]
    _run_options(&r, options)
    size = scratch_size(n, parallel, want_binv)
    sync_threads(n)
    try:
        if _run_buffers(&r, &out.scratch[0] if out.scratch is not None
                        and out.scratch.shape[0] >= size > 0 else NULL, size, parallel,
                        &out.Binv[0, 0] if want_binv else NULL) != ST_OK:
            raise MemoryError()
        with nogil:
            if _start(&r, y) == ST_OK:
                if parallel:
                    _parallel_run(&r, y)
                else:
                    _sequential_run(&r, y, orders)
            _finish(&r, want_binv)
        if r.status == ST_NOMEM:
            raise MemoryError()
        Q = _negative_correction(&r)
    finally:
        _run_free(&r)
        model_raise(model)
    return SiteRun(status=r.status, n_sweeps=r.sweep, converged=bool(r.converged),
                   log_evidence=r.logz, dlik0=r.dlik0, damping=r.damping,
                   n_skipped=r.n_skip, n_clipped=r.n_clip,
                   n_nonfinite=r.n_nonfinite, n_improper_final=r.n_bad,
                   n_clipped_last_sweep=r.n_clip_last, n_rejected=r.n_reject,
                   n_linearised=r.n_inner, n_single=r.n_single, residual=r.change,
                   Q=Q)


cdef object _negative_correction(const Run* r):
    """Q (n x m, Fortran): the correction of the m negative sites at the end."""
    cdef int k, n = r.n
    Q = np.zeros((n, r.ng.m if r.status == ST_OK else 0), order="F")
    for k in range(Q.shape[1]):
        Q[:, k] = <double[:n]> (r.ng.Q + k * n)
    return Q


def evidence_dK(const double[::1] S, const double[::1] b, const double[::1, :] Q,
                double[::1, :] dK):
    """dK = (b b' - R)/2 with R = (K + T^{-1})^{-1} = S B^{-1} S - Q Q' (R&W Alg. 5.2;
    Q from ``run``, n x 0 without negative sites), written in full; dK holds
    B^{-1} (lower triangle, from ``run``) on entry."""
    cdef int n = dK.shape[0]
    cdef int m = Q.shape[1]
    if S.shape[0] != n or b.shape[0] != n or dK.shape[1] != n or Q.shape[0] != n:
        raise ValueError("evidence_dK: inconsistent shapes.")
    if n == 0:
        return
    with nogil:
        if m == 0:
            fill_site_dK(&dK[0, 0], &b[0], NULL, &S[0], n)   # scaled in the pass
        else:
            scale_site_inverse(&dK[0, 0], &S[0], n)
            syrk_lower(True, &Q[0, 0], m, n, n, -1.0, 1.0, &dK[0, 0])
            fill_site_dK(&dK[0, 0], &b[0], NULL, NULL, n)
