"""The softmax predictive, ``Softmax.predict``: its quasi-Monte Carlo rule with the
sum-to-one control variate against an independent quadrature, its exact cases, the
validity of its rows at extremes, and its smoothness in the mean."""

import numpy as np
import pytest
from scipy.special import softmax

from gpc.likelihoods import Softmax, get_likelihood
from gpc.likelihoods._multinomial import _combine


def _trapezoid(mean, cov, step=0.3, reach=8.5):
    """E[softmax(f)] and E[d softmax(f) / d f] for f ~ N(mean, cov), by the
    trapezoidal rule on a product grid over the principal axes of the covariance
    orthogonal to (1, ..., 1), nodes at most ``step`` apart in f and out to
    ``reach`` standard deviations.  The integrand is analytic (the softmax's poles
    are pi away from the real axis), so the rule converges geometrically."""
    C = mean.size
    basis = np.linalg.qr(np.eye(C) - 1.0 / C)[0][:, :C - 1]
    lam, V = np.linalg.eigh(basis.T @ cov @ basis)
    axes = basis @ V * np.sqrt(np.maximum(lam, 0.0))
    grids, weights = [], []
    for var in lam:
        dz = min(0.25, step / np.sqrt(max(var, 1e-300)))
        z = np.arange(-reach, reach + dz / 2, dz)
        w = np.exp(-0.5 * z * z)
        grids.append(z)
        weights.append(w / w.sum())
    Z = np.stack(np.meshgrid(*grids, indexing="ij"), -1).reshape(-1, C - 1)
    W = weights[0]
    for w in weights[1:]:
        W = np.multiply.outer(W, w)
    W = W.reshape(-1)
    S = softmax(mean + Z @ axes.T, axis=1)
    jac = np.einsum("n,nc,ck->ck", W, S, np.eye(C)) - np.einsum("n,nc,nk->ck", W, S, S)
    return W @ S, jac


def _gaussian(rng, C, scale):
    A = rng.normal(size=(C, C)) * scale
    return rng.normal(size=C) * 3, A @ A.T / C


@pytest.mark.parametrize("C, scale", [(3, 1.0), (3, 5.5), (3, 10.0), (4, 1.0), (4, 2.0)])
def test_predict_matches_an_independent_quadrature(C, scale):
    # Latent variances around scale^2 (30 and 100 at scale 5.5 and 10, as in
    # the digits fit).  The default points keep the error well inside the
    # promised 1e-3, and 2^16 points converge to the quadrature.
    rng = np.random.default_rng(100 + C + int(scale))
    for _ in range(4):
        mean, cov = _gaussian(rng, C, scale)
        ref = _trapezoid(mean, cov)[0]
        assert ref.sum() == pytest.approx(1.0, abs=1e-12)
        p = Softmax().predict(mean[None], cov[None])[0]
        np.testing.assert_allclose(p, ref, atol=3e-4)
        p16 = Softmax(n_points=1 << 16).predict(mean[None], cov[None])[0]
        np.testing.assert_allclose(p16, ref, atol=2e-5)


@pytest.mark.parametrize("n_points", [1, 256])
def test_two_classes_give_the_logistic_normal_integral(n_points):
    # The one direction is integrated exactly; more points change nothing, and
    # the control variate (the two classes' integrands sum to 1 at every point)
    # has nothing to correct.
    rng = np.random.default_rng(8)
    mean = rng.normal(size=(12, 2)) * 3
    A = rng.normal(size=(12, 2, 2)) * np.array([0.01, 1.0, 30.0, 3000.0] * 3)[:, None, None]
    cov = A @ A.transpose(0, 2, 1)
    p = Softmax(n_points=n_points).predict(mean, cov)
    d_var = cov[:, 0, 0] + cov[:, 1, 1] - 2 * cov[:, 0, 1]
    ref = get_likelihood("logit").predict(mean[:, 1] - mean[:, 0], d_var)
    np.testing.assert_allclose(p[:, 1], ref, atol=1e-7)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize("C", [3, 10, 20])
def test_vanishing_covariance_gives_the_softmax_of_the_mean(C):
    rng = np.random.default_rng(C)
    mean = rng.normal(size=(4, C)) * 4
    A = rng.normal(size=(4, C, C))
    for cov in (np.zeros((4, C, C)), 1e-24 * A @ A.transpose(0, 2, 1)):
        np.testing.assert_allclose(Softmax().predict(mean, cov), softmax(mean, axis=1),
                                   atol=1e-7)


