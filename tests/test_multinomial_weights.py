"""Sample weights in the multinomial (softmax) model: Laplace and vb.

The weighted likelihood is ``prod_i softmax(f_i)[y_i]^(w_i)``.  The checks are
those of test_sample_weight.py for the binary methods, exact for both methods: a
zero weight is the example dropped, an integer weight the example repeated (the
copies share one input, so one latent value; their curvatures, Laplace's
softmax Hessian at the same point or vb's fixed bound, add up to the weighted
one), weights c for Laplace are a dense Newton iteration on the likelihood to
the power c, the weighted evidence's gradient agrees with finite differences,
and vb's weighted bound lies below the weighted evidence.  Then the estimator,
and multinomial EP, which takes no weights.
"""

import numpy as np
import pytest
from scipy.linalg import block_diag
from scipy.special import log_softmax
from sklearn.datasets import load_iris
from sklearn.gaussian_process.kernels import RBF, ConstantKernel as C
from sklearn.preprocessing import StandardScaler

import gpc
from gpc.datasets import load_glass
from gpc.evidence import EvidenceObjective
from gpc.likelihoods import Softmax

from _sites import assert_objective_gradient

METHODS = ("laplace", "vb")
#: The classes' (variance, length scale): one kernel shared, or one per class.
KERNELS = {"shared": [(2.0, 1.3)] * 3,
           "per_class": [(2.0, 1.3), (1.0, 0.8), (3.0, 2.0)]}


def _rbf(A, B, variance, length):
    d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return variance * np.exp(-0.5 * d2 / length ** 2)


def _K(X, kernels, Xs=None):
    """The classes' covariance matrices (C, n, m) between X and Xs (X)."""
    return np.stack([_rbf(X, X if Xs is None else Xs, v, ell) for v, ell in kernels])


@pytest.fixture(scope="module")
def iris():
    """72 training and 10 test examples of the iris data, standardised."""
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    idx = np.random.RandomState(0).permutation(len(y))
    return X[idx[:72]], y[idx[:72]], X[idx[72:82]]


def _latent(res, X, Xs, kernels):
    """The posterior's latent means (m, C) and covariances (m, C, C) at Xs."""
    k_diag = np.array([np.full(len(Xs), v) for v, _ in kernels])
    return res.posterior.latent_mean_and_variance(_K(X, kernels, Xs), k_diag)


def _infer(X, y, method, kernels, **kw):
    return gpc.infer(_K(X, kernels), y, method, "softmax", tol=1e-12, **kw)


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("method", METHODS)
def test_zero_weight_is_the_example_dropped(iris, method, kernels):
    X, y, Xs = iris
    kernels = KERNELS[kernels]
    w = np.random.default_rng(1).uniform(0.3, 3.0, len(y))
    w[[0, 5, 17, 40, 71]] = 0.0
    keep = w > 0
    res = _infer(X, y, method, kernels, sample_weight=w)
    ref = _infer(X[keep], y[keep], method, kernels, sample_weight=w[keep])
    assert res.log_evidence == pytest.approx(ref.log_evidence, abs=1e-10)
    for a, b in zip(_latent(res, X, Xs, kernels), _latent(ref, X[keep], Xs, kernels)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)
    # The dropped examples' rows and columns of dK vanish; the rest is the
    # gradient without them.
    np.testing.assert_array_equal(res.dK[:, ~keep], 0.0)
    np.testing.assert_array_equal(res.dK[:, :, ~keep], 0.0)
    np.testing.assert_allclose(res.dK[:, keep][:, :, keep], ref.dK, rtol=0, atol=1e-10)
    # The marginals at the training points: the dropped ones are predictions.
    mean = res.posterior.marginal_mean
    np.testing.assert_allclose(mean[keep], ref.posterior.marginal_mean, atol=1e-10)
    np.testing.assert_allclose(mean[~keep], _latent(ref, X[keep], X[~keep], kernels)[0],
                               rtol=0, atol=1e-10)
    # A warm start from the full problem's state reaches the same fit.
    warm = _infer(X, y, method, kernels, sample_weight=w, init=res.state)
    assert warm.log_evidence == pytest.approx(res.log_evidence, abs=1e-10)
    assert warm.info["n_iter"] <= 1


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("method", METHODS)
def test_integer_weight_is_the_example_repeated(iris, method, kernels):
    """The repeated rows make K singular, but ``I + D^(1/2) K D^(1/2)`` and
    ``P`` still factorise.  With S the n_copies x n selection of the copies'
    rows, the weighted evidence as a function of K is the copies' evidence of
    ``S K S'``: its dK is ``S' dK_copies S``."""
    X, y, Xs = iris
    kernels = KERNELS[kernels]
    w = np.random.default_rng(2).integers(1, 4, len(y)).astype(float)
    rows = np.repeat(np.arange(len(y)), w.astype(int))
    res = _infer(X, y, method, kernels, sample_weight=w)
    ref = _infer(X[rows], y[rows], method, kernels)
    assert res.log_evidence == pytest.approx(ref.log_evidence, abs=1e-10)
    for a, b in zip(_latent(res, X, Xs, kernels), _latent(ref, X[rows], Xs, kernels)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)
    S = np.eye(len(y))[rows]
    np.testing.assert_allclose(res.dK, S.T @ ref.dK @ S, rtol=0, atol=1e-10)


