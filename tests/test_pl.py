"""Posterior linearisation at the K level.

The expectations are derived independently of gpc's closed forms: statistical linear
regression by adaptive quadrature of the label's conditional moments, the linearised
model's evidence from a dense Gaussian density, the paper's evidence correction by
NumPy's Gauss-Hermite rule, exact GP regression for the Gaussian likelihood, and
agreement between the parallel and sequential schedules.
"""

import warnings
from pathlib import Path

import numpy as np
import pytest
from numpy.polynomial.hermite_e import hermegauss
from scipy import integrate
from scipy.special import logsumexp
from scipy.stats import multivariate_normal
from sklearn.exceptions import ConvergenceWarning

import gpc
from gpc.datasets import available_datasets, load_dataset
from gpc.likelihoods import Gaussian, NoisyThreshold

from _sites import LIKS, data, lik_obj, p_lik, se


def pl(K, y, lik, **kw):
    return gpc.infer(K, y, method="pl", likelihood=lik_obj(lik), compute_gradient=False,
                     **kw)


def slr_by_quadrature(name, y, m, v):
    """(A, b, Omega) of the label's conditional mean g(f) = 2 p(+1|f) - 1 and
    variance 1 - g^2 under N(m, v), by adaptive quadrature."""
    s = np.sqrt(v)

    def expect(h):
        val, _ = integrate.quad(lambda u: h(m + s * u) * np.exp(-0.5 * u * u),
                                -40, 40, points=[-m / s], epsabs=1e-13, epsrel=1e-12,
                                limit=200)
        return val / np.sqrt(2 * np.pi)

    g = lambda f: 2.0 * p_lik(name, 1.0, f) - 1.0  # noqa: E731
    ybar = expect(g)
    psi = expect(lambda f: (f - m) * g(f))
    A = psi / v
    b = ybar - A * m
    Omega = 1.0 - ybar ** 2 - A * A * v       # Var(g) + E[1 - g^2] - A^2 v
    return A, b, Omega


@pytest.mark.parametrize("lik", LIKS)
def test_fixed_point_is_the_statistical_linear_regression_at_the_marginals(lik):
    X, y = data(25, 3)
    res = pl(se(X, 1.2, 3.0), y, lik, tol=1e-11)
    assert res.info["converged"]
    tau, nu = res.state["tau"], res.state["nu"]
    mu, var = res.posterior.marginal_mean, res.posterior.marginal_var
    for i in range(0, 25, 4):
        A, b, Om = slr_by_quadrature(lik, y[i], mu[i], var[i])
        assert Om > 0
        assert tau[i] == pytest.approx(A * A / Om, rel=1e-7, abs=1e-12)
        assert nu[i] == pytest.approx(A * (y[i] - b) / Om, rel=1e-7, abs=1e-12)


@pytest.mark.parametrize("lik", LIKS)
def test_log_evidence_matches_the_papers_formula_written_out(lik):
    # eq. 18-19: the linearised model's evidence (a dense Gaussian density) plus each
    # label's correction log E[p(y|f) / N(y; A f + b, Omega)] under N(mu_i, P_i) by
    # the order-10 Gauss-Hermite rule; (A, b, Omega) from adaptive quadrature.
    X, y = data(12, 5)
    K = se(X, 1.0, 2.0)
    res = pl(K, y, lik, tol=1e-12)
    mu, var = res.posterior.marginal_mean, res.posterior.marginal_var
    slr = np.array([slr_by_quadrature(lik, y[i], mu[i], var[i]) for i in range(12)])
    A, b, Om = slr.T
    ytil = (y - b) / A
    log_zlin = (multivariate_normal(np.zeros(12), K + np.diag(Om / A ** 2))
                .logpdf(ytil) - np.log(np.abs(A)).sum())
    # The step-shaped likelihoods have the exact integral (adaptive quadrature).
    u, w = hermegauss(10)
    w = w / np.sqrt(2 * np.pi)
    corr = 0.0
    for i in range(12):
        def ratio(f):
            dens = np.exp(-0.5 * (y[i] - A[i] * f - b[i]) ** 2 / Om[i]) / np.sqrt(
                2 * np.pi * Om[i])
            return p_lik(lik, y[i], f) / dens
        if lik in ("probit", "logit"):
            corr += np.log(np.sum(w * ratio(mu[i] + np.sqrt(var[i]) * u)))
        else:
            corr += np.log(integrate.quad(
                lambda u: ratio(mu[i] + np.sqrt(var[i]) * u) * np.exp(-0.5 * u * u),
                -40, 40, points=[-mu[i] / np.sqrt(var[i])], epsabs=0, epsrel=1e-12,
                limit=200)[0] / np.sqrt(2 * np.pi))
    assert res.log_evidence == pytest.approx(log_zlin + corr, abs=1e-7)


