"""Expectation propagation (R&W section 3.6; Minka 2001), sequential and parallel."""

import warnings

import numpy as np
from scipy.linalg import lapack
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from .. import _ep
from ..posterior import SitePosterior
from .._validation import NotPositiveDefiniteError, check_integer, check_real
from ._base import (InferenceResult, NumericalError, register, with_jitter,
                    workspace_array)


def _posterior_dK(posterior, info):
    """EP's ``dK = (b b' - R) / 2`` at a converged result's sites, from its
    posterior (``R = S B^{-1} S - Q Q'`` with B^{-1} from the factor L, the same
    steps as ``ep`` with ``compute_gradient=True``); None when that result's
    gradient would not be exact (unconverged, or sites clipped in its last sweep).
    """
    if not (info.get("converged") and info.get("n_clipped_last_sweep") == 0):
        return None
    n = posterior.L.shape[0]
    Binv, status = lapack.dpotri(np.array(posterior.L, order="F", copy=True),
                                 lower=1, overwrite_c=1)
    if status != 0:
        return None
    Q = posterior.Q if posterior.Q is not None else np.zeros((n, 0), order="F")
    _ep.ep_dK(posterior.sW, posterior.alpha, np.asfortranarray(Q), Binv)
    return Binv


@register("ep", max_iter_option="max_sweeps", workspace=True,
          state=("tau", "nu"), posterior_dK=_posterior_dK)
