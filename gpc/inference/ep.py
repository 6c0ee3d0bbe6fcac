"""Expectation propagation (R&W section 3.6; Minka 2001), sequential and parallel."""

import numpy as np

from .. import _linalg, _site_loop
from ._base import register
from .sites import fit_sites


def _posterior_dK(posterior, info):
    """EP's ``dK = (b b' - R) / 2`` at a converged result's sites, from its
    posterior (``R = S B^{-1} S - Q Q'`` with B^{-1} from the factor L, the same
    steps as ``ep`` with ``compute_gradient=True``); None when that result's
    gradient would not be exact (unconverged, or sites clipped in its last sweep).
    """
    if not (info.get("converged") and info.get("n_clipped_last_sweep") == 0):
        return None
    n = posterior.L.shape[0]
    Binv = np.array(posterior.L, order="F", copy=True)
    if _linalg.cho_inverse(Binv) != 0:
        return None
    Q = posterior.Q if posterior.Q is not None else np.zeros((n, 0), order="F")
    _site_loop.evidence_dK(posterior.sW, posterior.alpha, np.asfortranarray(Q), Binv)
    return Binv


@register("ep", max_iter_option="max_sweeps", workspace=True,
          state=("tau", "nu"), posterior_dK=_posterior_dK, sample_weight=True)
