"""Likelihoods written in Python (``code = LIK_PYTHON``): a class that gives only its
log density works with every method of one latent value through finite differences
and quadrature (gpc/likelihoods/_numerical.py), and agrees with the compiled
closed forms where gpc has them."""

import numpy as np
import pytest
from scipy.special import log_ndtr
from sklearn.gaussian_process.kernels import RBF, ConstantKernel as C

import gpc
from gpc.datasets import load_ionosphere
from gpc.likelihoods import LIK_PYTHON, Likelihood, Logit, Probit
from gpc.sparse import sparse_ep


class PythonProbit(Likelihood):
    """The probit, by its log density only."""

    name = "python_probit"

    def __init__(self):
        pass

    def log_lik(self, y, f):
        return log_ndtr(np.asarray(y) * f)


class PythonLogit(Likelihood):
    """The logit, by its log density only."""

    name = "python_logit"

    def __init__(self):
        pass

    def log_lik(self, y, f):
        return -np.logaddexp(0.0, -np.asarray(y) * f)


class PythonGaussian(Likelihood):
    """Gaussian regression noise with its variance as a parameter."""

    name = "python_gaussian"
    is_classification = False
    param_names = ("noise_variance",)

    def __init__(self, noise_variance=0.3):
        self.noise_variance = noise_variance

    @property
    def params(self):
        return np.array([float(self.noise_variance)])

    @property
    def param_bounds(self):
        return np.array([[1e-6, 1e6]])

    def log_lik(self, y, f):
        s2 = self.noise_variance
        return -0.5 * np.log(2.0 * np.pi * s2) - 0.5 * (np.asarray(y) - f) ** 2 / s2


@pytest.fixture(scope="module")
def data():
    X, y = load_ionosphere()
    X = X[:, 2:]
    X = (X - X.mean(0)) / X.std(0)
    return X[:90], np.where(y[:90] == y[0], 1, -1)


KERNEL = C(2.0) * RBF(3.0)


def _evidence_and_gradient(likelihood, method, X, y):
    est = gpc.GaussianProcessClassifier(KERNEL, likelihood=likelihood, method=method,
                                        optimizer=None).fit(X, y)
    theta = np.log([1.5, 4.0])
    return est.log_marginal_likelihood(theta, eval_gradient=True)


def test_a_python_likelihood_takes_the_python_path():
    assert PythonProbit.code == LIK_PYTHON
    assert PythonProbit().has_derivatives
    assert Probit.code != LIK_PYTHON


@pytest.mark.parametrize("method", ["laplace", "ep", "pl"])
def test_python_probit_equals_the_compiled_one(data, method):
    value, grad = _evidence_and_gradient("probit", method, *data)
    value_py, grad_py = _evidence_and_gradient(PythonProbit(), method, *data)
    assert abs(value_py - value) <= 1e-7
    np.testing.assert_allclose(grad_py, grad, rtol=0, atol=1e-6)


def test_python_probit_equals_the_compiled_one_in_sparse_ep(data):
    X, y = data
    Z = X[::6]
    ref = sparse_ep(KERNEL, Probit(), X, y, Z)
    res = sparse_ep(KERNEL, PythonProbit(), X, y, Z)
    assert abs(res.log_evidence - ref.log_evidence) <= 1e-7
    np.testing.assert_allclose(res.grad, ref.grad, rtol=0, atol=1e-6)


def test_python_probit_equals_the_compiled_one_in_adf(data):
    X, y = data
    K = np.asfortranarray(KERNEL(X))
    ref = gpc.infer(K, y, likelihood="probit", method="adf")
    res = gpc.infer(K, y, likelihood=PythonProbit(), method="adf")
    assert abs(res.log_evidence - ref.log_evidence) <= 1e-7


def test_python_gaussian_parameter_derivative_equals_the_compiled_one(data):
    """EP with a Gaussian likelihood is exact GP regression, and the derivative in
    the noise variance comes from the quadrature of d log p / d par."""
    X, _ = data
    target = np.sin(X[:, 0]) + 0.1 * X[:, 1]
    K = np.asfortranarray(KERNEL(X))
    ref = gpc.infer(K, target, likelihood=gpc.likelihoods.Gaussian(noise_variance=0.3),
                    method="ep")
    res = gpc.infer(K, target, likelihood=PythonGaussian(0.3), method="ep")
    assert abs(res.log_evidence - ref.log_evidence) <= 1e-7
    np.testing.assert_allclose(res.dlik, ref.dlik, rtol=1e-6)
    np.testing.assert_allclose(res.dK, ref.dK, rtol=0, atol=1e-6)


GRID_M = [0.0, 1e-3, 1.0, -3.0, 10.0, -10.0, -100.0, 100.0, -1000.0]
GRID_V = [1e-12, 1e-8, 1e-4, 1e-2, 0.5, 1.0, 1.5, 10.0, 100.0, 1e4, 1e6, 1e8]


@pytest.mark.parametrize("python, compiled", [(PythonProbit(), Probit()),
                                              (PythonLogit(), Logit())])
