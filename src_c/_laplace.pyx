# Laplace approximation for GP classification: Newton's method for the posterior mode
# and the total derivative of the approximate log evidence with respect to K.
#
# Notation (Rasmussen & Williams, ch. 3 and 5): psi(f) = -a'f/2 + sum log p(y|f) with
# f = K a; W = -d2 log p, sW = sqrt(W); B = I + sW K sW = L L'.  K is never inverted.
#
# Storage: every n x n buffer is Fortran-ordered with leading dimension n.  K is
# symmetric and only its LOWER triangle is read, so a C-ordered symmetric K may be
# passed as K.T without a copy.  L receives the lower Cholesky factor of B; dK is
# written in full (both triangles).
#
# Newton steps factorise B in single precision (spotrf) while it is well conditioned,
# in L's own storage (n^2 floats fit in its first n/2 + 1 columns, both triangles),
# and once they converge fast, the next steps reuse the last factor (chord steps).
# Every step is taken in correction form, da = g - sW B^{-1} sW K g with the
# gradient g = d log p/df - a in double, so that an inexact factor only makes a step
# slightly inexact and the next step corrects it: the iteration converges to the
# mode of the exact one.  An inexact step ends the iteration only when the step
# sizes show that its error is small (``_trust_inexact``).  The factor returned in L
# is always a fresh double-precision one at the returned point.

from libc.math cimport fabs, log, sqrt, isfinite, INFINITY
from libc.stdlib cimport malloc, free

from scipy.linalg.cython_lapack cimport spotrs

from _blas cimport (chol_lower, chol_solve_lower, fill_site_dK,
                    scale_site_inverse, site_inverse, symv_lower, sync_threads)
from _lik cimport lik_differentiable
from _model cimport (LIK_PYTHON, Model, model_check_weights, model_of, model_raise,
                    model_site_derivs)
from _signals cimport check_signals


# EP's passes over K (only the site-matrix ones are used here: the header's other
# static functions are not warned about).
cdef extern from *:
    """
    #if defined(__GNUC__)
    #pragma GCC diagnostic push
    #pragma GCC diagnostic ignored "-Wunused-function"
    #endif
    #include "_passes.h"
    #if defined(__GNUC__)
    #pragma GCC diagnostic pop
    #endif
    """
    void gpc_site_matrix_symv(const double* K, const double* s, const double* x,
                              double* L, double* t, long n) nogil
    void gpc_site_matrix_symv_f(const double* K, const double* s, const double* x,
                                float* F, double* t, long n) nogil


# Status codes returned by newton_mode (read from Python as _laplace.STATUS_*).
cdef enum:
    ST_OK = 0
    ST_NOT_PD = 1          # Cholesky of B failed: K is not positive semi-definite
    ST_NONFINITE = 2       # a non-finite value appeared (bad K or overflow)
    ST_NO_DERIVATIVES = 3  # the likelihood has no derivatives (step, noisy threshold)
    ST_SINGLE_FAILED = 4   # internal: a single-precision factorisation failed

STATUS_OK = ST_OK
STATUS_NOT_PD = ST_NOT_PD
STATUS_NONFINITE = ST_NONFINITE
STATUS_NO_DERIVATIVES = ST_NO_DERIVATIVES

#: Default ``max_single_cond`` of newton_mode: single-precision factorisations only
#: while the bound 1 + sum_i W_i K_ii on the condition number of B is below it, so
#: that a step's relative rounding error (about 6e-8 times the condition number) is
#: small.
SINGLE_MAX_COND = 1e5


cdef struct Newton:
    # The problem and the iteration's state and work vectors (each of length n).
    int n
    const Model* md
    const double* K
    const double* y
    double* L           # the factor of B; single precision: <float*> L
    double* a           # the current point: a = K^{-1} f ...
    double* f           # ... and f
    double* sW          # sqrt(W) at f
    double* sF          # the sW with which the factor in L was formed
    double* d1          # d log p/df at f
    double* w           # W = -d2 log p/df2 at f (clipped at 0)
    double* g           # the gradient of psi in a's coordinates: d1 - a
    double* c           # K g, then B^{-1} sW K g
    double* da          # the Newton step of a ...
    double* df          # ... and of f (K da)
    double* a_try       # the point tried by the line search
    double* f_try
    float* x32          # a right-hand side in single precision


