"""Nested expectation propagation for the multinomial probit model of C latent
functions (Riihimaki, Jylanki & Vehtari, JMLR 14, 2013).

The outer EP approximates each example's likelihood ``p(y_i | f_i)`` by a
Gaussian site in its C latent values and updates all sites in parallel from the
posterior marginals; the tilted distributions are approximated by the inner EP
of ``gpc.likelihoods._multinomial_probit``, one sweep per outer iteration
from the previous inner sites.  A site's precision has the structure of the
softmax's Hessian, so the posterior takes the n x n factorisations of Laplace's
multinomial model (:class:`gpc.inference.multinomial._Factors`): ``O(C n^3)``
per iteration, never a ``Cn x Cn`` factorisation.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._anderson import Anderson
from .._validation import check_integer, check_real
from ..likelihoods import MultinomialProbit
from ..likelihoods._multinomial_probit import (augmented, inner_sweep,
                                               largest_change, log_site_constants,
                                               other_classes, outer_sites)
from ..posterior import MultinomialPosterior
from ._base import InferenceResult, NumericalError, register
from .multinomial import _explicit_dK, _Factors, _mv

#: Past iterations mixed by the Anderson acceleration of the outer EP.
ANDERSON_MEMORY = 5
#: Iterations without halving the smallest change after which EP stops at the
#: rounding floor (if that change is below sqrt(tol)).
STALL = 10


class _Posterior:
    """The posterior that the sites ``(tau, nu)`` give: factors, ``alpha``, the
    marginal means ``mu`` (C, n) and covariances ``S`` (n, C, C), and the
    outer sites ``(d, nu_f, const)``."""

    def __init__(self, Ks, y, tau, nu):
        self.d, self.nu_f, self.const = outer_sites(y, tau, nu)
        self.fac = _Factors(Ks, self.d, "ep")
        self.alpha = self.fac.solve(Ks, self.nu_f)
        self.mu = _mv(Ks, self.alpha)
        self.posterior = MultinomialPosterior(self.alpha, self.fac.E, self.fac.M,
                                              marginal_mean=self.mu.T,
                                              likelihood="multinomial_probit")
        self.S = self.posterior.marginal_var = self.posterior.latent_covariance(
            list(Ks), np.stack([np.diagonal(K) for K in Ks]))

    def augmented(self, y, tau, nu):
        """The inner posteriors of ``(f_i, u_i)``."""
        return augmented(self.mu.T, self.S, y, tau, nu)

    def log_evidence(self, y, J, tau, nu):
        """EP's log evidence at these sites (see :func:`multinomial_ep`, Notes)."""
        cov_w, mean_w = self.augmented(y, tau, nu)
        try:
            sites = log_site_constants(cov_w, mean_w, y, J, tau, nu)
        except FloatingPointError as exc:
            raise NumericalError(f"multinomial EP: {exc}", "ep") from exc
        return float(np.sum(sites + self.const) - self.fac.half_logdet
                     + 0.5 * np.sum(self.nu_f * self.mu))


def _initial_sites(init, C, n, y):
    """The sites to start from: ``init``'s (checked) or zeros."""
    tau, nu = np.zeros((C, n)), np.zeros((C, n))
    if init is not None and "tau" in init and "nu" in init:
        t = np.asarray(init["tau"], dtype=np.float64)
        v = np.asarray(init["nu"], dtype=np.float64)
        if t.shape == (C, n) and v.shape == (C, n) and (t >= 0).all():
            tau[:], nu[:] = t, v
            tau[y, np.arange(n)] = nu[y, np.arange(n)] = 0.0
    return tau, nu


