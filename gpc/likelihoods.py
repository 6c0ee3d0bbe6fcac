"""Likelihoods p(y | f) for binary Gaussian process classification (and regression).

Labels are ``y`` in {-1, +1} and ``f`` is the latent function value.  With
``z = y * f``:

============================  ==================================================  ===========
class                         p(y | f)                                              derivatives
============================  ==================================================  ===========
:class:`Probit`               Phi(z)                                                yes
:class:`Logit`                sigma(z) = 1 / (1 + exp(-z))                          yes
:class:`NoisyThreshold`       eps + (1 - 2 eps) H(z)                                no
:class:`Step`                 H(z)                                                  no
:class:`Gaussian`             N(y; f, s2), y real (regression)                      yes
:class:`Laplace`              (lam/2) exp(-lam ``|y - f|``), y real (regression)    no
:class:`OneSidedExponential`  lam exp(-lam (y - f)) for y > f, else 0               no
============================  ==================================================  ===========

(``H`` is the Heaviside step with H(0) = 1/2.)  The last three are regression
likelihoods, with real targets ``y``.  With :class:`Gaussian` the approximate methods
must reproduce exact GP regression, which makes it a test bed for them;
:class:`Laplace` (robust regression) and :class:`OneSidedExponential` (the noise
``y - f`` is exponential, so f lies below every target: Csató & Opper's sparse
online GP example) are the non-Gaussian ones.  Every likelihood offers

* ``log_lik(y, f)`` and, when differentiable, ``derivatives(y, f)`` (log p and
  its first three derivatives in f, used by Laplace's method);
* ``gauss_moments(y, m, v)``: log Z with Z = int p(y | f) N(f; m, v) df, its first
  two derivatives in m and its derivative in the likelihood parameter (EP, ADF);
* ``predict(m, v)``: p(y = +1) with f ~ N(m, v) (classification likelihoods only);
* ``check_targets(y, n)``: validation of training targets (labels in {-1, +1} for
  the classification likelihoods, finite reals for the regression ones);
* for the regression likelihoods, ``em_statistic(y, m, v)`` and ``em_update(y, m, v)``:
  the EM (M-step) update of the noise parameter with the site distributions fixed.

The numerical work happens in the typed Cython kernels of ``src_c/_lik.pxd``
(also used by the inference loops); the classes only validate, broadcast and
call them.  All results are stable far into the tails: ``|m| / sqrt(1 + v)`` or
``|f|`` of 1e3 and beyond give finite values wherever the true value is finite.

Examples
--------
>>> import numpy as np
>>> from gpc.likelihoods import get_likelihood
>>> lik = get_likelihood("probit")
>>> print(np.round(lik.predict([0.0, 1.0], [1.0, 3.0]), 4))
[0.5    0.6915]
"""

import copy
import inspect
import numbers

import numpy as np
from scipy.special import expit, ndtr, ndtri
from scipy.stats import qmc

from . import _moments, _softmax

__all__ = [
    "Likelihood",
    "Probit",
    "Logit",
    "NoisyThreshold",
    "Step",
    "Gaussian",
    "Laplace",
    "OneSidedExponential",
    "Softmax",
    "NotDifferentiableError",
    "get_likelihood",
    "softmax",
    "log_normaliser",
    "LIK_PROBIT",
    "LIK_LOGIT",
    "LIK_NOISY_THRESHOLD",
    "LIK_STEP",
    "LIK_GAUSSIAN",
    "LIK_LAPLACE",
    "LIK_ONE_SIDED",
]

#: Likelihood codes understood by the Cython kernels (``src_c/_lik.pxd``).
LIK_PROBIT = int(_moments.LIK_PROBIT)
LIK_LOGIT = int(_moments.LIK_LOGIT)
LIK_NOISY_THRESHOLD = int(_moments.LIK_NOISY_THRESHOLD)
LIK_STEP = int(_moments.LIK_STEP)
LIK_GAUSSIAN = int(_moments.LIK_GAUSSIAN)
LIK_LAPLACE = int(_moments.LIK_LAPLACE)
LIK_ONE_SIDED = int(_moments.LIK_ONE_SIDED)

_EMPTY = np.zeros(0)
_EMPTY.flags.writeable = False


class NotDifferentiableError(ValueError, NotImplementedError):
    """Raised when derivatives in f are requested from a step-like likelihood.

    It subclasses both :class:`ValueError` and :class:`NotImplementedError`, so
    either can be caught.
    """


def _labels(y):
    y = np.asarray(y, dtype=np.float64)
    if not np.all((y == 1.0) | (y == -1.0)):
        bad = np.unique(y[~((y == 1.0) | (y == -1.0))])[:5]
        raise ValueError(f"labels y must be -1 or +1; got {bad.tolist()}")
    return y


