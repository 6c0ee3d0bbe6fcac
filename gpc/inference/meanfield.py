"""Mean-field GP classification: variational ("ensemble") and "naive" mean field.

Csató, Fokoué, Opper, Schottky & Winther (2000), sections 3 and 4.  Both methods
describe the posterior marginal of each latent value f_i by a tilted Gaussian

    q_i(f) ∝ p(y_i | f) N(f; m_i, s_i),

with the "cavity" variance ``s_i = 1 / [K^{-1}]_ii`` (ensemble) or ``s_i = K_ii``
(naive), and the cavity means solving the mean-field equations (paper eq. 6 and 9)

    m = (K - diag(s)) g(m),     g_i = d log Z_i / d m_i,  Z_i = E_{N(m_i, s_i)} p(y_i|f),

so the posterior mean is ``K g`` (the paper's ``alpha_j y_j`` is our ``g_j``).

Solver
------
Newton's method on these equations, with a line search.  With ``h = dg/dm`` and the
tilted variances ``v = s (1 + s h)``, the Jacobian of ``r(m) = m - (K - S) g`` is
``(I + K W) diag(v / s)`` with ``W = 1/v - 1/s = -h / (1 + s h)``, so a Newton step is

    d = -(s / v) o (I + K W)^{-1} r = -(s / v) o (r - K sW B^{-1} sW r),
    B = I + sW K sW  (sW = sqrt(W); Cholesky, eigenvalues >= 1),

the same well-conditioned factorisation as Laplace and EP; K is never inverted.
For log-concave likelihoods (probit, logit, step) W >= 0.  For the ensemble method
the free energy (7) is the variational objective and, as a function of the means
``mu = m + s g``, convex when W >= 0 (its Hessian is ``K^{-1} + W``); the Newton step
is a descent direction for it, so the line search on (7) makes the iteration converge
from any start (quadratically near the solution).  The naive free energy is a saddle
value, not a minimum, so its line search is on ``|r|^2``.

A negative W_i (the noisy threshold, which is not log-concave) is counted in
``info["n_negative_w"]``.  The ensemble step clips it to 0, which keeps the step a
descent direction for (7) (the convergence is then linear).  The naive step stays
the exact Newton step, a descent direction for ``|r|^2`` whatever the signs of W
(the clipped step need not be one: warm-started runs stalled on it, off the
solution).  With ``a = sqrt(|W|)`` and ``sigma = sign(W)``, Woodbury gives

    (I + K W)^{-1} r = r - K a M^{-1} a r,     M = sigma + a K a,

symmetric indefinite (LAPACK ``dsysv``) and equal to B when W >= 0.  The posterior's
site form uses W clipped at 0 for both methods.

Why Newton rather than the paper's damped fixed-point iteration
``m <- m - eta (m - (K - S) g(m))``: that map is a contraction only when
``(K - S) diag(h)`` is small, which fails for the signal variances that evidence
maximisation visits.  Measured on Pima at the two free energies' optima
(``bench/paper_meanfield.py``): the damped iteration does not converge for the
ensemble equations with any damping tried (eta from 1 to 0.05, 5000 steps) and takes
99-427 steps for the naive ones (eta <= 0.2), against 4-5 Newton steps of one
Cholesky each; warm starts from the previous hyperparameters make most evaluations
2-3 steps.

Evidence and gradient
---------------------
Ensemble: ``log Z >= -F`` with ``F`` of eq. (7) (an upper bound on ``-log p(y)``,
the variational free energy of the factorised family).  F is stationary in q at the
solution, so its total derivative in K is the partial one at fixed q:

    dK = (g g' + K^{-1} V K^{-1} - K^{-1}) / 2,   V = diag(v).

Naive: ``-F_naive = sum log Z_i - g'(K - diag K) g / 2`` is the value at its stationary
point of ``sum log Z_i(m_i, K_ii) - g'm + g'(K - diag K) g / 2`` (stationary in m and
g exactly on the equations (9)), so

    dK = (g g' + diag(h)) / 2.

For both, ``d/d theta_lik = sum_i d log Z_i / d theta_lik`` (the likelihood parameter).

The naive value and gradient hold at a solution only: off it the saddle function
approximates nothing.  A naive run whose line search stalls (after a retry from the
prior when it was warm-started) therefore raises NumericalError, which evidence
maximisation takes as a failed evaluation and steps back from.  That happens when
the equations have no solution (conflicting labels on a duplicated input under the
step likelihood) or one beyond floating point: with the step likelihood and a
kernel so smooth that K is singular to rounding (scikit-learn's test data with
RBF(length_scale) beyond about 19), the cavity means double with every Newton step
until the Jacobian, ill-conditioned like K, gives no better step.  A stalled ensemble run
keeps its warning: its free energy is a bound at any q.

Posterior for predictions
-------------------------
The mean is ``K g``.  The paper predicts with the sign of the mean only; for
``predict_proba`` the covariance is the linear-response estimate: the inverse Hessian
of the ensemble free energy in the means, ``(K^{-1} + W)^{-1}`` (for the naive method
the same form with its own W), in the site form of Laplace and EP.
"""

