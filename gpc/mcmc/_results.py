"""The samplers' results and the Monte Carlo predictive probabilities, with their
standard errors from the spread of the chains' (or batches') means."""

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import LinAlgError

from .._linalg import lower_cholesky, solve_lower
from .._validation import NotPositiveDefiniteError, as_kernel_matrix
from ..likelihoods import get_likelihood
from ._slice import _check_labels, kernel_cholesky


#: With fewer chains than this, Monte Carlo errors come from batch means.
_MIN_CHAINS_FOR_SPREAD = 10


@dataclass
class ESSResult:
    """Samples of an elliptical slice sampler (see :func:`~gpc.mcmc.elliptical_slice`).

    Attributes
    ----------
    samples : ndarray of shape (n_chains, n_draws, n)
        The kept states of every chain (after burn-in and thinning).
    log_lik : ndarray of shape (n_chains, n_draws)
        ``log p(y | f)`` (untempered) of each kept state.
    state : ndarray of shape (n_chains, n)
        The last state of every chain (pass as ``init`` to continue).
    L : ndarray of shape (n, n)
        The lower Cholesky factor of ``K + jitter I`` used for the prior draws.
    jitter : float
        Added to the diagonal of K (0.0 unless the factorisation needed it).
    likelihood : Likelihood
    temperature : float
        The power of the likelihood in the target (1: the posterior).
    n_steps : int
        Steps per chain, burn-in included.
    evaluations_per_step : float
        Mean number of likelihood evaluations (ellipse proposals) per chain and step.
    n_stuck : int
        Steps whose bracket shrank to nothing without an acceptable point (the state
        is kept; only possible where the likelihood is zero at the current state).
    seconds : float
        Wall time of the run.
    """

    samples: np.ndarray
    log_lik: np.ndarray
    state: np.ndarray
    L: np.ndarray
    jitter: float
    likelihood: object
    temperature: float = 1.0
    n_steps: int = 0
    evaluations_per_step: float = 0.0
    n_stuck: int = 0
    seconds: float = 0.0

    @property
    def n_chains(self):
        """Number of chains."""
        return self.samples.shape[0]

    def mean(self):
        """Posterior mean of f and its Monte Carlo standard error.

        Returns
        -------
        mean, stderr : ndarray of shape (n,)
            The error is the spread of the chains' means over ``sqrt(n_chains)``
            (with fewer than 10 chains, of batch means: see
            :func:`predictive_probability`).
        """
        mean, se, _ = _mean_and_error(self.samples)
        return mean, se

    def predict_proba(self, K_cross, k_diag, likelihood=None):
        """:func:`predictive_probability` with these samples and this factor of K.

        Parameters
        ----------
        K_cross : array_like of shape (n, m)
            Covariances between the n training and m test points.
        k_diag : array_like of shape (m,)
            Prior variances at the test points.
        likelihood : str or Likelihood, optional
            Defaults to the sampler's (a classification likelihood).

        Returns
        -------
        Predictive
        """
        lik = self.likelihood if likelihood is None else likelihood
        return _predict(self.samples, self.L, K_cross, k_diag, lik)


@dataclass
class AISResult:
    """Annealed importance sampling estimate of the log evidence (see
    :func:`~gpc.mcmc.ais`).

    Attributes
    ----------
    log_evidence : float
        ``log mean(w)``, the log of the importance sampling estimate of
        ``p(y | K)`` (unbiased for ``p(y | K)``, so its log is biased low by about
        ``stderr**2 / 2``).
    stderr : float
        Monte Carlo standard error of ``log_evidence`` by the delta method,
        ``sd(w) / (sqrt(n_chains) mean(w))``.
    ess : float
        Effective sample size of the weights, ``(sum w)^2 / sum w^2``
        (between 1 and ``n_chains``).
    log_weights : ndarray of shape (n_chains,)
    samples : ndarray of shape (n_chains, n)
        The chains' final states: with the weights, a weighted sample of the
        posterior (without, a good start for :func:`elliptical_slice`).
    temperatures : ndarray of shape (n_temperatures + 1,)
        The schedule ``b_0 = 0, ..., b_T = 1``.
    n_steps : int
        Elliptical slice steps per temperature.
    jitter : float
        Added to the diagonal of K (0.0 unless the factorisation needed it).
    evaluations_per_step : float
        Mean number of likelihood evaluations per chain and slice step.
    seconds : float
        Wall time of the run.
    """

    log_evidence: float
    stderr: float
    ess: float
    log_weights: np.ndarray
    samples: np.ndarray
    temperatures: np.ndarray
    n_steps: int = 1
    jitter: float = 0.0
    evaluations_per_step: float = 0.0
    seconds: float = 0.0

    @property
    def n_chains(self):
        """Number of independent annealing runs."""
        return self.log_weights.shape[0]


