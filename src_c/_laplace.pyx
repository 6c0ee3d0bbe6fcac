# Laplace approximation for GP classification: Newton's method for the posterior mode
# and the total derivative of the approximate log evidence with respect to K.
#
# Notation (Rasmussen & Williams, ch. 3 and 5): psi(f) = -a'f/2 + sum log p(y|f) with
# f = K a; W = -d2 log p, sW = sqrt(W); B = I + sW K sW = L L'.  K is never inverted.
#
# Storage: every n x n buffer is Fortran-ordered with leading dimension n.  K is
# symmetric and only its LOWER triangle is read, so a C-ordered symmetric K may be
# passed as K.T without a copy.  L receives the lower Cholesky factor of B (its strict
# upper triangle is left untouched); dK is written in full (both triangles).

from libc.math cimport fabs, log, sqrt, isfinite, INFINITY
from libc.stdlib cimport malloc, free

from _blas cimport (chol_site_matrix, chol_solve_lower, fill_site_dK,
                    scale_site_inverse, site_inverse, symv_lower, dot)
from _lik cimport lik_derivs, LIK_PROBIT, LIK_NOISY_THRESHOLD, LIK_STEP, LIK_GAUSSIAN
from _signals cimport check_signals

# Status codes returned by newton_mode (read from Python as _laplace.STATUS_*).
cdef enum:
    ST_OK = 0
    ST_NOT_PD = 1          # Cholesky of B failed: K is not positive semi-definite
    ST_NONFINITE = 2       # a non-finite value appeared (bad K or overflow)
    ST_NO_DERIVATIVES = 3  # the likelihood has no derivatives (step, noisy threshold)

STATUS_OK = ST_OK
STATUS_NOT_PD = ST_NOT_PD
STATUS_NONFINITE = ST_NONFINITE
STATUS_NO_DERIVATIVES = ST_NO_DERIVATIVES


cdef int _derivs_at(int lik, const double[::1] y, const double* f, const double* par,
                    int n, double* d1, double* w, double* sum_lp) noexcept nogil:
    """d1 = d log p/df, w = -d2 log p/df2 (clipped at 0) and sum of log p at f."""
    cdef int i
    cdef double lp, g1, g2, g3, s = 0.0
    for i in range(n):
        if lik_derivs(lik, y[i], f[i], par, &lp, &g1, &g2, &g3) != 0:
            return ST_NO_DERIVATIVES
        s += lp
        d1[i] = g1
        w[i] = -g2 if g2 < 0.0 else 0.0
    sum_lp[0] = s
    return ST_OK


cdef double _psi(int lik, const double[::1] y, const double* a, const double* f,
                 const double* par, int n, double* err) noexcept nogil:
    """psi = -a'f/2 + sum_i log p(y_i | f_i); err receives a bound on its rounding
    error (a few ulps of the magnitudes summed), below which changes are noise."""
    cdef int i
    cdef double lp, g1, g2, g3, s = 0.0, mag = 0.0, af = 0.0
    for i in range(n):
        lik_derivs(lik, y[i], f[i], par, &lp, &g1, &g2, &g3)
        s += lp
        mag += fabs(lp) + 0.5 * fabs(a[i] * f[i])
        af += a[i] * f[i]
    err[0] = 64.0 * 2.220446049250313e-16 * (mag + n)
    return s - 0.5 * af


cdef double _max_abs_diff(const double* x, const double* y, int n) noexcept nogil:
    cdef int i
    cdef double m = 0.0, d
    for i in range(n):
        d = fabs(x[i] - y[i])
        if d > m or d != d:
            m = d
    return m


cdef double _max_abs(const double* x, int n) noexcept nogil:
    cdef int i
    cdef double m = 0.0
    for i in range(n):
        if fabs(x[i]) > m:
            m = fabs(x[i])
    return m


def _check_shapes(K, n, **arrays):
    """Refuse mismatched buffers (the loops run without bounds checks)."""
    if K.shape[0] != K.shape[1]:
        raise ValueError(f"K must be square, got {tuple(K.shape)[:2]}.")
    for name, a in arrays.items():
        want = (n, n) if name in ("L", "dK") else (n,)
        if tuple(a.shape)[:len(want)] != want:
            raise ValueError(f"{name} must have shape {want}, got "
                             f"{tuple(a.shape)[:len(want)]}.")


