"""The regression likelihoods of real targets y, by the law of the noise ``y - f``:
:class:`Gaussian`, :class:`Laplace` and :class:`OneSidedExponential`, each with one
parameter and its EM update."""

import numpy as np

from ._base import LIK_GAUSSIAN, LIK_LAPLACE, LIK_ONE_SIDED, _register, _ScalarParameter


class _RegressionParameter(_ScalarParameter):
    """Shared part of the regression likelihoods: one positive parameter, real
    targets, an EM statistic, no class probability."""

    is_classification = False
    has_em_statistic = True
    _range_text = "(0, inf)"
    #: What a target is, for the message of :meth:`predict`.
    _target_text = "a target is the latent value plus the likelihood's noise"

    @staticmethod
    def _admissible(value):
        return 0.0 < value < np.inf

    def predict(self, m, v):
        """Not available: this is a regression likelihood.

        There is no class +1 to give a probability for; use the latent mean and
        variance instead (e.g. ``SitePosterior.latent_mean_and_variance``).

        Raises
        ------
        ValueError
            Always.
        """
        raise ValueError(
            f"the {self.name!r} likelihood is a regression likelihood: p(y = +1) is not "
            f"defined.  Use the latent mean and variance instead ({self._target_text}).")


class Gaussian(_RegressionParameter):
    """Gaussian (regression) likelihood p(y | f) = N(y; f, s2), y real.

    Not a classification likelihood: targets are real numbers and there is no
    class probability (:meth:`~Likelihood.predict` raises).  Its Gaussian
    integral is exact, ``Z = N(y; m, v + s2)``, with ``d log Z / d s2 =
    ((y - m)^2 / (v + s2)^2 - 1 / (v + s2)) / 2`` returned as the parameter
    derivative.  Every approximate inference method is exact with it (Laplace:
    one Newton step), so it checks them against GP regression; it also serves
    models that need regression noise.

    Parameters
    ----------
    noise_variance : float, default=1.0
        The noise variance s2 > 0, in ``noise_variance_bounds``.
    noise_variance_bounds : (float, float) or "fixed", default=(1e-6, 1e6)
        Range allowed when learning ``noise_variance`` (0 < low <= high < inf);
        "fixed" pins it.

    Attributes
    ----------
    params : ndarray of shape (1,)
        ``[noise_variance]``.
    param_bounds : ndarray of shape (1, 2)
        ``[noise_variance_bounds]`` (``[[s2, s2]]`` when fixed).

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.likelihoods import Gaussian
    >>> lik = Gaussian(noise_variance=0.5)
    >>> lik
    Gaussian(noise_variance=0.5, noise_variance_bounds=(1e-06, 1000000.0))
    >>> lp, d1, d2, d3 = lik.derivatives(1.5, 1.0)
    >>> print(f"{d1:.3f} {d2:.3f} {d3:.3f}")
    1.000 -2.000 0.000
    >>> logZ, dlogZ, d2logZ, dlogZ_ds2 = lik.gauss_moments(1.5, 1.0, 0.5)
    >>> print(f"{np.exp(logZ):.6f} {dlogZ:.3f} {d2logZ:.3f} {dlogZ_ds2:.4f}")
    0.352065 0.500 -1.000 -0.3750
    >>> lik.is_classification
    False
    """

    code = LIK_GAUSSIAN
    name = "gaussian"
    has_derivatives = True
    param_names = ("noise_variance",)
    _param = "noise_variance"
    _target_text = ("the predictive distribution of a target is "
                    "N(mean, var + noise_variance)")

    def __init__(self, noise_variance=1.0, noise_variance_bounds=(1e-6, 1e6)):
        self.noise_variance = noise_variance
        self.noise_variance_bounds = noise_variance_bounds
        self._validate()

    def _em_parameter(self, mean_stat):
        return mean_stat

    def noise_moments(self):
        """Mean and variance of the noise ``y - f``: ``(0, noise_variance)``."""
        return 0.0, float(self.noise_variance)


