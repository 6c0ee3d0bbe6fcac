"""The site machinery shared by EP and posterior linearisation.

Both methods fit Gaussian sites ``exp(nu_i f_i - tau_i f_i^2 / 2)`` by the same
compiled loop (``gpc._site_loop.run``), which differs only in how a site is refreshed
from the current marginals (moment matching at the cavity for EP, statistical linear
regression at the marginal for PL).  :func:`fit_sites` runs that loop from a list of
starts until one converges, and turns the result into an :class:`InferenceResult`.
"""

import warnings
from typing import NamedTuple

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from .. import _linalg, _model, _site_loop
from .._validation import NotPositiveDefiniteError, check_integer, check_real
from ..posterior import SitePosterior
from ._base import InferenceResult, NumericalError, with_jitter, workspace_array


class Start(NamedTuple):
    """Sites a run starts from, its initial damping and schedule."""
    tau: np.ndarray
    nu: np.ndarray
    damping: float
    from_prior: bool
    parallel: bool


class Fit(NamedTuple):
    """A finished run: the kernel matrix it used (jitter included), the sites, the
    factor, the marginals, B^{-1} (or an empty array) and ``run``'s report."""
    K: np.ndarray
    tau: np.ndarray
    nu: np.ndarray
    L: np.ndarray
    b: np.ndarray
    S: np.ndarray
    mu: np.ndarray
    var: np.ndarray
    Binv: np.ndarray
    out: object


def _checked_options(updates, order, damping, min_damping, tol, max_sweeps):
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
    return float(damping), int(max_sweeps)


def _starts(n, init, damping, updates):
    """Starts tried in turn until a run converges: the warm start (if ``init`` holds
    usable sites), then the prior; parallel runs from the prior are retried with the
    damping starting at 1/2 and 1/4 of its value (it recovers while the residual
    falls); "auto" then falls back to sequential sweeps from the prior."""
    parallel = updates != "sequential"
    prior = (np.zeros(n), np.zeros(n))
    starts = [Start(*prior, damping, True, parallel)]
    if parallel:
        starts += [Start(*prior, f * damping, True, True) for f in (0.5, 0.25)]
    if updates == "auto":
        starts.append(Start(*prior, damping, True, False))
    if init is not None and "tau" in init and "nu" in init:
        t, v = np.asarray(init["tau"], float), np.asarray(init["nu"], float)
        if t.shape == (n,) and v.shape == (n,) and np.isfinite(t).all() \
                and np.isfinite(v).all():
            starts.insert(0, Start(t, v, damping, False, parallel))
    return starts


def _orders(n, updates, order, random_state, max_sweeps):
    """Site orders of the sequential sweeps (one row per sweep), by schedule."""
    orders = {True: np.zeros((1, n), dtype=np.intc)}
    if updates != "parallel":
        if order == "fixed":
            orders[False] = np.tile(np.arange(n, dtype=np.intc), (max_sweeps, 1))
        else:
            rng = check_random_state(random_state)
            orders[False] = np.array([rng.permutation(n) for _ in range(max_sweeps)],
                                     dtype=np.intc).reshape(max_sweeps, n)
    return orders


class _Runner:
    """One call of the compiled loop from a start, with the options of a fit."""

    def __init__(self, y, likelihood, rule, evidence_rule, orders, options,
                 compute_gradient, name, sample_weight=None):
        self.y, self.likelihood, self.orders = y, likelihood, orders
        self.options, self.compute_gradient, self.name = (options, compute_gradient,
                                                          name)
        self.model = _model.likelihood_model(likelihood, rule, evidence_rule,
                                             sample_weight)
        self.par = self.model.par
        # The sites of examples of zero weight are held at 1 (a warm start's too).
        self.dropped = None if sample_weight is None else sample_weight == 0

    def __call__(self, K, start, ws):
        """A :class:`Fit` from ``start`` on K, or None when a factorisation failed
        (the caller adds jitter); ``ws``: the workspace of n x n buffers, or None."""
        n, grad = K.shape[0], self.compute_gradient
        tau, nu = start.tau.copy(), start.nu.copy()
        if self.dropped is not None:
            tau[self.dropped] = nu[self.dropped] = 0.0
        # Only L's lower triangle is ever written (its upper one stays zero).
        L = workspace_array(ws, "L", (n, n))
        b, S, mu, var = (np.empty(n) for _ in range(4))
        # Holds L^{-1} and then B^{-1} (lower triangle), made into dK: all written.
        Binv = workspace_array(ws, "Binv", (n, n) if grad else (0, 0))
        scratch = None if ws is None else workspace_array(
            ws, "scratch", (_site_loop.scratch_size(n, start.parallel, grad),))
        damping, min_damping, tol, max_sweeps, accelerate = self.options
        out = _site_loop.run(
            K, self.y, self.model, tau, nu,
            _site_loop.SiteBuffers(L, b, S, mu, var, Binv, scratch),
            _site_loop.SiteOptions(start.parallel, damping, min_damping, tol,
                                   max_sweeps, accelerate, start.damping),
            self.orders[start.parallel])
        if out.status == _site_loop.STATUS_NOT_PD:
            return None
        if out.status == _site_loop.STATUS_NONFINITE:
            raise NumericalError(f"{self.name}: a non-finite site parameter appeared "
                                 "(the kernel matrix is badly scaled or not positive "
                                 "semi-definite, which gpc.infer checks unless "
                                 "check_psd=False).", self.name.lower())
        return Fit(K, tau, nu, L, b, S, mu, var, Binv, out)


