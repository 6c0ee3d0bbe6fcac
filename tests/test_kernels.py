"""Tests for gpc.kernels: contraction, gradients, scikit-learn compatibility."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as sk

import gpc.kernels as gk
from gpc.kernels import _base, _matrices
from gpc.kernels import (
    Constant,
    Exponentiation,
    Linear,
    Matern,
    Polynomial,
    Product,
    SquaredExponential,
    Sum,
    White,
    as_kernel,
    contract,
    is_psd_by_construction,
    paper_kernel,
)

N = 18  # samples per test set (small: the eval_gradient tensors are n*n*p)


def _points(scales, n=N, seed=0):
    """n points whose k-th coordinate has spread scales[k]."""
    rng = np.random.default_rng(seed)
    scales = np.asarray(scales, dtype=float)
    return rng.normal(size=(n, scales.size)) * scales


def _dK(n, seed=1, symmetric=True):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, n))
    return 0.5 * (A + A.T) if symmetric else A


LS = [1e-2, 1.0, 1e2]
VARS = [1e-2, 1.0, 1e3]
ARD = np.array([1e-2, 1.0, 1e2])


def _iso(ls, d=3):
    return _points([0.8 * ls] * d)


def _ard(ls=ARD):
    return _points(0.8 * np.asarray(ls))


# Each case: id -> builder returning (kernel, X).  X is chosen on the scale of
# the length scales so that every derivative is of order one (a meaningful
# finite-difference check).
GPC_CASES = {}
for _l in LS:
    for _v in VARS:
        GPC_CASES[f"se-iso-l{_l:g}-v{_v:g}"] = (
            lambda l=_l, v=_v: (SquaredExponential(l, v), _iso(l))
        )
for _v in [1e-2, 1e3]:
    GPC_CASES[f"se-ard-v{_v:g}"] = lambda v=_v: (SquaredExponential(ARD, v), _ard())
    for _nu in (1.5, 2.5):
        GPC_CASES[f"matern{_nu}-ard-v{_v:g}"] = (
            lambda v=_v, nu=_nu: (Matern(ARD, v, nu=nu), _ard())
        )
for _l in [1e-2, 1e2]:
    for _nu in (1.5, 2.5):
        GPC_CASES[f"matern{_nu}-iso-l{_l:g}"] = (
            lambda l=_l, nu=_nu: (Matern(l, 3.0, nu=nu), _iso(l))
        )
for _s in [1e-2, 1.0, 1e2]:
    for _p in (1, 2, 3):
        GPC_CASES[f"poly{_p}-m{_s:g}"] = (
            lambda s=_s, p=_p: (Polynomial(p, s), _points([0.7 * np.sqrt(s)] * 3))
        )
for _v in [1e-2, 1e3]:
    GPC_CASES[f"constant-{_v:g}"] = lambda v=_v: (Constant(v), _points([1.0] * 2))
    GPC_CASES[f"white-{_v:g}"] = lambda v=_v: (White(v), _points([1.0] * 2))
    GPC_CASES[f"linear-{_v:g}"] = lambda v=_v: (Linear(v), _points([1.0] * 3))

GPC_CASES.update(
    {
        "se-ard-fixed-ls": lambda: (
            SquaredExponential(ARD, 2.0, length_scale_bounds="fixed"),
            _ard(),
        ),
        "se-ard-fixed-var": lambda: (
            SquaredExponential(ARD, 2.0, variance_bounds="fixed"),
            _ard(),
        ),
        "se-all-fixed": lambda: (
            SquaredExponential(1.0, 2.0, "fixed", "fixed"),
            _iso(1.0),
        ),
        "matern-fixed-ls": lambda: (
            Matern([0.5, 2.0], 2.0, nu=2.5, length_scale_bounds="fixed"),
            _points([0.4, 1.6]),
        ),
        "scaled-se": lambda: (2.0 * SquaredExponential(ARD), _ard()),
        "se-times-scalar": lambda: (SquaredExponential(ARD, 3.0) * 1e3, _ard()),
        "se-plus-const": lambda: (SquaredExponential(0.3, 2.0) + 0.5, _iso(0.3)),
        "paper": lambda: (paper_kernel(ARD, 1e3, 1e-2), _ard()),
        "paper-iso": lambda: (paper_kernel(10.0, 0.5, 30.0), _iso(10.0)),
        "paper-free-jitter": lambda: (
            paper_kernel(ARD, 2.0, 0.5, 1e-2, jitter_bounds=(1e-8, 1.0)),
            _ard(),
        ),
        "paper-fixed-bias": lambda: (
            paper_kernel(ARD, 2.0, 0.5, theta2_bounds="fixed"),
            _ard(),
        ),
        "se-times-linear": lambda: (
            SquaredExponential([1.0, 2.0], 2.0) * Linear(0.5),
            _points([1.0, 2.0]),
        ),
        "matern-plus-white": lambda: (
            Matern(1.0, 2.0, nu=1.5) + White(0.1),
            _iso(1.0),
        ),
        "sum-squared": lambda: (
            (SquaredExponential(1.0) + Linear(0.3)) ** 2,
            _iso(1.0),
        ),
        "se-times-matern-fixed": lambda: (
            SquaredExponential(1.0, 2.0, variance_bounds="fixed")
            * Matern([1.0, 3.0, 0.5], 1.0, nu=2.5, variance_bounds="fixed"),
            _points([1.0, 3.0, 0.5]),
        ),
        "fixed-const-times-poly": lambda: (
            Product(Constant(3.0, "fixed"), Polynomial(3, 2.0)),
            _points([1.0] * 3),
        ),
        "poly-times-free-const": lambda: (
            Polynomial(2, 2.0) * Constant(0.1),
            _points([1.0] * 3),
        ),
        "fixed-se-plus-linear": lambda: (
            SquaredExponential(1.0, 1.0, "fixed", "fixed") + Linear(2.0),
            _iso(1.0),
        ),
        "const-times-const": lambda: (Constant(2.0) * Constant(0.5), _iso(1.0)),
        "se-plus-sklearn-rbf": lambda: (
            SquaredExponential(0.5) + sk.RBF([1.0, 2.0, 0.5]),
            _points([1.0, 2.0, 0.5]),
        ),
        "exp-fractional-se": lambda: (SquaredExponential([1.0, 2.0]) ** 2.5, _points([2.0, 4.0])),
    }
)

SK_CASES = {
    "rbf-iso-l0.01": lambda: (sk.RBF(1e-2), _iso(1e-2)),
    "rbf-iso-l100": lambda: (sk.RBF(1e2), _iso(1e2)),
    "rbf-ard": lambda: (sk.RBF(ARD), _ard()),
    "c*rbf-ard": lambda: (sk.ConstantKernel(1e3) * sk.RBF(ARD), _ard()),
    "c*rbf-fixed-c": lambda: (
        sk.ConstantKernel(1e-2, "fixed") * sk.RBF(ARD),
        _ard(),
    ),
    "rbf-fixed+c": lambda: (
        sk.RBF(1.0, "fixed") + sk.ConstantKernel(0.3),
        _iso(1.0),
    ),
    "constant": lambda: (sk.ConstantKernel(7.0), _iso(1.0)),
    "white": lambda: (sk.WhiteKernel(0.3), _iso(1.0)),
    "rbf+white": lambda: (sk.RBF(0.5) + sk.WhiteKernel(1e-2), _iso(0.5)),
    "dot": lambda: (sk.DotProduct(0.5), _iso(1.0)),
    "dot**3": lambda: (sk.DotProduct(1.5) ** 3, _iso(0.5)),
    "rbf**2.5": lambda: (sk.Exponentiation(sk.RBF(ARD), 2.5), _ard()),
    "rq-fallback": lambda: (sk.RationalQuadratic(0.7, 2.0), _iso(0.7)),
    "c*expsine-fallback": lambda: (
        sk.ConstantKernel(2.0) * sk.ExpSineSquared(1.0, 3.0),
        _iso(1.0),
    ),
    "dot*rbf": lambda: (sk.DotProduct(1.0) * sk.RBF([1.0, 2.0]), _points([1.0, 2.0])),
}
for _nu in (0.5, 1.5, 2.5, np.inf):
    SK_CASES[f"matern{_nu}-ard"] = lambda nu=_nu: (sk.Matern(ARD, nu=nu), _ard())
    SK_CASES[f"matern{_nu}-iso"] = lambda nu=_nu: (
        sk.ConstantKernel(1e2) * sk.Matern(3.0, nu=nu),
        _iso(3.0),
    )

ALL_CASES = {**GPC_CASES, **{"sk-" + k: v for k, v in SK_CASES.items()}}


def _gradient_scale(dK, K_gradient):
    """sum_ij |dK_ij| |dK_ij/dtheta_p|: the natural size of each component."""
    return np.tensordot(np.abs(dK), np.abs(K_gradient), axes=([0, 1], [0, 1]))


def _fd_contract(kernel, X, dK, h=1e-5):
    theta = kernel.theta
    g = np.empty_like(theta)
    for p in range(theta.size):
        tp, tm = theta.copy(), theta.copy()
        tp[p] += h
        tm[p] -= h
        fp = np.vdot(dK, kernel.clone_with_theta(tp)(X))
        fm = np.vdot(dK, kernel.clone_with_theta(tm)(X))
        g[p] = (fp - fm) / (2 * h)
    return g


def _assert_close(actual, expected, scale, rel):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape
    err = np.abs(actual - expected)
    tol = rel * (np.abs(expected) + scale) + 1e-300
    assert np.all(err <= tol), (actual, expected, err / (np.abs(expected) + scale))


# ---------------------------------------------------------------------------
# Contraction
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(ALL_CASES))
def test_contract_matches_tensordot(case):
    kernel, X = ALL_CASES[case]()
    dK = _dK(X.shape[0])
    K, K_gradient = kernel(X, eval_gradient=True)
    assert K_gradient.shape == (X.shape[0], X.shape[0], kernel.n_dims)
    expected = np.tensordot(dK, K_gradient, axes=([0, 1], [0, 1]))
    scale = _gradient_scale(dK, K_gradient)
    g = contract(kernel, X, dK)
    assert g.shape == kernel.theta.shape
    _assert_close(g, expected, scale, 1e-10)
    # with the precomputed kernel matrix
    _assert_close(contract(kernel, X, dK, K=K), expected, scale, 1e-10)
    if isinstance(kernel, gk.Kernel):
        _assert_close(kernel.contract(X, dK), expected, scale, 1e-10)
        _assert_close(kernel.contract(X, dK, K), expected, scale, 1e-10)


@pytest.mark.parametrize("case", sorted(ALL_CASES))
def test_contract_matches_finite_differences(case):
    kernel, X = ALL_CASES[case]()
    dK = _dK(X.shape[0], seed=2)
    _, K_gradient = kernel(X, eval_gradient=True)
    scale = _gradient_scale(dK, K_gradient)
    # rounding floor of the central difference: eps * sum|dK K| / h
    scale = scale + 1e-5 * np.vdot(np.abs(dK), np.abs(kernel(X)))
    _assert_close(contract(kernel, X, dK), _fd_contract(kernel, X, dK), scale, 1e-6)


@pytest.mark.parametrize("case", ["se-ard-v1000", "paper", "sk-c*rbf-ard", "sk-matern1.5-ard"])
def test_contract_non_symmetric_dK(case):
    kernel, X = ALL_CASES[case]()
    dK = _dK(X.shape[0], symmetric=False)
    _, K_gradient = kernel(X, eval_gradient=True)
    expected = np.tensordot(dK, K_gradient, axes=([0, 1], [0, 1]))
    _assert_close(contract(kernel, X, dK), expected, _gradient_scale(dK, K_gradient), 1e-10)


def test_contract_matern_general_nu_falls_back():
    kernel, X = sk.Matern(1.0, nu=0.7), _iso(1.0)
    dK = _dK(X.shape[0])
    _, K_gradient = kernel(X, eval_gradient=True)
    np.testing.assert_allclose(
        contract(kernel, X, dK), np.tensordot(dK, K_gradient, 2), rtol=1e-12
    )


class _UserKernel(sk.Kernel):
    """A user kernel unknown to gpc (k = a * exp(-|x - x'|_1))."""

    def __init__(self, a=1.0, a_bounds=(1e-5, 1e5)):
        self.a = a
        self.a_bounds = a_bounds

    @property
    def hyperparameter_a(self):
        return sk.Hyperparameter("a", "numeric", self.a_bounds)

    def __call__(self, X, Y=None, eval_gradient=False):
        Y = X if Y is None else Y
        K = self.a * np.exp(-np.abs(X[:, None, :] - Y[None, :, :]).sum(-1))
        return (K, K[:, :, None]) if eval_gradient else K

    def diag(self, X):
        return np.full(X.shape[0], self.a)

    def is_stationary(self):
        return True


def test_contract_user_kernel_fallback_and_in_composites():
    X = _iso(1.0)
    dK = _dK(X.shape[0])
    for kernel in [_UserKernel(2.0), SquaredExponential([1.0] * 3) * _UserKernel(2.0)]:
        _, K_gradient = kernel(X, eval_gradient=True)
        np.testing.assert_allclose(
            contract(kernel, X, dK), np.tensordot(dK, K_gradient, 2), rtol=1e-10
        )
    assert not is_psd_by_construction(_UserKernel())
    assert not is_psd_by_construction(_UserKernel() + SquaredExponential())


def test_contract_no_free_hyperparameters():
    kernel = SquaredExponential(1.0, 1.0, "fixed", "fixed")
    X = _iso(1.0)
    g = contract(kernel, X, _dK(X.shape[0]))
    assert g.shape == (0,)


def test_contract_order_follows_theta_with_fixed():
    # theta of a composite: k1's free hyperparameters, then k2's
    k = paper_kernel([1.0, 2.0], 3.0, 0.5, theta1_bounds="fixed")
    names = [h.name for h in k.hyperparameters if not h.fixed]
    assert names == ["k1__k1__length_scale", "k1__k2__value"]
    assert k.theta.shape == (3,)
    X = _points([1.0, 2.0])
    dK = _dK(X.shape[0])
    g = contract(k, X, dK)
    se = SquaredExponential([1.0, 2.0], 3.0)
    np.testing.assert_allclose(g[:2], contract(se, X, dK)[:2], rtol=1e-12)
    np.testing.assert_allclose(g[2], 0.5 * dK.sum(), rtol=1e-12)


# ---------------------------------------------------------------------------
# Kernel matrices and eval_gradient (gpc kernels)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(GPC_CASES))
def test_gradient_tensor_matches_finite_differences(case):
    kernel, X = GPC_CASES[case]()
    K, K_gradient = kernel(X, eval_gradient=True)
    np.testing.assert_array_equal(K, kernel(X))
    theta, h = kernel.theta, 1e-5
    for p in range(theta.size):
        tp, tm = theta.copy(), theta.copy()
        tp[p] += h
        tm[p] -= h
        fd = (kernel.clone_with_theta(tp)(X) - kernel.clone_with_theta(tm)(X)) / (2 * h)
        scale = np.abs(K_gradient[:, :, p]).max() + 1e-5 * np.abs(K).max()
        np.testing.assert_allclose(K_gradient[:, :, p], fd, rtol=1e-6, atol=1e-6 * scale)


@pytest.mark.parametrize("case", sorted(GPC_CASES))
def test_kernel_matrix_symmetric_psd_and_diag(case):
    kernel, X = GPC_CASES[case]()
    K = kernel(X)
    assert K.shape == (X.shape[0], X.shape[0])
    np.testing.assert_array_equal(K, K.T)  # exactly symmetric
    assert np.linalg.eigvalsh(K).min() >= -1e-10 * np.trace(K)
    np.testing.assert_allclose(kernel.diag(X), np.diag(K), rtol=1e-12, atol=0)
    assert is_psd_by_construction(kernel)


@pytest.mark.parametrize("n, d", [(0, 2), (1, 3), (64, 1), (65, 2), (130, 5), (70, 16),
                                  (67, 17), (9, 0)])
def test_compiled_symmetric_matrix_matches_direct_formula(n, d):
    # The one-pass routine behind K(X, X) of the stationary kernels, against the
    # distances written out pairwise (n across the 64-wide tiles; up to d = 16 from
    # the coordinate differences, eight rows at a time, beyond from a Gram matrix).
    from gpc._kern import sym_stationary

    Z = np.random.default_rng(n + d).normal(size=(n, d)) * 2.0
    half = -0.5 * ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    D = sym_stationary(Z, 1.0, False)
    K = sym_stationary(Z, 1.7, True)
    for A in (D, K):
        assert A.shape == (n, n)
        np.testing.assert_array_equal(A, A.T)
    np.testing.assert_allclose(D, half, rtol=1e-12, atol=1e-12 * max(1.0, -half.min(initial=0)))
    np.testing.assert_array_equal(np.diag(D), 0.0)
    np.testing.assert_allclose(K, 1.7 * np.exp(half), rtol=1e-12, atol=1e-300)
    np.testing.assert_array_equal(np.diag(K), 1.7)


def test_compiled_exp_is_accurate_to_a_few_ulp():
    # The squared-exponential values come from the vectorised exp of src_c/_vexp.h:
    # against NumPy's exp of the same distances (C library), from 0 through the
    # subnormal range (exp below 2.2e-308 from -708.4) to the underflow to 0 (-745.2).
    from gpc._kern import sym_stationary

    Z = np.linspace(0.0, 40.0, 1601)[:, None]            # half distances 0 .. -800
    D = sym_stationary(Z, 1.0, False)
    assert D.min() == -800.0
    # exp itself within 2 ulp; times a variance, each side rounds once more.
    for variance, tol in ((1.0, 2), (1.7, 4), (1e-3, 4)):
        K = sym_stationary(Z, variance, True)
        ref = variance * np.exp(D)
        ulps = np.abs(K - ref) / np.spacing(ref)
        assert ulps.max() <= tol, (variance, ulps.max())
        assert (K[ref == 0.0] == 0.0).all() and (K[ref > 0.0] > 0.0).all()


@pytest.mark.parametrize("n, d", [(0, 2), (1, 3), (64, 2), (65, 1), (130, 5), (20, 0),
                                  (67, 13), (66, 16), (70, 17)])
def test_compiled_weighted_sqdist_sum_matches_pairwise_sum(n, d):
    # The one-pass contraction behind the length-scale gradients, against the
    # (n, n, d) tensor of squared differences; W is not symmetric, and is scratch.
    # Up to 16 coordinates the pairs are summed directly (_pairs.h, padded to a
    # multiple of 4); from 17 on through the BLAS identity.
    from gpc._kern import weighted_sqdist_sum

    rng = np.random.default_rng(7 * n + d)
    Z = rng.normal(size=(n, d))
    W = rng.normal(size=(n, n))
    direct = np.einsum("ij,ijk->k", W, (Z[:, None, :] - Z[None, :, :]) ** 2)
    g, total = weighted_sqdist_sum(np.array(W, order="F"), Z)
    assert g.shape == (d,)
    scale = np.abs(W).sum() * max(1.0, (Z ** 2).max(initial=0.0))
    np.testing.assert_allclose(g, direct, rtol=0, atol=1e-13 * scale)
    assert total == pytest.approx(W.sum(), rel=1e-13, abs=1e-13 * np.abs(W).sum())
    # With a symmetric K the weights are W o K, formed in the pass: W and K unchanged.
    K = rng.normal(size=(n, n))
    K = np.asfortranarray(K + K.T)
    Wf, Kc = np.array(W, order="F"), K.copy(order="F")
    direct = np.einsum("ij,ijk->k", W * K, (Z[:, None, :] - Z[None, :, :]) ** 2)
    g, total = weighted_sqdist_sum(Wf, Z, K)
    scale = np.abs(W * K).sum() * max(1.0, (Z ** 2).max(initial=0.0))
    np.testing.assert_allclose(g, direct, rtol=0, atol=1e-13 * scale)
    assert total == pytest.approx((W * K).sum(), rel=1e-13, abs=1e-13 * scale)
    np.testing.assert_array_equal(Wf, W)
    np.testing.assert_array_equal(K, Kc)
    with pytest.raises(ValueError, match="n x n"):
        weighted_sqdist_sum(np.zeros((n + 1, n + 1), order="F"), Z)
    with pytest.raises(ValueError, match="K must be n x n"):
        weighted_sqdist_sum(Wf, Z, np.zeros((n + 1, n + 1), order="F"))


@pytest.mark.parametrize("case", sorted(GPC_CASES))
def test_cross_covariance_consistent_with_blocks(case):
    kernel, X = GPC_CASES[case]()
    Y = X[:7] * 1.3 + 0.1 * X[7:14]
    n = X.shape[0]
    K_all = kernel(np.vstack([X, Y]))
    KXY = kernel(X, Y)
    assert KXY.shape == (n, Y.shape[0])
    atol = 1e-12 * np.abs(K_all).max()
    np.testing.assert_allclose(KXY, K_all[:n, n:], rtol=1e-9, atol=atol)
    np.testing.assert_allclose(kernel(Y, X), KXY.T, rtol=1e-9, atol=atol)
    with pytest.raises(ValueError, match="only be evaluated when Y is None"):
        kernel(X, Y, eval_gradient=True)


def test_squared_distances_are_clipped_and_diagonal_exact():
    # duplicated, far-from-origin points: cancellation must not give K > variance
    X = 1e4 + np.repeat(_points([1e-3, 1e-3]), 2, axis=0)
    for kernel in [SquaredExponential(1e-3, 2.0), Matern(1e-3, 2.0, nu=2.5)]:
        K = kernel(X)
        assert K.max() <= 2.0
        np.testing.assert_array_equal(np.diag(K), 2.0)
        np.testing.assert_array_equal(K, K.T)
        np.testing.assert_allclose(K[0::2, 1::2].diagonal(), 2.0, rtol=1e-12)


# ---------------------------------------------------------------------------
# Agreement with scikit-learn
# ---------------------------------------------------------------------------


def _check_same(gpc_kernel, sk_kernel, X, Y, perm):
    """Same K(X), K(X, Y), diag and gradient (theta permuted by ``perm``)."""
    K1, G1 = gpc_kernel(X, eval_gradient=True)
    K2, G2 = sk_kernel(X, eval_gradient=True)
    np.testing.assert_allclose(K1, K2, rtol=1e-10, atol=1e-14 * np.abs(K2).max())
    np.testing.assert_allclose(
        gpc_kernel(X, Y), sk_kernel(X, Y), rtol=1e-10, atol=1e-14 * np.abs(K2).max()
    )
    np.testing.assert_allclose(gpc_kernel.diag(X), sk_kernel.diag(X), rtol=1e-12)
    np.testing.assert_allclose(gpc_kernel.theta, sk_kernel.theta[perm], rtol=1e-14)
    np.testing.assert_allclose(
        G1, G2[:, :, perm], rtol=1e-9, atol=1e-12 * np.abs(G2).max()
    )
    dK = _dK(X.shape[0])
    np.testing.assert_allclose(
        contract(gpc_kernel, X, dK), contract(sk_kernel, X, dK)[perm], rtol=1e-9
    )


@pytest.mark.parametrize("ls", [0.3, [0.3, 2.0, 5.0]])
@pytest.mark.parametrize("var", [1e-2, 1e3])
def test_se_equals_constant_times_rbf(ls, var):
    X, Y = _points([0.3, 2.0, 5.0]), _points([0.3, 2.0, 5.0], n=5, seed=3)
    d = np.size(ls)
    perm = np.r_[1 : d + 1, 0]  # sklearn: [c, l...]; gpc: [l..., variance]
    _check_same(SquaredExponential(ls, var), sk.ConstantKernel(var) * sk.RBF(ls), X, Y, perm)


@pytest.mark.parametrize("nu", [1.5, 2.5])
@pytest.mark.parametrize("ls", [0.3, [0.3, 2.0, 5.0]])
def test_matern_equals_constant_times_sklearn_matern(nu, ls):
    X, Y = _points([0.3, 2.0, 5.0]), _points([0.3, 2.0, 5.0], n=5, seed=3)
    d = np.size(ls)
    perm = np.r_[1 : d + 1, 0]
    _check_same(
        Matern(ls, 7.0, nu=nu), sk.ConstantKernel(7.0) * sk.Matern(ls, nu=nu), X, Y, perm
    )


def test_linear_constant_white_polynomial_equal_sklearn():
    X, Y = _points([1.0, 2.0]), _points([1.0, 2.0], n=5, seed=3)
    _check_same(
        Linear(3.0),
        sk.ConstantKernel(3.0) * sk.DotProduct(0.0, sigma_0_bounds="fixed"),
        X,
        Y,
        [0],
    )
    np.testing.assert_allclose(Linear()(X, Y), sk.DotProduct(0.0)(X, Y), rtol=1e-12)
    _check_same(Constant(3.0), sk.ConstantKernel(3.0), X, Y, [0])
    K1, G1 = White(0.3)(X, eval_gradient=True)
    K2, G2 = sk.WhiteKernel(0.3)(X, eval_gradient=True)
    np.testing.assert_array_equal(K1, K2)
    np.testing.assert_array_equal(G1, G2)
    np.testing.assert_array_equal(White(0.3)(X, Y), sk.WhiteKernel(0.3)(X, Y))
    np.testing.assert_array_equal(White(0.3)(X, X), sk.WhiteKernel(0.3)(X, X))
    np.testing.assert_array_equal(White(0.3).diag(X), sk.WhiteKernel(0.3).diag(X))
    # (1 + x.x'/m)^p = m^-p (m + x.x')^p
    for p, m in [(1, 0.5), (2, 3.0), (3, 0.2)]:
        ref = sk.ConstantKernel(m**-p) * sk.DotProduct(np.sqrt(m)) ** p
        np.testing.assert_allclose(Polynomial(p, m)(X), ref(X), rtol=1e-10)
        np.testing.assert_allclose(Polynomial(p, m)(X, Y), ref(X, Y), rtol=1e-10)
        np.testing.assert_allclose(Polynomial(p, m).diag(X), ref.diag(X), rtol=1e-10)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_gpc_kernel_in_sklearn_regressor():
    X = _points([1.0, 2.0], n=25)
    y = np.sin(X[:, 0]) + 0.1 * X[:, 1]
    kernel = paper_kernel([1.0, 1.0], 1.0, 0.1, 1e-2)
    gpr = GaussianProcessRegressor(kernel=kernel, random_state=0).fit(X, y)
    assert isinstance(gpr.kernel_, Sum)
    assert np.all(np.isfinite(gpr.kernel_.theta))
    assert gpr.log_marginal_likelihood_value_ > gpr.log_marginal_likelihood(kernel.theta)
    mean, std = gpr.predict(X[:3], return_std=True)
    assert mean.shape == std.shape == (3,)


# ---------------------------------------------------------------------------
# scikit-learn machinery: clone, pickle, params, theta
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(GPC_CASES))
def test_clone_pickle_params_theta_round_trips(case):
    kernel, X = GPC_CASES[case]()
    K = kernel(X)
    for other in (clone(kernel), pickle.loads(pickle.dumps(kernel))):
        assert type(other) is type(kernel)
        assert other == kernel
        assert other is not kernel
        np.testing.assert_array_equal(other(X), K)
        np.testing.assert_array_equal(other.theta, kernel.theta)
        np.testing.assert_array_equal(other.bounds, kernel.bounds)
    params = kernel.get_params()
    rebuilt = type(kernel)(**kernel.get_params(deep=False))
    assert rebuilt == kernel
    assert set(params) >= set(kernel.get_params(deep=False))
    same = kernel.clone_with_theta(kernel.theta)
    assert type(same) is type(kernel)
    np.testing.assert_allclose(same(X), K, rtol=1e-13, atol=1e-13 * np.abs(K).max())
    theta2 = kernel.theta + 0.1
    k2 = kernel.clone_with_theta(theta2)
    np.testing.assert_allclose(k2.theta, theta2, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(kernel.theta, theta2 - 0.1)  # original untouched
    assert kernel.n_dims == kernel.theta.size == kernel.bounds.shape[0] or kernel.n_dims == 0
    assert type(kernel).__name__ in repr(kernel) or isinstance(kernel, (Sum, Product, Exponentiation))


def test_set_params_and_hyperparameters():
    k = SquaredExponential([1.0, 2.0], 3.0)
    assert [h.name for h in k.hyperparameters] == ["length_scale", "variance"]
    assert k.hyperparameter_length_scale.n_elements == 2
    assert k.anisotropic and not SquaredExponential([2.0]).anisotropic
    k.set_params(variance=5.0)
    np.testing.assert_allclose(k.theta[-1], np.log(5.0))
    np.testing.assert_allclose(k.bounds, np.log([[1e-5, 1e5]] * 3))
    s = paper_kernel([1.0, 2.0], 3.0, 0.5)
    s.set_params(k1__k1__variance=4.0)
    assert s.k1.k1.variance == 4.0
    assert "k2__noise_bounds" in s.get_params()
    assert s.k2.hyperparameter_noise.fixed
    assert SquaredExponential().is_stationary() and Matern().is_stationary()
    assert not Linear().is_stationary() and not Polynomial().is_stationary()
    assert not (SquaredExponential() + Linear()).is_stationary()


def test_repr():
    assert repr(SquaredExponential([1.0, 2.0], 3.0)) == (
        "SquaredExponential(length_scale=[1, 2], variance=3)"
    )
    assert repr(Matern(0.5, nu=2.5)) == "Matern(length_scale=0.5, variance=1, nu=2.5)"
    assert repr(2.0 * Linear()) == "Constant(value=2) * Linear(variance=1)"
    assert repr(Polynomial(3, 2.0) + White(0.1)) == (
        "Polynomial(degree=3, scale=2) + White(noise=0.1)"
    )


# ---------------------------------------------------------------------------
# Operators
# ---------------------------------------------------------------------------


def test_operators_build_gpc_composites():
    se = SquaredExponential(0.5)
    for k in (2.0 * se, se * 2.0, np.float64(2.0) * se, se * np.float64(2.0)):
        assert type(k) is Product
        consts = [c for c in (k.k1, k.k2) if type(c) is Constant]
        assert len(consts) == 1 and consts[0].value == 2.0
    assert (2.0 * se).k1 == Constant(2.0)
    assert (se * 2.0).k2 == Constant(2.0)
    for k in (se + 1.0, 1.0 + se, np.float64(1.0) + se, se + se):
        assert type(k) is Sum
    assert (1 + se).k1 == Constant(1.0)
    assert type(se * Linear()) is Product
    assert type(se**2) is Exponentiation
    assert type(se + sk.RBF()) is Sum and type(se * sk.RBF()) is Product
    assert type(sk.RBF() + se) is sk.Sum  # scikit-learn's operator wins on the left
    X = _iso(0.5)
    np.testing.assert_allclose((2.0 * se)(X), 2.0 * se(X), rtol=1e-15)
    np.testing.assert_allclose((se + 1.0)(X), se(X) + 1.0, rtol=1e-15)
    np.testing.assert_allclose((se**2)(X), se(X) ** 2, rtol=1e-15)
    # composites are scikit-learn composites too
    assert isinstance(se + se, sk.Sum) and isinstance(se * se, sk.Product)
    assert isinstance(se**2, sk.Exponentiation)
    with pytest.raises(TypeError):
        se + "a"
    with pytest.raises(TypeError):
        se * [1.0, 2.0]


def test_scaled_kernel_contraction_is_fast_path(monkeypatch):
    # 2.0 * SE must never build the gradient tensor
    def boom(*args, **kwargs):
        raise AssertionError("fallback used")

    monkeypatch.setattr(_base, "_contract_fallback", boom)
    X = _ard()
    dK = _dK(X.shape[0])
    kernels = [
        2.0 * SquaredExponential(ARD),
        paper_kernel(ARD),
        sk.ConstantKernel(2.0) * sk.RBF(ARD) + sk.WhiteKernel(),
        (Matern(ARD) + Linear()) ** 2,
        sk.DotProduct() ** 2 * sk.Matern(ARD, nu=0.5),
    ]
    for k in kernels:
        assert contract(k, X, dK).shape == (k.n_dims,)


# ---------------------------------------------------------------------------
# Errors, validation, helpers
# ---------------------------------------------------------------------------


def test_bad_inputs_raise_clear_errors():
    X = _points([1.0, 2.0])
    dK = _dK(X.shape[0])
    with pytest.raises(ValueError, match="3 length scales.*2 features"):
        SquaredExponential([1.0, 2.0, 3.0])(X)
    with pytest.raises(ValueError, match="3 length scales.*2 features"):
        contract(Matern([1.0, 2.0, 3.0]), X, dK)
    with pytest.raises(ValueError, match="length scales"):
        contract(sk.RBF([1.0, 2.0, 3.0]), X, dK)
    for bad in (0.0, -1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="> 0"):
            SquaredExponential(variance=bad)
        with pytest.raises(ValueError, match="> 0"):
            SquaredExponential(length_scale=[1.0, bad])
        with pytest.raises(ValueError, match="> 0"):
            Constant(bad)
        with pytest.raises(ValueError, match="> 0"):
            Polynomial(2, bad)
    with pytest.raises(TypeError):
        Linear("big")
    k = SquaredExponential()
    k.set_params(variance=-1.0)  # bypasses __init__; caught at use
    with pytest.raises(ValueError, match="variance"):
        k(X)
    with pytest.raises(ValueError, match="2-D"):
        SquaredExponential()(np.arange(5.0))
    with pytest.raises(ValueError, match="2-D"):
        contract(SquaredExponential(), np.arange(5.0), np.eye(5))
    with pytest.raises(ValueError, match="2-D"):
        contract(sk.RBF(), np.arange(5.0), np.eye(5))
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SquaredExponential()(Xn)
    with pytest.raises(ValueError, match="NaN"):
        contract(SquaredExponential(), Xn, dK)
    dKn = dK.copy()
    dKn[2, 2] = np.nan
    with pytest.raises(ValueError, match="dK contains NaN"):
        contract(SquaredExponential(), X, dKn)
    with pytest.raises(ValueError, match="dK must have shape"):
        contract(SquaredExponential(), X, dK[:-1, :-1])
    with pytest.raises(ValueError, match="K must have shape"):
        contract(SquaredExponential(), X, dK, K=np.eye(3))
    with pytest.raises(ValueError, match="same number of features"):
        SquaredExponential()(X, X[:, :1])
    with pytest.raises(ValueError, match="nu must be 1.5 or 2.5"):
        Matern(nu=0.5)
    for deg in (0, 1.5, -2, True):
        with pytest.raises(ValueError, match="degree"):
            Polynomial(deg)


def test_as_kernel():
    k = SquaredExponential()
    assert as_kernel(k) is k
    r = sk.RBF()
    assert as_kernel(r) is r
    with pytest.raises(TypeError, match="did you mean SquaredExponential()"):
        as_kernel(SquaredExponential)
    for bad in (1.0, "rbf", lambda x, y: x @ y.T, None):
        with pytest.raises(TypeError, match="scikit-learn kernel"):
            as_kernel(bad)
    with pytest.raises(TypeError, match="scikit-learn kernel"):
        contract(np.eye(3), np.eye(3), np.eye(3))
    with pytest.raises(TypeError, match="scikit-learn kernel"):
        Sum(SquaredExponential(), 2.0)


def test_is_psd_by_construction():
    yes = [
        SquaredExponential(),
        paper_kernel([1.0, 2.0]),
        2.0 * Matern() + Polynomial(3) * Linear(),
        SquaredExponential() ** 0.5,
        sk.RBF() * sk.Matern(nu=0.7) + sk.WhiteKernel(),
        sk.RationalQuadratic() ** 1.5,
        sk.ExpSineSquared() + sk.DotProduct() ** 3,
        sk.PairwiseKernel(metric="laplacian"),
        sk.ConstantKernel(2.0),
    ]
    no = [
        _UserKernel(),
        sk.DotProduct() ** 0.5,
        Linear() ** 1.5,
        sk.PairwiseKernel(metric="sigmoid"),
        sk.PairwiseKernel(metric=lambda x, y: float(x @ y)),
        sk.ConstantKernel(-1.0),
        sk.RBF() + _UserKernel(),
    ]
    for k in yes:
        assert is_psd_by_construction(k) is True, k
    for k in no:
        assert is_psd_by_construction(k) is False, k
    with pytest.raises(TypeError):
        is_psd_by_construction("rbf")


def test_public_api_is_documented():
    for name in gk.__all__:
        obj = getattr(gk, name)
        assert obj.__doc__, name


def test_contract_check_finite_false_skips_the_matrix_checks():
    """``check_finite=False`` leaves out the passes over dK and K: a NaN then
    gives a NaN gradient instead of the ValueError of the default."""
    X = np.array([[0.0, 0.0], [1.0, 2.0], [0.5, -1.0]])
    kernel = SquaredExponential(length_scale=[1.0, 2.0])
    dK = np.ones((3, 3))
    np.testing.assert_array_equal(contract(kernel, X, dK, check_finite=False),
                                  contract(kernel, X, dK))
    dK[0, 1] = np.nan
    with pytest.raises(ValueError, match="dK contains NaN"):
        contract(kernel, X, dK)
    assert np.isnan(contract(kernel, X, dK, check_finite=False)).any()


@pytest.mark.parametrize("kernel", [
    sk.RBF(1.5),
    sk.RBF([0.5, 1.0, 2.0]),
    sk.ConstantKernel(3.0) * sk.RBF([0.5, 1.0, 2.0]),
    sk.RBF(0.7) * sk.ConstantKernel(0.2),
    gk.SquaredExponential([1.0, 2.0, 0.5], variance=2.0),
    sk.RBF(1.0) + sk.WhiteKernel(0.1),
])
def test_covariance_matrix_equals_the_kernels_own(kernel):
    X = np.random.RandomState(3).randn(70, 3) * [1.0, 10.0, 0.1]
    K = gk.covariance_matrix(kernel, X)
    np.testing.assert_allclose(K, kernel(X), rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(K, K.T)
    K, exact = _matrices._covariance_matrix(kernel, X)
    assert exact == (_matrices._se_form(kernel) is not None)


def test_covariance_matrix_is_checked_where_not_exact():
    # Non-finite inputs, a non-finite variance, or ARD with the wrong number of
    # features: the matrix is left to the caller's checks, or refused as the
    # kernel itself would.
    X = np.random.RandomState(4).randn(10, 2)
    Xbad = X.copy()
    Xbad[3, 1] = np.nan
    assert not _matrices._covariance_matrix(sk.RBF(1.0), Xbad)[1]
    infinite = sk.ConstantKernel(np.inf) * sk.RBF(1.0)
    assert not _matrices._covariance_matrix(infinite, X)[1]
    with pytest.raises(ValueError, match="length scales"):
        gk.covariance_matrix(sk.RBF([1.0, 2.0, 3.0]), X)