class _RateLikelihood(_RegressionParameter):
    """Shared part of the exponential-noise regression likelihoods: the rate
    parameter ``rate`` > 0 with its bounds."""

    has_derivatives = False
    param_names = ("rate",)
    _param = "rate"

    def __init__(self, rate=1.0, rate_bounds=(1e-3, 1e3)):
        self.rate = rate
        self.rate_bounds = rate_bounds
        self._validate()

    def _em_parameter(self, mean_stat):
        return np.inf if mean_stat <= 0.0 else 1.0 / mean_stat


class Laplace(_RateLikelihood):
    """Laplace (double exponential) regression likelihood, y real:
    ``p(y | f) = (lam / 2) exp(-lam |y - f|)``, with rate lam > 0.

    Robust regression: the noise ``y - f`` has variance ``2 / lam^2`` and heavier
    tails than the Gaussian.  The likelihood has a kink at f = y, so there are no
    derivatives in f (``has_derivatives`` is False: use EP, ADF or the online
    methods, not Laplace's method); :meth:`~Likelihood.log_lik` is available.

    With f ~ N(m, v) the noise is z = y - f ~ N(mu, v), mu = y - m, and completing the
    square gives ``Z = (lam/2) (A + B)`` with ``A = exp(-lam mu + lam^2 v/2)
    Phi((mu - lam v)/sqrt(v))`` (the half z > 0) and its mirror image
    ``B = exp(lam mu + lam^2 v/2) Phi((-mu - lam v)/sqrt(v))``.  The kernels combine
    them in log space and write the derivatives with the inverse Mills ratio:
    ``d log Z/dm = lam tanh(d/2)`` with ``d = log A - log B``,
    ``d^2 log Z/dm^2 = -(2 lam/sqrt(v)) w_A w_B (sh_A + sh_B)`` (a product of
    positive factors: no cancellation), and ``d log Z/d lam = 1/lam - E_t|y - f|``.
    Everything stays finite wherever the true value is, far into the tails
    (``|y - m|`` of 1e3 and more for any v).  At ``v == 0`` the point values are
    returned: ``log p(y | m)``, zero m-derivatives (as for :class:`Step`) and
    ``d log Z/d lam = 1/lam - |y - m|``.

    Accuracy against adaptive quadrature (``scipy.integrate.quad``, breakpoint at
    f = y), y - m in {0, +-0.5, +-3, +-30}, v in {1e-4, 0.1, 1, 25}, lam in
    {0.5, 2}: relative errors below 3e-14 for log Z, d log Z/dm, d^2 log Z/dm^2,
    d log Z/d lam and :meth:`~Likelihood.em_statistic` (errors scaled by the size of
    the terms where a value is tiny or crosses zero); d log Z/dm keeps its relative
    accuracy as y - m -> 0.

    Parameters
    ----------
    rate : float, default=1.0
        The rate lam > 0, in ``rate_bounds``.
    rate_bounds : (float, float) or "fixed", default=(1e-3, 1e3)
        Range allowed when learning ``rate`` (0 < low <= high < inf); "fixed"
        pins it.

    Attributes
    ----------
    params : ndarray of shape (1,)
        ``[rate]``.
    param_bounds : ndarray of shape (1, 2)
        ``[rate_bounds]`` (``[[rate, rate]]`` when fixed).

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.likelihoods import Laplace, get_likelihood
    >>> lik = get_likelihood("laplace").with_params([2.0])
    >>> lik
    Laplace(rate=2.0, rate_bounds=(0.001, 1000.0))
    >>> print(np.round(lik.log_lik(0.5, [0.0, 0.5, 1.5]), 6))
    [-1.  0. -2.]
    >>> logZ, dlogZ, d2logZ, dlogZ_drate = lik.gauss_moments(0.5, 0.0, 1.0)
    >>> print(f"{logZ:.6f} {dlogZ:.6f} {d2logZ:.6f} {dlogZ_drate:.6f}")
    -1.183108 0.371346 -0.735172 0.108526
    >>> lik.is_classification, lik.has_derivatives
    (False, False)
    """

    code = LIK_LAPLACE
    name = "laplace"

    def noise_moments(self):
        """Mean and variance of the noise ``y - f``: ``(0, 2 / rate^2)``."""
        return 0.0, 2.0 / self.rate ** 2