def _dense_laplace(Ks, y, c, Kx, kx_diag):
    """Laplace's approximation of ``c sum_i log softmax(f_i)[y_i]`` and the
    prior ``N(0, blockdiag(K_c))`` with the C n latent values stacked by class
    and dense C n x C n matrices: plain Newton on ``a = K^{-1} f``, R&W eq. 3.44
    with ``slogdet``, and the latent mean ``Kx' a`` and covariance ``kx - Kx' W
    (I + K W)^{-1} Kx`` at each test point (Kx: C n x C)."""
    n_classes, n = len(Ks), len(y)
    K, Y, R = block_diag(*Ks), np.eye(n_classes)[y].T, np.tile(np.eye(n), (n_classes, 1))

    def curvature(f):
        pi = np.exp(log_softmax(f.reshape(n_classes, n), axis=0))
        Pi = R * pi.reshape(-1, 1)                         # Pi[c n + i, i] = pi_ci
        return pi, c * (np.diag(pi.ravel()) - Pi @ Pi.T)

    f = np.zeros(n_classes * n)
    for _ in range(100):
        pi, W = curvature(f)
        a = np.linalg.solve(np.eye(len(f)) + W @ K, W @ f + c * (Y - pi).ravel())
        f, step = K @ a, np.max(np.abs(K @ a - f))
        if step < 1e-14:
            break
    _, W = curvature(f)
    F = f.reshape(n_classes, n)
    psi = c * np.sum(Y * log_softmax(F, axis=0)) - 0.5 * a @ f
    sign, logdet = np.linalg.slogdet(np.eye(len(f)) + K @ W)
    assert step < 1e-14 and sign > 0
    A = W @ np.linalg.solve(np.eye(len(f)) + K @ W, np.eye(len(f)))
    blocks = [block_diag(*[k[:, None] for k in Kx[:, :, j]]) for j in range(Kx.shape[2])]
    mean = np.array([B.T @ a for B in blocks])
    cov = np.array([np.diag(kx_diag[:, j]) - B.T @ A @ B for j, B in enumerate(blocks)])
    return psi - 0.5 * logdet, mean, cov


@pytest.mark.parametrize("c", [0.3, 2.0, 7.5])
def test_laplace_weights_c_are_the_likelihood_to_the_power_c(iris, c):
    X, y, Xs = iris
    X, y, kernels = X[:20], y[:20], KERNELS["per_class"]
    k_diag = np.array([np.full(len(Xs), v) for v, _ in kernels])
    value, mean, cov = _dense_laplace(_K(X, kernels), y, c, _K(X, kernels, Xs), k_diag)
    res = _infer(X, y, "laplace", kernels, sample_weight=np.full(len(y), c))
    assert res.log_evidence == pytest.approx(value, abs=1e-8)
    got = _latent(res, X, Xs, kernels)
    np.testing.assert_allclose(got[0], mean, rtol=0, atol=1e-8)
    np.testing.assert_allclose(got[1], cov, rtol=0, atol=1e-8)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_weighted_vb_bounds_the_weighted_evidence(n_classes):
    """Three examples of weights 0.4, 2.5 and 1.7: the exact weighted evidence
    ``E[prod_i softmax(f_i)[y_i]^(w_i)]`` over the prior by Monte Carlo (2e5
    draws), with a margin of four standard errors."""
    rng = np.random.RandomState(0)
    X = rng.randn(3, 1)
    K = 2.0 * np.exp(-0.5 * (X - X.T) ** 2)
    y, w = np.array([0, n_classes - 1, 0]), np.array([0.4, 2.5, 1.7])
    L = np.linalg.cholesky(K + 1e-12 * np.eye(3))
    F = np.einsum("ij,cjs->cis", L, rng.randn(n_classes, 3, 200_000))
    lik = np.exp(w @ log_softmax(F, axis=0)[y, np.arange(3)])
    exact, se = lik.mean(), lik.std() / np.sqrt(lik.size)
    res = gpc.infer(K, y, "vb", Softmax(n_classes=n_classes), sample_weight=w)
    assert res.log_evidence <= np.log(exact + 4 * se)