def _best_run(K, starts, runner, workspace):
    """``(fit, jitter, start, n_runs)`` of the run nearest a fixed point.

    A warm start is only a guess: sites fitted to other hyperparameters can put the
    marginals far into a likelihood's tail, from where the updates may run away
    (PL's linearisation there has a vanishing slope but a finite offset).  Undamped
    parallel updates can run away too where K is large and strongly correlated (the
    site changes look small next to 1 but move every marginal far).  So when a run
    fails or ends unconverged, the next start is tried, and of the runs made the one
    nearest a fixed point (the smallest final residual, with a finite evidence) is
    kept.  The ``workspace`` serves the first start (a later one, tried while an
    earlier run is kept as the best so far, gets its own arrays)."""
    def distance(run):
        out = run[0].out
        return (not np.isfinite(out.log_evidence), out.residual)

    best, n_runs = None, 0
    for k, start in enumerate(starts):
        ws = workspace if k == 0 else None
        try:
            run = (*with_jitter(K, lambda Kj: runner(Kj, start, ws)), start)
        except (FloatingPointError, NotPositiveDefiniteError):
            if k == len(starts) - 1 and best is None:
                raise
            continue
        n_runs += 1
        if best is None or distance(run) < distance(best):
            best = run                             # (only the best run's n x n kept)
        out = run[0].out
        del run
        if out.converged and np.isfinite(out.log_evidence):
            break
    return (*best, n_runs)


def _check_finite(name, out):
    """Refuse a non-finite evidence."""
    if not np.isfinite(out.log_evidence):
        raise NumericalError(
            f"{name}: the log evidence is not finite after {out.n_sweeps} sweeps "
            f"({'converged' if out.converged else 'not converged'}); the posterior "
            "has run into a region where the likelihood's moments underflow (try a "
            "smaller kernel variance or more damping).", name.lower())


def _check_outcome(name, out, used, max_sweeps, compute_gradient):
    """Warn of an unconverged run, of sites left out of the evidence and of sites
    clipped in the last sweep."""
    if not out.converged:
        warnings.warn(f"{name} did not converge in {out.n_sweeps} sweeps (max_sweeps="
                      f"{max_sweeps}, {used}); the evidence and its gradient are "
                      "approximate.", ConvergenceWarning, stacklevel=5)
    if out.n_improper_final:
        what = ("an improper cavity" if name == "EP" else
                "non-finite moments or an improper cavity (rounding)")
        warnings.warn(f"{name}: {out.n_improper_final} site(s) have {what} at the "
                      "end; they are left out of the log evidence.", RuntimeWarning,
                      stacklevel=5)
    if compute_gradient and out.n_clipped_last_sweep:
        # A clipped site is not moment-matched, so the evidence is not stationary in
        # it and (b b' - R)/2 misses its implicit term.
        warnings.warn(f"{name}: {out.n_clipped_last_sweep} site(s) were clipped to "
                      "zero precision in the last sweep (their negative precision "
                      "would have made a cavity or the posterior improper); dK and "
                      "dlik omit their implicit terms and are approximate.",
                      RuntimeWarning, stacklevel=5)


#: The unit roundoff of float64: the relative error of an entry of K as computed.
UNIT_ROUNDOFF = np.finfo(np.float64).eps / 2