cdef struct Outcome:
    # What a run reports (newton_mode's return value).
    int status, n_iter, halvings, n_single, n_reused
    bint converged
    double psi, logdet


cdef int _derivs_at(Newton* nw) noexcept nogil:
    """d1 = d log p/df, w = -d2 log p/df2 (clipped at 0), sW = sqrt(w) and the
    gradient g = d1 - a at the current point."""
    cdef int i
    cdef double lp, g1, g2, g3
    for i in range(nw.n):
        if model_site_derivs(nw.md, i, nw.y[i], nw.f[i], &lp, &g1, &g2, &g3) != 0:
            return ST_NO_DERIVATIVES
        nw.d1[i] = g1
        nw.w[i] = -g2 if g2 < 0.0 else 0.0
    for i in range(nw.n):
        nw.sW[i] = sqrt(nw.w[i])
        nw.g[i] = nw.d1[i] - nw.a[i]
    return ST_OK


cdef double _psi(const Newton* nw, const double* a, const double* f,
                 double* err) noexcept nogil:
    """psi = -a'f/2 + sum_i log p(y_i | f_i); err receives a bound on its rounding
    error (a few ulps of the magnitudes summed), below which changes are noise."""
    cdef int i, n = nw.n
    cdef double lp, g1, g2, g3, s = 0.0, mag = 0.0, af = 0.0
    for i in range(n):
        model_site_derivs(nw.md, i, nw.y[i], f[i], &lp, &g1, &g2, &g3)
        s += lp
        mag += fabs(lp) + 0.5 * fabs(a[i] * f[i])
        af += a[i] * f[i]
    err[0] = 64.0 * 2.220446049250313e-16 * (mag + n)
    return s - 0.5 * af


cdef double _max_abs(const double* x, int n) noexcept nogil:
    """max_i |x_i|, NaN if any x_i is NaN."""
    cdef int i
    cdef double m = 0.0, d
    for i in range(n):
        d = fabs(x[i])
        if d > m or d != d:
            m = d
    return m


cdef double _start(Newton* nw, double* err) noexcept nogil:
    """Warm start: f = K a, kept only if it beats the cold start f = 0 (else a and f
    are zeroed).  Returns psi at the starting point and its rounding bound."""
    cdef int i, n = nw.n
    cdef double psi0, psi, err0
    for i in range(n):
        nw.da[i] = 0.0
    psi0 = _psi(nw, nw.da, nw.da, &err0)
    if _max_abs(nw.a, n) == 0.0:
        for i in range(n):
            nw.f[i] = 0.0
        err[0] = err0
        return psi0
    symv_lower(nw.K, n, nw.a, nw.f, 1.0, 0.0)
    psi = _psi(nw, nw.a, nw.f, err)
    if psi >= psi0:
        return psi
    for i in range(n):
        nw.a[i] = 0.0
        nw.f[i] = 0.0
    err[0] = err0
    return psi0


cdef double _cond_bound(const Newton* nw) noexcept nogil:
    """1 + sum_i W_i K_ii: the eigenvalues of B = I + sW K sW lie between 1 and
    1 + trace(sW K sW), so this bounds its condition number."""
    cdef int i, n = nw.n
    cdef double s = 1.0
    for i in range(n):
        s += nw.w[i] * nw.K[i + <size_t> i * n]
    return s


cdef int _factorise(Newton* nw, bint single) noexcept nogil:
    """B = I + sW K sW at the current point and its lower Cholesky factor, in L, or
    with ``single`` in single precision in L's storage (spotrf); c = K g in the
    same pass over K.  Returns ST_OK, ST_NOT_PD (double) or ST_SINGLE_FAILED."""
    cdef int n = nw.n, info = 0
    if single:
        gpc_site_matrix_symv_f(nw.K, nw.sW, nw.g, <float*> nw.L, nw.c, n)
        info = chol_lower(<float*> nw.L, n)
        return ST_OK if info == 0 else ST_SINGLE_FAILED
    gpc_site_matrix_symv(nw.K, nw.sW, nw.g, nw.L, nw.c, n)
    return ST_OK if chol_lower(nw.L, n) == 0 else ST_NOT_PD


