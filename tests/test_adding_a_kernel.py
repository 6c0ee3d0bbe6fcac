"""Adding a kernel as CONTRIBUTING.md ("Adding a kernel") describes it: one
subclass of gpc.kernels.Kernel, made known to gpc, and the tests that then take it.

The kernel is one gpc does not have, the rational quadratic ``variance * (1 + r^2 /
(2 alpha))^-alpha``, ``r`` the distance in length scales (isotropic or ARD): a
scale mixture of squared exponentials, whose small ``alpha`` gives heavy tails.  Its
class is defined here (in gpc, its own module gpc/kernels/_rational_quadratic.py).
Step 2's edit of gpc and step 3's cases in tests/test_kernels.py are made for the
tests that ask for them only (fixtures), and undone after them.
"""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.gaussian_process import kernels as sk

import gpc
from gpc._blocks import frob
from gpc.datasets import load_ionosphere
from gpc.kernels import (Kernel, Linear, White, contract, contract_cross,
                         contract_diag, contract_inputs, is_psd_by_construction)
from gpc.kernels import _psd
from gpc.kernels._base import _ordered, _ordered_tensor
from gpc.kernels._distances import (_pairwise_sqdiff, _scaled_inputs, _sqdist,
                                    _weighted_sqdist_sum)
from gpc.kernels._inputs import (_DEFAULT_BOUNDS, _check_X, _check_XY,
                                 _fmt_length_scale, _length_scale_array,
                                 _length_scale_for, _length_scale_hyperparameter,
                                 _positive_scalar)

import test_kernels


# Step 1: the class (in gpc, gpc/kernels/_rational_quadratic.py, with the helpers
# imported relatively).
class RationalQuadratic(Kernel):
    """Rational quadratic kernel with a variance, optionally ARD.

    ``k(x, x') = variance * (1 + r^2 / (2 alpha))^-alpha`` with
    ``r^2 = sum_k (x_k - x'_k)^2 / l_k^2``: scikit-learn's
    ``ConstantKernel(variance) * RationalQuadratic(length_scale, alpha)``, with ARD
    length scales and an O(n^2 d) contraction.  ``theta`` is
    ``[log alpha, log l..., log variance]`` (scikit-learn orders the
    hyperparameters by name).
    """

    def __init__(self, length_scale=1.0, alpha=1.0, variance=1.0,
                 length_scale_bounds=_DEFAULT_BOUNDS, alpha_bounds=_DEFAULT_BOUNDS,
                 variance_bounds=_DEFAULT_BOUNDS):
        _length_scale_array(length_scale, "RationalQuadratic")
        _positive_scalar(alpha, "alpha", "RationalQuadratic")
        _positive_scalar(variance, "variance", "RationalQuadratic")
        self.length_scale = length_scale
        self.alpha = alpha
        self.variance = variance
        self.length_scale_bounds = length_scale_bounds
        self.alpha_bounds = alpha_bounds
        self.variance_bounds = variance_bounds

    @property
    def hyperparameter_length_scale(self):
        return _length_scale_hyperparameter(self.length_scale, self.length_scale_bounds)

    @property
    def hyperparameter_alpha(self):
        return sk.Hyperparameter("alpha", "numeric", self.alpha_bounds)

    @property
    def hyperparameter_variance(self):
        return sk.Hyperparameter("variance", "numeric", self.variance_bounds)

    def _matrices(self, X, Y=None):
        """``(Z, U, K, length_scale, alpha)``: the scaled inputs, ``u = r^2 / (2
        alpha)`` and K.  ``_sqdist`` makes U(X) exactly symmetric with a zero
        diagonal, so K(X) is exactly symmetric with ``variance`` on it."""
        name = type(self).__name__
        ls = _length_scale_for(self.length_scale, X, name)
        alpha = _positive_scalar(self.alpha, "alpha", name)
        variance = _positive_scalar(self.variance, "variance", name)
        Z, ZY = _scaled_inputs(X, Y, ls)
        U = _sqdist(Z, ZY)
        U /= 2.0 * alpha
        K = np.log1p(U)
        K *= -alpha
        np.exp(K, out=K)
        K *= variance
        return Z, U, K, ls, alpha

    def __call__(self, X, Y=None, eval_gradient=False):
        """K(X, Y); with ``eval_gradient`` also dK(X)/dtheta, (n, n, n_dims)."""
        X, Y = _check_XY(X, Y, eval_gradient)
        Z, U, K, ls, alpha = self._matrices(X, Y)
        if not eval_gradient:
            return K
        # d/dlog l_k = K (r_k^2 / l_k^2) / (1 + u) per coordinate (summed: isotropic),
        # d/dlog alpha = K alpha (u / (1 + u) - log(1 + u)), d/dlog variance = K.
        parts = {"variance": K.copy(),
                 "alpha": K * alpha * (U / (1.0 + U) - np.log1p(U))}
        KB = K / (1.0 + U)
        if np.ndim(ls) == 1:
            parts["length_scale"] = KB[:, :, np.newaxis] * _pairwise_sqdiff(Z)
        else:
            parts["length_scale"] = KB * (2.0 * alpha) * U
        return K, _ordered_tensor(self, parts, X.shape[0])

    def _contract(self, X, dK, K):
        """The same derivatives summed against dK, with no (n, n, n_dims) tensor."""
        Z, U, K_own, ls, alpha = self._matrices(X)
        M = dK * (K_own if K is None else K)
        parts = {"variance": M.sum()}
        if not self.hyperparameter_alpha.fixed:
            parts["alpha"] = alpha * frob(M, U / (1.0 + U) - np.log1p(U))
        if not self.hyperparameter_length_scale.fixed:
            M /= 1.0 + U
            if np.ndim(ls) == 1:       # sum_ij M_ij (z_ik - z_jk)^2, O(n^2 d)
                parts["length_scale"], _ = _weighted_sqdist_sum(Z, M, True)
            else:
                parts["length_scale"] = 2.0 * alpha * frob(M, U)
        return _ordered(self, parts)

    def diag(self, X):
        """``variance`` everywhere."""
        X = _check_X(X)
        return np.full(X.shape[0], _positive_scalar(self.variance, "variance",
                                                    type(self).__name__))

    def is_stationary(self):
        """Returns True."""
        return True

    def __repr__(self):
        return "{0}(length_scale={1}, alpha={2:.3g}, variance={3:.3g})".format(
            type(self).__name__, _fmt_length_scale(self.length_scale), self.alpha,
            self.variance)


