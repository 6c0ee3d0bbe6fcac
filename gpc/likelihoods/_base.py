"""The base class of the likelihoods, :class:`Likelihood`, with the shared handling
of a scalar parameter, the likelihoods' registry and :func:`get_likelihood`.

:class:`Likelihood` does the computations of every likelihood of one latent value
through the typed Cython kernels of ``src_c/_lik.pxd`` (:mod:`gpc._moments`),
selected by the class's ``LIK_*`` code; a subclass fixes the code, its parameters
and how its targets are checked.  The Gaussian integrals that have no closed form
are done by quadrature inside the kernels: a likelihood hands its rule to them
through :attr:`Likelihood.quad_x` and :attr:`Likelihood.quad_logw` (empty here;
:class:`gpc.likelihoods.Logit` gives the Gauss-Hermite rule of
:func:`gpc._moments.gauss_hermite`).
"""

import copy
import inspect
import numbers

import numpy as np

from .. import _model, _moments
from . import _numerical


#: Likelihood codes understood by the Cython kernels (``src_c/_lik.pxd``);
#: ``LIK_PYTHON`` marks a likelihood without compiled closed forms, whose
#: methods the loops call instead.
LIK_PYTHON = int(_model.PYTHON)
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


def _python_only(method):
    """A NotImplementedError for a method that a likelihood written in Python
    must define."""
    return NotImplementedError(
        f"a likelihood without compiled closed forms defines {method}: give the "
        "class a vectorised log_lik(y, f) (see CONTRIBUTING.md, 'Adding a "
        "likelihood')")


def _labels(y):
    y = np.asarray(y, dtype=np.float64)
    if not np.all((y == 1.0) | (y == -1.0)):
        bad = np.unique(y[~((y == 1.0) | (y == -1.0))])[:5]
        raise ValueError(f"labels y must be -1 or +1; got {bad.tolist()}")
    return y


def _real_targets(y):
    """Elementwise regression targets: any real numbers (NaN propagates)."""
    y = np.asarray(y)
    if y.dtype.kind not in "fiub":
        raise ValueError(f"targets y must be real numbers, got dtype {y.dtype}")
    return y.astype(np.float64, copy=False)


# The largest regression target accepted: the evidence sums squares of targets
# over the data divided by noise variances, 1e200 with room to spare for both.
_TARGET_MAX = 1e100


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


class LikelihoodBase:
    """Base of every likelihood: parameters and their conventions.

    What the likelihoods of one latent value per example
    (:class:`gpc.likelihoods.Likelihood`) and those of C
    (:class:`gpc.likelihoods.MultinomialLikelihood`) share: the scikit-learn
    style parameters and the vector of numerical parameters.

    Objects carry no fitted state: they are cheap to copy, picklable, and
    follow scikit-learn's parameter conventions (``get_params`` /
    ``set_params``; constructor arguments are stored untouched), so they can be
    estimator parameters and pass through :func:`sklearn.base.clone`.

    Attributes
    ----------
    name : str
        Short name, as accepted by :func:`~gpc.get_likelihood`.
    is_classification : bool
        True for the classification likelihoods (labels), False for the
        regression ones (real targets).
    multinomial : bool
        True for the likelihoods of C latent values (labels ``0 .. C - 1``),
        :class:`Softmax` and :class:`MultinomialProbit`; False for those of one
        latent value.
    param_names : tuple of str
        Names of the entries of :attr:`params`.
    """

    name = "likelihood"
    is_classification = True
    multinomial = False
    param_names = ()
    _abstract = True            # a base class, not a likelihood

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


