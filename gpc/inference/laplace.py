"""Laplace approximation: Newton's method for the posterior mode (R&W ch. 3, 5)."""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .. import _laplace
from .._validation import check_integer, check_real
from ..posterior import SitePosterior
from ._base import (InferenceResult, NumericalError, register, with_jitter,
                    workspace_array)


@register("laplace", state=("alpha",), workspace=True)
def laplace(K, y, likelihood, *, init=None, compute_gradient=True, tol=1e-10,
            max_iter=100, single_precision=True, reuse_factor=True, workspace=None):
    """Laplace approximation of the GP classification posterior.

    Newton's method on ``psi(f) = log p(y|f) - f' K^{-1} f / 2`` written with
    ``B = I + sW K sW`` (K is never inverted), with step halving so that every step
    increases ``psi``; the mode is refined until a Newton step moves it by at most
    ``tol * (1 + max|f|)`` so that the evidence is smooth in the hyperparameters.
    The steps are taken in correction form (from the gradient of ``psi`` in
    double precision), so that inexact ones (see ``single_precision`` and
    ``reuse_factor``) converge to the same mode.
    Called through :func:`gpc.infer` with ``method="laplace"``.

    Parameters
    ----------
    K : ndarray of shape (n, n), Fortran float64 (see :func:`gpc.infer`)
    y : ndarray of shape (n,), labels in {-1, +1}
    likelihood : Likelihood
        Must have derivatives (probit, logit).
    init : dict, optional
        A previous result's ``state`` (``{"alpha": ...}``): Newton starts from
        ``f = K alpha`` when that beats ``f = 0``.
    compute_gradient : bool
        Whether to compute ``dK``, including the implicit term through the mode.
    tol : float, default=1e-10
        Convergence tolerance on the Newton step.
    max_iter : int, default=100
        Maximum number of Newton steps; a ConvergenceWarning is issued when reached.
    single_precision : bool, default=True
        Factorise ``B`` in single precision (cheaper than in double) for the
        Newton steps while ``B`` is well conditioned
        (``1 + sum(W * diag(K))`` at most ``gpc._laplace.SINGLE_MAX_COND``).  A
        single-precision step is only taken when it is finite and needs no
        halving, and ends the iteration only after a single-precision step that
        shrank the previous one 1000-fold (bounding its rounding error); otherwise
        the factorisation is redone in double, as are all later ones.  The
        factorisation at the returned mode, from which the evidence and the
        posterior come, is always in double, and the mode and evidence are those of
        the all-double iteration to rounding.  False: every factorisation in double.
    reuse_factor : bool, default=True
        Once the steps shrink so fast (quadratically) that the last factorisation
        of ``B`` would give a step within 1e-3 of Newton's, take the next steps
        with it (chord steps: no factorisation) while they keep shrinking
        1000-fold, under the same rules as single-precision steps (a step's
        error shows in the size of the next).  False (with
        ``single_precision=False``): plain Newton, every step from a fresh
        double-precision factorisation.
    workspace : dict, optional
        Buffers kept by the caller across calls at one n (evidence maximisation
        passes one; see :func:`gpc.inference._base.workspace_array`).  The
        result's ``dK`` and ``posterior.L`` may then live in it: they are only
        valid until the next call with the same workspace.

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
    par = np.ascontiguousarray(likelihood.params, dtype=np.float64)
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
            _laplace.newton_mode(Kj, y, likelihood.code, par, alpha, f, sW, L,
                                 float(tol), int(max_iter), max_cond,
                                 bool(reuse_factor))
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
        info = _laplace.evidence_dK(Kj, L, y, likelihood.code, par, alpha, f, sW, dK)
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