# Step 2 (in gpc, two lines of gpc/kernels/_psd.py): the kernel is positive
# semi-definite by construction, and so is every positive power of it.
@pytest.fixture(scope="module")
def known():
    assert not is_psd_by_construction(RationalQuadratic())
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_psd, "_PSD_LEAVES", _psd._PSD_LEAVES + (RationalQuadratic,))
        mp.setattr(_psd, "_INFINITELY_DIVISIBLE",
                   _psd._INFINITELY_DIVISIBLE + (RationalQuadratic,))
        assert is_psd_by_construction(2.0 * RationalQuadratic() ** 0.5 + Linear())
        yield RationalQuadratic
    assert not is_psd_by_construction(RationalQuadratic())


def _points(n, scales, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, len(scales))) * scales


def test_theta_is_the_log_of_the_hyperparameters_by_name():
    k = RationalQuadratic([0.5, 2.0], alpha=3.0, variance=4.0)
    assert [h.name for h in k.hyperparameters] == ["alpha", "length_scale", "variance"]
    np.testing.assert_allclose(np.exp(k.theta), [3.0, 0.5, 2.0, 4.0])
    np.testing.assert_allclose(np.exp(k.bounds), [_DEFAULT_BOUNDS] * 4)
    fixed = RationalQuadratic(0.5, alpha=3.0, alpha_bounds="fixed")
    np.testing.assert_allclose(np.exp(fixed.theta), [0.5, 1.0])
    with pytest.raises(ValueError, match="alpha must be finite and > 0"):
        RationalQuadratic(alpha=-1.0)


@pytest.mark.parametrize("length_scale, alpha, variance",
                         [(0.3, 0.1, 1.0), (1.0, 2.0, 3.0), (3.0, 10.0, 1e-2)])
def test_matrix_equals_scikit_learns(length_scale, alpha, variance):
    X, Y = _points(30, [1.0, 2.0, 0.5]), _points(7, [1.0, 2.0, 0.5], seed=1)
    k = RationalQuadratic(length_scale, alpha, variance)
    ref = sk.ConstantKernel(variance) * sk.RationalQuadratic(length_scale, alpha)
    K = k(X)
    np.testing.assert_allclose(K, ref(X), rtol=1e-12, atol=0)
    np.testing.assert_allclose(k(X, Y), ref(X, Y), rtol=1e-12, atol=0)
    np.testing.assert_array_equal(K, K.T)
    np.testing.assert_array_equal(k.diag(X), np.diag(K))
    assert np.linalg.eigvalsh(K).min() >= -1e-10 * np.trace(K)
    # ARD: scikit-learn's isotropic kernel on the inputs divided by the length scales.
    ls = np.array([0.5, 1.0, 4.0]) * length_scale
    ard = RationalQuadratic(ls, alpha, variance)
    ref = sk.ConstantKernel(variance) * sk.RationalQuadratic(1.0, alpha)
    np.testing.assert_allclose(ard(X, Y), ref(X / ls, Y / ls), rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="only be evaluated when Y is None"):
        k(X, Y, eval_gradient=True)


