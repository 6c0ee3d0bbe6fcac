"""Laplace inference at the K level: known answers, a dense reference, dK by finite
differences, warm starts, failure modes."""

import warnings

import numpy as np
import pytest
from scipy import optimize
from scipy.special import expit, log_ndtr, ndtr
from sklearn.exceptions import ConvergenceWarning

import gpc
from gpc import NotPositiveDefiniteError

# GPML's 5-point demonstration set (Rasmussen & Nickisch, GPML documentation).
X5 = np.array([[-1.07932, -1.83544], [1.15768, 2.91702], [3.26631, -3.85663],
               [1.79009, 0.11949], [-3.66051, 1.75159]])
Y5 = np.array([-1.0, 1.0, 1.0, 1.0, -1.0])


def se(X, ell=1.0, sf2=1.0, Z=None):
    Z = X if Z is None else Z
    d2 = ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    return sf2 * np.exp(-0.5 * d2 / ell ** 2)


def problem(n, seed, ell=1.0, sf2=1.0, d=2):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = np.where(X[:, 0] + 0.5 * rng.randn(n) > 0, 1.0, -1.0)
    return se(X, ell, sf2), y


def loglik(name, y, f):
    """Independent numpy log-likelihood and its first two derivatives."""
    z = y * f
    if name == "logit":
        p = expit(z)
        return -np.logaddexp(0, -z), y * (1 - p), -p * (1 - p)
    r = np.exp(-0.5 * z * z - log_ndtr(z)) / np.sqrt(2 * np.pi)
    return log_ndtr(z), y * r, -r * (z + r)


def dense_laplace(K, y, name):
    """Textbook Laplace with explicit inverses (only for small, well-posed K)."""
    n = len(y)
    Kinv = np.linalg.inv(K)
    f = np.zeros(n)
    for _ in range(200):
        lp, d1, d2 = loglik(name, y, f)
        W = -d2
        f_new = np.linalg.solve(Kinv + np.diag(W), W * f + d1)
        if np.max(np.abs(f_new - f)) < 1e-14:
            f = f_new
            break
        f = f_new
    lp, d1, d2 = loglik(name, y, f)
    W = -d2
    _, logdet = np.linalg.slogdet(np.eye(n) + np.sqrt(W)[:, None] * K * np.sqrt(W))
    return f, lp.sum() - 0.5 * f @ Kinv @ f - 0.5 * logdet


def test_gpml_five_point_probit():
    # Published: nlZ = 3.4990 and the mode below (GPML classification demo, SE kernel
    # with unit length scale and signal standard deviation, probit likelihood).
    res = gpc.infer(se(X5), Y5, method="laplace", likelihood="probit")
    assert res.info["converged"]
    assert -res.log_evidence == pytest.approx(3.4990, abs=5e-5)
    expected = [-0.50527, 0.51150, 0.50609, 0.51073, -0.50607]
    np.testing.assert_allclose(res.posterior.marginal_mean, expected, atol=6e-5)


