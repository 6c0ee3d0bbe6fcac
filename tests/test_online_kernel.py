"""The compiled ADF sweep (gpc._online.adf_sweep) against a direct numpy recursion."""

import numpy as np
import pytest
from scipy.stats import norm

from gpc import _online
from gpc._model import LikelihoodModel, likelihood_model
from gpc.likelihoods import get_likelihood


def _kernel(n, seed=0, d=2):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return np.asfortranarray(1.7 * np.exp(-0.5 * sq / 0.9))


def _labels(n, seed=0):
    return np.where(np.random.RandomState(seed + 1).rand(n) < 0.5, -1.0, 1.0)


def _reference(K, y, lik, order, alpha=None, C=None):
    """The recursion on full n-vectors and n x n matrices, one example at a time."""
    n = K.shape[0]
    alpha = np.zeros(n) if alpha is None else alpha.copy()
    C = np.zeros((n, n)) if C is None else C.copy()
    logz, dpar, hs = [], 0.0, []
    for j in order:
        k = K[:, j]
        u = C @ k
        m = k @ alpha
        v = max(K[j, j] + k @ u, 0.0)
        lz, g, h, dp = (float(np.ravel(a)[0]) for a in lik.gauss_moments(y[j], m, v))
        s = u.copy()
        s[j] += 1.0
        alpha += g * s
        C += h * np.outer(s, s)
        logz.append(lz)
        dpar += dp
        hs.append(h)
    return alpha, C, np.array(logz), dpar, np.array(hs)


def _run(K, y, lik, order, alpha=None, C=None, start=0, t_active=0, logz=None,
         block=_online.DEFAULT_BLOCK):
    n = K.shape[0]
    alpha = np.zeros(n) if alpha is None else alpha
    C = np.zeros((n, n), order="F") if C is None else C
    logz = np.full(len(order), np.nan) if logz is None else logz
    out = _online.adf_sweep(K, y, likelihood_model(lik), alpha, C,
                            np.asarray(order, dtype=np.int32), start, t_active, logz,
                            block)
    return out, alpha, C, logz


def _assert_state(alpha, C, logz, ref, atol=1e-12):
    a_ref, C_ref, lz_ref = ref[:3]
    np.testing.assert_allclose(alpha, a_ref, rtol=0, atol=atol)
    # Only the lower triangle of C is maintained.
    np.testing.assert_allclose(np.tril(C), np.tril(C_ref), rtol=0, atol=atol)
    np.testing.assert_allclose(logz, lz_ref, rtol=0, atol=atol)


LIKS = ["probit", "logit"]


@pytest.mark.parametrize("name", LIKS)
@pytest.mark.parametrize("block", [1, 4, 64])
def test_fresh_sweep_matches_reference(name, block):
    n = 30
    K, y, lik = _kernel(n), _labels(n), get_likelihood(name)
    order = np.arange(n)
    (st, done, t, slz, sdp), alpha, C, logz = _run(K, y, lik, order, block=block)
    ref = _reference(K, y, lik, order)
    assert (st, done, t) == (_online.STATUS_OK, n, n)
    _assert_state(alpha, C, logz, ref)
    assert slz == pytest.approx(ref[2].sum(), abs=1e-12)
    assert np.all(logz < 0)
    # The state is not trivial: every example moved alpha and C.
    assert np.all(alpha != 0) and np.all(np.diag(C) < 0)
    # The upper triangle of C is never written.
    assert np.all(np.triu(C, 1) == 0)


@pytest.mark.parametrize("name", LIKS)
def test_split_calls_continue_exactly(name):
    n, mid = 30, 13
    K, y, lik = _kernel(n, 1), _labels(n, 1), get_likelihood(name)
    order = np.arange(n, dtype=np.int32)
    (st, done, t, s_all, _), a_all, C_all, lz_all = _run(K, y, lik, order)
    assert st == _online.STATUS_OK
    # First call: the first `mid` examples only (a shorter order array).
    lz = np.full(n, np.nan)
    (st1, done1, t1, s1, _), alpha, C, _ = _run(K, y, lik, order[:mid], logz=lz)
    assert (st1, done1, t1) == (_online.STATUS_OK, mid, mid)
    assert np.all(np.isnan(lz[mid:]))
    assert np.all(alpha[mid:] == 0) and np.all(C[mid:, :] == 0)
    (st2, done2, t2, s2, _), *_ = _run(K, y, lik, order, alpha, C, start=mid,
                                       t_active=t1, logz=lz)
    assert (st2, done2, t2) == (_online.STATUS_OK, n - mid, n)
    _assert_state(alpha, C, lz, (a_all, C_all, lz_all))
    assert s1 + s2 == pytest.approx(s_all, abs=1e-12)


