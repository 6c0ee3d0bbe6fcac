"""The reference MCMC (gpc.mcmc) against exact answers.

* Gaussian likelihood: the posterior is exact GP regression and the evidence
  N(y; 0, K + s2 I), so elliptical slice sampling (ESS) must match the posterior
  mean and covariance, and annealed importance sampling (AIS) the log evidence,
  within a few of their own Monte Carlo standard errors;
* probit at n = 1 and n = 2 against quadrature (and the closed forms
  Z = 1/2 and Z = 1/4 + arcsin(rho) / (2 pi));
* the predictive probability at n = 1 against a double integral;
* input validation.

Tolerances are ``TOL`` reported standard errors (fixed seeds, so the outcomes are
deterministic); each check also bounds the reported error, so a test cannot pass by
reporting a huge error.
"""

import numpy as np
import pytest
from scipy import integrate
from scipy.special import log_expit, log_ndtr, ndtr
from scipy.stats import multivariate_normal

import gpc
from gpc import mcmc
from gpc.likelihoods import Gaussian
from gpc.mcmc._slice import _total_log_lik

TOL = 4.0


def se_kernel(A, B, ell=1.0, sf2=1.0):
    d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return sf2 * np.exp(-0.5 * d2 / ell ** 2)


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, (5, 1))
    K = se_kernel(X, X, 1.0, 1.5)
    y = np.sin(2 * X[:, 0]) + 0.2 * rng.standard_normal(5)
    s2 = 0.3
    C = K + s2 * np.eye(5)
    A = np.linalg.solve(C, K)
    return dict(K=K, y=y, s2=s2, mean=A.T @ y, cov=K - K @ A,
                logev=multivariate_normal(np.zeros(5), C).logpdf(y))


def per_chain_covariances(S):
    """Sample covariance of each chain, shape (n_chains, n, n)."""
    D = S - S.mean(axis=1, keepdims=True)
    return np.einsum("cdi,cdj->cij", D, D) / (S.shape[1] - 1)


# ------------------------------------------------------------------------------
# Gaussian likelihood: exact GP regression
# ------------------------------------------------------------------------------

def test_ess_matches_exact_regression_posterior(regression):
    r = regression
    res = mcmc.elliptical_slice(r["K"], r["y"], Gaussian(noise_variance=r["s2"]),
                                n_chains=24, n_samples=600, burn_in=30,
                                random_state=0)
    assert res.samples.shape == (24, 600, 5)
    assert res.jitter == 0.0
    mean, se = res.mean()
    assert np.all(se < 0.05)
    assert np.all(np.abs(mean - r["mean"]) < TOL * se)
    covs = per_chain_covariances(res.samples)
    cov, cov_se = covs.mean(0), covs.std(0, ddof=1) / np.sqrt(covs.shape[0])
    assert np.all(cov_se < 0.02)
    assert np.all(np.abs(cov - r["cov"]) < TOL * cov_se + 1e-12)
    # the recorded log likelihoods are those of the kept states
    lik = Gaussian(noise_variance=r["s2"])
    assert res.log_lik[3, 10] == pytest.approx(
        lik.log_lik(r["y"], res.samples[3, 10]).sum(), rel=1e-12)


def test_tempered_ess_is_regression_with_larger_noise(regression):
    # p(y | f)^(1/2) N(f; 0, K) is the posterior with noise variance 2 s2
    r = regression
    res = mcmc.elliptical_slice(r["K"], r["y"], Gaussian(noise_variance=r["s2"]),
                                temperature=0.5, n_chains=20, n_samples=300,
                                burn_in=30, random_state=1)
    C = r["K"] + 2 * r["s2"] * np.eye(5)
    exact = r["K"] @ np.linalg.solve(C, r["y"])
    mean, se = res.mean()
    assert np.all(np.abs(mean - exact) < TOL * se)


