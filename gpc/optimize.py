"""Evidence maximisation over log-hyperparameters.

:func:`maximize_evidence` maximises ``log_evidence(theta) + log_prior(theta)`` with
L-BFGS-B (or a user optimizer with scikit-learn's signature) from the given start and
``n_restarts`` random starts drawn uniformly within the (log-space) bounds.
"""

import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.optimize
from sklearn.utils import check_random_state
from sklearn.exceptions import ConvergenceWarning

from ._validation import check_integer, kernel_matrix
from .inference._base import NumericalError


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
        from scipy.special import gammaln

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


def data_fingerprint(X, y):
    """A digest of the training data, keying warm-start state to it."""
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    for a in (X, y):
        a = np.asarray(a)
        h.update(str((a.shape, a.dtype.str)).encode())
        if a.dtype.kind in "biufc":
            h.update(np.ascontiguousarray(a).tobytes())
        else:
            h.update(repr(a.tolist()).encode())
    return h.hexdigest()


class ModelParameters:
    """A kernel's log-hyperparameters followed by the logs of its likelihood's free
    parameters: the vector that evidence maximisation moves.

    Parameters
    ----------
    kernel : kernel
    likelihood : Likelihood
    learn_likelihood : bool
        Whether the likelihood's non-fixed parameters are part of theta.

    Examples
    --------
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from gpc.likelihoods import get_likelihood
    >>> from gpc.optimize import ModelParameters
    >>> p = ModelParameters(RBF(2.0), get_likelihood("noisy_threshold"), True)
    >>> p.theta.round(3)
    array([ 0.693, -2.303])
    >>> round(p.model([0.0, -1.0])[1].eps, 4)
    0.3679
    """

    def __init__(self, kernel, likelihood, learn_likelihood):
        self.kernel = kernel.clone_with_theta(kernel.theta)
        self.likelihood = likelihood
        bounds = np.asarray(likelihood.param_bounds, dtype=np.float64).reshape(-1, 2)
        self.free = (bounds[:, 0] < bounds[:, 1]) if learn_likelihood else \
            np.zeros(len(bounds), dtype=bool)
        self._lik_bounds = bounds[self.free]
        if (self._lik_bounds[:, 0] <= 0).any():
            raise ValueError("likelihood parameters are learnt in log space: their lower "
                             f"bounds must be > 0, got {self._lik_bounds[:, 0]}.")

    @property
    def theta(self):
        """The kernel's theta, then the logs of the free likelihood parameters."""
        return self.theta_of(self.kernel, self.likelihood)

    def theta_of(self, kernel, likelihood):
        """theta of another kernel and likelihood of the same structure."""
        lik = np.log(np.asarray(likelihood.params, dtype=np.float64)[self.free])
        return np.concatenate([kernel.theta, lik])

    @property
    def bounds(self):
        """Log-space bounds aligned with :attr:`theta`."""
        return np.vstack([self.kernel.bounds.reshape(-1, 2),
                          np.log(self._lik_bounds).reshape(-1, 2)])

    def model(self, theta):
        """``(kernel, likelihood)`` at theta (new objects)."""
        theta = np.asarray(theta, dtype=np.float64)
        nk = self.kernel.theta.shape[0]
        if theta.shape[0] != nk + int(self.free.sum()):
            raise ValueError(f"theta has {theta.shape[0]} entries; expected "
                             f"{nk + int(self.free.sum())}.")
        likelihood = self.likelihood
        if self.free.any():
            params = np.asarray(likelihood.params, dtype=np.float64).copy()
            params[self.free] = np.exp(theta[nk:])
            likelihood = likelihood.with_params(params)
        return self.kernel.clone_with_theta(theta[:nk]), likelihood

    def gradient(self, kernel_grad, dlik, likelihood):
        """theta's gradient from the kernel's and ``dlik`` (d/d parameter) at
        ``likelihood``: d/d log p = p d/dp."""
        params = np.asarray(likelihood.params, dtype=np.float64)
        if not self.free.any():
            return np.asarray(kernel_grad, dtype=np.float64)
        return np.concatenate([kernel_grad, (params * dlik)[self.free]])