cdef void _direction(Newton* nw, bint single) noexcept nogil:
    """The Newton step from the current point, in correction form:
    da = g - sF B^{-1} sF K g and df = K da, with the factor of B = I + sF K sF in
    L (from this point, sF = sW, or from the previous one: a chord step), c = K g
    given; the solve in single precision for a single-precision factor."""
    cdef char uplo = b'L'
    cdef int i, n = nw.n, one = 1, info = 0
    for i in range(n):
        nw.c[i] *= nw.sF[i]
    if single:
        for i in range(n):
            nw.x32[i] = <float> nw.c[i]
        spotrs(&uplo, &n, &one, <float*> nw.L, &n, nw.x32, &n, &info)
        for i in range(n):
            nw.c[i] = nw.x32[i]
    else:
        chol_solve_lower(nw.L, n, nw.c, 1)
    for i in range(n):
        nw.da[i] = nw.g[i] - nw.sF[i] * nw.c[i]
    symv_lower(nw.K, n, nw.da, nw.df, 1.0, 0.0)


cdef int _line_search(Newton* nw, double psi_old, double err, double* psi_new,
                      double* err_new) noexcept nogil:
    """Step halving on psi along the Newton direction (f is linear in a): the point
    (a, f) + t (da, df), t = 1, 1/2, ..., goes to (a_try, f_try) once it does not
    lower psi by more than rounding noise (near the mode the gain is below what psi
    can resolve).  Returns the number of halvings (at most 40), or -1 when no step
    length gives an ascent (psi_new, err_new: psi at the last point tried)."""
    cdef int i, k = 0, n = nw.n
    cdef double t = 1.0
    while True:
        for i in range(n):
            nw.a_try[i] = nw.a[i] + t * nw.da[i]
            nw.f_try[i] = nw.f[i] + t * nw.df[i]
        psi_new[0] = _psi(nw, nw.a_try, nw.f_try, err_new)
        if psi_new[0] >= psi_old - err - err_new[0]:
            return k
        if k == 40:
            return -1
        t *= 0.5
        k += 1


cdef bint _trust_inexact(double delta, double delta_prev, bint revealed,
                         double converged_at) noexcept nogil:
    """Whether a step from an inexact factor (single precision, or the previous
    point's) may be taken as it is: finite, and, if it is small enough to end the
    iteration, at most 1e-3 times the step before it while that ratio bounds its
    relative error (``revealed``), so that it ends at the mode of the exact
    iteration.  Each step's error shows up as the size of the next step: the
    ratio bounds the error of a chord step (whose factor's error is that of the
    step before), and that of a single-precision step after another one."""
    if not isfinite(delta):
        return False
    return delta > converged_at or (revealed and delta <= 1e-3 * delta_prev)


cdef bint _chord_pays(double delta_prev, double delta_prev2,
                      bint prev_fresh) noexcept nogil:
    """Whether the next step may reuse the last factorisation (a chord step, no
    factorisation), from the last two step sizes.  In Newton's quadratic phase,
    with rho the ratio of the last step to the one before, a chord step errs by
    about twice the ratio of the next step to the last one, predicted rho^2 after
    a fresh factorisation, and by about as much as the last step did after a
    chord step (the same factor, about as far back), which the last step's ratio
    bounds.  Either way the predicted error must be at most 1e-3, for fast
    convergence and for ``_trust_inexact`` to accept the step that ends the
    iteration."""
    cdef double rho
    if not (isfinite(delta_prev2) and delta_prev2 > 0.0):
        return False
    rho = delta_prev / delta_prev2
    return 2.0 * rho * rho <= 1e-3 if prev_fresh else rho <= 1e-3


