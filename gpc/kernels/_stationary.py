"""The stationary radial kernels, :class:`SquaredExponential` and :class:`Matern`,
and :func:`paper_kernel`, the papers' squared exponential plus bias and jitter."""

import numbers

import numpy as np
from sklearn.gaussian_process.kernels import Hyperparameter

from ._base import _LINEAR_IN_K, Constant, Kernel, Sum, White, _ordered, _ordered_tensor
from ._distances import (_matern_contract, _matern_f, _matern_gradient_tensor,
                         _pairwise_sqdiff, _scaled_inputs, _se_contract, _se_matrix,
                         _sqdist)
from ._inputs import (_DEFAULT_BOUNDS, _check_X, _check_XY, _fmt_length_scale,
                      _is_anisotropic, _length_scale_array, _length_scale_for,
                      _length_scale_hyperparameter, _positive_scalar)


class SquaredExponential(Kernel):
    """Squared exponential (RBF) kernel with a variance, optionally ARD.

    .. math::

        k(x, x') = \\sigma^2 \\exp\\Big(-\\frac12 \\sum_k
                   \\frac{(x_k - x'_k)^2}{\\ell_k^2}\\Big)

    Equal to scikit-learn's ``ConstantKernel(variance) * RBF(length_scale)``
    but with its own parametrisation (``theta = [log l..., log variance]``)
    and an ``O(n^2 d)`` :meth:`contract`.

    Parameters
    ----------
    length_scale : float or array-like of shape (n_features,), default=1.0
        Length scale(s) ``l``.  An array with one entry per input dimension
        gives automatic relevance determination (ARD).
    variance : float, default=1.0
        Signal variance ``sigma^2`` (the value of ``k(x, x)``).
    length_scale_bounds : pair of floats or "fixed", default=(1e-5, 1e5)
        Bounds on the length scale(s); ``"fixed"`` removes them from
        ``theta``.
    variance_bounds : pair of floats or "fixed", default=(1e-5, 1e5)
        Bounds on the variance.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.kernels import SquaredExponential
    >>> X = np.array([[0.0, 0.0], [1.0, 2.0]])
    >>> k = SquaredExponential(length_scale=[1.0, 2.0], variance=2.0)
    >>> k(X)
    array([[2.        , 0.73575888],
           [0.73575888, 2.        ]])
    >>> k.theta  # log length scales, then log variance
    array([0.        , 0.69314718, 0.69314718])
    """

    def __init__(
        self,
        length_scale=1.0,
        variance=1.0,
        length_scale_bounds=_DEFAULT_BOUNDS,
        variance_bounds=_DEFAULT_BOUNDS,
    ):
        _length_scale_array(length_scale, type(self).__name__)
        _positive_scalar(variance, "variance", type(self).__name__)
        self.length_scale = length_scale
        self.variance = variance
        self.length_scale_bounds = length_scale_bounds
        self.variance_bounds = variance_bounds

    @property
    def anisotropic(self):
        """Whether there is one length scale per input dimension (ARD)."""
        return _is_anisotropic(self.length_scale)

    @property
    def hyperparameter_length_scale(self):
        return _length_scale_hyperparameter(self.length_scale, self.length_scale_bounds)

    @property
    def hyperparameter_variance(self):
        return Hyperparameter("variance", "numeric", self.variance_bounds)

    def _values(self, X):
        name = type(self).__name__
        return (
            _length_scale_for(self.length_scale, X, name),
            _positive_scalar(self.variance, "variance", name),
        )

    def __call__(self, X, Y=None, eval_gradient=False):
        """Evaluate ``K(X, Y)`` and optionally its gradient.

        Parameters
        ----------
        X : array-like of shape (n_samples_X, n_features)
        Y : array-like of shape (n_samples_Y, n_features), optional
            If None, ``K(X, X)`` is returned (exactly symmetric).
        eval_gradient : bool, default=False
            Also return the gradient with respect to ``theta``
            (only when ``Y`` is None).

        Returns
        -------
        K : ndarray of shape (n_samples_X, n_samples_Y)
        K_gradient : ndarray of shape (n_samples_X, n_samples_X, n_dims)
            Only when ``eval_gradient`` is True.
        """
        X, Y = _check_XY(X, Y, eval_gradient)
        ls, var = self._values(X)
        Z, ZY = _scaled_inputs(X, Y, ls)
        K = _se_matrix(Z, ZY, var)
        if not eval_gradient:
            return K
        parts = {}
        if not self.hyperparameter_length_scale.fixed:
            if np.ndim(ls) == 1:
                parts["length_scale"] = K[:, :, np.newaxis] * _pairwise_sqdiff(Z)
            else:
                parts["length_scale"] = K * _sqdist(Z)
        if not self.hyperparameter_variance.fixed:
            parts["variance"] = K.copy()
        return K, _ordered_tensor(self, parts, X.shape[0])

    def _contract(self, X, dK, K):
        ls, var = self._values(X)
        g_ls, g_var = _se_contract(
            X,
            ls,
            var,
            dK,
            K,
            not self.hyperparameter_length_scale.fixed,
            not self.hyperparameter_variance.fixed,
        )
        return _ordered(self, {"length_scale": g_ls, "variance": g_var})

    def diag(self, X):
        """Diagonal of ``K(X)``: ``variance`` everywhere.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        K_diag : ndarray of shape (n_samples,)
        """
        X = _check_X(X)
        _, var = self._values(X)
        return np.full(X.shape[0], var)

    def is_stationary(self):
        """Returns True (the kernel depends on x - x' only)."""
        return True

    def __repr__(self):
        return "{0}(length_scale={1}, variance={2:.3g})".format(
            type(self).__name__, _fmt_length_scale(self.length_scale), self.variance
        )


