"""The binary classification likelihoods, labels in {-1, +1}: :class:`Probit`,
:class:`Logit`, :class:`NoisyThreshold` and :class:`Step`."""

import numpy as np
from scipy.special import expit

from .. import _moments
from ._base import (LIK_LOGIT, LIK_NOISY_THRESHOLD, LIK_PROBIT, LIK_STEP, Likelihood,
                    _check_count, _flat, _register, _ScalarParameter, _shaped,
                    _variances)


class Probit(Likelihood):
    """Probit likelihood p(y | f) = Phi(y f), Phi the standard normal CDF.

    Differentiable and log-concave.  Its Gaussian integral is closed-form,
    ``Z = Phi(y m / sqrt(1 + v))``; log Z and its derivatives are computed through
    a tail-stable log Phi and the inverse Mills ratio, so they stay accurate (and
    finite where the truth is finite) for ``|m| / sqrt(1 + v)`` up to 1e300.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.likelihoods import Probit
    >>> lik = Probit()
    >>> lik
    Probit()
    >>> lp, d1, d2, d3 = lik.derivatives([1, -1], [0.0, 0.0])
    >>> print(np.round(d1, 4), np.round(d2, 4))
    [ 0.7979 -0.7979] [-0.6366 -0.6366]
    >>> logZ, dlogZ, d2logZ, _ = lik.gauss_moments(1, -1000.0, 1.0)
    >>> print(f"{logZ:.6g} {dlogZ:.6g} {d2logZ:.6g}")
    -250007 500.001 -0.499999
    >>> print(f"{lik.predict(1.0, 3.0):.4f}")
    0.6915
    """

    code = LIK_PROBIT
    name = "probit"
    has_derivatives = True

    def __init__(self):
        pass


class Logit(Likelihood):
    """Logistic likelihood p(y | f) = sigma(y f) = 1 / (1 + exp(-y f)).

    Differentiable and log-concave.  Its Gaussian integral has no closed form:

    * For ``v <= 1.5`` it is computed by Gauss-Hermite quadrature of order
      ``gh_order``, in log space (tilted weights give the m-derivatives
      ``E_t[(log p)']`` and ``E_t[(log p)''] + Var_t[(log p)']``).
    * For ``v > 1.5`` plain Gauss-Hermite is poor (the integrand becomes a sharp
      step relative to the node spacing: a 64-point rule errs by ~1e-2 in log Z
      at v = 100 and ~1e-1 at v = 1000).  There the kernels use that the logistic
      law is a Gaussian scale mixture, sigma(z) = E[Phi(z / sqrt(tau))], so
      Z = E[Phi(y m / sqrt(tau + v))], integrated with a fixed 64-node rule in
      tau, together with the exact identity
      F(mu) = exp(mu + v/2) (1 - F(mu + v)), F(mu) = E[sigma(f)], f ~ N(mu, v),
      for the far tails.  ``gh_order`` does not matter there.

    Accuracy, measured against 34-digit mpmath quadrature
    (``tests/test_moments_precision.py``) for m in {0, +-1e-3, +-1, +-10, +-100,
    +-1e3} plus random values, y = +-1 and v in {1e-12, 1e-8, 1e-4, 1, 1.5, 1.6,
    30, 1e4, 1e8, 1e12} (errors relative to ``max(1, |value|)``, worst case over the
    grid; for every order the worst case sits at the switch v = 1.5, the largest
    variance given to Gauss-Hermite):

    ========  ==========  ===============  ==================
    order     log Z       d log Z / dm     d^2 log Z / dm^2
    ========  ==========  ===============  ==================
    16        2e-7        7e-7             5e-6
    24        5e-10       2e-8             3e-8
    32        4e-11       3e-10            3e-9
    48        3e-14       7e-13            3e-12
    64        3e-15       8e-15            4e-14
    ========  ==========  ===============  ==================

    The default is 64.  Relative errors in the tails (tiny derivatives) stay
    below ~1e-12 (below 3e-13 with order 64; 2e-14 away from v = 1.5).

    Parameters
    ----------
    gh_order : int, default=64
        Number of Gauss-Hermite nodes (used for v <= 1.5).
    predictive : {"quadrature", "mackay"}, default="quadrature"
        How :meth:`predict` averages sigma(f) over N(m, v): the quadrature above,
        or MacKay's approximation sigma(m / sqrt(1 + pi v / 8)).

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.likelihoods import Logit
    >>> lik = Logit()
    >>> lik
    Logit(gh_order=64, predictive='quadrature')
    >>> print(f"{lik.predict(1.0, 4.0):.6f}")
    0.647726
    >>> print(f"{Logit(predictive='mackay').predict(1.0, 4.0):.6f}")
    0.651056
    >>> logZ, dlogZ, d2logZ, _ = lik.gauss_moments([1, -1], 2.0, 100.0)
    >>> print(np.round(logZ, 6))
    [-0.548156 -0.862785]
    """

    code = LIK_LOGIT
    name = "logit"
    has_derivatives = True

    def __init__(self, gh_order=64, predictive="quadrature"):
        self.gh_order = gh_order
        self.predictive = predictive
        self._validate()

    def _validate(self):
        _check_count(self.gh_order, "gh_order", 1)
        if self.predictive not in ("quadrature", "mackay"):
            raise ValueError("predictive must be 'quadrature' or 'mackay', got "
                             f"{self.predictive!r}")

    @property
    def quad_x(self):
        """Gauss-Hermite nodes of order ``gh_order`` (read-only, cached)."""
        return _moments.gauss_hermite(int(self.gh_order))[0]

    @property
    def quad_logw(self):
        """Log Gauss-Hermite weights of order ``gh_order`` (read-only, cached)."""
        return _moments.gauss_hermite(int(self.gh_order))[1]

    def predict(self, m, v):
        """Predictive probability p(y = +1) for f ~ N(m, v).

        Uses quadrature or, with ``predictive="mackay"``, MacKay's approximation
        ``sigma(m / sqrt(1 + pi v / 8))``.

        Parameters
        ----------
        m, v : array_like
            Mean and variance (``v >= 0``) of the latent value.

        Returns
        -------
        ndarray or float
            Probabilities in the broadcast shape of ``m`` and ``v``.
        """
        if self.predictive == "mackay":
            self._validate()
            shape, (m, v) = _flat(m, _variances(v))
            return _shaped(expit(m / np.sqrt(1.0 + (np.pi / 8.0) * v)), shape)
        return super().predict(m, v)


