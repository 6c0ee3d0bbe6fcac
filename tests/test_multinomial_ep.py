"""Nested EP for the multinomial probit model, and the likelihood's own numbers,
against exact answers: two classes (the binary probit model), one-dimensional
quadrature, bivariate orthant probabilities and finite differences."""

import pickle

import numpy as np
import pytest
from scipy import integrate
from scipy.special import log_ndtr, ndtr
from scipy.stats import norm
from sklearn.datasets import load_iris, load_wine
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

import gpc
from gpc import GaussianProcessClassifier
from gpc.likelihoods import MultinomialProbit, Softmax
from _registry import expected_failed_checks


def _rbf(X, variance, length):
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    return variance * np.exp(-0.5 * d2 / length ** 2)


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    idx = np.random.RandomState(0).permutation(len(y))[:60]
    return X[idx], y[idx]


@pytest.fixture(scope="module")
def iris_two():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    keep = np.flatnonzero(y > 0)                 # versicolor against virginica
    idx = np.random.RandomState(1).permutation(keep)[:60]
    return X[idx], y[idx] - 1


def ep(K, y, **kw):
    return gpc.infer(K, y, method="ep", likelihood="multinomial_probit", **kw)


# --- the likelihood ------------------------------------------------------------

def _log_lik_by_quad(y, f):
    """log E_u[prod_{j != y} Phi(u + f_y - f_j)] by adaptive quadrature."""
    gaps = np.delete(f[y] - f, y)

    def integrand(u):
        return np.exp(-0.5 * u * u + np.sum(log_ndtr(u + gaps))) / np.sqrt(2 * np.pi)

    top = max(0.0, -float(gaps.min())) + 10.0
    return np.log(integrate.quad(integrand, -12.0, top, epsabs=0, epsrel=1e-13,
                                 limit=200)[0])


@pytest.mark.parametrize("f, y", [
    ([0.0, 0.0, 0.0], 0), ([1.0, -2.0, 0.5], 2), ([3.0, -1.0, 2.0, 0.0], 1),
    ([-8.0, 4.0, 5.0], 0), ([0.3, 0.1, -0.2, 2.0, -1.0], 4)])
def test_log_lik_is_the_integral_over_u(f, y):
    f = np.asarray(f)
    got = MultinomialProbit().log_lik([y], f[:, None])[0]
    assert got == pytest.approx(_log_lik_by_quad(y, f), rel=1e-11, abs=1e-12)


def test_log_lik_two_classes_is_the_probit_far_into_the_tails():
    gaps = np.array([-60.0, -5.0, 0.0, 3.0, 40.0])
    F = np.stack([np.zeros_like(gaps), gaps])
    got = MultinomialProbit().log_lik(np.ones(5, int), F)
    # (near log p = 0 the rule sums its weights to 1 within rounding, 1e-15)
    np.testing.assert_allclose(got, norm.logcdf(gaps / np.sqrt(2)), rtol=1e-12,
                               atol=1e-15)


def _orthant(m, V):
    """P(z > 0) for z ~ N(m, V) in two dimensions, by one-dimensional
    quadrature over z_1 of the conditional probability of z_2 > 0."""
    s1 = np.sqrt(V[0, 0])
    slope, cvar = V[0, 1] / V[0, 0], V[1, 1] - V[0, 1] ** 2 / V[0, 0]

    def integrand(z):
        return norm.pdf(z, m[0], s1) * ndtr((m[1] + slope * (z - m[0])) / np.sqrt(cvar))

    return integrate.quad(integrand, 0.0, m[0] + 12 * s1, epsabs=0, epsrel=1e-12)[0]


def _exact_three_class_predictive(mean, cov):
    """E[p(y = c | f)] for f ~ N(mean, cov), C = 3: P(u + f_c - f_j - e_j > 0 for
    j != c), an orthant probability of a bivariate normal."""
    p = np.empty(3)
    for c in range(3):
        others = [j for j in range(3) if j != c]
        A = np.zeros((3, 2))
        A[c] = 1.0
        A[others, [0, 1]] = -1.0
        p[c] = _orthant(A.T @ mean, A.T @ cov @ A + np.ones((2, 2)) + np.eye(2))
    return p


