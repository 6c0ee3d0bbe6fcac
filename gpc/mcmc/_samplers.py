"""The samplers: :func:`elliptical_slice` for the posterior of the latent values and
:func:`ais` for the log evidence, with its :func:`temperature_schedule`."""

import math
import time

import numpy as np

from ._results import AISResult, ESSResult
from ._slice import (_check_init, _positive_int, _progress, _rng, _setup, _Slicer,
                     _Target, _total_log_lik)


# ----------------------------------------------------------------------------------
# elliptical slice sampling
# ----------------------------------------------------------------------------------

def elliptical_slice(K, y, likelihood="probit", *, n_samples=1000, n_chains=16,
                     burn_in=200, thin=1, init=None, reference=None,
                     temperature=1.0, random_state=None, verbose=False):
    """Sample the latent posterior ``p(f | y) ∝ p(y | f) N(f; 0, K)`` by elliptical
    slice sampling, many independent chains at once.

    Parameters
    ----------
    K : array_like of shape (n, n)
        Prior covariance of f (symmetric positive definite; a tiny jitter is added
        only if its Cholesky factorisation fails, see :func:`kernel_cholesky`).
    y : array_like of shape (n,)
        Labels in {-1, +1} (real targets for a regression likelihood such as
        :class:`gpc.likelihoods.Gaussian`).
    likelihood : str or Likelihood, default="probit"
        Any gpc likelihood (``gpc.likelihoods.get_likelihood``).
    n_samples : int, default=1000
        Draws kept per chain.
    n_chains : int, default=16
        Independent chains (ignored when ``init`` is given: one chain per row).
    burn_in : int, default=200
        Steps discarded at the start of each chain.
    thin : int, default=1
        Keep every ``thin``-th state after the burn-in.
    init : array_like of shape (n_chains, n), optional
        Starting states (e.g. the ``samples`` of an :class:`AISResult` or the
        ``state`` of a previous :class:`ESSResult`); default: independent draws
        from the prior (or from the reference Gaussian, if given).
    reference : InferenceResult, posterior or (mean, cov), optional
        A Gaussian ``q`` close to the posterior for the generalised sampler: a
        :func:`gpc.infer` result or its ``posterior`` (e.g. Laplace's or EP's;
        site form without negative sites, or explicit form), or a pair ``(mean,
        cov)`` of arrays.  The ellipses are centred on q's mean with axes drawn
        from q, and the slice is taken under ``p(y | f) N(f; 0, K) / q(f)``.  The
        target is the same posterior; when the prior is far from it (large
        signal variances, many data) the chains can move much faster.  The
        computations are in the prior's whitened coordinates, where the site form
        is well conditioned even for a nearly singular K (a ``(mean, cov)`` pair
        needs ``K^{-1} cov`` to be computable).  Default: the prior ``N(0, K)``,
        plain elliptical slice sampling.
    temperature : float in (0, 1], default=1.0
        Power of the likelihood in the target (1 for the posterior); with a
        ``reference`` the power of ``p(y | f) N(f; 0, K) / q(f)``, the target
        then being ``q^(1 - temperature)`` times the posterior to that power.
    random_state : int, numpy Generator, RandomState or None
    verbose : bool, default=False
        Print progress about ten times during the run.

    Returns
    -------
    ESSResult
        ``samples`` of shape (n_chains, n_samples, n) and their diagnostics.

    Raises
    ------
    ValueError
        For a K that is not a finite symmetric square matrix, labels that are not
        -1 / +1 (classification likelihoods), a ``y`` or ``init`` of the wrong
        shape, or bad counts.
    gpc.NotPositiveDefiniteError
        If K is not positive semi-definite even with jitter.

    Examples
    --------
    One latent value with a Gaussian likelihood: the posterior is N(2/3, 1/3) for
    the target 1, prior variance 2 and noise variance 1.

    >>> import numpy as np
    >>> from gpc.likelihoods import Gaussian
    >>> from gpc.mcmc import elliptical_slice
    >>> res = elliptical_slice([[2.0]], [1.0], Gaussian(noise_variance=1.0),
    ...                        n_chains=20, n_samples=200, burn_in=20,
    ...                        random_state=1)
    >>> mean, se = res.mean()
    >>> bool(abs(mean[0] - 2 / 3) < 4 * se[0])
    True
    """
    t0 = time.perf_counter()
    lik, yv, L, jitter = _setup(K, y, likelihood)
    target = _Target(L, _total_log_lik(lik, yv), reference)
    n = L.shape[0]
    n_samples = _positive_int(n_samples, "n_samples")
    burn_in = _positive_int(burn_in, "burn_in", 0)
    thin = _positive_int(thin, "thin")
    if init is None:
        n_chains = _positive_int(n_chains, "n_chains")
    temperature = float(temperature)
    if not 0.0 < temperature <= 1.0:
        raise ValueError(f"temperature must be in (0, 1], got {temperature!r}.")
    rng = _rng(random_state)
    if init is None:
        state = target.draw(n_chains, rng)
    else:
        state = target.from_f(_check_init(init, n).T)
    n_chains = state[0].shape[1]
    r, ll = target.evaluate(state)
    slicer = _Slicer(target, rng)
    samples = np.empty((n_chains, n_samples, n))
    kept_ll = np.empty((n_chains, n_samples))
    n_steps = burn_in + n_samples * thin
    report = max(1, n_steps // 10)
    kept = 0
    for s in range(1, n_steps + 1):
        slicer.step(state, r, ll, temperature)
        if s > burn_in and (s - burn_in) % thin == 0:
            samples[:, kept, :] = target.f(state).T
            kept_ll[:, kept] = ll
            kept += 1
        if verbose and (s % report == 0 or s == n_steps):
            _progress("elliptical slice", s, n_steps, t0,
                      f", {slicer.n_evals / max(slicer.n_calls, 1):.2f} "
                      "evaluations per step")
    return ESSResult(samples=samples, log_lik=kept_ll,
                     state=np.array(target.f(state).T),
                     L=L, jitter=jitter, likelihood=lik, temperature=temperature,
                     n_steps=n_steps,
                     evaluations_per_step=slicer.n_evals / max(slicer.n_calls, 1),
                     n_stuck=slicer.n_stuck, seconds=time.perf_counter() - t0)


# ----------------------------------------------------------------------------------
# annealed importance sampling
# ----------------------------------------------------------------------------------

def temperature_schedule(n_temperatures=2000, kind="sigmoid", *, delta=4.0,
                         start=1e-5):
    """Inverse temperatures ``0 = b_0 < b_1 < b_2 < (...) < b_T = 1`` for
    :func:`~gpc.mcmc.ais`.

    Parameters
    ----------
    n_temperatures : int, default=2000
        T, the number of transitions.
    kind : {"sigmoid", "geometric", "linear"}, default="sigmoid"
        "sigmoid": ``expit`` of T + 1 equally spaced points on ``[-delta, delta]``,
        shifted and scaled to run from 0 to 1 (small steps at both ends);
        "geometric": ``b_1 = start``, equal ratios up to ``b_T = 1``;
        "linear": equal steps.
    delta : float, default=4.0
        Half-width of the sigmoid schedule (larger: smaller first steps).
    start : float, default=1e-5
        First non-zero temperature of the geometric schedule.

    Returns
    -------
    ndarray of shape (n_temperatures + 1,)

    Examples
    --------
    >>> from gpc.mcmc import temperature_schedule
    >>> b = temperature_schedule(4, "geometric", start=1e-3)
    >>> [float(round(v, 6)) for v in b]
    [0.0, 0.001, 0.01, 0.1, 1.0]
    """
    T = _positive_int(n_temperatures, "n_temperatures")
    if kind == "sigmoid":
        if not delta > 0:
            raise ValueError(f"delta must be positive, got {delta!r}.")
        s = 1.0 / (1.0 + np.exp(-np.linspace(-delta, delta, T + 1)))
        b = (s - s[0]) / (s[-1] - s[0])
    elif kind == "geometric":
        if not 0 < start < 1:
            raise ValueError(f"start must be in (0, 1), got {start!r}.")
        b = np.concatenate([[0.0], np.geomspace(start, 1.0, T)]) if T > 1 \
            else np.array([0.0, 1.0])
    elif kind == "linear":
        b = np.linspace(0.0, 1.0, T + 1)
    else:
        raise ValueError(f"kind must be 'sigmoid', 'geometric' or 'linear', got "
                         f"{kind!r}.")
    b[0], b[-1] = 0.0, 1.0
    return b


def _check_schedule(temperatures):
    b = np.asarray(temperatures, dtype=np.float64)
    if b.ndim != 1 or b.shape[0] < 2 or not np.all(np.isfinite(b)) \
            or b[0] != 0.0 or b[-1] != 1.0 or np.any(np.diff(b) <= 0):
        raise ValueError("temperatures must be an increasing 1-D array from 0 to 1 "
                         "(at least two entries).")
    return b


def ais(K, y, likelihood="probit", *, n_chains=64, n_temperatures=2000,
        temperatures=None, schedule="sigmoid", n_steps=1, reference=None,
        random_state=None, verbose=False):
    """Log evidence ``log p(y | K)`` by annealed importance sampling with elliptical
    slice transitions.

    Parameters
    ----------
    K : array_like of shape (n, n)
        Prior covariance of f (see :func:`elliptical_slice`).
    y : array_like of shape (n,)
        Labels in {-1, +1} (real targets for a regression likelihood).
    likelihood : str or Likelihood, default="probit"
    n_chains : int, default=64
        Independent annealing runs (importance samples).
    n_temperatures : int, default=2000
        Number of transitions T of the default schedule.
    temperatures : array_like, optional
        An explicit schedule ``0 = b_0 < ... < b_T = 1`` (overrides
        ``n_temperatures`` and ``schedule``).
    schedule : {"sigmoid", "geometric", "linear"}, default="sigmoid"
        Kind of :func:`temperature_schedule`.
    n_steps : int, default=1
        Elliptical slice steps at each temperature.
    reference : InferenceResult, posterior or (mean, cov), optional
        Anneal from a Gaussian ``q`` (given as in :func:`elliptical_slice`)
        instead of the prior: the intermediate targets are
        ``q(f)^(1 - b) (p(y | f) N(f; 0, K))^b`` and the weights collect
        ``(b_t - b_{t-1}) log[p(y | f) N(f; 0, K) / q(f)]``.  The estimate is still
        unbiased for ``p(y | K)`` whatever q is, and its variance smaller when q
        is close to the posterior.  Default: the prior, so the targets are
        ``p(y | f)^b N(f; 0, K)``.
    random_state : int, numpy Generator, RandomState or None
    verbose : bool, default=False
        Print progress about ten times during the run.

    Returns
    -------
    AISResult
        ``log_evidence``, its ``stderr`` and the weights' ``ess``, the final states.

    Raises
    ------
    ValueError, gpc.NotPositiveDefiniteError
        As :func:`elliptical_slice`; also for a bad schedule.

    Examples
    --------
    With a Gaussian likelihood the evidence is ``N(y; 0, K + s2 I)``:

    >>> import numpy as np
    >>> from scipy.stats import multivariate_normal
    >>> from gpc.likelihoods import Gaussian
    >>> from gpc.mcmc import ais
    >>> K = np.array([[1.0, 0.5], [0.5, 1.0]])
    >>> y = np.array([0.3, -0.8])
    >>> res = ais(K, y, Gaussian(noise_variance=0.2), n_chains=100,
    ...           n_temperatures=100, random_state=0)
    >>> exact = multivariate_normal(np.zeros(2), K + 0.2 * np.eye(2)).logpdf(y)
    >>> bool(abs(res.log_evidence - exact) < 4 * res.stderr)
    True
    """
    t0 = time.perf_counter()
    lik, yv, L, jitter = _setup(K, y, likelihood)
    n_chains = _positive_int(n_chains, "n_chains")
    n_steps = _positive_int(n_steps, "n_steps")
    if temperatures is None:
        b = temperature_schedule(n_temperatures, schedule)
    else:
        b = _check_schedule(temperatures)
    rng = _rng(random_state)
    target = _Target(L, _total_log_lik(lik, yv), reference)
    state = target.draw(n_chains, rng)
    r, ll = target.evaluate(state)
    slicer = _Slicer(target, rng)
    logw = np.zeros(n_chains)
    T = b.shape[0] - 1
    report = max(1, T // 10)
    for t in range(1, T + 1):
        logw += (b[t] - b[t - 1]) * r
        for _ in range(n_steps):
            slicer.step(state, r, ll, b[t])
        if verbose and (t % report == 0 or t == T):
            est, se, ess = _weights_summary(logw)
            _progress("ais", t, T, t0, f", b = {b[t]:.3g}, log Z so far "
                      f"{est:.3f} +- {se:.3f}, ESS {ess:.1f} of {n_chains}")
    est, se, ess = _weights_summary(logw)
    return AISResult(log_evidence=est, stderr=se, ess=ess, log_weights=logw,
                     samples=np.array(target.f(state).T), temperatures=b,
                     n_steps=n_steps, jitter=jitter,
                     evaluations_per_step=slicer.n_evals / max(slicer.n_calls, 1),
                     seconds=time.perf_counter() - t0)


def _weights_summary(logw):
    """log mean(w), its delta-method standard error and the weights' ESS."""
    c = logw.shape[0]
    top = np.max(logw)
    if not np.isfinite(top):
        return float("-inf"), float("nan"), 0.0
    w = np.exp(logw - top)
    mw = w.mean()
    est = float(top + np.log(mw))
    se = float(np.std(w, ddof=1) / (math.sqrt(c) * mw)) if c > 1 else float("nan")
    ess = float(w.sum() ** 2 / np.sum(w * w))
    return est, se, ess
