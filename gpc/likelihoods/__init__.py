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
call them.  A likelihood written in Python subclasses :class:`Likelihood` and
defines ``log_lik`` only: its derivatives then come from finite differences and
its Gaussian integrals from quadrature, and every method of one latent value
uses it (``CONTRIBUTING.md``, "Adding a likelihood").  All results are stable far into the tails: ``|m| / sqrt(1 + v)`` or
``|f|`` of 1e3 and beyond give finite values wherever the true value is finite.

The multinomial model of C latent values per example (labels ``0 .. C - 1``,
``GaussianProcessClassifier(multi_class="multinomial")``) has its own two:
:class:`Softmax`, ``p(y = c | f) = softmax(f)_c`` (Laplace, vb), and
:class:`MultinomialProbit`, ``p(y = c | f) = E_u[prod_{j != c} Phi(u + f_c -
f_j)]`` with ``u ~ N(0, 1)`` (nested EP).

Examples
--------
>>> import numpy as np
>>> from gpc.likelihoods import get_likelihood
>>> lik = get_likelihood("probit")
>>> print(np.round(lik.predict([0.0, 1.0], [1.0, 3.0]), 4))
[0.5    0.6915]
"""

from ._base import (LIK_GAUSSIAN, LIK_LAPLACE, LIK_LOGIT, LIK_NOISY_THRESHOLD,
                    LIK_ONE_SIDED, LIK_PROBIT, LIK_PYTHON, LIK_STEP, Likelihood,
                    LikelihoodBase, NotDifferentiableError, get_likelihood)
# The modules register their classes as they are imported, in this order: the order
# in which get_likelihood lists the names.
from ._classification import Logit, NoisyThreshold, Probit, Step
from ._regression import Gaussian, Laplace, OneSidedExponential
from ._multinomial import MultinomialLikelihood, Softmax, log_normaliser, softmax
from ._multinomial_probit import MultinomialProbit

__all__ = [
    "Likelihood",
    "LikelihoodBase",
    "Probit",
    "Logit",
    "NoisyThreshold",
    "Step",
    "Gaussian",
    "Laplace",
    "OneSidedExponential",
    "Softmax",
    "MultinomialProbit",
    "MultinomialLikelihood",
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
    "LIK_PYTHON",
]
