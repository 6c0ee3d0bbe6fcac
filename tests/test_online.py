"""Bayesian online learning (ADF): exact cases, agreement with EP's first sweep,
continuation (resume / partial_fit), the estimator."""

import warnings

import numpy as np
import pytest
from scipy import integrate
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF

import gpc
from gpc.likelihoods import Gaussian
from _sites import LIKS, data, lik_obj, p_lik, se


@pytest.mark.parametrize("name", LIKS)
@pytest.mark.parametrize("k", [0.05, 1.0, 40.0])
def test_one_point_is_exact(name, k):
    # After one example the ADF posterior is the moment-matched exact posterior and
    # its evidence the exact one.
    for y in (-1.0, 1.0):
        res = gpc.infer([[k]], [y], method="adf", likelihood=lik_obj(name))
        dens = lambda f, w: (p_lik(name, y, f) * w(f) * np.exp(-0.5 * f * f / k)
                             / np.sqrt(2 * np.pi * k))
        quad = lambda w: integrate.quad(dens, -40 * np.sqrt(k), 40 * np.sqrt(k),
                                        args=(w,), points=[0.0], limit=400,
                                        epsabs=0, epsrel=1e-11)[0]
        Z = quad(lambda f: 1.0)
        mean = quad(lambda f: f) / Z
        var = quad(lambda f: f * f) / Z - mean ** 2
        m, v = res.posterior.latent_mean_and_variance([[k]], [k])
        assert res.log_evidence == pytest.approx(np.log(Z), rel=1e-9, abs=1e-12)
        assert m[0] == pytest.approx(mean, rel=1e-8, abs=1e-12)
        assert v[0] == pytest.approx(var, rel=1e-7)