import warnings

import numpy as np
from scipy.linalg import LinAlgError, lapack
from sklearn.exceptions import ConvergenceWarning

from .._linalg import cho_solve, lower_cholesky
from ..posterior import SitePosterior
from .._validation import check_integer, check_real, symmetric_from_lower
from ._base import InferenceResult, NumericalError, register

#: Step halvings tried by the line search before the iteration is declared stalled.
MAX_HALVINGS = 30


@register("mean_field", lower_bound=True, learning_needs_noise=True, state=("m",))
def mean_field(K, y, likelihood, *, init=None, compute_gradient=True, tol=1e-9,
               max_iter=100):
    """Variational ("ensemble learning") mean-field GP classification.

    Minimises the variational free energy (Csató et al. 2000, eq. 7) over factorised
    posteriors ``q(f) = prod_i q_i(f_i)``, an upper bound on ``-log p(y)``; the
    solution satisfies the mean-field equations (6).  Called through
    :func:`gpc.infer` with ``method="mean_field"``; see the module notes of
    :mod:`gpc.inference.meanfield` for the solver and the gradient.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Prior covariance, Fortran-ordered float64 (see :func:`gpc.infer`).
        Must be well conditioned (reciprocal condition number at least
        ``MIN_RCOND``, 1e-10): the cavity variances are ``1 / [K^{-1}]_ii``, which
        rounding destroys for a nearly singular K, as smooth kernels on dense
        inputs without a noise term give.  Such a K raises
        :class:`gpc.NumericalError`.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    likelihood : Likelihood
        Any likelihood with Gaussian moments: step (the paper's noise-free
        likelihood), probit, logit, noisy threshold.
    init : dict, optional
        A previous result's ``state`` (``{"m": ...}``, the cavity means); used when
        its free energy is lower than that of the start from the prior (m = 0).
    compute_gradient : bool
        Whether to compute ``dK`` and ``dlik``.
    tol : float, default=1e-9
        Converged when ``max |r| <= tol * (1 + max |K g|)``, r the residual of the
        mean-field equations.
    max_iter : int, default=100
        Largest number of Newton steps; a ConvergenceWarning is issued when reached.

    Returns
    -------
    InferenceResult
        ``log_evidence = -F`` (a lower bound on the log evidence for the factorised
        family); ``posterior`` with mean ``K g`` and the linear-response covariance;
        ``state = {"m": m}``; ``info`` holds ``n_iter`` (Newton steps), ``converged``,
        ``stalled`` (stopped because the line search found no improving step),
        ``n_halvings`` (line-search halvings), ``n_negative_w``, ``n_capped_w``
        (Newton steps whose weights had to be capped, see ``W_CAPS``), ``jitter`` (0),
        ``cavity_var`` (s); the marginals of q are the posterior's
        ``marginal_mean`` and ``marginal_var``.

    Examples
    --------
    >>> import numpy as np
    >>> import gpc
    >>> X = np.linspace(-2, 2, 6)[:, None]
    >>> K = np.exp(-0.5 * (X - X.T) ** 2) + 0.1 * np.eye(6)
    >>> res = gpc.infer(K, [-1, -1, -1, 1, 1, 1], method="mean_field",
    ...                 likelihood="step")
    >>> res.info["converged"], bool(res.log_evidence < 0)
    (True, True)
    """
    _check_options(tol, max_iter)
    L = _well_conditioned_factor(K)
    T, info = lapack.dtrtri(L, lower=1)                 # T = L^{-1}
    if info != 0:
        raise NumericalError("mean field: inverting the Cholesky factor of K "
                             f"failed (LAPACK info {info}).", "mean_field")
    s = 1.0 / np.einsum("ij,ij->j", T, T)               # 1 / diag(K^{-1})
    half_logdet = np.sum(np.log(np.diag(L)))

    def free_energy(m, mo):
        # F of eq. (7) at any q in the family (not only at the solution):
        # sum(-log Z - s g^2 / 2) + mu' K^{-1} mu / 2 + log|K| / 2 - sum(log s) / 2.
        mu = m + s * mo[1]
        Tmu = T @ mu
        return (-np.sum(mo[0]) - 0.5 * np.sum(s * mo[1] ** 2) + 0.5 * Tmu @ Tmu
                + half_logdet - 0.5 * np.sum(np.log(s)))

    sol = _solve(K, y, likelihood, s, free_energy, init, tol, max_iter,
                 "mean_field")
    g, q = sol["g"], sol["q"]
    log_evidence = -free_energy(sol["m"], sol["moments"])
    dK = dlik = None
    if compute_gradient:
        # dK = (g g' + A V A - A) / 2 with A = K^{-1} = T' T, V = diag(s q).
        A = _lower_product(T)
        M = A * np.sqrt(s * q)[None, :]
        dK = 0.5 * (np.outer(g, g) + M @ M.T - A)
        dlik = _dlik(likelihood, sol, "mean_field")
    return _result(sol, likelihood, log_evidence, dK, dlik, 0.0, "mean_field",
                   {"cavity_var": s})