# Its contraction is linear in the K it is given (see _LINEAR_IN_K).
_LINEAR_IN_K.add(SquaredExponential)


class Matern(Kernel):
    """Matern kernel with a variance, nu in {1.5, 2.5}, optionally ARD.

    With the scaled distance ``r = sqrt(sum_k (x_k - x'_k)^2 / l_k^2)``:

    * ``nu=1.5``: ``variance * (1 + sqrt(3) r) exp(-sqrt(3) r)``
    * ``nu=2.5``: ``variance * (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r)``

    Equal to scikit-learn's ``ConstantKernel(variance) * Matern(length_scale,
    nu=nu)``.  ``nu`` is a fixed setting, not a hyperparameter.

    Parameters
    ----------
    length_scale : float or array-like of shape (n_features,), default=1.0
        Length scale(s); an array gives ARD.
    variance : float, default=1.0
        Signal variance (the value of ``k(x, x)``).
    nu : {1.5, 2.5}, default=1.5
        Smoothness.
    length_scale_bounds, variance_bounds : pair of floats or "fixed"
        Bounds, default ``(1e-5, 1e5)``.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.kernels import Matern
    >>> X = np.array([[0.0], [1.0]])
    >>> Matern(length_scale=1.0, nu=2.5)(X)
    array([[1.        , 0.52399411],
           [0.52399411, 1.        ]])
    """

    def __init__(
        self,
        length_scale=1.0,
        variance=1.0,
        nu=1.5,
        length_scale_bounds=_DEFAULT_BOUNDS,
        variance_bounds=_DEFAULT_BOUNDS,
    ):
        _length_scale_array(length_scale, "Matern")
        _positive_scalar(variance, "variance", "Matern")
        self._check_nu(nu)
        self.length_scale = length_scale
        self.variance = variance
        self.nu = nu
        self.length_scale_bounds = length_scale_bounds
        self.variance_bounds = variance_bounds

    @staticmethod
    def _check_nu(nu):
        if isinstance(nu, bool) or not isinstance(nu, numbers.Real) or nu not in (
            1.5,
            2.5,
        ):
            raise ValueError(
                f"Matern: nu must be 1.5 or 2.5, got {nu!r} (use "
                "SquaredExponential for nu=inf or scikit-learn's Matern for "
                "other values)."
            )
        return float(nu)

    @property
    def anisotropic(self):
        """Whether there is one length scale per input dimension (ARD)."""
        return _is_anisotropic(self.length_scale)

    @property
    def hyperparameter_length_scale(self):
        return _length_scale_hyperparameter(self.length_scale, self.length_scale_bounds)

    @property
    def hyperparameter_variance(self):
        return Hyperparameter("variance", "numeric", self.variance_bounds)

    def _values(self, X):
        return (
            _length_scale_for(self.length_scale, X, "Matern"),
            _positive_scalar(self.variance, "variance", "Matern"),
            self._check_nu(self.nu),
        )

    def __call__(self, X, Y=None, eval_gradient=False):
        """Evaluate ``K(X, Y)`` and optionally its gradient.

        See :meth:`SquaredExponential.__call__` for the parameters.
        """
        X, Y = _check_XY(X, Y, eval_gradient)
        ls, var, nu = self._values(X)
        Z, ZY = _scaled_inputs(X, Y, ls)
        D = _sqdist(Z, ZY)
        K = _matern_f(np.sqrt(D), nu)
        K *= var
        if not eval_gradient:
            return K
        parts = {}
        if not self.hyperparameter_length_scale.fixed:
            parts["length_scale"] = _matern_gradient_tensor(
                Z, D, var, nu, np.ndim(ls) == 1
            )
        if not self.hyperparameter_variance.fixed:
            parts["variance"] = K.copy()
        return K, _ordered_tensor(self, parts, X.shape[0])

    def _contract(self, X, dK, K):
        ls, var, nu = self._values(X)
        g_ls, g_var = _matern_contract(
            X,
            ls,
            var,
            nu,
            dK,
            K,
            not self.hyperparameter_length_scale.fixed,
            not self.hyperparameter_variance.fixed,
        )
        return _ordered(self, {"length_scale": g_ls, "variance": g_var})

    def diag(self, X):
        """Diagonal of ``K(X)``: ``variance`` everywhere."""
        X = _check_X(X)
        return np.full(X.shape[0], self._values(X)[1])

    def is_stationary(self):
        """Returns True."""
        return True

    def __repr__(self):
        return "{0}(length_scale={1}, variance={2:.3g}, nu={3:.3g})".format(
            type(self).__name__,
            _fmt_length_scale(self.length_scale),
            self.variance,
            self.nu,
        )