def test_ais_matches_exact_regression_evidence(regression):
    r = regression
    res = mcmc.ais(r["K"], r["y"], Gaussian(noise_variance=r["s2"]), n_chains=128,
                   n_temperatures=300, random_state=0)
    assert 0 < res.stderr < 0.05
    assert res.ess > 64
    assert abs(res.log_evidence - r["logev"]) < TOL * res.stderr
    assert res.log_weights.shape == (128,) and res.samples.shape == (128, 5)
    assert res.temperatures[0] == 0.0 and res.temperatures[-1] == 1.0


def test_exact_reference_gives_exact_evidence(regression):
    # With the exact posterior as the reference, p(y|f) N(f;0,K) / q(f) = p(y):
    # every weight equals the evidence, and every first proposal is accepted.
    r = regression
    lik = Gaussian(noise_variance=r["s2"])
    exact = gpc.infer(r["K"], r["y"], method="laplace", likelihood=lik)
    assert exact.log_evidence == pytest.approx(r["logev"], rel=1e-10)
    for ref in (exact, exact.posterior, (r["mean"], r["cov"])):
        res = mcmc.ais(r["K"], r["y"], lik, n_chains=8, n_temperatures=5,
                       reference=ref, random_state=0)
        assert res.log_evidence == pytest.approx(r["logev"], abs=1e-7)
        assert res.stderr < 1e-7
        assert res.evaluations_per_step == 1.0
    # chains started anywhere: their states are consistent (the ratio is constant)
    start = np.random.default_rng(0).standard_normal((3, 5)) * 3
    post = mcmc.elliptical_slice(r["K"], r["y"], lik, reference=exact, init=start,
                                 n_samples=5, burn_in=0, random_state=0)
    assert post.evaluations_per_step == 1.0
    np.testing.assert_allclose(post.log_lik[:, -1],
                               lik.log_lik(r["y"], post.state).sum(axis=1))


def test_poor_reference_is_still_unbiased(regression):
    r = regression
    lik = Gaussian(noise_variance=r["s2"])
    # (K has an eigenvalue of 1e-4: q must not be much wider along it, or the
    # ratio to q is very peaked and the slices narrow)
    ref = (r["mean"] + 0.15, 1.5 * r["cov"])
    res = mcmc.ais(r["K"], r["y"], lik, n_chains=128, n_temperatures=100,
                   reference=ref, random_state=2)
    assert 0 < res.stderr < 0.03
    assert abs(res.log_evidence - r["logev"]) < TOL * res.stderr
    post = mcmc.elliptical_slice(r["K"], r["y"], lik, reference=ref, n_chains=20,
                                 n_samples=300, burn_in=30, random_state=2)
    mean, se = post.mean()
    assert np.all(np.abs(mean - r["mean"]) < TOL * se)


def test_explicit_posterior_reference_on_a_singular_kernel():
    # Duplicate inputs make K singular (jitter needed); ADF's explicit-form posterior
    # is the exact one for a Gaussian likelihood.
    X = np.array([[0.0], [0.5], [0.5], [1.5]])
    K = se_kernel(X, X, 1.0, 2.0)
    y = np.array([0.2, 1.0, 0.8, -0.5])
    lik = Gaussian(noise_variance=0.2)
    C = K + 0.2 * np.eye(4)
    exact = multivariate_normal(np.zeros(4), C).logpdf(y)
    adf = gpc.infer(K, y, method="adf", likelihood=lik)
    res = mcmc.ais(K, y, lik, n_chains=16, n_temperatures=20, reference=adf,
                   random_state=0)
    assert res.jitter > 0
    assert res.log_evidence == pytest.approx(exact, abs=1e-4)


# ------------------------------------------------------------------------------
# probit (and logit) against quadrature
# ------------------------------------------------------------------------------