@pytest.mark.parametrize("kernels", ["shared", "per_class"])
@pytest.mark.parametrize("method", METHODS)
def test_weighted_evidence_gradient_by_finite_differences(iris, method, kernels):
    X, y, _ = iris
    X, y = X[:45], y[:45]
    w = np.random.default_rng(3).uniform(0.3, 3.0, len(y))
    w[[0, 9, 30]] = 0.0
    kernel = C(1.5) * RBF([1.0, 2.0, 0.7, 1.4]) if kernels == "shared" else \
        [C(1.5) * RBF(1.0), C(0.8) * RBF(2.0), C(2.0) * RBF(0.7)]
    obj = EvidenceObjective(kernel, X, y, Softmax(n_classes=3), method, {"tol": 1e-12},
                            sample_weight=w)
    assert_objective_gradient(obj)


@pytest.fixture(scope="module")
def glass():
    """Three classes of the glass data (88 examples)."""
    X, y = load_glass(multiclass=True)
    rows = np.flatnonzero(np.isin(y, [0, 1, 5]))[::2]
    return X[rows], y[rows]


def _estimator(method, **kw):
    """The joint model with a kernel per class.  (With one kernel shared, vb's
    latent covariance is isotropic in the plane orthogonal to (1, 1, 1), and
    the predictive rule takes its axes from an eigendecomposition there: a
    change of rounding size, even permuting the training rows, moves
    predict_proba by 1e-5 although the latent moments agree to 1e-14.)"""
    kernels = [C(1.0) * RBF(2.0), C(1.5) * RBF(1.0), C(0.7) * RBF(3.0)]
    return gpc.GaussianProcessClassifier(kernels, optimizer=None,
                                         multi_class="multinomial", method=method
                                         ).set_params(**kw)


@pytest.mark.parametrize("method", METHODS)
def test_estimator_zero_weight_is_the_example_dropped(glass, method):
    X, y = glass
    w = np.random.default_rng(4).uniform(0.5, 2.0, len(y))
    w[::7] = 0.0
    keep = w > 0
    a = _estimator(method).fit(X, y, sample_weight=w)
    b = _estimator(method).fit(X[keep], y[keep], sample_weight=w[keep])
    assert a.log_marginal_likelihood_value_ == pytest.approx(
        b.log_marginal_likelihood_value_, abs=1e-10)
    for u, v in zip(a.latent_mean_and_variance(X), b.latent_mean_and_variance(X)):
        np.testing.assert_allclose(u, v, rtol=0, atol=1e-10)
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=0,
                               atol=1e-10)
    # The evidence at another theta keeps the weights.
    theta = np.log([0.7, 1.5, 1.2, 0.8, 0.9, 2.5])
    np.testing.assert_allclose(a.log_marginal_likelihood(theta, eval_gradient=True)[1],
                               b.log_marginal_likelihood(theta, eval_gradient=True)[1],
                               rtol=0, atol=1e-8)


@pytest.mark.parametrize("method", METHODS)
def test_estimator_balanced_class_weight(glass, method):
    """``class_weight="balanced"`` is the fit with the weights n / (C n_c)."""
    X, y = glass
    y = np.where(np.arange(len(y)) % 3 == 0, y, y[0])          # unbalanced classes
    counts = np.unique(y, return_counts=True)[1]
    assert counts.max() > 2 * counts.min()
    balanced = _estimator(method, class_weight="balanced").fit(X, y)
    plain = _estimator(method).fit(X, y)
    w = len(y) / (3 * counts[np.unique(y, return_inverse=True)[1]])
    weighted = _estimator(method).fit(X, y, sample_weight=w)
    assert balanced.log_marginal_likelihood_value_ == pytest.approx(
        weighted.log_marginal_likelihood_value_, abs=1e-10)
    assert abs(balanced.log_marginal_likelihood_value_
               - plain.log_marginal_likelihood_value_) > 1.0
    # The rare classes gain probability on their own examples.
    rare = y != np.argmax(np.bincount(y))
    classes = np.searchsorted(plain.classes_, y[rare])
    gain = (balanced.predict_proba(X[rare]) - plain.predict_proba(X[rare]))[
        np.arange(rare.sum()), classes]
    assert np.all(gain > 0)


def test_multinomial_ep_refuses_weights(glass):
    X, y = glass
    with pytest.raises(ValueError, match=r"method='ep' of the multinomial model does "
                                         r"not take sample weights.*\['laplace', 'vb'\]"):
        gpc.infer(_K(X, KERNELS["shared"]), np.unique(y, return_inverse=True)[1],
                  "ep", "multinomial_probit", sample_weight=np.ones(len(y)))
    est = _estimator("ep", likelihood="probit")
    with pytest.raises(ValueError, match="does not take sample weights"):
        est.fit(X, y, sample_weight=np.ones(len(y)))
    with pytest.raises(ValueError, match="does not take sample weights"):
        est.set_params(class_weight="balanced").fit(X, y)