class EvidenceObjective:
    """The log evidence of kernel hyperparameters for fixed data, warm-started.

    Each call builds ``K = kernel(X)``, runs the inference method from the state the
    previous call left (the optimiser's evaluations are close together, so Newton or
    EP starts near its answer), and turns ``dK`` into the gradient with
    :func:`gpc.kernels.contract` (no n x n x p tensor).  Methods that take a
    ``workspace`` (Laplace, EP, PL) get one kept across calls, so that their n x n
    buffers are not allocated and page-faulted in afresh at every evaluation (at
    n = 2000 that was worth about one Cholesky per EP evaluation here).

    Parameters
    ----------
    kernel : kernel object
        Copied; its theta is set at each call.
    X : array-like
        Training inputs (as the kernel accepts them).
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    likelihood : Likelihood
    method : str
        A name from :func:`gpc.available_methods`.
    options : dict, optional
        Options of the inference method.
    state : dict, optional
        Initial warm-start state.
    jitter : float, default=0.0
        Added to the diagonal of K.
    learn_likelihood : bool, default=False
        Append the log of the likelihood's non-fixed parameters (e.g. the noisy
        threshold's eps) to theta; their gradient comes from the method's ``dlik``.
    K : ndarray of shape (n, n), optional
        ``kernel(X)`` (without the jitter) when the caller already has it: the
        first evaluation uses it if it is at the kernel's own theta (then drops
        it), instead of building it again.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from gpc.likelihoods import get_likelihood
    >>> from gpc.optimize import EvidenceObjective
    >>> X = np.linspace(-2, 2, 8)[:, None]
    >>> y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> obj = EvidenceObjective(RBF(1.0), X, y, get_likelihood("logit"))
    >>> value, grad = obj(np.log([1.0]))
    >>> grad.shape
    (1,)
    """

    def __init__(self, kernel, X, y, likelihood, method="laplace", options=None,
                 state=None, jitter=0.0, learn_likelihood=False, K=None):
        from .inference import get_method

        self.kernel = kernel.clone_with_theta(kernel.theta)
        self.X = X
        self.y = y
        self.likelihood = likelihood
        self.method = method
        self._method = get_method(method)
        self._infer = self._method
        self.options = dict(options or {})
        self.state = state
        self.jitter = float(jitter)
        self.n_calls = 0
        self._workspace = {}
        self._params = ModelParameters(kernel, likelihood, learn_likelihood)
        self._K_start = None if K is None else (self.theta, K)

    @property
    def theta(self):
        """Current log-hyperparameters: the kernel's, then the free likelihood
        parameters' (when ``learn_likelihood``)."""
        return self._params.theta_of(self.kernel, self.likelihood)

    @property
    def bounds(self):
        """Log-space bounds aligned with :attr:`theta`."""
        return self._params.bounds

    def _set_theta(self, theta):
        self.kernel, self.likelihood = self._params.model(theta)

    def kernel_matrix(self, theta=None):
        """K(X) at theta (or the current theta), jitter included, Fortran view."""
        if theta is not None:
            self._set_theta(theta)
        start, self._K_start = self._K_start, None
        if start is not None and np.array_equal(start[0], self.theta):
            K = start[1]
        else:
            # A kernel that overflows at some theta fails that evaluation (the
            # optimiser steps back) with the message of gpc.infer.
            K = kernel_matrix(self.kernel, self.X, error=FloatingPointError)
        if self.jitter:
            K = np.array(K, order="F", copy=True)
            K[np.diag_indices_from(K)] += self.jitter
        return K

    def infer(self, theta=None, compute_gradient=True):
        """Run the inference at theta; returns ``(result, K)``."""
        return self._run(theta, compute_gradient, None)

    def _run(self, theta, compute_gradient, workspace):
        K = self.kernel_matrix(theta)
        extra = {} if workspace is None or not self._method.accepts_workspace \
            else {"workspace": workspace}
        res = self._infer(K, self.y, self.likelihood, init=self.state,
                          compute_gradient=compute_gradient, **self.options, **extra)
        self.state = res.state
        self.n_calls += 1
        return res, K

    def __call__(self, theta):
        """Return ``(log_evidence, d log_evidence / d theta)``."""
        # The result lives only inside this call: its n x n arrays may be the
        # workspace's, kept for the next call (no fresh pages to fault in).
        res, K = self._run(theta, True, self._workspace)
        return res.log_evidence, self.gradient(res, K)

    def gradient(self, res, K=None):
        """``d log_evidence / d theta`` at the current theta from a result's ``dK``
        (and ``dlik``); ``K``: the kernel matrix the result was computed from, if
        at hand (it saves rebuilding it)."""
        from .kernels import contract

        if self.jitter:
            K = None    # it holds the jitter: the contraction builds its own
        elif K is None:
            K = kernel_matrix(self.kernel, self.X, error=FloatingPointError)
        if res.dK is None:
            raise ValueError(f"method {self.method!r} gives no evidence gradient, so "
                             "its hyperparameters cannot be maximised over.")
        # dK and K are the method's and the kernel's own: checked through the
        # gradient (O(p)) rather than entry by entry (two passes over n x n).
        grad = contract(self.kernel, self.X, res.dK, K=K, check_finite=False)
        if not np.isfinite(grad).all():
            K_finite = "" if K is None else f", K finite: {bool(np.isfinite(K).all())}"
            raise NumericalError(
                f"the evidence gradient of method {self.method!r} is not finite "
                f"(dK finite: {bool(np.isfinite(res.dK).all())}{K_finite}).",
                self.method)
        if self._params.free.any():
            if res.dlik is None:
                raise ValueError(f"method {self.method!r} gives no derivatives with "
                                 "respect to likelihood parameters; fix them (bounds "
                                 "'fixed') or use method='ep'.")
            grad = self._params.gradient(grad, res.dlik, self.likelihood)
        return np.asarray(grad, dtype=np.float64)