@dataclass
class Predictive:
    """Monte Carlo predictive probabilities (see
    :func:`~gpc.mcmc.predictive_probability`).

    Attributes
    ----------
    proba : ndarray of shape (m,)
        ``p(y_* = +1 | y)`` at each test point.
    stderr : ndarray of shape (m,)
        Monte Carlo standard error of ``proba``.
    batch_means : ndarray of shape (n_batches, m)
        The independent (chain) or batch estimates whose spread gives ``stderr``.
    """

    proba: np.ndarray
    stderr: np.ndarray
    batch_means: np.ndarray = field(repr=False)

    def mean_log_prob(self, y):
        """Mean test log predictive probability ``mean_i log p(y_i | y_train)``.

        Parameters
        ----------
        y : array_like of shape (m,)
            Test labels in {-1, +1}.

        Returns
        -------
        value, stderr : float
            The standard error is the delta method over the batches: the spread of
            ``mean_i p_b(y_i) / p(y_i)`` over the batches b, which keeps the
            correlation between test points (all use the same samples).
        """
        y = _check_labels(y, self.proba.shape[0], "y")
        p = np.where(y > 0, self.proba, 1.0 - self.proba)
        pb = np.where(y > 0, self.batch_means, 1.0 - self.batch_means)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = float(np.mean(np.log(p)))
            g = np.mean(pb / p, axis=1)
        b = g.shape[0]
        se = float(np.std(g, ddof=1) / math.sqrt(b)) if b > 1 else float("nan")
        return value, se


# ----------------------------------------------------------------------------------
# predictive probabilities
# ----------------------------------------------------------------------------------

