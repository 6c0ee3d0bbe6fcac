"""Reference Markov chain Monte Carlo for Gaussian process models at fixed
hyperparameters.

The approximate methods of :func:`gpc.infer` are judged against three Monte Carlo
estimates, all for the latent values ``f ~ N(0, K)`` at the training inputs and a
factorising likelihood ``p(y | f) = prod_i p(y_i | f_i)`` (any gpc likelihood;
labels in {-1, +1} for the classification ones, real targets for the regression
ones):

* :func:`elliptical_slice`: samples of the posterior ``p(f | y)`` by elliptical
  slice sampling (Murray, Adams & MacKay 2010).  A step draws ``nu ~ N(0, K)`` and
  a level under the current likelihood, then searches the ellipse
  ``f cos(t) + nu sin(t)`` for a point above that level, shrinking the angle
  bracket towards the current state after each rejection.  There is no step size
  to tune and every proposal respects the prior exactly.  Many independent chains
  run at once as the columns of an ``n x c`` matrix: the prior draws of a step are
  one product ``L @ Z`` with ``L`` the Cholesky factor of K, and each chain keeps
  its own bracket (chains that have accepted drop out of the shrinking loop).
* :func:`ais`: the log evidence ``log p(y | K) = log int p(y | f) N(f; 0, K) df``
  by annealed importance sampling (Neal 2001).  The chains start from the prior
  and pass through the tempered posteriors ``p(y | f)^b N(f; 0, K)`` for
  ``0 = b_0 < b_1 < ... < b_T = 1`` (one or more elliptical slice steps each: the
  tempered likelihood is just another likelihood for the sampler), collecting the
  log weights ``sum_t (b_t - b_{t-1}) log p(y | f_{t-1})``.  The estimate is the
  log of the mean weight; its Monte Carlo standard error comes from the delta
  method (``sd(w) / (sqrt(c) mean(w))``), and the effective sample size of the
  weights ``(sum w)^2 / sum w^2`` says how much to trust it (it should be a
  sizeable fraction of the number of chains).
* :func:`predictive_probability`: ``p(y_* = +1 | y) = E[p(y_* = +1 | f_*)]`` at
  test points, averaging over posterior samples of f the Gaussian integral of the
  likelihood under ``f_* | f ~ N(k_*' K^{-1} f, k_** - k_*' K^{-1} k_*)``
  (``likelihood.predict``), with a standard error from the spread of the chains'
  (or batches') means.

Both samplers accept a ``reference``: a Gaussian ``q`` near the posterior (a
:func:`gpc.infer` result such as EP's, or a mean and covariance).  The ellipses are
then centred on q's mean and drawn from q, the slice is taken under the ratio
``p(y | f) N(f; 0, K) / q(f)`` (the target is unchanged), and AIS anneals from q
rather than from the prior.  For large signal variances the posterior is far from
the prior and much closer to such a Gaussian: plain elliptical slice sampling then
mixes slowly and AIS from the prior needs tens of thousands of temperatures
(``bench/paper_evidence.py`` measures both).  The ratio is evaluated in the prior's
whitened coordinates, so a nearly singular K does no harm.

A tiny jitter is added to K only when its Cholesky factorisation fails (it is
reported as ``jitter`` in the results); the samples are then those of the prior
``N(0, K + jitter I)``.  For the probit and logit likelihoods the sum of
``log p(y_i | f_i)`` over a matrix of states is computed with SciPy's
``log_ndtr`` / ``log_expit`` in place on one block (the same values as
``likelihood.log_lik``, checked in the tests, without its per-call target checks
and broadcast copies); every other likelihood goes through
``likelihood.log_lik``.  Up to n = 1000 the samplers run with one BLAS thread
(restored afterwards): the matrix products of a step are small, and idle BLAS
threads spinning between them slow the rest of the step.

Examples
--------
Two training points, probit likelihood: the evidence has a closed form,
``1/4 + arcsin(rho) / (2 pi)`` with ``rho = K_12 / sqrt((1 + K_11)(1 + K_22))``
for the labels (+1, +1).

>>> import numpy as np
>>> from gpc.mcmc import ais, elliptical_slice, predictive_probability
>>> K = np.array([[2.0, 1.2], [1.2, 2.0]])
>>> y = [1, 1]
>>> res = ais(K, y, n_chains=200, n_temperatures=200, random_state=0)
>>> exact = np.log(0.25 + np.arcsin(1.2 / 3.0) / (2 * np.pi))
>>> bool(abs(res.log_evidence - exact) < 4 * res.stderr)
True
>>> post = elliptical_slice(K, y, n_chains=20, n_samples=200, random_state=0)
>>> post.samples.shape                      # (chains, draws, n)
(20, 200, 2)
>>> mean, se = post.mean()
>>> bool(np.all(mean > 0))
True
>>> pred = predictive_probability(post.samples, K, np.array([[1.0], [1.0]]),
...                               [2.0], "probit")
>>> bool(0.5 < pred.proba[0] < 1)
True
"""