def _check_par(int lik, par):
    if lik < LIK_PROBIT or lik > LIK_GAUSSIAN:
        raise ValueError(f"unknown likelihood code {lik}.")
    if lik == LIK_NOISY_THRESHOLD and par.shape[0] < 1:
        raise ValueError("the noisy threshold likelihood needs its parameter eps.")
    if lik == LIK_GAUSSIAN and par.shape[0] < 1:
        raise ValueError("the Gaussian likelihood needs its noise variance.")


def newton_mode(const double[::1, :] K, const double[::1] y, int lik,
                const double[::1] par, double[::1] alpha, double[::1] f,
                double[::1] sW, double[::1, :] L, double tol, int max_iter):
    """Newton iterations for the Laplace mode, factorising B at the returned point.

    Parameters
    ----------
    K : (n, n) Fortran float64, symmetric (lower triangle read).
    y : (n,) labels in {-1, +1}.
    lik : likelihood code (``_lik.pxd``); par : its parameters.
    alpha : (n,) in: warm start (zeros for a cold start); out: a = K^{-1} f at the mode.
    f : (n,) out: the mode f = K a.
    sW : (n,) out: sqrt(W) at the mode.
    L : (n, n) Fortran out: lower Cholesky factor of B = I + sW K sW at the mode.
    tol : converged when a Newton step changes f by at most tol * (1 + max|f|).
    max_iter : maximum number of Newton steps.

    Signal handlers get their turn (``check_signals``) before every Newton step: a
    KeyboardInterrupt leaves alpha, f, sW and L part-updated.

    Returns
    -------
    (status, n_iter, converged, psi, sum_log_diag_L, n_halvings)
    """
    cdef int n = K.shape[0]
    cdef int i, j, it = 0, status = ST_OK, halvings = 0, k
    cdef bint done = False, converged = False, last_full = False
    cdef double sum_lp, psi_old, psi_new, psi0, t, delta, delta_prev = INFINITY
    cdef double err, err_new
    cdef double logdet = 0.0, next_check = 0.0
    cdef double* work = NULL
    cdef double* d1
    cdef double* w
    cdef double* b
    cdef double* c
    cdef double* a_new
    cdef double* f_new
    cdef double* a_try
    cdef double* f_try
    cdef const double* Kp
    cdef double* Lp
    cdef double* ap
    cdef double* fp
    cdef double* parp

    _check_shapes(K, n, y=y, a=alpha, f=f, sW=sW, L=L)
    _check_par(lik, par)
    if n == 0:
        return ST_OK, 0, True, 0.0, 0.0, 0
    # Pointers into the caller's arrays only once their shapes are checked and n > 0
    # (&K[0, 0] of an empty array is an out-of-bounds index).
    Kp = &K[0, 0]
    Lp = &L[0, 0]
    ap = &alpha[0]
    fp = &f[0]
    parp = <double*> &par[0] if par.shape[0] > 0 else NULL
    work = <double*> malloc(8 * n * sizeof(double))
    if work == NULL:
        raise MemoryError()
    d1 = work; w = work + n; b = work + 2 * n; c = work + 3 * n
    a_new = work + 4 * n; f_new = work + 5 * n; a_try = work + 6 * n; f_try = work + 7 * n
    try:
        with nogil:
            # Warm start: f = K alpha, kept only if it beats the cold start f = 0.
            symv_lower(Kp, n, ap, fp, 1.0, 0.0)
            for i in range(n):
                f_new[i] = 0.0
            psi0 = _psi(lik, y, f_new, f_new, parp, n, &err)
            psi_old = _psi(lik, y, ap, fp, parp, n, &err)
            if not (psi_old >= psi0):
                for i in range(n):
                    ap[i] = 0.0
                    fp[i] = 0.0
                psi_old = psi0
            if not isfinite(psi_old):
                status = ST_NONFINITE
            while status == ST_OK:
                check_signals(&next_check)   # one O(n^3) factorisation per step
                status = _derivs_at(lik, y, fp, parp, n, d1, w, &sum_lp)
                if status != ST_OK:
                    break
                for i in range(n):
                    sW[i] = sqrt(w[i])
                # L = chol(B), B = I + sW K sW.
                if chol_site_matrix(Kp, &sW[0], Lp, n) != 0:
                    status = ST_NOT_PD
                    break
                if done or it >= max_iter:
                    break
                it += 1
                # Newton step: b = W f + d1; a_new = b - sW B^{-1} sW K b; f_new = K a_new.
                for i in range(n):
                    b[i] = w[i] * fp[i] + d1[i]
                symv_lower(Kp, n, b, c, 1.0, 0.0)
                for i in range(n):
                    c[i] *= sW[i]
                chol_solve_lower(Lp, n, c, 1)
                for i in range(n):
                    a_new[i] = b[i] - sW[i] * c[i]
                symv_lower(Kp, n, a_new, f_new, 1.0, 0.0)
                delta = _max_abs_diff(f_new, fp, n)
                if not isfinite(delta):
                    status = ST_NONFINITE
                    break
                if delta <= tol * (1.0 + _max_abs(fp, n)) or (
                        last_full and delta >= 0.5 * delta_prev
                        and delta <= 1e-6 * (1.0 + _max_abs(fp, n))):
                    # Converged (or at the rounding floor, where steps stop shrinking):
                    # take the last, tiny step and factorise B there once more.
                    for i in range(n):
                        ap[i] = a_new[i]
                        fp[i] = f_new[i]
                    psi_old = _psi(lik, y, ap, fp, parp, n, &err)
                    done = True
                    converged = True
                    continue
                delta_prev = delta
                # Step halving on psi along the Newton direction (f is linear in a).
                # A step is accepted unless it lowers psi by more than rounding noise
                # (near the mode the gain is below what psi can resolve).
                psi_new = _psi(lik, y, a_new, f_new, parp, n, &err_new)
                t = 1.0
                k = 0
                while not (psi_new >= psi_old - err - err_new) and k < 40:
                    t *= 0.5
                    k += 1
                    for i in range(n):
                        a_try[i] = ap[i] + t * (a_new[i] - ap[i])
                        f_try[i] = fp[i] + t * (f_new[i] - fp[i])
                    psi_new = _psi(lik, y, a_try, f_try, parp, n, &err_new)
                halvings += k
                if not (psi_new >= psi_old - err - err_new):
                    # No ascent along the Newton direction: psi cannot be increased
                    # any further in floating point.  Keep the current point, whose
                    # L is already factorised.
                    converged = delta <= 1e-6 * (1.0 + _max_abs(fp, n))
                    break
                last_full = k == 0
                if k == 0:
                    for i in range(n):
                        ap[i] = a_new[i]
                        fp[i] = f_new[i]
                else:
                    for i in range(n):
                        ap[i] = a_try[i]
                        fp[i] = f_try[i]
                psi_old = psi_new
                err = err_new
            if status == ST_OK:
                for i in range(n):
                    logdet += log(Lp[i + i * n])
    finally:
        free(work)
    return status, it, bool(converged), psi_old, logdet, halvings