def test_probit_n1_evidence_and_posterior_mean_vs_quadrature():
    k = 4.0
    sd = np.sqrt(k)

    def integrand(f, power):
        return f ** power * ndtr(f) * np.exp(-0.5 * f * f / k) / np.sqrt(2 * np.pi * k)

    Z = integrate.quad(integrand, -12 * sd, 12 * sd, args=(0,))[0]
    m1 = integrate.quad(integrand, -12 * sd, 12 * sd, args=(1,))[0] / Z
    assert Z == pytest.approx(0.5, rel=1e-10)
    assert m1 == pytest.approx(k / np.sqrt(2 * np.pi * (1 + k)) / 0.5, rel=1e-8)
    res = mcmc.ais([[k]], [1], "probit", n_chains=256, n_temperatures=100,
                   random_state=0)
    assert 0 < res.stderr < 0.03
    assert abs(res.log_evidence - np.log(Z)) < TOL * res.stderr
    post = mcmc.elliptical_slice([[k]], [1], "probit", n_chains=20, n_samples=1000,
                                 burn_in=50, random_state=0)
    mean, se = post.mean()
    assert se[0] < 0.05
    assert abs(mean[0] - m1) < TOL * se[0]
    # label -1 mirrors the posterior
    neg = mcmc.elliptical_slice([[k]], [-1], "probit", n_chains=20,
                                n_samples=1000, burn_in=50, random_state=0)
    mean_neg, se_neg = neg.mean()
    assert abs(mean_neg[0] + m1) < TOL * se_neg[0]


def grid_posterior(K, y, log_lik, half_width=8.0, m=401):
    """Evidence and posterior mean at n = 2 by the trapezoidal rule on a grid."""
    sd = np.sqrt(np.diag(K))
    g1 = np.linspace(-half_width * sd[0], half_width * sd[0], m)
    g2 = np.linspace(-half_width * sd[1], half_width * sd[1], m)
    F1, F2 = np.meshgrid(g1, g2, indexing="ij")
    F = np.stack([F1, F2], axis=-1)
    dens = multivariate_normal(np.zeros(2), K).pdf(F) * np.exp(
        log_lik(y[0] * F1) + log_lik(y[1] * F2))
    Z = np.trapezoid(np.trapezoid(dens, g2, axis=1), g1)
    mean = [np.trapezoid(np.trapezoid(dens * F[..., i], g2, axis=1), g1) / Z
            for i in range(2)]
    return Z, np.array(mean)


def test_probit_n2_vs_grid_and_closed_form():
    K = np.array([[3.0, 1.8], [1.8, 2.0]])
    y = np.array([1.0, -1.0])
    Z, mean = grid_posterior(K, y, log_ndtr)
    rho = y[0] * y[1] * K[0, 1] / np.sqrt((1 + K[0, 0]) * (1 + K[1, 1]))
    assert Z == pytest.approx(0.25 + np.arcsin(rho) / (2 * np.pi), rel=1e-6)
    res = mcmc.ais(K, y, "probit", n_chains=256, n_temperatures=200, random_state=1)
    assert 0 < res.stderr < 0.03
    assert abs(res.log_evidence - np.log(Z)) < TOL * res.stderr
    post = mcmc.elliptical_slice(K, y, "probit", n_chains=20, n_samples=1000,
                                 burn_in=50, random_state=1)
    m, se = post.mean()
    assert np.all(se < 0.05)
    assert np.all(np.abs(m - mean) < TOL * se)
    # the same posterior from EP's Gaussian as the reference
    ep = gpc.infer(K, y, method="ep")
    res = mcmc.ais(K, y, "probit", n_chains=128, n_temperatures=50, reference=ep,
                   random_state=1)
    assert 0 < res.stderr < 0.02
    assert abs(res.log_evidence - np.log(Z)) < TOL * res.stderr


def test_logit_n2_vs_grid():
    K = np.array([[4.0, -1.0], [-1.0, 1.0]])
    y = np.array([1.0, 1.0])
    Z, _ = grid_posterior(K, y, log_expit)
    res = mcmc.ais(K, y, "logit", n_chains=256, n_temperatures=200, random_state=2)
    assert 0 < res.stderr < 0.03
    assert abs(res.log_evidence - np.log(Z)) < TOL * res.stderr