def rounding_effect(fit, dK):
    """``u sum_ij |dK_ij K_ij|`` (u the unit roundoff): to first order, the most the
    log evidence at the fit's sites moves when every entry of K changes by its own
    rounding error, as between two computations of K at hyperparameters a rounding
    apart; no algorithm given K in double precision resolves the evidence more
    finely.  It grows with site precisions that confine the posterior to directions
    in which K is nearly singular (a kernel far smoother than hard labels).  ``dK``:
    d log Z / dK at the fit's sites, or None to make it here from the factor
    (O(n^3))."""
    K = fit.K
    if dK is None:
        dK = np.array(fit.L, order="F", copy=True)
        if _linalg.cho_inverse(dK) != 0:
            return np.inf
        _site_loop.evidence_dK(fit.S, fit.b, np.asfortranarray(fit.out.Q), dK)
    total, n = 0.0, K.shape[0]
    for j in range(0, n, 256):                      # (no n x n temporary)
        total += float(np.abs(dK[:, j:j + 256] * K[:, j:j + 256]).sum())
    return UNIT_ROUNDOFF * total


def _residual_at(K, fit, runner, buffers):
    """The residual of an undamped parallel update at the fit's sites on K (the
    fit's own or a perturbed one): one factorisation, no step, in ``buffers``."""
    out = _site_loop.run(K, runner.y, runner.model, fit.tau.copy(), fit.nu.copy(),
                         buffers, _site_loop.SiteOptions(True, 1.0, 1.0, 1.0, 0, False))
    return out.residual if out.status == _site_loop.STATUS_OK else np.inf


def _rounding_residual(fit, runner):
    """``(r0, change)``: the residual r0 of an undamped update at an unconverged
    fit's sites, and the most it changes when every entry of K changes by a random
    fraction of its rounding error (two draws, fixed seeds).  Three factorisations
    (and n x n copies), only for an unconverged run.

    Where the run stopped short of a fixed point that double precision resolves,
    the change is a tiny fraction of r0 (below 1e-8 of it in the tests' hard
    problems, whether out of sweeps or running away); where it stalled at the
    resolution of double precision, r0 is itself rounding noise and the change
    comparable (0.008 to 2 times r0 there), and no more sweeps improve it."""
    K, n = fit.K, fit.K.shape[0]
    buffers = _site_loop.SiteBuffers(np.zeros((n, n), order="F"),
                                     *(np.empty(n) for _ in range(4)),
                                     np.zeros((0, 0), order="F"))
    r0 = _residual_at(K, fit, runner, buffers)
    change = 0.0
    for seed in (0, 1):
        E = np.random.default_rng(seed).uniform(-UNIT_ROUNDOFF, UNIT_ROUNDOFF, K.shape)
        E = np.triu(E) + np.triu(E, 1).T
        E += 1.0
        E *= K
        change = max(change, abs(_residual_at(np.asfortranarray(E), fit, runner,
                                              buffers) - r0))
    return r0, change


def _check_resolved(name, fit, runner, tol, used):
    """Refuse an unconverged classification run whose residual is rounding noise:
    the rounding errors of K alone change it by more than ``tol`` and by more than
    1e-4 of itself (see :func:`_rounding_residual`).  Its fixed point cannot be
    resolved in double precision, and its evidence and gradient would be noise.
    (A regression's residual is in the targets' units, which ``tol`` is not: with
    targets of 1e90 it stalls near 1e71 on an evidence that is right; that run
    only warns.)"""
    out = fit.out
    if out.converged or not runner.likelihood.is_classification:
        return
    r0, change = _rounding_residual(fit, runner)
    if not (change > tol and change > 1e-4 * r0):
        return
    rounding = rounding_effect(fit, None)
    raise NumericalError(
        f"{name}: the fixed point cannot be resolved in double precision: the "
        f"{used} run stalled after {out.n_sweeps} sweeps at a residual of {r0:.1e}, "
        f"which the rounding errors of K alone change by {change:.1e}, more than "
        f"tol={tol:g} (and the log evidence by up to {rounding:.1e}).  The site "
        f"precisions (up to {np.max(np.abs(fit.tau)):.1e}) confine the posterior to "
        "directions in which K is nearly singular: labels (nearly) free of noise "
        "that K can barely separate, e.g. under a kernel far smoother than they are "
        "or at duplicated inputs with conflicting labels.  Try a shorter length "
        "scale or a noisier likelihood.", name.lower())


def _gradient(fit, y, n_par, gradient_terms, name):
    """``(dK, dlik, exact)`` at the fit's sites: ``dK = (b b' - R) / 2`` made in
    place of B^{-1}, plus the method's own terms."""
    extra, dlik0, exact = None, fit.out.dlik0, True
    if gradient_terms is not None:
        # Method-specific terms, from B^{-1} before it becomes dK.
        extra, dlik0, exact = gradient_terms(fit.K, y, fit.S, fit.b, fit.Binv, fit.mu,
                                             fit.var)
    dK = fit.Binv                        # B^{-1} from the run, made into dK in place
    _site_loop.evidence_dK(fit.S, fit.b, fit.out.Q, dK)
    if extra is not None:
        dK += extra
    # The moments give d log Z_i / d par[0]: every likelihood has at most one
    # parameter so far.
    dlik = np.full(n_par, dlik0) if n_par else np.zeros(0)
    if not np.isfinite(dlik).all():
        raise NumericalError(f"{name}: the evidence's derivative with respect to the "
                             "likelihood parameter is not finite.", name.lower())
    return dK, dlik, exact