@pytest.mark.parametrize("name", LIKS)
def test_reuse_sweep(name):
    n = 30
    K, y, lik = _kernel(n, 2), _labels(n, 2), get_likelihood(name)
    order = np.arange(n)
    (_, _, t, _, _), alpha, C, _ = _run(K, y, lik, order)
    a1, C1, *_ = _reference(K, y, lik, order)
    C_full = np.tril(C) + np.tril(C, -1).T
    (st, done, t2, slz, _), alpha, C, logz = _run(K, y, lik, order, alpha, C,
                                                  t_active=t, block=7)
    ref = _reference(K, y, lik, order, a1, C1)
    assert (st, done, t, t2) == (_online.STATUS_OK, n, n, n)
    _assert_state(alpha, C, logz, ref)
    # The second sweep really used the first one's state.
    assert np.abs(logz - _reference(K, y, lik, order)[2]).max() > 1e-3
    # ... and it is the same as continuing from the symmetric matrix.
    assert np.abs(C_full - C_full.T).max() == 0


@pytest.mark.parametrize("name", LIKS)
def test_random_order_with_repeats(name):
    n = 30
    K, y, lik = _kernel(n, 3), _labels(n, 3), get_likelihood(name)
    rng = np.random.RandomState(4)
    order = np.concatenate([rng.permutation(n), rng.randint(0, n, 11)])
    (st, done, t, _, _), alpha, C, logz = _run(K, y, lik, order, block=5)
    ref = _reference(K, y, lik, order)
    assert (st, done, t) == (_online.STATUS_OK, len(order), n)
    _assert_state(alpha, C, logz, ref)
    # A partial random order: the block size is the largest index seen plus one.
    part = order[:6]
    (_, _, t6, _, _), alpha, C, _ = _run(K, y, lik, part)
    assert t6 == part.max() + 1
    assert np.all(alpha[t6:] == 0) and np.all(C[t6:, :] == 0)


def test_noisy_threshold_with_positive_curvature():
    # Not log-concave: some h = d2 log Z/dm2 > 0 (mislabelled points far out), which
    # the update applies with a rank-k update of the opposite sign.
    n = 30
    K, y, lik = _kernel(n, 0) * 20.0, _labels(n, 0), get_likelihood("noisy_threshold")
    K = np.asfortranarray(K)
    order = np.concatenate([np.arange(n), np.arange(n)])
    (st, done, t, slz, sdp), alpha, C, logz = _run(K, y, lik, order, block=8)
    ref = _reference(K, y, lik, order)
    assert np.sum(ref[4] > 0) >= 3 and np.sum(ref[4] < 0) >= 3
    assert (st, done, t) == (_online.STATUS_OK, 2 * n, n)
    _assert_state(alpha, C, logz, ref, atol=1e-11)
    assert slz == pytest.approx(ref[2].sum(), rel=1e-12)
    assert sdp == pytest.approx(ref[3], rel=1e-12) and sdp != 0


def test_block_size_does_not_matter():
    n = 40
    K, y, lik = _kernel(n, 5, d=3), _labels(n, 5), get_likelihood("probit")
    order = np.random.RandomState(6).permutation(n)
    outs = [_run(K, y, lik, order, block=b) for b in (1, 2, 9, 40, 1000)]
    for out in outs[1:]:
        _assert_state(out[1], out[2], out[3], outs[0][1:], atol=1e-12)


@pytest.mark.parametrize("y1", [-1.0, 1.0])
def test_single_point_closed_form(y1):
    k = 0.7
    K = np.asfortranarray([[k]])
    lik = get_likelihood("probit")
    (st, done, t, slz, _), alpha, C, logz = _run(K, np.array([y1]), lik, [0])
    # m = 0, v = k: Z = Phi(0), g = y N(0) / (Phi(0) sqrt(1 + k)),
    # h = -(N(0)/Phi(0))^2 / (1 + k).
    r = norm.pdf(0) / norm.cdf(0)
    assert (st, done, t) == (_online.STATUS_OK, 1, 1)
    assert logz[0] == pytest.approx(np.log(0.5), rel=1e-15)
    assert slz == logz[0]
    assert alpha[0] == pytest.approx(y1 * r / np.sqrt(1 + k), rel=1e-14)
    assert C[0, 0] == pytest.approx(-r * r / (1 + k), rel=1e-14)