@pytest.mark.parametrize("lik", ["probit", "logit"])
@pytest.mark.parametrize("ell,sf2", [(0.3, 1.0), (1.0, 5.0), (3.0, 0.1)])
def test_matches_dense_reference(lik, ell, sf2):
    K, y = problem(12, 0, ell, sf2)
    K += 1e-8 * np.eye(12)
    f_ref, lz_ref = dense_laplace(K, y, lik)
    res = gpc.infer(K, y, method="laplace", likelihood=lik)
    np.testing.assert_allclose(res.posterior.marginal_mean, f_ref, rtol=1e-8, atol=1e-10)
    assert res.log_evidence == pytest.approx(lz_ref, rel=1e-10)
    np.testing.assert_allclose(K @ res.posterior.alpha, f_ref, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("lik", ["probit", "logit"])
def test_n1_against_scalar_root(lik):
    # n = 1: the Laplace evidence is log p(y|f) - f^2/(2k) - log(1 + k W)/2 at the
    # maximiser of the first two terms, found here by a scalar root finder.
    for k, y in [(0.5, 1.0), (4.0, -1.0), (200.0, 1.0)]:
        obj = lambda f: -(loglik(lik, np.array([y]), np.array([f]))[0][0] - f * f / (2 * k))
        # The maximiser solves d log p/df = f / k (a root in [-k, k] since |d1| < 1).
        stationary = lambda f: loglik(lik, np.array([y]), np.array([f]))[1][0] - f / k
        f_hat = optimize.brentq(stationary, -k, k, xtol=1e-15, rtol=1e-15)
        W = -loglik(lik, np.array([y]), np.array([f_hat]))[2][0]
        expected = -obj(f_hat) - 0.5 * np.log1p(k * W)
        res = gpc.infer([[k]], [y], method="laplace", likelihood=lik)
        assert res.posterior.marginal_mean[0] == pytest.approx(f_hat, rel=1e-7)
        assert res.log_evidence == pytest.approx(expected, rel=1e-10)


def _fd_directional(K, y, lik, E, h=1e-6):
    lz = lambda t: gpc.infer(K + t * E, y, method="laplace", likelihood=lik,
                             compute_gradient=False).log_evidence
    return (lz(h) - lz(-h)) / (2 * h)


@pytest.mark.parametrize("lik", ["probit", "logit"])
@pytest.mark.parametrize("ell", [1e-2, 1.0, 1e2])
@pytest.mark.parametrize("sf2", [1e-2, 1.0, 1e3])
def test_dK_matches_finite_differences(lik, ell, sf2):
    K, y = problem(15, 1, ell, sf2)
    K += 1e-6 * sf2 * np.eye(15)
    res = gpc.infer(K, y, method="laplace", likelihood=lik)
    rng = np.random.RandomState(2)
    for _ in range(3):
        A = rng.randn(15, 15)
        E = (A + A.T) * sf2 * 1e-2
        analytic = np.sum(res.dK * E)
        numeric = _fd_directional(K, y, lik, E, h=1e-6)
        assert analytic == pytest.approx(numeric, rel=1e-5, abs=1e-8)
    np.testing.assert_array_equal(res.dK, res.dK.T)


def test_dK_elementwise_small():
    K, y = problem(4, 3, 1.0, 2.0)
    res = gpc.infer(K, y, method="laplace", likelihood="logit")
    for i in range(4):
        for j in range(i + 1):
            E = np.zeros((4, 4))
            E[i, j] = E[j, i] = 1.0
            expected = _fd_directional(K, y, "logit", E)
            assert (res.dK[i, j] * (2 if i != j else 1)) == pytest.approx(
                expected, rel=1e-6, abs=1e-10)


def test_warm_start_reaches_the_same_mode_faster():
    K, y = problem(60, 4, 1.0, 10.0)
    cold = gpc.infer(K, y, method="laplace", likelihood="logit")
    K2 = K * 1.001
    cold2 = gpc.infer(K2, y, method="laplace", likelihood="logit")
    warm2 = gpc.infer(K2, y, method="laplace", likelihood="logit", init=cold.state)
    assert warm2.info["n_iter"] < cold2.info["n_iter"]
    assert warm2.log_evidence == pytest.approx(cold2.log_evidence, rel=1e-13)
    np.testing.assert_allclose(warm2.dK, cold2.dK, rtol=1e-7, atol=1e-12)
    # A state of the wrong size is refused, not ignored.
    with pytest.raises(ValueError, match=r"init\['alpha'\] must be .* shape \(10,\)"):
        gpc.infer(K[:10, :10], y[:10], likelihood="logit", init=cold.state)


def test_evidence_is_smooth_under_tiny_steps():
    # The mode is converged to rounding level, so differences at step 1e-9 are clean.
    K, y = problem(30, 5, 0.7, 3.0)
    res = gpc.infer(K, y, method="laplace", likelihood="logit")
    E = K / 3.0  # d K / d log(sf2)
    h = 1e-9
    up = gpc.infer(K + h * E, y, likelihood="logit", init=res.state).log_evidence
    dn = gpc.infer(K - h * E, y, likelihood="logit", init=res.state).log_evidence
    # Rounding alone limits a difference at h = 1e-9 to about 4 eps |log Z| / h;
    # an unconverged mode would add errors of order (mode error) / h, i.e. O(0.1).
    floor = 4 * np.finfo(float).eps * abs(res.log_evidence) / h
    assert abs((up - dn) / (2 * h) - np.sum(res.dK * E)) < 1e-4 * abs(np.sum(res.dK * E)) + floor


def test_not_converged_warns():
    K, y = problem(20, 6, 1.0, 100.0)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        res = gpc.infer(K, y, likelihood="logit", max_iter=1)
    assert not res.info["converged"]


def test_step_halving_keeps_psi_increasing_on_huge_kernels():
    # Signal variance 1e6: the full Newton step from 0 overshoots badly.
    K, y = problem(25, 7, 2.0, 1e6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = gpc.infer(K + 1e-3 * np.eye(25), y, likelihood="logit")
    assert res.info["converged"] and np.isfinite(res.log_evidence)


def test_indefinite_K_raises():
    K = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, -50.0]])
    with pytest.raises(NotPositiveDefiniteError, match="not positive semi-definite"):
        gpc.infer(K, [1, -1, 1], likelihood="probit")