def test_predictive_n1_vs_quadrature():
    k, c, kss = 2.0, 1.5, 3.0          # prior variance, cross covariance, test variance
    a, v = c / k, kss - c * c / k     # f* | f ~ N(a f, v)

    def post(f):
        return ndtr(f) * np.exp(-0.5 * f * f / k)

    Z = integrate.quad(post, -30, 30)[0]
    exact = integrate.quad(lambda f: post(f) * ndtr(a * f / np.sqrt(1 + v)),
                           -30, 30)[0] / Z
    res = mcmc.elliptical_slice([[k]], [1], "probit", n_chains=20, n_samples=1000,
                                burn_in=50, random_state=4)
    pred = res.predict_proba([[c]], [kss])
    assert pred.proba.shape == (1,) and pred.batch_means.shape == (20, 1)
    assert 0 < pred.stderr[0] < 0.01
    assert abs(pred.proba[0] - exact) < TOL * pred.stderr[0]
    same = mcmc.predictive_probability(res.samples, [[k]], [[c]], [kss], "probit")
    np.testing.assert_allclose(same.proba, pred.proba, rtol=1e-12)
    # mean log predictive probability of the labels +1 and -1
    for label, p in ((1, exact), (-1, 1 - exact)):
        value, se = pred.mean_log_prob([label])
        assert 0 < se < 0.02
        assert abs(value - np.log(p)) < TOL * se


def test_few_chains_use_batch_means():
    res = mcmc.elliptical_slice([[1.0]], [1], n_chains=2, n_samples=400, burn_in=20,
                                random_state=0)
    pred = res.predict_proba([[0.5]], [1.0])
    assert pred.batch_means.shape == (20, 1)
    mean, se = res.mean()
    assert np.isfinite(se).all() and se[0] > 0
    with pytest.raises(ValueError, match="draws per chain"):
        mcmc.predictive_probability(res.samples[:, :5], [[1.0]], [[0.5]], [1.0])


# ------------------------------------------------------------------------------
# implementation details
# ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["probit", "logit"])
def test_fast_log_likelihood_equals_the_likelihoods(name):
    lik = gpc.get_likelihood(name)
    rng = np.random.default_rng(0)
    y = np.where(rng.random(30) < 0.5, -1.0, 1.0)
    F = rng.standard_normal((30, 7)) * np.array([0.1, 1, 3, 10, 40, 300, 3000])
    total = _total_log_lik(lik, y)
    expected = lik.log_lik(y[:, None], F).sum(axis=0)
    np.testing.assert_allclose(total(F), expected, rtol=1e-12)


def test_other_likelihoods_go_through_log_lik():
    lik = gpc.get_likelihood("noisy_threshold")
    K = np.array([[2.0, 0.5], [0.5, 1.0]])
    res = mcmc.elliptical_slice(K, [1, -1], lik, n_chains=4, n_samples=20,
                                burn_in=0, random_state=0)
    np.testing.assert_allclose(res.log_lik[:, -1],
                               lik.log_lik([1, -1], res.state).sum(axis=1))


def test_seeded_runs_are_reproducible():
    K = np.array([[2.0, 0.5], [0.5, 1.0]])
    a = mcmc.elliptical_slice(K, [1, -1], n_chains=3, n_samples=30, burn_in=5,
                              random_state=7)
    b = mcmc.elliptical_slice(K, [1, -1], n_chains=3, n_samples=30, burn_in=5,
                              random_state=np.random.default_rng(7))
    np.testing.assert_array_equal(a.samples, b.samples)
    c = mcmc.ais(K, [1, -1], n_chains=5, n_temperatures=20, random_state=7)
    d = mcmc.ais(K, [1, -1], n_chains=5, n_temperatures=20, random_state=7)
    assert c.log_evidence == d.log_evidence
    e = mcmc.ais(K, [1, -1], n_chains=5, n_temperatures=20,
                 random_state=np.random.RandomState(1))
    assert np.isfinite(e.log_evidence)