def test_predict_two_classes_is_the_probit_predictive():
    rng = np.random.RandomState(0)
    mean = rng.randn(20, 2) * 3
    R = rng.randn(20, 2, 2)
    cov = R @ R.transpose(0, 2, 1) * 5
    p = MultinomialProbit().predict(mean, cov)
    var = cov[:, 0, 0] + cov[:, 1, 1] - 2 * cov[:, 0, 1]
    np.testing.assert_allclose(p[:, 1], ndtr((mean[:, 1] - mean[:, 0])
                                             / np.sqrt(2 + var)), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("scale, bound", [(0.1, 2e-3), (1.0, 1e-2), (10.0, 1e-2),
                                          (100.0, 3e-2)])
def test_predict_three_classes_against_orthant_probabilities(scale, bound):
    # The nested EP approximation of the predictive integral against its exact
    # value, on random latent laws of growing spread.  Its error is EP's for a
    # tilted law of two probit factors; measured on these draws at most 7e-4,
    # 5e-3, 6e-3 and 1.4e-2 (the bounds leave a factor of about 2).
    rng = np.random.RandomState(3)
    worst = 0.0
    for _ in range(20):
        mean = rng.randn(3) * np.sqrt(scale)
        R = rng.randn(3, 3)
        cov = scale * (R @ R.T) / 3
        got = MultinomialProbit().predict(mean[None], cov[None])[0]
        exact = _exact_three_class_predictive(mean, cov)
        assert exact.sum() == pytest.approx(1.0, abs=1e-9)
        worst = max(worst, np.abs(got - exact).max())
    assert worst < bound


def test_predict_rows_are_distributions_invariant_to_shifts():
    rng = np.random.RandomState(2)
    mean = rng.randn(8, 4)
    R = rng.randn(8, 4, 4)
    cov = R @ R.transpose(0, 2, 1)
    p = MultinomialProbit().predict(mean, cov)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(MultinomialProbit().predict(mean + 7.0, cov), p,
                               rtol=1e-10)
    with pytest.raises(ValueError, match="not finite"):
        MultinomialProbit().predict(np.full((1, 3), np.nan), np.eye(3)[None])
    for lik in (MultinomialProbit(), Softmax()):              # no test points
        assert lik.predict(np.zeros((0, 3)), np.zeros((0, 3, 3))).shape == (0, 3)
    assert MultinomialProbit().log_lik(np.zeros(0, int), np.zeros((3, 0))).shape \
        == (0,)


# --- the inference -------------------------------------------------------------

@pytest.mark.parametrize("variance, length", [(1.0, 1.0), (30.0, 2.0), (300.0, 0.7)])
def test_two_classes_is_binary_ep(iris_two, variance, length):
    # p(y = 1 | f) = Phi((f_1 - f_0) / sqrt 2): the binary probit model of
    # g = (f_1 - f_0) / sqrt 2 ~ GP(0, K), both latent functions of kernel K.
    X, y = iris_two
    K = _rbf(X, variance, length)
    joint = ep(K, y, tol=1e-13)
    binary = gpc.infer(K, 2.0 * y - 1.0, method="ep", likelihood="probit", tol=1e-13)
    assert joint.info["converged"]
    assert joint.log_evidence == pytest.approx(binary.log_evidence, abs=1e-8)
    np.testing.assert_allclose(joint.dK.sum(axis=0), binary.dK, atol=1e-8)
    Ks = _rbf(np.vstack([X, X + 0.3]), variance, length)[:len(X), len(X):]
    kd = np.full(len(X), variance)
    p_joint = joint.posterior.predict_proba(Ks, kd)[:, 1]     # its own likelihood
    p_binary = binary.posterior.predict_proba(Ks, kd, "probit")
    np.testing.assert_allclose(p_joint, p_binary, atol=1e-8)


def _richardson_gradient(f, theta, h=1e-3):
    """Central differences at steps h and 2h, Richardson-extrapolated."""
    grad = np.empty(theta.shape[0])
    for i in range(theta.shape[0]):
        e = np.zeros_like(theta)
        e[i] = 1.0

        def cd(s):
            return (f(theta + s * e) - f(theta - s * e)) / (2 * s)

        grad[i] = (4 * cd(h) - cd(2 * h)) / 3
    return grad


def _class_kernels(X, theta):
    """Three RBF kernels, one per class: theta holds (log variance, log length)
    per class, and their derivatives (C, 2, n, n)."""
    Ks, dKs = [], []
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    for lv, ll in theta.reshape(3, 2):
        K = np.exp(lv) * np.exp(-0.5 * d2 * np.exp(-2 * ll))
        Ks.append(K)
        dKs.append([K, K * d2 * np.exp(-2 * ll)])
    return np.stack(Ks), dKs


@pytest.mark.parametrize("shared", [True, False])
def test_gradient_against_richardson_differences(wine, shared):
    X, y = wine
    if shared:
        theta = np.log([20.0, 3.0])
        d2 = ((X[:, None] - X[None]) ** 2).sum(-1)

        def kernels(t):
            K = np.exp(t[0]) * np.exp(-0.5 * d2 * np.exp(-2 * t[1]))
            return K, [[K, K * d2 * np.exp(-2 * t[1])]] * 3
    else:
        theta = np.log([20.0, 3.0, 5.0, 2.0, 50.0, 4.0])

        def kernels(t):
            return _class_kernels(X, t)

    K, dKs = kernels(theta)
    res = ep(K, y, tol=1e-12)
    dK = [res.dK.sum(axis=0)] if shared else res.dK
    analytic = np.concatenate([[np.sum(g * dk) for dk in d]
                               for g, d in zip(dK, dKs[:len(dK)])])
    numeric = _richardson_gradient(lambda t: ep(kernels(t)[0], y, tol=1e-12)
                                   .log_evidence, theta)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5,
                               atol=1e-5 * np.abs(numeric).max())


