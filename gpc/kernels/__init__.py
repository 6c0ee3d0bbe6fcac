"""Covariance functions (kernels) with fast gradient contraction.

Every kernel in this package *is* a scikit-learn kernel: it subclasses
:class:`sklearn.gaussian_process.kernels.Kernel`, stores its
hyperparameters as :class:`~sklearn.gaussian_process.kernels.Hyperparameter`
objects (positive values, exposed in log space through ``theta`` and
``bounds``; ``"fixed"`` bounds remove a hyperparameter from ``theta``) and
supports ``clone_with_theta``, ``get_params``/``set_params``,
``__call__(X, Y=None, eval_gradient=False)``, ``diag``, pickling and
:func:`sklearn.base.clone`.  gpc kernels can therefore be passed to
scikit-learn's Gaussian process estimators, and scikit-learn kernels can be
used everywhere gpc expects a kernel.

What gpc adds is **contraction**.  Inference works on the kernel matrix
``K = k(X)`` and returns ``dK``, the derivative of the log evidence with
respect to ``K`` (an ``n x n`` matrix).  The gradient with respect to the
log-hyperparameters is then

.. math::

    g_p = \\frac{\\partial}{\\partial \\theta_p}
          \\sum_{ij} dK_{ij} \\, K_{ij}(\\theta),

computed by :func:`contract` (or the ``contract`` method of gpc kernels)
without forming the ``n x n x p`` tensor ``kernel(X, eval_gradient=True)[1]``.
For an ARD squared exponential this is one compiled pass over ``dK`` and ``K``
that sums the pairs' squared coordinate differences directly (up to 16 input
dimensions; beyond, the pass and one BLAS symmetric matrix product).

``dK`` is normally symmetric (inference returns a symmetric matrix), but this
is not required: every formula here uses both row and column sums, so the
result is the exact gradient of ``sum(dK * K(X))`` for any square ``dK``
(only the symmetric part of ``dK`` matters because ``K(X)`` is symmetric).

Kernels
-------
SquaredExponential, Matern, Constant, White, Linear, Polynomial, and the
composites Sum, Product and Exponentiation (produced by ``+``, ``*`` and
``**``; a scalar ``c * k`` becomes ``Product(Constant(c), k)``).
:func:`paper_kernel` builds ``theta1 * SE_ARD + theta2 + jitter * delta``.

Numerics
--------
Distances are taken between inputs centred at their mean and divided by the
length scales.  For ``K(X)`` a compiled pass (``gpc._kern.sym_stationary``)
forms the lower triangle and mirrors it, so ``K(X)`` is exactly symmetric with
an exactly zero-distance diagonal: up to 16 input dimensions it sums the
squared differences coordinate by coordinate (nothing cancels); beyond, it uses
``|z_i|^2 / 2 + |z_j|^2 / 2 - z_i . z_j`` from one BLAS ``dsyrk``, clipped at
zero.  Cross-covariances ``K(X, Y)`` use that same identity through one BLAS
``dgemm``, clipped at zero.  Dot products come from BLAS too: ``dsyrk``,
mirrored, for ``X @ X.T`` and ``dgemm`` for ``X @ Y.T``.
"""

from sklearn.gaussian_process.kernels import Hyperparameter

from ._base import Constant, Exponentiation, Kernel, Product, Sum, White, contract
from ._cross import contract_inputs
from ._dot_product import Linear, Polynomial
from ._inputs import as_kernel
from ._matrices import cross_covariance_chunks
from ._psd import is_psd_by_construction
from ._stationary import Matern, SquaredExponential, paper_kernel

# Public as well, though not in __all__: the helpers of gpc's estimators, inference
# methods and sparse models.
from ._base import has_white_noise  # noqa: F401
from ._cross import contract_cross, contract_diag  # noqa: F401
from ._matrices import covariance_matrix, cross_covariance, kernel_matrix  # noqa: F401

__all__ = [
    "Kernel",
    "Hyperparameter",
    "SquaredExponential",
    "Matern",
    "Constant",
    "White",
    "Linear",
    "Polynomial",
    "Sum",
    "Product",
    "Exponentiation",
    "paper_kernel",
    "contract",
    "is_psd_by_construction",
    "as_kernel",
    "cross_covariance_chunks",
    "contract_inputs",
]
