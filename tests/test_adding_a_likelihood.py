"""Adding a likelihood as CONTRIBUTING.md ("Adding a likelihood") describes it: one
subclass of gpc.likelihoods.Likelihood that gives its log density, and nothing
compiled.

The likelihood is one gpc does not have, the complementary log-log link
``p(y = +1 | f) = 1 - exp(-exp(f))``: asymmetric (it approaches 1 doubly
exponentially fast and 0 only exponentially), log-concave, the link of a
discrete-time survival model.  The tests check it against independent answers (one
point by adaptive quadrature, Laplace's mode by root finding on the closed-form
derivative) and then fit it end to end on real data.
"""

import pickle

import numpy as np
import pytest
from scipy import integrate, optimize
from sklearn.gaussian_process.kernels import RBF, ConstantKernel as C
from sklearn.metrics import log_loss

import gpc
from gpc.datasets import load_ionosphere
from gpc.likelihoods import Likelihood


class CLogLog(Likelihood):
    """Complementary log-log likelihood, ``p(+1 | f) = 1 - exp(-exp(f))``."""

    name = "cloglog"

    def __init__(self):
        pass

    def log_lik(self, y, f):
        with np.errstate(over="ignore"):
            u = np.exp(f)
            return np.where(np.asarray(y) > 0, np.log(-np.expm1(-u)), -u)


def _p(y, f):
    with np.errstate(over="ignore"):
        return -np.expm1(-np.exp(f)) if y > 0 else np.exp(-np.exp(f))


def _normal(f, k):
    return np.exp(-0.5 * f * f / k) / np.sqrt(2.0 * np.pi * k)


@pytest.mark.parametrize("y, k", [(1, 0.5), (-1, 2.0), (1, 9.0), (-1, 25.0)])
def test_one_point_by_adaptive_quadrature(y, k):
    """With one point EP is exact: its evidence and posterior moments are those
    of the tilted law, here integrated by scipy.integrate.quad."""
    def moment(j):
        return integrate.quad(lambda f: f ** j * _p(y, f) * _normal(f, k), -np.inf,
                              np.inf, epsabs=0.0, epsrel=1e-13, limit=200)[0]

    z, m1, m2 = moment(0), moment(1), moment(2)
    res = gpc.infer(np.array([[k]], order="F"), [y], likelihood=CLogLog(), method="ep")
    mean, var = res.posterior.latent_mean_and_variance(
        np.array([[k]]), np.array([k]))
    assert abs(res.log_evidence - np.log(z)) <= 1e-10
    assert abs(mean[0] - m1 / z) <= 1e-9
    assert abs(var[0] - (m2 / z - (m1 / z) ** 2)) <= 1e-9


def test_one_point_laplace_by_root_finding():
    """Laplace's mode solves l'(f) = f / k with l'(f) = u / (e^u - 1), u = e^f
    (label +1), and its evidence is l(f) - f^2 / (2k) - log(1 + k W) / 2 with
    W = -l''(f), l'' = l' - u l' e^u / (e^u - 1)."""
    k = 3.0
    def d1(f):
        u = np.exp(f)
        with np.errstate(over="ignore"):
            return u / np.expm1(u)

    f = optimize.brentq(lambda f: d1(f) - f / k, -10.0, 10.0, xtol=1e-15)
    u = np.exp(f)
    w = -(d1(f) - u * d1(f) * np.exp(u) / np.expm1(u))
    want = np.log(-np.expm1(-u)) - 0.5 * f * f / k - 0.5 * np.log1p(k * w)
    res = gpc.infer(np.array([[k]], order="F"), [1], likelihood=CLogLog(),
                    method="laplace")
    assert abs(res.posterior.marginal_mean[0] - f) <= 1e-9
    assert abs(res.log_evidence - want) <= 1e-9


@pytest.fixture(scope="module")
def data():
    X, y = load_ionosphere()
    X = X[:, 2:]
    X = (X - X.mean(0)) / X.std(0)
    return X[:120], y[:120], X[120:], y[120:]


def _compare_with_logit(est, logit, X_test, y_test):
    """Held-out accuracy and log loss within 0.05 of the logit's."""
    acc, acc_logit = (np.mean(e.predict(X_test) == y_test) for e in (est, logit))
    loss, loss_logit = (log_loss(y_test, e.predict_proba(X_test)) for e in (est, logit))
    assert acc >= acc_logit - 0.05
    assert loss <= loss_logit + 0.05


@pytest.mark.parametrize("method, optimizer", [
    ("laplace", "fmin_l_bfgs_b"), ("ep", None),
    # EP calls the likelihood once per site update, about 0.2 ms each: learning
    # takes a minute here.
    pytest.param("ep", "fmin_l_bfgs_b", marks=pytest.mark.slow)])
def test_fits_end_to_end(data, method, optimizer):
    X, y, X_test, y_test = data
    kernel = C(1.0) * RBF(5.0)
    est = gpc.GaussianProcessClassifier(kernel, likelihood=CLogLog(), method=method,
                                        optimizer=optimizer, random_state=0).fit(X, y)
    if optimizer is not None:
        start = est.log_marginal_likelihood(kernel.theta)
        assert est.log_marginal_likelihood_value_ > start + 1.0
    # The gradient at the fit agrees with central differences of the evidence.
    theta = est.kernel_.theta
    value, grad = est.log_marginal_likelihood(theta, eval_gradient=True)
    h = 1e-5
    fd = [(est.log_marginal_likelihood(theta + h * e)
           - est.log_marginal_likelihood(theta - h * e)) / (2 * h)
          for e in np.eye(theta.size)]
    np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-4)
    # A classifier: probabilities in (0, 1), and held out it does about as well
    # as the logit fitted the same way.
    proba = est.predict_proba(X_test)
    assert np.all((proba > 0) & (proba < 1))
    np.testing.assert_allclose(proba.sum(1), 1.0)
    logit = gpc.GaussianProcessClassifier(kernel, method=method, optimizer=optimizer,
                                          random_state=0)
    _compare_with_logit(est, logit.fit(X, y), X_test, y_test)
    clone = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(clone.predict_proba(X_test), proba)


def test_sparse_ep_fits_it(data):
    X, y, X_test, y_test = data

    def fit(likelihood):
        return gpc.SparseGPClassifier(C(1.0) * RBF(5.0), likelihood=likelihood,
                                      max_basis=40, random_state=0).fit(X, y)

    est = fit(CLogLog())
    assert np.isfinite(est.log_marginal_likelihood_value_)
    _compare_with_logit(est, fit("logit"), X_test, y_test)
