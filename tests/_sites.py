"""Helpers shared by the site-method tests (EP and posterior linearisation) and
the evidence-gradient checks."""

import numpy as np
from scipy.special import expit, ndtr

from gpc.likelihoods import NoisyThreshold

EPS = 0.1  # label-flip probability of the noisy threshold used throughout
LIKS = ["probit", "logit", "noisy_threshold", "step"]


def lik_obj(name, eps=EPS):
    return NoisyThreshold(eps) if name == "noisy_threshold" else name


def se(X, ell=1.0, sf2=1.0, Z=None):
    """Squared-exponential covariance written out."""
    Z = X if Z is None else Z
    d2 = ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    return sf2 * np.exp(-0.5 * d2 / ell ** 2)


def data(n, seed, d=2):
    """n points in d dimensions, labels from the first coordinate plus noise."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = np.where(X[:, 0] + 0.5 * rng.randn(n) > 0, 1.0, -1.0)
    return X, y


def p_lik(name, y, f, eps=EPS):
    """p(y | f), elementwise (H(0) = 1/2)."""
    z = y * f
    if name == "probit":
        return ndtr(z)
    if name == "logit":
        return expit(z)
    H = np.where(z > 0, 1.0, np.where(z < 0, 0.0, 0.5))
    return H if name == "step" else eps + (1 - 2 * eps) * H


def richardson(f, x, h):
    """f'(x) by central differences at steps h and 2h, extrapolated (error O(h^4));
    f is evaluated at x + h, x - h, x + 2h, x - 2h in that order."""
    d1 = (f(x + h) - f(x - h)) / (2 * h)
    d2 = (f(x + 2 * h) - f(x - 2 * h)) / (4 * h)
    return (4 * d1 - d2) / 3


def assert_objective_gradient(obj, rtol=1e-5):
    """An evidence objective's gradient at its current theta against central
    differences of its value (step 1e-5 in each log-hyperparameter)."""
    theta = obj.theta.copy()
    value, grad = obj(theta)
    h = 1e-5
    fd = np.array([(obj(theta + h * e)[0] - obj(theta - h * e)[0]) / (2 * h)
                   for e in np.eye(len(theta))])
    np.testing.assert_allclose(grad, fd, rtol=rtol, atol=1e-6 * (1 + abs(value)))