def test_gaussian_likelihood_is_exact_regression():
    # With a Gaussian likelihood each update is exact Bayes: ADF gives the GP
    # regression posterior and the exact log marginal likelihood.
    X, _ = data(25, 1)
    K = se(X, 0.9, 2.0)
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1]
    s2 = 0.2
    res = gpc.infer(K, y, method="adf", likelihood=Gaussian(s2))
    A = K + s2 * np.eye(25)
    G = np.linalg.inv(A)
    exact = -0.5 * y @ G @ y - 0.5 * np.linalg.slogdet(A)[1] - 12.5 * np.log(2 * np.pi)
    assert res.log_evidence == pytest.approx(exact, rel=1e-10)
    Xs = np.array([[0.1, 0.2], [-1.0, 0.4], [3.0, 3.0]])
    Ks = se(X, 0.9, 2.0, Xs)
    mean, var = res.posterior.latent_mean_and_variance(Ks, np.full(3, 2.0))
    np.testing.assert_allclose(mean, Ks.T @ G @ y, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(var, 2.0 - np.einsum("ij,ik,kj->j", Ks, G, Ks),
                               rtol=1e-8)
    np.testing.assert_allclose(res.posterior.C, -G, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name", LIKS)
def test_equals_the_first_sweep_of_sequential_ep(name):
    # EP started from zero sites makes exactly the ADF updates in its first sweep.
    X, y = data(30, 2)
    K = se(X, 1.0, 3.0)
    lik = lik_obj(name)
    adf = gpc.infer(K, y, method="adf", likelihood=lik)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ep = gpc.infer(K, y, method="ep", likelihood=lik, updates="sequential",
                       max_sweeps=1, compute_gradient=False)
    Xs = np.vstack([X[:5], [[0.3, -0.2]]])
    Ks = se(X, 1.0, 3.0, Xs)
    m1, v1 = adf.posterior.latent_mean_and_variance(Ks, np.full(6, 3.0))
    m2, v2 = ep.posterior.latent_mean_and_variance(Ks, np.full(6, 3.0))
    np.testing.assert_allclose(m1, m2, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(v1, v2, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", ["probit", "logit"])
def test_resumed_fits_equal_one_fit(name):
    X, y = data(70, 3)
    K = np.asfortranarray(se(X, 0.7, 2.0))
    full = gpc.infer(K, y, method="adf", likelihood=name)
    state, parts = None, [0, 9, 10, 41, 70]
    for a, b in zip(parts[:-1], parts[1:]):
        res = gpc.infer(K[:b, :b], y[:b], method="adf", likelihood=name, resume=state)
        assert res.info["n_new"] == b - a
        state = res.state
    np.testing.assert_allclose(res.posterior.alpha, full.posterior.alpha, rtol=1e-11,
                               atol=1e-13)
    np.testing.assert_allclose(res.posterior.C, full.posterior.C, rtol=1e-11,
                               atol=1e-13)
    assert res.log_evidence == pytest.approx(full.log_evidence, rel=1e-12)
    # The evidence is the sum of the per-example log predictive probabilities.
    assert full.log_evidence == pytest.approx(np.sum(full.info["log_predictive"][0]))


def test_reuse_sweeps_and_orders():
    X, y = data(40, 4)
    K = se(X, 1.0, 4.0)
    one = gpc.infer(K, y, method="adf", likelihood="probit")
    three = gpc.infer(K, y, method="adf", likelihood="probit", n_sweeps=3)
    assert three.info["n_sweeps"] == 3 and len(three.info["sweep_log_evidence"]) == 3
    # The evidence is the first sweep's; later sweeps see the data again.
    assert three.log_evidence == pytest.approx(one.log_evidence, rel=1e-12)
    assert three.info["sweep_log_evidence"][2] > three.info["sweep_log_evidence"][0]
    r1 = gpc.infer(K, y, method="adf", likelihood="probit", order="random",
                   random_state=5)
    r2 = gpc.infer(K, y, method="adf", likelihood="probit", order="random",
                   random_state=5)
    np.testing.assert_array_equal(r1.posterior.alpha, r2.posterior.alpha)
    assert not np.allclose(r1.posterior.alpha, one.posterior.alpha)


def test_bad_options_are_refused():
    K, y = np.eye(3), [1, -1, 1]
    with pytest.raises(ValueError, match="order"):
        gpc.infer(K, y, method="adf", order="backwards")
    with pytest.raises(ValueError, match="n_sweeps"):
        gpc.infer(K, y, method="adf", n_sweeps=0)
    with pytest.raises(ValueError, match="resume"):
        gpc.infer(K, y, method="adf", resume={"alpha": np.zeros(2)})
    big = gpc.infer(np.eye(4), [1, -1, 1, 1], method="adf").state
    with pytest.raises(ValueError, match="at most the 3 points"):
        gpc.infer(K, y, method="adf", resume=big)
    # ADF has nothing to warm-start: an init of another size or from another
    # method was ignored; it is refused, and the error points to resume.
    laplace = gpc.infer(K, y, method="laplace").state
    for init in (laplace, big, {"alpha": np.zeros(3)}):
        with pytest.raises(ValueError, match="no state to warm-start .* resume"):
            gpc.infer(K, y, method="adf", init=init)
    own = gpc.infer(K, y, method="adf")
    for init in ({}, own.state):
        assert gpc.infer(K, y, method="adf", init=init).log_evidence == \
            own.log_evidence


def test_estimator_partial_fit_matches_fit_and_checks_its_input():
    X, y01 = data(60, 5)
    y = np.where(y01 > 0, "yes", "no")
    make = lambda: gpc.GaussianProcessClassifier(RBF(1.0), method="adf",
                                                 optimizer=None, likelihood="logit")
    full = make().fit(X, y)
    part = make()
    with pytest.raises(ValueError, match="classes must be passed"):
        part.partial_fit(X[:10], y[:10])
    assert not hasattr(part, "classes_")
    part.partial_fit(X[:7], y[:7], classes=["no", "yes"])
    with pytest.raises(ValueError, match="outside the classes"):
        part.partial_fit(X[7:9], ["no", "maybe"])
    with pytest.raises(ValueError, match="differ"):
        part.partial_fit(X[7:9], y[7:9], classes=["no", "yes", "maybe"])
    part.partial_fit(X[7:30], y[7:30]).partial_fit(X[30:], y[30:])
    np.testing.assert_allclose(part.predict_proba(X), full.predict_proba(X),
                               rtol=1e-10)
    assert part.log_marginal_likelihood_value_ == pytest.approx(
        full.log_marginal_likelihood_value_, rel=1e-12)
    # The evidence at other hyperparameters recomputes one sweep over all the data.
    theta = np.log([0.5])
    refit = make().set_params(kernel=RBF(0.5)).fit(X, y)
    assert part.log_marginal_likelihood(theta) == pytest.approx(
        refit.log_marginal_likelihood_value_, rel=1e-12)
    with pytest.raises(ValueError, match="no evidence gradient"):
        part.log_marginal_likelihood(theta, eval_gradient=True)


def test_estimator_refuses_what_adf_cannot_do():
    X, y = data(20, 6)
    with pytest.raises(ValueError, match="no evidence gradient"):
        gpc.GaussianProcessClassifier(1.0 * RBF(1.0), method="adf").fit(X, y)
    # partial_fit exists only for the online method.
    assert not hasattr(gpc.GaussianProcessClassifier(RBF(1.0), method="ep"),
                       "partial_fit")
    # Fixed hyperparameters need no optimisation: the default kernel works as is.
    clf = gpc.GaussianProcessClassifier(method="adf", likelihood="step").fit(X, y)
    assert clf.score(X, y) > 0.8