# The largest regression target accepted: the evidence sums squares of targets
# over the data divided by noise variances, 1e200 with room to spare for both.
_TARGET_MAX = 1e100


def _real_targets(y):
    """Elementwise regression targets: any real numbers (NaN propagates)."""
    y = np.asarray(y)
    if y.dtype.kind not in "fiub":
        raise ValueError(f"targets y must be real numbers, got dtype {y.dtype}")
    return y.astype(np.float64, copy=False)


def _variances(v):
    v = np.asarray(v, dtype=np.float64)
    if np.any(v < 0):
        raise ValueError("variances v must be non-negative")
    return v


def _flat(*arrays):
    """Broadcast, then return the shape and contiguous float64 1-D copies."""
    b = np.broadcast_arrays(*[np.asarray(a, dtype=np.float64) for a in arrays])
    shape = b[0].shape
    return shape, [np.ascontiguousarray(a).reshape(-1) for a in b]


def _shaped(out, shape):
    """Give the kernel output the broadcast shape (a NumPy scalar for 0-d input)."""
    return out.reshape(shape)[()]


class Likelihood:
    """Base class of the likelihoods p(y | f): binary, y in {-1, +1}, or regression.

    Subclasses only fix the kernel code and the parameters; the computations are
    shared.  Objects carry no fitted state: they are cheap to copy, picklable, and
    follow scikit-learn's parameter conventions (``get_params`` / ``set_params``;
    constructor arguments are stored untouched), so they can be estimator
    parameters and pass through :func:`sklearn.base.clone`.

    Attributes
    ----------
    code : int
        The ``LIK_*`` code passed to the Cython kernels.
    name : str
        Short name, as accepted by :func:`~gpc.get_likelihood`.
    has_derivatives : bool
        Whether :meth:`derivatives` is available (needed by Laplace's method).
    is_classification : bool
        True for the binary likelihoods (labels in {-1, +1}), False for the
        regression likelihoods :class:`Gaussian`, :class:`Laplace` and
        :class:`OneSidedExponential` (real targets).
    multinomial : bool
        True for :class:`Softmax`, the likelihood of C latent values (labels
        ``0 .. C - 1``); False for the others, of one latent value.
    has_em_statistic : bool
        Whether :meth:`em_statistic` and :meth:`em_update` are available (the
        regression likelihoods).
    log_concave : bool
        Whether log p(y | f) is concave in f (all but the noisy threshold).
        Without it the posterior can be multimodal, Laplace's mode and EP's and
        PL's fixed points need not be unique, and which one a run reaches can
        change with the hyperparameters, so the evidence may jump there.
    param_names : tuple of str
        Names of the entries of :attr:`params`.
    """

    code = -1
    name = "likelihood"
    has_derivatives = False
    is_classification = True
    has_em_statistic = False
    log_concave = True
    multinomial = False
    param_names = ()

    # --- scikit-learn style parameters -----------------------------------------
    @classmethod
    def _get_param_names(cls):
        sig = inspect.signature(cls.__init__)
        return sorted(p.name for p in sig.parameters.values()
                      if p.name != "self" and p.kind is not p.VAR_KEYWORD
                      and p.kind is not p.VAR_POSITIONAL)

    def get_params(self, deep=True):
        """Constructor arguments as a dict (``deep`` is accepted for compatibility)."""
        return {k: getattr(self, k) for k in self._get_param_names()}

    def set_params(self, **params):
        """Set constructor arguments, validate them and return ``self``.

        Raises
        ------
        ValueError
            For an unknown argument name or an invalid value (the object is then
            left unchanged).
        """
        valid = self._get_param_names()
        for k in params:
            if k not in valid:
                raise ValueError(f"invalid parameter {k!r} for {type(self).__name__}; "
                                 f"valid parameters: {valid}")
        old = {k: getattr(self, k) for k in params}
        for k, val in params.items():
            setattr(self, k, val)
        try:
            self._validate()
        except Exception:
            for k, val in old.items():
                setattr(self, k, val)
            raise
        return self

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def _validate(self):
        """Check the constructor arguments; raise ValueError/TypeError if invalid."""

    def validate(self):
        """Check the constructor arguments and return ``self``.

        Raises
        ------
        ValueError or TypeError
            If an argument is invalid.
        """
        self._validate()
        return self

    # --- parameters passed to the kernels -------------------------------------
    @property
    def params(self):
        """Likelihood parameters as a new float64 array (empty when there are none)."""
        return np.zeros(0)

    @property
    def param_bounds(self):
        """Bounds of :attr:`params`, shape ``(len(params), 2)``."""
        return np.zeros((0, 2))

    def with_params(self, params):
        """Return a copy whose :attr:`params` are ``params`` (validated)."""
        params = np.asarray(params, dtype=np.float64).reshape(-1)
        if params.shape[0] != len(self.param_names):
            raise ValueError(f"{type(self).__name__} has {len(self.param_names)} "
                             f"parameter(s), got {params.shape[0]}")
        new = copy.deepcopy(self)
        if len(self.param_names):
            new.set_params(**{k: float(p) for k, p in zip(self.param_names, params)})
        return new

    @property
    def quad_x(self):
        """Gauss-Hermite nodes for the kernels (empty unless a rule is used)."""
        return _EMPTY

    @property
    def quad_logw(self):
        """Log Gauss-Hermite weights for the kernels (empty unless a rule is used)."""
        return _EMPTY

    # --- targets -------------------------------------------------------------
    def _targets(self, y):
        """Elementwise targets of the computations (any shape): labels +-1 here."""
        return _labels(y)

    def check_targets(self, y, n=None):
        """Validate training targets and return them as a contiguous float64 array.

        Classification likelihoods accept exactly the labels -1 and +1; the
        regression likelihoods accept finite real numbers up to 1e100 in size.

        Parameters
        ----------
        y : array_like of shape (n,)
            Targets (1-D, numeric).
        n : int, optional
            Required length (the number of training points).

        Returns
        -------
        ndarray of shape (n,)
            C-contiguous float64 copy (or view) of ``y``.

        Raises
        ------
        ValueError
            If ``y`` is not 1-D or not numeric, has the wrong length, or holds a
            value the likelihood does not accept.

        Examples
        --------
        >>> from gpc.likelihoods import Gaussian, Probit
        >>> Probit().check_targets([1, -1, 1], 3)
        array([ 1., -1.,  1.])
        >>> Gaussian().check_targets([0.5, -2.0])
        array([ 0.5, -2. ])
        """
        cls = self.is_classification
        what = "labels" if cls else "targets"
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D, got shape {y.shape}.")
        if y.dtype.kind not in "fiub":
            if cls:
                raise ValueError(f"y must contain the numbers -1 and +1, got dtype "
                                 f"{y.dtype}.")
            raise ValueError(f"y must contain real numbers (regression targets for the "
                             f"{self.name!r} likelihood), got dtype {y.dtype}.")
        y = np.ascontiguousarray(y, dtype=np.float64)
        if n is not None and y.shape[0] != n:
            raise ValueError(f"y has {y.shape[0]} {what} but {n} were expected "
                             f"(K is {n} x {n}).")
        if cls:
            bad = (y != 1.0) & (y != -1.0)
            if bad.any():
                raise ValueError(
                    f"y must contain only -1 and +1 (found {float(y[bad][0])!r}); "
                    "map two classes c0 < c1 to -1, +1 first."
                )
        else:
            bad = ~np.isfinite(y)
            if bad.any():
                raise ValueError(f"y must contain finite real numbers (found "
                                 f"{float(y[bad][0])!r}).")
            big = np.abs(y) > _TARGET_MAX
            if big.any():
                raise ValueError(
                    f"y holds {float(y[big][0])!r}: regression targets beyond "
                    f"{_TARGET_MAX:g} in size overflow float64 in the evidence (its "
                    "sums of squares); scale them, e.g. to (y - mean) / std.")
        return y

    # --- computations ----------------------------------------------------------
    def log_lik(self, y, f):
        """log p(y | f), elementwise with broadcasting.

        Parameters
        ----------
        y : array_like
            Labels in {-1, +1} (real targets for the regression likelihoods).
        f : array_like
            Latent values.

        Returns
        -------
        ndarray or float
            ``log p(y | f)`` in the broadcast shape.
        """
        self._validate()
        shape, (y, f) = _flat(self._targets(y), f)
        return _shaped(_moments.log_lik(self.code, y, f, self.params), shape)

    def derivatives(self, y, f):
        """log p(y | f) and its first three derivatives with respect to f.

        Parameters
        ----------
        y : array_like
            Labels in {-1, +1} (real targets for the regression likelihoods).
        f : array_like
            Latent values.

        Returns
        -------
        lp, d1, d2, d3 : ndarray or float
            ``log p``, ``d log p / df``, ``d^2 log p / df^2`` and
            ``d^3 log p / df^3`` in the broadcast shape.

        Raises
        ------
        NotDifferentiableError
            (a subclass of both ValueError and NotImplementedError) for likelihoods
            without derivatives: Laplace's method needs a differentiable
            likelihood, use EP or ADF for those.
        """
        self._validate()
        if not self.has_derivatives:
            raise NotDifferentiableError(
                f"the {self.name!r} likelihood has no derivatives in f: Laplace's "
                "method needs a differentiable likelihood ('probit' or 'logit'); use "
                "EP or ADF with this one")
        shape, (y, f) = _flat(self._targets(y), f)
        out = _moments.loglik_derivs(self.code, y, f, self.params)
        return tuple(_shaped(a, shape) for a in out)

    def gauss_moments(self, y, m, v):
        """Moments of Z = int p(y | f) N(f; m, v) df.

        Parameters
        ----------
        y : array_like
            Labels in {-1, +1} (real targets for the regression likelihoods).
        m, v : array_like
            Mean and variance (``v >= 0``; ``v == 0`` gives point values) of f.

        Returns
        -------
        logZ, dlogZ, d2logZ, dlogZ_dpar : ndarray or float
            ``log Z``, ``d log Z / dm``, ``d^2 log Z / dm^2`` and the derivative of
            ``log Z`` in the (first) likelihood parameter, zero when there is none.
        """
        self._validate()
        shape, (y, m, v) = _flat(self._targets(y), m, _variances(v))
        out = _moments.gauss_moments(self.code, y, m, v, self.params,
                                     self.quad_x, self.quad_logw)
        return tuple(_shaped(a, shape) for a in out)

    def predict(self, m, v):
        """Predictive probability p(y = +1) = E[p(+1 | f)] for f ~ N(m, v).

        Parameters
        ----------
        m, v : array_like
            Mean and variance (``v >= 0``) of the latent value.

        Returns
        -------
        ndarray or float
            Probabilities in the broadcast shape of ``m`` and ``v``.
        """
        self._validate()
        shape, (m, v) = _flat(m, _variances(v))
        out = _moments.predict(self.code, m, v, self.params, self.quad_x, self.quad_logw)
        return _shaped(out, shape)

    # --- EM for the likelihood parameter ------------------------------------------
    def em_statistic(self, y, m, v):
        """Tilted expectation of the likelihood's sufficient statistic (for EM).

        The expectation is under the tilted distribution
        ``p_t(f) = p(y | f) N(f; m, v) / Z``, the exact posterior of f for one site
        with prior ``N(m, v)`` (a Gaussian approximation of it would give the
        one-sided likelihood ``log p = -inf`` with positive probability):

        * :class:`Gaussian`: ``E_t[(y - f)^2] = (y - m_t)^2 + v_t``;
        * :class:`Laplace`: ``E_t[|y - f|]``;
        * :class:`OneSidedExponential`: ``E_t[y - f]``.

        The M-step of EM (Csató & Opper 2002, sec. 3), maximising
        ``sum_i E_t[log p(y_i | f_i)]`` over the parameter with the distributions
        fixed, is closed-form in the mean of these statistics (see
        :meth:`em_update`).  At ``v == 0`` the point value at f = m is returned
        (for the one-sided likelihood ``max(y - m, 0)``, the limit v -> 0).

        Parameters
        ----------
        y : array_like
            Real targets.
        m, v : array_like
            Mean and variance (``v >= 0``) of f under the site's prior (cavity) or
            current marginal.

        Returns
        -------
        ndarray or float
            The statistics, in the broadcast shape of ``y``, ``m`` and ``v``.

        Raises
        ------
        NotImplementedError
            For the classification likelihoods (``has_em_statistic`` is False).

        Examples
        --------
        >>> from gpc.likelihoods import Laplace
        >>> lik = Laplace(rate=2.0)
        >>> print(round(float(lik.em_statistic(1.0, 1.0, 0.0)), 6))  # y = m, v = 0
        0.0
        >>> print(round(float(lik.em_statistic(1.0, 1.0, 1.0)), 6))
        0.373216
        """
        self._validate()
        if not self.has_em_statistic:
            raise NotImplementedError(
                f"the {self.name!r} likelihood has no EM statistic (available for "
                "the regression likelihoods 'gaussian', 'laplace' and "
                "'one_sided_exponential')")
        shape, (y, m, v) = _flat(self._targets(y), m, _variances(v))
        out = _moments.em_statistic(self.code, y, m, v, self.params)
        return _shaped(out, shape)

    def _em_parameter(self, mean_stat):
        """The M-step parameter value from the mean of :meth:`em_statistic`."""
        raise NotImplementedError

    def em_update(self, y, m, v):
        """One EM M-step for the likelihood parameter, as a new likelihood.

        With the site distributions ``N(m_i, v_i)`` fixed, maximises
        ``sum_i E_t[log p(y_i | f_i)]`` (tilted expectations, see
        :meth:`em_statistic`) over the parameter: ``noise_variance =
        mean(stat)`` for :class:`Gaussian`, ``rate = 1 / mean(stat)`` for
        :class:`Laplace` and :class:`OneSidedExponential`.  The value is clipped to
        the parameter bounds (with fixed bounds the parameter is unchanged).
        Alternating it with the inference (e.g. refitting the sparse online GP)
        gives EM.

        Parameters
        ----------
        y : array_like
            Real targets (at least one).
        m, v : array_like
            Means and variances (``v >= 0``) of the latent values, broadcast
            against ``y``.

        Returns
        -------
        Likelihood
            A new likelihood of the same class with the updated parameter.

        Raises
        ------
        NotImplementedError
            For the classification likelihoods.
        ValueError
            For empty input or a non-finite mean statistic (e.g. NaN targets).

        Examples
        --------
        >>> from gpc.likelihoods import Gaussian, Laplace
        >>> y, m = [1.5, 0.75, 1.25], 1.0          # |y - m| averages 1/3
        >>> print(f"{Laplace().em_update(y, m, 0.0).rate:.6f}")
        3.000000
        >>> print(f"{Gaussian().em_update(y, m, 0.0).noise_variance:.6f}")
        0.125000
        >>> Laplace(rate_bounds=(0.1, 2.0)).em_update(y, m, 0.0).rate   # clipped
        2.0
        >>> Laplace(rate=5.0, rate_bounds="fixed").em_update(y, m, 0.0).rate
        5.0
        """
        stat = np.asarray(self.em_statistic(y, m, v), dtype=np.float64).reshape(-1)
        if stat.size == 0:
            raise ValueError("em_update needs at least one target")
        mean = float(np.mean(stat))
        if not np.isfinite(mean):
            raise ValueError(f"the mean EM statistic is not finite ({mean!r}); check "
                             "the targets, means and variances")
        lo, hi = self.param_bounds[0]
        value = min(max(self._em_parameter(mean), lo), hi)
        return self.with_params([value])


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