def _fd_contract(kernel, X, dK, h=1e-5):
    """Central differences of ``sum(dK * K(theta))`` in theta."""
    g = []
    for e in np.eye(kernel.theta.size) * h:
        up = np.vdot(dK, kernel.clone_with_theta(kernel.theta + e)(X))
        down = np.vdot(dK, kernel.clone_with_theta(kernel.theta - e)(X))
        g.append((up - down) / (2 * h))
    return np.array(g)


CONTRACTED = {
    "iso": lambda: RationalQuadratic(0.7, 2.0, 3.0),
    "ard": lambda: RationalQuadratic([0.5, 1.0, 2.0], 0.3, 2.0),
    "fixed-alpha": lambda: RationalQuadratic([0.5, 1.0, 2.0], 0.3, 2.0,
                                             alpha_bounds="fixed"),
    "fixed-ls": lambda: RationalQuadratic(1.0, 5.0, length_scale_bounds="fixed"),
    "composite": lambda: 2.0 * RationalQuadratic([0.5, 1.0, 2.0], 1.5) + White(0.1),
}


@pytest.mark.parametrize("case", sorted(CONTRACTED))
@pytest.mark.parametrize("symmetric", [True, False])
def test_contraction_matches_finite_differences(case, symmetric):
    kernel = CONTRACTED[case]()
    X = _points(20, [0.5, 1.0, 2.0])
    A = np.random.default_rng(2).normal(size=(20, 20))
    dK = A + A.T if symmetric else A
    K, K_gradient = kernel(X, eval_gradient=True)
    g = contract(kernel, X, dK)
    assert g.shape == kernel.theta.shape
    floor = 1e-9 * np.vdot(np.abs(dK), K)
    np.testing.assert_allclose(g, _fd_contract(kernel, X, dK), rtol=1e-6, atol=floor)
    tensor = np.tensordot(dK, K_gradient, 2)
    np.testing.assert_allclose(g, tensor, rtol=1e-10, atol=1e-3 * floor)
    np.testing.assert_allclose(contract(kernel, X, dK, K=K), tensor, rtol=1e-10,
                               atol=1e-3 * floor)
    np.testing.assert_allclose(kernel.contract(X, dK), tensor, rtol=1e-10,
                               atol=1e-3 * floor)


# Step 3 (in gpc, entries of GPC_CASES in tests/test_kernels.py): the parametrised
# tests there take every case, here run on these ones only.
# Each X is on the scale of the length scales, so that every derivative matters.
_iso, _ard = test_kernels._iso, test_kernels._ard
CASES = {
    "rq-iso-l0.01": lambda: (RationalQuadratic(1e-2, 0.5, 2.0), _iso(1e-2)),
    "rq-iso-l100": lambda: (RationalQuadratic(1e2, 20.0, 1e-2), _iso(1e2)),
    "rq-ard": lambda: (RationalQuadratic(test_kernels.ARD, 0.2, 1e3), _ard()),
    "rq-fixed-alpha": lambda: (
        RationalQuadratic([1.0, 3.0], 2.0, alpha_bounds="fixed"),
        test_kernels._points([1.0, 3.0])),
    "rq-squared-plus-linear": lambda: (
        RationalQuadratic(1.0, 1.5) ** 2 + Linear(0.3), _iso(1.0)),
}

CHECKS = [
    test_kernels.test_contract_matches_tensordot,
    test_kernels.test_contract_matches_finite_differences,
    test_kernels.test_gradient_tensor_matches_finite_differences,
    test_kernels.test_kernel_matrix_symmetric_psd_and_diag,
    test_kernels.test_cross_covariance_consistent_with_blocks,
    test_kernels.test_clone_pickle_params_theta_round_trips,
]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_kernel_tests_take_it(case, known, monkeypatch):
    for cases in (test_kernels.GPC_CASES, test_kernels.ALL_CASES):
        monkeypatch.setitem(cases, case, CASES[case])
    for check in CHECKS:
        check(case)


# The estimators, on real data: Ionosphere (bundled), 200 rows to learn from.
@pytest.fixture(scope="module")
def ionosphere():
    X, y = load_ionosphere()
    train = np.random.RandomState(0).permutation(len(y))
    train, test = train[:200], train[200:]
    mean, std = X[train].mean(axis=0), X[train].std(axis=0)
    X = (X - mean) / std
    return X[train], y[train], X[test], y[test]


