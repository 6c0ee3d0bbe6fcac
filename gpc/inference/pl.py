"""Posterior linearisation: iterated statistical linear regression (García-Fernández,
Tronarp & Särkkä), sequential and parallel."""

import numbers

import numpy as np
from scipy.sparse.linalg import LinearOperator, gmres

from .. import _model, _moments, _pl, _site_loop
from .._blocks import matmul
from ..likelihoods import LIK_GAUSSIAN, LIK_PYTHON
from ._base import NumericalError, register
from .sites import fit_sites


@register("pl", max_iter_option="max_sweeps", workspace=True,
          state=("tau", "nu"), sample_weight=True)
def pl(K, y, likelihood, *, init=None, compute_gradient=True, sample_weight=None,
       updates="auto", damping=None, min_damping=0.05, order="fixed",
       random_state=None, tol=1e-10, max_sweeps=200, accelerate=True, evidence_order=10,
       workspace=None):
    """Posterior linearisation (PL) for GP classification.

    Replaces each label's conditional mean ``E[y|f]`` by its statistical linear
    regression on the current posterior marginal, with the regression error as
    Gaussian noise, and repeats until the linearisation stops changing.  Each
    linearised label is a Gaussian site of non-negative precision, so every
    posterior covariance is positive definite.  Called through :func:`gpc.infer`
    with ``method="pl"``.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Prior covariance, Fortran-ordered float64 (see :func:`gpc.infer`).
    y : ndarray of shape (n,)
        Labels in {-1, +1} (real targets for the Gaussian likelihood).
    likelihood : Likelihood
        Probit, logit, noisy threshold, step or Gaussian (ValueError for the other
        regression likelihoods: the linearisation is that of a label +-1).
    init : dict, optional
        A previous result's ``state`` (``{"tau": ..., "nu": ...}``) to start
        from; by default PL starts from the prior, as in the paper.
    compute_gradient : bool, default=True
        Whether to compute ``dK`` and ``dlik``: the total derivative of the
        evidence through the PL fixed point (see Notes).
    sample_weight : ndarray of shape (n,), optional
        Non-negative weights of the examples (checked by :func:`gpc.infer`), for
        the weighted likelihood ``prod_i p(y_i | f_i)^(w_i)``: each linearised
        site is raised to its weight (see Notes).  A zero weight is the example
        left out.
    updates : {"auto", "parallel", "sequential"}, default="auto"
        "parallel" relinearises every label at once and refactorises once per
        sweep (the paper's main variant); "sequential" relinearises one label at
        a time; "auto" runs parallel PL and falls back to sequential sweeps only
        if every parallel run fails, as for :func:`gpc.inference.ep.ep`.
    damping, min_damping, order, random_state, max_sweeps, accelerate, workspace
        As for :func:`gpc.inference.ep.ep`.
    tol : float, default=1e-10
        Convergence tolerance, as for :func:`gpc.inference.ep.ep` but finer by
        default: PL's evidence is not stationary in its sites, so it carries the
        sites' residual to first order (see Notes).
    evidence_order : int, default=10
        Order of the Gauss-Hermite rule of the evidence correction for the probit
        and the logit (10, as in the paper).  The step and the noisy threshold
        use the exact integral and ignore it.

    Returns
    -------
    InferenceResult
        ``posterior`` (site form, with the marginals at the training points),
        ``log_evidence`` (the estimate of Notes), ``state = {"tau", "nu"}`` and
        ``info`` as for EP (``n_improper_final`` counts labels left out of the
        evidence: their moments were not finite, or rounding made their cavity
        improper).

    Raises
    ------
    NumericalError
        As for EP (a log evidence that is not finite, or a run stalled at the
        rounding noise of K), or when the gradient's adjoint system does not
        converge.

    Notes
    -----
    With ``Z_s = E[p(s|f)]`` and ``d_s = d log Z_s / dm`` for ``s = +-1`` under
    the marginal ``N(mu, P)``, the linearised site of label y is
    ``tau = -d_y d_-y / (1 - x)``, ``nu = d_y (1 - mu d_-y) / (1 - x)`` with
    ``x = -P d_y d_-y``.  With the Gaussian likelihood PL is exact in one
    iteration.

    The sites are fitted by EP's machinery (:func:`gpc.inference.ep.ep`: the
    factorisation ``B = I + S K S``, both schedules, adaptive damping, warm
    starts and the acceleration of parallel updates); only the site rule and the
    evidence differ.

    The evidence is that of the linearised model plus the correction of the
    paper's eq. 18-19, ``sum_i log E[p(y_i|f) / N(y_i; A_i f + b_i, Omega_i)]``
    under the marginals, taken at the current sites (it equals EP's evidence
    expression at PL's sites, and is finite for an unconverged run too).

    The gradient moves the linearisation with K: an adjoint linear system of
    size 2n, solved with GMRES, adds O(n^3) (three matrix products) to the fit.
    Holding the linearisation fixed would be far off (with the noisy threshold
    the evidence does not change with the signal variance, the
    fixed-linearisation derivative does).  ``dlik`` is likewise total, for the
    noisy threshold's eps (by central differences of its sites) and for the
    Gaussian's noise variance.

    The gradient is that of the evidence at the fixed point, so it is exact to the
    extent that the returned sites are one.  EP's evidence is stationary in its
    sites and errs by the square of their residual; PL's errs by the residual
    itself, and where the evidence is nearly flat (length scales far beyond the
    data's extent) a residual of 1e-8 moves it as much as its slope does over a
    finite-difference step.  Hence the finer default ``tol``.  An unconverged run
    warns, and ``info["gradient_exact"]`` is then False; one that stalled at the
    rounding noise of K is refused, as for EP (see its *Resolution*).  That
    happens to hard labels (the step, the noisy threshold) under a kernel far
    smoother than they are: on scikit-learn's GPC test data with ``RBF(31.6)``
    the linearisation's marginal variances are only resolved to 1e-9 (they move
    by that when the inputs are merely reordered), and the residual stops there.

    *Weights.*  With ``sample_weight``, label i's site is its linearisation
    raised to w_i (natural parameters times w_i).  Its evidence correction is
    power EP's (see :func:`gpc.inference.ep.ep`): for a weight of at least 1,
    w_i times the correction at the site's root (natural parameters divided by
    w_i); for a weight below 1, the correction of the tempered likelihood
    ``p^(w_i)`` at the site itself (the root would be more precise than the
    marginal wherever the linearisation's precision exceeds the marginal's).
    k copies of a label at one input share its marginal, so their
    linearisations are equal and their product is the weighted site: an integer
    weight is the label repeated, exactly (unlike power EP, whose copies only
    share a fixed point).

    References
    ----------
    García-Fernández, Á. F., Tronarp, F. & Särkkä, S. (2019). Gaussian process
    classification using posterior linearization.  IEEE Signal Processing
    Letters.

    Examples
    --------
    >>> import numpy as np
    >>> import gpc
    >>> X = np.linspace(-2, 2, 6)[:, None]
    >>> K = 2.0 * np.exp(-0.5 * (X - X.T) ** 2)
    >>> res = gpc.infer(K, [-1, -1, 1, -1, 1, 1], method="pl",
    ...                 compute_gradient=False)
    >>> res.info["converged"], bool(np.all(res.state["tau"] > 0))
    (True, True)
    """
    if not (likelihood.is_classification or likelihood.code == LIK_GAUSSIAN):
        # The statistical linear regression of the sites is that of a label +-1
        # (conditional mean 2 p(+1|f) - 1); for another regression likelihood it
        # would silently give meaningless sites.
        raise ValueError(
            f"method='pl' linearises the classification likelihoods (labels +-1) and "
            f"the Gaussian; got the regression likelihood {likelihood.name!r}.")
    evidence_rule = None
    if likelihood.code != LIK_GAUSSIAN:
        evidence_rule = _moments.gauss_hermite(_positive_order(evidence_order))

    def gradient_terms(Kj, yv, S, b, Binv, mu, var):
        return _total_derivative_terms(Kj, yv, likelihood, evidence_rule, S, b, Binv,
                                       mu, var, sample_weight)

    return fit_sites(K, y, likelihood, _site_loop.RULE_POSTERIOR_LINEARISATION,
                     evidence_rule, init=init, compute_gradient=compute_gradient,
                     updates=updates, damping=damping, min_damping=min_damping,
                     order=order, random_state=random_state, tol=tol,
                     max_sweeps=max_sweeps, accelerate=accelerate,
                     gradient_terms=gradient_terms,
                     workspace=workspace, sample_weight=sample_weight)


