"""Laplace approximation: Newton's method for the posterior mode (R&W ch. 3, 5)."""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .. import _laplace, _model
from .._validation import check_integer, check_real
from ..posterior import SitePosterior
from ._base import (InferenceResult, NumericalError, register, with_jitter,
                    workspace_array)


@register("laplace", state=("alpha",), workspace=True, sample_weight=True)
def laplace(K, y, likelihood, *, init=None, compute_gradient=True, sample_weight=None,
            tol=1e-10, max_iter=100, single_precision=True, reuse_factor=True,
            workspace=None):
    """Laplace approximation of the GP classification posterior.

    A Gaussian centred at the posterior mode, with the curvature of the log
    posterior there.  Called through :func:`gpc.infer` with ``method="laplace"``.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Prior covariance, Fortran-ordered float64 (see :func:`gpc.infer`).
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    likelihood : Likelihood
        Must have derivatives (probit, logit).
    init : dict, optional
        A previous result's ``state`` (``{"alpha": ...}``): Newton starts from
        ``f = K alpha`` when that beats ``f = 0``.
    compute_gradient : bool
        Whether to compute ``dK``, including the implicit term through the mode.
    sample_weight : ndarray of shape (n,), optional
        Non-negative weights of the examples (see :func:`gpc.infer`): the
        objective's log likelihood is ``sum_i w_i log p(y_i | f_i)``, so an
        integer weight is exactly that many copies of the example.
    tol : float, default=1e-10
        Converged when a Newton step moves the mode by at most
        ``tol * (1 + max|f|)``; tight, so that the evidence is smooth in the
        hyperparameters.
    max_iter : int, default=100
        Maximum number of Newton steps; a ConvergenceWarning is issued when reached.
    single_precision : bool, default=True
        Allow the early Newton steps to use a cheaper single-precision
        factorisation.  The mode, the evidence and the gradient are those of the
        all-double iteration to rounding (see Notes).
    reuse_factor : bool, default=True
        Allow the last Newton steps to reuse the previous factorisation once the
        steps shrink fast (see Notes).  With both options False: plain Newton.
    workspace : dict, optional
        Buffers kept by the caller across calls at one n (evidence maximisation
        passes one).  The result's ``dK`` and ``posterior.L`` may then live in
        it, valid until the next call with the same workspace.

    Returns
    -------
    InferenceResult
        ``log_evidence = psi(f_hat) - sum(log(diag(L)))``; ``dlik`` is None for a
        likelihood with parameters (not implemented for Laplace yet);
        ``state = {"alpha": a}``; ``posterior.marginal_mean`` is the mode;
        ``info`` holds ``n_iter``, ``converged``, ``n_halvings``, ``jitter``,
        ``n_single`` (the factorisations tried in single precision, failed ones
        and those of steps redone included) and ``n_reused`` (the chord steps
        tried).

    Notes
    -----
    Newton's method on ``psi(f) = log p(y|f) - f' K^{-1} f / 2``, written with
    ``B = I + sW K sW`` so that K is never inverted, halves steps so that each
    one increases ``psi``.  The steps are taken in correction form (from the
    gradient of ``psi`` in double precision), so that inexact ones converge to
    the same mode:

    * ``single_precision``: while ``B`` is well conditioned
      (``1 + sum(W * diag(K))`` at most ``gpc._laplace.SINGLE_MAX_COND``), B is
      factorised in single precision.  Such a step is taken only when it is
      finite and needs no halving, and ends the iteration only after it shrank
      the previous step 1000-fold; otherwise the factorisation is redone in
      double, as are all later ones.
    * ``reuse_factor``: once the last factorisation would give a step within
      1e-3 of Newton's, the next steps reuse it (chord steps) while they keep
      shrinking 1000-fold, under the same rules.

    The factorisation at the returned mode, from which the evidence, the
    posterior and ``dK`` (with its implicit term through the mode, Rasmussen &
    Williams Algorithm 5.1) come, is always in double precision.
    """
    if not likelihood.has_derivatives:
        raise ValueError(
            f"The Laplace approximation needs a likelihood with derivatives; "
            f"{likelihood.name!r} has none. Use method='ep' or 'adf' instead."
        )
    check_real(tol, "tol", 0.0, low_open=True)
    check_integer(max_iter, "max_iter", 0)
    max_cond = _laplace.SINGLE_MAX_COND if single_precision else 0.0
    n = K.shape[0]
    model = _model.likelihood_model(likelihood, weights=sample_weight)
    par = model.par
    options = _laplace.NewtonOptions(float(tol), int(max_iter), max_cond,
                                     bool(reuse_factor))
    alpha0 = np.zeros(n)
    if init is not None and "alpha" in init:
        a = np.asarray(init["alpha"], dtype=np.float64)
        if a.shape == (n,) and np.isfinite(a).all():
            alpha0 = a.copy()

    def attempt(Kj):
        alpha = alpha0.copy()
        f = np.empty(n)
        sW = np.empty(n)
        # Only L's lower triangle is written (its upper one stays zero).
        L = workspace_array(workspace, "L", (n, n))
        status, n_iter, converged, psi, logdet, halvings, n_single, n_reused = \
            _laplace.newton_mode(Kj, y, model, alpha, f, sW, L, options)
        if status == _laplace.STATUS_NOT_PD:
            return None
        if status == _laplace.STATUS_NONFINITE:
            raise NumericalError(
                "Laplace: a non-finite value appeared during the Newton iterations "
                "(the kernel matrix is probably too badly scaled).", "laplace")
        return (Kj, alpha, f, sW, L, n_iter, converged, psi, logdet, halvings,
                n_single, n_reused)

    (Kj, alpha, f, sW, L, n_iter, converged, psi, logdet, halvings, n_single,
     n_reused), jitter = with_jitter(K, attempt)
    if not converged:
        warnings.warn(
            f"Laplace: Newton's method did not converge in {n_iter} iterations "
            f"(max_iter={max_iter}); the evidence and its gradient are approximate.",
            ConvergenceWarning, stacklevel=3)
    dK = None
    if compute_gradient:
        dK = workspace_array(workspace, "dK", (n, n))
        info = _laplace.evidence_dK(Kj, L, y, model, alpha, f, sW, dK)
        if info != 0:
            raise NumericalError("Laplace: inverting B failed (LAPACK info "
                                 f"{info}); B = I + sW K sW is singular.", "laplace")
    return InferenceResult(
        posterior=SitePosterior(alpha, sW, L, marginal_mean=f),
        log_evidence=float(psi - logdet),
        dK=dK,
        # Derivatives with respect to likelihood parameters are not implemented for
        # Laplace yet (the classification likelihoods it supports have none).
        dlik=np.zeros(0) if compute_gradient and len(par) == 0 else None,
        state={"alpha": alpha},
        info={"method": "laplace", "likelihood": likelihood.name, "n_iter": n_iter,
              "converged": bool(converged), "n_halvings": halvings,
              "n_single": n_single, "n_reused": n_reused, "jitter": jitter},
    )