def ep(K, y, likelihood, *, init=None, compute_gradient=True, updates="auto",
       damping=None, min_damping=0.05, order="fixed", random_state=None, tol=1e-8,
       max_sweeps=200, accelerate=True, workspace=None):
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
        - ``gradient_exact``: False when sites were still being clipped in the
          last sweep, so that ``dK`` and ``dlik`` miss their implicit terms (a
          RuntimeWarning says so).

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

    References
    ----------
    Minka, T. P. (2001). Expectation propagation for approximate Bayesian
    inference.  Rasmussen, C. E. & Williams, C. K. I. (2006). Gaussian Processes
    for Machine Learning, sections 3.6 and 5.5.2.
    """
    return fit_sites(K, y, likelihood, _ep.RULE_EXPECTATION_PROPAGATION, None,
                     init=init, compute_gradient=compute_gradient, updates=updates,
                     damping=damping, min_damping=min_damping, order=order,
                     random_state=random_state, tol=tol, max_sweeps=max_sweeps,
                     accelerate=accelerate, workspace=workspace)


def fit_sites(K, y, likelihood, rule, evidence_rule, *, init, compute_gradient,
              updates, damping, min_damping, order, random_state, tol, max_sweeps,
              accelerate, gradient_terms=None, workspace=None):
    """The site-fitting loop shared by EP and posterior linearisation (``rule``,
    see ``gpc._ep.ep_run``); ``evidence_rule`` is PL's Gauss-Hermite ``(x, logw)``
    for its evidence correction (None for EP).  ``gradient_terms(K, y, S, b, Binv,
    mu, var)``, if given, returns ``(D, dlik0, exact)``: a matrix added to
    ``dK = (b b' - S B^{-1} S) / 2`` (or None), the derivative with respect to
    the likelihood parameter and whether they make the total derivative (Binv
    holds B^{-1} in its lower triangle).  Options as in
    :func:`ep`; the ``workspace`` serves the first start (a later one, tried while
    an earlier run is kept as the best so far, gets its own arrays)."""
    name = "EP" if rule == _ep.RULE_EXPECTATION_PROPAGATION else "PL"
    method = name.lower()
    if updates not in ("auto", "sequential", "parallel"):
        raise ValueError("updates must be 'auto', 'sequential' or 'parallel', got "
                         f"{updates!r}.")
    if order not in ("fixed", "random"):
        raise ValueError(f"order must be 'fixed' or 'random', got {order!r}.")
    damping = 1.0 if damping is None else damping
    check_real(damping, "damping", 0.0, 1.0, low_open=True)
    check_real(min_damping, "min_damping", 0.0, 1.0, low_open=True)
    check_real(tol, "tol", 0.0, low_open=True)
    check_integer(max_sweeps, "max_sweeps", 1)
    damping, max_sweeps = float(damping), int(max_sweeps)
    n = K.shape[0]
    first_parallel = updates != "sequential"
    par = np.ascontiguousarray(likelihood.params, dtype=np.float64)
    qx = np.ascontiguousarray(likelihood.quad_x, dtype=np.float64)
    qw = np.ascontiguousarray(likelihood.quad_logw, dtype=np.float64)
    # Starts tried in turn until a run converges: (tau, nu, initial damping, from
    # the prior, parallel).  Parallel runs from the prior are retried with the
    # damping starting at 1/2 and 1/4 of its value (it recovers while the residual
    # falls); "auto" then falls back to sequential sweeps from the prior.
    prior = (np.zeros(n), np.zeros(n))
    starts = [(*prior, damping, True, first_parallel)]
    if first_parallel:
        starts += [(*prior, f * damping, True, True) for f in (0.5, 0.25)]
    if updates == "auto":
        starts.append((*prior, damping, True, False))
    if init is not None and "tau" in init and "nu" in init:
        t, v = np.asarray(init["tau"], float), np.asarray(init["nu"], float)
        if t.shape == (n,) and v.shape == (n,) and np.isfinite(t).all() \
                and np.isfinite(v).all():
            starts.insert(0, (t, v, damping, False, first_parallel))
    orders = {True: np.zeros((1, n), dtype=np.intc)}
    if updates != "parallel":
        if order == "fixed":
            orders[False] = np.tile(np.arange(n, dtype=np.intc), (max_sweeps, 1))
        else:
            rng = check_random_state(random_state)
            orders[False] = np.array([rng.permutation(n) for _ in range(max_sweeps)],
                                     dtype=np.intc).reshape(max_sweeps, n)

    if evidence_rule is None:
        evq_x = evq_logw = np.zeros(0)
    else:
        evq_x, evq_logw = (np.ascontiguousarray(a, dtype=np.float64)
                           for a in evidence_rule)

    def attempt(Kj, start, ws):
        tau, nu, damping_start, parallel = (start[0].copy(), start[1].copy(), start[2],
                                            start[4])
        # Only L's lower triangle is ever written (its upper one stays zero).
        L = workspace_array(ws, "L", (n, n))
        b, S, mu, var = (np.empty(n) for _ in range(4))
        # Holds L^{-1} and then B^{-1} (lower triangle), made into dK: all written.
        Binv = workspace_array(ws, "Binv", (n, n) if compute_gradient else (0, 0))
        scratch = None if ws is None else workspace_array(
            ws, "scratch", (_ep.scratch_size(n, parallel, compute_gradient),))
        out = _ep.ep_run(Kj, y, likelihood.code, par, qx, qw, tau, nu, L, b, S, mu, var,
                         parallel, orders[parallel], damping, float(min_damping),
                         float(tol), max_sweeps, bool(accelerate), Binv, rule, evq_x,
                         evq_logw, damping_start, scratch)
        if out.status == _ep.STATUS_NOT_PD:
            return None
        if out.status == _ep.STATUS_NONFINITE:
            raise NumericalError(f"{name}: a non-finite site parameter appeared (the "
                                 "kernel matrix is probably badly scaled).", method)
        return Kj, tau, nu, L, b, S, mu, var, Binv, out

    # A warm start is only a guess: sites fitted to other hyperparameters can put
    # the marginals far into a likelihood's tail, from where the updates may run
    # away (PL's linearisation there has a vanishing slope but a finite offset).
    # Undamped parallel updates can run away too where K is large and strongly
    # correlated (the site changes look small next to 1 but move every marginal
    # far).  So when a run fails or ends unconverged, the next start is tried, and
    # of the runs made the one nearest a fixed point (the smallest final residual,
    # with a finite evidence) is kept.
    def distance(run):
        out = run[0][-1]
        return (not np.isfinite(out.log_evidence), out.residual)

    best, n_runs = None, 0                         # best = (fields, jitter, start)
    for k, start in enumerate(starts):
        try:
            ws = workspace if k == 0 else None
            run = (*with_jitter(K, lambda Kj: attempt(Kj, start, ws)), start)
        except (FloatingPointError, NotPositiveDefiniteError):
            if k == len(starts) - 1 and best is None:
                raise
            continue
        n_runs += 1
        if best is None or distance(run) < distance(best):
            best = run                             # (only the best run's n x n kept)
        out = run[0][-1]
        del run
        if out.converged and np.isfinite(out.log_evidence):
            break
    (Kj, tau, nu, L, b, S, mu, var, Binv, out), jitter, start = best
    n_sweeps, converged, log_evidence = out.n_sweeps, out.converged, out.log_evidence
    dlik0, Q = out.dlik0, out.Q
    warm_rejected = len(starts) > 1 and not starts[0][3] and start[3]
    used = "parallel" if start[4] else "sequential"
    if not np.isfinite(log_evidence):
        raise NumericalError(
            f"{name}: the log evidence is not finite after {n_sweeps} sweeps "
            f"({'converged' if converged else 'not converged'}); the posterior has "
            "run into a region where the likelihood's moments underflow (try a "
            "smaller kernel variance or more damping).", method)
    n_bad, n_clip_last = out.n_improper_final, out.n_clipped_last_sweep
    if not converged:
        warnings.warn(f"{name} did not converge in {n_sweeps} sweeps (max_sweeps="
                      f"{max_sweeps}, {used}); the evidence and its gradient are "
                      "approximate.", ConvergenceWarning, stacklevel=4)
    if n_bad:
        what = ("an improper cavity" if name == "EP" else
                "non-finite moments or an improper cavity (rounding)")
        warnings.warn(f"{name}: {n_bad} site(s) have {what} at the end; they are "
                      "left out of the log evidence.", RuntimeWarning, stacklevel=4)
    if compute_gradient and n_clip_last:
        # A clipped site is not moment-matched, so the evidence is not stationary in
        # it and (b b' - R)/2 misses its implicit term.
        warnings.warn(f"{name}: {n_clip_last} site(s) were clipped to zero precision "
                      "in the last sweep (their negative precision would have made a "
                      "cavity or the posterior improper); dK and dlik omit their "
                      "implicit terms and are approximate.", RuntimeWarning,
                      stacklevel=4)
    dK = None
    dlik = None
    exact = True
    if compute_gradient:
        extra = None
        if gradient_terms is not None:
            # Method-specific terms, from B^{-1} before it becomes dK.
            extra, dlik0, exact = gradient_terms(Kj, y, S, b, Binv, mu, var)
        dK = Binv                        # B^{-1} from ep_run, made into dK in place
        _ep.ep_dK(S, b, Q, dK)
        if extra is not None:
            dK += extra
        # The moments give d log Z_i / d par[0]: every likelihood has at most one
        # parameter so far.
        dlik = np.full(len(par), dlik0) if len(par) else np.zeros(0)
        if not np.isfinite(dlik).all():
            raise NumericalError(f"{name}: the evidence's derivative with respect to "
                                 "the likelihood parameter is not finite.", method)
    return InferenceResult(
        posterior=SitePosterior(b, S, L, Q if Q.shape[1] else None,
                                marginal_mean=mu, marginal_var=var),
        log_evidence=float(log_evidence),
        dK=dK,
        dlik=dlik,
        state={"tau": tau, "nu": nu},
        info={"method": method, "updates": used,
              "sequential_fallback": updates == "auto" and used == "sequential",
              "likelihood": likelihood.name,
              "n_sweeps": n_sweeps, "n_linearised_sweeps": out.n_linearised,
              "n_single_precision": out.n_single, "warm_start_rejected": warm_rejected,
              "n_runs": n_runs, "start_damping": start[2],
              "converged": bool(converged), "damping": out.damping,
              "n_skipped": out.n_skipped, "n_clipped": out.n_clipped,
              "n_nonfinite": out.n_nonfinite,
              "n_improper_final": n_bad, "n_clipped_last_sweep": n_clip_last,
              "n_negative": int(np.count_nonzero(tau < 0)), "n_rejected": out.n_rejected,
              "gradient_exact": bool(n_clip_last == 0 and exact),
              "jitter": jitter, "n_iter": n_sweeps},
    )
