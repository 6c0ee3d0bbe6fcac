"""Mean-field GP classification (ensemble and naive): exact cases, the variational
bound, gradients against finite differences, the solver, the estimator."""


import warnings

import numpy as np
import pytest
from scipy import integrate
from scipy.special import log_ndtr
from sklearn.exceptions import ConvergenceWarning

import gpc
from gpc.likelihoods import Gaussian
from _sites import LIKS, data, lik_obj, p_lik, richardson, se

METHODS = ["mean_field", "naive_mean_field"]


def _quad_1d(name, y, k, weight=lambda u: 1.0):
    """int p(y|f) weight(f) N(f; 0, k) df by adaptive quadrature."""
    sd = np.sqrt(k)
    f = lambda u: (p_lik(name, y, u) * weight(u) * np.exp(-0.5 * u * u / k)
                   / np.sqrt(2 * np.pi * k))
    pts = [0.0] if name in ("step", "noisy_threshold") else None
    val, _ = integrate.quad(f, -40 * sd, 40 * sd, points=pts, limit=400,
                            epsabs=0, epsrel=1e-11)
    return val


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", LIKS)
@pytest.mark.parametrize("k", [0.01, 1.0, 30.0])
def test_one_point_is_exact(method, name, k):
    # With n = 1 both mean fields are exact: q is the posterior, the free energy is
    # -log Z, and the gradient is d log Z / dk = E[p (f^2 - k) / (2 k^2)] / Z.
    for y in (-1.0, 1.0):
        res = gpc.infer([[k]], [y], method=method, likelihood=lik_obj(name))
        Z = _quad_1d(name, y, k)
        assert res.log_evidence == pytest.approx(np.log(Z), rel=1e-9, abs=1e-11)
        dZ = _quad_1d(name, y, k, lambda u: (u * u - k) / (2 * k * k))
        assert res.dK[0, 0] == pytest.approx(dZ / Z, rel=1e-7, abs=1e-10)


def _log_evidence_2d(name, y, K):
    """log P(y1, y2): orthant probabilities in closed form for step and probit,
    a 2-D Gauss-Hermite grid (200 x 200 nodes in whitened coordinates) otherwise."""
    if name in ("step", "probit"):
        C = K + (np.eye(2) if name == "probit" else 0.0)
        rho = y[0] * y[1] * C[0, 1] / np.sqrt(C[0, 0] * C[1, 1])
        return np.log(0.25 + np.arcsin(rho) / (2 * np.pi))
    x, w = np.polynomial.hermite_e.hermegauss(200)
    w = w / w.sum()
    L = np.linalg.cholesky(K)
    U1, U2 = np.meshgrid(x, x, indexing="ij")
    F1 = L[0, 0] * U1
    F2 = L[1, 0] * U1 + L[1, 1] * U2
    P = p_lik(name, y[0], F1) * p_lik(name, y[1], F2)
    return np.log(np.einsum("i,j,ij->", w, w, P))


@pytest.mark.parametrize("name", ["step", "probit", "logit"])
@pytest.mark.parametrize("rho", [-0.95, -0.5, 0.0, 0.3, 0.9, 0.99])
@pytest.mark.parametrize("scale", [0.1, 1.0, 10.0])
def test_ensemble_free_energy_bounds_the_evidence_for_two_points(name, rho, scale):
    K = scale * np.array([[1.0, rho], [rho, 1.3]])
    K[0, 1] = K[1, 0] = scale * rho * np.sqrt(1.3)
    for y in ([1.0, 1.0], [1.0, -1.0], [-1.0, -1.0]):
        exact = _log_evidence_2d(name, np.array(y), K)
        res = gpc.infer(K, y, method="mean_field", likelihood=name)
        assert res.log_evidence <= exact + 1e-10
        if rho == 0.0:           # independent points: the factorised q is exact
            assert res.log_evidence == pytest.approx(exact, rel=1e-9, abs=1e-12)


def test_the_grid_matches_the_closed_form():
    # The 2-D grid used for the logit above, checked where a closed form exists.
    K = np.array([[2.0, 1.2], [1.2, 1.5]])
    y = np.array([1.0, -1.0])
    x, w = np.polynomial.hermite_e.hermegauss(200)
    w = w / w.sum()
    L = np.linalg.cholesky(K)
    U1, U2 = np.meshgrid(x, x, indexing="ij")
    P = p_lik("probit", y[0], L[0, 0] * U1) * p_lik("probit", y[1],
                                                      L[1, 0] * U1 + L[1, 1] * U2)
    grid = np.log(np.einsum("i,j,ij->", w, w, P))
    assert grid == pytest.approx(_log_evidence_2d("probit", y, K), rel=1e-10)