def _admissible(likelihood, params):
    """Whether the likelihood takes these parameters (within its bounds)."""
    try:
        likelihood.with_params(params)
    except ValueError:
        return False
    return True


def _total_derivative_terms(K, y, likelihood, evidence_rule, S, b, Binv, mu, var,
                            weights=None):
    """The evidence's total derivative with respect to K through the PL fixed point
    (see :func:`pl`), as the matrix added to ``(alpha alpha' - R) / 2``, and
    d/d(likelihood parameter).  Returns ``(D, dlik, exact)``.

    The evidence is E = Psi(K; s) + sum_i q_i(m_i; s_i): Psi the log partition
    function of the Gaussian sites s = (tau, nu), q_i = log E_{N(m_i)}[p(y_i|f)
    exp(-nu_i f + tau_i f^2 / 2)] (the correction, see ``evidence_order``), at the
    marginals m = (mu, P) = M(K, s) of the sites, which are the fixed point
    s = F(m) of the statistical linear regression F.  With the adjoint lambda of
    (I - M_s^T F'^T) lambda = (dE/ds)^T, dE/dK = Psi_K + w^T M_K with the marginal
    weights w = dq/dm + F'^T lambda; and w^T M_K[dK] = w_mu' C dK alpha + sum_i
    w_P,i (C dK C')_ii with C = Sigma K^{-1} = I - K R, R = S B^{-1} S.  F' (a 2 x 2
    block per label, and dF/dpar) by central differences of the closed-form sites
    (relative error about 1e-9); M_s from Sigma: d mu = Sigma (d nu - mu o d tau),
    d P = -(Sigma o Sigma) d tau; the 2n-dimensional adjoint system by GMRES.
    O(n^3): three matrix products.  The Gaussian likelihood has no correction and
    fixed sites.

    With ``weights`` w, the sites are w o F(m) and the corrections s_i q_i at the
    sites' roots, s_i the site's power (see :func:`pl`): the model's weights give
    the scaled F', dq/dm and dq/dpar, and the roots' tilted moments dq/ds, so the
    adjoint system is unchanged in form.
    """
    n = K.shape[0]
    R = np.tril(Binv)
    R += np.tril(R, -1).T
    R *= S[:, None]
    R *= S[None, :]
    if likelihood.code == LIK_GAUSSIAN:
        return None, _gaussian_noise_derivative(likelihood, b, np.diag(R),
                                                weights), True

    def model_of(lik):
        return _model.likelihood_model(lik, _model.RULE_POSTERIOR_LINEARISATION,
                                       evidence_rule, weights=weights)

    model = model_of(likelihood)
    par = model.par
    tau = S * S                           # the sites; nu = (K^{-1} + T) mu below
    g_mu, g_P, e_f, e_f2, dpar, _ = _pl.pl_correction_gradients(
        model, y, mu, var, tau, b + tau * mu)
    if len(par):
        # Central differences inside the parameter's range, one-sided at its ends
        # (the noisy threshold's eps = 0.5).
        hp = 1e-6 * max(abs(par[0]), 1e-3)
        up = par + hp if _admissible(likelihood, par + hp) else par
        down = par - hp if _admissible(likelihood, par - hp) else par
        step = up[0] - down[0]
    if len(par) and likelihood.code == LIK_PYTHON:
        # The rule's sums carry no d/dpar (the compiled likelihoods with a
        # parameter have closed forms): the corrections' difference, sites fixed.
        def corrections(p):
            return _pl.pl_correction_gradients(model_of(likelihood.with_params(p)),
                                               y, mu, var, tau, b + tau * mu)[5]
        dpar = float(np.sum(corrections(up) - corrections(down))) / step
    U = matmul(K, R)                                     # K R
    Sigma = K - matmul(U, K)                             # K - K R K
    Sigma2 = Sigma * Sigma

    # F': the sites' derivatives with respect to the marginal mean and variance
    # (and the likelihood parameter).
    def sites(m, v, p=None):
        return _pl.pl_sites(model if p is None else model_of(likelihood.with_params(p)),
                            y, m, v)

    hm = 1e-5 * np.sqrt(var)
    hv = 1e-5 * var
    tp, np_ = sites(mu + hm, var)
    tm, nm = sites(mu - hm, var)
    t_mu, n_mu = (tp - tm) / (2 * hm), (np_ - nm) / (2 * hm)
    tp, np_ = sites(mu, var + hv)
    tm, nm = sites(mu, var - hv)
    t_P, n_P = (tp - tm) / (2 * hv), (np_ - nm) / (2 * hv)
    if not all(np.isfinite(a).all() for a in (t_mu, n_mu, t_P, n_P)):
        raise NumericalError("PL gradient: non-finite site derivatives.", "pl")

    def ms_t(a_mu, a_P):
        """M_s' (a_mu, a_P): the weights on (tau, nu)."""
        sa = Sigma @ a_mu
        return -mu * sa - Sigma2 @ a_P, sa

    # dE/ds: the log partition's (-E[f^2] / 2, E[f]) plus the corrections' own and
    # their part through the marginals.
    r_tau, r_nu = ms_t(g_mu, g_P)
    rhs = np.concatenate([-0.5 * (var + mu * mu) + 0.5 * e_f2 + r_tau,
                          mu - e_f + r_nu])

    def apply(lam):
        lt, ln = lam[:n], lam[n:]
        a_t, a_n = ms_t(t_mu * lt + n_mu * ln, t_P * lt + n_P * ln)
        return np.concatenate([lt - a_t, ln - a_n])

    op = LinearOperator((2 * n, 2 * n), matvec=apply, dtype=np.float64)
    lam, info = gmres(op, rhs, rtol=1e-12, atol=0.0, restart=min(2 * n, 200),
                      maxiter=50)
    if info != 0:
        raise NumericalError("PL gradient: the adjoint system did not converge "
                             f"(GMRES info {info}).", "pl")
    lt, ln = lam[:n], lam[n:]
    if len(par):
        # dE/dpar = dq/dpar + lambda' dF/dpar (the sites move with the parameter).
        tp, np_ = sites(mu, var, up)
        tm, nm = sites(mu, var, down)
        dpar += lt @ ((tp - tm) / step) + ln @ ((np_ - nm) / step)
    w_mu = g_mu + t_mu * lt + n_mu * ln
    w_P = g_P + t_P * lt + n_P * ln
    if not (np.isfinite(w_mu).all() and np.isfinite(w_P).all() and np.isfinite(dpar)):
        raise NumericalError("PL gradient: non-finite adjoint weights.", "pl")
    WU = w_P[:, None] * U
    D = matmul(U.T, WU)                                  # U' W U
    D -= WU
    D -= WU.T
    D[np.diag_indices(n)] += w_P
    c = w_mu - R @ (K @ w_mu)                             # C' w_mu
    D += 0.5 * (np.outer(c, b) + np.outer(b, c))
    return np.asfortranarray(D), dpar, True


def _gaussian_noise_derivative(likelihood, b, r_diag, weights):
    """d log evidence / d(noise variance s2) for the Gaussian likelihood, whose
    sites (w_i / s2, w_i y_i / s2) make the evidence exact: with the weights, the
    evidence is ``log N(y; 0, K + diag(s2 / w)) + sum_i [log(2 pi s2 / w_i) / 2 -
    w_i log(2 pi s2) / 2]``, so the derivative is ``sum_i [(b_i^2 - R_ii) / w_i
    + (1 - w_i) / s2] / 2`` over the examples of positive weight (b = (K +
    diag(s2 / w))^{-1} y, R that inverse)."""
    if weights is None:
        return 0.5 * (b @ b - np.sum(r_diag))
    s2 = likelihood.params[0]
    keep = weights > 0
    w = weights[keep]
    return 0.5 * np.sum((b[keep] ** 2 - r_diag[keep]) / w + (1.0 - w) / s2)


def _positive_order(order):
    if isinstance(order, bool) or not isinstance(order, numbers.Integral) or order < 1:
        raise ValueError(f"evidence_order must be a positive integer, got {order!r}.")
    return int(order)