class NoisyThreshold(_ScalarParameter):
    """Noisy step: p(y | f) = eps + (1 - 2 eps) H(y f).

    The label is flipped with probability ``eps`` (H is the Heaviside step,
    H(0) = 1/2).  Not differentiable in f, so it suits EP / ADF but not Laplace.
    ``Z = eps + (1 - 2 eps) Phi(y m / sqrt(v))`` is closed-form, and
    ``d log Z / d eps = (1 - 2 Phi(y m / sqrt(v))) / Z`` is returned as the
    parameter derivative, so ``eps`` can be learnt.  At ``v == 0`` the point values
    are returned, with zero m-derivatives (at m == 0, where the v -> 0 limit of the
    derivatives diverges, log Z = log(1/2) and the derivatives are 0 too).

    Parameters
    ----------
    eps : float, default=0.1
        Label-flip probability, in ``eps_bounds``.
    eps_bounds : (float, float) or "fixed", default=(1e-6, 0.5)
        Range allowed when learning ``eps`` (within [0, 0.5]); "fixed" pins it.

    Attributes
    ----------
    params : ndarray of shape (1,)
        ``[eps]``.
    param_bounds : ndarray of shape (1, 2)
        ``[eps_bounds]`` (``[[eps, eps]]`` when fixed).

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.likelihoods import NoisyThreshold
    >>> lik = NoisyThreshold(eps=0.05)
    >>> lik
    NoisyThreshold(eps=0.05, eps_bounds=(1e-06, 0.5))
    >>> lik.params, lik.param_bounds
    (array([0.05]), array([[1.e-06, 5.e-01]]))
    >>> print(f"{lik.predict(0.0, 1.0):.3f} {lik.predict(-1e6, 1.0):.3f}")
    0.500 0.050
    >>> logZ, dlogZ, d2logZ, dlogZ_deps = lik.gauss_moments(-1, 3.0, 1.0)
    >>> print(f"{np.exp(logZ):.6f} {dlogZ_deps:.4f}")
    0.051215 19.4728
    >>> lik.with_params([0.2])
    NoisyThreshold(eps=0.2, eps_bounds=(1e-06, 0.5))
    """

    code = LIK_NOISY_THRESHOLD
    name = "noisy_threshold"
    has_derivatives = False
    log_concave = False
    param_names = ("eps",)
    _param = "eps"
    _range_text = "[0, 0.5]"

    @staticmethod
    def _admissible(value):
        return 0.0 <= value <= 0.5

    def __init__(self, eps=0.1, eps_bounds=(1e-6, 0.5)):
        self.eps = eps
        self.eps_bounds = eps_bounds
        self._validate()


class Step(Likelihood):
    """Noise-free step likelihood p(y | f) = H(y f), H(0) = 1/2.

    Not differentiable in f (use EP / ADF).  ``Z = Phi(y m / sqrt(v))``; at
    ``v == 0`` the point values are returned with zero m-derivatives: log Z = 0
    for y m > 0, log(1/2) at m == 0 and -inf for y m < 0 (where the v -> 0 limit
    of the derivatives diverges, as it does at m == 0).

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.likelihoods import Step
    >>> lik = Step()
    >>> print(np.round(lik.predict([-1.0, 0.0, 2.0], [1.0, 0.0, 0.0]), 4))
    [0.1587 0.5    1.    ]
    >>> print(lik.log_lik([1, 1], [-1.0, 1.0]))
    [-inf   0.]
    """

    code = LIK_STEP
    name = "step"
    has_derivatives = False

    def __init__(self):
        pass


_register(Probit, Logit, NoisyThreshold, Step)