class OneSidedExponential(_RateLikelihood):
    """One-sided exponential regression likelihood:
    p(y | f) = lam exp(-lam (y - f)) for y > f, and 0 for y <= f (rate lam > 0).

    The noise ``y - f`` is exponential with mean ``1 / lam``, so f lies below every
    target: the example of Csató & Opper (2002, eq. 9) for the sparse online GP,
    where the posterior is far from Gaussian.  No derivatives in f
    (``has_derivatives`` is False); :meth:`~Likelihood.log_lik` is ``-inf`` for y <= f.

    With f ~ N(m, v), z = y - f ~ N(mu, v), mu = y - m, completing the square gives
    ``Z = lam exp(-lam mu + lam^2 v/2) Phi(a)``, ``a = (mu - lam v)/sqrt(v)``; the
    tilted distribution of z is N(mu - lam v, v) truncated to z > 0.  The kernels
    evaluate log Phi and the inverse Mills ratio r = N(a)/Phi(a) without
    cancellation for a << 0 (where all the mass sits at the truncation):
    ``d log Z/dm = lam - r/sqrt(v)``, ``d^2 log Z/dm^2 = -r (a + r)/v`` and
    ``d log Z/d lam = 1/lam - E_t[y - f]``, ``E_t[y - f] = sqrt(v) (a + r)``, all
    finite wherever the true value is (``|y - m|`` of 1e3 and more for any v).  At
    ``v == 0`` the point values are returned: ``log p(y | m)`` (``-inf`` for
    y <= m), zero m-derivatives (as for :class:`Step`) and the v -> 0 limit
    ``d log Z/d lam = 1/lam - max(y - m, 0)``.

    Accuracy against adaptive quadrature (``scipy.integrate.quad``, breakpoint at
    f = y), y - m in {0, +-0.5, +-3, +-30}, v in {1e-4, 0.1, 1, 25}, lam in
    {0.5, 2}: relative errors below 5e-14 for log Z, d log Z/dm, d^2 log Z/dm^2,
    d log Z/d lam and :meth:`~Likelihood.em_statistic` (errors scaled by the size of
    the terms where a value is tiny or crosses zero).

    Parameters
    ----------
    rate : float, default=1.0
        The rate lam > 0, in ``rate_bounds``.
    rate_bounds : (float, float) or "fixed", default=(1e-3, 1e3)
        Range allowed when learning ``rate`` (0 < low <= high < inf); "fixed"
        pins it.

    Attributes
    ----------
    params : ndarray of shape (1,)
        ``[rate]``.
    param_bounds : ndarray of shape (1, 2)
        ``[rate_bounds]`` (``[[rate, rate]]`` when fixed).

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.likelihoods import OneSidedExponential
    >>> lik = OneSidedExponential(rate=2.0)
    >>> lik
    OneSidedExponential(rate=2.0, rate_bounds=(0.001, 1000.0))
    >>> print(lik.log_lik(1.0, [0.5, 1.0, 2.0]))
    [-0.30685282       -inf       -inf]
    >>> logZ, dlogZ, d2logZ, dlogZ_drate = lik.gauss_moments(1.0, 3.0, 1.0)
    >>> print(f"{logZ:.4f} {dlogZ:.4f} {d2logZ:.4f}")   # m far above y: finite
    -3.6670 -2.2256 -0.9533
    >>> print(f"{lik.em_statistic(1.0, 3.0, 1.0):.6f}")
    0.225607
    """

    code = LIK_ONE_SIDED
    name = "one_sided_exponential"

    def noise_moments(self):
        """Mean and variance of the noise ``y - f``: ``(1 / rate, 1 / rate^2)``."""
        return 1.0 / self.rate, 1.0 / self.rate ** 2


_register(Gaussian, Laplace, OneSidedExponential)