cdef void _clear_scratch(double* L, int n) noexcept nogil:
    """Zero the strict upper triangle of the columns of L whose storage held a
    single-precision factor (the first n^2 floats: columns 0 .. n/2)."""
    cdef int i, j
    for j in range(n // 2 + 1 if n // 2 + 1 < n else n):
        for i in range(j):
            L[i + <size_t> j * n] = 0.0


cdef int _factorise_at(Newton* nw, bint single, Outcome* out) noexcept nogil:
    """``_factorise`` at the current point (in single precision if ``single``,
    redone in double if that fails), sF set to sW; out.status receives the
    status.  Returns whether the factor is in single precision."""
    cdef int i
    out.status = _factorise(nw, single)
    out.n_single += single
    if out.status == ST_SINGLE_FAILED:
        single = False
        out.status = _factorise(nw, False)
    for i in range(nw.n):
        nw.sF[i] = nw.sW[i]
    return single


cdef int _newton(Newton* nw, double tol, int max_iter, double max_cond, bint reuse,
                 Outcome* out) except -1 nogil:
    """Newton's method with step halving from the point in (a, f) (see
    ``newton_mode``); fills ``out``.  A step from an inexact factor (single
    precision, or a chord step) that is not finite, needs halving or would end
    the iteration without ``_trust_inexact`` is not taken: the step is redone
    from a fresh factorisation, in double after a single-precision one (as are
    all the next ones, also once single-precision steps stop shrinking fast near
    the mode, or after a failed single-precision factorisation)."""
    cdef int k, n = nw.n
    cdef bint done = False, single = False, chord, exact, factor_single = False
    cdef bint single_ok = max_cond > 0.0, chord_ok = reuse
    cdef bint last_full = False, prev_single = False, prev_fresh = False
    cdef double psi_old, psi_new, err, err_new, scale
    cdef double delta, delta_prev = INFINITY, delta_prev2 = INFINITY, next_check = 0.0
    psi_old = _start(nw, &err)
    out.status = ST_OK if isfinite(psi_old) else ST_NONFINITE
    while out.status == ST_OK:
        check_signals(&next_check)   # one O(n^3) factorisation per step
        out.status = _derivs_at(nw)
        if out.status != ST_OK:
            break
        scale = 1.0 + _max_abs(nw.f, n)
        # The factor of the returned point (the last one) is always in double.
        chord = chord_ok and not done and out.n_iter < max_iter \
            and _chord_pays(delta_prev, delta_prev2, prev_fresh)
        if chord:
            single = False
            symv_lower(nw.K, n, nw.g, nw.c, 1.0, 0.0)
            out.n_reused += 1
        else:
            single = single_ok and not done and out.n_iter < max_iter \
                and _cond_bound(nw) <= max_cond
            factor_single = _factorise_at(nw, single, out)
            single_ok = single_ok and (factor_single or not single)
            single = factor_single
            if out.status != ST_OK:
                break
        if done or out.n_iter >= max_iter:
            break
        _direction(nw, factor_single)
        delta = _max_abs(nw.df, n)
        exact = not (single or chord)
        if not exact and not _trust_inexact(delta, delta_prev, chord or prev_single,
                                            tol * scale):
            single_ok = single_ok and chord
            chord_ok = False
            continue
        if not isfinite(delta):
            out.status = ST_NONFINITE
            break
        if delta <= tol * scale or (exact and last_full and delta >= 0.5 * delta_prev
                                    and delta <= 1e-6 * scale):
            # Converged (or, after full exact steps, at the rounding floor, where
            # steps stop shrinking): take the last, tiny step and factorise B
            # there once more.
            _take_step(nw)
            psi_old = _psi(nw, nw.a, nw.f, &err)
            out.n_iter += 1
            done = out.converged = True
            continue
        k = _line_search(nw, psi_old, err, &psi_new, &err_new)
        if not exact and k != 0:
            single_ok = single_ok and chord
            chord_ok = False
            continue
        out.n_iter += 1
        if k < 0:
            # No ascent along the Newton direction: psi cannot be increased any
            # further in floating point.  Keep the current point, whose L (double)
            # is already factorised.
            out.converged = delta <= 1e-6 * scale
            break
        out.halvings += k
        if single and delta <= 1e-4 * scale and delta > 1e-2 * delta_prev:
            single_ok = False     # near the mode and not converging fast
        last_full = k == 0 and exact
        prev_single = factor_single
        prev_fresh = not chord
        delta_prev2 = delta_prev
        delta_prev = delta
        _accept_try(nw)
        psi_old = psi_new
        err = err_new
    _finish(nw, psi_old, out)
    return 0


cdef void _take_step(Newton* nw) noexcept nogil:
    """(a, f) += (da, df): the full Newton step."""
    cdef int i
    for i in range(nw.n):
        nw.a[i] += nw.da[i]
        nw.f[i] += nw.df[i]


cdef void _accept_try(Newton* nw) noexcept nogil:
    """(a, f) = (a_try, f_try): the point the line search accepted."""
    cdef int i
    for i in range(nw.n):
        nw.a[i] = nw.a_try[i]
        nw.f[i] = nw.f_try[i]


cdef void _finish(Newton* nw, double psi, Outcome* out) noexcept nogil:
    """Clear the single-precision factors' scratch in L; out.psi = psi and, at a
    double-precision factor, out.logdet = sum log L_ii."""
    cdef int i, n = nw.n
    if out.n_single > 0:
        _clear_scratch(nw.L, n)
    out.psi = psi
    if out.status == ST_OK:
        for i in range(n):
            out.logdet += log(nw.L[i + <size_t> i * n])


def _check_shapes(K, n, **arrays):
    """Refuse mismatched buffers (the loops run without bounds checks)."""
    if K.shape[0] != K.shape[1]:
        raise ValueError(f"K must be square, got {tuple(K.shape)[:2]}.")
    for name, a in arrays.items():
        want = (n, n) if name in ("L", "dK") else (n,)
        if tuple(a.shape)[:len(want)] != want:
            raise ValueError(f"{name} must have shape {want}, got "
                             f"{tuple(a.shape)[:len(want)]}.")


cdef const Model* _laplace_model(model, Py_ssize_t n) except NULL:
    """The model's struct, if its likelihood is one Laplace handles (its
    parameters were checked when the model was built) and it holds no weights
    or n of them (the objective is then sum_i w_i log p(y_i | f_i) - f'K^{-1}f/2)."""
    cdef const Model* md = model_of(model)
    if not (md.lik == LIK_PYTHON or lik_differentiable(md.lik)):
        raise ValueError(f"the likelihood of code {md.lik} has no derivatives.")
    model_check_weights(md, n)
    return md


cdef class NewtonOptions:
    """The options of ``newton_mode``: ``tol`` (converged when a Newton step
    changes f by at most tol * (1 + max|f|)), ``max_iter`` (Newton steps),
    ``max_single_cond`` (single-precision factorisations while the bound
    1 + sum_i W_i K_ii on the condition number of B is at most this; 0: never)
    and ``reuse`` (chord steps, reusing the last factorisation)."""

    cdef readonly double tol, max_single_cond
    cdef readonly int max_iter
    cdef readonly bint reuse

    def __init__(self, double tol, int max_iter, double max_single_cond=SINGLE_MAX_COND,
                 bint reuse=True):
        self.tol = tol
        self.max_iter = max_iter
        self.max_single_cond = max_single_cond
        self.reuse = reuse


def newton_mode(const double[::1, :] K, const double[::1] y, model, double[::1] alpha,
                double[::1] f, double[::1] sW, double[::1, :] L,
                NewtonOptions options not None):
    """Newton iterations for the Laplace mode, factorising B at the returned point.

    Parameters
    ----------
    K : (n, n) Fortran float64, symmetric (lower triangle read).
    y : (n,) labels in {-1, +1}.
    model : the likelihood, a ``gpc._model.LikelihoodModel``.
    alpha : (n,) in: warm start (zeros for a cold start); out: a = K^{-1} f at the mode.
    f : (n,) out: the mode f = K a.
    sW : (n,) out: sqrt(W) at the mode.
    L : (n, n) Fortran out: lower Cholesky factor of B = I + sW K sW at the mode.
        Its strict upper triangle is left untouched, except in the columns
        0 .. n/2 after single-precision factorisations (their scratch), where it
        is zeroed.
    options : :class:`NewtonOptions`: ``tol`` (converged when a Newton step
        changes f by at most tol * (1 + max|f|)), ``max_iter`` (maximum number of
        Newton steps), ``max_single_cond`` (a factorisation that steers a step,
        not the last one, is done in single precision while 1 + sum_i W_i K_ii, a
        bound on the condition number of B, is at most this; 0 turns single
        precision off; see ``_newton`` for when it falls back to double) and
        ``reuse`` (whether steps may reuse the last factorisation once the steps
        converge fast: chord steps, see ``_chord_pays``).

    Signal handlers get their turn (``check_signals``) before every Newton step: a
    KeyboardInterrupt leaves alpha, f, sW and L part-updated.

    Returns
    -------
    (status, n_iter, converged, psi, sum_log_diag_L, n_halvings, n_single,
    n_reused) where n_single counts the single-precision factorisations tried
    (failed ones and those whose step was redone included) and n_reused the
    chord steps tried.
    """
    cdef int n = K.shape[0]
    cdef double* work = NULL
    cdef Newton nw
    cdef Outcome out
    _check_shapes(K, n, y=y, a=alpha, f=f, sW=sW, L=L)
    nw.md = _laplace_model(model, n)
    if n == 0:
        return ST_OK, 0, True, 0.0, 0.0, 0, 0, 0
    # Pointers into the caller's arrays only once their shapes are checked and n > 0
    # (&K[0, 0] of an empty array is an out-of-bounds index).
    nw.n = n
    nw.K = &K[0, 0]
    nw.y = &y[0]
    nw.L = &L[0, 0]
    nw.a = &alpha[0]
    nw.f = &f[0]
    nw.sW = &sW[0]
    work = <double*> malloc((10 * n + 1) * sizeof(double))
    if work == NULL:
        raise MemoryError()
    nw.d1 = work; nw.w = work + n; nw.g = work + 2 * n; nw.c = work + 3 * n
    nw.da = work + 4 * n; nw.df = work + 5 * n; nw.a_try = work + 6 * n
    nw.f_try = work + 7 * n; nw.sF = work + 8 * n; nw.x32 = <float*> (work + 9 * n)
    out.n_iter = 0; out.halvings = 0; out.n_single = 0; out.n_reused = 0
    out.converged = False
    out.logdet = 0.0
    sync_threads(n)
    try:
        with nogil:
            _newton(&nw, options.tol, options.max_iter, options.max_single_cond,
                    options.reuse, &out)
    finally:
        free(work)
        model_raise(model)
    return (out.status, out.n_iter, bool(out.converged), out.psi, out.logdet,
            out.halvings, out.n_single, out.n_reused)


def evidence_dK(const double[::1, :] K, const double[::1, :] L, const double[::1] y,
                model, const double[::1] alpha, const double[::1] f,
                const double[::1] sW, double[::1, :] dK):
    """Total derivative of the Laplace log evidence with respect to K.

    log q(y) = psi(f_hat) - sum log diag L.  With R = sW B^{-1} sW and
    Sigma = (K^{-1} + W)^{-1}, the explicit part is (a a' - R)/2 and the implicit part
    (through the mode) is sym(u a') with s2 = d(-log|B|/2)/df = diag(Sigma) * d3/2
    (d3 = third derivative of log p of ``model``, a ``gpc._model.LikelihoodModel``;
    dW/df = -d3) and u = (I - R K) s2: R&W eqs.
    5.22-5.24 folded into one symmetric matrix, using a = d log p/df at the mode.
    diag(Sigma) comes from B^{-1} in O(n): sW Sigma sW = I - B^{-1}.

    ``dK`` (n x n Fortran) receives the full symmetric matrix.  Returns 0, or the
    LAPACK info of the inversion if it failed.
    """
    cdef int n = K.shape[0]
    cdef int i, j, info = 0
    cdef double lp, g1, g2, g3, wi, sig
    cdef double* work = NULL
    cdef double* s2
    cdef double* tmp
    cdef double* u
    cdef double* R
    cdef const double* Kp
    cdef const double* Lp
    cdef const Model* md
    _check_shapes(K, n, y=y, a=alpha, f=f, sW=sW, L=L, dK=dK)
    md = _laplace_model(model, n)
    if n == 0:
        return 0
    R = &dK[0, 0]
    Kp = &K[0, 0]
    Lp = &L[0, 0]
    work = <double*> malloc(3 * n * sizeof(double))
    if work == NULL:
        raise MemoryError()
    s2 = work; tmp = work + n; u = work + 2 * n
    sync_threads(n)
    try:
        with nogil:
            info = site_inverse(Lp, R, n)
            if info == 0:
                for i in range(n):
                    model_site_derivs(md, i, y[i], f[i], &lp, &g1, &g2, &g3)
                    wi = sW[i] * sW[i]
                    # diag(Sigma)_i = (1 - Binv_ii) / W_i; where W_i underflows, d3
                    # does too and the implicit term of this point vanishes.
                    if wi > 1e-300:
                        sig = (1.0 - R[i + i * n]) / wi
                        s2[i] = 0.5 * sig * g3
                    else:
                        s2[i] = 0.0
                scale_site_inverse(R, &sW[0], n)          # R = sW Binv sW
                # u = s2 - R (K s2)
                symv_lower(Kp, n, s2, tmp, 1.0, 0.0)
                for i in range(n):
                    u[i] = s2[i]
                symv_lower(R, n, tmp, u, -1.0, 1.0)
                fill_site_dK(R, &alpha[0], u, NULL, n)
    finally:
        free(work)
        model_raise(model)
    return info
