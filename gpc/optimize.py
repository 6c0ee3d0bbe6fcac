"""Evidence maximisation over log-hyperparameters.

:func:`maximize_evidence` maximises ``log_evidence(theta) + log_prior(theta)`` with
L-BFGS-B (or a user optimizer with scikit-learn's signature) from the given start and
``n_restarts`` random starts drawn uniformly within the (log-space) bounds.
"""

import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.optimize
from scipy.special import gammaln
from sklearn.utils import check_random_state
from sklearn.exceptions import ConvergenceWarning

from ._validation import check_integer
from .inference.evidence import EvidenceObjective  # noqa: F401  (its former home)


class LogNormalPrior:
    """Log-normal prior on a positive hyperparameter ``x = exp(theta)``.

    Equivalently ``theta = log x ~ N(mu, sigma^2)``; the objective gains
    ``log N(theta; mu, sigma^2)`` (the density of theta, which is what the optimiser
    moves in).

    Parameters
    ----------
    mu : float, default=0.0
        Mean of ``log x``.
    sigma : float, default=1.0
        Standard deviation of ``log x`` (> 0).

    Examples
    --------
    >>> from gpc import LogNormalPrior
    >>> value, grad = LogNormalPrior(0.0, 1.0).log_density(0.0)
    >>> print(round(float(value), 6), float(grad))
    -0.918939 -0.0
    """

    def __init__(self, mu=0.0, sigma=1.0):
        self.mu = mu
        self.sigma = sigma

    def log_density(self, theta):
        """Return ``(log p(theta), d log p / d theta)``."""
        if not self.sigma > 0:
            raise ValueError(f"LogNormalPrior: sigma must be > 0, got {self.sigma!r}.")
        z = (theta - self.mu) / self.sigma
        return (-0.5 * z * z - np.log(self.sigma) - 0.5 * np.log(2 * np.pi),
                -z / self.sigma)

    def __repr__(self):
        return f"LogNormalPrior(mu={self.mu!r}, sigma={self.sigma!r})"


class GammaPrior:
    """Gamma prior on a positive hyperparameter ``x = exp(theta)``.

    ``x ~ Gamma(shape, rate)``; in theta (including the Jacobian ``x``) the log
    density is ``shape * theta - rate * exp(theta) + shape * log(rate) - lgamma(shape)``.

    Parameters
    ----------
    shape : float, default=2.0
        Shape parameter (> 0).
    rate : float, default=1.0
        Rate parameter (> 0); the mean of x is ``shape / rate``.

    Examples
    --------
    >>> from gpc import GammaPrior
    >>> value, grad = GammaPrior(2.0, 1.0).log_density(0.0)
    >>> print(round(float(grad), 6))
    1.0
    """

    def __init__(self, shape=2.0, rate=1.0):
        self.shape = shape
        self.rate = rate

    def log_density(self, theta):
        """Return ``(log p(theta), d log p / d theta)``."""
        if not (self.shape > 0 and self.rate > 0):
            raise ValueError("GammaPrior: shape and rate must be > 0.")
        x = np.exp(theta)
        return (self.shape * theta - self.rate * x + self.shape * np.log(self.rate)
                - gammaln(self.shape), self.shape - self.rate * x)

    def __repr__(self):
        return f"GammaPrior(shape={self.shape!r}, rate={self.rate!r})"


def log_prior(priors, theta):
    """Sum of the priors' log densities at theta and its gradient.

    ``priors`` is None or a sequence as long as theta of prior objects or None.
    """
    theta = np.asarray(theta, dtype=np.float64)
    grad = np.zeros_like(theta)
    if priors is None:
        return 0.0, grad
    if len(priors) != theta.shape[0]:
        raise ValueError(f"priors has {len(priors)} entries but there are "
                         f"{theta.shape[0]} hyperparameters.")
    total = 0.0
    for i, prior in enumerate(priors):
        if prior is not None:
            v, g = prior.log_density(theta[i])
            total += float(v)
            grad[i] = g
    return total, grad


