"""The kernels of the inputs' dot products: :class:`Linear` and :class:`Polynomial`."""

import numbers

import numpy as np
from sklearn.gaussian_process.kernels import Hyperparameter

from .._blocks import frob, gram, matmul
from ._base import Kernel, _ordered_tensor
from ._inputs import _DEFAULT_BOUNDS, _check_X, _check_XY, _positive_scalar


class Linear(Kernel):
    """Linear (dot-product) kernel ``k(x, x') = variance * x^T x'``.

    Equal to scikit-learn's ``ConstantKernel(variance) *
    DotProduct(sigma_0=0)`` with ``sigma_0`` fixed.

    Parameters
    ----------
    variance : float, default=1.0
        Prior variance of the weights.
    variance_bounds : pair of floats or "fixed", default=(1e-5, 1e5)

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.kernels import Linear
    >>> Linear(2.0)(np.array([[1.0, 0.0], [1.0, 1.0]]))
    array([[2., 2.],
           [2., 4.]])
    """

    def __init__(self, variance=1.0, variance_bounds=_DEFAULT_BOUNDS):
        _positive_scalar(variance, "variance", "Linear")
        self.variance = variance
        self.variance_bounds = variance_bounds

    @property
    def hyperparameter_variance(self):
        return Hyperparameter("variance", "numeric", self.variance_bounds)

    def __call__(self, X, Y=None, eval_gradient=False):
        """Evaluate ``K(X, Y)`` and optionally its gradient."""
        X, Y = _check_XY(X, Y, eval_gradient)
        v = _positive_scalar(self.variance, "variance", "Linear")
        K = gram(X) if Y is None else matmul(X, Y.T)
        K *= v
        if not eval_gradient:
            return K
        parts = {"variance": K.copy()} if not self.hyperparameter_variance.fixed else {}
        return K, _ordered_tensor(self, parts, X.shape[0])

    def _contract(self, X, dK, K):
        if K is not None:
            return np.array([frob(dK, K)])
        v = _positive_scalar(self.variance, "variance", "Linear")
        # sum_ij dK_ij x_i . x_j = sum(X * (dK @ X)): O(n^2 d), no n x n K.
        return np.array([v * np.vdot(X, matmul(dK, X))])

    def diag(self, X):
        """Diagonal of ``K(X)``: ``variance * |x|^2``."""
        X = _check_X(X)
        v = _positive_scalar(self.variance, "variance", "Linear")
        return v * np.einsum("ij,ij->i", X, X)

    def is_stationary(self):
        """Returns False."""
        return False

    def __repr__(self):
        return "{0}(variance={1:.3g})".format(type(self).__name__, self.variance)


class Polynomial(Kernel):
    """Polynomial kernel ``k(x, x') = (1 + x^T x' / scale)^degree``.

    ``scale`` (written ``m`` in the papers) is a positive hyperparameter in
    log space; ``degree`` is a fixed positive integer.  The kernel equals
    scikit-learn's ``ConstantKernel(scale**-degree) *
    DotProduct(sqrt(scale)) ** degree``.

    Parameters
    ----------
    degree : int, default=2
        Polynomial degree (>= 1), fixed.
    scale : float, default=1.0
        Scale ``m`` of the dot product.
    scale_bounds : pair of floats or "fixed", default=(1e-5, 1e5)

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.kernels import Polynomial
    >>> Polynomial(degree=2, scale=2.0)(np.array([[1.0, 1.0], [2.0, 0.0]]))
    array([[4., 4.],
           [4., 9.]])
    """

    def __init__(self, degree=2, scale=1.0, scale_bounds=_DEFAULT_BOUNDS):
        self._check_degree(degree)
        _positive_scalar(scale, "scale", "Polynomial")
        self.degree = degree
        self.scale = scale
        self.scale_bounds = scale_bounds

    @staticmethod
    def _check_degree(degree):
        if (
            isinstance(degree, bool)
            or not isinstance(degree, numbers.Real)
            or degree != int(degree)
            or degree < 1
        ):
            raise ValueError(
                f"Polynomial: degree must be an integer >= 1, got {degree!r}."
            )
        return int(degree)

    @property
    def hyperparameter_scale(self):
        return Hyperparameter("scale", "numeric", self.scale_bounds)

    def _base(self, X, Y):
        """``B = 1 + X Y^T / scale`` and ``G = X Y^T / scale``."""
        s = _positive_scalar(self.scale, "scale", "Polynomial")
        Z = X / np.sqrt(s)
        G = gram(Z) if Y is None else matmul(Z, (Y / np.sqrt(s)).T)
        return G + 1.0, G

    def __call__(self, X, Y=None, eval_gradient=False):
        """Evaluate ``K(X, Y)`` and optionally its gradient."""
        X, Y = _check_XY(X, Y, eval_gradient)
        p = self._check_degree(self.degree)
        B, G = self._base(X, Y)
        K = B if p == 1 else np.power(B, p)
        if not eval_gradient:
            return K
        parts = {}
        if not self.hyperparameter_scale.fixed:
            # d/dlog m (1 + G)^p = -p (1 + G)^(p-1) G
            Bp = np.ones_like(B) if p == 1 else np.power(B, p - 1)
            parts["scale"] = -p * Bp * G
        return K, _ordered_tensor(self, parts, X.shape[0])

    def _contract(self, X, dK, K):
        p = self._check_degree(self.degree)
        B, G = self._base(X, None)
        W = dK * G
        if p > 1:
            W *= B if p == 2 else np.power(B, p - 1)
        return np.array([-p * W.sum()])

    def diag(self, X):
        """Diagonal of ``K(X)``: ``(1 + |x|^2 / scale)^degree``."""
        X = _check_X(X)
        s = _positive_scalar(self.scale, "scale", "Polynomial")
        return (1.0 + np.einsum("ij,ij->i", X, X) / s) ** self._check_degree(self.degree)

    def is_stationary(self):
        """Returns False."""
        return False

    def __repr__(self):
        return "{0}(degree={1}, scale={2:.3g})".format(
            type(self).__name__, self.degree, self.scale
        )