class _ScalarParameter(Likelihood):
    """Shared handling of a likelihood with one scalar parameter: its value, its
    bounds (a pair or "fixed") and their validation.

    Subclasses set ``_param`` (the attribute name), ``_admissible`` (a predicate on
    values) and ``_range_text`` (how the admissible range reads in messages).
    """

    _param = None
    _range_text = ""

    @staticmethod
    def _admissible(value):
        raise NotImplementedError

    def _bounds(self):
        name = self._param
        b = getattr(self, name + "_bounds")
        if isinstance(b, str):
            if b != "fixed":
                raise ValueError(f"{name}_bounds must be a pair or 'fixed', got {b!r}")
            value = float(getattr(self, name))
            return value, value
        try:
            lo, hi = (float(x) for x in b)
        except (TypeError, ValueError):
            raise ValueError(f"{name}_bounds must be a pair (low, high) or 'fixed', "
                             f"got {b!r}") from None
        if not (lo <= hi and self._admissible(lo) and self._admissible(hi)):
            raise ValueError(f"{name}_bounds must satisfy low <= high, both in "
                             f"{self._range_text}, got {b!r}")
        return lo, hi

    def _validate(self):
        name = self._param
        value = getattr(self, name)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name} must be a real number, got {value!r}")
        value = float(value)
        if not self._admissible(value):
            raise ValueError(f"{name} must lie in {self._range_text}, got {value!r}")
        lo, hi = self._bounds()
        if not lo <= value <= hi:
            raise ValueError(f"{name}={value!r} lies outside {name}_bounds="
                             f"{getattr(self, name + '_bounds')!r}: give bounds that "
                             f"hold it (within {self._range_text}), or "
                             f"{name}_bounds='fixed'")

    @property
    def params(self):
        """``[value]`` as a new float64 array."""
        return np.array([float(getattr(self, self._param))])

    @property
    def param_bounds(self):
        """``[[low, high]]`` from the bounds (``[[value, value]]`` when fixed)."""
        return np.array([self._bounds()])


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

    def _targets(self, y):
        """Elementwise targets: any real numbers (NaN propagates)."""
        return _real_targets(y)

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