@pytest.mark.parametrize("method", METHODS)
def test_gaussian_likelihood_gives_the_exact_posterior_mean_and_covariance(method):
    # Mean field is exact for the mean of a Gaussian model; the linear-response
    # covariance (K^{-1} + W)^{-1} is then the exact posterior covariance too.
    X, _ = data(12, 3)
    K = se(X, 0.8, 1.5)
    y = np.sin(2 * X[:, 0]) + 0.1 * X[:, 1]
    s2 = 0.3
    res = gpc.infer(K, y, method=method, likelihood=Gaussian(s2))
    G = np.linalg.solve(K + s2 * np.eye(12), np.eye(12))
    Xs = np.array([[0.2, -0.1], [1.0, 0.5]])
    Ks = se(X, 0.8, 1.5, Xs)
    mean, var = res.posterior.latent_mean_and_variance(Ks, np.full(2, 1.5))
    np.testing.assert_allclose(mean, Ks.T @ G @ y, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(var, 1.5 - np.einsum("ij,ik,kj->j", Ks, G, Ks),
                               rtol=1e-9)
    if method == "mean_field":
        # The factorised q misses the posterior correlations: the bound is strict.
        exact = (-0.5 * y @ G @ y - 0.5 * np.linalg.slogdet(K + s2 * np.eye(12))[1]
                 - 6 * np.log(2 * np.pi))
        assert res.log_evidence < exact


def _sym(n, seed):
    rng = np.random.RandomState(seed)
    E = rng.randn(n, n)
    return E + E.T


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", LIKS)
@pytest.mark.parametrize("sf2", [0.5, 5.0, 50.0])
def test_dK_matches_finite_differences(method, name, sf2):
    X, y = data(10, 1)
    K = se(X, 1.0, sf2) + 0.05 * sf2 * np.eye(10)
    lik = lik_obj(name)
    res = gpc.infer(K, y, method=method, likelihood=lik, tol=1e-12)
    E = _sym(10, 2)
    h = 1e-5 * sf2
    lp, lm = (gpc.infer(K + t * E, y, method=method, likelihood=lik, init=res.state,
                        tol=1e-12, compute_gradient=False).log_evidence
              for t in (h, -h))
    fd = (lp - lm) / (2 * h)
    assert np.sum(res.dK * E) == pytest.approx(fd, rel=1e-5, abs=1e-7)
    np.testing.assert_allclose(res.dK, res.dK.T, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_dlik_matches_finite_differences_in_eps(method):
    X, y = data(10, 4)
    K = se(X, 1.0, 4.0) + 0.1 * np.eye(10)
    eps, h = 0.15, 1e-6
    res = gpc.infer(K, y, method=method, likelihood=gpc.likelihoods.NoisyThreshold(eps),
                    tol=1e-12)
    lp, lm = (gpc.infer(K, y, method=method, tol=1e-12, init=res.state,
                        likelihood=gpc.likelihoods.NoisyThreshold(e)).log_evidence
              for e in (eps + h, eps - h))
    assert res.dlik[0] == pytest.approx((lp - lm) / (2 * h), rel=1e-6)


@pytest.mark.parametrize("method", METHODS)
def test_solution_satisfies_the_mean_field_equations(method):
    X, y = data(15, 5)
    K = se(X, 0.7, 3.0) + 0.1 * np.eye(15)
    res = gpc.infer(K, y, method=method, likelihood="step")
    m = res.state["m"]
    if method == "mean_field":
        s = 1.0 / np.diag(np.linalg.inv(K))
    else:
        s = np.diag(K)
    z = y * m / np.sqrt(s)
    g = y * np.exp(-0.5 * z * z - log_ndtr(z)) / np.sqrt(2 * np.pi * s)   # eq. (6)
    np.testing.assert_allclose(m, K @ g - s * g, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(res.posterior.alpha, g, rtol=1e-8)
    # The free energies as the paper writes them (eq. 7 and the one after (9)).
    F = -np.sum(log_ndtr(z)) + 0.5 * g @ (K - np.diag(s)) @ g
    if method == "mean_field":
        F += 0.5 * np.linalg.slogdet(K)[1] - 0.5 * np.sum(np.log(s))
    assert res.log_evidence == pytest.approx(-F, rel=1e-9)


def test_step_likelihood_mean_field_is_not_trivial():
    # MAP / Laplace gives f = 0 for the noise-free step likelihood; the mean fields
    # give a posterior mean that classifies separable training data correctly.
    X, y = data(30, 6)
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    K = se(X, 1.0, 4.0) + 0.01 * np.eye(30)
    for method in METHODS:
        res = gpc.infer(K, y, method=method, likelihood="step")
        assert np.all(np.sign(K @ res.posterior.alpha) == y)


@pytest.mark.parametrize("method", METHODS)
def test_warm_start_saves_iterations_and_gives_the_same_answer(method):
    X, y = data(40, 7)
    K = se(X, 1.0, 5.0) + 0.05 * np.eye(40)
    cold = gpc.infer(K, y, method=method, likelihood="probit")
    K2 = se(X, 1.05, 5.2) + 0.05 * np.eye(40)
    ref = gpc.infer(K2, y, method=method, likelihood="probit")
    warm = gpc.infer(K2, y, method=method, likelihood="probit", init=cold.state)
    assert warm.info["n_iter"] < ref.info["n_iter"]
    assert warm.log_evidence == pytest.approx(ref.log_evidence, rel=1e-10)


@pytest.mark.parametrize("method", METHODS)
def test_iteration_limit_warns(method):
    X, y = data(20, 8)
    K = se(X, 1.0, 20.0) + 0.05 * np.eye(20)
    with pytest.warns(ConvergenceWarning, match="without converging"):
        res = gpc.infer(K, y, method=method, likelihood="logit", max_iter=1)
    assert not res.info["converged"] and res.info["n_iter"] == 1


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="tol"):
        gpc.infer(np.eye(2), [1, -1], method="mean_field", tol=0)
    with pytest.raises(ValueError, match="max_iter"):
        gpc.infer(np.eye(2), [1, -1], method="naive_mean_field", max_iter=-1)


@pytest.mark.parametrize("lik", ["probit", "step"])
def test_ensemble_refuses_a_nearly_singular_K_and_runs_with_a_noise_term(lik):
    # Scikit-learn's test data with RBF(1.0) (reciprocal condition number 2e-15)
    # once gave -241.2, moving 0.4 nats for a 1e-4 change of log length scale
    # (finite differences -3.5e6 against an analytic -366): the cavity variances
    # 1 / [K^-1]_ii were rounding noise.  Now that K, a duplicated input and a
    # recorded K of condition number 2e17 are refused with a clear error.
    import os

    X = np.linspace(0, 10, 30)[:, None]
    y = np.where(np.sin(X[:, 0]) > 0, 1, -1)
    case = np.load(os.path.join(os.path.dirname(__file__), "data",
                                "meanfield_singular_step.npz"))
    for K, t in [(se(X, 1.0, 1.0), y),
                 (se(np.array([[0.0], [0.0], [1.0]]), 1.0, 1.0), [1, 1, -1]),
                 (case["K"], case["y"])]:
        with pytest.raises(FloatingPointError, match="mean field: K is too close"):
            gpc.infer(K, t, method="mean_field", likelihood=lik)
    # The paper's noise term makes K well conditioned; the gradient then matches
    # central differences in the log length scale.
    def value(log_ls):
        K = se(X, np.exp(log_ls), 1.0) + 1e-3 * np.eye(30)
        return gpc.infer(K, y, method="mean_field", likelihood=lik)

    res = value(0.0)
    dK_dls = se(X, 1.0, 1.0) * (X - X.T) ** 2
    h = 1e-4
    fd = (value(h).log_evidence - value(-h).log_evidence) / (2 * h)
    assert np.sum(res.dK * dK_dls) == pytest.approx(fd, rel=1e-6)


@pytest.mark.parametrize("method", METHODS)
def test_classifier_learns_hyperparameters_with_the_free_energy(method):
    from sklearn.gaussian_process.kernels import RBF, WhiteKernel
    from sklearn.gaussian_process.kernels import ConstantKernel as C

    X, y = data(40, 9)
    kernel = C(1.0, "fixed") * RBF(1.0) + WhiteKernel(0.1)   # the paper's v term
    clf = gpc.GaussianProcessClassifier(kernel, method=method, likelihood="step")
    clf.fit(X, y)
    est = clf.base_estimator_
    theta = est.kernel_.theta
    value, grad = clf.log_marginal_likelihood(theta, eval_gradient=True)
    assert value == pytest.approx(clf.log_marginal_likelihood_value_, rel=1e-8)
    # At the optimum the gradient vanishes (within the bounds), and it matches
    # finite differences at a nearby point.
    theta2 = theta + np.array([0.1, -0.2])
    v2, g2 = clf.log_marginal_likelihood(theta2, eval_gradient=True)
    fd = np.array([(clf.log_marginal_likelihood(theta2 + e)
                    - clf.log_marginal_likelihood(theta2 - e)) / 2e-6
                   for e in 1e-6 * np.eye(2)])
    np.testing.assert_allclose(g2, fd, rtol=1e-4, atol=1e-6)
    assert v2 < value
    assert clf.score(X, y) > 0.8
    p = clf.predict_proba(X)
    assert np.all((p > 0) & (p < 1))


def test_equations_without_a_solution_are_refused():
    # Conflicting labels on a duplicated input under the noise-free step
    # likelihood: the naive equations have no solution.  Off a solution the naive
    # free energy (a saddle value) means nothing, so the run is refused with an
    # error that says why and what to do, which evidence maximisation treats as a
    # failed evaluation and steps back from.
    X = np.array([[0.0], [0.0], [1.0], [2.0]])
    K = se(X, 1.0, 1.0)
    with pytest.raises(gpc.NumericalError, match="no solution within reach") as exc:
        gpc.infer(K, [1, -1, 1, -1], method="naive_mean_field", likelihood="step")
    assert exc.value.method == "naive_mean_field"
    assert "WhiteKernel" in str(exc.value)


# Scikit-learn's test data (its gaussian_process/tests/test_gpc.py).
SKL_X = np.linspace(0, 10, 30)[:, None]
SKL_Y = np.where(np.sin(SKL_X[:, 0]) > 0, 1.0, -1.0)


def _richardson_errors(obj, theta, h=1e-4):
    """Relative errors |g - r| / max(|r|, 1e-2) of an evidence objective's gradient
    at theta against Richardson-extrapolated central differences r (steps h, 2h),
    each evaluation warm-started from the previous one as in evidence
    maximisation."""
    _, grad = obj(theta)
    errors = []
    for k, e in enumerate(np.eye(len(theta))):
        r = richardson(lambda t: obj(theta + t * e)[0], 0.0, h)
        errors.append(abs(grad[k] - r) / max(abs(r), 1e-2))
    return np.array(errors)


@pytest.mark.parametrize("ls", [10.0, 100.0])
@pytest.mark.parametrize("with_constant", [False, True])
def test_naive_gradient_with_negative_weights_matches_richardson(ls, with_constant):
    # The noisy threshold is not log-concave: at these length scales some Newton
    # weights W are negative at the solution.  Newton's step once clipped them at
    # 0, which is not a descent direction for the residual: warm-started runs
    # stalled off the solution, and central differences of the evidence missed
    # its gradient by up to 3e-3 relative.  The exact step converges.
    from sklearn.gaussian_process.kernels import RBF
    from sklearn.gaussian_process.kernels import ConstantKernel as C
    from gpc.evidence import EvidenceObjective

    kernel = C(1.0) * RBF(ls)
    if with_constant:
        kernel = kernel + C(1.0)
    obj = EvidenceObjective(kernel, SKL_X, SKL_Y, gpc.likelihoods.NoisyThreshold(0.1),
                            "naive_mean_field")
    theta = kernel.theta.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        errors = _richardson_errors(obj, theta)
        K = np.asfortranarray(kernel(SKL_X))
        res = gpc.infer(K, SKL_Y, method="naive_mean_field",
                        likelihood=gpc.likelihoods.NoisyThreshold(0.1))
    assert res.info["converged"] and res.info["n_negative_w"] > 0
    assert np.all(errors <= 1e-5), errors


def test_signed_newton_step_is_the_exact_newton_step():
    # The step for weights of either sign against the Jacobian of the residual
    # r(m) = m - (K - S) g(m), which is I - (K - S) diag(h).
    from gpc.inference.meanfield import _signed_newton_step

    X, _ = data(12, 3)
    K = se(X, 1.0, 3.0)
    rng = np.random.RandomState(0)
    s = np.diag(K)
    h = rng.uniform(-0.9, 0.9, 12) / s             # 1 + s h > 0, either sign
    h[:3] = 0.0
    q = 1.0 + s * h
    W = -h / q
    r = rng.randn(12)
    J = np.eye(12) - (K - np.diag(s)) * h[None, :]
    np.testing.assert_allclose(_signed_newton_step(K, W, q, r),
                               -np.linalg.solve(J, r), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("ls", [31.6, 1000.0])
def test_step_with_a_kernel_singular_to_rounding_is_refused(ls):
    # The step likelihood on scikit-learn's data with RBF(31.6) or longer: the
    # naive equations' solution runs off (cavity means doubling each step) beyond
    # what float64 resolves, Newton's method stalls, and the value it stopped at
    # varied by 15 nats for a 1e-4 change of log signal variance.  Refused now;
    # a noise term gives a solution.
    K = np.exp(-0.5 * (SKL_X - SKL_X.T) ** 2 / ls ** 2)
    with pytest.raises(gpc.NumericalError, match="no solution within reach"):
        gpc.infer(K, SKL_Y, method="naive_mean_field", likelihood="step")
    res = gpc.infer(K + 0.1 * np.eye(30), SKL_Y, method="naive_mean_field",
                    likelihood="step")
    assert res.info["converged"]
