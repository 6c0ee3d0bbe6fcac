"""Posterior linearisation: iterated statistical linear regression (García-Fernández,
Tronarp & Särkkä), sequential and parallel."""

import numbers

from .. import _ep, _moments
from ..likelihoods import LIK_GAUSSIAN
from ._base import register
from .ep import fit_sites


@register("pl", max_iter_option="max_sweeps")
def pl(K, y, likelihood, *, init=None, compute_gradient=True, updates="parallel",
       damping=None, min_damping=0.05, order="fixed", random_state=None, tol=1e-8,
       max_sweeps=200, accelerate=True, evidence_order=10):
    """Posterior linearisation (PL) for GP classification.

    Each label's conditional mean ``E[y|f]`` is replaced by its statistical linear
    regression ``A_i f_i + b_i`` on the current posterior marginal
    ``N(f_i; mu_i, P_i)``, with the regression error as Gaussian noise
    ``Omega_i``; the posterior of that linear-Gaussian model gives new marginals,
    and the linearisation is repeated until it stops changing.  Each linearised
    label is the Gaussian site ``tau_i = A_i^2 / Omega_i``,
    ``nu_i = A_i (y_i - b_i) / Omega_i``, never of negative precision, so every
    posterior covariance is positive definite by construction.  Called through
    :func:`gpc.infer` with ``method="pl"``.

    The sites are fitted by the same machinery as EP (:func:`gpc.inference.ep.ep`):
    the same factorisation ``B = I + S K S``, sequential rank-one or parallel
    updates, adaptive damping, warm starts, chord-Newton acceleration of parallel
    updates and single-precision steering factorisations; only the site rule (SLR
    at the marginal instead of moment matching at the cavity) and the evidence
    differ.  The SLR moments are the likelihood's Gaussian moments (closed form for
    probit, step and noisy threshold; the logit's quadrature of ``gh_order``):
    with ``Z_s = E[p(s|f)]`` and ``d_s = d log Z_s / dm`` for ``s = +-1``,
    ``tau = -d_y d_-y / (1 - x)``, ``nu = d_y (1 - mu d_-y) / (1 - x)``,
    ``x = -P d_y d_-y``.  With the Gaussian likelihood PL is exact in one
    iteration.

    Parameters
    ----------
    K : ndarray of shape (n, n), Fortran float64 (see :func:`gpc.infer`)
    y : ndarray of shape (n,), labels in {-1, +1} (real targets for "gaussian")
    likelihood : Likelihood
        Probit, logit, noisy threshold, step or Gaussian.
    init : dict, optional
        A previous result's ``state`` (``{"tau": ..., "nu": ...}``) to start from;
        by default PL starts from the prior (all sites zero), as in the paper.
    compute_gradient : bool, default=True
        The gradient of PL's evidence is not implemented yet: pass False (True
        raises NotImplementedError).
    updates : {"parallel", "sequential"}, default="parallel"
        "parallel" relinearises every label at the current marginals, then
        refactorises once (the paper's main variant); "sequential" relinearises
        one label at a time with a rank-one update of the posterior and
        refactorises after each sweep.
    damping, min_damping, order, random_state, tol, max_sweeps, accelerate
        As for :func:`gpc.inference.ep.ep` (damping default 1: parallel PL halves
        it whenever the largest site change grows).
    evidence_order : int, default=10
        Order of the Gauss-Hermite rule of the evidence correction (paper eq.
        18-19): ``log Z ~ log Z_lin + sum_i log E[p(y_i|f) / N(y_i; A_i f + b_i,
        Omega_i)]`` under ``N(mu_i, P_i)``; 10 as in the paper.  Where
        ``x_i > 1/2`` the integral itself diverges (the integrand outgrows the
        Gaussian weight) and the estimate is the rule's finite sum, as in the
        paper; it then grows with the order.

    Returns
    -------
    InferenceResult
        ``posterior`` (site form), ``log_evidence`` (the estimate above),
        ``state = {"tau", "nu"}`` and ``info`` as for EP (``method="pl"``;
        ``n_improper_final`` counts labels whose SLR moments were not finite).

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
    if compute_gradient:
        raise NotImplementedError(
            "posterior linearisation: the gradient of the evidence is not "
            "implemented yet; call infer with compute_gradient=False (estimators: "
            "optimizer=None).")
    evidence_rule = None
    if likelihood.code != LIK_GAUSSIAN:
        evidence_rule = _moments.gauss_hermite(_positive_order(evidence_order))
    return fit_sites(K, y, likelihood, _ep.RULE_POSTERIOR_LINEARISATION, evidence_rule,
                     init=init, compute_gradient=False, updates=updates,
                     damping=damping, min_damping=min_damping, order=order,
                     random_state=random_state, tol=tol, max_sweeps=max_sweeps,
                     accelerate=accelerate)


def _positive_order(order):
    if isinstance(order, bool) or not isinstance(order, numbers.Integral) or order < 1:
        raise ValueError(f"evidence_order must be a positive integer, got {order!r}.")
    return int(order)