def softmax(F, axis=0, overwrite=False):
    """Class probabilities ``exp(F) / sum(exp(F))`` along ``axis``, without overflow
    (computed in F itself with ``overwrite`` and a float64 array F).

    Examples
    --------
    >>> from gpc.likelihoods import softmax
    >>> softmax([[0.0, 1000.0], [0.0, 0.0]]).round(3)
    array([[0.5, 1. ],
           [0.5, 0. ]])
    """
    F = np.asarray(F, dtype=np.float64)
    P = F if overwrite else F.copy()
    P -= np.max(P, axis=axis, keepdims=True)
    np.exp(P, out=P)
    P /= np.sum(P, axis=axis, keepdims=True)
    return P


def log_normaliser(F, axis=0):
    """``log(sum(exp(F)))`` along ``axis``, without overflow."""
    F = np.asarray(F, dtype=np.float64)
    top = np.max(F, axis=axis, keepdims=True)
    return np.squeeze(top, axis) + np.log(np.sum(np.exp(F - top), axis=axis))


class Softmax(Likelihood):
    """Multinomial likelihood of C latent values: ``p(y = c | f) = softmax(f)_c``.

    The likelihood of ``GaussianProcessClassifier(multi_class="multinomial")``
    and of :func:`gpc.infer` with ``likelihood="softmax"``: one latent function
    per class, labels ``0 .. C - 1``.  With two classes it is the logit
    likelihood of ``f_1 - f_0``.

    Parameters
    ----------
    n_classes : int or None, default=None
        The number of classes C.  None takes it from the data: the number of
        kernel matrices given to :func:`gpc.infer`, or else the largest label
        plus one.
    n_points : int or None, default=None
        Points of the quasi-Monte Carlo rule of :meth:`predict` (a power of 2),
        shared by the C classes.  None chooses by the number of classes: 1 for
        two (the rule is then exact), 2^11 for three, 2^12 for four, 2^13 for
        five to ten, 2^14 for 11 to 15 and 2^15 from 16.

    Notes
    -----
    :meth:`predict` integrates one direction per class exactly and the others
    by quasi-Monte Carlo.  With ``G = P cov P`` the covariance in the C - 1
    directions that change the softmax (``P`` the projection orthogonal to
    ``(1, ..., 1)``; ``softmax(f + t 1) = softmax(f)``) and ``v_c = P e_c``
    the direction that moves class c against all the others, ``f - mean``
    splits into an independent normal term ``tau_c v_c`` of variance
    ``s_c^2 = 1 / (G^+)_cc`` (the largest such variance) and a remainder
    ``y_c``.  As ``softmax(f)_c = sigma(f_c - logsumexp(f_{-c}))`` and the
    term moves ``f_c - logsumexp(f_{-c})`` by ``tau_c``,

        p_c = E[Lambda(mean_c + y_cc - logsumexp(mean_{-c} + y_{c,-c}), s_c^2)],

    where ``Lambda(a, v) = E[sigma(a + sqrt(v) z)]`` is the logistic-normal
    integral (read from a table built once from the normal scale mixture of
    the logistic, within 1e-8).  The remaining expectation is an average over
    a fixed scrambled Sobol' point set (seed 0) mapped through the normal
    quantile function and the principal axes of ``G`` in decreasing
    variance, the same points for every class.  The C integrands, ``h_c``,
    sum to a function ``1 + z`` whose mean is exactly 1, so ``z`` is a
    control variate: each class's average is corrected by its regression on
    ``z``, with the slope estimated from the same points (and saturated at 4
    in size); the C results, clipped at zero, are divided by their sum.  The
    rule is deterministic and smooth in the mean and covariance, gives
    ``softmax(mean)`` for a zero covariance and, for two classes (where the
    remainder vanishes), the logistic-normal integral of ``f_1 - f_0``.  Its
    error grows with the latent variance, as the softmax approaches a step,
    and with C; the default numbers of points keep it within 1e-3 of long
    Monte Carlo averages on the predictive distributions of the wine and
    digits fits of ``bench/bench_multinomial.py`` (see ``bench/RESULTS.md``),
    where the latent variances reach several hundred.  The cost is
    ``n_points * C`` exponentials, logarithms and table look-ups per test
    point, in loops over blocks of points that the compiler vectorises.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.likelihoods import Softmax
    >>> p = Softmax().predict(np.zeros((1, 3)), np.eye(3)[None])
    >>> p.round(3)
    array([[0.333, 0.333, 0.333]])
    """

    name = "softmax"
    has_derivatives = True
    multinomial = True

    def __init__(self, n_classes=None, n_points=None):
        self.n_classes = n_classes
        self.n_points = n_points
        self._validate()

    def _validate(self):
        if self.n_classes is not None:
            _check_count(self.n_classes, "n_classes", 2)
        if self.n_points is not None:
            _check_count(self.n_points, "n_points", 1)
            if self.n_points & (self.n_points - 1):
                raise ValueError(f"n_points must be a power of 2, got {self.n_points}.")

    def check_targets(self, y, n=None):
        """Integer labels ``0, 1, ..., C - 1`` as an int64 array (ValueError otherwise)."""
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D, got shape {y.shape}.")
        if n is not None and y.shape[0] != n:
            raise ValueError(f"y has {y.shape[0]} labels but {n} were expected.")
        if y.dtype.kind not in "iub" and not (
                y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y))):
            raise ValueError("y must hold integer class labels 0 .. C - 1, got "
                             f"dtype {y.dtype}.")
        top = self.n_classes
        # Checked in y's own type: a uint64 label of 2**63 or more would wrap.
        if y.size and (y.min() < 0 or y.max() >= (2 ** 31 if top is None else top)):
            raise ValueError(f"y must hold labels 0 .. {'C' if top is None else top} - 1,"
                             f" got {int(y.min())} .. {int(y.max())}.")
        return y.astype(np.int64)

    def log_lik(self, y, F):
        """``log p(y_i | f_i)`` for labels y (n,) and latent values F (C, n)."""
        F = np.asarray(F, dtype=np.float64)
        y = self.check_targets(y, F.shape[1])
        return F[y, np.arange(F.shape[1])] - log_normaliser(F)

    def _binary_only(self, *args, **kwargs):
        raise TypeError("the softmax likelihood has C latent values per example: it "
                        "has no one-dimensional moments or derivatives.")

    derivatives = gauss_moments = em_statistic = em_update = _binary_only

    def predict(self, mean, cov):
        """Class probabilities ``E[softmax(f)]`` for ``f ~ N(mean, cov)``.

        Parameters
        ----------
        mean : array_like of shape (m, C)
        cov : array_like of shape (m, C, C)
            Symmetric positive semi-definite (negative eigenvalues from rounding
            are set to zero).

        Returns
        -------
        ndarray of shape (m, C)
            Rows summing to 1.

        Raises
        ------
        ValueError
            If the shapes disagree or a mean or covariance is not finite.
        """
        self._validate()
        mean = np.asarray(mean, dtype=np.float64)
        cov = np.asarray(cov, dtype=np.float64)
        m, C = mean.shape
        if cov.shape != (m, C, C):
            raise ValueError(f"cov must have shape {(m, C, C)}, got {cov.shape}.")
        for name, a in (("mean", mean), ("cov", cov)):
            bad = ~np.isfinite(a).reshape(m, -1).all(axis=1)
            if bad.any():
                raise ValueError(f"{name} is not finite for {int(bad.sum())} of the "
                                 f"{m} points (the first: row {int(np.argmax(bad))}).")
        n_points = int(self.n_points or _default_points(C))
        return _softmax_rule(mean, cov, _normal_points(C - 1, n_points))