def _batches(n_chains, n_draws):
    """Per chain, the number of contiguous batches whose means give the error."""
    if n_chains >= _MIN_CHAINS_FOR_SPREAD:
        return 1
    per = -(-20 // n_chains)
    if n_draws < per:
        raise ValueError(f"with {n_chains} chain(s) the Monte Carlo error needs at "
                         f"least {per} draws per chain (batch means), got "
                         f"{n_draws}.")
    return per


def _batch_means(values):
    """Means of (n_chains, n_draws, ...) values over the draws of each batch."""
    c, d = values.shape[:2]
    per = _batches(c, d)
    if per == 1:
        return values.mean(axis=1)
    size = d // per
    cut = values[:, :per * size].reshape((c, per, size) + values.shape[2:])
    return cut.mean(axis=2).reshape((c * per,) + values.shape[2:])


def _mean_and_error(values):
    bm = _batch_means(values)
    mean = values.reshape((-1,) + values.shape[2:]).mean(axis=0)
    se = np.std(bm, axis=0, ddof=1) / math.sqrt(bm.shape[0])
    return mean, se, bm


def _as_samples(samples):
    S = np.asarray(samples, dtype=np.float64)
    if S.ndim == 2:
        S = S[None]
    if S.ndim != 3:
        raise ValueError("samples must have shape (n_chains, n_draws, n) or "
                         f"(n_draws, n), got {np.shape(samples)}.")
    if not np.all(np.isfinite(S)):
        raise ValueError("samples contain NaN or infinity.")
    return S


def _predict(S, L, K_cross, k_diag, likelihood):
    lik = get_likelihood(likelihood)
    if not lik.is_classification:
        raise ValueError(f"predictive_probability needs a classification likelihood, "
                         f"got {lik.name!r}.")
    n = L.shape[0]
    S = _as_samples(S)
    if S.shape[2] != n:
        raise ValueError(f"samples have {S.shape[2]} latent values per draw but K "
                         f"is {n} x {n}.")
    Kc = np.asarray(K_cross, dtype=np.float64)
    if Kc.ndim != 2 or Kc.shape[0] != n:
        raise ValueError(f"K_cross must have shape ({n}, m), got {np.shape(K_cross)}.")
    kd = np.asarray(k_diag, dtype=np.float64).reshape(-1)
    if kd.shape[0] != Kc.shape[1]:
        raise ValueError("k_diag must have one entry per column of K_cross.")
    if not (np.all(np.isfinite(Kc)) and np.all(np.isfinite(kd))):
        raise ValueError("K_cross and k_diag must be finite.")
    V = solve_lower(L, Kc)                  # L^-1 K_cross
    A = solve_lower(L, V, trans=True)
    var = np.maximum(kd - np.einsum("ij,ij->j", V, V), 0.0)
    c, d, _ = S.shape
    P = np.empty((c, d, Kc.shape[1]))
    for i in range(c):                      # one chain at a time bounds the memory
        P[i] = lik.predict(S[i] @ A, var[None, :])
    proba, se, bm = _mean_and_error(P)
    return Predictive(proba=proba, stderr=se, batch_means=bm)


def predictive_probability(samples, K, K_cross, k_diag, likelihood="probit", *,
                           jitter=None):
    """Monte Carlo predictive probability ``p(y_* = +1 | y)`` at test points.

    For each posterior sample f of the training latents,
    ``f_* | f ~ N(K_cross' K^{-1} f, k_diag - diag(K_cross' K^{-1} K_cross))``, and
    ``likelihood.predict`` gives ``E[p(y_* = +1 | f_*)]`` under it; the result is
    the average over the samples.

    Parameters
    ----------
    samples : array_like of shape (n_chains, n_draws, n) or (n_draws, n)
        Posterior samples (e.g. the ``samples`` of an :class:`ESSResult`).
    K : array_like of shape (n, n)
        The training covariance the samples were drawn with.
    K_cross : array_like of shape (n, m)
        Covariances between the training and the m test points.
    k_diag : array_like of shape (m,)
        Prior variances at the test points.
    likelihood : str or Likelihood, default="probit"
        A classification likelihood.
    jitter : float, optional
        Added to the diagonal of K; default: as :func:`kernel_cholesky` finds (the
        same jitter as the sampler, which uses that function).

    Returns
    -------
    Predictive
        ``proba`` and its ``stderr``: the spread of the chains' means over
        ``sqrt(n_chains)`` with 10 or more chains (independent chains give
        independent estimates); with fewer, each chain is cut into
        ``ceil(20 / n_chains)`` contiguous batches whose means are treated as
        independent (right when a batch is much longer than the chain's
        autocorrelation time).

    Raises
    ------
    ValueError
        For inconsistent shapes, non-finite input or a regression likelihood.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.mcmc import predictive_probability
    >>> rng = np.random.default_rng(0)
    >>> f = 1.0 + 0.1 * rng.standard_normal((10, 100, 1))   # 10 chains at n = 1
    >>> pred = predictive_probability(f, [[1.0]], [[1.0]], [1.0])
    >>> print(np.round(pred.proba, 2))      # f_* = f exactly: Phi(1)
    [0.84]
    """
    if jitter is None:
        L, _ = kernel_cholesky(K)
    else:
        jitter = float(jitter)
        if not (np.isfinite(jitter) and jitter >= 0):
            raise ValueError(f"jitter must be a non-negative number, got {jitter!r}.")
        Kf = np.ascontiguousarray(as_kernel_matrix(K))
        try:
            L = lower_cholesky(Kf + jitter * np.eye(Kf.shape[0]))
        except LinAlgError:
            raise NotPositiveDefiniteError(
                f"K + {jitter:g} I is not positive definite.") from None
    return _predict(samples, L, K_cross, k_diag, likelihood)