def test_gaussian_likelihood_is_exact_regression():
    # With the Gaussian likelihood ADF is exact: alpha = (K + s2 I)^{-1} y,
    # C = -(K + s2 I)^{-1}, and the sum of log predictive densities is the log
    # marginal likelihood.
    n, s2 = 25, 0.3
    K = _kernel(n, 7)
    y = np.random.RandomState(8).randn(n)
    lik = _gaussian(s2)
    (st, done, t, slz, sdp), alpha, C, _ = _run(K, y, lik, np.arange(n), block=6)
    A = K + s2 * np.eye(n)
    Ainv = np.linalg.inv(A)
    assert st == _online.STATUS_OK
    np.testing.assert_allclose(alpha, Ainv @ y, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(np.tril(C), -np.tril(Ainv), rtol=1e-9, atol=1e-10)
    _, logdet = np.linalg.slogdet(A)
    lml = -0.5 * (y @ Ainv @ y + logdet + n * np.log(2 * np.pi))
    assert slz == pytest.approx(lml, rel=1e-10)
    # d log Z / d s2 summed matches the reference recursion.
    assert sdp == pytest.approx(_reference(K, y, lik, np.arange(n))[3], rel=1e-10)


def _gaussian(s2):
    return get_likelihood("gaussian").with_params([s2])


def test_nonfinite_stops_with_state_of_the_processed_examples():
    n = 20
    K, y, lik = _kernel(n, 9), _labels(n, 9), get_likelihood("probit")
    K[6, 6] = np.nan
    order = np.arange(n)
    logz = np.full(n, np.nan)
    (st, done, t, slz, _), alpha, C, _ = _run(K, y, lik, order, logz=logz, block=4)
    ref = _reference(K, y, lik, order[:6])
    assert (st, done, t) == (_online.STATUS_NONFINITE, 6, 6)
    _assert_state(alpha, C, logz[:6], ref)
    assert np.all(np.isnan(logz[6:]))
    assert slz == pytest.approx(ref[2].sum(), abs=1e-12)


def test_negative_variance_is_an_error():
    # K is not positive semi-definite: after example 0, v_1 = 1 - 4 (2/pi) / 2 < 0.
    K = np.asfortranarray([[1.0, 2.0], [2.0, 1.0]])
    lik = get_likelihood("probit")
    (st, done, t, _, _), alpha, C, logz = _run(K, np.array([1.0, 1.0]), lik, [0, 1])
    assert (st, done, t) == (_online.STATUS_NEGATIVE_VARIANCE, 1, 1)
    assert alpha[1] == 0 and np.isnan(logz[1])


@pytest.mark.parametrize("delta, ok", [(1e-10, True), (1e-6, False)])
def test_variance_tolerance(delta, ok):
    # K = [[1, 1 + delta], [1 + delta, 1]] is indefinite by ~delta; with a noise-free
    # Gaussian likelihood v_1 = 1 - (1 + delta)^2 ~ -2 delta: within the rounding
    # tolerance (~1.5e-8 of the terms of v, ~2 here) it is clamped to 0, beyond it
    # it is an error.
    K = np.asfortranarray([[1.0, 1.0 + delta], [1.0 + delta, 1.0]])
    s2 = 1e-12
    logz = np.zeros(2)
    st, done, *_ = _online.adf_sweep(K, np.array([0.5, 0.5]),
                                     LikelihoodModel(_gaussian(1.0).code,
                                                     np.array([s2]), np.zeros(0),
                                                     np.zeros(0)),
                                     np.zeros(2), np.zeros((2, 2), order="F"),
                                     np.arange(2, dtype=np.int32), 0, 0, logz)
    if ok:
        assert (st, done) == (_online.STATUS_OK, 2)
        # v clamped to 0: Z = N(y1; m1, s2) with m1 = (1 + delta) y0 / (1 + s2).
        m1 = (1.0 + delta) * 0.5 / (1.0 + s2)
        assert logz[1] == pytest.approx(
            -0.5 * (np.log(2 * np.pi * s2) + (0.5 - m1) ** 2 / s2), rel=1e-6)
    else:
        assert (st, done) == (_online.STATUS_NEGATIVE_VARIANCE, 1)


def test_bad_arguments():
    n = 5
    K, y, lik = _kernel(n), _labels(n), get_likelihood("probit")
    with pytest.raises(ValueError, match="order"):
        _run(K, y, lik, [0, 5])
    with pytest.raises(ValueError, match="t_active"):
        _run(K, y, lik, [0], t_active=6)
    with pytest.raises(ValueError, match="block"):
        _run(K, y, lik, [0], block=0)
    with pytest.raises(ValueError, match="start"):
        _run(K, y, lik, [0], start=2)
    with pytest.raises(ValueError, match="par"):
        _online.adf_sweep(K, y, LikelihoodModel(2, np.zeros(0), lik.quad_x,
                                                lik.quad_logw), np.zeros(n),
                          np.zeros((n, n), order="F"), np.arange(n, dtype=np.int32), 0,
                          0, np.zeros(n))
    # Nothing left to process.
    out, alpha, C, _ = _run(K, y, lik, [0, 1], start=2, t_active=3)
    assert out == (_online.STATUS_OK, 0, 3, 0.0, 0.0)


def test_rank_one_baseline():
    n = 7
    rng = np.random.RandomState(0)
    s = rng.randn(n)
    C = np.zeros((n, n), order="F")
    _online.rank_one_baseline(C, s, n, 0.5)
    # Entry (i, j) of the lower triangle gets n - max(i, j) updates.
    i, j = np.indices((n, n))
    expect = 0.5 * (n - np.maximum(i, j)) * np.outer(s, s)
    np.testing.assert_allclose(np.tril(C), np.tril(expect), rtol=1e-14)
    assert np.all(np.triu(C, 1) == 0)


@pytest.mark.parametrize("n", [1, 7, 64, 65, 200])
def test_fill_upper_mirrors_the_lower_triangle(n):
    rng = np.random.RandomState(n)
    C = np.asfortranarray(rng.randn(n, n))
    lower = np.tril(C)
    _online.fill_upper(C)
    np.testing.assert_array_equal(C, lower + np.tril(lower, -1).T)
