"""Sparse EP on inducing inputs (gpc.sparse.ep): exact cases, agreement with full
EP, finite differences, and the cross / diagonal kernel contractions it uses."""

import warnings

import numpy as np
import pytest
from scipy.stats import multivariate_normal
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, DotProduct, Matern
from sklearn.gaussian_process.kernels import WhiteKernel

import gpc
from gpc.sparse._chunked import ChunkedData
from gpc.kernels import Matern as GpcMatern
from gpc.kernels import (SquaredExponential, contract, contract_cross, contract_diag,
                         contract_inputs)
from gpc.likelihoods import get_likelihood
from gpc.sparse import sparse_ep


def _data(n=60, d=2, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = np.sign(X[:, 0] + 0.5 * X[:, 1] ** 2 - 0.3 + 0.3 * rng.randn(n))
    return X, y


def _fd(f, theta, h=1e-5):
    return np.array([(f(theta + h * e) - f(theta - h * e)) / (2 * h)
                     for e in np.eye(theta.size)])


KERNELS = [
    ConstantKernel(1.5) * RBF([1.0, 0.7]),
    SquaredExponential([0.8, 1.2], variance=2.0),
    ConstantKernel(0.7) * Matern([1.0, 0.5], nu=2.5) + ConstantKernel(0.2),
    RBF(0.9) + DotProduct(0.5),
]


@pytest.mark.parametrize("kernel", KERNELS, ids=range(len(KERNELS)))
def test_contract_cross_equals_finite_differences(kernel):
    X, _ = _data(13, 2, 1)
    Z = X[:5] + 0.1
    G = np.random.RandomState(2).randn(13, 5)
    f = lambda t: float(np.sum(G * kernel.clone_with_theta(t)(X, Z)))
    np.testing.assert_allclose(contract_cross(kernel, X, Z, G), _fd(f, kernel.theta),
                               rtol=1e-6, atol=1e-8)


INPUT_KERNELS = [
    ConstantKernel(1.5) * RBF([1.0, 0.7]),
    SquaredExponential([0.8, 1.2], variance=2.0),
    ConstantKernel(0.7) * Matern([1.0, 0.5], nu=2.5) + ConstantKernel(0.2),
    Matern(0.9, nu=1.5) * RBF(2.0),
    Matern([0.9, 1.3], nu=0.5) + WhiteKernel(0.3),
    GpcMatern(1.1, nu=1.5, variance=0.8) ** 2,
]


@pytest.mark.parametrize("kernel", INPUT_KERNELS, ids=range(len(INPUT_KERNELS)))
def test_contract_inputs_equals_finite_differences(kernel):
    X, _ = _data(13, 2, 1)
    Z = X[:5] + 0.1
    G = np.random.RandomState(2).randn(13, 5)
    f = lambda z: float(np.sum(G * kernel(X, z.reshape(Z.shape))))
    np.testing.assert_allclose(contract_inputs(kernel, X, Z, G).ravel(),
                               _fd(f, Z.ravel()), rtol=1e-6, atol=1e-8)


def test_contract_inputs_refuses_kernels_without_an_input_gradient():
    X, _ = _data(5, 2, 1)
    with pytest.raises(ValueError, match="inducing inputs"):
        contract_inputs(RBF(1.0) + DotProduct(0.5), X, X[:2], np.ones((5, 2)))


@pytest.mark.parametrize("kernel", INPUT_KERNELS[:4], ids=range(4))
def test_inducing_gradient_equals_finite_differences(kernel):
    """The evidence moves with Z through K(Z, Z) and K(X, Z) both."""
    X, y = _data(80, 2, 7)
    Z = X[:10] + 0.05
    lik = get_likelihood("probit")
    f = lambda z: sparse_ep(kernel, lik, X, y, z.reshape(Z.shape), tol=1e-13,
                            max_iter=500, compute_gradient=False).log_evidence
    res = sparse_ep(kernel, lik, X, y, Z, tol=1e-13, max_iter=500, chunk_size=30,
                    inducing_gradient=True)
    np.testing.assert_allclose(res.dZ.ravel(), _fd(f, Z.ravel()), rtol=1e-5,
                               atol=1e-6)
    assert sparse_ep(kernel, lik, X, y, Z, tol=1e-6).dZ is None


@pytest.mark.parametrize("kernel", KERNELS + [RBF(1.0) + WhiteKernel(0.3)],
                         ids=range(len(KERNELS) + 1))
def test_contract_diag_equals_finite_differences(kernel):
    X, _ = _data(11, 2, 3)
    s = np.random.RandomState(4).randn(11)
    f = lambda t: float(s @ kernel.clone_with_theta(t).diag(X))
    np.testing.assert_allclose(contract_diag(kernel, X, s, chunk_size=4),
                               _fd(f, kernel.theta), rtol=1e-6, atol=1e-8)


def test_gaussian_likelihood_gives_the_fitc_evidence():
    """With a Gaussian likelihood EP is exact: the FITC marginal likelihood
    log N(y; 0, Q + diag(K - Q) + s2 I), evaluated here densely."""
    X, _ = _data(50, 2, 5)
    y = np.sin(2 * X[:, 0]) + 0.1 * np.random.RandomState(6).randn(50)
    Z, jitter = X[::5] + 0.05, 1e-4
    kernel = ConstantKernel(1.3) * RBF([0.9, 1.4])
    lik = get_likelihood("gaussian").with_params([0.2])

    def dense(theta, noise=0.2):
        k = kernel.clone_with_theta(theta)
        Kmm = k(Z)
        Kmm[np.diag_indices_from(Kmm)] *= 1 + jitter
        Knm = k(X, Z)
        Q = Knm @ np.linalg.solve(Kmm, Knm.T)
        cov = Q + np.diag(np.diag(k(X)) - np.diag(Q)) + noise * np.eye(50)
        return multivariate_normal(np.zeros(50), cov).logpdf(y)

    res = sparse_ep(kernel, lik, X, y, Z, jitter=jitter, tol=1e-12)
    assert res.info["converged"] and res.info["iterations"] <= 2
    assert abs(res.log_evidence - dense(kernel.theta)) < 1e-9
    np.testing.assert_allclose(res.grad, _fd(dense, kernel.theta), rtol=1e-6)
    d_noise = (dense(kernel.theta, 0.2 + 1e-6) - dense(kernel.theta, 0.2 - 1e-6)) / 2e-6
    np.testing.assert_allclose(res.dlik, [d_noise], rtol=1e-6)


@pytest.mark.parametrize("likelihood", ["probit", "logit"])
@pytest.mark.parametrize("updates", ["parallel", "sequential"])
def test_inducing_inputs_at_the_data_give_full_ep(likelihood, updates):
    """Z = X and no jitter: the model is the full GP, and the evidence, its
    gradient and the posterior are full EP's.  (Kernel conditioned so that
    K_mm's factor loses nothing: cond(K) ~ 1e4.)"""
    X, y = _data(60, 2, 0)
    kernel = ConstantKernel(1.5) * RBF([0.2, 0.14])
    res = sparse_ep(kernel, get_likelihood(likelihood), X, y, X.copy(), jitter=0.0,
                    tol=1e-13, max_iter=500)
    full = gpc.infer(kernel(X), y, method="ep", likelihood=likelihood, tol=1e-14,
                     updates=updates)
    assert abs(res.log_evidence - full.log_evidence) < 1e-8
    np.testing.assert_allclose(res.grad, contract(kernel, X, full.dK), rtol=1e-8,
                               atol=1e-8)
    Xs = np.random.RandomState(1).randn(7, 2)
    Ks = kernel(X, Xs)
    mean = Ks.T @ res.alpha
    var = kernel.diag(Xs) + np.einsum("ij,ij->j", Ks, res.C @ Ks)
    m_full, v_full = full.posterior.latent_mean_and_variance(Ks, kernel.diag(Xs))
    np.testing.assert_allclose(mean, m_full, atol=1e-8)
    np.testing.assert_allclose(var, v_full, atol=1e-8)


@pytest.mark.parametrize("likelihood", ["probit", "logit"])
@pytest.mark.parametrize("kernel", KERNELS[:3], ids=range(3))
def test_gradient_equals_finite_differences(likelihood, kernel):
    X, y = _data(80, 2, 7)
    Z = X[:12] + 0.05
    lik = get_likelihood(likelihood)
    f = lambda t: sparse_ep(kernel.clone_with_theta(t), lik, X, y, Z, tol=1e-13,
                            max_iter=500, compute_gradient=False).log_evidence
    res = sparse_ep(kernel, lik, X, y, Z, tol=1e-13, max_iter=500)
    np.testing.assert_allclose(res.grad, _fd(f, kernel.theta), rtol=1e-5, atol=1e-6)


def test_sites_short_of_the_fixed_point_are_declared():
    # The gradient assumes every site moment-matched.  The noisy threshold is not
    # log-concave: its updates to a negative precision are skipped, the evidence
    # is then not stationary in those sites and the gradient is not the
    # evidence's (here -0.88 in the log signal variance, on which the evidence
    # does not depend, and 0.22 against -2.19 in the log length scale); an
    # unconverged run is short of the fixed point too.
    X, y = _data(60, 2, 3)
    kernel, Z = ConstantKernel(1.0) * RBF(30.0), X[::4] + 0.05
    with pytest.warns(ConvergenceWarning, match="not moment-matched"):
        res = sparse_ep(kernel, gpc.likelihoods.NoisyThreshold(0.1), X, y, Z)
    assert res.info["n_skipped"] > 0 and res.info["gradient_exact"] is False
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        res = sparse_ep(kernel, get_likelihood("probit"), X, y, Z, max_iter=2)
    assert res.info["gradient_exact"] is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = sparse_ep(kernel, get_likelihood("probit"), X, y, Z)
    assert res.info["gradient_exact"] is True


def test_chunks_and_warm_starts_change_nothing():
    X, y = _data(90, 2, 8)
    Z, kernel = X[:15], ConstantKernel(2.0) * RBF([0.8, 1.1])
    lik = get_likelihood("probit")
    one = sparse_ep(kernel, lik, X, y, Z, tol=1e-12, max_iter=500)
    many = sparse_ep(kernel, lik, X, y, Z, tol=1e-12, max_iter=500, chunk_size=7)
    near = kernel.clone_with_theta(kernel.theta + 0.3)
    start = sparse_ep(near, lik, X, y, Z, tol=1e-12, max_iter=500).sites
    warm = sparse_ep(kernel, lik, X, y, Z, tol=1e-12, max_iter=500, sites=start)
    for other in (many, warm):
        assert abs(other.log_evidence - one.log_evidence) < 1e-9
        np.testing.assert_allclose(other.grad, one.grad, rtol=1e-7, atol=1e-9)
    assert warm.info["iterations"] < one.info["iterations"]


# -- the estimators' default method -------------------------------------------------

def test_classifier_with_every_input_inducing_is_full_ep():
    X, y = _data(70, 2, 9)
    kernel = ConstantKernel(1.5) * RBF([0.3, 0.2])
    clf = gpc.SparseGPClassifier(kernel, likelihood="probit", max_basis=70, jitter=0.0,
                                 tol=1e-12, optimizer=None).fit(X, y)
    full = gpc.infer(kernel(X), y, method="ep", likelihood="probit", tol=1e-14)
    assert abs(clf.log_marginal_likelihood_value_ - full.log_evidence) < 1e-8
    Xs = np.random.RandomState(3).randn(5, 2)
    p_full = get_likelihood("probit").predict(
        *full.posterior.latent_mean_and_variance(kernel(X, Xs), kernel.diag(Xs)))
    np.testing.assert_allclose(clf.predict_proba(Xs)[:, 1], p_full, atol=1e-8)


def test_stage_sizes_end_on_the_whole_data():
    assert gpc.sparse.learning.stage_sizes(10 ** 6, 200) == [10 ** 4, 10 ** 5, 10 ** 6]
    assert gpc.sparse.learning.stage_sizes(3000, 50) == [3000]
    assert gpc.sparse.learning.stage_sizes(10000, 50) == [10000]
    assert gpc.sparse.learning.stage_sizes(25000, 200) == [5000, 25000]
    # Two stages on 1,200 points (the estimator's on 12,000: the slow test below):
    # the second starts at the first's optimum, ends stationary on the whole data
    # and as high as a direct maximisation there.
    rng = np.random.RandomState(0)
    X = rng.randn(1200, 2)
    y = 2.0 * (X[:, 0] + 0.5 * rng.randn(1200) > 0) - 1.0
    kernel, lik = ConstantKernel(1.0) * RBF(1.0), get_likelihood("probit")
    data = ChunkedData.from_arrays(X, y, 2048, random_state=0)
    theta, res, info = gpc.sparse.learning.maximize_sparse_evidence(
        kernel, lik, data, X[:20], learn_likelihood=False, smallest_stage=20)
    assert info["stages"] == [200, 1200]
    assert sum(s[0].size for s in res.sites) == 1200
    assert len(info["history"][-1]) < len(info["history"][0])
    assert info["stationary"] and info["projected_gradient"] <= info["gtol"]
    direct = gpc.sparse.learning.SparseEvidence(kernel, lik, X, y, X[:20])
    best = gpc.maximize_evidence(direct, direct.theta, direct.bounds)
    assert res.log_evidence > 1200 * (best.objective - gpc.optimize.TOL_PER_EXAMPLE)


@pytest.mark.slow        # 12,000 points learnt in stages by the estimator
def test_stages_end_on_the_whole_data():
    rng = np.random.RandomState(0)
    X = rng.randn(12000, 2)
    y = (X[:, 0] + 0.5 * rng.randn(12000) > 0).astype(int)
    clf = gpc.SparseGPClassifier(ConstantKernel(1.0) * RBF(1.0), likelihood="probit",
                                 max_basis=20,
                                 random_state=0).fit(X, y)
    assert clf.inference_info_["stages"] == [5000, 12000]
    assert clf.log_marginal_likelihood_value_ == pytest.approx(
        max(clf.evidence_history_), abs=1e-6 * 12000)
    # Three stages on nested subsets: each starts from the previous optimum and
    # sites, so the last takes few evaluations and ends at the whole data's optimum.
    kernel, lik = ConstantKernel(1.0) * RBF(1.0), get_likelihood("probit")
    data = ChunkedData.from_arrays(X, 2.0 * y - 1.0, 2048, random_state=0)
    theta, res, info = gpc.sparse.learning.maximize_sparse_evidence(
        kernel, lik, data, clf.basis_vectors_, learn_likelihood=False,
        smallest_stage=120)
    assert info["stages"] == [200, 1200, 12000]
    assert sum(s[0].size for s in res.sites) == 12000
    # The evaluations stop EP at 1e-4; the estimator continues EP at its theta to
    # tol (1e-6): its evidence is EP's to 1e-10.
    assert res.info["converged"] and res.info["max_change"] < 1e-4
    assert clf.inference_info_["converged"]
    assert clf.inference_info_["max_change"] < 1e-6
    fine = sparse_ep(clf.kernel_, lik, X, 2.0 * y - 1.0, clf.basis_vectors_,
                     tol=1e-10, compute_gradient=False)
    assert clf.log_marginal_likelihood_value_ == pytest.approx(
        fine.log_evidence, abs=1e-7)
    assert len(info["history"][-1]) < len(info["history"][0])
    # The last stage ends where the projected gradient per example is at most
    # its tolerance (1e-3 nats of log loss per unit of a log-hyperparameter),
    # and within that much per example of the optimum of a tight direct
    # maximisation on the whole data.
    assert info["stationary"] and info["gtol"] == gpc.optimize.TOL_PER_EXAMPLE
    assert info["projected_gradient"] <= info["gtol"]
    assert clf.inference_info_["stationary"]
    direct = gpc.sparse.learning.SparseEvidence(kernel, lik, X, 2.0 * y - 1.0,
                                          clf.basis_vectors_)
    best = gpc.maximize_evidence(direct, direct.theta, direct.bounds)
    assert res.log_evidence > 12000 * (best.objective - gpc.optimize.TOL_PER_EXAMPLE)


def test_regressor_learns_the_noise_by_maximum_evidence():
    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, (1000, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(1000)
    reg = gpc.SparseGPRegressor(RBF(1.0), max_basis=30, random_state=0).fit(X, y)
    assert reg.likelihood_.noise_variance == pytest.approx(0.01, rel=0.2)
    assert abs(reg.predict([[0.5]])[0] - np.sin(0.5)) < 0.05


def test_learnt_inducing_inputs_raise_the_evidence():
    """From the same start, inducing inputs learnt with the hyperparameters end
    at a higher evidence than fixed ones, and the fitted model is EP's at them."""
    rng = np.random.RandomState(0)
    X = rng.randn(1500, 2)
    y = (X[:, 0] * X[:, 1] + 0.3 * rng.randn(1500) > 0).astype(int)
    Z = X[:8]
    fits = [gpc.SparseGPClassifier(ConstantKernel(1.0) * RBF([1.0, 1.0]),
                                   likelihood="probit",
                                   inducing_points=Z, learn_inducing_points=learn,
                                   random_state=0).fit(X, y) for learn in (False, True)]
    fixed, learnt = fits
    np.testing.assert_array_equal(fixed.basis_vectors_, Z)
    assert np.abs(learnt.basis_vectors_ - Z).max() > 0.1
    assert learnt.log_marginal_likelihood_value_ > fixed.log_marginal_likelihood_value_ + 1
    assert learnt.inference_info_["stationary"]
    again = sparse_ep(learnt.kernel_, get_likelihood("probit"), X, 2.0 * y - 1.0,
                      learnt.basis_vectors_, tol=1e-10, compute_gradient=False)
    assert learnt.log_marginal_likelihood_value_ == pytest.approx(again.log_evidence,
                                                                  abs=1e-6)


def test_interrupted_fit_keeps_the_best_hyperparameters(monkeypatch, capsys):
    X, y = _data(300, 2, 10)
    calls = {"n": 0}
    original = gpc.sparse.learning.SparseEvidence.__call__

    def interrupted(self, theta):
        calls["n"] += 1
        if calls["n"] > 4:
            raise KeyboardInterrupt
        return original(self, theta)

    monkeypatch.setattr(gpc.sparse.learning.SparseEvidence, "__call__", interrupted)
    clf = gpc.SparseGPClassifier(ConstantKernel(1.0) * RBF(1.0), max_basis=20,
                                 random_state=0, verbose=1)
    with pytest.warns(RuntimeWarning, match="interrupted"):
        clf.fit(X, y)
    assert clf.inference_info_["interrupted"]
    best = max(clf.evidence_history_)
    assert len(clf.evidence_history_) == 4
    assert clf.log_marginal_likelihood_value_ == pytest.approx(best, abs=1e-6)
    out = capsys.readouterr().out
    assert out.count("evaluation") == 4 and "|gradient|" in out


def test_verbose_reports_the_sweeps_of_a_fit_with_a_fixed_kernel(capsys):
    # The default (fixed) kernel learns nothing: a long fit is one EP on all
    # the data, which printed nothing at verbose=1.
    X, y = _data(3000, 2, 12)
    gpc.SparseGPClassifier(max_basis=20, verbose=1, random_state=0).fit(X, y)
    out = capsys.readouterr().out
    assert out.count("[gpc sparse EP] sweep") >= 2 and "largest site change" in out


@pytest.mark.parametrize("n, subset", [(12000, True), (9000, False)])
def test_an_interrupt_makes_no_further_pass_over_the_data(monkeypatch, n, subset):
    # Ctrl-C used to be followed by EP to tol on the whole data from the best
    # evaluation, 15 s at n = 200,000: the fit now keeps the evaluation as it
    # is, from a subset's stage (at n = 12000, before the whole data's) or the
    # whole data's (at n = 9000, the only stage).
    X, y = _data(n, 2, 11)
    original = gpc.sparse.learning.SparseEvidence.__call__
    calls = {"n": 0}

    def interrupted(self, theta):
        if (self.data.n < n) == subset:
            calls["n"] += 1
            if calls["n"] > 2:
                raise KeyboardInterrupt
        return original(self, theta)

    def no_run(self, *args, **kwargs):
        raise AssertionError("a pass over the data after the interrupt")

    monkeypatch.setattr(gpc.sparse.learning.SparseEvidence, "__call__", interrupted)
    monkeypatch.setattr(gpc.sparse.learning.SparseEvidence, "run", no_run)
    clf = gpc.SparseGPClassifier(ConstantKernel(1.0) * RBF(1.0), max_basis=20,
                                 random_state=0)
    rows = r"\d+" if subset else str(n)
    with pytest.warns(RuntimeWarning, match=f"interrupted.* on {rows} rows"):
        clf.fit(X, y)
    assert clf.inference_info_["interrupted"]
    assert len(clf.inference_info_["stages"]) == (2 if subset else 1)
    assert clf.score(X, y) > 0.8


@pytest.mark.parametrize("allowed", [0, 3])
def test_interrupted_inducing_stage_keeps_a_consistent_model(monkeypatch, allowed):
    """Ctrl-C in the stage that moves the inducing inputs (before its first
    evaluation, or after three) keeps the best inputs evaluated with their
    hyperparameters: the fitted model is EP's at its own basis vectors."""
    X, y = _data(300, 2, 10)
    original = gpc.sparse.learning.SparseEvidence.__call__
    moved = {"n": 0}

    def interrupted(self, theta):
        if self.learn_inducing:
            if moved["n"] >= allowed:
                raise KeyboardInterrupt
            moved["n"] += 1
        return original(self, theta)

    monkeypatch.setattr(gpc.sparse.learning.SparseEvidence, "__call__", interrupted)
    kw = dict(max_basis=10, random_state=0)
    clf = gpc.SparseGPClassifier(ConstantKernel(1.0) * RBF(1.0), likelihood="probit",
                                 learn_inducing_points=True, **kw)
    with pytest.warns(RuntimeWarning, match="interrupted"):
        clf.fit(X, y)
    assert clf.inference_info_["interrupted"]
    fixed = gpc.SparseGPClassifier(ConstantKernel(1.0) * RBF(1.0), likelihood="probit", **kw).fit(X, y)
    moved_inputs = np.abs(clf.basis_vectors_ - fixed.basis_vectors_).max()
    assert (moved_inputs > 0) == (allowed > 0)
    again = sparse_ep(clf.kernel_, get_likelihood("probit"), X, y,
                      clf.basis_vectors_, tol=1e-10, compute_gradient=False)
    assert clf.log_marginal_likelihood_value_ == pytest.approx(again.log_evidence,
                                                               abs=1e-6)


def test_damped_passes_judge_convergence_by_the_undamped_step():
    # A cold start at a large signal variance overshoots: damping must follow
    # the distance from the fixed point, not the (damped) step taken, or it
    # cycles between 0.05 and 0.0625 and stops on steps that are small only
    # because they are damped.  (This one cycled for 100 passes, change 2e-4.)
    rng = np.random.RandomState(0)
    X = rng.randn(12000, 2)
    y = np.where(X[:, 0] + 0.5 * rng.randn(12000) > 0, 1.0, -1.0)
    Z = X[rng.choice(12000, 20, replace=False)]
    kernel, lik = ConstantKernel(38.4) * RBF(6.36), get_likelihood("probit")
    cold = sparse_ep(kernel, lik, X, y, Z, tol=1e-8, compute_gradient=False)
    assert cold.info["converged"] and cold.info["passes"] < 40
    warm = sparse_ep(kernel, lik, X, y, Z, sites=cold.sites, tol=1e-10,
                     compute_gradient=False)
    assert warm.log_evidence == pytest.approx(cold.log_evidence, abs=1e-8)
    # Small damping cannot pass off small steps as convergence.
    slow = sparse_ep(kernel, lik, X, y, Z, damping=0.01, max_iter=20,
                     compute_gradient=False)
    assert not slow.info["converged"] and slow.info["max_change"] > 1e-6


def test_later_stages_step_by_the_earlier_curvature_and_stop_on_the_gradient():
    # A quadratic total evidence -(t - mu)' A (t - mu) / 2.
    A = np.array([[4.0, 1.0, 0.0], [1.0, 2.0, 0.3], [0.0, 0.3, 0.5]])
    mu = np.array([0.7, -0.4, 1.3])
    calls = []

    def fun(theta):
        calls.append(np.array(theta))
        r = theta - mu
        return 0.5 * r @ A @ r, A @ r            # to minimise

    bounds = np.array([[-5.0, 5.0]] * 3)
    run = gpc.optimize.lbfgsb(fun, np.zeros(3), bounds, 1e-8, 1e-3)
    # Without a first step given, the first step is one unit long.
    assert np.linalg.norm(calls[1] - calls[0]) == pytest.approx(1.0)
    np.testing.assert_allclose(run.x, mu, atol=1e-6)
    # The curvature it returns is the quadratic's: a Newton step to the optimum.
    start = np.array([0.2, 0.1, -0.3])
    g = A @ (start - mu)
    np.testing.assert_allclose(run.newton(g), np.linalg.solve(A, g), rtol=0.05,
                               atol=1e-3)
    # A run given that step as its first takes it (within [0.05, 1]).
    calls.clear()
    length = min(np.linalg.norm(run.newton(g)), 1.0)
    gpc.optimize.lbfgsb(fun, start, bounds, 1e-3, 1e-3, first_step=lambda pg: length)
    assert np.linalg.norm(calls[1] - start) == pytest.approx(length, rel=1e-6)
    # A start whose projected gradient is already within the tolerance ends at
    # its first evaluation; a tighter tolerance goes on.
    calls.clear()
    near = mu + np.array([1e-4, -1e-4, 2e-4])
    assert np.max(np.abs(A @ (near - mu))) < 1e-3
    gpc.optimize.lbfgsb(fun, near, bounds, 1e-3, 1e-3)
    assert len(calls) == 1
    gpc.optimize.lbfgsb(fun, near, bounds, 1e-6, 1e-6)
    assert len(calls) > 2


def test_a_kernel_without_an_input_gradient_is_refused_before_learning():
    # Learning inducing inputs needs the kernel's gradient in its inputs; a
    # kernel without one is refused before any stage of evidence maximisation
    # runs, not after them.
    from sklearn.gaussian_process.kernels import RationalQuadratic

    rng = np.random.RandomState(0)
    X = rng.randn(300, 2)
    y = (X[:, 0] > 0).astype(int)
    calls = []
    original = gpc.sparse.learning.SparseEvidence.__call__

    def counted(self, theta):
        calls.append(1)
        return original(self, theta)

    clf = gpc.SparseGPClassifier(RationalQuadratic(), max_basis=10,
                                 learn_inducing_points=True, random_state=0)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gpc.sparse.learning.SparseEvidence, "__call__", counted)
        with pytest.raises(ValueError, match="gradient of the kernel"):
            clf.fit(X, y)
    assert not calls