def ep(K, y, likelihood, *, init=None, compute_gradient=True, sample_weight=None,
       updates="auto", damping=None, min_damping=0.05, order="fixed",
       random_state=None, tol=1e-8, max_sweeps=200, accelerate=True,
       workspace=None):
    """Expectation propagation (EP) for GP classification.

    Approximates each likelihood term by a Gaussian site
    ``exp(nu_i f_i - tau_i f_i^2 / 2)``, refined by moment matching until the
    sites and the log evidence stop changing.  Called through :func:`gpc.infer`
    with ``method="ep"``.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Prior covariance, Fortran-ordered float64 (see :func:`gpc.infer`).
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    likelihood : Likelihood
        Any likelihood with Gaussian moments (probit, logit, noisy threshold,
        step).
    init : dict, optional
        A previous result's ``state`` (``{"tau": ..., "nu": ...}``) to start from.
        If that run fails or does not converge, runs from the prior are made too
        and the best kept (``info["warm_start_rejected"]``).
    compute_gradient : bool, default=True
        Whether to compute ``dK`` and ``dlik``.
    sample_weight : ndarray of shape (n,), optional
        Non-negative weights of the examples (see :func:`gpc.infer`): site i
        approximates ``p(y_i | f_i)^(w_i)`` by power EP (see Notes).
    updates : {"auto", "parallel", "sequential"}, default="auto"
        "parallel" updates all sites at once and refactorises once per sweep: the
        fast choice.  "sequential" updates one site at a time, the classic
        algorithm, much slower once n is in the hundreds.  "auto" runs parallel
        EP and falls back to sequential sweeps only if every parallel run fails.
        Both reach the same fixed point.
    damping : float in (0, 1], optional
        Weight of the new site against the old one (1 = no damping, the default).
        Parallel EP adapts it between ``min_damping`` and this value.
    min_damping : float, default=0.05
        Smallest damping parallel EP adapts down to.
    order : {"fixed", "random"}, default="fixed"
        Site order of sequential sweeps; "random" draws a new permutation per
        sweep from ``random_state``.
    random_state : int, RandomState instance or None, default=None
        Seeds the random site order.
    tol : float, default=1e-8
        Converged when no site parameter would change by more than ``tol``
        (relative to ``1 + |value|``) and the log evidence by less than
        ``tol * (1 + |log Z|)``.
    max_sweeps : int, default=200
        Largest number of sweeps; a ConvergenceWarning is issued when reached.
    accelerate : bool, default=True
        Speed up parallel EP near convergence with cheap linearised sweeps
        between factorisations (see Notes).  The answer is the same fixed point.
    workspace : dict, optional
        Buffers kept by the caller across calls at one n (evidence maximisation
        passes one).  The result's ``dK`` and ``posterior.L`` may then live in
        it, valid until the next call with the same workspace.

    Returns
    -------
    InferenceResult
        ``state = {"tau", "nu"}``; the posterior holds the marginals at the
        training points.  Besides the common keys, ``info`` holds:

        - ``n_sweeps`` (also ``n_iter``): sweeps followed by a factorisation;
          ``n_linearised_sweeps``: the cheap sweeps of ``accelerate``;
          ``n_single_precision``: factorisations done in single precision;
        - ``updates`` (the schedule that gave the result),
          ``sequential_fallback``, ``n_runs``, ``start_damping``, ``damping``
          (final) and ``warm_start_rejected``;
        - ``n_negative``: sites with negative precision at the end;
        - the counts of the improper-update policy (see Notes): ``n_skipped``,
          ``n_clipped``, ``n_rejected``, ``n_nonfinite``, ``n_improper_final``
          and ``n_clipped_last_sweep``;
        - ``gradient_exact``: False when the run did not converge (``dK`` and
          ``dlik`` are those of a point that is not the fixed point) or sites
          were still being clipped in the last sweep, so that they miss their
          implicit terms (a ConvergenceWarning or a RuntimeWarning says so);
        - ``evidence_rounding``: how far the rounding errors of K alone can move
          the log evidence (see Notes; None without the gradient).

    Raises
    ------
    NumericalError
        When the log evidence is not finite, or when the run did not converge
        because its fixed point cannot be resolved in double precision (see
        Notes).

    Notes
    -----
    *Schedules.*  Sequential EP updates one site with a rank-one update of the
    posterior covariance (O(n^2) per site) and refactorises after each sweep.
    Parallel EP updates every site from the current marginals and refactorises
    ``B = I + S K S`` once per sweep (O(n^3), level-3 BLAS).  Its damping is
    halved (down to ``min_damping``) whenever the largest site change grows from
    one sweep to the next, and raised by a factor 1.25 (up to ``damping``) while
    it falls.  A parallel run from the prior that fails or does not converge is
    redone with the damping starting at 1/2, then 1/4 of ``damping``.

    *Acceleration.*  Once the largest relative change the next update would make
    is below 0.1, each factorisation is followed by sweeps on the marginals
    linearised around the current sites, ``diag(Sigma) ~ v0 - (Sigma o Sigma)
    dtau`` and ``mu ~ mu0 + Sigma (dnu - dtau o mu0)``, at O(n^2) each,
    Anderson-accelerated.  Their fixed point agrees with EP's to second order, so
    the factorisations converge like a chord-Newton method; the exact
    factorisation after them decides convergence.  Factorisations that only
    steer such steps from far off may be done in single precision; convergence,
    the evidence and the gradient always come from a double-precision one.

    *Negative site precisions.*  With likelihoods that are not log-concave (the
    noisy threshold) the fixed point often has some, and only there are the
    evidence and its gradient exact.  The m negative sites enter through an
    m x m Cholesky correction of the factorisation of the positive ones, which
    also tells whether the posterior is proper.  Improper updates follow one
    policy:

    * a site whose cavity has non-positive precision is left unchanged;
    * a sequential update that would make another, proper, cavity improper is
      clipped (precision 0, ``nu = d log Z / dm``) if its new precision is
      negative, and skipped otherwise;
    * a parallel step that makes the posterior or a proper cavity improper is
      retried without acceleration, then with halved damping, and at
      ``min_damping`` with its negative proposals clipped;
    * a tilted variance that rounds to <= 0 is clipped the same way.

    *Evidence and gradient.*  The log evidence is GPML's stable arrangement of
    Rasmussen & Williams eq. 3.65; ``dK = (b b' - S B^{-1} S) / 2``, exact at the
    fixed point (their Algorithm 5.2), and ``dlik`` is the sum of
    ``d log Z_i / d theta`` at the cavities.  A factorisation that fails, or a
    site precision that overflows (a collapsed posterior, e.g. duplicated inputs
    with conflicting labels under the step likelihood), is retried with jitter
    on K (``info["jitter"]``).

    *Resolution.*  ``info["evidence_rounding"]``, ``u sum_ij |dK_ij K_ij|``
    with u = 2^-53, is to first order the most the log evidence moves when every
    entry of K changes by its own rounding error, as it does from one
    computation of K to the next at hyperparameters a rounding apart.  No
    algorithm given K in double precision resolves the evidence more finely, so
    a finite-difference check of the gradient with step h is only good to about
    this over h.  It is tiny unless large site precisions confine the posterior
    to directions in which K is nearly singular: noise-free or nearly
    noise-free labels (the step, the noisy threshold) under a kernel far
    smoother than they are, e.g. a long length scale.  There the fixed point
    may still exist, but the site residual stalls at rounding noise well above
    ``tol``.  So a classification run that does not converge is checked: if
    changing every entry of K by a random fraction of its rounding error changes
    the residual at its sites by more than ``tol`` and by more than 1e-4 of itself
    (it is then noise: 0.008 to 2 times itself where seen, against below 1e-8 for
    runs merely out of sweeps), the run is refused with a NumericalError, which
    the evidence maximisers treat as a failed evaluation, rather than returned
    with an evidence and a gradient that would be noise.  Otherwise a
    ConvergenceWarning says that more sweeps are needed.  (A regression's
    residual is in the units of its targets, which ``tol`` is not: it only warns.)

    *Weights.*  With ``sample_weight``, site i approximates the weighted term
    ``p(y_i | f_i)^(w_i)`` by power EP (Minka 2004) of power ``1 / s_i``: the
    cavity removes the site's root ``t_i^(1 / s_i)``, the tilted law is that
    cavity times ``p(y_i | f_i)^(w_i / s_i)``, and the moment-matched site is
    raised to ``s_i``.  For a weight of at least 1, ``s_i = w_i``: the tilted law
    has the likelihood itself.  A power ``1 / w_i`` above 1 would leave the
    cavity improper wherever the site's precision per unit weight exceeds the
    marginal's (common at large signal variances), so a weight below 1 takes
    ``s_i = 1``: plain EP on the tempered likelihood ``p^(w_i)``, whose Gaussian
    integrals are closed forms or, for the probit and the logit, a quadrature
    (:meth:`gpc.likelihoods.Likelihood.gauss_moments` with ``power``; a Python
    likelihood keeps ``s_i = w_i``).  The evidence is power EP's, each site's
    term times ``s_i``, and stays stationary at the fixed point, so ``dK`` keeps
    its form.  A zero weight holds the site at 1: the example drops out exactly.
    An integer weight is not the same as repeating the example (EP's sites of
    the copies would differ from one site raised to the power) unless the
    copies share their input, where the two fixed points coincide.

    References
    ----------
    Minka, T. P. (2001). Expectation propagation for approximate Bayesian
    inference.  Minka, T. P. (2004). Power EP. Microsoft Research technical
    report MSR-TR-2004-149.
    Rasmussen, C. E. & Williams, C. K. I. (2006). Gaussian Processes
    for Machine Learning, sections 3.6 and 5.5.2.
    """
    return fit_sites(K, y, likelihood, _site_loop.RULE_EXPECTATION_PROPAGATION, None,
                     init=init, compute_gradient=compute_gradient, updates=updates,
                     damping=damping, min_damping=min_damping, order=order,
                     random_state=random_state, tol=tol, max_sweeps=max_sweeps,
                     accelerate=accelerate, workspace=workspace,
                     sample_weight=sample_weight)