def test_init_thin_and_continuation():
    K = np.array([[2.0, 0.5], [0.5, 1.0]])
    first = mcmc.elliptical_slice(K, [1, 1], n_chains=3, n_samples=10, burn_in=0,
                                  random_state=0)
    more = mcmc.elliptical_slice(K, [1, 1], init=first.state, n_samples=5, thin=3,
                                 burn_in=0, random_state=1)
    assert more.samples.shape == (3, 5, 2) and more.n_steps == 15
    ais = mcmc.ais(K, [1, 1], n_chains=4, n_temperatures=10, random_state=0)
    cont = mcmc.elliptical_slice(K, [1, 1], init=ais.samples, n_samples=3,
                                 burn_in=0, random_state=0)
    assert cont.n_chains == 4


def test_jitter_is_added_only_when_needed_and_reported():
    L, jitter = mcmc.kernel_cholesky(np.eye(3))
    assert jitter == 0.0 and np.allclose(L, np.eye(3))
    K = np.ones((3, 3))
    res = mcmc.elliptical_slice(K, [1, 1, -1], n_chains=2, n_samples=20,
                                burn_in=0, random_state=0)
    assert res.jitter > 0
    assert np.allclose(res.L @ res.L.T, K + res.jitter * np.eye(3))
    assert mcmc.ais(K, [1, 1, -1], n_chains=4, n_temperatures=5,
                    random_state=0).jitter == res.jitter


def test_temperature_schedules():
    for kind in ("sigmoid", "geometric", "linear"):
        b = mcmc.temperature_schedule(50, kind)
        assert b.shape == (51,) and b[0] == 0 and b[-1] == 1
        assert np.all(np.diff(b) > 0)
    b = mcmc.temperature_schedule(1, "geometric")
    assert list(b) == [0.0, 1.0]
    res = mcmc.ais([[1.0]], [1], n_chains=4, temperatures=[0.0, 0.3, 1.0],
                   random_state=0)
    assert list(res.temperatures) == [0.0, 0.3, 1.0]


def test_verbose_progress(capsys):
    mcmc.ais([[1.0]], [1], n_chains=4, n_temperatures=20, verbose=True,
             random_state=0)
    out = capsys.readouterr().out
    assert "ais: 20/20 (100%)" in out and "ESS" in out
    mcmc.elliptical_slice([[1.0]], [1], n_chains=2, n_samples=10, burn_in=0,
                          verbose=True, random_state=0)
    assert "elliptical slice: 10/10" in capsys.readouterr().out


def test_zero_likelihood_does_not_hang():
    # The step likelihood is zero on the wrong side.  A chain started there takes
    # any point of its ellipse with a positive likelihood; when the ellipse has none
    # near the state, the bracket collapses and the state is kept (counted).
    res = mcmc.elliptical_slice([[1.0]], [1], "step", init=[[-1.0]], n_samples=3,
                                burn_in=0, random_state=0)
    assert res.n_stuck >= 1
    assert res.log_lik[0, -1] == 0.0 and res.samples[0, -1, 0] > 0
    ok = mcmc.elliptical_slice([[1.0]], [1], "step", n_chains=20, n_samples=200,
                               burn_in=20, random_state=0)
    assert np.all(ok.samples[ok.log_lik > -np.inf] > 0)


# ------------------------------------------------------------------------------
# input validation
# ------------------------------------------------------------------------------

GOOD_K = np.array([[2.0, 0.5], [0.5, 1.0]])


@pytest.mark.parametrize("K,match", [
    (np.ones((2, 3)), "square"),
    (np.array([[1.0, np.nan], [np.nan, 1.0]]), "NaN"),
    (np.array([[1.0, 0.5], [0.2, 1.0]]), "symmetric"),
    (np.array([["a", "b"], ["c", "d"]]), "numeric"),
    (np.zeros((0, 0)), "at least one row"),
])
def test_bad_kernel_matrices(K, match):
    for fn in (mcmc.elliptical_slice, mcmc.ais):
        with pytest.raises(ValueError, match=match):
            fn(K, [1, 1][:K.shape[0]] if K.ndim == 2 else [1], random_state=0)