def _softmax_rule(mean, cov, points):
    """:meth:`Softmax.predict` with the standard normal points given, (C - 1, n)."""
    C = mean.shape[1]
    # softmax(f + t 1) = softmax(f): only the covariance orthogonal to 1
    # matters, C - 1 directions, taken in decreasing variance so that the
    # first (best spread) coordinates of the point set carry the most.
    basis = np.linalg.qr(np.eye(C) - 1.0 / C)[0][:, :C - 1]   # orthonormal, 1-free
    w, V = np.linalg.eigh(basis.T @ cov @ basis)
    w, V = w[:, ::-1], basis @ V[:, :, ::-1]
    # Variances below 1e-13 of the largest are raised to it (a covariance
    # changed by that much): G^+ then exists.
    w = np.maximum(w, np.maximum(1e-13 * w[:, :1], 1e-200))
    R = V * np.sqrt(w)[:, None, :]                  # f = mean + R u
    QV = V / np.sqrt(w)[:, None, :]
    s2 = 1.0 / np.einsum("ick,ick->ic", QV, QV)     # 1 / (G^+)_cc
    Q = QV * s2[:, :, None]                         # tau_c = Q_c u
    tv, td, X = _logistic_normal_table()
    sums = _softmax.rb_sums(np.ascontiguousarray(mean), np.ascontiguousarray(R),
                            np.ascontiguousarray(R - Q), np.ascontiguousarray(s2),
                            np.ascontiguousarray(points, dtype=np.float64), tv, td, X)
    return _combine(sums, points.shape[1])