@pytest.mark.parametrize("s2", [0.1, 1.0])
@pytest.mark.parametrize("updates", ["parallel", "sequential"])
def test_gaussian_likelihood_is_exact_in_one_iteration(s2, updates):
    X, _ = data(15, 2)
    f = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1]
    K = se(X, 0.9, 1.5)
    # One sweep (max_sweeps=1) already gives the exact posterior; sequential PL
    # needs a second sweep to see that nothing changes any more.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = gpc.infer(K, f, method="pl", likelihood=Gaussian(noise_variance=s2),
                        updates=updates, compute_gradient=False, max_sweeps=1)
    assert res.info["n_sweeps"] == 1
    assert res.info["converged"] == (updates == "parallel")
    C = K + s2 * np.eye(15)
    mean = K @ np.linalg.solve(C, f)
    cov = K - K @ np.linalg.solve(C, K)
    np.testing.assert_allclose(res.posterior.marginal_mean, mean, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(res.posterior.marginal_var, np.diag(cov), rtol=1e-10,
                               atol=1e-12)
    exact = multivariate_normal(np.zeros(15), C).logpdf(f)
    assert res.log_evidence == pytest.approx(exact, abs=1e-10)


# Cases where both schedules converge within 500 sweeps.  PL is not guaranteed to
# converge: on this data, parallel PL with the noisy threshold at ell = 1 needs fixed
# damping 0.5 and 421 sweeps, and the step likelihood at ell = 3 creeps on without
# converging (its evidence stable to 1e-9) under both schedules.
PAR_SEQ_CASES = [("probit", 1.0, 10.0), ("probit", 3.0, 100.0), ("logit", 1.0, 10.0),
                 ("logit", 3.0, 100.0), ("noisy_threshold", 0.5, 1.0),
                 ("noisy_threshold", 3.0, 100.0), ("step", 0.5, 1.0),
                 ("step", 1.0, 10.0)]


@pytest.mark.parametrize("lik, ell, sf2", PAR_SEQ_CASES)
def test_parallel_and_sequential_reach_the_same_fixed_point(lik, ell, sf2):
    X, y = data(30, 11)
    K = se(X, ell, sf2)
    par = pl(K, y, lik, updates="parallel", tol=1e-10, max_sweeps=500)
    seq = pl(K, y, lik, updates="sequential", tol=1e-10, max_sweeps=500)
    assert par.info["converged"] and seq.info["converged"]
    for key in ("tau", "nu"):
        np.testing.assert_allclose(par.state[key], seq.state[key], rtol=1e-6,
                                   atol=1e-8)
    assert par.log_evidence == pytest.approx(seq.log_evidence, abs=1e-6)


def test_sites_stay_positive_where_ep_meets_a_negative_cavity():
    # The two-point zero-mean analogue on which EP needs its improper-update policy
    # (tests/test_ep.py): PL's sites are positive and its posterior proper.
    K = np.array([[1.0, 0.99], [0.99, 1.0]])
    y = np.array([1.0, -1.0])
    for updates in ("parallel", "sequential"):
        res = pl(K, y, NoisyThreshold(0.01), updates=updates)
        assert res.info["converged"]
        assert np.all(res.state["tau"] > 0)
        assert np.all(res.posterior.marginal_var > 0) and np.isfinite(res.log_evidence)


@pytest.mark.parametrize("name", available_datasets())
def test_positive_definite_posteriors_on_every_shipped_dataset(name):
    X, y = load_dataset(name)
    X = (X - X.mean(0)) / (X.std(0) + 1e-12)
    y = np.where(y == np.unique(y)[1], 1.0, -1.0)
    X, y = X[:150], y[:150]
    d = X.shape[1]
    for ell, sf2 in [(np.sqrt(d), 1.0), (0.3 * np.sqrt(d), 50.0)]:
        K = se(X, ell, sf2)
        for lik in ["probit", "logit", "noisy_threshold"]:
            res = pl(K, y, lik, max_sweeps=300)
            # Sigma = (K^{-1} + T)^{-1} is positive definite exactly when T >= 0
            # (K positive definite): B = I + S K S has a Cholesky factor.
            tau = res.state["tau"]
            assert np.all(tau >= 0) and np.all(np.isfinite(tau))
            s = np.sqrt(tau)
            np.linalg.cholesky(np.eye(len(y)) + s[:, None] * K * s[None, :])
            assert np.all(res.posterior.marginal_var > 0)
            assert np.isfinite(res.log_evidence)


def test_warm_start_needs_fewer_sweeps():
    X, y = data(40, 6)
    first = pl(se(X, 1.0, 5.0), y, "probit", tol=1e-10)
    K2 = se(X, 1.05, 5.0)
    cold = pl(K2, y, "probit", tol=1e-10)
    warm = pl(K2, y, "probit", tol=1e-10, init=first.state)
    assert warm.info["n_sweeps"] < cold.info["n_sweeps"]
    assert warm.log_evidence == pytest.approx(cold.log_evidence, abs=1e-8)


def _first_fold(name):
    """The first of 10 stratified folds of a data set (seed 0), standardised on it."""
    from sklearn.model_selection import StratifiedKFold
    X, y01 = load_dataset(name)
    train, _ = next(iter(StratifiedKFold(10, shuffle=True, random_state=0).split(X, y01)))
    X = X[train]
    return (X - X.mean(0)) / X.std(0), 2.0 * y01[train] - 1.0


def test_a_runaway_warm_start_gives_way_to_the_run_from_the_prior():
    # Recorded during L-BFGS-B on a housing fold (logit with Gauss-Hermite order 10,
    # the papers' kernel): the sites of the previous hyperparameters put some
    # marginals ~30 standard deviations on the wrong side under the new K (signal
    # variance 7600).  There the SLR has a vanishing slope but a finite offset, and
    # the means run away (to ~1e6, all site precisions 0) instead of converging.
    # The run from the prior is then made too and kept: exactly the cold result.
    fix = np.load(Path(__file__).parent / "data" / "pl_runaway_warm_start.npz")
    X, y = _first_fold("housing")
    kernel = gpc.kernels.paper_kernel(np.ones(X.shape[1]), jitter=0.1)
    kernel.theta = fix["theta"]
    K = np.asfortranarray(kernel(X))
    lik = gpc.likelihoods.Logit(gh_order=10)
    # One route for both runs (gpc's tiles, pinned by the limit): otherwise a
    # change in the machine's other load between them can move a call between
    # LAPACK's route and the tiles, whose last bits differ.
    with gpc.thread_limit(1):
        cold = gpc.infer(K, y, method="pl", likelihood=lik)
        warm = gpc.infer(K, y, method="pl", likelihood=lik,
                         init={"tau": fix["tau"], "nu": fix["nu"]})
    assert cold.info["converged"] and not cold.info["warm_start_rejected"]
    assert warm.info["warm_start_rejected"] and warm.info["converged"]
    assert warm.log_evidence == cold.log_evidence
    np.testing.assert_array_equal(warm.dK, cold.dK)
    assert np.isfinite(warm.dK).all()
    assert np.abs(warm.posterior.marginal_mean).max() < 100


def test_a_runaway_parallel_run_is_redone_with_damping():
    # Thyroid, the kernel L-BFGS-B found there for the logit (signal variance 1150,
    # bias 100): undamped parallel probit PL from the prior runs away (the site
    # changes look small next to 1, but move every marginal by hundreds), is stopped
    # once its residual has grown 100-fold past 1, and is redone with the damping
    # starting at 1/2, which converges to sequential PL's fixed point.
    X, y = _first_fold("thyroid")
    kernel = gpc.kernels.paper_kernel(np.ones(X.shape[1]), jitter=0.1)
    kernel.theta = np.log([6.04, 1.28, 5.06, 1e3, 1.55, 1.15e3, 100.0])
    K = np.asfortranarray(kernel(X))
    par = pl(K, y, "probit", updates="parallel")
    seq = pl(K, y, "probit", updates="sequential")
    assert par.info["converged"] and seq.info["converged"]
    assert par.info["n_runs"] == 2 and par.info["start_damping"] == 0.5
    assert par.log_evidence == pytest.approx(seq.log_evidence, abs=1e-7)
    np.testing.assert_allclose(par.posterior.marginal_mean, seq.posterior.marginal_mean,
                               rtol=1e-6, atol=1e-6)


def test_parallel_noisy_threshold_converges_where_plain_sweeps_stall():
    # Plain parallel sweeps stall here (the fixed point is unstable for them, and
    # before the chord steps were shortened and resumed after stalling, 300 sweeps
    # did not converge); the accelerated run reaches sequential PL's fixed point.
    X, y = data(80, 2, d=3)
    K = se(X, 2.0, 100.0)
    par = pl(K, y, "noisy_threshold", updates="parallel", tol=1e-9, max_sweeps=300)
    seq = pl(K, y, "noisy_threshold", updates="sequential", tol=1e-11,
             max_sweeps=3000)
    assert par.info["converged"] and seq.info["converged"]
    assert par.log_evidence == pytest.approx(seq.log_evidence, abs=1e-7)
    np.testing.assert_allclose(par.posterior.marginal_mean, seq.posterior.marginal_mean,
                               rtol=1e-5, atol=1e-6)


def test_options_are_checked():
    X, y = data(5, 1)
    K = se(X)
    with pytest.raises(ValueError, match="evidence_order"):
        pl(K, y, "probit", evidence_order=0)
    with pytest.raises(ValueError, match="updates"):
        pl(K, y, "probit", updates="both")
    assert "pl" in gpc.available_methods()


def refit(K, y, lik, **kw):
    return gpc.infer(K, y, method="pl", likelihood=lik_obj(lik) if isinstance(lik, str)
                     else lik, tol=1e-13, max_sweeps=3000, compute_gradient=False,
                     **kw).log_evidence


@pytest.mark.parametrize("lik", LIKS)
@pytest.mark.parametrize("ell, sf2", [(1.1, 2.5), (0.6, 8.0)])
def test_dK_is_the_total_derivative_through_the_fixed_point(lik, ell, sf2):
    # Central differences of the converged evidence (PL refitted at K +- h E).
    X, y = data(15, 4)
    K = se(X, ell, sf2)
    res = gpc.infer(K, y, method="pl", likelihood=lik_obj(lik), tol=1e-13,
                    max_sweeps=3000)
    assert res.info["converged"] and res.info["gradient_exact"]
    np.testing.assert_allclose(res.dK, res.dK.T, atol=1e-12 * np.abs(res.dK).max())
    rng = np.random.RandomState(1)
    for _ in range(2):
        E = rng.randn(15, 15)
        E = E + E.T
        h = 1e-7 if np.abs(res.dK).max() > 10 else 1e-6
        fd = (refit(K + h * E, y, lik) - refit(K - h * E, y, lik)) / (2 * h)
        assert np.sum(res.dK * E) == pytest.approx(fd, rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("method", ["pl", "ep"])
def test_an_unconverged_run_says_its_gradient_is_not_exact(method):
    # dK is the derivative at the fixed point, which an unconverged run has not
    # reached: its gradient is flagged, beside the warning.
    X, y = data(15, 4)
    with pytest.warns(ConvergenceWarning, match="gradient"):
        res = gpc.infer(se(X, 1.1, 2.5), y, method=method, likelihood="logit",
                        max_sweeps=1)
    assert not res.info["converged"] and res.info["gradient_exact"] is False


@pytest.mark.parametrize("lik, ell", [("noisy_threshold", 10 ** 1.5), ("step", 10.0)])
def test_a_run_stalled_at_rounding_noise_is_refused(lik, ell):
    # Hard labels under a kernel far smoother than they are: on scikit-learn's
    # GPC test data the linearisation's marginal variances are resolved only to
    # 1e-9 (threshold) and 1e-8 (step), the residual stalls there, above tol,
    # and the adjoint system behind the gradient has condition numbers of 4e8-7e8.
    skt = pytest.importorskip("sklearn.gaussian_process.tests.test_gpc")
    X, y = skt.X, np.where(skt.y > 0, 1.0, -1.0)
    with pytest.raises(gpc.inference.NumericalError, match="cannot be resolved"):
        gpc.infer(se(X, ell), y, method="pl", likelihood=lik_obj(lik))


@pytest.mark.parametrize("lik", ["noisy_threshold", "step"])
def test_scale_free_likelihoods_have_no_signal_variance_gradient(lik):
    # Only sign(f) matters: the evidence does not change with the signal variance,
    # and the total derivative along K itself (d/d log sf2) vanishes.
    X, y = data(12, 4)
    K = se(X, 1.0, 2.0)
    res = gpc.infer(K, y, method="pl", likelihood=lik_obj(lik), tol=1e-13,
                    max_sweeps=3000)
    assert refit(7.0 * K, y, lik) == pytest.approx(res.log_evidence, abs=1e-8)
    assert np.sum(res.dK * K) == pytest.approx(0.0, abs=1e-6 * np.abs(res.dK).sum())


@pytest.mark.parametrize("eps", [0.05, 0.15, 0.4999, 0.5])
def test_dlik_is_the_total_eps_derivative(eps):
    # Central differences of the refitted evidence.  At eps = 0.5 the labels carry
    # no information (every site is 0) and the sites' derivative is taken one-sided
    # (eps + h is not a likelihood; L-BFGS-B steps straight to this bound on
    # housing): with delta = 1 - 2 eps, p(y|f) = 1/2 + delta (H(y f) - 1/2) and the
    # zero-mean prior makes the evidence even in delta, so its derivative vanishes.
    X, y = data(15, 9)
    K = se(X, 0.8, 3.0)
    res = gpc.infer(K, y, method="pl", likelihood=NoisyThreshold(eps), tol=1e-13,
                    max_sweeps=3000)
    assert np.isfinite(res.dlik).all() and np.isfinite(res.dK).all()
    if eps == 0.5:
        assert res.log_evidence == pytest.approx(15 * np.log(0.5), abs=1e-12)
        assert res.dlik[0] == pytest.approx(0.0, abs=1e-10)
        return
    h = 1e-7
    fd = (refit(K, y, NoisyThreshold(eps + h))
          - refit(K, y, NoisyThreshold(eps - h))) / (2 * h)
    assert res.dlik[0] == pytest.approx(fd, rel=1e-5)


def test_gaussian_likelihood_gradients_are_exact():
    X, _ = data(12, 2)
    f = np.cos(X[:, 0]) - 0.2 * X[:, 1]
    K = se(X, 0.8, 1.3)
    s2 = 0.3
    res = gpc.infer(K, f, method="pl", likelihood=Gaussian(noise_variance=s2))
    assert res.info["gradient_exact"] is True
    C = K + s2 * np.eye(12)
    alpha = np.linalg.solve(C, f)
    Ci = np.linalg.inv(C)
    np.testing.assert_allclose(res.dK, 0.5 * (np.outer(alpha, alpha) - Ci),
                               rtol=1e-9, atol=1e-12)
    assert res.dlik[0] == pytest.approx(0.5 * (alpha @ alpha - np.trace(Ci)), rel=1e-9)


@pytest.mark.parametrize("likelihood", ["laplace", "one_sided_exponential"])
def test_pl_rejects_regression_likelihoods_it_cannot_linearise(likelihood):
    # Found by tests/test_properties.py: PL's statistical linear regression is that
    # of a label +-1, so real targets under these likelihoods gave NaN sites (left
    # out of the evidence with only a RuntimeWarning) or meaningless finite ones.
    X = np.linspace(-2, 2, 6)[:, None]
    K = np.exp(-0.5 * (X - X.T) ** 2)
    with pytest.raises(ValueError, match="method='pl'"):
        gpc.infer(K, [-1.2, -0.8, 1.1, -1.0, 0.9, 1.3], method="pl",
                  likelihood=likelihood)


# --- The step and the noisy threshold: the correction in closed form ------------

def threshold_correction(eps, y, m, v, tau, nu):
    """gpc's correction c = log E_{N(m, v)}[p(y|f) exp(tau f^2 / 2 - nu f)] and its
    sums (dc/dm, dc/dv, E[f], E[f^2], dc/d eps) for one label."""
    lik = lik_obj("step") if eps == 0 else NoisyThreshold(eps)
    lik = gpc.likelihoods.get_likelihood(lik)
    arr = lambda a: np.array([float(a)])  # noqa: E731
    none = np.zeros(1)
    g_mu, g_P, e_f, e_f2, dpar, c = gpc._pl.pl_correction_gradients(
        gpc._model.LikelihoodModel(
            lik.code, np.asarray(lik.params, float), np.asarray(lik.quad_x, float),
            np.asarray(lik.quad_logw, float), 0, none, none),
        arr(y), arr(m), arr(v), arr(tau), arr(nu))
    return c[0], np.array([g_mu[0], g_P[0], e_f[0], e_f2[0], dpar])


def correction_by_quad(eps, y, m, v, tau, nu, h=lambda f: 1.0):
    """log |int N(f; m, v) p(y|f) exp(tau f^2 / 2 - nu f) h(f) df| and its sign, each
    half line by adaptive quadrature around its own largest integrand."""
    a = 1 / v - tau
    mc, sc = (m / v - nu) / a, 1 / np.sqrt(a)
    log_g = lambda f: (-0.5 * (f - m) ** 2 / v - 0.5 * np.log(2 * np.pi * v)  # noqa
                       + 0.5 * tau * f * f - nu * f)
    logs, signs = [], []
    for side in (1.0, -1.0):                       # the half line side * f > 0
        weight = 1 - eps if y * side > 0 else eps
        peak = mc if mc * side > 0 else 0.0
        lo, hi = sorted([side * max(0.0, side * mc - 40 * sc),
                         side * (max(0.0, side * mc) + 40 * sc)])
        val = integrate.quad(lambda f: np.exp(log_g(f) - log_g(peak)) * h(f), lo, hi,
                             epsabs=0, epsrel=1e-13, limit=400)[0]
        if weight > 0 and val != 0:
            logs.append(np.log(weight * abs(val)) + log_g(peak))
            signs.append(np.sign(val))
    return logsumexp(logs, b=signs, return_sign=True)


# (y, m, v) with the marginal near, on and far on either side of the step, and the
# site at the linearisation there or elsewhere (any proper cavity).
THRESHOLD_CASES = [(1, 0.3, 1.0, 0.2, 0.1), (1, -0.5, 2.0, 0.3, -0.4),
                   (-1, 2.0, 0.5, 1.5, 3.0), (1, -3.0, 1.0, 0.0, 0.0),
                   (1, -8.0, 1.0, 0.05, -8.0), (-1, 10.0, 0.3, 2.0, 10.0),
                   (1, 1e-3, 1e-2, 90.0, 5.0), (1, -30.0, 1.0, 0.0, -30.0),
                   (-1, 1.2, 5.0, 0.19, -0.5), (1, 0.0, 1.0, 0.99, 0.0)]


@pytest.mark.parametrize("eps", [0.0, 1e-6, 0.01, np.exp(-1.76333), 0.3, 0.5])
@pytest.mark.parametrize("y, m, v, tau, nu", THRESHOLD_CASES)
def test_threshold_correction_is_the_integral(eps, y, m, v, tau, nu):
    c, sums = threshold_correction(eps, y, m, v, tau, nu)
    ref, _ = correction_by_quad(eps, y, m, v, tau, nu)
    assert c == pytest.approx(ref, rel=1e-12, abs=1e-12)
    # The tilted law's first two moments.
    lf, sf = correction_by_quad(eps, y, m, v, tau, nu, lambda f: f)
    lf2, _ = correction_by_quad(eps, y, m, v, tau, nu, lambda f: f * f)
    assert sums[2] == pytest.approx(sf * np.exp(lf - ref), rel=1e-10, abs=1e-12)
    assert sums[3] == pytest.approx(np.exp(lf2 - ref), rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("eps", [0.0, 0.01, np.exp(-1.76333), 0.3])
@pytest.mark.parametrize("y, m, v, tau, nu", THRESHOLD_CASES)
def test_threshold_correction_derivatives_are_finite_differences(eps, y, m, v, tau,
                                                                   nu):
    # Central differences of the integral (by quadrature) with the site fixed:
    # the closed form's derivatives include the step's delta function at f = 0.
    c, sums = threshold_correction(eps, y, m, v, tau, nu)

    def ref(m=m, v=v, eps=eps):
        return correction_by_quad(eps, y, m, v, tau, nu)[0]

    a = 1 - tau * v                       # steps small next to the cavity's scale
    hm, hv = 1e-4 * a * np.sqrt(v), 1e-4 * a * v
    dm = (ref(m=m + hm) - ref(m=m - hm)) / (2 * hm)
    dv = (ref(v=v + hv) - ref(v=v - hv)) / (2 * hv)
    assert sums[0] == pytest.approx(dm, rel=1e-6, abs=1e-7 / np.sqrt(v))
    assert sums[1] == pytest.approx(dv, rel=1e-6, abs=1e-7 / v)
    assert np.isfinite(c)
    if 0 < eps:
        he = 1e-4 * eps
        de = (ref(eps=eps + he) - ref(eps=eps - he)) / (2 * he)
        assert sums[4] == pytest.approx(de, rel=1e-6, abs=1e-8 / eps)
    else:
        assert sums[4] == 0.0


def _toy():
    """scikit-learn's test data (tests/test_gpc.py)."""
    X = np.linspace(0, 10, 30)[:, None]
    return X, np.where(np.sin(X[:, 0]) > 0, 1.0, -1.0)


def _toy_evidence(log_ell, eps=np.exp(-1.76333), **kw):
    X, y = _toy()
    K = np.asfortranarray(np.exp(-0.5 * (X - X.T) ** 2 / np.exp(2 * log_ell)))
    return gpc.infer(K, y, method="pl", likelihood=NoisyThreshold(eps), tol=1e-12,
                     max_sweeps=2000, **kw)


def test_noisy_threshold_evidence_is_smooth_in_the_length_scale():
    # With the Gauss-Hermite rule the evidence once jumped (by 0.14 at log
    # length scales 0.7175 and 0.79 here) as nodes crossed f = 0.  On a grid of step
    # h the second differences of a smooth function are h^2 f'': bounded by 50 h^2
    # (|f''| is about 8 here), where a jump J gives J.
    grid = np.linspace(0.68, 0.80, 97)
    h = grid[1] - grid[0]
    ev = np.array([_toy_evidence(t, compute_gradient=False).log_evidence
                   for t in grid])
    assert np.abs(np.diff(ev, 2)).max() < 50 * h * h
    pair = [_toy_evidence(t, compute_gradient=False).log_evidence
            for t in (0.68125, 0.6815)]
    assert abs(pair[1] - pair[0]) < 1e-3


@pytest.mark.parametrize("log_ell", [np.log(0.3), 0.0, 0.68125, 1.5, np.log(10)])
def test_noisy_threshold_gradient_is_the_evidence_derivative(log_ell):
    # Richardson-extrapolated central differences in the log length scale and
    # central differences in eps.
    eps = np.exp(-1.76333)
    X, _ = _toy()
    res = _toy_evidence(log_ell)
    assert res.info["converged"]
    D2 = (X - X.T) ** 2 / np.exp(2 * log_ell)
    analytic = np.sum(res.dK * np.exp(-0.5 * D2) * D2)

    def cd(h):
        return (_toy_evidence(log_ell + h, compute_gradient=False).log_evidence
                - _toy_evidence(log_ell - h, compute_gradient=False).log_evidence) / (
                    2 * h)

    fd = (4 * cd(5e-5) - cd(1e-4)) / 3
    assert analytic == pytest.approx(fd, rel=1e-6, abs=1e-8)
    he = 1e-6
    fd_eps = (_toy_evidence(log_ell, eps + he, compute_gradient=False).log_evidence
              - _toy_evidence(log_ell, eps - he, compute_gradient=False).log_evidence
              ) / (2 * he)
    assert res.dlik[0] == pytest.approx(fd_eps, rel=1e-6)


def test_noisy_threshold_fit_takes_few_evaluations():
    # With the evidence jumping, L-BFGS-B needed thousands of evaluations
    # (130 on this fit before the closed form); with a smooth evidence and its exact
    # gradient, two hyperparameters take some twenty.
    from sklearn.gaussian_process.kernels import RBF
    X, y = _toy()
    clf = gpc.GaussianProcessClassifier(RBF(1.0), method="pl",
                                        likelihood="noisy_threshold").fit(X, y)
    opt = clf.base_estimator_.optimizer_result_
    assert opt.n_evaluations < 100
    # The length scale is interior: the evidence is stationary in it there.
    res = _toy_evidence(opt.theta[0], np.exp(opt.theta[1]))
    D2 = (X - X.T) ** 2 / np.exp(2 * opt.theta[0])
    assert abs(np.sum(res.dK * np.exp(-0.5 * D2) * D2)) < 1e-3
