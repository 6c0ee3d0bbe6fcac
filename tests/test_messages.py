"""Failures that name their cause and the fix, and answers that say when they are
empty: each case once gave a message that sent the user the wrong way, or a
value without a word."""

import warnings

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

import gpc
from gpc.likelihoods import NoisyThreshold, Softmax


def test_a_label_flip_probability_outside_its_bounds_names_them():
    # eps = 1 was "must lie in [0, 0.5]" but eps = 0, inside that range, was
    # refused by the default bounds without saying how to allow it.
    with pytest.raises(ValueError, match=r"must lie in \[0, 0.5\]"):
        NoisyThreshold(eps=1.0)
    with pytest.raises(ValueError, match=r"eps=0.0 lies outside eps_bounds=\(1e-06, "
                                         r"0.5\): give bounds .* or eps_bounds='fixed'"):
        NoisyThreshold(eps=0.0)
    assert NoisyThreshold(eps=0.0, eps_bounds="fixed").params[0] == 0.0


@pytest.mark.parametrize("bad, name", [
    (lambda m, c: (np.where(np.arange(3)[:, None] == 1, np.nan, m), c), "mean"),
    (lambda m, c: (m, np.where(np.arange(3)[:, None, None] == 2, np.inf, c)), "cov"),
])
def test_softmax_predict_refuses_what_is_not_finite(bad, name):
    # A NaN mean gave NaN probabilities, an infinite covariance a LinAlgError.
    mean, cov = np.zeros((3, 3)), np.tile(np.eye(3), (3, 1, 1))
    with pytest.raises(ValueError, match=f"{name} is not finite for 1 of the 3 points"):
        Softmax().predict(*bad(mean, cov))


def test_a_regression_target_too_large_for_float64_is_named():
    # One target of 1e200 was answered with "a smaller kernel variance or more
    # damping": its square overflows.
    rng = np.random.RandomState(0)
    X = rng.randn(20, 1)
    K = np.exp(-0.5 * (X - X.T) ** 2)
    y = rng.randn(20)
    y[3] = 1e200
    with pytest.raises(ValueError, match="y holds 1e.200.*scale them"):
        gpc.infer(K, y, likelihood="gaussian", method="ep")
    y[3] = 1e90                     # large, but the evidence stays finite
    assert np.isfinite(gpc.infer(K, y, likelihood="gaussian", method="ep",
                                 tol=1e-6).log_evidence)


@pytest.mark.parametrize("method", ["ep", "adf"])
def test_the_sparse_regressor_refuses_targets_too_large_too(method):
    rng = np.random.RandomState(0)
    X = rng.randn(50, 1)
    y = np.sin(X[:, 0])
    y[7] = 1e200
    reg = gpc.SparseGPRegressor(RBF(1.0), method=method, max_basis=10)
    with pytest.raises(ValueError, match="y holds 1e.200.*scale them"):
        reg.fit(X, y)
    reg.fit(X, np.sin(X[:, 0]))
    with pytest.raises(ValueError, match="y holds 1e.200"):
        reg.set_params(method="adf").partial_fit(X, y)


def test_a_negative_prior_variance_is_refused_without_the_psd_check():
    # EP with check_psd=False on K - 3 I returned log evidence 0.0 with a
    # RuntimeWarning; the diagonal is checked whatever check_psd says.
    K = np.eye(4) * 1.0 + 0.5
    with pytest.raises(gpc.NotPositiveDefiniteError, match=r"K\[0, 0\] = -1.5"):
        gpc.infer(K - 3.0 * np.eye(4), [1, -1, 1, -1], method="ep",
                  likelihood="probit", check_psd=False)


def test_sparse_ep_names_a_singular_inducing_matrix():
    # Repeated inducing inputs with jitter=0 gave "every evaluation of the
    # evidence failed", naming neither the cause nor the fix.
    rng = np.random.RandomState(0)
    X = rng.randn(300, 2)
    y = X[:, 0] > 0
    Z = np.vstack([X[:10], X[:3]])
    est = gpc.SparseGPClassifier(C(1.0) * RBF(1.0), inducing_points=Z, jitter=0.0)
    with pytest.raises(gpc.NumericalError,
                       match=r"K\(Z, Z\).*3 repeated row\(s\)\. Raise jitter"):
        est.fit(X, y)


def test_the_sparse_classifier_warns_when_every_input_is_tied():
    # Inputs scaled by 1e8 against a unit length scale: exactly 0.5 everywhere,
    # where the dense estimator warned and the sparse one said nothing.
    rng = np.random.RandomState(0)
    X = rng.randn(200, 2) * 1e8
    y = X[:, 0] > 0
    est = gpc.SparseGPClassifier(C(1.0) * RBF(1.0), max_basis=20, optimizer=None,
                                 random_state=0).fit(X, y)
    Xt = rng.randn(100, 2) * 1e8          # (the basis vectors are training rows)
    with pytest.warns(UserWarning, match="All 100 inputs get tied class"):
        proba = est.predict_proba(Xt)
    np.testing.assert_array_equal(proba, 0.5)
    fine = gpc.SparseGPClassifier(C(1.0) * RBF(1.0), max_basis=20, optimizer=None,
                                  random_state=0).fit(X / 1e8, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        fine.predict_proba(Xt / 1e8)


@pytest.mark.parametrize("dtype", [np.uint64, np.float64])
def test_a_label_beyond_int64_is_named_as_it_is(dtype):
    # A uint64 label of 2**63 + 5 wrapped to -9223372036854775803 in the message.
    y = np.array([0, 1, 2 ** 63 + 5], dtype=dtype)
    with pytest.raises(ValueError, match=r"labels 0 .. C - 1, got 0 .. 92233720368547758"):
        gpc.infer(np.eye(3), y, likelihood="softmax")