def test_not_positive_definite():
    K = np.array([[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(gpc.NotPositiveDefiniteError):
        mcmc.ais(K, [1, 1], n_temperatures=2)
    with pytest.raises(gpc.NotPositiveDefiniteError):
        mcmc.kernel_cholesky(-np.eye(2))


@pytest.mark.parametrize("y,match", [
    ([1, 0], "-1 and \\+1"),
    ([1, 2], "-1 and \\+1"),
    ([1, -1, 1], "expected"),
    ([[1, -1]], "1-D"),
])
def test_bad_labels(y, match):
    with pytest.raises(ValueError, match=match):
        mcmc.elliptical_slice(GOOD_K, y, n_samples=2)
    with pytest.raises(ValueError, match=match):
        mcmc.ais(GOOD_K, y, n_temperatures=2)


def test_bad_options():
    y = [1, -1]
    bad_calls = [
        (dict(n_samples=0), "n_samples"),
        (dict(n_chains=0), "n_chains"),
        (dict(n_chains=2.5), "n_chains"),
        (dict(burn_in=-1), "burn_in"),
        (dict(thin=0), "thin"),
        (dict(temperature=0.0), "temperature"),
        (dict(temperature=1.5), "temperature"),
        (dict(init=np.zeros((3, 3))), "init"),
        (dict(init=[[np.inf, 0.0]]), "init"),
        (dict(random_state="x"), "random_state"),
        (dict(reference=(np.zeros(3), np.eye(3))), "reference mean"),
        (dict(reference=(np.zeros(2), np.eye(3))), "reference covariance"),
        (dict(reference=(np.zeros(2), -np.eye(2))), "reference covariance"),
        (dict(reference="ep"), "reference"),
    ]
    for kwargs, match in bad_calls:
        with pytest.raises(ValueError, match=match):
            mcmc.elliptical_slice(GOOD_K, y, **{"n_samples": 2, **kwargs})
    for kwargs, match in [
        (dict(n_temperatures=0), "n_temperatures"),
        (dict(n_steps=0), "n_steps"),
        (dict(schedule="cubic"), "kind"),
        (dict(temperatures=[0.0, 0.5]), "temperatures"),
        (dict(temperatures=[0.0, 0.6, 0.5, 1.0]), "temperatures"),
        (dict(temperatures=[0.1, 1.0]), "temperatures"),
    ]:
        with pytest.raises(ValueError, match=match):
            mcmc.ais(GOOD_K, y, **kwargs)
    with pytest.raises(ValueError, match="training points"):
        mcmc.ais(GOOD_K, y, reference=gpc.infer(np.eye(3), [1, 1, 1]))


def test_bad_predictive_input():
    S = np.zeros((10, 5, 2))
    Kc, kd = np.ones((2, 3)), np.ones(3)
    with pytest.raises(ValueError, match="K_cross"):
        mcmc.predictive_probability(S, GOOD_K, np.ones((3, 3)), kd)
    with pytest.raises(ValueError, match="k_diag"):
        mcmc.predictive_probability(S, GOOD_K, Kc, np.ones(2))
    with pytest.raises(ValueError, match="latent values"):
        mcmc.predictive_probability(np.zeros((10, 5, 3)), GOOD_K, Kc, kd)
    with pytest.raises(ValueError, match="samples"):
        mcmc.predictive_probability(np.zeros(5), GOOD_K, Kc, kd)
    with pytest.raises(ValueError, match="NaN"):
        mcmc.predictive_probability(np.full((10, 5, 2), np.nan), GOOD_K, Kc, kd)
    with pytest.raises(ValueError, match="finite"):
        mcmc.predictive_probability(S, GOOD_K, Kc, [1.0, np.inf, 1.0])
    with pytest.raises(ValueError, match="classification"):
        mcmc.predictive_probability(S, GOOD_K, Kc, kd, Gaussian())
    with pytest.raises(ValueError, match="jitter"):
        mcmc.predictive_probability(S, GOOD_K, Kc, kd, jitter=-1.0)
    pred = mcmc.predictive_probability(S, GOOD_K, Kc, kd, jitter=0.0)
    np.testing.assert_allclose(pred.proba, 0.5)
    with pytest.raises(ValueError, match="-1 and \\+1"):
        pred.mean_log_prob([1, 0, 1])