@dataclass
class EvidenceOptimum:
    """Result of :func:`maximize_evidence`.

    Attributes
    ----------
    theta : ndarray
        The best log-hyperparameters found.
    objective : float
        ``log_evidence + log_prior`` at theta.
    runs : list of (theta_start, theta_end, objective) tuples, one per start.
    n_evaluations : int
        Number of objective evaluations over all runs.
    """

    theta: np.ndarray
    objective: float
    runs: list = field(default_factory=list)
    n_evaluations: int = 0


def maximize_evidence(fun, theta0, bounds, *, optimizer="fmin_l_bfgs_b",
                      n_restarts=0, random_state=None, priors=None, verbose=0):
    """Maximise an evidence over log-hyperparameters.

    Parameters
    ----------
    fun : callable
        ``fun(theta) -> (log_evidence, gradient)``.
    theta0 : array-like of shape (p,)
        First starting point.
    bounds : array-like of shape (p, 2)
        Bounds on theta (log space).
    optimizer : "fmin_l_bfgs_b" or callable, default="fmin_l_bfgs_b"
        "fmin_l_bfgs_b" is SciPy's L-BFGS-B, resumed from its end point (up to three
        times, while that improves the objective) when it stops with a projected
        gradient above 1e-3 (a stalled line search).  A callable has
        scikit-learn's signature ``optimizer(obj_func, initial_theta, bounds) -> (theta_opt, func_min)``, where
        ``obj_func(theta, eval_gradient=True)`` returns the NEGATIVE objective (and its
        gradient).
    n_restarts : int, default=0
        Additional starts drawn uniformly within the bounds (which must be finite).
    random_state : int, RandomState or None
        Seeds the random starts.
    priors : sequence of (prior or None), optional
        One entry per hyperparameter; see :class:`LogNormalPrior`, :class:`GammaPrior`.
    verbose : int, default=0
        Print one line per start (>= 1) or per evaluation (>= 2).

    Returns
    -------
    EvidenceOptimum

    Examples
    --------
    >>> import numpy as np
    >>> from gpc import maximize_evidence
    >>> fun = lambda t: (-float((t[0] - 1.0) ** 2), np.array([-2 * (t[0] - 1.0)]))
    >>> res = maximize_evidence(fun, [0.0], [(-5.0, 5.0)])
    >>> round(float(res.theta[0]), 4)
    1.0
    """
    theta0 = np.atleast_1d(np.asarray(theta0, dtype=np.float64))
    bounds = np.asarray(bounds, dtype=np.float64).reshape(-1, 2)
    if bounds.shape[0] != theta0.shape[0]:
        raise ValueError("bounds must have one (low, high) row per hyperparameter.")
    check_integer(n_restarts, "n_restarts", 0)
    if n_restarts > 0 and not np.isfinite(bounds).all():
        raise ValueError("Random restarts (n_restarts_optimizer > 0) need finite "
                         "bounds on every hyperparameter.")
    if not (optimizer == "fmin_l_bfgs_b" or callable(optimizer)):
        raise ValueError(f"Unknown optimizer {optimizer!r}: use 'fmin_l_bfgs_b', a "
                         "callable or None.")
    counter = [0]

    def obj_func(theta, eval_gradient=True):
        theta = np.asarray(theta, dtype=np.float64)
        counter[0] += 1
        try:
            value, grad = fun(theta)
        except (np.linalg.LinAlgError, FloatingPointError) as exc:
            if verbose >= 2:
                print(f"  [gpc] evaluation {counter[0]} failed at theta={theta}: {exc}")
            value, grad = -np.inf, np.zeros_like(theta)
        pv, pg = log_prior(priors, theta)
        value = value + pv
        grad = np.asarray(grad, dtype=np.float64) + pg
        if verbose >= 2:
            print(f"  [gpc] evaluation {counter[0]}: objective {value:.10g}")
        if not np.isfinite(value):
            # Steer the line search back: a huge but finite value.
            value, grad = -1e300, np.zeros_like(theta)
        if eval_gradient:
            return -value, -grad
        return -value

    rng = check_random_state(random_state)
    starts = [theta0]
    for _ in range(int(n_restarts)):
        starts.append(rng.uniform(bounds[:, 0], bounds[:, 1]))
    runs = []
    for k, start in enumerate(starts):
        start = np.clip(start, bounds[:, 0], bounds[:, 1])
        if optimizer == "fmin_l_bfgs_b":
            res = _lbfgsb(obj_func, start, bounds)
            if not res.success:
                warnings.warn(f"L-BFGS-B did not converge from start {k + 1}: "
                              f"{res.message}", ConvergenceWarning, stacklevel=2)
            theta_opt, fmin = res.x, float(res.fun)
        else:
            theta_opt, fmin = optimizer(obj_func, start, bounds=bounds)
            theta_opt = np.asarray(theta_opt, dtype=np.float64)
            fmin = float(fmin)
        runs.append((start, theta_opt, -fmin))
        if verbose:
            print(f"[gpc] start {k + 1}/{len(starts)}: objective {-fmin:.10g} "
                  f"at theta {np.array2string(theta_opt, precision=4)}")
    best = int(np.argmax([r[2] for r in runs]))
    return EvidenceOptimum(theta=runs[best][1], objective=runs[best][2], runs=runs,
                           n_evaluations=counter[0])