def _run(Ks, y, J, tau, nu, damping, tol, max_iter):
    """Parallel outer EP from the sites given (updated in place), its iteration
    Anderson-accelerated; returns ``(posterior, n_iter, converged, damping,
    n_skipped)``, the posterior at the returned sites.  J: each example's other
    classes."""
    accel = Anderson(ANDERSON_MEMORY)
    step, last, skipped = damping, np.inf, 0
    best, stalled = np.inf, 0
    for it in range(max_iter + 1):
        post = _Posterior(Ks, y, tau, nu)
        if it == max_iter:
            return post, it, False, step, skipped
        cov_w, mean_w = post.augmented(y, tau, nu)
        new_tau, new_nu = tau.copy(), nu.copy()
        skipped = inner_sweep(cov_w, mean_w, y, J, new_tau, new_nu)
        change = max(largest_change(tau, new_tau), largest_change(nu, new_nu))
        if not (np.isfinite(new_tau).all() and np.isfinite(new_nu).all()):
            raise NumericalError("multinomial EP: a site parameter is not finite.", "ep")
        if change < 0.5 * best:
            best, stalled = change, 0
        else:
            stalled += 1
        if change <= tol or (stalled >= STALL and best <= np.sqrt(tol)):
            return post, it, True, step, skipped
        if change > 2.0 * last:         # diverging: damp more, forget the history
            step = max(step * 0.5, 0.01)
            accel.reset()
        else:
            step = min(step * 1.25, damping)
        last = change
        _accelerated_step(accel, tau, nu, new_tau, new_nu, step)


def _accelerated_step(accel, tau, nu, new_tau, new_nu, step):
    """Move the sites ``(tau, nu)`` (in place) to the Anderson mixture of the
    damped steps towards ``(new_tau, new_nu)``; a site whose mixed precision
    would be negative takes the damped step alone.  The unused entries at the
    labels stay 0: they are 0 in every step mixed."""
    x = np.concatenate([tau.ravel(), nu.ravel()])
    plain = x + step * (np.concatenate([new_tau.ravel(), new_nu.ravel()]) - x)
    mixed = accel.step(x, plain)
    if not np.isfinite(mixed).all():
        mixed = plain
        accel.reset()
    n_sites = tau.size
    bad = np.tile(mixed[:n_sites] < 0, 2)
    mixed[bad] = plain[bad]
    tau.ravel()[:] = mixed[:n_sites]
    nu.ravel()[:] = mixed[n_sites:]