def test_positive_definiteness_check_climbs_the_jitter_ladder():
    # psd_jitter's compiled probe against numpy's Cholesky: a K with an
    # eigenvalue of -1e-9 needs the second rung of jitter (in units of its mean
    # diagonal), a diagonal one none, and K itself is never written.
    from gpc import _checks
    from gpc.inference._base import JITTER_LADDER, psd_jitter
    Q = np.linalg.qr(np.random.default_rng(0).standard_normal((6, 6)))[0]
    K = np.asfortranarray((Q * [3.0, 2.0, 1.0, 0.5, 0.2, -1e-9]) @ Q.T)
    K = (K + K.T) / 2
    before = K.copy()
    jitter = psd_jitter(K)
    assert np.array_equal(K, before)
    scale = np.mean(np.diag(K))
    needed = [r for r in JITTER_LADDER
              if _numpy_factorises(K + r * scale * np.eye(6))][0]
    assert needed == JITTER_LADDER[1]
    assert jitter == (0.0 if needed == JITTER_LADDER[0] else needed * scale) > 0.0
    for A in (K, np.ascontiguousarray(K), 3.0 * np.eye(4), K + 1e-3 * np.eye(6)):
        for jit in (0.0, 1e-6):
            assert _checks.factorises(A, jit) == _numpy_factorises(A + jit * np.eye(len(A)))
    assert psd_jitter(np.asfortranarray(3.0 * np.eye(4))) == 0.0


def _numpy_factorises(A):
    try:
        np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        return False
    return True


def test_likelihood_without_derivatives_is_rejected():
    with pytest.raises(ValueError, match="derivatives"):
        gpc.infer(np.eye(2), [1, -1], likelihood="step")


@pytest.mark.parametrize("K,y,match", [
    (np.ones((2, 3)), [1, -1], "square"),
    (np.array([[1.0, np.nan], [np.nan, 1.0]]), [1, -1], "NaN"),
    (np.array([[1.0, 0.5], [0.1, 1.0]]), [1, -1], "symmetric"),
    (np.eye(2), [0, 1], "-1 and \\+1"),
    (np.eye(2), [1, -1, 1], "labels"),
    (np.eye(2), ["a", "b"], "numbers"),
])
def test_bad_input(K, y, match):
    with pytest.raises(ValueError, match=match):
        gpc.infer(K, y)


@pytest.mark.parametrize("i,j", [(0, 1), (129, 3), (70, 64), (129, 128)])
def test_validation_scans_every_tile(i, j):
    # The single-pass check works on 64 x 64 tiles; a defect in any tile (either
    # triangle) is found, and a symmetric matrix of the same size passes.
    A = np.random.RandomState(0).randn(130, 130)
    K = A @ A.T
    gpc.infer(K, np.where(np.arange(130) % 2, 1.0, -1.0), compute_gradient=False)
    for a, b in ((i, j), (j, i)):
        bad = K.copy()
        bad[a, b] += 1e-3 * np.abs(K).max()
        with pytest.raises(ValueError, match="symmetric"):
            gpc.infer(bad, np.ones(130))
        bad[a, b] = np.inf
        with pytest.raises(ValueError, match="NaN or infinity"):
            gpc.infer(bad, np.ones(130))


@pytest.mark.parametrize("method", gpc.available_methods())
def test_no_examples_is_one_clear_error_for_every_method(method, capfd):
    # With n = 0 some methods once returned 0.0, one raised, and LAPACK
    # printed illegal-argument messages; every method now refuses alike.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="at least one example"):
            gpc.infer(np.zeros((0, 0)), np.zeros(0), method=method)
    assert capfd.readouterr().err == ""


def test_unknown_method():
    with pytest.raises(ValueError, match="Unknown inference method"):
        gpc.infer(np.eye(2), [1, -1], method="magic")