class Likelihood(LikelihoodBase):
    """Base class of the likelihoods p(y | f): binary, y in {-1, +1}, or regression.

    The built-in subclasses fix a ``LIK_*`` code, whose compiled closed forms do
    the computations.  A likelihood written in Python subclasses this class,
    keeps ``code = LIK_PYTHON`` and defines :meth:`log_lik` only (vectorised, with
    broadcasting); :meth:`derivatives` then come from finite differences and
    :meth:`gauss_moments` and :meth:`predict` from quadrature, and every method
    that handles a likelihood of one latent value (Laplace, EP, PL, ADF, sparse
    EP) calls them.  It may override :meth:`derivatives` or
    :meth:`gauss_moments` with exact ones (same signature and return values);
    see "Adding a likelihood" in ``CONTRIBUTING.md``.  Parameters and their
    conventions as :class:`LikelihoodBase`.

    Attributes
    ----------
    code : int
        The ``LIK_*`` code passed to the Cython kernels (``LIK_PYTHON`` for a
        likelihood written in Python).
    name : str
        Short name, as accepted by :func:`~gpc.get_likelihood`.
    has_derivatives : bool
        Whether :meth:`derivatives` is available (needed by Laplace's method).
        True by default: set it to False for a log density that is not smooth
        in f.
    is_classification : bool
        True for the binary likelihoods (labels in {-1, +1}), False for the
        regression likelihoods :class:`Gaussian`, :class:`Laplace` and
        :class:`OneSidedExponential` (real targets).
    has_em_statistic : bool
        Whether :meth:`em_statistic` and :meth:`em_update` are available (the
        regression likelihoods).
    log_concave : bool
        Whether log p(y | f) is concave in f (all but the noisy threshold).
        Without it the posterior can be multimodal, Laplace's mode and EP's and
        PL's fixed points need not be unique, and which one a run reaches can
        change with the hyperparameters, so the evidence may jump there.
    """

    _abstract = True
    code = LIK_PYTHON
    has_derivatives = True
    has_em_statistic = False
    log_concave = True

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
        """Elementwise targets of the computations (any shape): labels +-1, or
        real numbers for a regression likelihood."""
        return _labels(y) if self.is_classification else _real_targets(y)

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
        if self.code == LIK_PYTHON:
            raise _python_only("log_lik")
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
        if self.code == LIK_PYTHON:
            out = _numerical.derivatives(self, y, f)
        else:
            out = _moments.loglik_derivs(self.code, y, f, self.params)
        return tuple(_shaped(a, shape) for a in out)

    def gauss_moments(self, y, m, v, power=None):
        """Moments of Z = int p(y | f)^power N(f; m, v) df.

        Parameters
        ----------
        y : array_like
            Labels in {-1, +1} (real targets for the regression likelihoods).
        m, v : array_like
            Mean and variance (``v >= 0``; ``v == 0`` gives point values) of f.
        power : array_like, optional
            Powers c in (0, 1] of the likelihood (the tempered likelihood of an
            example of weight c below 1, see :func:`gpc.inference.ep.ep`); 1
            when None.  Only for the likelihoods with ``tempers``.

        Returns
        -------
        logZ, dlogZ, d2logZ, dlogZ_dpar : ndarray or float
            ``log Z``, ``d log Z / dm``, ``d^2 log Z / dm^2`` and the derivative of
            ``log Z`` in the (first) likelihood parameter, zero when there is none.

        Examples
        --------
        >>> from gpc.likelihoods import get_likelihood
        >>> probit = get_likelihood("probit")
        >>> # A power of 1/2: a flatter likelihood, so a larger integral.
        >>> bool(probit.gauss_moments(1, -1.0, 0.5, power=0.5)[0]
        ...      > probit.gauss_moments(1, -1.0, 0.5)[0])
        True
        """
        self._validate()
        if power is not None:
            if not self.tempers:
                raise ValueError(f"the {self.name!r} likelihood has no tempered "
                                 "moments (power must be None).")
            shape, (y, m, v, c) = _flat(self._targets(y), m, _variances(v), power)
            if not np.all((c > 0.0) & (c <= 1.0)):
                raise ValueError(f"power must be in (0, 1], got {power!r}.")
            out = _moments.tempered_moments(self.code, y, m, v, c, self.params,
                                            self.quad_x, self.quad_logw)
            return tuple(_shaped(a, shape) for a in out)
        shape, (y, m, v) = _flat(self._targets(y), m, _variances(v))
        if self.code == LIK_PYTHON:
            out = _numerical.gauss_moments(self, y, m, v)
        else:
            out = _moments.gauss_moments(self.code, y, m, v, self.params,
                                         self.quad_x, self.quad_logw)
        return tuple(_shaped(a, shape) for a in out)

    @property
    def tempers(self):
        """Whether :meth:`gauss_moments` takes a ``power`` (the compiled
        likelihoods): EP then fits an example of weight below 1 with its
        likelihood raised to that weight."""
        return _moments.tempers(self.code)

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
        if self.code == LIK_PYTHON:
            if not self.is_classification:
                raise ValueError(f"the {self.name!r} likelihood is a regression "
                                 "likelihood: p(y = +1) is not defined.")
            return np.exp(self.gauss_moments(1.0, m, v)[0])
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

    def noise_moments(self):
        """Mean and variance of the noise ``y - f`` (regression likelihoods).

        Returns
        -------
        mean, variance : float
            What a regressor adds to the latent mean and variance to predict a
            target.

        Raises
        ------
        NotImplementedError
            For the classification likelihoods, and for a regression likelihood
            that does not define it.

        Examples
        --------
        >>> from gpc.likelihoods import OneSidedExponential
        >>> OneSidedExponential(rate=2.0).noise_moments()
        (0.5, 0.25)
        """
        raise NotImplementedError(f"the {self.name!r} likelihood gives no noise "
                                  "moments (mean and variance of y - f)")

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


def _check_count(value, name, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")


#: The likelihood classes by name, as :func:`get_likelihood` accepts them (and
#: lists them in its messages): each module of :mod:`gpc.likelihoods` adds its own
#: with :func:`_register`.
_REGISTRY = {}


def _register(*classes):
    """Make likelihood classes known to :func:`get_likelihood` by their ``name``."""
    for cls in classes:
        _REGISTRY[cls.name] = cls


def get_likelihood(spec):
    """Return a validated likelihood object from a name, class or instance.

    Parameters
    ----------
    spec : str, Likelihood subclass or Likelihood
        One of ``"probit"``, ``"logit"``, ``"noisy_threshold"``, ``"step"``,
        ``"gaussian"``, ``"laplace"``, ``"one_sided_exponential"``, and for the
        multinomial model ``"softmax"`` and ``"multinomial_probit"`` (case-insensitive;
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
    if isinstance(spec, LikelihoodBase):
        return copy.deepcopy(spec).validate()
    if isinstance(spec, type) and issubclass(spec, LikelihoodBase) and not vars(
            spec).get("_abstract"):
        return spec()
    if isinstance(spec, str):
        key = spec.strip().lower().replace("-", "_").replace(" ", "_")
        if key in _REGISTRY:
            return _REGISTRY[key]()
        raise ValueError(f"unknown likelihood {spec!r}; valid names are "
                         + ", ".join(repr(k) for k in _REGISTRY))
    raise TypeError("likelihood must be a name (" + ", ".join(repr(k) for k in _REGISTRY)
                    + f") or a Likelihood object, got {type(spec).__name__}")
