"""Sample weights of the sparse model: sparse EP raises each example's factor
(its likelihood averaged over f given the inducing values) to its weight by
power EP.  A zero weight is the example dropped, an integer weight the example
repeated (the copies share their features, so their sites agree at a fixed
point); with the training inputs as inducing inputs the model is the full GP and
sparse EP is the full GP's weighted EP; the weighted evidence's gradient agrees
with finite differences; the estimators pass the weights on."""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, ConstantKernel as C

import gpc
from gpc.datasets import load_glass, load_ionosphere
from gpc.likelihoods import get_likelihood
from gpc.sparse import sparse_ep

KERNEL = C(2.0) * RBF(1.3)
TIGHT = {"tol": 1e-12, "max_iter": 1000}


@pytest.fixture(scope="module")
def problem():
    """80 examples of the ionosphere data (4 inputs), 25 of them the inducing
    inputs, and 10 held-out inputs."""
    X, y = load_ionosphere()
    X, y = X[:, 2:6], np.where(y == y.max(), 1.0, -1.0)
    Z = X[np.random.default_rng(0).permutation(80)[:25]]
    return X[:80], y[:80], Z, X[80:90]


def _latent(res, kernel, Z, Xs):
    """The latent mean and variance at Xs of a sparse EP result."""
    LK, LS = res.factors
    k = kernel(Z, Xs)
    A = np.linalg.solve(LK, k)
    var = kernel.diag(Xs) - np.sum(A * A, 0) + np.sum(np.linalg.solve(LS, A) ** 2, 0)
    return k.T @ res.alpha, var


def _assert_same(a, b, Z, Xs, atol):
    assert a.log_evidence == pytest.approx(b.log_evidence, abs=atol)
    np.testing.assert_allclose(a.grad, b.grad, rtol=0, atol=atol * 10)
    for u, v in zip(_latent(a, KERNEL, Z, Xs), _latent(b, KERNEL, Z, Xs)):
        np.testing.assert_allclose(u, v, rtol=0, atol=atol)


@pytest.mark.parametrize("likelihood", ["probit", "logit"])
def test_zero_weight_is_the_example_dropped(problem, likelihood):
    X, y, Z, Xs = problem
    lik = get_likelihood(likelihood)
    w = np.random.default_rng(1).uniform(0.2, 3.0, len(y))
    w[[0, 5, 17, 40]] = 0.0
    keep = w > 0
    a = sparse_ep(KERNEL, lik, X, y, Z, sample_weight=w, **TIGHT)
    b = sparse_ep(KERNEL, lik, X[keep], y[keep], Z, sample_weight=w[keep], **TIGHT)
    assert a.info["converged"] and b.info["converged"]
    _assert_same(a, b, Z, Xs, 1e-10)
    assert np.all(a.sites[0][~keep] == 0) and np.all(a.sites[1][~keep] == 0)


def test_integer_weight_is_the_example_repeated(problem):
    X, y, Z, Xs = problem
    lik = get_likelihood("probit")
    w = np.random.default_rng(2).integers(1, 4, len(y)).astype(float)
    rows = np.repeat(np.arange(len(y)), w.astype(int))
    a = sparse_ep(KERNEL, lik, X, y, Z, sample_weight=w, **TIGHT)
    b = sparse_ep(KERNEL, lik, X[rows], y[rows], Z, **TIGHT)
    _assert_same(a, b, Z, Xs, 1e-9)


def test_training_inputs_as_inducing_inputs_give_the_full_gps_weighted_ep(problem):
    """Z = X (distinct rows, no jitter): the FITC model is the full GP, and
    sparse EP's fixed point is that of the full GP's power EP (gpc.infer)."""
    X, y, _, _ = problem
    _, first = np.unique(X, axis=0, return_index=True)
    X, y = X[np.sort(first)], y[np.sort(first)]
    kernel = C(2.0) * RBF(0.4)               # K(X, X) well conditioned
    w = np.random.default_rng(3).uniform(0.2, 3.0, len(y))
    w[3] = 0.0
    a = sparse_ep(kernel, get_likelihood("probit"), X, y, X, sample_weight=w,
                  jitter=0.0, **TIGHT)
    b = gpc.infer(kernel(X), y, "ep", "probit", sample_weight=w, tol=1e-12)
    assert a.log_evidence == pytest.approx(b.log_evidence, abs=1e-10)