@pytest.fixture(scope="module")
def fitted(ionosphere, known):
    X, y, _, _ = ionosphere
    # In one thread: gpc's tiled factorisations, the same bits however loaded the
    # machine is (its choice of LAPACK's own routines follows the load, and
    # their last bits differ), so that a refit can be compared bit for bit.
    with gpc.thread_limit(1):
        return gpc.GaussianProcessClassifier(RationalQuadratic()).fit(X, y)


def test_the_classifier_learns_it(ionosphere, fitted):
    X, y, X_test, y_test = ionosphere
    clf = fitted
    kernel = clf.kernel_
    assert type(kernel) is RationalQuadratic
    # An interior optimum (heavy tails: a small alpha) where the gradient vanishes.
    assert np.all((kernel.theta > kernel.bounds[:, 0] + 1.0)
                  & (kernel.theta < kernel.bounds[:, 1] - 1.0))
    assert kernel.alpha < 1.0
    assert clf.base_estimator_.optimizer_result_.stationary
    value, grad = clf.log_marginal_likelihood(kernel.theta, eval_gradient=True)
    assert value == pytest.approx(clf.log_marginal_likelihood_value_, rel=1e-10)
    assert np.abs(grad).max() < 1e-3
    # Away from it, the gradient (the method's dK, contracted) is the evidence's.
    theta = kernel.theta + np.array([0.3, -0.3, 0.3])
    value, grad = clf.log_marginal_likelihood(theta, eval_gradient=True)
    h = 1e-4
    lml = clf.log_marginal_likelihood
    fd = [(lml(theta + e) - lml(theta - e)) / (2 * h) for e in np.eye(3) * h]
    np.testing.assert_allclose(grad, fd, rtol=1e-5)
    assert clf.score(X_test, y_test) > 0.93
    # scikit-learn's kernel (through the fallback contraction) is the same model.
    ref = gpc.GaussianProcessClassifier(
        sk.ConstantKernel() * sk.RationalQuadratic()).fit(X, y)
    assert ref.log_marginal_likelihood_value_ == pytest.approx(
        clf.log_marginal_likelihood_value_, abs=1e-6)
    np.testing.assert_allclose(ref.predict_proba(X_test), clf.predict_proba(X_test),
                               atol=1e-6)


def test_clone_and_pickle_give_identical_predictions(ionosphere, fitted):
    X, y, X_test, _ = ionosphere
    proba = fitted.predict_proba(X_test)
    kernel = fitted.kernel_
    for copy in (clone(kernel), pickle.loads(pickle.dumps(kernel))):
        assert copy == kernel and copy is not kernel
        np.testing.assert_array_equal(copy(X), kernel(X))
    np.testing.assert_array_equal(
        pickle.loads(pickle.dumps(fitted)).predict_proba(X_test), proba)
    with gpc.thread_limit(1):
        refit = clone(fitted).fit(X, y)
    np.testing.assert_array_equal(refit.predict_proba(X_test), proba)


def test_the_sparse_classifier_learns_it(ionosphere, known):
    X, y, X_test, y_test = ionosphere
    clf = gpc.SparseGPClassifier(RationalQuadratic(), max_basis=20,
                                 random_state=0).fit(X, y)
    assert type(clf.kernel_) is RationalQuadratic
    assert clf.inference_info_["stationary"]
    assert clf.score(X_test, y_test) > 0.9
    # Its gradient contracts K(X, Z) and k(x, x), through _contract.
    kernel = RationalQuadratic([0.5, 1.0, 2.0], 0.7, 2.0)
    rng = np.random.default_rng(3)
    Xs, Z = _points(12, [0.5, 1.0, 2.0]), _points(5, [0.5, 1.0, 2.0], seed=4)
    G, s = rng.normal(size=(12, 5)), rng.normal(size=12)
    h = 1e-5
    for got, f in ((contract_cross(kernel, Xs, Z, G), lambda k: np.vdot(G, k(Xs, Z))),
                   (contract_diag(kernel, Xs, s), lambda k: np.vdot(s, k.diag(Xs)))):
        fd = [(f(kernel.clone_with_theta(kernel.theta + e))
               - f(kernel.clone_with_theta(kernel.theta - e))) / (2 * h)
              for e in np.eye(kernel.theta.size) * h]
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-9)
    # Learning the inducing inputs needs their gradient, which only gpc's own
    # dispatch in gpc/kernels/_cross.py gives: not this kernel's, without editing it.
    with pytest.raises(ValueError, match="Learning inducing inputs needs"):
        contract_inputs(kernel, Xs, Z, G)
