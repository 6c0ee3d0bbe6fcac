"""The Jaakkola-Jordan variational bounds (Gibbs & MacKay): the bounds hold against
quadrature, the lower bound's gradient, its fixed point, the upper bound's
posterior, the estimator."""

import warnings

import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit, log_expit
from sklearn.exceptions import ConvergenceWarning

import gpc
from gpc.bounds import UpperBound
from gpc.inference.variational import jj_lambda, upper_bound
from _sites import data, se


def _log_evidence_1d(y, k):
    sd = np.sqrt(k)
    f = lambda u: expit(y * u) * np.exp(-0.5 * u * u / k) / np.sqrt(2 * np.pi * k)
    return np.log(integrate.quad(f, -60 * sd, 60 * sd, epsabs=0, epsrel=1e-13,
                                 limit=500)[0])


def _log_evidence_2d(y, K):
    x, w = np.polynomial.hermite_e.hermegauss(300)
    w = w / w.sum()
    L = np.linalg.cholesky(K)
    U1, U2 = np.meshgrid(x, x, indexing="ij")
    P = expit(y[0] * L[0, 0] * U1) * expit(y[1] * (L[1, 0] * U1 + L[1, 1] * U2))
    return np.log(np.einsum("i,j,ij->", w, w, P))


def test_jaakkola_jordan_bound_on_the_sigmoid():
    z = np.linspace(-30, 30, 601)
    for nu in (0.0, 0.5, 3.0, 20.0):
        lower = log_expit(nu) + (z - nu) / 2 - jj_lambda(nu) * (z * z - nu * nu)
        assert np.all(lower <= log_expit(z) + 1e-12)
        assert lower[np.argmin(np.abs(z - nu))] == pytest.approx(log_expit(nu))


@pytest.mark.parametrize("k", [0.01, 1.0, 10.0, 300.0])
def test_bounds_hold_for_one_point(k):
    for y in (-1.0, 1.0):
        exact = _log_evidence_1d(y, k)
        lower = gpc.infer([[k]], [y], method="vb", likelihood="logit").log_evidence
        upper = upper_bound([[k]], [y])[0]
        assert lower <= exact + 1e-10 and exact <= upper + 1e-10


@pytest.mark.parametrize("rho", [-0.9, 0.0, 0.5, 0.95])
@pytest.mark.parametrize("scale", [0.3, 3.0, 30.0])
def test_bounds_hold_for_two_points(rho, scale):
    K = scale * np.array([[1.0, rho], [rho, 1.0]])
    for y in ([1.0, 1.0], [1.0, -1.0]):
        y = np.array(y)
        exact = _log_evidence_2d(y, K)
        lower = gpc.infer(K, y, method="vb", likelihood="logit").log_evidence
        upper = upper_bound(K, y)[0]
        assert lower <= exact + 1e-10 <= upper + 2e-10


@pytest.mark.parametrize("sf2", [0.5, 5.0, 50.0])
def test_lower_bound_gradient_matches_finite_differences(sf2):
    X, y = data(15, 3)
    K = se(X, 1.0, sf2) + 1e-4 * sf2 * np.eye(15)
    res = gpc.infer(K, y, method="vb", likelihood="logit", tol=1e-13)
    E = np.random.RandomState(4).randn(15, 15)
    E = E + E.T
    h = 1e-5 * sf2
    lp, lm = (gpc.infer(K + t * E, y, method="vb", likelihood="logit", tol=1e-13,
                        init=res.state, compute_gradient=False).log_evidence
              for t in (h, -h))
    assert np.sum(res.dK * E) == pytest.approx((lp - lm) / (2 * h), rel=1e-5)


def test_fixed_point_maximises_the_bound_over_nu():
    # nu^2 = E_q[f^2] at the solution, and any other nu gives a lower bound.
    X, y = data(12, 5)
    K = se(X, 0.8, 4.0)
    res = gpc.infer(K, y, method="vb", likelihood="logit", tol=1e-13)
    nu = res.info["nu"]
    post = res.posterior
    np.testing.assert_allclose(nu ** 2, post.marginal_mean ** 2 + post.marginal_var,
                               rtol=1e-9)
    for scale in (0.7, 1.3):
        other = gpc.infer(K, y, method="vb", likelihood="logit", max_iter=1,
                          init={"nu": nu * scale}, tol=1e-300)
        assert other.log_evidence < res.log_evidence