@pytest.mark.parametrize("likelihood", ["probit", "logit", "gaussian"])
def test_weighted_evidence_gradient_by_finite_differences(problem, likelihood):
    """The kernel's log-hyperparameters, and the Gaussian's noise variance
    (real targets)."""
    X, y, Z, _ = problem
    lik = get_likelihood(likelihood)
    if likelihood == "gaussian":
        lik, y = lik.set_params(noise_variance=0.3), y + np.sin(X[:, 0])
    w = np.random.default_rng(4).uniform(0.2, 3.0, len(y))
    w[:3] = 0.0

    def run(theta, params=None):
        li = lik if params is None else lik.set_params(noise_variance=params)
        return sparse_ep(KERNEL.clone_with_theta(theta), li, X, y, Z, sample_weight=w,
                         tol=1e-13, max_iter=2000)

    theta, h = KERNEL.theta, 1e-5
    res = run(theta)
    fd = [(run(theta + h * e).log_evidence - run(theta - h * e).log_evidence) / (2 * h)
          for e in np.eye(len(theta))]
    np.testing.assert_allclose(res.grad, fd, rtol=1e-5)
    if likelihood == "gaussian":
        fd_s2 = (run(theta, 0.3 + h).log_evidence
                 - run(theta, 0.3 - h).log_evidence) / (2 * h)
        assert res.dlik[0] == pytest.approx(fd_s2, rel=1e-5)


def test_regressor_integer_weights_are_repeated_rows(problem):
    """The Gaussian likelihood: FITC regression, exact; the inducing inputs and
    hyperparameters fixed."""
    X, _, Z, Xs = problem
    t = np.sin(X[:, 0]) + 0.3 * X[:, 1]
    w = np.random.default_rng(5).integers(0, 3, len(t)).astype(float)
    rows = np.repeat(np.arange(len(t)), w.astype(int))

    def fit(X, t, w=None):
        return gpc.SparseGPRegressor(KERNEL, likelihood=get_likelihood(
            "gaussian").set_params(noise_variance=0.1), inducing_points=Z,
            optimizer=None, tol=1e-12).fit(X, t, sample_weight=w)

    a, b = fit(X, t, w), fit(X[rows], t[rows])
    assert a.log_marginal_likelihood_value_ == pytest.approx(
        b.log_marginal_likelihood_value_, abs=1e-9)
    for u, v in zip(a.predict(Xs, return_std=True), b.predict(Xs, return_std=True)):
        np.testing.assert_allclose(u, v, rtol=0, atol=1e-9)


@pytest.mark.parametrize("multi_class", ["one_vs_rest", "one_vs_one"])
def test_classifier_passes_each_binary_problem_its_weights(multi_class):
    """Three classes of the glass data, hyperparameters learnt: the fit with
    zero weights is the fit without those examples (they are left out before
    the inducing inputs are chosen), and each binary problem's evidence is
    weighted (it differs from the unweighted fit's)."""
    X, y = load_glass(multiclass=True)
    rows = np.flatnonzero(np.isin(y, [0, 1, 5]))
    X, y = X[rows], y[rows]
    w = np.random.default_rng(6).uniform(1.0, 2.0, len(y))
    w[::7] = 0.0
    keep = w > 0

    def fit(X, y, w=None):
        return gpc.SparseGPClassifier(C(1.0) * RBF(2.0), max_basis=20, random_state=0,
                                      multi_class=multi_class).fit(X, y, sample_weight=w)

    a, b, c = fit(X, y, w), fit(X[keep], y[keep], w[keep]), fit(X[keep], y[keep])
    for ea, eb, ec in zip(a.base_estimator_.estimators_, b.base_estimator_.estimators_,
                          c.base_estimator_.estimators_):
        np.testing.assert_allclose(ea.latent_mean_and_variance(X),
                                   eb.latent_mean_and_variance(X), atol=1e-10)
        assert ea.log_marginal_likelihood_value_ != pytest.approx(
            ec.log_marginal_likelihood_value_, rel=1e-3)


def test_adf_and_dask_data_refuse_weights(problem):
    X, y, _, _ = problem
    with pytest.raises(ValueError, match=r"method='adf'\) does not take sample"):
        gpc.SparseGPClassifier(method="adf").fit(X, y, sample_weight=np.ones(len(y)))
    with pytest.raises(ValueError, match="non-negative"):
        gpc.SparseGPClassifier().fit(X, y, sample_weight=-np.ones(len(y)))
    da = pytest.importorskip("dask.array")
    with pytest.raises(ValueError, match="with Dask data they are not supported"):
        gpc.SparseGPClassifier().fit(da.from_array(X, chunks=40), y,
                                     sample_weight=np.ones(len(y)))
    with pytest.raises(ValueError, match="with Dask data they are not supported"):
        gpc.SparseGPClassifier(class_weight="balanced").fit(
            da.from_array(X, chunks=40), y)