def test_one_point_against_quadrature():
    # n = 1, three classes: the outer EP is exact, and the evidence is the
    # nested EP's approximation of E[p(y | f)] for f ~ N(0, K_11 I), whose
    # exact value is an orthant probability.
    for variance in (0.5, 4.0, 40.0):
        res = ep(np.array([[variance]]), [2], tol=1e-13)
        exact = _exact_three_class_predictive(np.zeros(3), variance * np.eye(3))[2]
        assert res.log_evidence == pytest.approx(np.log(exact), abs=2e-3)
    # By symmetry the prior predictive is 1/3 for every class.
    res = gpc.infer(np.array([[4.0]]), [1], method="ep", tol=1e-13,
                    likelihood=MultinomialProbit(n_classes=3))
    mean, cov = res.posterior.latent_mean_and_variance(np.zeros((1, 1)),
                                                         np.array([4.0]))
    np.testing.assert_allclose(MultinomialProbit().predict(mean, cov), 1 / 3,
                               rtol=1e-12)


def test_warm_start_damping_and_iteration_limit(wine):
    X, y = wine
    K = _rbf(X, 20.0, 3.0)
    cold = ep(K, y)
    warm = ep(1.05 * K, y, init=cold.state)
    again = ep(1.05 * K, y)
    assert warm.info["n_iter"] < again.info["n_iter"]
    assert warm.log_evidence == pytest.approx(again.log_evidence, abs=1e-9)
    damped = ep(K, y, damping=0.3)
    assert damped.info["converged"]
    assert damped.log_evidence == pytest.approx(cold.log_evidence, abs=1e-9)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        short = ep(K, y, max_iter=2)
    assert not short.info["converged"] and short.info["n_iter"] == 2


def test_methods_refuse_the_other_likelihood():
    K = np.eye(3)
    with pytest.raises(ValueError, match="'multinomial_probit' likelihood, got "
                                         "'softmax'"):
        gpc.infer(K, [0, 1, 2], method="ep", likelihood="softmax")
    for method in ("laplace", "vb"):
        with pytest.raises(ValueError, match="'softmax' likelihood, got "
                                             "'multinomial_probit'"):
            gpc.infer(K, [0, 1, 2], method=method, likelihood="multinomial_probit")
    with pytest.raises(ValueError, match="damping"):
        ep(K, [0, 1, 2], damping=0.0)


# --- the estimator -------------------------------------------------------------

def joint_probit(kernel=None, **kw):
    return GaussianProcessClassifier(kernel, multi_class="multinomial", method="ep",
                                     likelihood="probit", **kw)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_check_estimator():
    check_estimator(joint_probit(), expected_failed_checks=expected_failed_checks(
        False))


def test_fit_predict_and_scikit_learn_tools(wine):
    X, y = wine
    clf = joint_probit(C(1.0) * RBF(3.0)).fit(X, y)
    assert isinstance(clf.base_estimator_.likelihood_, MultinomialProbit)
    assert clf.kernel_.k1.constant_value != 1.0               # learnt
    assert clf.log_marginal_likelihood_value_ == pytest.approx(
        clf.log_marginal_likelihood(clf.kernel_.theta), abs=1e-8)
    mean, cov = clf.latent_mean_and_variance(X[:5])
    assert mean.shape == (5, 3) and cov.shape == (5, 3, 3)
    np.testing.assert_array_equal(clf.predict_proba(X[:5]),
                                  MultinomialProbit().predict(mean, cov))
    assert np.mean(clf.predict(X) == y) > 0.95
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))
    fixed = joint_probit(C(4.0) * RBF(3.0), optimizer=None)
    pipe = make_pipeline(StandardScaler(), clone(fixed))
    assert cross_val_score(pipe, X, y, cv=3).mean() > 0.85
    grid = GridSearchCV(fixed, {"kernel": [RBF(2.0), RBF(4.0)]}, cv=3).fit(X, y)
    assert grid.best_params_["kernel"] in (RBF(2.0), RBF(4.0))


