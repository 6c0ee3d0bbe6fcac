"""Whether a kernel is positive semi-definite by construction."""

import numbers

import numpy as np
from sklearn.gaussian_process import kernels as _sk

from ._base import Constant, Exponentiation, Product, Sum, White
from ._dot_product import Linear, Polynomial
from ._inputs import as_kernel
from ._stationary import Matern, SquaredExponential


_PSD_LEAVES = (
    SquaredExponential,
    Matern,
    Constant,
    White,
    Linear,
    Polynomial,
    _sk.RBF,
    _sk.Matern,
    _sk.RationalQuadratic,
    _sk.ExpSineSquared,
    _sk.DotProduct,
)


# Kernels whose every positive power is again a PSD kernel of the same family.
_INFINITELY_DIVISIBLE = (
    SquaredExponential,
    Constant,
    White,
    _sk.RBF,
    _sk.RationalQuadratic,
    _sk.ExpSineSquared,
)


_PSD_PAIRWISE_METRICS = ("linear", "rbf", "laplacian", "cosine")


def _infinitely_divisible(kernel):
    t = type(kernel)
    if t in _INFINITELY_DIVISIBLE:
        return True
    if t is _sk.ConstantKernel:
        return kernel.constant_value >= 0
    if t is _sk.WhiteKernel:
        return kernel.noise_level >= 0
    if t is _sk.Matern:
        return kernel.nu in (0.5, np.inf)
    if t in (Product, _sk.Product):
        return _infinitely_divisible(kernel.k1) and _infinitely_divisible(kernel.k2)
    if t in (Exponentiation, _sk.Exponentiation):
        return kernel.exponent > 0 and _infinitely_divisible(kernel.kernel)
    return False


def is_psd_by_construction(kernel):
    """Whether ``kernel`` is positive semi-definite by construction.

    True for the kernels of :mod:`gpc.kernels`, scikit-learn's standard kernels
    (``RBF``, ``Matern``, ``RationalQuadratic``, ``ExpSineSquared``,
    ``DotProduct``, ``ConstantKernel``/``WhiteKernel`` with non-negative
    values, ``PairwiseKernel`` with a linear, rbf, laplacian or cosine
    metric), and sums and products of such kernels and their positive
    integer powers (plus any positive power of an infinitely divisible
    kernel such as the squared exponential).  False for anything else,
    e.g. user-defined kernels, whose matrices should then be checked.

    Only the exact classes are recognised: a subclass may change the
    covariance and is treated as unknown.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel

    Returns
    -------
    bool

    Examples
    --------
    >>> from sklearn.gaussian_process.kernels import RBF, PairwiseKernel
    >>> from gpc.kernels import is_psd_by_construction, Linear
    >>> is_psd_by_construction(2.0 * RBF() + Linear() ** 3)
    True
    >>> is_psd_by_construction(PairwiseKernel(metric="sigmoid"))
    False
    """
    kernel = as_kernel(kernel)
    t = type(kernel)
    if t in _PSD_LEAVES:
        return True
    if t is _sk.ConstantKernel:
        return bool(np.all(np.asarray(kernel.constant_value) >= 0))
    if t is _sk.WhiteKernel:
        return bool(np.all(np.asarray(kernel.noise_level) >= 0))
    if t in (Sum, Product, _sk.Sum, _sk.Product):
        return is_psd_by_construction(kernel.k1) and is_psd_by_construction(kernel.k2)
    if t in (Exponentiation, _sk.Exponentiation):
        p = kernel.exponent
        if isinstance(p, numbers.Real) and not isinstance(p, bool):
            if p >= 1 and p == int(p):
                return is_psd_by_construction(kernel.kernel)
            if p > 0:
                return _infinitely_divisible(kernel.kernel)
        return False
    if t is _sk.PairwiseKernel:
        return isinstance(kernel.metric, str) and kernel.metric in _PSD_PAIRWISE_METRICS
    return False