def test_float32_and_noncontiguous_inputs():
    K, y = problem(10, 8)
    ref = gpc.infer(K, y, likelihood="logit")
    big = np.zeros((20, 20))
    big[::2, ::2] = K
    for Kx in (K.astype(np.float32), big[::2, ::2], np.asfortranarray(K)):
        res = gpc.infer(Kx, y[::1].astype(np.float32), likelihood="logit")
        assert res.log_evidence == pytest.approx(ref.log_evidence, rel=1e-6)


def test_predictions_from_the_posterior():
    X = np.linspace(-3, 3, 12)[:, None]
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    res = gpc.infer(se(X), y, likelihood="probit")
    Xs = np.array([[-2.5], [0.0], [2.5]])
    Ks, kss = se(X, Z=Xs), np.ones(3)
    mean, var = res.posterior.latent_mean_and_variance(Ks, kss)
    # Dense check of the site-form variance: k** - k*' (K + W^-1)^-1 k*.
    W = res.posterior.sW ** 2
    ref_var = kss - np.einsum("ij,ij->j", Ks, np.linalg.solve(se(X) + np.diag(1 / W), Ks))
    np.testing.assert_allclose(var, ref_var, rtol=1e-10)
    p = res.posterior.predict_proba(Ks, kss, "probit")
    np.testing.assert_allclose(p, ndtr(mean / np.sqrt(1 + var)), rtol=1e-12)
    assert p[0] < 0.5 < p[2]


# ---------------------------------------------------------------------------
# Inexact Newton steps (single-precision factorisations, chord steps): the mode,
# alpha and evidence of plain Newton in double
# ---------------------------------------------------------------------------


def reference_newton(K, y, name, alpha=None):
    """Newton's method in NumPy (R&W Alg. 3.1, step halving on psi), in double,
    until the step stops shrinking; returns (f, alpha, log evidence)."""
    from scipy.linalg import cho_factor, cho_solve

    n = len(y)
    a = np.zeros(n) if alpha is None else np.array(alpha, dtype=float)
    f = K @ a

    def psi(a, f):
        return loglik(name, y, f)[0].sum() - 0.5 * a @ f

    if psi(a, f) < psi(np.zeros(n), np.zeros(n)):
        a, f = np.zeros(n), np.zeros(n)
    step_prev = np.inf
    for _ in range(200):
        _, d1, d2 = loglik(name, y, f)
        W = -d2
        sW = np.sqrt(W)
        c = cho_factor(np.eye(n) + sW[:, None] * K * sW, lower=True)
        b = W * f + d1
        a_new = b - sW * cho_solve(c, sW * (K @ b))
        f_new = K @ a_new
        t = 1.0
        while psi(a + t * (a_new - a), f + t * (f_new - f)) < psi(a, f) - 1e-12 \
                and t > 1e-9:
            t /= 2
        step = np.abs(t * (f_new - f)).max()
        a, f = a + t * (a_new - a), f + t * (f_new - f)
        if step < 1e-14 * (1 + np.abs(f).max()) or step >= step_prev > 0 and \
                step < 1e-9:
            break
        step_prev = step
    _, _, d2 = loglik(name, y, f)
    sW = np.sqrt(-d2)
    L = np.linalg.cholesky(np.eye(n) + sW[:, None] * K * sW)
    return f, a, psi(a, f) - np.log(np.diag(L)).sum()


def _assert_same_answer(res, f, a, log_z):
    scale = 1 + np.abs(f).max()
    np.testing.assert_allclose(res.posterior.marginal_mean, f, rtol=0,
                               atol=1e-10 * scale)
    np.testing.assert_allclose(res.state["alpha"], a, rtol=0,
                               atol=1e-10 * (1 + np.abs(a).max()))
    assert abs(res.log_evidence - log_z) <= 1e-10 * (1 + abs(log_z))


@pytest.mark.parametrize("lik", ["probit", "logit"])
@pytest.mark.parametrize("sf2", [1.0, 30.0])
def test_inexact_steps_keep_the_exact_mode(lik, sf2):
    K, y = problem(300, 11, 1.5, sf2, d=3)
    f, a, log_z = reference_newton(K, y, lik)
    res = gpc.infer(K, y, likelihood=lik)
    assert res.info["converged"]
    assert res.info["n_single"] > 0 and res.info["n_reused"] > 0
    _assert_same_answer(res, f, a, log_z)
    chord = gpc.infer(K, y, likelihood=lik, single_precision=False)
    assert chord.info["n_single"] == 0 and chord.info["n_reused"] > 0
    _assert_same_answer(chord, f, a, log_z)
    double = gpc.infer(K, y, likelihood=lik, single_precision=False,
                       reuse_factor=False)
    assert double.info["n_single"] == double.info["n_reused"] == 0
    _assert_same_answer(double, f, a, log_z)
    np.testing.assert_allclose(res.dK, double.dK, rtol=0,
                               atol=1e-10 * np.abs(double.dK).max())
    # The returned factor is the double-precision one at the mode, its strict upper
    # triangle zero (the single-precision factors' scratch is cleared).
    L = res.posterior.L
    sW = res.posterior.sW
    assert not np.triu(L, 1).any()
    np.testing.assert_allclose(L @ L.T, np.eye(300) + sW[:, None] * K * sW,
                               rtol=0, atol=1e-12 * (1 + sf2 * 300))