def paper_kernel(
    length_scale,
    theta1=1.0,
    theta2=1.0,
    jitter=1e-6,
    *,
    length_scale_bounds=_DEFAULT_BOUNDS,
    theta1_bounds=_DEFAULT_BOUNDS,
    theta2_bounds=_DEFAULT_BOUNDS,
    jitter_bounds="fixed",
):
    """The covariance of the papers: ``theta1 * SE_ARD + theta2 + jitter * delta``.

    .. math::

        k(x, x') = \\theta_1 \\exp\\Big(-\\frac12 \\sum_k
                   \\frac{(x_k - x'_k)^2}{\\ell_k^2}\\Big) + \\theta_2
                   + J \\delta_{x x'}

    Built as ``Sum(Sum(SquaredExponential(length_scale, theta1),
    Constant(theta2)), White(jitter))``, so
    ``theta = [log l_1, ..., log l_d, log theta1, log theta2]`` with the
    jitter fixed by default.

    Parameters
    ----------
    length_scale : float or array-like of shape (n_features,)
        Length scales (an array gives ARD; a scalar an isotropic kernel).
    theta1 : float, default=1.0
        Signal variance of the squared exponential.
    theta2 : float, default=1.0
        Bias (constant) variance.
    jitter : float, default=1e-6
        Added to the diagonal of ``K(X)`` (not to cross covariances).
    length_scale_bounds, theta1_bounds, theta2_bounds : pair or "fixed"
        Bounds, default ``(1e-5, 1e5)``.
    jitter_bounds : pair or "fixed", default="fixed"

    Returns
    -------
    kernel : Sum

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.kernels import paper_kernel
    >>> k = paper_kernel([1.0, 2.0], theta1=2.0, theta2=0.5)
    >>> k.theta.shape
    (4,)
    >>> X = np.array([[0.0, 0.0], [1.0, 2.0]])
    >>> k(X)
    array([[2.500001  , 1.23575888],
           [1.23575888, 2.500001  ]])
    """
    se = SquaredExponential(
        length_scale=length_scale,
        variance=theta1,
        length_scale_bounds=length_scale_bounds,
        variance_bounds=theta1_bounds,
    )
    return Sum(
        Sum(se, Constant(theta2, value_bounds=theta2_bounds)),
        White(jitter, noise_bounds=jitter_bounds),
    )
