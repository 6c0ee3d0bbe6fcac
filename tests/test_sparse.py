"""The sparse online GP: agreement with full ADF and EP when nothing is pruned, the
KL-optimal removal and the projected update against independent computations,
bounded memory, the estimators."""

import warnings

import numpy as np
import pytest
from scipy.linalg import solve
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import kernels as sklearn_kernels
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

import gpc
from gpc.likelihoods import Gaussian, get_likelihood
from gpc.sparse import SparseState, ep_sweeps, online_pass
from _registry import expected_failed_checks
from _sites import data


def _problem(n=40, seed=0, ls=0.5):
    X, y = data(n, seed)
    return X, y, C(2.0) * RBF(ls)


def _online(kernel, lik, X, y, max_basis, tol=0.0, chunk=7, sites=None):
    state = SparseState(max_basis, X.shape[1])
    online_pass(kernel, lik, X, y, state, novelty_tol=tol, chunk_size=chunk,
                sites=sites)
    return state


def _latent(kernel, state, Xs):
    alpha, Cm, _ = state.matrices()
    Kbx = kernel(state.X, Xs)
    return Kbx.T @ alpha, kernel.diag(Xs) + np.einsum("ij,ij->j", Kbx, Cm @ Kbx)


@pytest.mark.parametrize("name", ["probit", "logit", "step"])
@pytest.mark.parametrize("chunk", [1, 7, 100])
def test_without_pruning_the_online_pass_is_adf(name, chunk):
    X, y, kernel = _problem()
    lik = get_likelihood(name)
    state = _online(kernel, lik, X, y, max_basis=40, chunk=chunk)
    full = gpc.infer(kernel(X), y, method="adf", likelihood=lik)
    alpha, Cm, Q = state.matrices()
    np.testing.assert_array_equal(state.X, X)            # every input joined, in order
    np.testing.assert_allclose(alpha, full.posterior.alpha, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(Cm, full.posterior.C, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(Q, np.linalg.inv(kernel(X)), rtol=1e-6, atol=1e-8)
    assert state.log_evidence == pytest.approx(full.log_evidence, rel=1e-12)


def test_gaussian_likelihood_without_pruning_is_exact_regression():
    X, _, kernel = _problem(30, 1)
    y = np.sin(2 * X[:, 0])
    state = _online(kernel, Gaussian(0.1), X, y, max_basis=30)
    A = kernel(X) + 0.1 * np.eye(30)
    exact = (-0.5 * y @ solve(A, y) - 0.5 * np.linalg.slogdet(A)[1]
             - 15 * np.log(2 * np.pi))
    assert state.log_evidence == pytest.approx(exact, rel=1e-10)
    Xs = np.array([[0.3, 0.1], [-1.0, 2.0]])
    mean, var = _latent(kernel, state, Xs)
    Ks = kernel(X, Xs)
    np.testing.assert_allclose(mean, Ks.T @ solve(A, y), rtol=1e-9)
    np.testing.assert_allclose(var, kernel.diag(Xs) - np.einsum(
        "ij,ij->j", Ks, solve(A, Ks)), rtol=1e-8)


@pytest.mark.parametrize("name", ["probit", "logit"])
def test_ep_sweeps_without_pruning_are_full_ep(name):
    X, y, kernel = _problem(40, 2)
    lik = get_likelihood(name)
    tau, nu = np.zeros(40), np.zeros(40)
    state = _online(kernel, lik, X, y, max_basis=40, sites=(tau, nu))
    info = ep_sweeps(kernel, lik, X, y, state, tau, nu, 100, tol=1e-10, chunk_size=9)
    assert info["converged"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        full = gpc.infer(kernel(X), y, method="ep", likelihood=lik, tol=1e-13)
    Xs = np.vstack([X[:4], [[0.2, -0.4]]])
    m1, v1 = _latent(kernel, state, Xs)
    m2, v2 = full.posterior.latent_mean_and_variance(kernel(X, Xs), kernel.diag(Xs))
    np.testing.assert_allclose(m1, m2, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(v1, v2, rtol=1e-8, atol=1e-10)
    assert info["log_evidence"] == pytest.approx(full.log_evidence, rel=1e-8)


def _kl_projection(alpha, Cm, K, i):
    """The GP (alpha, C) on points K's rows projected onto all points but i: the
    kernel function of point i replaced by its projection e = K_r^{-1} k_ri."""
    r = np.delete(np.arange(len(alpha)), i)
    e = solve(K[np.ix_(r, r)], K[r, i])
    P = np.eye(len(alpha))[r] + np.outer(e, np.eye(len(alpha))[i])   # (n-1) x n
    return P @ alpha, P @ Cm @ P.T, r


def test_removal_is_the_kl_projection_of_the_lowest_score():
    X, y, kernel = _problem(25, 3)
    lik = get_likelihood("probit")
    full = _online(kernel, lik, X, y, max_basis=25)
    alpha, Cm, Q = full.matrices()
    score = alpha ** 2 / (np.diag(Q) + np.diag(Cm))
    worst = int(np.argmin(score))
    a_hat, C_hat, keep = _kl_projection(alpha, Cm, kernel(X), worst)
    pruned = _online(kernel, lik, X, y, max_basis=24)
    assert pruned.d == 24
    # The same GP, whatever the slot order.
    Xs = np.vstack([X, [[0.5, 0.5]]])
    Kr = kernel(X[keep], Xs)
    mean, var = _latent(kernel, pruned, Xs)
    np.testing.assert_allclose(mean, Kr.T @ a_hat, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(var, kernel.diag(Xs) + np.einsum(
        "ij,ij->j", Kr, C_hat @ Kr), rtol=1e-9, atol=1e-11)
    assert sorted(map(tuple, pruned.X)) == sorted(map(tuple, X[keep]))


def test_projected_update_of_a_repeated_input_is_exact():
    # An input already in the BV set has no novelty: its update is projected onto
    # the BV set, which for the same input is exact: the posterior is full ADF's.
    X, y, kernel = _problem(12, 4)
    Xr = np.vstack([X, X[3:5]])
    yr = np.concatenate([y, -y[3:5]])
    lik = get_likelihood("probit")
    state = _online(kernel, lik, Xr, yr, max_basis=20, tol=1e-10)
    assert state.d == 12
    full = gpc.infer(kernel(Xr), yr, method="adf", likelihood=lik)
    Xs = np.array([[0.1, 0.0], [1.0, -1.0]])
    mean, var = _latent(kernel, state, Xs)
    m2, v2 = full.posterior.latent_mean_and_variance(kernel(Xr, Xs), kernel.diag(Xs))
    np.testing.assert_allclose(mean, m2, rtol=1e-9)
    np.testing.assert_allclose(var, v2, rtol=1e-9)
    assert state.log_evidence == pytest.approx(full.log_evidence, rel=1e-12)


def test_memory_is_bounded_by_the_capacity():
    rng = np.random.RandomState(5)
    X = rng.randn(3000, 3)
    y = np.where(X[:, 0] + X[:, 1] ** 2 > 1, 1.0, -1.0)
    state = SparseState(30, 3)
    info = online_pass(RBF(1.0), get_likelihood("logit"), X, y, state)
    assert state.d == 30 and state.alpha.shape == (31,) and state.C.shape == (31, 31)
    assert info["n_joined"] - info["n_removed"] == 30
    assert info["n_projected"] + info["n_joined"] == 3000


def test_classifier_fit_partial_fit_and_ovr():
    X, y = data(300, 6)
    clf = gpc.SparseGPClassifier(RBF(1.0), method="adf",
                                 max_basis=40, optimizer=None)
    clf.fit(X, y)
    assert clf.n_basis_ <= 40 and clf.score(X, y) > 0.85
    stream = gpc.SparseGPClassifier(RBF(1.0), method="adf",
                                    max_basis=40, optimizer=None,
                                    chunk_size=50)
    with pytest.raises(ValueError, match="classes must be passed"):
        stream.partial_fit(X[:50], y[:50])
    for start in range(0, 300, 50):
        stream.partial_fit(X[start:start + 50], y[start:start + 50], classes=[-1, 1])
    np.testing.assert_allclose(stream.predict_proba(X),
                               gpc.SparseGPClassifier(RBF(1.0), method="adf",
                                                      max_basis=40,
                                                      optimizer=None, chunk_size=50)
                               .fit(X, y).predict_proba(X), rtol=1e-8)
    # More than two classes: one sparse GP per class.
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    multi = gpc.SparseGPClassifier(RBF(1.0), method="adf",
                                   max_basis=30, optimizer=None).fit(X, y3)
    p = multi.predict_proba(X)
    assert p.shape == (300, 3) and np.allclose(p.sum(1), 1)
    assert multi.score(X, y3) > 0.8
    # The classes in two joblib workers: the same fit.
    parallel = gpc.SparseGPClassifier(RBF(1.0), method="adf",
                                      max_basis=30, optimizer=None,
                                      n_jobs=2).fit(X, y3)
    np.testing.assert_array_equal(parallel.predict_proba(X), p)


def test_ep_sweeps_and_em_raise_the_evidence():
    X, y = data(400, 7)
    kernel = C(1.0) * RBF(1.0)
    online = gpc.SparseGPClassifier(kernel, method="adf",
                                    max_basis=50, optimizer=None).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        swept = gpc.SparseGPClassifier(kernel, method="adf",
                                       max_basis=50, optimizer=None,
                                       n_sweeps=20, tol=1e-8).fit(X, y)
        em = gpc.SparseGPClassifier(kernel, method="adf", max_basis=50, n_sweeps=5,
                                    n_em=4).fit(X, y)
    assert swept.inference_info_["ep_converged"]
    assert swept.log_marginal_likelihood_value_ > online.log_marginal_likelihood_value_
    h = em.evidence_history_
    assert len(h) == 5 and h[-1] > h[0]


@pytest.mark.parametrize("max_basis, steps", [(10, 0), (20, 2)])
def test_em_never_ends_below_its_start(max_basis, steps):
    # With few basis vectors Csato's M-step (the basis vectors' expected log
    # prior) drives the length scale of this XOR-like problem to 0.01-0.02,
    # where the log evidence fell from -164 to -415 and the test accuracy to
    # 0.53.  EM keeps only steps that raise the log evidence, and warns when
    # it could take none.
    rng = np.random.RandomState(0)
    X = rng.randn(600, 2)
    y = X[:, 0] * X[:, 1] > 0
    Xt = rng.randn(2000, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        em = gpc.SparseGPClassifier(C(1.0) * RBF(1.0), likelihood="probit", method="adf",
                                    max_basis=max_basis, random_state=0).fit(X, y)
    learnt_nothing = [w for w in caught if "EM learnt nothing" in str(w.message)]
    assert len(learnt_nothing) == (steps == 0)
    assert em.inference_info_["n_em"] == steps
    fixed = gpc.SparseGPClassifier(C(1.0) * RBF(1.0), likelihood="probit", method="adf",
                                   max_basis=max_basis, optimizer=None).fit(X, y)
    h = em.evidence_history_
    assert h[0] == fixed.log_marginal_likelihood_value_
    assert em.log_marginal_likelihood_value_ == max(h) >= h[0]
    assert (em.log_marginal_likelihood_value_ > h[0]) == (steps > 0)
    accuracy = lambda m: np.mean(m.predict(Xt) == (Xt[:, 0] * Xt[:, 1] > 0))
    assert accuracy(em) >= accuracy(fixed) - 0.01 and accuracy(fixed) > 0.9


def test_regressor_learns_gaussian_noise():
    rng = np.random.RandomState(8)
    X = rng.uniform(-3, 3, (600, 1))
    y = np.sin(2 * X[:, 0]) + 0.2 * rng.randn(600)
    reg = gpc.SparseGPRegressor(RBF(0.5, "fixed"), method="adf",
                                max_basis=40, n_em=8).fit(X, y)
    assert reg.likelihood_.noise_variance == pytest.approx(0.04, rel=0.25)
    mean, std = reg.predict(X[:5], return_std=True)
    assert np.all(np.abs(mean - np.sin(2 * X[:5, 0])) < 0.2)
    assert np.all((std > 0.19) & (std < 0.3))


def test_bad_parameters_and_input_are_refused():
    X, y = data(20, 9)
    for bad in [dict(max_basis=0), dict(n_sweeps=0), dict(novelty_tol=-1),
                dict(damping=0), dict(tol=0), dict(optimizer="bfgs"), dict(n_em=-1),
                dict(likelihood="gaussian"), dict(method="fitc"), dict(jitter=-1),
                dict(learn_inducing_points=1.5),
                dict(learn_inducing_points=True, method="adf"),
                dict(learn_inducing_points=True, optimizer=None)]:
        with pytest.raises(ValueError):
            gpc.SparseGPClassifier(**bad).fit(X, y)
    with pytest.raises(ValueError, match="regression likelihood"):
        gpc.SparseGPRegressor(likelihood="probit").fit(X, y)
    clf = gpc.SparseGPClassifier(optimizer=None).fit(X, y)
    before = clf.alpha_.copy()
    with pytest.raises(ValueError):
        clf.fit(X, np.full(20, np.nan))
    np.testing.assert_array_equal(clf.alpha_, before)       # a failed fit keeps state


@pytest.mark.parametrize("bad", [dict(tol="abc"), dict(damping="abc"),
                                 dict(jitter=None), dict(max_basis=20.0)])
def test_parameters_of_the_wrong_type_are_refused_with_their_name(bad):
    # A string tol or damping once failed in np.isfinite or a comparison with
    # a message that did not name them.
    X, y = data(20, 9)
    name = next(iter(bad))
    clf = gpc.SparseGPClassifier(method="adf", optimizer=None, **bad)
    with pytest.raises(TypeError, match=f"^{name} must be"):
        clf.fit(X, y)
    with pytest.raises(TypeError, match=f"^{name} must be"):
        clf.partial_fit(X, y, classes=np.unique(y))


def test_a_novelty_tol_that_admits_no_basis_vector_is_refused():
    # novelty_tol=10 once gave an empty BV set and constant predictions,
    # silently.  The novelty of an example, the variance of f(x) that the BV set
    # leaves unexplained, is at most k(x, x): at novelty_tol >= 1 none joins;
    # below 1 the first example always does.
    X, y = data(20, 9)
    for tol in (1.0, 10):
        clf = gpc.SparseGPClassifier(RBF(1.0), likelihood="probit",
                                 method="adf", optimizer=None,
                                     novelty_tol=tol)
        with pytest.raises(ValueError, match=r"^novelty_tol must be .* \[0, 1\)"):
            clf.fit(X, y)
        with pytest.raises(ValueError, match=r"^novelty_tol must be .* \[0, 1\)"):
            clf.partial_fit(X, y, classes=np.unique(y))
    clf = gpc.SparseGPClassifier(RBF(1.0), likelihood="probit",
                                 method="adf", optimizer=None,
                                 novelty_tol=0.999).fit(X, y)
    assert clf.n_basis_ >= 1
    assert np.ptp(clf.predict_proba(X)[:, 1]) > 0.1


def test_ep_sweeps_converge_with_examples_unrelated_to_the_basis():
    # A cluster far from every basis vector (its kernel row on the BV
    # set is 0) has nothing to update, but it was counted as skipped updates, so
    # EP with the Gaussian likelihood "did not converge" at a largest site change
    # of 1e-14.
    rng = np.random.RandomState(0)
    X = np.vstack([rng.randn(50, 1), 100.0 + rng.randn(50, 1)])
    y = np.sin(X[:, 0])
    kernel, s2 = RBF(1.0), 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        reg = gpc.SparseGPRegressor(kernel, likelihood=Gaussian(s2), method="adf",
                                    max_basis=3, n_sweeps=5, optimizer=None).fit(X, y)
    assert reg.inference_info_["ep_converged"]
    B = reg.basis_vectors_
    Kbx = kernel(B, X)
    assert np.sum(~Kbx.any(axis=0)) >= 50               # the far cluster
    # EP's fixed point with Gaussian noise is exact for the model f(x) = p(x)'f(BV)
    # + N(0, gamma(x)): alpha = (K_BV + K_BX L K_XB)^{-1} K_BX L y with
    # L = diag(1 / (s2 + gamma)).
    Kbb = kernel(B)
    gamma = np.maximum(kernel.diag(X) - np.einsum("ij,ij->j", Kbx, solve(Kbb, Kbx)),
                       0.0)
    lam = 1.0 / (s2 + gamma)
    alpha = solve(Kbb + (Kbx * lam) @ Kbx.T, Kbx @ (lam * y))
    np.testing.assert_allclose(reg.alpha_, alpha, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("Estimator", [gpc.SparseGPClassifier, gpc.SparseGPRegressor])
def test_check_estimator(Estimator):
    from sklearn.utils.estimator_checks import check_estimator

    expected = expected_failed_checks(True, class_weight=Estimator is gpc.SparseGPClassifier)
    # Repeated rows move the k-means++ inducing inputs and the learner's random
    # subsets; with both fixed, integer weights are repeated rows
    # (tests/test_sparse_weights.py).
    expected["check_sample_weight_equivalence_on_dense_data"] = (
        "the inducing inputs and the learner's subsets depend on repeated rows")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(Estimator(), on_fail=None,
                                  expected_failed_checks=expected)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results
              if r["status"] == "failed"]
    assert failed == []


def _one_sided_toy(seed, n=200, rate=2.0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-4, 4, (n, 1))
    f = np.sin(X[:, 0]) + X[:, 0] / 3
    return X, f + rng.exponential(1.0 / rate, n), f


def test_em_recovers_the_one_sided_noise_rate_and_laplace_shows_its_bias():
    # Csató & Opper's Fig. 2: y = f + Exp(lambda = 2) noise.  With the one-sided
    # likelihood EM finds lambda and the latent mean follows f; the symmetric
    # Laplace likelihood puts it near the noise's median above f.
    X, y, f = _one_sided_toy(0)
    kernel = C(1.0, "fixed") * RBF(1.0, "fixed")
    one = gpc.SparseGPRegressor(kernel, method="adf",
                                likelihood="one_sided_exponential",
                                max_basis=50, n_em=30).fit(X, y)
    lap = gpc.SparseGPRegressor(kernel, method="adf",
                                likelihood="laplace", max_basis=50,
                                n_em=30).fit(X, y)
    assert one.likelihood_.rate == pytest.approx(2.0, rel=0.1)
    m_one, _ = one.latent_mean_and_variance(X)
    m_lap, _ = lap.latent_mean_and_variance(X)
    assert abs(np.mean(m_one - f)) < 0.05
    assert np.mean(m_lap - f) == pytest.approx(np.log(2) / 2, abs=0.08)
    # The predictive mean of y adds the noise mean 1 / lambda.
    np.testing.assert_allclose(one.predict(X[:3]), m_one[:3] + 1 / one.likelihood_.rate)


def test_sorted_one_dimensional_data_match_full_adf():
    # Sorted inputs admit close basis vectors first; K_BV must stay well
    # conditioned for the later, distant ones (which must join).
    X, y, _ = _one_sided_toy(1)
    order = np.argsort(X[:, 0])
    X, y = X[order], y[order]
    kernel = C(1.0, "fixed") * RBF(1.0, "fixed")
    lik = get_likelihood("one_sided_exponential").with_params([2.0])
    state = _online(kernel, lik, X, y, max_basis=50, tol=0.0, chunk=512)
    full = gpc.infer(kernel(X), y, method="adf", likelihood=lik)
    grid = np.linspace(-4, 4, 41)[:, None]
    mean, _ = _latent(kernel, state, grid)
    np.testing.assert_allclose(mean, kernel(grid, X) @ full.posterior.alpha, atol=0.02)
    assert np.linalg.cond(kernel(state.X)) < 1e12


def test_regressor_partial_fit_equals_fit_and_pickles():
    import pickle

    rng = np.random.RandomState(10)
    X = rng.uniform(-3, 3, (300, 2))
    y = np.sin(X[:, 0]) * X[:, 1] + 0.1 * rng.randn(300)
    make = lambda: gpc.SparseGPRegressor(RBF(1.0), method="adf",
                                         likelihood=Gaussian(0.01),
                                         max_basis=40, optimizer=None, chunk_size=100)
    full = make().fit(X, y)
    stream = make()
    for start in range(0, 300, 100):
        stream.partial_fit(X[start:start + 100], y[start:start + 100])
    np.testing.assert_allclose(stream.predict(X), full.predict(X), rtol=1e-9, atol=1e-12)
    again = pickle.loads(pickle.dumps(stream))
    np.testing.assert_array_equal(again.predict(X), stream.predict(X))
    again.partial_fit(X[:10], y[:10])                      # the copy keeps learning
    assert again._state.n_seen == 310 and stream._state.n_seen == 300


def test_verbose_reports_progress(capsys):
    X, y = data(600, 11)
    gpc.SparseGPClassifier(RBF(1.0), method="adf",
                           max_basis=20, optimizer=None, n_sweeps=2,
                           chunk_size=100, verbose=1).fit(X, y)
    out = capsys.readouterr().out
    assert "600/600 examples" in out and "EP sweep 1" in out


@pytest.mark.parametrize("name", ["one_sided_exponential", "laplace"])
def test_ep_sweeps_with_pruning_approach_full_ep_for_the_regression_noises(name):
    # 22 BVs represent a smooth 1-D function as well as all 200 inputs: the sparse
    # EP evidence is the full EP one (the hard constraint y > f of the one-sided
    # noise gives very precise sites; the sweeps work on the posterior of f(BV), so
    # no cancellation spoils the cavities).
    X, y, _ = _one_sided_toy(0)
    X, y = X[np.argsort(X[:, 0])], y[np.argsort(X[:, 0])]
    kernel = C(1.0, "fixed") * RBF(1.0, "fixed")
    lik = get_likelihood(name).with_params([2.0])
    tau, nu = np.zeros(200), np.zeros(200)
    state = _online(kernel, lik, X, y, max_basis=50, tol=1e-4, chunk=512,
                    sites=(tau, nu))
    info = ep_sweeps(kernel, lik, X, y, state, tau, nu, 50, tol=1e-8)
    full = gpc.infer(kernel(X), y, method="ep", likelihood=lik)
    assert state.d < 30 and info["n_skipped"] == 0
    assert info["log_evidence"] == pytest.approx(full.log_evidence, rel=1e-3)


class _Quadratic(sklearn_kernels.Kernel):
    """``k(x, x') = 1 - |x - x'|^2``: not positive semi-definite."""

    def __init__(self):
        pass

    def __call__(self, X, Y=None, eval_gradient=False):
        Y = X if Y is None else Y
        return 1.0 - ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)

    def diag(self, X):
        return np.ones(len(X))

    def is_stationary(self):
        return True


@pytest.mark.parametrize("method", ["ep", "adf"])
@pytest.mark.parametrize("Estimator", [gpc.SparseGPClassifier, gpc.SparseGPRegressor])
def test_an_indefinite_kernel_is_refused_and_names_itself(Estimator, method):
    # Before, the online pass predicted values of 1e177 (probabilities of 0 and 1)
    # with a warning, and sparse EP suggested raising the jitter.
    rng = np.random.RandomState(0)
    X = rng.randn(200, 2)
    y = (X[:, 0] > 0).astype(int) if Estimator is gpc.SparseGPClassifier else X[:, 0]
    est = Estimator(RBF(1.0), max_basis=20, method=method, random_state=0).fit(X, y)
    before = est.predict(X[:5]).tolist()
    est.set_params(kernel=_Quadratic())
    with pytest.raises(gpc.NotPositiveDefiniteError, match="_Quadratic"):
        est.fit(X, y)
    assert est.predict(X[:5]).tolist() == before
    if method == "adf":
        with pytest.raises(gpc.NotPositiveDefiniteError, match="_Quadratic"):
            fresh = Estimator(_Quadratic(), max_basis=20, method=method)
            if Estimator is gpc.SparseGPClassifier:
                fresh.partial_fit(X, y, classes=[0, 1])
            else:
                fresh.partial_fit(X, y)


def test_kmeans_centres_survive_huge_inputs_and_match_kmeans_plusplus():
    # k-means++ on raw inputs of 1e160 overflows its squared distances and
    # picked 3 distinct centres of 20; the scaled run picks 20, and on ordinary
    # data exactly scikit-learn's choice (the scale is a power of two).
    from sklearn.cluster import kmeans_plusplus
    from gpc.sparse.estimators import _kmeans_centres

    X = np.random.RandomState(0).randn(2000, 3)
    np.testing.assert_array_equal(_kmeans_centres(50, 7, X[:900], X[900:]),
                                  kmeans_plusplus(X, 50, random_state=7)[0])
    Z = _kmeans_centres(20, 0, X[:200] * 1e160)
    assert np.all(np.isfinite(Z)) and len(np.unique(Z, axis=0)) == 20


def test_inputs_whose_squared_norms_overflow_are_refused_clearly():
    # On X * 1e160 the sparse estimators once raised the internal "dK
    # contains NaN or infinite values." (or predicted NaN): the distances from
    # |x|^2 / 2 overflow.  Now a clear error says what to do.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(int)
    for est, t in [(gpc.SparseGPClassifier(max_basis=10, random_state=0), y),
                   (gpc.SparseGPRegressor(max_basis=10, random_state=0), X[:, 0])]:
        with pytest.raises(ValueError, match="overflow float64.*rescale"):
            est.fit(X * 1e160, t)
    # The online GP takes its distances from scikit-learn's kernel (differences,
    # no overflow) and fits, as the full GP does.
    online = gpc.SparseGPClassifier(method="adf", max_basis=10).fit(X * 1e160, y)
    assert np.isfinite(online.predict_proba(X * 1e160)).all()


def test_sparse_and_dense_classifiers_share_defaults_and_names():
    # The parameters both estimators have mean the same thing and default to
    # the same value; the fitted attributes they share have the same names.
    dense = gpc.GaussianProcessClassifier().get_params()
    sparse = gpc.SparseGPClassifier().get_params()
    # "method" names the same methods where both have them; the sparse model
    # has no Laplace approximation, the dense default (documented).
    shared = set(dense) & set(sparse) - {"method"}
    assert {"kernel", "likelihood", "optimizer", "n_restarts_optimizer", "priors",
            "multi_class", "random_state", "verbose", "n_jobs"} <= shared
    assert {k: sparse[k] for k in shared} == {k: dense[k] for k in shared}
    X, y = _xor(300)
    fits = [E(RBF(1.0), optimizer=None).fit(X, y) for E in
            (gpc.GaussianProcessClassifier, lambda *a, **k: gpc.SparseGPClassifier(
                *a, max_basis=20, random_state=0, **k))]
    for name in ("base_estimator_", "classes_", "n_classes_", "kernel_",
                 "log_marginal_likelihood_value_", "n_features_in_"):
        assert all(hasattr(f, name) for f in fits), name
    assert fits[1].likelihood_.name == "logit"


def test_the_former_name_of_the_sparse_adf_method_still_fits():
    X, y = _xor(200)
    with pytest.warns(FutureWarning, match="now called method='adf'"):
        old = gpc.SparseGPClassifier(RBF(1.0), method="online", optimizer=None,
                                     max_basis=20).fit(X, y)
    new = gpc.SparseGPClassifier(RBF(1.0), method="adf", optimizer=None,
                                 max_basis=20).fit(X, y)
    np.testing.assert_array_equal(old.predict_proba(X), new.predict_proba(X))


def test_sparse_restarts_are_reproducible_and_never_worse():
    # Restarts run the first stage again from random hyperparameters; the best
    # end goes on, so the evidence is at least that of the fit without them.
    X, y = _xor(400)
    kernel = C(1.0, (1e-2, 1e2)) * RBF(1.0, (1e-2, 1e2))
    make = lambda k: gpc.SparseGPClassifier(kernel, max_basis=20, random_state=0,
                                            n_restarts_optimizer=k)
    none, two, again = make(0).fit(X, y), make(2).fit(X, y), make(2).fit(X, y)
    assert two.log_marginal_likelihood_value_ >= \
        none.log_marginal_likelihood_value_ - 1e-6
    # The same to rounding: OpenBLAS on two threads may sum the chunks' M x M
    # products in another order from one run to the next (seen: 7e-16 apart).
    assert two.log_marginal_likelihood_value_ == pytest.approx(
        again.log_marginal_likelihood_value_, rel=1e-10)
    with pytest.raises(ValueError, match="need method='ep'"):
        gpc.SparseGPClassifier(kernel, method="adf", n_restarts_optimizer=1).fit(X, y)


def test_sparse_priors_pull_the_hyperparameters_as_in_the_dense_model():
    # A tight prior on the length scale holds it near the prior's centre; the
    # same prior in the dense model does the same (a MAP estimate).
    X, y = _xor(300)
    kernel = C(1.0, "fixed") * RBF(1.0, (1e-3, 1e3))
    prior = {"k2__length_scale": gpc.LogNormalPrior(np.log(3.0), 0.01)}
    free = gpc.SparseGPClassifier(kernel, max_basis=30, random_state=0).fit(X, y)
    held = gpc.SparseGPClassifier(kernel, max_basis=30, random_state=0,
                                  priors=prior).fit(X, y)
    dense = gpc.GaussianProcessClassifier(kernel, priors=prior).fit(X, y)
    assert abs(free.kernel_.k2.length_scale - 3.0) > 0.5
    assert held.kernel_.k2.length_scale == pytest.approx(3.0, rel=0.05)
    assert dense.kernel_.k2.length_scale == pytest.approx(3.0, rel=0.05)


def test_sparse_one_vs_one_fits_every_pair():
    rng = np.random.RandomState(0)
    X = rng.randn(300, 2)
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    clf = gpc.SparseGPClassifier(RBF(1.0), max_basis=15, optimizer=None,
                                 multi_class="one_vs_one").fit(X, y)
    assert len(clf.base_estimator_.estimators_) == 3
    assert clf.score(X, y) > 0.9
    with pytest.raises(ValueError, match="one_vs_one"):
        clf.predict_proba(X)
    with pytest.raises(ValueError, match="multi-class mode"):
        gpc.SparseGPClassifier(multi_class="multinomial").fit(X, y)


def _xor(n, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 2)
    return X, (X[:, 0] * X[:, 1] > 0).astype(int)