def test_estimator_gradient_is_finite_differences(wine):
    X, y = wine
    clf = joint_probit([RBF(2.0), RBF(3.0), RBF(4.0)], optimizer=None).fit(X, y)
    theta = clf.kernel_.theta
    _, grad = clf.log_marginal_likelihood(theta, eval_gradient=True)
    numeric = _richardson_gradient(clf.log_marginal_likelihood, theta)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5,
                               atol=1e-5 * np.abs(numeric).max())


@pytest.mark.parametrize("length", [1e-3, 1.0, 1e3])
@pytest.mark.parametrize("variance", [1e-4, 1.0, 1e5])
def test_extreme_hyperparameters_converge_to_finite_values(wine, variance, length):
    # Up to the default bound on a ConstantKernel's value (1e5); at 1e5 with
    # the longest length scale EP stops at its rounding floor.
    X, y = wine
    res = ep(_rbf(X, variance, length), y)
    assert res.info["converged"]
    assert np.isfinite(res.log_evidence) and np.isfinite(res.dK).all()
    if length == 1e-3:      # K = variance I: every example alone, 1/3 each
        # (the inner EP's approximation of E_u[Phi(u)^2] = 1/3 is 0.2 % low)
        assert res.log_evidence == pytest.approx(len(y) * np.log(1 / 3), rel=3e-3)


def test_one_registry_chooses_the_variant_by_likelihood():
    from gpc.inference import get_method, register, unregister
    from gpc.likelihoods import Softmax
    assert get_method("ep").multinomial is False
    assert get_method("ep", "multinomial_probit").multinomial is True
    assert get_method("laplace", Softmax(n_classes=3)).likelihoods == (Softmax,)
    with pytest.raises(ValueError, match="already registered"):
        register("ep", likelihoods=(MultinomialProbit,))(lambda K, y, likelihood, *,
                                                          init=None,
                                                          compute_gradient=True: None)

    @register("prior_probit", max_iter_option=None, has_gradient=False,
              likelihoods=(MultinomialProbit,))
    def prior_probit(K, y, likelihood, *, init=None, compute_gradient=True):
        raise NotImplementedError

    try:
        assert gpc.available_methods("multinomial_probit") == ["ep", "prior_probit"]
        assert "prior_probit" not in gpc.available_methods()
        assert "prior_probit" not in gpc.available_methods("softmax")
        with pytest.raises(ValueError, match="for binary problems"):
            get_method("prior_probit")
    finally:
        unregister("prior_probit", "multinomial_probit")
    assert gpc.available_methods("multinomial_probit") == ["ep"]


def test_multinomial_likelihoods_are_not_one_latent_value_likelihoods(wine):
    from gpc.likelihoods import (Likelihood, LikelihoodBase, MultinomialLikelihood,
                                 Softmax, get_likelihood)
    for lik in (Softmax(), MultinomialProbit()):
        assert isinstance(lik, (LikelihoodBase, MultinomialLikelihood))
        assert not isinstance(lik, Likelihood)
        assert not hasattr(lik, "gauss_moments")
    for base in (LikelihoodBase, Likelihood, MultinomialLikelihood):
        with pytest.raises(TypeError, match="must be a name"):
            get_likelihood(base)
    X, y = wine
    for lik in ("softmax", "multinomial_probit"):
        with pytest.raises(ValueError, match="no joint multi-class model"):
            gpc.SparseGPClassifier(likelihood=lik).fit(X, y)
        with pytest.raises(ValueError, match=f"'{lik}' likelihood is the multinomial"):
            GaussianProcessClassifier(likelihood=lik).fit(X, y)


def test_a_warm_start_that_fails_is_redone_from_the_prior(wine):
    X, y = wine
    K = _rbf(X, 20.0, 3.0)
    cold = ep(K, y)
    assert cold.info["warm_start_rejected"] is False
    # Sites far from any fixed point, which the iteration limit stops short of.
    bad = {"tau": np.full(cold.state["tau"].shape, 1e6), "nu": cold.state["nu"] * 1e3}
    with pytest.warns(ConvergenceWarning):
        ep(K, y, init=bad, max_iter=3)
    # From them EP needs more iterations than from the prior (17 against 14
    # measured): with one more than the prior's, the warm run is redone.
    redone = ep(K, y, init=bad, max_iter=cold.info["n_iter"] + 1)
    assert redone.info["converged"] and redone.info["warm_start_rejected"]
    assert redone.log_evidence == pytest.approx(cold.log_evidence, abs=1e-9)