import math
import time
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import LinAlgError
from scipy.special import log_expit, log_ndtr

from ._linalg import lower_cholesky, matmul, solve_lower
from ._validation import NotPositiveDefiniteError, as_kernel_matrix
from .likelihoods import Logit, Probit, get_likelihood

__all__ = [
    "AISResult",
    "ESSResult",
    "Predictive",
    "ais",
    "elliptical_slice",
    "kernel_cholesky",
    "predictive_probability",
    "temperature_schedule",
]

#: Jitter tried (relative to the mean prior variance) when the Cholesky of K fails.
JITTER_LADDER = (1e-10, 1e-8, 1e-6, 1e-4)
#: Below this angle-bracket width a shrinking search gives up and keeps the state.
_MIN_BRACKET = 1e-12
#: With fewer chains than this, Monte Carlo errors come from batch means.
_MIN_CHAINS_FOR_SPREAD = 10
#: Up to this n the samplers' products run in the calling thread (see ``_Target``).
_SINGLE_THREAD_N = 1000
_TWO_PI = 2.0 * math.pi


# ----------------------------------------------------------------------------------
# results
# ----------------------------------------------------------------------------------

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
# input checks and shared pieces
# ----------------------------------------------------------------------------------

def _rng(random_state):
    """A numpy Generator from None, an int, a Generator or a RandomState."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1, size=4))
    if random_state is None or isinstance(random_state, (int, np.integer)):
        return np.random.default_rng(random_state)
    raise ValueError(f"random_state must be None, an int, a numpy Generator or a "
                     f"RandomState, got {random_state!r}.")


def _positive_int(value, name, minimum=1):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
            or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def _check_labels(y, n, name):
    y = np.asarray(y)
    if y.dtype.kind not in "fiub" or y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"{name} must be a numeric 1-D array of length {n}.")
    y = y.astype(np.float64)
    if not np.all((y == 1.0) | (y == -1.0)):
        raise ValueError(f"{name} must contain only -1 and +1.")
    return y


def kernel_cholesky(K, name="K"):
    """Lower Cholesky factor of a covariance matrix, with jitter only if needed.

    Parameters
    ----------
    K : array_like of shape (n, n)
        Symmetric positive (semi-)definite, finite.
    name : str
        Used in error messages.

    Returns
    -------
    L : ndarray of shape (n, n)
        Lower triangular with ``L @ L.T = K + jitter I``.
    jitter : float
        0.0 when K itself factorises; otherwise the first of ``JITTER_LADDER``
        times ``mean(diag(K))`` that works.

    Raises
    ------
    ValueError
        If K is not a finite, square, symmetric array.
    gpc.NotPositiveDefiniteError
        If even the largest jitter does not make it factorise.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.mcmc import kernel_cholesky
    >>> L, jitter = kernel_cholesky(np.ones((2, 2)))     # rank one: needs jitter
    >>> jitter > 0, np.allclose(L @ L.T, np.ones((2, 2)) + jitter * np.eye(2))
    (True, True)
    """
    K = np.ascontiguousarray(as_kernel_matrix(K, name=name))
    n = K.shape[0]
    if n == 0:
        raise ValueError(f"{name} must have at least one row.")
    scale = float(np.mean(np.diag(K)))
    if not scale > 0:
        raise NotPositiveDefiniteError(f"{name} has a non-positive mean diagonal: it "
                                       "is not a covariance matrix.")
    for rel in (0.0,) + JITTER_LADDER:
        jitter = rel * scale
        A = K + jitter * np.eye(n) if jitter else K
        try:
            L = lower_cholesky(A)
        except LinAlgError:
            continue
        if np.all(np.isfinite(L)):
            return np.ascontiguousarray(L), jitter
    raise NotPositiveDefiniteError(
        f"{name} is not positive semi-definite: its Cholesky factorisation failed "
        f"even with {JITTER_LADDER[-1]:g} x mean(diag) added to the diagonal.")


def _total_log_lik(likelihood, y):
    """``F -> sum_i log p(y_i | F[i, :])`` for a matrix F of states (one per column)."""
    kind = type(likelihood)
    if kind is Probit or kind is Logit:
        fn = log_ndtr if kind is Probit else log_expit
        yc = y[:, None]

        def total(F):
            Z = F * yc
            fn(Z, out=Z)
            return Z.sum(axis=0)
    else:
        yc = y[:, None]

        def total(F):
            return np.asarray(likelihood.log_lik(yc, F), dtype=np.float64).sum(axis=0)
    return total


def _setup(K, y, likelihood):
    lik = get_likelihood(likelihood)
    L, jitter = kernel_cholesky(K)
    yv = lik.check_targets(y, L.shape[0])
    return lik, yv, L, jitter


def _check_init(init, n):
    F = np.asarray(init, dtype=np.float64)
    if F.ndim == 1:
        F = F[None, :]
    if F.ndim != 2 or F.shape[1] != n or F.shape[0] < 1:
        raise ValueError(f"init must have shape (n_chains, {n}), got "
                         f"{np.shape(init)}.")
    if not np.all(np.isfinite(F)):
        raise ValueError("init contains NaN or infinity.")
    return F


class _Target:
    """The target ``q(f) exp(b r(f))`` of the slice steps, with the chains' states.

    Without a reference Gaussian, ``q = N(0, K)`` and ``r(f) = log p(y | f)``; a
    state is the matrix F of latent values (one chain per column) and an ellipse
    point ``F cos t + (L w) sin t``, ``w ~ N(0, I)``.

    With a reference ``q``, everything is written in the prior's whitened
    coordinates ``v = L^{-1} f`` (prior ``N(0, I)``), where ``q = N(mu, R R')``:
    ``r = log p(y | L v) + log N(v; 0, I) - log N(v; mu, R R')``, so that
    ``q exp(r)`` is still the unnormalised posterior and ``E_q[exp(r)] = p(y | K)``.
    A state holds ``x = v - mu``, ``h = R^{-1} x`` and ``L x``; an ellipse point
    ``x cos t + (R w) sin t`` moves the three linearly (second axes ``L R w``,
    ``R w`` and ``w``), so both Gaussian densities cost O(n) per chain and
    proposal and a step costs two matrix products for all chains.  K itself is
    never inverted: for a posterior in site form the precision of q in these
    coordinates is ``I + L' W L`` (eigenvalues >= 1), for an explicit one the
    covariance is ``I + L' C L``.
    """

    def __init__(self, L, total_log_lik, reference=None):
        self.L = L
        self.total = total_log_lik
        n = L.shape[0]
        self.n = n
        # The step's n x n by n x c products: one thread up to _SINGLE_THREAD_N
        # (threads gain nothing there, and spinning ones take the cores from the
        # elementwise work of the slice search), else planned like gpc's others.
        self.threads = 1 if n <= _SINGLE_THREAD_N else 0
        self.mu = None
        if reference is None:
            return
        post = getattr(reference, "posterior", reference)
        if hasattr(post, "alpha") and (hasattr(post, "sW") or hasattr(post, "C")):
            alpha = np.asarray(post.alpha, dtype=np.float64).reshape(-1)
            if alpha.shape[0] != n:
                raise ValueError(f"the reference posterior is for {alpha.shape[0]} "
                                 f"training points, not {n}.")
            mu = L.T @ alpha                     # L^{-1} K alpha
            if hasattr(post, "sW"):
                if getattr(post, "Q", None) is not None:
                    raise ValueError("a reference posterior with negative site "
                                     "precisions is not supported; pass (mean, "
                                     "cov) instead.")
                sWL = np.asarray(post.sW, dtype=np.float64)[:, None] * L
                P, _ = kernel_cholesky(np.eye(n) + sWL.T @ sWL,
                                       name="the reference precision")
                R = solve_lower(P, np.eye(n)).T
                self._h = lambda X: P.T @ X
                self.log_det_R = -float(np.sum(np.log(np.diag(P))))
            else:
                CL = np.asarray(post.C, dtype=np.float64) @ L
                self._set_covariance(np.eye(n) + L.T @ CL)
                R = self.R
        else:
            if not (isinstance(reference, (tuple, list)) and len(reference) == 2):
                raise ValueError("reference must be a gpc.infer result, a posterior "
                                 "or a pair (mean, cov).")
            m, S = reference
            m = np.asarray(m, dtype=np.float64).reshape(-1)
            S = np.asarray(S, dtype=np.float64)
            if m.shape[0] != n or not np.all(np.isfinite(m)):
                raise ValueError(f"the reference mean must be a finite vector of "
                                 f"length {n}.")
            if S.shape != (n, n) or not np.all(np.isfinite(S)):
                raise ValueError(f"the reference covariance must be a finite "
                                 f"({n}, {n}) array.")
            mu = solve_lower(L, m)
            V = solve_lower(L, S)
            self._set_covariance(solve_lower(L, V.T))
            R = self.R
        self.mu = mu[:, None]
        self.R = R
        self.LR = L @ R
        self.f_mean = L @ mu[:, None]

    def _set_covariance(self, Sigma):
        R, _ = kernel_cholesky(0.5 * (Sigma + Sigma.T),
                               name="the reference covariance")
        self.R = R
        self._h = lambda X: solve_lower(R, X)
        self.log_det_R = float(np.sum(np.log(np.diag(R))))

    # -- states ------------------------------------------------------------------
    def draw(self, c, rng):
        """c states from q."""
        W = rng.standard_normal((self.n, c))
        if self.mu is None:
            return [matmul(self.L, W, self.threads)]
        return [matmul(self.LR, W, self.threads), matmul(self.R, W, self.threads), W]

    def from_f(self, F):
        """States from latent values F (n, c)."""
        if self.mu is None:
            return [np.array(F, order="C")]
        X = solve_lower(self.L, F) - self.mu
        return [F - self.f_mean, X, self._h(X)]

    def f(self, state):
        """Latent values (n, c) of states."""
        return state[0] if self.mu is None else state[0] + self.f_mean

    def directions(self, c, rng):
        """The ellipses' second axes for c chains."""
        return self.draw(c, rng)

    def evaluate(self, state):
        """(r, log p(y | f)) of states, each of shape (c,)."""
        if self.mu is None:
            ll = self.total(state[0])
            return ll, ll
        ll = self.total(state[0] + self.f_mean)
        V = state[1] + self.mu
        r = ll + self.log_det_R - 0.5 * np.einsum("ij,ij->j", V, V) \
            + 0.5 * np.einsum("ij,ij->j", state[2], state[2])
        return r, ll

    def ellipse(self, state, D):
        """Per-chain constants of ``r`` on the ellipses ``state cos t + D sin t``.

        The two Gaussian terms are quadratic in (cos t, sin t): with
        ``x(t) = x cos t + d sin t`` and ``h(t) = h cos t + w sin t``,
        ``|mu + x(t)|^2 - |h(t)|^2 = A c^2 + B s^2 + 2 E c s + 2 G c + 2 H s + |mu|^2``
        (c, s the cosine and sine), so a proposal costs only its likelihood.
        """
        if self.mu is None:
            return None
        X, H = state[1], state[2]
        d, w = D[1], D[2]

        def dot(a, b):
            return np.einsum("ij,ij->j", a, b)

        mu = self.mu
        return (dot(X, X) - dot(H, H), dot(d, d) - dot(w, w),
                dot(X, d) - dot(H, w), (mu.T @ X)[0], (mu.T @ d)[0],
                float(mu[:, 0] @ mu[:, 0]))

    def r_on_ellipse(self, ll, cs, sn, consts, idx):
        """r of proposals with log likelihoods ll at angles (cs, sn) = (cos, sin);
        ``idx`` selects the chains (None: all)."""
        if self.mu is None:
            return ll
        A, B, E, G, H, mm = consts
        if idx is not None:
            A, B, E, G, H = A[idx], B[idx], E[idx], G[idx], H[idx]
        quad = A * cs * cs + B * sn * sn + 2.0 * (E * cs * sn + G * cs + H * sn) + mm
        return ll + self.log_det_R - 0.5 * quad


class _Slicer:
    """Elliptical slice steps for all chains (columns) at once."""

    def __init__(self, target, rng):
        self.target = target
        self.rng = rng
        self.n_evals = 0
        self.n_calls = 0
        self.n_stuck = 0

    def step(self, state, r, ll, beta):
        """One step targeting ``q(f) exp(beta r(f))``; the state (a list of n x c
        arrays), r and ll (log p(y | f)) are updated in place.

        Only the latent values of a proposal are formed during the search (the
        Gaussian terms come from :meth:`_Target.ellipse`); each chain's accepted
        angle then moves its whole state once.
        """
        rng = self.rng
        target = self.target
        c = r.shape[0]
        D = target.directions(c, rng)
        consts = target.ellipse(state, D)
        F, DF = state[0], D[0]
        shift = target.f_mean if target.mu is not None else None
        # 0 * (-inf) must not make the level NaN: a zero temperature accepts all.
        level = np.log(rng.random(c))
        if beta != 0.0:
            level += beta * r
        theta = rng.random(c) * _TWO_PI
        lo = theta - _TWO_PI
        hi = theta.copy()
        accepted = np.zeros(c)            # angle 0 keeps the state
        active = None                     # all chains, no copies on the first pass
        self.n_calls += c
        while True:
            if active is None:
                th, lvl = theta, level
                cs, sn = np.cos(th), np.sin(th)
                Fp = F * cs + DF * sn
            else:
                th, lvl = theta[active], level[active]
                cs, sn = np.cos(th), np.sin(th)
                Fp = F[:, active] * cs + DF[:, active] * sn
            if shift is not None:
                Fp += shift
            llp = target.total(Fp)
            rp = target.r_on_ellipse(llp, cs, sn, consts, active)
            self.n_evals += th.shape[0]
            tempered = beta * rp if beta != 0.0 else np.zeros_like(rp)
            ok = tempered > lvl
            idx = np.arange(c) if active is None else active
            acc = idx[ok]
            accepted[acc] = th[ok]
            r[acc], ll[acc] = rp[ok], llp[ok]
            if ok.all():
                break
            rej = idx[~ok]
            t = th[~ok]
            neg = t < 0
            lo[rej[neg]] = t[neg]
            hi[rej[~neg]] = t[~neg]
            stuck = (hi[rej] - lo[rej]) < _MIN_BRACKET
            if stuck.any():                 # keep the current state
                self.n_stuck += int(stuck.sum())
                rej = rej[~stuck]
                if rej.size == 0:
                    break
            theta[rej] = lo[rej] + rng.random(rej.size) * (hi[rej] - lo[rej])
            active = rej
        cs, sn = np.cos(accepted), np.sin(accepted)
        for X, d in zip(state, D):
            X *= cs
            X += d * sn


def _progress(what, done, total, t0, extra=""):
    print(f"{what}: {done}/{total} ({100.0 * done / total:.0f}%), "
          f"{time.perf_counter() - t0:.1f} s{extra}", flush=True)


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
    n = L.shape[0]
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