@register("naive_mean_field", state=("m",))
def naive_mean_field(K, y, likelihood, *, init=None, compute_gradient=True, tol=1e-9,
                     max_iter=100):
    """"Naive" mean-field GP classification (Csató et al. 2000, section 4).

    The mean-field equations (9): those of :func:`mean_field` with the prior
    variances ``K_ii`` in place of ``1 / [K^{-1}]_ii``, so K is never factorised
    or inverted.  The log evidence is minus the naive free energy (the equation
    after (9)), ``sum_i log Z_i - g'(K - diag K) g / 2``: an approximation, not a
    bound (evaluated as the saddle function ``sum log Z_i - g'm + g'(K - diag K) g
    / 2``, equal on the solution and accurate to second order in the residual).
    Called through :func:`gpc.infer` with ``method="naive_mean_field"``; see
    :mod:`gpc.inference.meanfield` for the solver and the gradient.

    Parameters
    ----------
    K, y, likelihood, init, compute_gradient, tol, max_iter
        As for :func:`mean_field`; a warm start is used when its residual is
        smaller than that of the start from the prior.

    Returns
    -------
    InferenceResult
        As for :func:`mean_field` (no ``jitter`` is ever needed; ``stalled`` is
        always False, see Raises).

    Raises
    ------
    NumericalError
        When Newton's line search stalls, from the warm start and from the prior:
        the equations have no solution that floating point reaches (e.g.
        conflicting labels on a duplicated input, or the step likelihood with a
        kernel that makes K singular to rounding), and off a solution the free
        energy and its gradient mean nothing.  A noisy likelihood or a noise term
        in the kernel gives a solution.

    Examples
    --------
    >>> import numpy as np
    >>> import gpc
    >>> X = np.array([[-1.0], [-0.2], [0.4], [1.5]])
    >>> K = np.exp(-0.5 * (X - X.T) ** 2)          # no noise term needed
    >>> y = np.array([-1, -1, 1, 1])
    >>> res = gpc.infer(K, y, method="naive_mean_field", likelihood="step")
    >>> bool(np.all(np.sign(K @ res.posterior.alpha) == y))
    True
    """
    _check_options(tol, max_iter)
    s = np.array(np.diag(K), dtype=np.float64)
    if not np.all(s > 0):
        raise ValueError("naive mean field needs a positive prior variance K_ii at "
                         "every training point.")

    def residual_norm(m, mo):
        r = m - (K @ mo[1] - s * mo[1])
        return 0.5 * r @ r

    def solve(init):
        return _solve(K, y, likelihood, s, residual_norm, init, tol, max_iter,
                      "naive_mean_field", signed=True, warn_stall=False)

    sol = solve(init)
    if sol["stalled"] and sol["warm"]:
        sol = solve(None)              # a warm start may sit on another branch
    if sol["stalled"]:
        _refuse_stall(K, sol)
    g, h = sol["g"], sol["h"]
    # Minus the saddle function at (m, g(m)): it equals sum log Z - g'(K - S) g / 2
    # on the solution, and errs only to second order in the residual off it.
    log_evidence = np.sum(sol["moments"][0]) - g @ sol["m"] + 0.5 * g @ (K @ g - s * g)
    dK = dlik = None
    if compute_gradient:
        dK = 0.5 * np.outer(g, g)
        dK[np.diag_indices_from(dK)] += 0.5 * h
        dlik = _dlik(likelihood, sol, "naive_mean_field")
    return _result(sol, likelihood, log_evidence, dK, dlik, 0.0, "naive_mean_field",
                   {})