def test_posteriors_for_prediction():
    X, y = data(20, 6)
    K = se(X, 1.0, 3.0)
    lower = gpc.infer(K, y, method="vb", likelihood="logit")
    Xs = np.array([[0.5, 0.0], [30.0, 30.0]])          # near the data, far away
    Ks = se(X, 1.0, 3.0, Xs)
    m, v = lower.posterior.latent_mean_and_variance(Ks, np.full(2, 3.0))
    # The site form equals the Gaussian q of the bound, computed directly.
    W = 2 * jj_lambda(lower.info["nu"])
    S = np.linalg.inv(np.linalg.inv(K) + np.diag(W))
    mean = S @ (0.5 * y)
    A = np.linalg.solve(K, Ks)
    np.testing.assert_allclose(m, A.T @ mean, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(v, 3.0 - np.einsum("ij,ij->j", Ks, A)
                               + np.einsum("ij,ik,kj->j", A, S, A), rtol=1e-7)
    log_z, post, mu = upper_bound(K, y)
    mu_u, var_u = post.latent_mean_and_variance(Ks, np.full(2, 3.0))
    np.testing.assert_allclose(mu_u, Ks.T @ (mu * y))
    np.testing.assert_allclose(var_u, 3.0)
    assert abs(m[1]) < 1e-12 and abs(mu_u[1]) < 1e-12   # 0.5 far from the data
    assert v[0] < var_u[0]                               # lower bound more confident


def test_only_the_logit_and_probit_are_accepted():
    with pytest.raises(ValueError, match="logistic"):
        gpc.infer(np.eye(2), [1, -1], method="vb", likelihood="step")


def test_classifier_with_the_lower_bound():
    X, y = data(60, 7)
    clf = gpc.GaussianProcessClassifier(method="vb", likelihood="logit").fit(X, y)
    assert clf.score(X, y) > 0.8
    ep = gpc.GaussianProcessClassifier(method="ep", likelihood="logit").fit(X, y)
    # A lower bound on the evidence at the same (default, fixed) kernel.
    assert clf.log_marginal_likelihood_value_ < ep.log_marginal_likelihood_value_


def test_classifier_predicts_from_both_bounds():
    X, y = data(40, 8)
    clf = gpc.GaussianProcessClassifier(method="vb", likelihood="logit").fit(X, y)
    bound = UpperBound(clf)
    far = np.array([[40.0, 40.0]])
    for predict in (clf.predict_proba, bound.predict_proba):
        p = predict(np.vstack([X[:5], far]))
        np.testing.assert_allclose(p.sum(1), 1.0)
        assert p[-1, 1] == pytest.approx(0.5, abs=1e-9)        # 0.5 away from data
    lower = clf.predict_proba(X)[:, 1]
    upper = bound.predict_proba(X)[:, 1]
    # The lower bound's predictive is the more confident one on the data.
    assert np.mean(np.abs(lower - 0.5)) > np.mean(np.abs(upper - 0.5))
    assert clf.log_marginal_likelihood_value_ < bound.log_evidence
    # The bound is the minimum of log Z'' at the fitted kernel (upper_bound, whose
    # own tests check it against exact evidences).
    K = clf.base_estimator_.kernel_(X)
    assert bound.log_evidence == upper_bound(K, y)[0]
    with pytest.raises(ValueError, match="method='vb'"):
        UpperBound(gpc.GaussianProcessClassifier().fit(X, y))
    three = np.where(X[:, 1] > 1.0, 2.0, y)
    with pytest.raises(ValueError, match="binary"):
        UpperBound(gpc.GaussianProcessClassifier(method="vb").fit(X, three))


@pytest.mark.parametrize("k", [0.01, 1.0, 30.0])
def test_probit_curvature_bound_holds_with_the_expected_gap(k):
    for y in (-1.0, 1.0):
        exact = np.log(0.5)                              # Phi(0 / sqrt(1 + k))
        res = gpc.infer([[k]], [y], method="vb", likelihood="probit")
        assert res.log_evidence <= exact + 1e-12
        if k == 0.01:
            # For small variance the gap is the curvature difference times the
            # variance: ((1 - 2/pi) / 2) k, as (log Phi)''(0) = -2/pi.
            assert exact - res.log_evidence == pytest.approx(
                0.5 * (1 - 2 / np.pi) * k, rel=0.02)


def test_probit_bound_two_points_and_gradient():
    K = np.array([[2.0, 1.2], [1.2, 1.5]])
    for y in ([1.0, 1.0], [1.0, -1.0]):
        y = np.array(y)
        C = K + np.eye(2)
        rho = y[0] * y[1] * C[0, 1] / np.sqrt(C[0, 0] * C[1, 1])
        exact = np.log(0.25 + np.arcsin(rho) / (2 * np.pi))
        assert gpc.infer(K, y, method="vb", likelihood="probit").log_evidence <= exact
    X, y = data(12, 9)
    K = se(X, 1.0, 3.0)
    res = gpc.infer(K, y, method="vb", likelihood="probit", tol=1e-13)
    E = np.random.RandomState(2).randn(12, 12)
    E = E + E.T
    h = 1e-6
    lp, lm = (gpc.infer(K + t * E, y, method="vb", likelihood="probit", tol=1e-13,
                        init=res.state).log_evidence for t in (h, -h))
    assert np.sum(res.dK * E) == pytest.approx((lp - lm) / (2 * h), rel=1e-5)


@pytest.mark.parametrize("ls", [1.0, 10.0, 30.0])
def test_probit_bound_converges_from_next_to_its_maximum(ls):
    # Started within 3e-8 of the maximum, a step raises the bound by ~1e-15, the
    # size of the bound's rounding: judged by the bound alone, a step and all its
    # halvings could look like a fall, and the iteration stopped unconverged (3 to
    # 5 runs in 100 here; on another BLAS, a run from nu = 0 stopped after 3
    # steps).  The residual, not the last bits of the bound, must decide there.
    X = np.linspace(0, 10, 30)[:, None]
    y = np.where(np.sin(X[:, 0]) > 0, 1.0, -1.0)
    K = 4.0 * np.exp(-0.5 * (X - X.T) ** 2 / ls ** 2)
    best = gpc.infer(K, y, method="vb", likelihood="probit", tol=1e-14)
    assert best.info["converged"]
    rng = np.random.RandomState(0)
    for _ in range(100):
        res = gpc.infer(K, y, method="vb", likelihood="probit", tol=1e-8,
                        init={"nu": best.state["nu"] + 3e-8 * rng.randn(30)})
        assert res.info["converged"], res.info["n_iter"]
        # ... and still at the maximum: a step may lower the bound by twice its
        # rounding estimate (2.4e-12 at most here), a run from here takes one or
        # two, and a residual of 1e-8 costs ~1e-16.
        assert res.log_evidence == pytest.approx(best.log_evidence, abs=5e-12)
        assert res.info["n_iter"] <= 3


def test_classifier_with_the_probit_bound():
    X, y = data(50, 10)
    clf = gpc.GaussianProcessClassifier(method="vb", likelihood="probit").fit(X, y)
    ep = gpc.GaussianProcessClassifier(method="ep", likelihood="probit").fit(X, y)
    assert clf.log_marginal_likelihood_value_ < ep.log_marginal_likelihood_value_
    assert clf.score(X, y) > 0.8
    with pytest.raises(ValueError, match="logit"):
        UpperBound(clf)


@pytest.mark.parametrize("lik", ["probit", "logit"])
def test_the_bound_rises_with_every_iteration_and_stays_below_ep(lik):
    # The case that showed it: breast cancer standardised, a large signal variance.  The
    # probit's bound fell as it converged (-43.99 after 100 steps, -155.92 at
    # convergence, EP -57.57): a bound maximised by its iteration cannot fall, and
    # the value after k steps is the bound at the returned tangent points.
    from sklearn.datasets import load_breast_cancer
    from sklearn.gaussian_process.kernels import RBF
    from sklearn.preprocessing import StandardScaler

    X, t = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    y = 2.0 * t - 1.0
    K = np.asfortranarray(np.exp(6.1) * RBF(np.exp(3.0))(X))
    values = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for max_iter in range(1, 41):
            res = gpc.infer(K, y, method="vb", likelihood=lik, max_iter=max_iter)
            values.append(res.log_evidence)
            if res.info["converged"]:
                break
    assert res.info["converged"]
    assert np.all(np.diff(values) >= -1e-9 * np.abs(values[1:]))
    # The value returned is the bound at the returned tangent points.
    again = gpc.infer(K, y, method="vb", likelihood=lik, max_iter=1,
                      init=res.state)
    assert again.log_evidence == pytest.approx(res.log_evidence, rel=1e-9)
    ep = gpc.infer(K, y, method="ep", likelihood=lik)
    assert values[-1] < ep.log_evidence