@pytest.mark.parametrize("lik", ["probit", "logit"])
def test_inexact_steps_from_a_warm_start_keep_the_exact_mode(lik):
    K, y = problem(250, 12, 1.0, 5.0, d=2)
    near = gpc.infer(K * 1.05, y, likelihood=lik)
    f, a, log_z = reference_newton(K, y, lik, alpha=near.state["alpha"])
    warm = gpc.infer(K, y, likelihood=lik, init=near.state)
    assert warm.info["converged"]
    assert warm.info["n_single"] > 0 and warm.info["n_reused"] > 0
    _assert_same_answer(warm, f, a, log_z)
    # Started at the mode itself: the first step is already below tol, which a
    # single-precision step cannot vouch for; it is redone in double.
    again = gpc.infer(K, y, likelihood=lik, init=warm.state)
    assert again.info["converged"]
    _assert_same_answer(again, f, a, log_z)


@pytest.mark.parametrize("lik", ["probit", "logit"])
@pytest.mark.parametrize("sf2,nugget", [(1e6, 0.1), (1e9, 1e-6)])
def test_badly_scaled_kernel_falls_back_to_double(lik, sf2, nugget):
    # With the condition bound lifted (max_single_cond = inf) single precision is
    # tried on a B whose rounding in float32 is far above 1 (sf2 = 1e9: spotrf
    # fails; 1e6: a step needs halving): the run falls back to double and ends
    # where the all-double one does.  (The nugget keeps the mode itself
    # determined to 1e-10 in double.)
    from gpc import _laplace
    from gpc._model import LikelihoodModel

    K, y = problem(200, 13, 1.0, sf2, d=2)
    K = np.asfortranarray(K + nugget * sf2 * np.eye(200))
    code = gpc.get_likelihood(lik).code
    out = {}
    for cond in (np.inf, 0.0):
        alpha, f, sW = np.zeros(200), np.empty(200), np.empty(200)
        L = np.zeros((200, 200), order="F")
        status, n_iter, conv, psi, logdet, _, n_single, _ = _laplace.newton_mode(
            K, y, LikelihoodModel(code, np.zeros(0), np.zeros(0), np.zeros(0)), alpha,
            f, sW, L, _laplace.NewtonOptions(1e-10, 100, cond, cond > 0))
        assert status == _laplace.STATUS_OK and conv
        assert (n_single > 0) == (cond > 0)
        out[cond] = f, alpha, psi - logdet
        assert not np.triu(L, 1).any()
    f, a, log_z = out[0.0]
    scale = 1 + np.abs(f).max()
    np.testing.assert_allclose(out[np.inf][0], f, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(out[np.inf][1], a, rtol=0,
                               atol=1e-10 * (1 + np.abs(a).max()))
    assert abs(out[np.inf][2] - log_z) <= 1e-10 * (1 + abs(log_z))
    # The default bound keeps single precision off where B is this badly
    # conditioned, at least while W is not small.
    res = gpc.infer(K, y, likelihood=lik)
    _assert_same_answer(res, f, a, log_z)


def test_workspace_buffers_are_reused():
    K, y = problem(80, 14, 1.0, 3.0)
    ws = {}
    first = gpc.infer(K, y, likelihood="logit", workspace=ws)
    L, dK = ws["L"], ws["dK"]
    assert first.posterior.L is L and first.dK is dK
    fresh = gpc.infer(K * 1.1, y, likelihood="logit")
    again = gpc.infer(K * 1.1, y, likelihood="logit", workspace=ws)
    assert again.posterior.L is L and again.dK is dK
    np.testing.assert_array_equal(again.posterior.L, fresh.posterior.L)
    np.testing.assert_array_equal(again.dK, fresh.dK)
    assert again.log_evidence == fresh.log_evidence