def _projected_gradient(x, g, bounds):
    """The gradient g of a minimisation with the components that point out of the
    box at an active bound set to zero."""
    pg = np.array(g, dtype=np.float64)
    pg[(x <= bounds[:, 0]) & (pg > 0)] = 0.0
    pg[(x >= bounds[:, 1]) & (pg < 0)] = 0.0
    return pg


def _lbfgsb(obj_func, start, bounds, max_resumes=3, pg_tol=1e-3):
    """SciPy's L-BFGS-B, its first step at most one unit long in log space, resumed
    from its end point (its curvature memory reset) while it stops on a stalled
    line search with a projected gradient above ``pg_tol`` and the resumed run
    improves the objective.

    With every variable bounded, L-BFGS-B's first trial step is the whole negative
    gradient, cut at the box.  An evidence's gradient is often in the hundreds, so
    that step lands on a corner of the box, where a flat or failed evaluation can
    end the run (on scikit-learn's breast cancer data, vb with the probit ended on
    a flat corner, and the ensemble mean field at its start, the corner's K being
    singular).  Each run therefore minimises the objective divided by its
    projected gradient norm at the start (at least 1): the first step is then one
    unit long, as L-BFGS-B takes it for unbounded variables, while the minimiser
    and the quasi-Newton steps after the first are unchanged (L-BFGS is invariant
    to a scaling of the objective) and ``gtol`` is scaled to match.

    A quasi-Newton model built across a steep, curved stretch of the evidence can
    propose steps whose line search fails far from a stationary point (e.g. PL on
    glass with the logit: stopped at -34.676 with |gradient| 0.61; resumed once,
    -34.144, where finite-difference L-BFGS-B ends too)."""
    res = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(1 + max_resumes):
            run = _scaled_lbfgsb(obj_func, start if res is None else res.x, bounds)
            if res is not None:
                run.nit += res.nit
                if run.fun >= res.fun - 1e-10 * (1.0 + abs(res.fun)):  # no gain
                    res = run if run.fun < res.fun else res
                    break
            res = run
            if np.max(np.abs(_projected_gradient(res.x, res.jac, bounds)),
                      initial=0.0) <= pg_tol:
                break
    return res


def _scaled_lbfgsb(obj_func, start, bounds, gtol=1e-5):
    """One L-BFGS-B run on ``obj_func`` divided by its projected gradient norm at
    ``start`` (at least 1); the result in the objective's own units."""
    start = np.asarray(start, dtype=np.float64)
    f0, g0 = obj_func(start)
    scale = max(1.0, float(np.linalg.norm(_projected_gradient(start, g0, bounds))))
    first = [start.copy()]

    def scaled(theta):
        if first and np.array_equal(theta, first[0]):
            first.clear()                  # the start, evaluated above
            return f0 / scale, np.asarray(g0) / scale
        f, g = obj_func(theta)
        return f / scale, np.asarray(g) / scale

    run = scipy.optimize.minimize(scaled, start, method="L-BFGS-B", jac=True,
                                  bounds=bounds, options={"gtol": gtol / scale})
    run.fun = float(run.fun) * scale
    run.jac = np.asarray(run.jac) * scale
    return run