def _refuse_stall(K, sol):
    """Raise the NumericalError of a naive mean-field run whose line search stalled:
    off a solution of the equations its free energy, a saddle value, is not an
    approximation of anything, and varies with where the iteration stopped."""
    g, s, m = sol["g"], sol["s"], sol["m"]
    r = m - (K @ g - s * g)
    raise NumericalError(
        f"naive mean field: the mean-field equations have no solution within reach "
        f"of floating point: Newton's method stalled after {sol['n_iter']} steps at "
        f"residual {np.max(np.abs(r)):.1e}, with cavity means up to "
        f"{np.max(np.abs(m)):.1e}, and off a solution the free energy and its "
        "gradient mean nothing.  Such equations have no solution (conflicting labels "
        "on duplicated inputs under the noise-free step likelihood) or one that runs "
        "off towards infinity (the step likelihood with a kernel so smooth that K is "
        "singular to rounding).  Use a likelihood with label noise (probit, logit, "
        "noisy threshold), add a noise term to the kernel (e.g. WhiteKernel), "
        "shorten the length scales, or choose another method.", "naive_mean_field")


#: Smallest reciprocal condition number of K (LAPACK ``dpocon``, 1-norm) with which
#: :func:`mean_field` runs: below it the cavity variances ``1 / [K^{-1}]_ii`` lose
#: their leading digits to rounding and the free energy its smoothness
#: (``tests/RELIABILITY.md``).
MIN_RCOND = 1e-10


def _well_conditioned_factor(K):
    """The Cholesky factor of K, or a NumericalError when K is too close to
    singular for the ensemble free energy to be computed (see ``MIN_RCOND``)."""
    try:
        L = lower_cholesky(K)
        rcond = lapack.dpocon(L, float(np.max(np.sum(np.abs(K), axis=0))),
                              uplo="L")[0]
    except LinAlgError:
        rcond = 0.0
    if not rcond >= MIN_RCOND:
        raise NumericalError(
            f"mean field: K is too close to singular (reciprocal condition number "
            f"{rcond:.1e}, below {MIN_RCOND:g}) for the factorised family, whose "
            "cavity variances are 1 / [K^-1]_ii: its free energy would be rounding "
            "noise.  Add a noise term to the kernel (e.g. WhiteKernel), shorten the "
            "length scales, or choose another method.", "mean_field")
    return L


def _check_options(tol, max_iter):
    check_real(tol, "tol", 0.0, low_open=True)
    check_integer(max_iter, "max_iter", 0)


def _lower_product(T):
    """T' T for a lower-triangular T (LAPACK dlauum, n^3 / 3), made symmetric."""
    P, info = lapack.dlauum(T, lower=1)
    if info != 0:
        raise NumericalError(f"mean field: dlauum failed (LAPACK info {info}).",
                             "mean_field")
    return symmetric_from_lower(P)