def test_a_class_far_ahead_with_a_huge_variance():
    # The top class leads the others by 2000 (their exponentials relative to it
    # underflow at every point) and the covariance, rank one, moves it against
    # both others, f = mean + xi (e_0 - 1/3), xi ~ N(0, 1e8): then
    # f_0 - logsumexp(f_1, f_2) = 2000 - log 2 + xi exactly.
    C, var = 3, 1e8
    v = np.eye(C)[0] - 1.0 / C
    mean = np.array([[2000.0, 0.0, 0.0]])
    p = Softmax().predict(mean, var * np.outer(v, v)[None])[0]
    ref = get_likelihood("logit").predict(np.array([2000.0 - np.log(2.0)]),
                                          np.array([var]))[0]
    assert 0.5 < ref < 0.6
    assert p[0] == pytest.approx(ref, abs=1e-6)
    np.testing.assert_allclose(p[1:], 0.5 * (1.0 - ref), atol=1e-6)   # by symmetry


@pytest.mark.parametrize("C", [3, 5, 10, 20])
def test_rows_are_probabilities_at_extremes(C):
    rng = np.random.default_rng(30 + C)
    A = rng.normal(size=(C, C))
    means = [np.zeros(C), np.full(C, 5.0), rng.normal(size=C) * 1000,
             np.r_[3000.0, np.zeros(C - 1)], rng.normal(size=C)]
    covs = [1e8 * A @ A.T, np.ones((C, C)) * 1e6 + 1e-6 * np.eye(C), A @ A.T,
            1e6 * np.outer(A[0], A[0]), 1e-3 * np.eye(C)]
    mean = np.array([m for m in means for _ in covs])
    cov = np.array([c for _ in means for c in covs])
    p = Softmax().predict(mean, cov)
    assert np.all(np.isfinite(p)) and np.all(p >= 0) and np.all(p <= 1)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    # equal means and a covariance symmetric in the classes: equal probabilities
    np.testing.assert_allclose(p[len(covs) + 1], 1.0 / C, atol=1e-9)


def test_finite_differences_in_the_mean_are_smooth():
    # Central differences at steps 1e-3 and 1e-4 agree (a rule with noise of
    # size e in its values would differ by about e / 1e-4), and match the
    # derivative of the quadrature to the rule's accuracy.
    rng = np.random.default_rng(3)
    mean, cov = _gaussian(rng, 3, 3.0)
    jac = _trapezoid(mean, cov)[1]
    rule = Softmax()
    for k in range(3):
        d = []
        for h in (1e-3, 1e-4):
            step = h * np.eye(3)[k]
            d.append((rule.predict((mean + step)[None], cov[None])[0]
                      - rule.predict((mean - step)[None], cov[None])[0]) / (2 * h))
        np.testing.assert_allclose(d[0], d[1], atol=1e-6)
        np.testing.assert_allclose(d[1], jac[:, k], atol=2e-3)


def _saturated(beta):
    return beta / (1.0 + (beta / 4.0) ** 8) ** 0.125


def test_the_control_variate_cannot_amplify_the_tables_error():
    # Sums whose z = sum_c h_c - 1 is nearly a constant 1e-8 (a table's error,
    # not the rule's) give a regression slope near 0 / 0 (up to 1e7 here); the
    # correction stays within a few times that offset.
    n, C = 1024, 3
    rng = np.random.default_rng(2)
    h = rng.uniform(0.2, 0.4, size=(n, C))
    plain = h.mean(0) / h.mean(0).sum()
    for z in (np.full(n, 1e-8), 1e-8 + 1e-15 * (h[:, 0] - 0.3)):
        sums = np.r_[h.sum(0), (h * z[:, None]).sum(0), z.sum(), (z * z).sum()][None]
        assert np.abs(_combine(sums, n)[0] - plain).max() <= 1e-7


def test_the_control_variate_is_the_regression_on_the_sums_deviation():
    # With z varying, each class's average moves by its regression slope (on
    # z, with an intercept) times the average of z; here the slopes, which sum
    # to 1, are well below the saturation.
    n, C = 1024, 3
    rng = np.random.default_rng(4)
    h = rng.uniform(0.2, 0.4, size=(n, C))
    z = h.sum(1) - h.sum(1).mean() + 0.01
    sums = np.r_[h.sum(0), (h * z[:, None]).sum(0), z.sum(), (z * z).sum()][None]
    zc = z - z.mean()
    beta = np.linalg.lstsq(np.c_[np.ones(n), zc], h, rcond=None)[0][1]
    assert np.all(np.abs(beta) < 1) and beta.sum() == pytest.approx(1.0)
    ref = h.mean(0) - _saturated(beta) * z.mean()
    np.testing.assert_allclose(_combine(sums, n)[0], ref / ref.sum(), rtol=1e-10)