def _combine(sums, n):
    """Class probabilities from the sums of :func:`gpc._softmax.rb_sums` over n points.

    Each class's average of ``h_c`` is corrected by its regression on the control
    variate ``z = sum_c h_c - 1``, whose mean is known to be 0; the results,
    clipped at 0, are divided by their sum.  The slopes sum to 1, so the
    corrected averages already do.  Each slope b is used as
    ``b / (1 + (b / 4)^8)^(1/8)``, smooth, within 1e-8 of b up to 0.5 in size
    and never above 4: a ``z`` nearly constant, whose average is then the
    table's error rather than the rule's, cannot be amplified.
    """
    C = (sums.shape[1] - 2) // 2
    h = sums[:, :C] / n
    z = sums[:, 2 * C] / n
    var = np.maximum(sums[:, 2 * C + 1] / n - z * z, 0.0)
    beta = (sums[:, C:2 * C] / n - h * z[:, None]) / (var + 1e-300)[:, None]
    t = np.abs(beta) / 4.0
    beta = np.where(t <= 1.0, beta / (1.0 + np.minimum(t, 1.0) ** 8) ** 0.125,
                    4.0 * np.sign(beta) / (1.0 + np.maximum(t, 1.0) ** -8) ** 0.125)
    p = np.maximum(h - beta * z[:, None], 0.0)
    return p / p.sum(axis=1, keepdims=True)