def _info(name, likelihood, fit, start, starts, n_runs, updates, jitter, exact):
    out, used = fit.out, "parallel" if start.parallel else "sequential"
    return {"method": name.lower(), "updates": used,
            "sequential_fallback": updates == "auto" and used == "sequential",
            "likelihood": likelihood.name,
            "n_sweeps": out.n_sweeps, "n_linearised_sweeps": out.n_linearised,
            "n_single_precision": out.n_single,
            "warm_start_rejected": len(starts) > 1 and not starts[0].from_prior
            and start.from_prior,
            "n_runs": n_runs, "start_damping": start.damping,
            "converged": bool(out.converged), "damping": out.damping,
            "n_skipped": out.n_skipped, "n_clipped": out.n_clipped,
            "n_nonfinite": out.n_nonfinite, "n_improper_final": out.n_improper_final,
            "n_clipped_last_sweep": out.n_clipped_last_sweep,
            "n_negative": int(np.count_nonzero(fit.tau < 0)),
            "n_rejected": out.n_rejected,
            "gradient_exact": bool(out.converged and out.n_clipped_last_sweep == 0
                                   and exact),
            "jitter": jitter, "n_iter": out.n_sweeps}


def fit_sites(K, y, likelihood, rule, evidence_rule, *, init, compute_gradient,
              updates, damping, min_damping, order, random_state, tol, max_sweeps,
              accelerate, gradient_terms=None, workspace=None, sample_weight=None):
    """The site fit of EP (``rule`` ``_site_loop.RULE_EXPECTATION_PROPAGATION``) or
    posterior linearisation (``_site_loop.RULE_POSTERIOR_LINEARISATION``), as an
    :class:`InferenceResult`.

    ``evidence_rule`` is PL's Gauss-Hermite ``(x, logw)`` for its evidence
    correction (None for EP).  ``gradient_terms(K, y, S, b, Binv, mu, var)``, if
    given, returns ``(D, dlik0, exact)``: a matrix added to ``dK = (b b' - S B^{-1}
    S) / 2`` (or None), the derivative with respect to the likelihood parameter and
    whether they make the total derivative (Binv holds B^{-1} in its lower
    triangle).  ``sample_weight``: the examples' weights (or None), as in
    :func:`gpc.inference.ep.ep`, whose options the others are.

    ``info["evidence_rounding"]`` gets :func:`rounding_effect` (None without the
    gradient), and an unconverged run whose residual is rounding noise (see
    :func:`_rounding_residual`) is refused with a NumericalError instead of
    returned with a ConvergenceWarning."""
    name = "EP" if rule == _site_loop.RULE_EXPECTATION_PROPAGATION else "PL"
    damping, max_sweeps = _checked_options(updates, order, damping, min_damping, tol,
                                           max_sweeps)
    n = K.shape[0]
    starts = _starts(n, init, damping, updates)
    runner = _Runner(y, likelihood, rule, evidence_rule,
                     _orders(n, updates, order, random_state, max_sweeps),
                     (damping, float(min_damping), float(tol), max_sweeps,
                      bool(accelerate)), compute_gradient, name, sample_weight)
    fit, jitter, start, n_runs = _best_run(K, starts, runner, workspace)
    used = "parallel" if start.parallel else "sequential"
    _check_finite(name, fit.out)
    _check_resolved(name, fit, runner, tol, used)
    _check_outcome(name, fit.out, used, max_sweeps, compute_gradient)
    dK, dlik, exact = (_gradient(fit, y, len(runner.par), gradient_terms, name)
                       if compute_gradient else (None, None, True))
    info = _info(name, likelihood, fit, start, starts, n_runs, updates, jitter, exact)
    # From dK in O(n^2).
    info["evidence_rounding"] = float(rounding_effect(fit, dK)) if compute_gradient \
        else None
    Q = fit.out.Q
    return InferenceResult(
        posterior=SitePosterior(fit.b, fit.S, fit.L, Q if Q.shape[1] else None,
                                marginal_mean=fit.mu, marginal_var=fit.var),
        log_evidence=float(fit.out.log_evidence),
        dK=dK,
        dlik=dlik,
        state={"tau": fit.tau, "nu": fit.nu},
        info=info,
    )