def _solve(K, y, likelihood, s, merit, init, tol, max_iter, method, signed=False,
           warn_stall=True):
    """Newton's method with a line search on ``merit(m, moments)`` for
    ``m = (K - diag(s)) g(m)`` (see the module notes) of ``method`` (its
    registered name).  ``signed``: take the exact Newton step when some weights W
    are negative (the merit is the residual, for which it is a descent direction);
    otherwise they are clipped at 0.  ``warn_stall``: warn when the line search
    stalls (otherwise the caller decides; ``stalled`` and ``warm``, whether the
    run started from ``init``, say what happened).  Returns a dict with the
    solution ``m``, its ``moments`` (log Z, g, h, dpar), ``g``, ``h``, ``q = v / s``,
    the site-form factor ``sW``, ``L`` of the last iterate and the counts."""
    n = K.shape[0]
    name = method.replace("_", " ")

    def moments(m):
        return likelihood.gauss_moments(y, m, s)

    def residual(m, mo):
        return m - (K @ mo[1] - s * mo[1])

    # Start from the prior (m = 0) or from init, whichever has the smaller merit.
    m = np.zeros(n)
    warm = False
    mo = moments(m)
    value = merit(m, mo)
    if init is not None and "m" in init:
        m0 = np.asarray(init["m"], dtype=np.float64)
        if m0.shape == (n,) and np.isfinite(m0).all():
            mo0 = moments(m0)
            value0 = merit(m0, mo0)
            if np.isfinite(value0) and value0 < value:
                m, mo, value, warm = m0.copy(), mo0, value0, True
    if not np.isfinite(value):
        raise NumericalError(f"{name}: the objective is not finite at the start.",
                             method)

    n_iter = n_halvings = n_capped = 0
    converged = stalled = False
    factor = None                      # (L, sW) of the current iterate, once formed
    while True:
        g, h = mo[1], mo[2]
        # v / s, in (0, 1] when h <= 0; floored so that W (the Newton weights) stays
        # finite when a tilted distribution is all but a point (the step likelihood far
        # on the wrong side): the line search keeps the iteration sound.
        q = np.maximum(1.0 + s * h, 1e-12)
        W = -h / q
        n_negative = int(np.count_nonzero(W < 0))
        r = residual(m, mo)
        Kg = K @ g
        if np.max(np.abs(r), initial=0.0) <= tol * (1.0 + np.max(np.abs(Kg),
                                                                  initial=0.0)):
            converged = True
            break
        if n_iter >= max_iter:
            break
        d = _signed_newton_step(K, W, q, r) if signed and n_negative else None
        if d is None:
            L, sW, capped = _factor_weights(K, np.maximum(W, 0.0), method)
            n_capped += capped
            factor = (L, sW)
            x = sW * cho_solve(L, sW * r)
            d = -(r - K @ x) / q
        r2 = r @ r
        t = 1.0
        for _ in range(MAX_HALVINGS):
            m_new = m + t * d
            mo_new = moments(m_new)
            value_new = merit(m_new, mo_new)
            if np.isfinite(value_new):
                # Accept a decrease, or (at rounding level of the merit) a smaller
                # residual.
                if value_new < value:
                    break
                if abs(value_new - value) <= 1e-12 * (1.0 + abs(value)):
                    r_new = residual(m_new, mo_new)
                    if r_new @ r_new < r2:
                        break
            t *= 0.5
            n_halvings += 1
        else:
            stalled = True                           # no acceptable step
            break
        m, mo, value = m_new, mo_new, value_new
        factor = None
        n_iter += 1
    if factor is None:
        # The site form of the posterior, from the weights clipped at 0 (see the
        # module notes).
        L, sW, capped = _factor_weights(K, np.maximum(W, 0.0), method)
        n_capped += capped
    else:
        L, sW = factor
    if not converged and (warn_stall or not stalled):
        why = (f"its line search found no step that improves the "
               f"{'free energy' if name == 'mean field' else 'residual'} (the "
               "equations may have no solution, e.g. conflicting labels on duplicated "
               "inputs under the noise-free step likelihood)" if stalled
               else f"max_iter={max_iter} reached")
        warnings.warn(f"{name}: Newton's method stopped after {n_iter} steps without "
                      f"converging: {why}; the free energy and its gradient are "
                      "approximate.", ConvergenceWarning, stacklevel=4)
    if not np.all(np.isfinite(mo[0])):
        raise NumericalError(f"{name}: the log normalisers are not finite.", method)
    return {"m": m, "moments": mo, "g": g, "h": h, "q": q, "sW": sW, "L": L,
            "s": s, "n_iter": n_iter, "n_halvings": n_halvings,
            "converged": converged, "stalled": stalled, "warm": warm,
            "n_negative_w": n_negative,
            "n_capped_w": n_capped}