def _default_points(C):
    """The default ``n_points`` of :meth:`Softmax.predict` for C classes."""
    if C == 2:
        return 1
    return 1 << (11 if C == 3 else 12 if C == 4 else 13 if C <= 10 else
                 14 if C <= 15 else 15)


_TABLE = []


def _logistic_normal_table():
    """The table of ``Lambda(a, v) = E[sigma(a + sqrt(v) z)]`` read by the softmax
    predictive: values and (node spacing times) x-derivatives on a grid of
    ``r = v / (v + pi^2 / 3)`` in [0, 1] (65 nodes) by ``x = a / sqrt(v + pi^2 / 3)``
    in [-X, X] (1025 nodes), and X; built once from the 64-node normal scale
    mixture of the logistic, ``sigma(z) = E[Phi(z / sqrt(tau))]``."""
    if not _TABLE:
        X, nr, nx = 16.0, 65, 1025
        tau, logw = _moments.scale_mixture_rule()
        weight = np.exp(logw)
        x = np.linspace(-X, X, nx)[:, None]
        values, derivs = np.empty((nr, nx)), np.empty((nr, nx))
        for i, r in enumerate(np.linspace(0.0, 1.0, nr)):
            # a / sqrt(tau + v) = x / sqrt(tau (1 - r) 3 / pi^2 + r)
            scale = np.sqrt(tau * (1.0 - r) * (3.0 / np.pi ** 2) + r)
            z = x / scale
            values[i] = (weight * ndtr(z)).sum(-1)
            derivs[i] = ((weight / scale) * np.exp(-0.5 * z * z)).sum(-1)
        derivs *= (2.0 * X / (nx - 1)) / np.sqrt(2.0 * np.pi)
        values.setflags(write=False)
        derivs.setflags(write=False)
        _TABLE.extend([values, derivs, X])
    return _TABLE[0], _TABLE[1], _TABLE[2]


