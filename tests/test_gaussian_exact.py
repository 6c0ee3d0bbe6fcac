"""With a Gaussian likelihood the K-level API must reproduce exact GP regression.

Laplace's method is exact for a Gaussian likelihood (the log posterior is quadratic,
one Newton step finds the mode), so ``gpc.infer`` must give the exact log evidence
log N(y; 0, K + s2 I), the exact predictive latent mean / variance and the exact
evidence gradient 0.5 (a a' - (K + s2 I)^{-1}), a = (K + s2 I)^{-1} y.
"""

import numpy as np
import pytest
from scipy.linalg import cho_factor, cho_solve
from scipy.stats import multivariate_normal

import gpc
from gpc.likelihoods import Gaussian


def se_kernel(A, B, ell, sf2):
    d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return sf2 * np.exp(-0.5 * d2 / ell ** 2)


def problem(n, d, seed, ell, sf2, n_test=7):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, d))
    Xs = rng.uniform(-2.5, 2.5, (n_test, d))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.standard_normal(n) + 0.5
    return (se_kernel(X, X, ell, sf2), se_kernel(X, Xs, ell, sf2),
            np.full(n_test, float(sf2)), y)


def exact_regression(K, Ks, kss, y, s2):
    n = K.shape[0]
    C = K + s2 * np.eye(n)
    cf = cho_factor(C, lower=True)
    a = cho_solve(cf, y)
    Cinv = cho_solve(cf, np.eye(n))
    logev = multivariate_normal(mean=np.zeros(n), cov=C).logpdf(y)
    logdet = 2 * np.sum(np.log(np.diag(cf[0])))
    logev2 = -0.5 * y @ a - 0.5 * logdet - 0.5 * n * np.log(2 * np.pi)
    assert logev == pytest.approx(logev2, rel=1e-12)
    mean = Ks.T @ a
    var = kss - np.einsum("ij,ij->j", Ks, cho_solve(cf, Ks))
    dK = 0.5 * (np.outer(a, a) - Cinv)
    return logev, mean, var, dK


CASES = [
    # n, d, seed, ell, sf2, s2
    (1, 1, 0, 1.0, 1.0, 0.5),
    (12, 1, 1, 0.7, 1.0, 0.1),
    (30, 2, 2, 1.3, 2.5, 0.01),
    (25, 3, 3, 0.4, 0.3, 1.0),
    (40, 1, 4, 2.0, 10.0, 3.0),
]


@pytest.mark.parametrize("n,d,seed,ell,sf2,s2", CASES)
def test_laplace_with_gaussian_likelihood_is_exact_regression(n, d, seed, ell, sf2, s2):
    K, Ks, kss, y = problem(n, d, seed, ell, sf2)
    logev, mean, var, dK = exact_regression(K, Ks, kss, y, s2)
    res = gpc.infer(K, y, method="laplace", likelihood=Gaussian(s2))
    assert res.info["converged"]
    assert res.log_evidence == pytest.approx(logev, rel=1e-10)
    m, v = res.posterior.latent_mean_and_variance(Ks, kss)
    np.testing.assert_allclose(m, mean, rtol=1e-10, atol=1e-10 * np.max(np.abs(mean)))
    np.testing.assert_allclose(v, var, rtol=1e-10, atol=1e-10 * np.max(kss))
    np.testing.assert_allclose(res.dK, dK, rtol=1e-8, atol=1e-8 * np.max(np.abs(dK)))
    # the posterior mode is the exact posterior mean at the training points
    np.testing.assert_allclose(res.posterior.marginal_mean,
                               K @ np.linalg.solve(K + s2 * np.eye(n), y), rtol=1e-10, atol=1e-10 * np.max(np.abs(y)))


def test_gaussian_accepts_real_targets_and_names():
    K, Ks, kss, y = problem(10, 1, 5, 1.0, 1.0)
    ref = gpc.infer(K, y, likelihood=Gaussian(1.0))
    res = gpc.infer(K, list(y), likelihood="gaussian")      # default s2 = 1
    assert res.log_evidence == ref.log_evidence
    with pytest.raises(ValueError, match="finite"):
        gpc.infer(K, np.where(np.arange(10) == 3, np.nan, y), likelihood="gaussian")
    with pytest.raises(ValueError, match="targets"):
        gpc.infer(K, y[:-1], likelihood="gaussian")
    # classification likelihoods still refuse real targets
    with pytest.raises(ValueError, match=r"-1 and \+1"):
        gpc.infer(K, y, likelihood="probit")
    # no class probabilities from a regression posterior
    with pytest.raises(ValueError, match="regression"):
        res.posterior.predict_proba(Ks, kss, "gaussian")


@pytest.mark.parametrize("updates", ["parallel", "sequential"])
def test_ep_chord_step_that_converges_at_once_returns_the_factor(updates):
    """A warm start near the answer makes parallel EP take a chord step; with a
    Gaussian likelihood that step lands on the exact sites, so the factorisation
    after it, made without keeping L (its residual came from far above
    100 sqrt(tol)), is the last one: L must then be refactorised for the result.
    The posterior (its L and predictions), evidence and dK are exact regression's."""
    n, s2 = 30, 0.2
    K, Ks, kss, y = problem(n, 2, 5, 1.1, 1.5)
    logev, mean, var, dK = exact_regression(K, Ks, kss, y, s2)
    rng = np.random.default_rng(0)
    init = {"tau": np.full(n, 1 / s2) * (1 + 0.05 * rng.uniform(0.5, 1, n)),
            "nu": y / s2 * (1 + 0.05 * rng.uniform(0.5, 1, n))}
    res = gpc.infer(np.asfortranarray(K), y, method="ep", likelihood=Gaussian(s2),
                    updates=updates, init=init)
    assert res.info["converged"] and not res.info["warm_start_rejected"]
    assert res.log_evidence == pytest.approx(logev, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(res.dK, dK, rtol=1e-9, atol=1e-12)
    S = np.sqrt(res.state["tau"])
    L = np.linalg.cholesky(np.eye(n) + S[:, None] * K * S[None, :])
    np.testing.assert_allclose(np.tril(res.posterior.L), L, rtol=1e-12, atol=1e-14)
    m, v = res.posterior.latent_mean_and_variance(Ks, kss)
    np.testing.assert_allclose(m, mean, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(v, var, rtol=1e-9, atol=1e-12)
