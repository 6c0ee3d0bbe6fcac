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

from ._results import AISResult, ESSResult, Predictive, predictive_probability
from ._samplers import ais, elliptical_slice, temperature_schedule
from ._slice import kernel_cholesky

# Public as well, though not in __all__: the jitters that kernel_cholesky tries.
from ._slice import JITTER_LADDER  # noqa: F401

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