_POINTS = {}


def _normal_points(d, n):
    """n standard normal points in d dimensions, one column each (d, n): scrambled
    Sobol' (seed 0), cached."""
    Z = _POINTS.get((d, n))
    if Z is None:
        u = qmc.Sobol(d, scramble=True, seed=0).random_base2(int(n).bit_length() - 1)
        Z = _POINTS[(d, n)] = np.ascontiguousarray(ndtri(u).T)
        Z.setflags(write=False)
    return Z


def _check_count(value, name, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")


_REGISTRY = {
    "probit": Probit,
    "logit": Logit,
    "noisy_threshold": NoisyThreshold,
    "step": Step,
    "gaussian": Gaussian,
    "laplace": Laplace,
    "one_sided_exponential": OneSidedExponential,
    "softmax": Softmax,
}


def get_likelihood(spec):
    """Return a validated likelihood object from a name, class or instance.

    Parameters
    ----------
    spec : str, Likelihood subclass or Likelihood
        One of ``"probit"``, ``"logit"``, ``"noisy_threshold"``, ``"step"``,
        ``"gaussian"``, ``"laplace"``, ``"one_sided_exponential"`` (case-insensitive;
        "-" or " " may replace "_"), a likelihood class (instantiated with
        defaults), or an instance.

    Returns
    -------
    Likelihood
        A new object: for an instance, a validated deep copy (so callers may
        modify it without touching the caller's object).

    Raises
    ------
    ValueError
        For an unknown name or an invalid instance.
    TypeError
        For anything else.

    Examples
    --------
    >>> from gpc.likelihoods import get_likelihood, Logit
    >>> get_likelihood("Logit")
    Logit(gh_order=64, predictive='quadrature')
    >>> get_likelihood(Logit(gh_order=32))
    Logit(gh_order=32, predictive='quadrature')
    """
    if isinstance(spec, Likelihood):
        return copy.deepcopy(spec).validate()
    if isinstance(spec, type) and issubclass(spec, Likelihood) and spec is not Likelihood:
        return spec()
    if isinstance(spec, str):
        key = spec.strip().lower().replace("-", "_").replace(" ", "_")
        if key in _REGISTRY:
            return _REGISTRY[key]()
        raise ValueError(f"unknown likelihood {spec!r}; valid names are "
                         + ", ".join(repr(k) for k in _REGISTRY))
    raise TypeError("likelihood must be a name (" + ", ".join(repr(k) for k in _REGISTRY)
                    + f") or a Likelihood object, got {type(spec).__name__}")
