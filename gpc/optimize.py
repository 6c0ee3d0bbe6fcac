"""Evidence maximisation over log-hyperparameters.

:func:`maximize_evidence` maximises ``log_evidence(theta) + log_prior(theta)`` with
L-BFGS-B (or a user optimizer with scikit-learn's signature) from the given start and
``n_restarts`` random starts drawn uniformly within the (log-space) bounds.
"""

import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.spatial.distance
from scipy.special import gammaln
from sklearn.utils import check_random_state
from sklearn.exceptions import ConvergenceWarning

from . import _lbfgsb
from ._validation import check_integer, check_real

#: The largest acceptable projected gradient of a log evidence per training
#: example at the end of evidence maximisation (dense and sparse models).  The
#: log evidence is a sum over the examples, of the scale of a log loss each, so
#: this is a gradient of 1e-3 nats of log loss per unit of a log-hyperparameter
#: (a thousandth of a typical log loss for an e-fold change of a length scale):
#: the same meaning at every n.
TOL_PER_EXAMPLE = 1e-3


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
        check_real(self.mu, "LogNormalPrior: mu")
        check_real(self.sigma, "LogNormalPrior: sigma", 0.0, low_open=True)
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
        check_real(self.shape, "GammaPrior: shape", 0.0, low_open=True)
        check_real(self.rate, "GammaPrior: rate", 0.0, low_open=True)
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
    projected_gradient : float or None
        The largest absolute projected gradient at theta (L-BFGS-B only).
    stationary : bool or None
        Whether theta passed :func:`stationarity`'s test (L-BFGS-B only; a
        ConvergenceWarning was given when not).
    newton : callable or None
        ``newton(g)``: the quasi-Newton step ``H g`` of the run that ended at
        theta, for a gradient g of the objective (L-BFGS-B only): the curvature
        a later maximisation of a similar objective can start from.
    """

    theta: np.ndarray
    objective: float
    runs: list = field(default_factory=list)
    n_evaluations: int = 0
    projected_gradient: float = None
    stationary: bool = None
    newton: object = None

    def __getstate__(self):
        # newton holds the run's quasi-Newton memory, for a continuation in
        # this process: not part of a pickled estimator.
        return dict(self.__dict__, newton=None)


class minimisable:
    """``fun(theta) -> (objective, gradient)`` to be maximised, as the function
    that SciPy's minimisers and scikit-learn's optimizer callables take:
    ``obj(theta, eval_gradient=True)`` returns the negative objective plus the
    priors' log density (and its gradient).  An evaluation that fails
    (LinAlgError, FloatingPointError) or is not finite returns a huge finite
    value with a zero gradient, which steers a line search back.  ``n_calls``
    counts the evaluations; a call at one of the last ``remember`` points
    returns its result without evaluating again (candidate starts, then the run
    from the best of them)."""

    remember = 4

    def __init__(self, fun, priors=None, verbose=0):
        self.fun, self.priors, self.verbose, self.n_calls = fun, priors, verbose, 0
        self._recent = []

    def __call__(self, theta, eval_gradient=True):
        theta = np.asarray(theta, dtype=np.float64)
        for point, (value, grad) in self._recent:
            if np.array_equal(theta, point):   # a start evaluated before
                return (value, grad.copy()) if eval_gradient else value
        value, grad = self._evaluate(theta)
        self._recent = [(theta.copy(), (value, grad.copy()))] + self._recent[
            :self.remember - 1]
        return (value, grad) if eval_gradient else value

    def _evaluate(self, theta):
        self.n_calls += 1
        try:
            value, grad = self.fun(theta)
        except (np.linalg.LinAlgError, FloatingPointError) as exc:
            if self.verbose >= 2:
                print(f"  [gpc] evaluation {self.n_calls} failed at theta={theta}: "
                      f"{exc}")
            value, grad = -np.inf, np.zeros_like(theta)
        grad = np.asarray(grad, dtype=np.float64)
        if np.ndim(value) != 0 or grad.shape != theta.shape:
            raise ValueError(
                f"the objective must return a number and a gradient of theta's "
                f"shape {theta.shape}; it returned a value of shape "
                f"{np.shape(value)} and a gradient of shape {grad.shape}.")
        pv, pg = log_prior(self.priors, theta)
        value = value + pv
        grad = grad + pg
        if self.verbose >= 2:
            print(f"  [gpc] evaluation {self.n_calls}: objective {value:.10g}")
        if not np.isfinite(value):
            value, grad = -1e300, np.zeros_like(theta)
        return -value, -grad


def maximize_evidence(fun, theta0, bounds, *, optimizer="fmin_l_bfgs_b",
                      n_restarts=0, random_state=None, priors=None, verbose=0,
                      groups=None, starts=(), tol=1e-3, gtol=1e-5, first_step=None,
                      min_gain=None):
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
        "fmin_l_bfgs_b" is L-BFGS-B in stages (see Notes): gpc's own, with
        SciPy's algorithm and iterates, whose steps wake no BLAS threads (on a
        busy machine SciPy's waits for them at every step).  A callable has
        scikit-learn's signature ``optimizer(obj_func, initial_theta, bounds) ->
        (theta_opt, func_min)``, where ``obj_func(theta, eval_gradient=True)``
        returns the NEGATIVE objective (and its gradient); it runs once per start.
    n_restarts : int, default=0
        Additional starts drawn uniformly within the bounds (which must be finite).
    random_state : int, RandomState or None
        Seeds the random starts.
    priors : sequence of (prior or None), optional
        One entry per hyperparameter; see :class:`LogNormalPrior`, :class:`GammaPrior`.
    verbose : int, default=0
        Print one line per start (>= 1) or per evaluation (>= 2).
    groups : array-like of int of shape (p,), optional
        Entries of theta with the same group move together in a first, tied
        stage (e.g. the length scales of one ARD kernel: see
        :func:`~gpc.optimize.parameter_groups`).  None: no tied stage.
    starts : sequence of array-like of shape (p,), default=()
        Further candidate starts of the first run beside theta0, e.g.
        :func:`~gpc.optimize.data_start`'s; the run keeps the best optimum.
    tol : float, default=1e-3
        The largest acceptable absolute projected gradient of the objective at
        the optimum (per log-hyperparameter; the estimators pass
        ``TOL_PER_EXAMPLE`` times the number of training examples).  L-BFGS-B
        runs until its own ``gtol`` of 1e-5 or a relative change of the
        objective below its ``ftol``; a run that stops above ``tol``, unless
        its quasi-Newton model predicts a gain below ``tol / 100`` from there
        (:func:`~gpc.optimize.stationarity`), is resumed (up to three times), and
        if the best optimum still ends so, a ConvergenceWarning says so.
        ``projected_gradient`` of the result holds the value.
    gtol : float, default=1e-5
        L-BFGS-B's own tolerance on the projected gradient (see ``gpc.optimize.lbfgsb``).
    first_step : callable, optional
        ``first_step(g0)``: the length of the first run's first step, from the
        projected gradient at its start (e.g. a quasi-Newton step of an earlier
        maximisation's curvature: ``EvidenceOptimum.newton``); default 1.
    min_gain : float, optional
        Stop a run when an iteration gains at most about this much (see
        ``gpc.optimize.lbfgsb``).

    Returns
    -------
    EvidenceOptimum

    Notes
    -----
    The first start's run with L-BFGS-B is staged.  The candidate starts (theta0
    and ``starts``) are collapsed to their group means and the best of them
    starts a maximisation with the members of each group tied (for an ARD
    kernel: the isotropic kernel), which has few parameters and so is a
    well-conditioned, cheap optimisation; its end, or theta0 if its own
    objective is higher, starts the run over all the parameters.  An ARD fit
    therefore never ends below the tied stage's end (L-BFGS-B only accepts steps
    that raise the objective), and a start in a flat region of the evidence (a
    kernel matrix that is nearly constant or nearly diagonal, where L-BFGS-B
    stops with a small gradient) gives way to a candidate where the data are.
    The tied stage stops at the tolerance ``tol``, the last at L-BFGS-B's own.
    Without groups that tie anything, the run over all the parameters starts
    from the best candidate.  Random restarts run over all the parameters from
    their start.

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
    obj_func = minimisable(fun, priors, verbose)

    rng = check_random_state(random_state)
    candidates = [np.clip(np.asarray(c, dtype=np.float64), bounds[:, 0], bounds[:, 1])
                  for c in [theta0, *starts]]
    restarts = [rng.uniform(bounds[:, 0], bounds[:, 1]) for _ in range(int(n_restarts))]
    runs, ends = [], []
    for k, start in enumerate([candidates[0]] + restarts):
        if optimizer == "fmin_l_bfgs_b":
            run = (staged_lbfgsb(obj_func, candidates, bounds, groups, gtol, tol,
                                 first_step, min_gain) if k == 0
                   else lbfgsb(obj_func, start, bounds, gtol, tol, min_gain=min_gain))
            theta_opt, fmin = run.x, float(run.fun)
            ends.append(run)
        else:
            theta_opt, fmin = optimizer(obj_func, start, bounds=bounds)
            theta_opt = np.asarray(theta_opt, dtype=np.float64)
            fmin = float(fmin)
        runs.append((start, theta_opt, -fmin))
        if verbose:
            print(f"[gpc] start {k + 1}/{1 + len(restarts)}: objective {-fmin:.10g} "
                  f"at theta {np.array2string(theta_opt, precision=4)}")
    best = int(np.argmax([r[2] for r in runs]))
    optimum = EvidenceOptimum(theta=runs[best][1], objective=runs[best][2], runs=runs,
                              n_evaluations=obj_func.n_calls)
    if ends:
        optimum.projected_gradient, optimum.stationary = _check_stationary(
            ends[best], bounds, tol)
        optimum.newton = ends[best].newton
    return optimum


def stationarity(run, bounds, tol):
    """``(projected gradient, predicted gain, stationary)`` at the end of an
    L-BFGS-B run (a minimisation): the largest absolute projected gradient, the
    gain ``pg' H pg / 2`` that the run's quasi-Newton model predicts for a step
    along it, and whether the run counts as stationary: a projected gradient
    of at most ``tol``, or a predicted gain of at most ``tol / 100`` (a large
    gradient along a steeply curved direction, whose optimum is a hundredth of
    a unit away: a stop by L-BFGS-B's ``ftol`` leaves such ones)."""
    pg = projected_gradient(run.x, run.jac, bounds)
    largest = float(np.max(np.abs(pg), initial=0.0))
    gain = 0.5 * float(pg @ run.newton(pg)) if hasattr(run, "newton") else np.inf
    return largest, gain, largest <= tol or 0.0 <= gain <= 0.01 * tol


def _check_stationary(run, bounds, tol):
    """The largest absolute projected gradient at an L-BFGS-B run's end and
    :func:`stationarity`'s verdict; a ConvergenceWarning when it fails."""
    pg, gain, stationary = stationarity(run, bounds, tol)
    if not stationary:
        warnings.warn(
            f"Evidence maximisation stopped where the projected gradient is {pg:.2g} "
            f"(tolerance {tol:.2g}) and a quasi-Newton step would gain {gain:.2g} "
            f"(tolerance {0.01 * tol:.2g}): not at a stationary point of the "
            f"evidence (L-BFGS-B: {run.message}). The hyperparameters may be "
            "improved: try n_restarts_optimizer, other bounds or scaled inputs.",
            ConvergenceWarning, stacklevel=3)
    return pg, stationary


def learning_starts(kernels, theta, distance, n_examples):
    """The ``groups``, ``starts`` and ``tol`` arguments of
    :func:`maximize_evidence` for the thetas of ``kernels`` one after another,
    then any further parameters of theta (a likelihood's), for ``n_examples``
    examples whose inputs' :func:`median_distance` is ``distance``: the tying
    groups of :func:`parameter_groups`, the start of :func:`data_start` and
    ``TOL_PER_EXAMPLE`` per example."""
    n_extra = theta.shape[0] - sum(len(k.theta) for k in kernels)
    return {"groups": parameter_groups(kernels, n_extra),
            "starts": [data_start(kernels, theta, distance)],
            "tol": TOL_PER_EXAMPLE * n_examples}


def _free(kernels):
    """The free hyperparameters of ``kernels``, in the order of their thetas."""
    return [h for k in kernels for h in k.hyperparameters if not h.fixed]


def parameter_groups(kernels, n_extra=0):
    """The tying groups of :func:`~gpc.maximize_evidence` for the thetas of ``kernels``
    one after another and ``n_extra`` parameters after them (e.g. a likelihood's):
    the entries of one free hyperparameter (a vector such as ARD length scales)
    share a group, every other entry has its own.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel as C
    >>> from gpc.optimize import parameter_groups
    >>> parameter_groups([C(1.0) * RBF(np.ones(3))], n_extra=1)
    array([0, 1, 1, 1, 2])
    """
    sizes = [h.n_elements for h in _free(kernels)] + [1] * int(n_extra)
    return np.repeat(np.arange(len(sizes)), sizes)


def median_distance(X, max_rows=1000):
    """The median Euclidean distance between distinct rows of X (at most
    ``max_rows`` of them, a fixed random subset); None when X is not a finite
    numeric matrix or no two of its rows differ.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.optimize import median_distance
    >>> float(median_distance(np.array([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])))
    5.0
    """
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if X.ndim != 2 or X.shape[0] < 2 or not np.isfinite(X).all():
        return None
    rows = np.random.RandomState(0).permutation(X.shape[0])[:max_rows]
    distances = scipy.spatial.distance.pdist(X[rows])
    distances = distances[distances > 0]
    return float(np.median(distances)) if distances.size else None


def data_start(kernels, theta, distance):
    """theta with every free length scale of ``kernels`` (hyperparameters named
    ``length_scale``, isotropic or ARD) set to the log of ``distance``, the
    inputs' :func:`~gpc.optimize.median_distance`: a start where the kernel matrix
    is neither nearly constant nor nearly diagonal, whatever the inputs' units and
    number.
    theta unchanged when distance is None.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel as C
    >>> from gpc.optimize import data_start
    >>> kernel = C(1.0) * RBF([1.0, 1.0])
    >>> np.exp(data_start([kernel], kernel.theta, 5.0)).round(3)
    array([1., 5., 5.])
    """
    theta = np.array(theta, dtype=np.float64)
    if distance is None:
        return theta
    mask = np.concatenate([np.full(h.n_elements, h.name.endswith("length_scale"))
                           for h in _free(kernels)] + [np.zeros(0, dtype=bool)])
    theta[:mask.size][mask] = np.log(distance)
    return theta


def projected_gradient(x, g, bounds):
    """The gradient g of a minimisation with the components that point out of the
    box at an active bound set to zero."""
    pg = np.array(g, dtype=np.float64)
    pg[(x <= bounds[:, 0]) & (pg > 0)] = 0.0
    pg[(x >= bounds[:, 1]) & (pg < 0)] = 0.0
    return pg


def staged_lbfgsb(obj_func, candidates, bounds, groups, gtol=1e-5, accept=1e-3,
                  first_step=None, min_gain=None):
    """The first start's run of :func:`maximize_evidence` (see its Notes) on a
    function to minimise.  Of the ``candidates``, collapsed to their group
    means, the one of lowest objective starts a tied run to the tolerance
    ``accept`` (it only gives the next run its start); from its end (or from
    ``candidates[0]`` when that is lower), a run over all the parameters to
    ``gtol`` and ``accept`` (see :func:`lbfgsb`; with ``min_gain``).  Without
    ties, a run from the lowest candidate, its first step ``first_step`` long.
    Returns the final run's result."""
    candidates = [np.clip(c, bounds[:, 0], bounds[:, 1]) for c in candidates]
    tie = _tying(groups, bounds)
    if tie is None:
        return lbfgsb(obj_func, _lowest(obj_func, candidates), bounds, gtol, accept,
                      first_step=first_step, min_gain=min_gain)
    index, tied_bounds = tie
    counts = np.bincount(index)

    def tied(s):
        f, g = obj_func(s[index])
        return f, np.bincount(index, weights=g, minlength=counts.size)

    means = [np.clip(np.bincount(index, weights=c) / counts, tied_bounds[:, 0],
                     tied_bounds[:, 1]) for c in candidates]
    best = lbfgsb(tied, _lowest(tied, means), tied_bounds, accept, accept)
    start = best.x[index]
    if not np.array_equal(means[0][index], candidates[0]) and \
            obj_func(candidates[0])[0] < best.fun:
        start = candidates[0]        # not tied, and better than the tied end
    return lbfgsb(obj_func, start, bounds, gtol, accept, min_gain=min_gain)


def _lowest(obj_func, points):
    """The point of lowest objective (the first of equals); only one point is
    not evaluated."""
    points = _distinct(points)
    if len(points) == 1:
        return points[0]
    return min(points, key=lambda p: obj_func(p)[0])


def _distinct(points):
    """The points, each once (in order)."""
    out = []
    for p in points:
        if not any(np.array_equal(p, q) for q in out):
            out.append(p)
    return out


def _tying(groups, bounds):
    """``(index, tied_bounds)``: theta = s[index] ties the entries of each group
    to one value, within the intersection of their bounds; None when no group
    has two entries or the bounds of a group do not intersect."""
    if groups is None:
        return None
    labels, index = np.unique(np.asarray(groups), return_inverse=True)
    if labels.size == index.size:
        return None
    tied_bounds = np.array([[bounds[index == j, 0].max(), bounds[index == j, 1].min()]
                            for j in range(labels.size)])
    if (tied_bounds[:, 0] > tied_bounds[:, 1]).any():
        return None
    return index, tied_bounds


def lbfgsb(obj_func, start, bounds, gtol=1e-5, accept=1e-3, max_resumes=3,
           first_step=None, min_gain=None):
    """L-BFGS-B on a function to minimise, until the largest absolute
    projected gradient is at most ``gtol`` (or, with ``min_gain``, an iteration
    lowers the objective by at most that much), its first step at most one unit long
    in log space, resumed from its end point (its curvature memory reset) while
    it stops (on a stalled line search, or on a relative change of the objective
    below L-BFGS-B's ``ftol``) short of :func:`stationarity`'s test with ``accept``
    and the resumed run improves the objective.  ``first_step(g0)``, when given, sets
    the length of the first run's first step from the projected gradient at
    ``start`` (e.g. a quasi-Newton step of an earlier run's curvature).

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
            run = _scaled_lbfgsb(obj_func, start if res is None else res.x, bounds,
                                 gtol, first_step if res is None else None, min_gain)
            if res is not None:
                run.nit += res.nit
                if run.fun >= res.fun - 1e-10 * (1.0 + abs(res.fun)):  # no gain
                    res = run if run.fun < res.fun else res
                    break
            res = run
            if stationarity(res, bounds, accept)[2]:
                break
    return res


def _scaled_lbfgsb(obj_func, start, bounds, gtol=1e-5, first_step=None, min_gain=None):
    """One L-BFGS-B run on ``obj_func`` divided by a scale that makes its first
    step ``first_step(g0)`` long (``g0``: the projected gradient at ``start``;
    default 1), or shorter when the gradient is (the scale is at least 1); the
    result in the objective's own units, with ``newton(g)``: the run's final
    quasi-Newton step ``H g`` for a gradient g of the objective.  ``min_gain``
    sets L-BFGS-B's relative ``ftol`` so that the run stops when an iteration
    gains at most about that much (relative to the objective at the start)."""
    start = np.asarray(start, dtype=np.float64)
    f0, g0 = obj_func(start)
    pg0 = projected_gradient(start, g0, bounds)
    length = 1.0 if first_step is None else float(first_step(pg0))
    scale = max(1.0, float(np.linalg.norm(pg0)) / length)
    first = [start.copy()]

    def scaled(theta):
        if first and np.array_equal(theta, first[0]):
            first.clear()                  # the start, evaluated above
            return f0 / scale, np.asarray(g0) / scale
        f, g = obj_func(theta)
        return f / scale, np.asarray(g) / scale

    options = {"gtol": gtol / scale}
    if min_gain is not None:
        options["ftol"] = float(min_gain) / max(abs(float(f0)), scale)
    run = _lbfgsb.minimize(scaled, start, bounds, **options)
    run.fun = float(run.fun) * scale
    run.jac = np.asarray(run.jac) * scale
    hess_inv = run.hess_inv
    run.newton = lambda g: hess_inv.matvec(np.asarray(g, dtype=np.float64)) / scale
    return run