@register("ep", state=("tau", "nu"), likelihoods=(MultinomialProbit,))
def multinomial_ep(K, y, likelihood, *, init=None, compute_gradient=True,
                   damping=1.0, tol=1e-8, max_iter=500):
    """Nested expectation propagation for the multinomial probit model.

    Called through :func:`gpc.infer` with ``likelihood="multinomial_probit"``
    and ``method="ep"``.

    Parameters
    ----------
    K : sequence of C ndarrays of shape (n, n)
        The prior covariance of each class's latent function, Fortran-ordered
        float64 (the same array repeated when the classes share a kernel).
    y : ndarray of shape (n,)
        Integer labels in ``0 .. C - 1``.
    likelihood : MultinomialProbit
    init : dict, optional
        A previous result's ``state`` (``{"tau", "nu"}``, each of shape (C, n))
        to start from instead of the prior.  If that run fails or does not
        converge, EP runs again from the prior
        (``info["warm_start_rejected"]``).
    compute_gradient : bool, default=True
        Whether to compute ``dK``.
    damping : float in (0, 1], default=1.0
        Weight of the new sites against the old ones in each step (see
        Notes).
    tol : float, default=1e-8
        Converged when an undamped update would change no site parameter by
        more than ``tol`` (relative to ``1 + |value|``).
    max_iter : int, default=500
        Largest number of outer iterations; a ConvergenceWarning is issued when
        reached.

    Returns
    -------
    InferenceResult
        ``posterior`` a :class:`gpc.posterior.MultinomialPosterior`;
        ``log_evidence`` EP's approximation of the log evidence; ``dK`` of shape
        (C, n, n), ``dK[c]`` the derivative with respect to ``K_c`` (sum over c
        for a shared K); ``state = {"tau", "nu"}``, the inner sites; ``info``
        with ``damping`` (the final one), ``n_skipped`` (inner updates left
        out in the last iteration for an improper cavity) and
        ``warm_start_rejected`` besides the common keys.

    Notes
    -----
    *Sites.*  The inner sites of example i, ``exp(nu_ij s - tau_ij s^2 / 2)`` in
    ``s = u_i + f_{i y_i} - f_ij``, give, with u integrated out, a Gaussian site
    in ``f_i`` of precision ``D_i - d_i d_i' / sum(d_i)``, ``d_i`` made of 1 at
    the label and ``tau_ij`` elsewhere (see :class:`gpc.likelihoods.MultinomialProbit`).
    The precisions ``tau_ij`` are positive (the probit is log-concave).

    *Iteration.*  Each iteration computes the posterior marginals of all
    examples (``O(C n^3)``) and runs one inner EP sweep per example from its
    inner sites.  The damped steps are Anderson-accelerated (the new sites mix
    the last 5 steps with weights that minimise the combined change in least
    squares; a site whose mixed precision would be negative takes its damped
    step alone).  When the largest change more than doubles from one iteration
    to the next, the damping is halved (down to 0.01) and the mixing history
    dropped; while it does not, the damping grows by a factor 1.25 back to
    ``damping``.  Converged when the change is below ``tol``, or at the
    rounding floor: when the smallest change, below ``sqrt(tol)``, has not
    been halved in 10 iterations (huge signal variances with long length
    scales, where the marginals lose digits to cancellation).
    Parallel updates of strongly coupled sites converge slowly by themselves
    (hundreds of iterations on digits with a long length scale); the
    acceleration brings that to a few tens from the prior and to about 10-20
    from the previous hyperparameters' sites.

    *Evidence and gradient.*  ``log Z = sum_i (log Z~_i) - log|I + K Pi| / 2 +
    nu' Sigma nu / 2``, with ``Z~_i`` the scale of site i (the inner sites'
    scales times the constant of integrating u out), ``Pi`` and ``nu`` the
    sites' precisions and linear coefficients and ``Sigma`` the posterior
    covariance.  At the fixed point of both EPs the sites are stationary, so
    ``dK_c = (alpha_c alpha_c' - A_cc) / 2`` with ``A = (K + Pi^+)^{-1}``, as in
    binary EP.
    """
    check_real(damping, "damping", 0.0, 1.0, low_open=True)
    check_real(tol, "tol", 0.0, low_open=True)
    check_integer(max_iter, "max_iter", 0)
    C, n = len(K), K[0].shape[0]
    J = other_classes(y, C)
    tau, nu, rejected = *_initial_sites(init, C, n, y), False
    try:
        run = _run(K, y, J, tau, nu, float(damping), float(tol), int(max_iter))
    except NumericalError:
        if init is None:
            raise
        run = None
    if init is not None and (run is None or not run[2]):    # then from the prior
        tau[:], nu[:], rejected = 0.0, 0.0, True
        run = _run(K, y, J, tau, nu, float(damping), float(tol), int(max_iter))
    post, n_iter, converged, step, skipped = run
    if not converged:
        warnings.warn(f"multinomial EP did not converge in {n_iter} iterations "
                      f"(max_iter={max_iter}); the evidence and its gradient are "
                      "approximate.", ConvergenceWarning, stacklevel=3)
    log_z = post.log_evidence(y, J, tau, nu)
    if not np.isfinite(log_z):
        raise NumericalError("multinomial EP: the log evidence is not finite.", "ep")
    dK = _explicit_dK(post.fac, post.alpha) if compute_gradient else None
    return InferenceResult(
        posterior=post.posterior, log_evidence=log_z, dK=dK,
        dlik=np.zeros(0) if compute_gradient else None,
        state={"tau": tau, "nu": nu},
        info={"method": "ep", "likelihood": likelihood.name, "jitter": 0.0,
              "n_iter": n_iter, "converged": bool(converged), "damping": step,
              "n_skipped": skipped, "warm_start_rejected": rejected})
