"""The multinomial (softmax) model through the estimator and the K-level API:
scikit-learn compatibility, learning, errors.  Its numbers against dense
references are in test_multinomial_reference.py."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF, CompoundKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

import gpc
from gpc import GaussianProcessClassifier, LogNormalPrior
from gpc.likelihoods import Softmax, get_likelihood
from _registry import expected_failed_checks


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    rng = np.random.RandomState(0)
    idx = rng.permutation(len(y))[:90]
    return X[idx], y[idx]


def multinomial(kernel=None, **kw):
    return GaussianProcessClassifier(kernel, multi_class="multinomial", **kw)


def test_fit_learns_the_shared_kernel(iris):
    X, y = iris
    kernel = C(1.0) * RBF(1.0)
    clf = multinomial(kernel).fit(X, y)
    start = multinomial(kernel, optimizer=None).fit(X, y)
    assert clf.log_marginal_likelihood_value_ > start.log_marginal_likelihood_value_
    # At the optimum inside the bounds the gradient vanishes.
    _, grad = clf.log_marginal_likelihood(clf.kernel_.theta, eval_gradient=True)
    assert np.max(np.abs(grad)) < 1e-3
    proba = clf.predict_proba(X)
    assert proba.shape == (len(y), 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    assert clf.score(X, y) > 0.9
    assert np.array_equal(clf.predict(X), clf.classes_[proba.argmax(axis=1)])
    mean, cov = clf.latent_mean_and_variance(X[:5])
    assert mean.shape == (5, 3) and cov.shape == (5, 3, 3)
    np.testing.assert_allclose(cov, cov.transpose(0, 2, 1), atol=1e-12)
    assert np.all(np.linalg.eigvalsh(cov) > -1e-10)


def test_per_class_kernels(iris):
    X, y = iris
    kernels = [C(1.0) * RBF(1.0), C(2.0) * RBF(0.5), C(1.0) * RBF(2.0)]
    clf = multinomial(kernels).fit(X, y)
    assert isinstance(clf.kernel_, CompoundKernel)
    assert len(clf.kernel_.theta) == 6
    # The user's kernels are untouched (scikit-learn's rule).
    assert kernels[1].k2.length_scale == 0.5
    # Each class's hyperparameters moved on their own.
    learnt = clf.kernel_.theta.reshape(3, 2)
    assert not np.allclose(learnt[0], learnt[1])
    shared = multinomial(C(1.0) * RBF(1.0)).fit(X, y)
    assert clf.log_marginal_likelihood_value_ >= shared.log_marginal_likelihood_value_ - 1e-6


@pytest.mark.parametrize("method", ["laplace", "vb"])
def test_gradient_of_the_estimator_is_finite_differences(iris, method):
    X, y = iris
    clf = multinomial([RBF(1.0), RBF(0.7), RBF(1.5)], method=method,
                      optimizer=None).fit(X[:40], y[:40])
    theta = clf.kernel_.theta
    value, grad = clf.log_marginal_likelihood(theta, eval_gradient=True)
    assert value == pytest.approx(clf.log_marginal_likelihood_value_, abs=1e-10)
    h = 1e-5
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = h
        fd = (clf.log_marginal_likelihood(theta + e)
              - clf.log_marginal_likelihood(theta - e)) / (2 * h)
        assert grad[i] == pytest.approx(fd, rel=1e-5, abs=1e-7)


def test_two_classes_is_the_binary_logit_with_twice_the_kernel(iris):
    X, y = iris
    X, y = X[y != 2], y[y != 2]
    kernel = C(1.5, "fixed") * RBF(0.8, "fixed")
    joint = multinomial(kernel).fit(X, y)
    binary = GaussianProcessClassifier(C(3.0, "fixed") * RBF(0.8, "fixed")).fit(X, y)
    assert joint.log_marginal_likelihood_value_ == pytest.approx(
        binary.log_marginal_likelihood_value_, abs=1e-10)
    # The predictive: a one-dimensional point set for two classes.
    np.testing.assert_allclose(joint.predict_proba(X), binary.predict_proba(X),
                               atol=1e-4)


def test_priors_and_restarts(iris):
    X, y = iris
    kernel = C(1.0, (1e-2, 1e2)) * RBF(1.0, (1e-1, 1e1))
    tight = {"k2__length_scale": LogNormalPrior(np.log(5.0), 0.01)}
    clf = multinomial(kernel, priors=tight).fit(X, y)
    assert clf.kernel_.k2.length_scale == pytest.approx(5.0, rel=0.05)
    a = multinomial(kernel, n_restarts_optimizer=2, random_state=0).fit(X, y)
    b = multinomial(kernel, n_restarts_optimizer=2, random_state=0).fit(X, y)
    assert len(a.base_estimator_.optimizer_result_.runs) == 3
    # The same starts and the same optimum; on a busy machine the thread plan of
    # the factorisations (gpc's tiles or LAPACK's) changes their last bits, which
    # the optimiser carries to about its tolerance.
    np.testing.assert_allclose(a.kernel_.theta, b.kernel_.theta, rtol=1e-5)


def test_warm_start_reuses_the_mode(iris):
    X, y = iris
    clf = multinomial(C(1.0) * RBF(1.0), optimizer=None, warm_start=True).fit(X, y)
    cold = clf.base_estimator_.inference_info_["n_iter"]
    clf.fit(X, y)
    assert clf.base_estimator_.inference_info_["n_iter"] < cold


def test_scikit_learn_tools(iris):
    X, y = iris
    clf = multinomial(C(1.0) * RBF(1.0), optimizer=None)
    pipe = make_pipeline(StandardScaler(), clf)
    assert cross_val_score(pipe, X, y, cv=3).mean() > 0.85
    grid = GridSearchCV(clf, {"kernel": [RBF(0.5), RBF(2.0)]}, cv=3).fit(X, y)
    assert grid.best_params_["kernel"] in (RBF(0.5), RBF(2.0))
    fitted = clf.fit(X, y)
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(again.predict_proba(X), fitted.predict_proba(X))
    copy = clone(multinomial([RBF(1.0), RBF(2.0), RBF(3.0)]))
    assert copy.kernel[2].length_scale == 3.0


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_check_estimator():
    check_estimator(multinomial(), expected_failed_checks=expected_failed_checks(
        True))


@pytest.mark.parametrize("kwargs, match", [
    (dict(kernel=[RBF(), RBF()]), "multi_class='multinomial'"),
    (dict(multi_class="multinomial", likelihood="step"), "use 'logit' or 'probit'"),
    (dict(multi_class="multinomial", method="ep"), "multinomial model"),
    (dict(likelihood="softmax"), "multi_class='multinomial'"),
    (dict(multi_class="joint"), "'multinomial'"),
])
def test_parameters_refused_before_the_data(iris, kwargs, match):
    X, y = iris
    with pytest.raises(ValueError, match=match):
        GaussianProcessClassifier(**kwargs).fit(X, y)


def test_kernel_list_must_match_the_classes(iris):
    X, y = iris
    with pytest.raises(ValueError, match="one kernel per class"):
        multinomial([RBF(), RBF()]).fit(X, y)


def test_the_estimator_uses_the_softmax_it_is_given(iris):
    # Its quadrature rule (n_points) predicts; a number of classes other than
    # the data's is an error, not ignored.
    X, y = iris
    default = multinomial(optimizer=None).fit(X, y)
    coarse = multinomial(optimizer=None, likelihood=Softmax(n_points=2)).fit(X, y)
    moments = default.latent_mean_and_variance(X[:10])
    np.testing.assert_array_equal(coarse.predict_proba(X[:10]),
                                  Softmax(n_points=2).predict(*moments))
    assert np.abs(coarse.predict_proba(X[:10]) - default.predict_proba(X[:10])).max() \
        > 1e-3
    with pytest.raises(ValueError, match=r"Softmax\(n_classes=7\), but y has 3"):
        multinomial(optimizer=None, likelihood=Softmax(n_classes=7)).fit(X, y)


def test_infer_checks_the_problem():
    K = np.eye(3)
    with pytest.raises(ValueError, match="labels 0 .. 2 - 1"):
        gpc.infer(K, [0, 1, 2], likelihood=Softmax(n_classes=2))
    with pytest.raises(ValueError, match="2 or more classes, but every label is 0"):
        gpc.infer(K, [0, 0, 0], likelihood="softmax")
    with pytest.raises(ValueError, match="2 or more classes, but K holds one matrix"):
        gpc.infer(K[None], [0, 0, 0], likelihood="softmax")
    with pytest.raises(ValueError, match="K holds 3 matrices .* n_classes=7"):
        gpc.infer(np.stack([K] * 3), [0, 1, 2], likelihood=Softmax(n_classes=7))
    with pytest.raises(ValueError, match="there are 2 classes"):
        gpc.infer(np.stack([K, K]), [0, 1, 2], likelihood="softmax")
    with pytest.raises(ValueError, match=r"shape \(2, 3\)"):
        gpc.infer(K, [0, 1, 0], likelihood="softmax", init={"alpha": np.zeros(3)})
    with pytest.raises(ValueError, match="at least one example"):
        gpc.infer(np.zeros((0, 0)), [], likelihood="softmax")
    with pytest.raises(ValueError, match="multinomial model"):
        gpc.infer(K, [0, 1, 0], method="ep", likelihood="softmax")
    assert gpc.available_methods("softmax") == ["laplace", "vb"]
    assert gpc.available_methods("multinomial_probit") == ["ep"]


def test_infer_warm_start_and_iteration_limit():
    rng = np.random.RandomState(1)
    X = rng.randn(30, 2)
    y = np.argmax(X @ rng.randn(2, 3), axis=1)
    K = 4.0 * np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    cold = gpc.infer(K, y, likelihood="softmax")
    warm = gpc.infer(K, y, likelihood="softmax", init=cold.state)
    assert warm.info["n_iter"] < cold.info["n_iter"]
    assert warm.log_evidence == pytest.approx(cold.log_evidence, abs=1e-10)
    # An explicit class with no example: its latent function stays at the prior
    # mean in the mode's sum, and the evidence is that of three classes.
    four = gpc.infer(K, y, likelihood=Softmax(n_classes=4))
    assert four.dK.shape == (4, 30, 30) and four.log_evidence < cold.log_evidence
    with pytest.warns(ConvergenceWarning):
        gpc.infer(K, y, likelihood="softmax", max_iter=1)


def test_hopeless_conditioning_is_an_error_not_a_value():
    # At signal variance 1e12 the first Newton step from f = 0 found no ascent
    # (40 halvings) and the evidence at f = 0, 450 nats off, came back with
    # only a ConvergenceWarning.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 2))
    y = np.argmax(X @ rng.normal(size=(2, 3)), axis=1)
    K = 1e12 * np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    for method in ("laplace", "vb"):
        with pytest.raises(gpc.NumericalError, match="badly conditioned") as info:
            gpc.infer(K, y, method=method, likelihood="softmax")
        assert info.value.method == method


def test_softmax_predict_two_classes_is_the_logit():
    # With two classes the rule integrates the only direction exactly (also
    # at variances up to 1e8, where the exponentials relative to the top class
    # underflow).
    rng = np.random.RandomState(2)
    mean = rng.randn(20, 2) * 2
    A = rng.randn(20, 2, 2) * np.array([0.1, 1.0, 30.0, 3000.0] * 5)[:, None, None]
    cov = A @ A.transpose(0, 2, 1)
    p = Softmax().predict(mean, cov)
    d_mean = mean[:, 1] - mean[:, 0]
    d_var = cov[:, 0, 0] + cov[:, 1, 1] - 2 * cov[:, 0, 1]
    np.testing.assert_allclose(p[:, 1], get_likelihood("logit").predict(d_mean, d_var),
                               atol=1e-7)


def test_softmax_predict_zero_covariance_is_the_softmax():
    rng = np.random.default_rng(4)
    for C in (2, 3, 5, 10):
        mean = rng.normal(size=(6, C)) * 4
        p = Softmax().predict(mean, np.zeros((6, C, C)))
        np.testing.assert_allclose(p, softmax_columns(mean.T).T, atol=1e-7)


def _random_covariances(rng, m, C, scale):
    A = rng.normal(size=(m, C, C)) * scale
    return A @ A.transpose(0, 2, 1) / C


def test_softmax_predict_three_classes_against_gauss_hermite():
    # Reference: a 48 x 48 Gauss-Hermite product rule over the two directions
    # orthogonal to (1, 1, 1), on covariances small enough for it to converge.
    rng = np.random.default_rng(5)
    mean = rng.normal(size=(8, 3))
    cov = _random_covariances(rng, 8, 3, 1.0)
    x, w = np.polynomial.hermite_e.hermegauss(48)
    w = w / w.sum()
    basis = np.linalg.qr(np.eye(3) - 1.0 / 3)[0][:, :2]
    ref = np.empty((8, 3))
    for i in range(8):
        lam, V = np.linalg.eigh(basis.T @ cov[i] @ basis)
        root = basis @ V * np.sqrt(np.maximum(lam, 0.0))
        F = mean[i] + x[:, None, None] * root[:, 0] + x[None, :, None] * root[:, 1]
        ref[i] = np.einsum("a,b,abc->c", w, w, softmax_columns(F.reshape(-1, 3).T).T
                           .reshape(48, 48, 3))
    np.testing.assert_allclose(Softmax().predict(mean, cov), ref, atol=1e-4)


def test_softmax_predict_against_monte_carlo():
    # Reference: 4e5 pseudo-random draws; tolerance 5 standard errors plus the
    # promised 1e-3, at latent variances around 1, 30 and 1000.
    rng = np.random.default_rng(6)
    for C, scale in ((5, 1.0), (5, 5.5), (10, 30.0)):
        mean = rng.normal(size=(2, C)) * 2
        cov = _random_covariances(rng, 2, C, scale)
        p = Softmax().predict(mean, cov)
        for i in range(2):
            draws = rng.multivariate_normal(mean[i], cov[i], size=400_000)
            S = softmax_columns(draws.T)
            mc, se = S.mean(1), S.std(1) / np.sqrt(draws.shape[0])
            assert np.all(np.abs(p[i] - mc) <= 5 * se + 1e-3)


def test_softmax_predict_is_a_deterministic_distribution_invariant_to_shifts():
    rng = np.random.default_rng(7)
    for C in (3, 5, 10, 20):
        mean = rng.normal(size=(3, C)) * 3
        cov = _random_covariances(rng, 3, C, 10.0)
        cov[0] = 1e4 * np.ones((C, C)) + 1e-4 * np.eye(C)      # strongly correlated
        p = Softmax().predict(mean, cov)
        np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
        assert np.all(p >= 0)
        np.testing.assert_array_equal(p, Softmax().predict(mean, cov))
        np.testing.assert_allclose(Softmax().predict(mean + 7.5, cov), p, atol=1e-10)


def test_log_marginal_likelihood_at_other_thetas(iris):
    X, y = iris
    clf = multinomial([RBF(1.0), RBF(2.0), RBF(0.5)], optimizer=None).fit(X, y)
    theta = np.log([1.5, 1.5, 1.5])
    value = clf.log_marginal_likelihood(theta)
    assert clf.kernel_.theta == pytest.approx(np.log([1.0, 2.0, 0.5]))   # cloned
    shared = multinomial(RBF(1.5), optimizer=None).fit(X, y)
    assert value == pytest.approx(shared.log_marginal_likelihood_value_, abs=1e-10)
    assert clf.log_marginal_likelihood(theta, clone_kernel=False) == value
    assert clf.kernel_.theta == pytest.approx(theta)
    with pytest.raises(ValueError, match=r"theta must have shape \(3,\)"):
        clf.log_marginal_likelihood(np.zeros(2))


def test_a_named_prior_applies_to_every_class_kernel(iris):
    X, y = iris
    kernels = [C(1.0, (1e-2, 1e2)) * RBF(1.0, (1e-1, 1e1)) for _ in range(3)]
    tight = {"k2__length_scale": LogNormalPrior(np.log(3.0), 0.01)}
    clf = multinomial(kernels, priors=tight).fit(X, y)
    np.testing.assert_allclose([k.k2.length_scale for k in clf.kernel_.kernels], 3.0,
                               rtol=0.05)
    with pytest.raises(ValueError, match="has 3 entries; the kernel has 6"):
        multinomial(kernels, priors=[None] * 3).fit(X, y)


def _dense_bohning_bound(K, y, C):
    """Bohning's bound in the C n space, its variational centre psi iterated to
    the fixed point with dense matrices: (bound, psi, posterior covariance)."""
    n = len(y)
    KK = np.kron(np.eye(C), K)
    Hb = np.kron(0.5 * (np.eye(C) - 1.0 / C), np.eye(n))
    Y = np.zeros((C, n))
    Y[y, np.arange(n)] = 1.0
    Sigma = KK @ np.linalg.inv(np.eye(C * n) + Hb @ KK)       # (K^-1 + H)^-1
    psi = np.zeros(C * n)
    for _ in range(500):
        g = softmax_columns(psi.reshape(C, n))
        new = Sigma @ ((Y - g).ravel() + Hb @ psi)
        if np.max(np.abs(new - psi)) < 1e-13:
            break
        psi = new
    P = psi.reshape(C, n)
    g = softmax_columns(P)
    b = (Y - g).ravel() + Hb @ psi
    lse = np.log(np.exp(P - P.max(0)).sum(0)) + P.max(0)
    const = np.sum(-lse + np.sum(P * g, axis=0)) - 0.5 * psi @ Hb @ psi
    bound = const + 0.5 * b @ Sigma @ b - 0.5 * np.linalg.slogdet(np.eye(C * n) + KK @ Hb)[1]
    return bound, P, Sigma


def softmax_columns(F):
    E = np.exp(F - F.max(axis=0))
    return E / E.sum(axis=0)


@pytest.mark.parametrize("C, scale", [(2, 1.0), (3, 4.0), (4, 0.5)])
def test_vb_is_the_dense_bohning_bound(C, scale):
    rng = np.random.RandomState(C)
    X = rng.randn(15, 2)
    y = np.argmax(X @ rng.randn(2, C) + 0.5 * rng.randn(15, C), axis=1)
    K = scale * np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    res = gpc.infer(K, y, method="vb", likelihood=Softmax(n_classes=C))
    bound, psi, Sigma = _dense_bohning_bound(K, y, C)
    assert res.log_evidence == pytest.approx(bound, abs=1e-9)
    np.testing.assert_allclose(res.posterior.marginal_mean, psi.T, atol=1e-8)
    # The posterior at the training points: the Gaussian of the bound.
    _, cov = res.posterior.latent_mean_and_variance(K, np.diag(K))
    n = len(y)
    dense = np.array([[[Sigma[c * n + i, d * n + i] for d in range(C)] for c in range(C)]
                      for i in range(n)])
    np.testing.assert_allclose(cov, dense, atol=1e-8)
    laplace = gpc.infer(K, y, likelihood=Softmax(n_classes=C))
    assert res.log_evidence < laplace.log_evidence


@pytest.mark.parametrize("C", [2, 3])
def test_vb_bounds_the_exact_evidence(C):
    # One example: by symmetry its exact evidence is 1 / C whatever K.
    for k in (0.1, 1.0, 30.0):
        res = gpc.infer(np.array([[k]]), [0], method="vb",
                        likelihood=Softmax(n_classes=C))
        assert res.log_evidence <= np.log(1.0 / C)
    # Three examples: the exact evidence E[prod_i softmax(f_i)_{y_i}] over the
    # prior, by Monte Carlo (1e6 draws), with a margin of four standard errors.
    rng = np.random.RandomState(0)
    X = rng.randn(3, 1)
    K = 2.0 * np.exp(-0.5 * (X - X.T) ** 2)
    y = np.array([0, C - 1, 0])
    L = np.linalg.cholesky(K + 1e-12 * np.eye(3))
    F = np.einsum("ij,cjs->cis", L, rng.randn(C, 3, 1_000_000))
    lik = np.prod(softmax_columns(F.reshape(C, -1)).reshape(C, 3, -1)[y, np.arange(3)],
                  axis=0)
    exact, se = lik.mean(), lik.std() / np.sqrt(lik.size)
    res = gpc.infer(K, y, method="vb", likelihood=Softmax(n_classes=C))
    assert res.log_evidence <= np.log(exact + 4 * se)


def test_vb_two_classes_is_the_binary_fixed_curvature_bound():
    # f1 - f0 ~ GP(0, 2K) carries the likelihood and f0 + f1 is untouched, so
    # with two classes Bohning's bound is the logit's fixed-curvature (1/4)
    # bound with kernel 2K: binary Laplace's psi at its mode, the same mode,
    # less log|I + 2K / 4| / 2.
    rng = np.random.RandomState(5)
    X = rng.randn(30, 2)
    y = (X[:, 0] + 0.5 * rng.randn(30) > 0).astype(int)
    for scale in (0.5, 5.0, 100.0):
        K = scale * np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
        binary = gpc.infer(2 * K, 2 * y - 1, method="laplace", likelihood="logit")
        post = binary.posterior
        B = np.eye(30) + post.sW[:, None] * (2 * K) * post.sW
        psi = binary.log_evidence + 0.5 * np.linalg.slogdet(B)[1]
        bound = psi - 0.5 * np.linalg.slogdet(np.eye(30) + K / 2)[1]
        res = gpc.infer(K, y, method="vb", likelihood="softmax")
        assert res.log_evidence == pytest.approx(bound, abs=1e-10)
        f = res.posterior.marginal_mean
        np.testing.assert_allclose(f[:, 1] - f[:, 0], post.marginal_mean, atol=1e-8)


@pytest.mark.parametrize("method, likelihood", [("laplace", "softmax"), ("vb", "softmax"),
                                                ("ep", "multinomial_probit")])
def test_one_objective_for_the_shared_and_the_per_class_kernels(iris, method,
                                                                likelihood):
    # The binary model's evidence objective is the joint model's too: with C
    # copies of one kernel its value is the shared kernel's, and its gradient
    # splits the shared one among the classes (the shared derivative is the
    # sum over the classes of the per-class ones).
    from gpc.evidence import EvidenceObjective

    X, y = iris
    lik = get_likelihood(likelihood).set_params(n_classes=3)
    kernel = C(2.0) * RBF(1.5)
    shared = EvidenceObjective([kernel], X, y, lik, method)
    per_class = EvidenceObjective([kernel] * 3, X, y, lik, method)
    value, grad = shared(shared.theta)
    value_c, grad_c = per_class(per_class.theta)
    assert value_c == pytest.approx(value, rel=1e-12)
    assert grad.shape == (2,) and grad_c.shape == (6,)
    np.testing.assert_allclose(grad_c.reshape(3, 2).sum(axis=0), grad, rtol=1e-9)
    assert shared.method == method and len(shared.kernels) == 1


def test_a_shared_kernel_without_the_number_of_classes_is_refused(iris):
    # It was a TypeError from deep inside (None classes to repeat the kernel for).
    from gpc.evidence import EvidenceObjective

    X, y = iris
    with pytest.raises(ValueError, match="n_classes=3"):
        EvidenceObjective(RBF(1.5), X, y, get_likelihood("softmax"), "laplace")