def test_quadrature_moments_match_the_closed_forms(python, compiled):
    """Errors relative to max(1, |value|) over the grid, including prior variances
    from 1e-12 to 1e8 and labels far in the prior's tails: log Z and its first
    derivative to about 1e-12; the second derivative to 1e-9 plus the rounding of
    the finite differences (eps |log p| / h^2) where |log p| is large."""
    M, V, Y = (a.ravel() for a in np.meshgrid(GRID_M, GRID_V, [1.0, -1.0]))
    got = np.array(python.gauss_moments(Y, M, V))[:3]
    want = np.array(compiled.gauss_moments(Y, M, V))[:3]
    err = np.abs(got - want) / np.maximum(1.0, np.abs(want))
    assert err[0].max() <= 1e-12
    assert err[1].max() <= 1e-10
    # The second differences' rounding, with step h = 1e-2 and weights summing to
    # about 6 in size, at |log p| ~ |log Z|.
    rounding = 10 * np.finfo(float).eps * np.maximum(1.0, np.abs(want[0])) / 1e-4
    assert np.all(err[2] <= 1e-9 + rounding)


def test_finite_difference_derivatives_match_the_closed_forms():
    f = np.array([-30.0, -3.0, -0.5, 0.0, 0.7, 4.0, 25.0])
    y = np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0])
    for python, compiled in [(PythonProbit(), Probit()), (PythonLogit(), Logit())]:
        got = np.array(python.derivatives(y, f))
        want = np.array(compiled.derivatives(y, f))
        scale = np.maximum(1.0, np.abs(want))
        err = np.abs(got - want) / scale
        assert err[0].max() <= 1e-15 and err[1].max() <= 1e-11
        assert err[2].max() <= 1e-9 and err[3].max() <= 1e-6


def test_predict_is_the_gaussian_average():
    m, v = np.array([-2.0, 0.0, 0.5, 3.0]), np.array([0.0, 1.0, 4.0, 100.0])
    np.testing.assert_allclose(PythonProbit().predict(m, v), Probit().predict(m, v),
                               rtol=1e-12)


class Raising(PythonProbit):
    """Raises on its 30th evaluation."""

    name = "raising"

    def __init__(self):
        self.calls = 0

    def log_lik(self, y, f):
        self.calls += 1
        if self.calls >= 30:
            raise FloatingPointError("raised by the likelihood")
        return super().log_lik(y, f)


@pytest.mark.parametrize("method", ["laplace", "ep", "pl", "adf"])
def test_an_exception_of_the_likelihood_reaches_the_caller(data, method):
    X, y = data
    K = np.asfortranarray(KERNEL(X))
    with pytest.raises(FloatingPointError, match="raised by the likelihood"):
        gpc.infer(K, y, likelihood=Raising(), method=method)
    # The failed run leaves nothing behind: the same call with a good likelihood
    # is unaffected.
    assert np.isfinite(gpc.infer(K, y, likelihood=PythonProbit(),
                                 method=method).log_evidence)


def test_laplace_refuses_a_python_likelihood_without_derivatives(data):
    class Rough(PythonProbit):
        name = "rough"
        has_derivatives = False

    X, y = data
    with pytest.raises(ValueError, match="needs a likelihood with derivatives"):
        gpc.infer(np.asfortranarray(KERNEL(X)), y, likelihood=Rough(), method="laplace")


def test_a_likelihood_without_log_lik_says_what_is_missing():
    class Empty(Likelihood):
        name = "empty"

        def __init__(self):
            pass

    with pytest.raises(NotImplementedError, match="log_lik"):
        Empty().gauss_moments(1.0, 0.0, 1.0)


def test_a_regression_python_likelihood_has_no_class_probability():
    with pytest.raises(ValueError, match="regression likelihood"):
        PythonGaussian().predict(0.0, 1.0)


class PythonNoisyProbit(Likelihood):
    """eps + (1 - 2 eps) Phi(y f), with the label-flip probability as a
    parameter."""

    name = "python_noisy_probit"
    param_names = ("eps",)

    def __init__(self, eps=0.1):
        self.eps = eps

    @property
    def params(self):
        return np.array([float(self.eps)])

    @property
    def param_bounds(self):
        return np.array([[1e-4, 0.4]])

    def _validate(self):
        if not 1e-4 <= self.eps <= 0.4:
            raise ValueError(f"eps must lie in [1e-4, 0.4], got {self.eps!r}")

    def log_lik(self, y, f):
        return np.logaddexp(np.log(self.eps),
                            np.log1p(-2 * self.eps) + log_ndtr(np.asarray(y) * f))


@pytest.mark.parametrize("method", ["ep", "pl"])
def test_the_parameter_derivative_equals_finite_differences(data, method):
    """d log Z / d eps of a Python likelihood (its quadrature for EP; for PL also
    through the sites' dependence on it) against central differences."""
    X, y = data
    X, y = X[:40], y[:40]
    K = np.asfortranarray(KERNEL(X))

    def evidence(eps):
        return gpc.infer(K, y, likelihood=PythonNoisyProbit(eps), method=method,
                         tol=1e-10)

    h = 1e-5
    fd = (evidence(0.1 + h).log_evidence - evidence(0.1 - h).log_evidence) / (2 * h)
    assert evidence(0.1).dlik[0] == pytest.approx(fd, rel=1e-5, abs=1e-6)


def test_python_probit_equals_the_compiled_one_in_the_sparse_online_gp(data):
    X, y = data

    def fit(likelihood):
        return gpc.SparseGPClassifier(C(2.0, "fixed") * RBF(3.0, "fixed"),
                                      likelihood=likelihood, method="adf",
                                      max_basis=30, random_state=0).fit(X, y)

    ref, res = fit("probit"), fit(PythonProbit())
    assert abs(res.log_marginal_likelihood_value_
               - ref.log_marginal_likelihood_value_) <= 1e-7
    np.testing.assert_allclose(res.predict_proba(X), ref.predict_proba(X), atol=1e-9)