def evidence_dK(const double[::1, :] K, const double[::1, :] L, const double[::1] y,
                int lik, const double[::1] par, const double[::1] alpha,
                const double[::1] f, const double[::1] sW, double[::1, :] dK):
    """Total derivative of the Laplace log evidence with respect to K.

    log q(y) = psi(f_hat) - sum log diag L.  With R = sW B^{-1} sW and
    Sigma = (K^{-1} + W)^{-1}, the explicit part is (a a' - R)/2 and the implicit part
    (through the mode) is sym(u a') with s2 = d(-log|B|/2)/df = diag(Sigma) * d3/2
    (d3 = third derivative of log p; dW/df = -d3) and u = (I - R K) s2: R&W eqs.
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
    cdef const double* parp
    _check_shapes(K, n, y=y, a=alpha, f=f, sW=sW, L=L, dK=dK)
    _check_par(lik, par)
    if n == 0:
        return 0
    R = &dK[0, 0]
    Kp = &K[0, 0]
    Lp = &L[0, 0]
    parp = &par[0] if par.shape[0] > 0 else NULL
    work = <double*> malloc(3 * n * sizeof(double))
    if work == NULL:
        raise MemoryError()
    s2 = work; tmp = work + n; u = work + 2 * n
    try:
        with nogil:
            info = site_inverse(Lp, R, n)
            if info == 0:
                for i in range(n):
                    lik_derivs(lik, y[i], f[i], parp, &lp, &g1, &g2, &g3)
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
    return info