#: Caps on the Newton weights W (relative to 1 / mean(diag K)) tried in turn when
#: ``I + sW K sW`` does not factorise: huge W (tilted distributions all but points)
#: on a numerically singular K make it indefinite in floating point.
W_CAPS = (1e8, 1e4, 1.0)


def _factor_weights(K, W, method):
    """``(L, sW, capped)``: the Cholesky factor of ``I + sW K sW`` with
    ``sW = sqrt(W)``, W capped (``W_CAPS``) if it does not factorise as it is.
    Any W >= 0 gives a descent direction for the ensemble free energy, so a cap only
    slows the Newton iteration down; ``capped`` says whether one was needed."""
    n = K.shape[0]
    scale = 1.0 / max(float(np.mean(np.diag(K))), 1e-300)
    for cap in (None,) + W_CAPS:
        Wc = W if cap is None else np.minimum(W, cap * scale)
        sW = np.sqrt(Wc)
        B = np.eye(n) + sW[:, None] * K * sW[None, :]
        try:
            return lower_cholesky(B), sW, cap is not None
        except (LinAlgError, ValueError):
            continue
    raise NumericalError(f"{method.replace('_', ' ')}: the factorisation of I + sW K "
                         "sW failed even with the Newton weights capped (non-finite "
                         "moments?).", method)


def _signed_newton_step(K, W, q, r):
    """The exact Newton step ``d = -(I + K W)^{-1} r / q`` for weights W of either
    sign, or None when its system is singular.

    With ``a = sqrt(|W|)`` and ``sigma = sign(W)`` (+1 where W = 0), Woodbury gives
    ``(I + K W)^{-1} r = r - K a M^{-1} a r`` with the symmetric indefinite
    ``M = sigma + a K a`` (LAPACK ``dsysv``, Bunch-Kaufman): scaled like the
    ``B = I + sW K sW`` of the clipped step, which it equals when W >= 0."""
    a = np.sqrt(np.abs(W))
    M = a[:, None] * K * a[None, :]
    M[np.diag_indices_from(M)] += np.where(W < 0, -1.0, 1.0)
    lwork = max(int(lapack.dsysv_lwork(len(W), lower=1)[0]), 1)
    z, info = lapack.dsysv(M, (a * r)[:, None], lwork=lwork, lower=1,
                           overwrite_a=1)[2:]
    if info != 0 or not np.all(np.isfinite(z)):
        return None
    return -(r - K @ (a * z[:, 0])) / q


def _dlik(likelihood, sol, method):
    dpar = float(np.sum(sol["moments"][3]))
    if not np.isfinite(dpar):
        raise NumericalError(f"{method.replace('_', ' ')}: the derivative with "
                             "respect to the likelihood parameter is not finite.",
                             method)
    return np.full(len(likelihood.params), dpar)


def _result(sol, likelihood, log_evidence, dK, dlik, jitter, method, extra):
    if not np.isfinite(log_evidence):
        raise NumericalError(f"{method}: the free energy is not finite.", method)
    s = sol["s"]
    info = {"method": method, "likelihood": likelihood.name, "n_iter": sol["n_iter"],
            "converged": bool(sol["converged"]), "stalled": sol["stalled"],
            "n_halvings": sol["n_halvings"],
            "n_negative_w": sol["n_negative_w"], "n_capped_w": sol["n_capped_w"],
            "jitter": jitter}
    info.update(extra)
    return InferenceResult(
        posterior=SitePosterior(sol["g"], sol["sW"], sol["L"],
                                marginal_mean=sol["m"] + s * sol["g"],
                                marginal_var=s * sol["q"]),
        log_evidence=float(log_evidence), dK=dK, dlik=dlik,
        state={"m": sol["m"]}, info=info)
