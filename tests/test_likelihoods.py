"""Tests of gpc.likelihoods and the Cython likelihood kernels (gpc._moments)."""

import copy
from decimal import Decimal, localcontext
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import integrate, special
from scipy.optimize import brentq

import gpc.likelihoods as gl
from gpc import _moments as M
from gpc.likelihoods import (Gaussian, Likelihood, Logit, NoisyThreshold,
                             NotDifferentiableError, Probit, Step, get_likelihood)

ALL = [Probit(), Logit(), NoisyThreshold(eps=0.1), Step()]
IDS = [lik.name for lik in ALL]
SMOOTH = [Probit(), Logit()]

# Every numerical test runs with warnings as errors: no overflow / invalid warnings.
pytestmark = pytest.mark.filterwarnings("error")

HYP = settings(max_examples=150, deadline=None, derandomize=True)


def rel_err(a, b, floor=1.0):
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    return np.max(np.abs(a - b) / np.maximum(floor, np.abs(b)))


# --------------------------------------------------------------------------------
# references

def _quad(fun, a, b, **kw):
    # references ask quad for ~1e-13: silence its "roundoff detected" warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        return integrate.quad(fun, a, b, **kw)[0]


def _normpdf(f, m, v):
    return np.exp(-0.5 * (f - m) ** 2 / v) / np.sqrt(2 * np.pi * v)


def quad_moments(p, m, v, points=()):
    """log Z, dlog Z/dm, d2log Z/dm2 of Z = int p(f) N(f; m, v) df by quad."""
    s = np.sqrt(v)
    a, b = m - 40 * s, m + 40 * s
    pts = sorted(x for x in set(points) | {m} if a < x < b)
    kw = dict(points=pts, limit=500, epsabs=0.0, epsrel=1e-13)
    Z = _quad(lambda f: p(f) * _normpdf(f, m, v), a, b, **kw)
    Z1 = _quad(lambda f: p(f) * _normpdf(f, m, v) * (f - m) / v, a, b, **kw)
    Z2 = _quad(lambda f: p(f) * _normpdf(f, m, v) * ((f - m) ** 2 - v) / v ** 2, a, b, **kw)
    return np.log(Z), Z1 / Z, Z2 / Z - (Z1 / Z) ** 2


def logit_reference(mu, v):
    """log F, dlogF, d2logF with F(mu) = E[sigma(z)], z ~ N(mu, v), in log space."""
    if mu > 0:   # F(mu) = 1 - F(-mu): the small side is integrated
        l, d1, d2 = logit_reference(-mu, v)
        G = np.exp(l)
        a = G * d1 / (1 - G)
        return np.log1p(-G), a, -G * (d2 + d1 * d1) / (1 - G) - a * a
    g = lambda z: special.log_expit(z) - 0.5 * (z - mu) ** 2 / v  # noqa: E731
    zh = brentq(lambda z: special.expit(-z) - (z - mu) / v, mu - v - 100, 100.0,
                xtol=1e-14)
    c = g(zh)
    s = np.sqrt(v)
    a, b = zh - 40 * s, zh + 40 * s
    pts = sorted(p for p in [zh, 0.0] + [zh + k * s for k in (-8, -4, -2, -1, 1, 2, 4, 8)]
                 if a < p < b)
    kw = dict(points=pts, limit=2000, epsabs=0.0, epsrel=1e-13)
    w = lambda z: np.exp(g(z) - c)  # noqa: E731
    I0 = _quad(w, a, b, **kw)
    E = _quad(lambda z: w(z) * special.expit(z), a, b, **kw) / I0
    V = _quad(lambda z: w(z) * (special.expit(z) - E) ** 2, a, b, **kw) / I0
    H = _quad(lambda z: w(z) * special.expit(z) * special.expit(-z), a, b, **kw) / I0
    return c + np.log(I0) - 0.5 * np.log(2 * np.pi * v), 1 - E, V - H


def _dec_pi():
    # Machin's formula, pi = 16 atan(1/5) - 4 atan(1/239), in the current context
    def atan_inv(n):
        x = Decimal(1) / n
        term, total, k = x, x, 1
        while True:
            term *= -x * x
            k += 2
            if abs(term / k) < Decimal(10) ** -70:
                return total
            total += term / k
    return 16 * atan_inv(5) - 4 * atan_inv(239)


def normal_tail_reference(x):
    """For z = -x (x >= 3) in 60-digit arithmetic: log Phi(z), log Phi(-z), the
    z-derivatives r, d2, d3 of log Phi(z) (r = N/Phi) and r(-z), via Laplace's
    continued fraction Phi(-x)/N(x) = 1/(x + 1/(x + 2/(x + ...)))."""
    with localcontext() as ctx:
        ctx.prec = 60
        X = Decimal(float(x))

        def cf(n):
            c = Decimal(0)
            for k in range(n, 0, -1):
                c = k / (X + c)
            return 1 / (X + c)

        n = 400
        R = cf(n)
        while abs(cf(2 * n) / R - 1) > Decimal(10) ** -40:
            n *= 2
            R = cf(n)
        lognpdf = -X * X / 2 - (2 * _dec_pi()).ln() / 2
        r = 1 / R
        s = r - X
        d3 = r * (s * (s + r) - 1)
        tail = R * lognpdf.exp()                       # Phi(-x)
        log1m_tail = -tail - tail * tail / 2 if tail < 1e-20 else (1 - tail).ln()
        return (float(R.ln() + lognpdf), float(log1m_tail), float(r), float(-r * s),
                float(d3), float(lognpdf.exp() / (1 - tail)))


# --------------------------------------------------------------------------------
# public API, construction, copying

def test_codes_and_names():
    assert (gl.LIK_PROBIT, gl.LIK_LOGIT, gl.LIK_NOISY_THRESHOLD, gl.LIK_STEP) == (0, 1, 2, 3)
    assert (M.LIK_PROBIT, M.LIK_LOGIT, M.LIK_NOISY_THRESHOLD, M.LIK_STEP) == (0, 1, 2, 3)
    for lik, code in zip(ALL, range(4)):
        assert lik.code == code and isinstance(lik.code, int)
        assert get_likelihood(lik.name).code == code
        assert lik.has_derivatives is (code in (0, 1))
        assert lik.params.dtype == np.float64 and lik.params.ndim == 1


def test_get_likelihood():
    assert isinstance(get_likelihood("Probit"), Probit)
    assert isinstance(get_likelihood(" noisy-threshold "), NoisyThreshold)
    assert isinstance(get_likelihood(Step), Step)
    user = NoisyThreshold(eps=0.2)
    got = get_likelihood(user)
    assert got is not user and repr(got) == repr(user)
    got.set_params(eps=0.3)
    assert user.eps == 0.2
    with pytest.raises(ValueError,
                       match="'probit', 'logit', 'noisy_threshold', 'step', 'gaussian'"):
        get_likelihood("normal")
    with pytest.raises(TypeError):
        get_likelihood(3)
    bad = Logit()
    bad.predictive = "nope"
    with pytest.raises(ValueError, match="predictive"):
        get_likelihood(bad)


def test_repr_params_and_validation():
    assert repr(Probit()) == "Probit()"
    assert repr(Step()) == "Step()"
    assert repr(Logit()) == "Logit(gh_order=64, predictive='quadrature')"
    assert repr(NoisyThreshold()) == "NoisyThreshold(eps=0.1, eps_bounds=(1e-06, 0.5))"
    with pytest.raises(ValueError):
        Logit(predictive="probit")
    with pytest.raises(ValueError):
        Logit(gh_order=0)
    with pytest.raises(TypeError):
        Logit(gh_order=10.5)
    for kw in [dict(eps=0.6), dict(eps=-0.1), dict(eps=0.3, eps_bounds=(0.0, 0.2)),
               dict(eps_bounds=(0.3, 0.2)), dict(eps_bounds=(0.0, 0.7)),
               dict(eps_bounds="free")]:
        with pytest.raises(ValueError):
            NoisyThreshold(**kw)
    with pytest.raises(TypeError):
        NoisyThreshold(eps="0.1")


def test_noisy_threshold_parameters():
    lik = NoisyThreshold(eps=0.05, eps_bounds=(0.01, 0.3))
    np.testing.assert_array_equal(lik.params, [0.05])
    np.testing.assert_array_equal(lik.param_bounds, [[0.01, 0.3]])
    assert lik.param_names == ("eps",)
    new = lik.with_params(np.array([0.2]))
    assert new.eps == 0.2 and lik.eps == 0.05
    with pytest.raises(ValueError):
        lik.with_params([0.5])     # outside the bounds
    with pytest.raises(ValueError):
        lik.with_params([0.1, 0.2])
    fixed = NoisyThreshold(eps=0.2, eps_bounds="fixed")
    np.testing.assert_array_equal(fixed.param_bounds, [[0.2, 0.2]])
    for lik0 in (Probit(), Logit(), Step()):
        assert lik0.params.shape == (0,) and lik0.param_bounds.shape == (0, 2)
        assert lik0.with_params([]).get_params() == lik0.get_params()


def test_get_set_params():
    lik = Logit(gh_order=32)
    assert lik.get_params() == {"gh_order": 32, "predictive": "quadrature"}
    assert lik.set_params(predictive="mackay") is lik
    assert lik.predictive == "mackay"
    with pytest.raises(ValueError, match="invalid parameter"):
        lik.set_params(order=3)
    with pytest.raises(ValueError):
        lik.set_params(predictive="bad")
    assert lik.predictive == "mackay"       # unchanged after a failed set_params
    eps = np.float32(0.25)
    nt = NoisyThreshold(eps=eps)
    assert nt.get_params()["eps"] is eps    # stored untouched


@pytest.mark.parametrize("lik", ALL + [Logit(gh_order=20, predictive="mackay")], ids=repr)
def test_pickle_deepcopy_clone(lik):
    from sklearn.base import BaseEstimator, clone

    for other in (pickle.loads(pickle.dumps(lik)), copy.deepcopy(lik), clone(lik),
                  clone(lik, safe=False)):
        assert type(other) is type(lik) and other is not lik
        assert repr(other) == repr(lik)
        np.testing.assert_array_equal(other.predict([0.3, -2.0], [0.5, 10.0]),
                                      lik.predict([0.3, -2.0], [0.5, 10.0]))

    class Est(BaseEstimator):
        def __init__(self, likelihood="logit"):
            self.likelihood = likelihood

    est = clone(Est(likelihood=lik))
    assert repr(est.likelihood) == repr(lik) and est.likelihood is not lik
    assert "likelihood__" not in str(Est(likelihood=lik).get_params(deep=False))


# --------------------------------------------------------------------------------
# Gauss-Hermite rule and the logistic scale-mixture rule

@pytest.mark.parametrize("order", [1, 5, 20, 64, 200])
def test_gauss_hermite(order):
    x, logw = M.gauss_hermite(order)
    assert x.shape == logw.shape == (order,)
    assert not x.flags.writeable and not logw.flags.writeable
    assert M.gauss_hermite(order)[0] is x           # cached
    w = np.exp(logw)
    assert abs(w.sum() - 1) < 1e-13
    # exact for polynomials up to degree 2n-1 (N(0,1) moments (k-1)!!), low degrees
    for k in range(0, min(2 * order, 12)):
        exact = 0.0 if k % 2 else special.factorial2(k - 1) if k else 1.0
        assert abs(w @ x ** k - exact) < 1e-12 * max(1.0, exact)


def test_gauss_hermite_errors():
    with pytest.raises(ValueError):
        M.gauss_hermite(0)
    with pytest.raises(TypeError):
        M.gauss_hermite(3.0)


def test_scale_mixture_rule():
    # tau = S^2, sigma(z) = E[Phi(z/S)]: E[tau^k] = E[X^{2k}] / (2k-1)!! for logistic X,
    # E[X^{2k}] = 2 (2k)! (1 - 2^{1-2k}) zeta(2k).
    tau, logw = M.scale_mixture_rule()
    w = np.exp(logw)
    assert tau.shape == (64,) and np.all(np.diff(tau) > 0) and abs(w.sum() - 1) < 1e-14
    for k in range(1, 12):
        exact = (2 * special.factorial(2 * k) * (1 - 2.0 ** (1 - 2 * k)) * special.zeta(2 * k)
                 / special.factorial2(2 * k - 1))
        assert abs(w @ tau ** k / exact - 1) < 1e-12
    assert M.LOGIT_GH_VMAX == 1.5


# --------------------------------------------------------------------------------
# log Phi and the inverse Mills ratio

def test_log_ndtr_against_scipy():
    z = np.concatenate([-np.logspace(-3, 8, 300), np.linspace(-10, 10, 201),
                        np.logspace(-3, 1.6, 100)])
    ours = M.log_ndtr(z)
    ref = special.log_ndtr(z)
    assert rel_err(ours, ref, floor=1e-300) < 3e-13


X_TAIL = [3.0, 3.9, 4.0, 4.1, 5.0, 6.5, 9.0, 12.5, 20.0, 37.5, 100.0, 1e3, 1e5]
TAIL_REF = {x: normal_tail_reference(x) for x in X_TAIL}


def test_normal_tails_against_high_precision():
    x = np.array(X_TAIL)
    ref = np.array([TAIL_REF[t] for t in X_TAIL]).T
    assert rel_err(M.log_ndtr(-x), ref[0], floor=0) < 1e-15
    pos = x < 38
    assert rel_err(M.log_ndtr(x[pos]), ref[1][pos], floor=0) < 1e-14
    lp, d1, d2, d3 = Probit().derivatives(1, -x)
    assert rel_err(lp, ref[0], floor=0) < 1e-15
    assert rel_err(d1, ref[2], floor=0) < 1e-14
    assert rel_err(d2, ref[3], floor=0) < 1e-14
    assert rel_err(d3, ref[4], floor=0) < 1e-13
    lp, d1, d2, d3 = Probit().derivatives(-1, x)      # same z, other label
    assert rel_err(-d3, ref[4], floor=0) < 1e-13
    r, s = M.mills(x[pos])
    assert rel_err(r, ref[5][pos], floor=0) < 1e-14


def test_log_ndtr_extremes():
    assert M.log_ndtr(np.array([-1e150]))[0] == pytest.approx(-5e299, rel=1e-14)
    assert M.log_ndtr(np.array([-1e300]))[0] == -np.inf        # true value < -DBL_MAX
    assert M.log_ndtr(np.array([1e300]))[0] == 0.0
    assert M.log_ndtr(np.array([38.0]))[0] < 0.0               # log1p(-tiny), not 0
    assert np.isnan(M.log_ndtr(np.array([np.nan]))[0])


def test_inv_mills():
    z = np.linspace(-30, 30, 601)
    r, s = M.mills(z)
    ref = np.exp(-0.5 * z ** 2 - 0.5 * np.log(2 * np.pi) - special.log_ndtr(z))
    # (the reference itself rounds z^2: ~eps z^2 / 2 relative)
    assert rel_err(r, ref, floor=1e-300) < 4e-13
    big = -np.logspace(1, 300, 100)
    r, s = M.mills(big)
    assert np.all(np.isfinite(r)) and np.all(r > 0)
    # r = x + 1/x - 2/x^3 + ...,  s = z + r = 1/x - 2/x^3 + ...  (x = -z)
    x = -big
    far = x > 1e3
    assert rel_err(r[far], (x + 1 / x - 2 / x / x / x)[far], floor=0) < 1e-15
    assert rel_err(s[far], (1 / x - 2 / x / x / x)[far], floor=0) < 1e-13
    r, s = M.mills(np.array([40.0, 1e3, 1e300]))
    assert r[0] < 1e-300 and r[1] == 0 and r[2] == 0
    np.testing.assert_array_equal(s, [40.0, 1e3, 1e300])


def test_mills_shift_continued_fraction():
    # z + r by the continued fraction (z < -4) against the direct difference, whose
    # own cancellation error is ~eps x^2, and smooth across the switch at z = -4.
    z = -np.linspace(4.0, 12.0, 161)
    r, s = M.mills(z)
    assert rel_err(s, r + z, floor=0) < 200 * np.finfo(float).eps * 144
    r1, s1 = M.mills(np.array([-4.0 - 1e-12, -4.0 + 1e-12]))
    assert abs(s1[0] / s1[1] - 1) < 1e-12
    assert np.all(s > 0) and np.all(np.diff(s) < 0)       # s increases with z


# --------------------------------------------------------------------------------
# log p(y|f) and derivatives

def _fd(fun, f, h):
    return (fun(f + h) - fun(f - h)) / (2 * h)


@pytest.mark.parametrize("lik", SMOOTH, ids=["probit", "logit"])
@pytest.mark.parametrize("y", [1.0, -1.0])
def test_derivatives_against_finite_differences(lik, y):
    f = np.concatenate([np.linspace(-30, 30, 241), [-3.9999, -4.0, -4.0001]])
    lp, d1, d2, d3 = lik.derivatives(y, f)
    h = 1e-5 * np.maximum(1, np.abs(f))
    deriv = lambda k: (lambda x: lik.derivatives(y, x)[k])  # noqa: E731
    for k in range(3):
        fd = _fd(deriv(k), f, h)
        exact = (d1, d2, d3)[k]
        scale = np.maximum(np.abs(exact), 1e-3 * np.max(np.abs(exact)))
        assert np.max(np.abs(fd - exact) / scale) < 1e-6, k


def test_derivative_closed_forms():
    f = np.linspace(-50, 50, 1001)
    for y in (1, -1):
        z = y * f
        lp, d1, d2, d3 = Probit().derivatives(y, f)
        r = np.exp(special.log_ndtr(z) * -1 - 0.5 * z ** 2 - 0.5 * np.log(2 * np.pi))
        # (scipy underflows to 0 where our log Phi is still subnormal, and both
        # round exp(-z^2/2) differently: ~eps z^2/2 relative)
        assert rel_err(lp, special.log_ndtr(z), floor=1e-280) < 4e-13
        assert rel_err(d1, y * r, floor=1e-280) < 1e-12
        mid = np.abs(z) < 5     # the direct formulas cancel beyond
        assert rel_err(d2[mid], -r[mid] * (z[mid] + r[mid]), floor=1e-300) < 1e-12
        assert rel_err(d3[mid], (y * (2 * r ** 3 + 3 * z * r ** 2 + r * (z ** 2 - 1)))[mid],
                       floor=1e-10) < 1e-10
        lp, d1, d2, d3 = Logit().derivatives(y, f)
        sp, sm = special.expit(z), special.expit(-z)
        assert rel_err(lp, special.log_expit(z), floor=1e-300) < 1e-14
        assert rel_err(d1, y * sm, floor=1e-300) < 1e-14
        assert rel_err(d2, -sp * sm, floor=1e-300) < 1e-14
        assert rel_err(d3, y * sp * sm * (sp - sm), floor=1e-300) < 1e-12


def test_probit_derivatives_deep_tail():
    # log Phi(z) ~ -z^2/2 - log(-z) - ...: d2 -> -1 + 1/z^2, d3 -> -2/z^3 (z -> -inf)
    z = -np.logspace(3, 7, 50)
    lp, d1, d2, d3 = Probit().derivatives(1, z)
    assert rel_err(d2, -1 + 1 / z ** 2 - 6 / z ** 4, floor=0) < 1e-13
    assert rel_err(d3, -2 / z ** 3 + 24 / z ** 5, floor=0) < 1e-8
    assert np.all(d3 > 0) and np.all(d2 > -1)


@pytest.mark.parametrize("lik", SMOOTH, ids=["probit", "logit"])
def test_derivatives_extreme_arguments(lik):
    f = np.concatenate([-np.logspace(-5, 300, 200), [0.0], np.logspace(-5, 300, 200)])
    for y in (1, -1):
        lp, d1, d2, d3 = lik.derivatives(y, f)
        z = y * f
        ok = np.abs(z) < 1e150 if lik.name == "probit" else np.ones_like(f, bool)
        assert np.all(np.isfinite(lp[ok])) and np.all(lp <= 0)
        for d in (d1, d2, d3):
            assert not np.any(np.isnan(d))
            assert np.all(np.isfinite(d))
        assert np.all(y * d1 >= 0)
        assert np.all(d2 <= 0) and np.all(d2[np.abs(z) < 30] < 0)
        if lik.name == "logit":
            assert np.all(d2 >= -0.25) and np.all(np.abs(d1) <= 1)


@given(f=st.floats(-1e300, 1e300), y=st.sampled_from([-1.0, 1.0]))
@HYP
def test_derivatives_property(f, y):
    for lik in SMOOTH:
        lp, d1, d2, d3 = lik.derivatives(y, f)
        assert np.isfinite(d1) and np.isfinite(d2) and np.isfinite(d3)
        assert lp <= 0 and y * d1 >= 0 and d2 <= 0
        if abs(f) < 1e150:
            assert np.isfinite(lp)


def test_step_like_log_lik_and_no_derivatives():
    f = np.array([-2.0, 0.0, 3.0])
    np.testing.assert_array_equal(Step().log_lik(1, f), [-np.inf, np.log(0.5), 0.0])
    np.testing.assert_allclose(NoisyThreshold(eps=0.2).log_lik(-1, f),
                               [np.log(0.8), np.log(0.5), np.log(0.2)])
    np.testing.assert_allclose(Probit().log_lik([1, -1, 1], f), special.log_ndtr([-2, 0, 3]))
    np.testing.assert_allclose(Logit().log_lik(1, f), special.log_expit(f))
    for lik in (Step(), NoisyThreshold()):
        with pytest.raises(NotDifferentiableError, match="EP or ADF"):
            lik.derivatives(1, f)
        with pytest.raises(ValueError, match="Laplace"):
            lik.derivatives(1, f)
        with pytest.raises(NotImplementedError):
            lik.derivatives(1, f)
        with pytest.raises(ValueError, match="differentiable"):
            M.loglik_derivs(lik.code, np.ones(3), f, lik.params)


# --------------------------------------------------------------------------------
# Gaussian moments: closed forms against quadrature

MV = [(m, v) for m in (-6.0, -2.0, -0.3, 0.0, 0.7, 3.0, 8.0) for v in (0.01, 0.5, 2.0, 30.0)]


def _p(lik, y):
    if lik.name == "probit":
        return lambda f: special.ndtr(y * f)
    if lik.name == "step":
        return lambda f: np.heaviside(y * f, 0.5)
    eps = lik.eps
    return lambda f: eps + (1 - 2 * eps) * np.heaviside(y * f, 0.5)


@pytest.mark.parametrize("lik", [Probit(), Step(), NoisyThreshold(eps=0.07)],
                         ids=["probit", "step", "noisy_threshold"])
@pytest.mark.parametrize("y", [1.0, -1.0])
def test_closed_form_moments_against_quad(lik, y):
    mv = [(m, v) for m, v in MV if abs(m) / np.sqrt(v) < 30]   # quad's Z > 0
    m, v = np.array(mv).T
    logZ, d1, d2, _ = lik.gauss_moments(y, m, v)
    for i, (mi, vi) in enumerate(mv):
        ref = quad_moments(_p(lik, y), mi, vi, points=(0.0,))
        assert rel_err(np.exp(logZ[i]), np.exp(ref[0]), floor=1e-300) < 1e-8   # Z
        assert rel_err(logZ[i], ref[0]) < 1e-8
        assert rel_err(d1[i], ref[1]) < 1e-8
        assert rel_err(d2[i], ref[2]) < 1e-7


def test_probit_moments_formula_far_tail():
    for v in (0.0, 1.0, 1e4):
        s = np.sqrt(1 + v)
        m = -np.logspace(2, 12, 60) * s
        logZ, d1, d2, _ = Probit().gauss_moments(1, m, v)
        assert rel_err(logZ, special.log_ndtr(m / s), floor=0) < 1e-13
        x = -m / s
        assert rel_err(d1, (x + 1 / x - 2 / x / x / x) / s, floor=0) < 1e-10
        assert rel_err(d2, (-1 + 1 / x / x - 6 / x ** 4) / (1 + v), floor=0) < 1e-7
        assert np.all(d2 < 0) and np.all(d2 >= -1 / (1 + v))


@pytest.mark.parametrize("lik", ALL, ids=IDS)
@pytest.mark.parametrize("y", [1.0, -1.0])
def test_moment_derivatives_against_finite_differences(lik, y):
    m = np.concatenate([np.linspace(-40, 40, 81), [-300.0, 300.0, 2000.0, -2000.0]])
    for v in (0.05, 1.0, 1.49, 1.51, 7.0, 300.0):
        logZ, d1, d2, _ = lik.gauss_moments(y, m, v)
        # a step well below the scale on which log Z varies (~ s / max(1, |m|/s))
        s = np.sqrt(v if lik.code in (2, 3) else 1 + v)
        h = 1e-5 * s / np.maximum(1, np.abs(m) / s)
        up, dn = lik.gauss_moments(y, m + h, v), lik.gauss_moments(y, m - h, v)
        fd1 = (up[0] - dn[0]) / (2 * h)
        fd2 = (up[1] - dn[1]) / (2 * h)
        ok = np.isfinite(logZ)
        # rounding noise of the differences: ~1e-16 of the differenced values / h
        # (and an absolute 1e-300 for subnormal results)
        noise1 = 1e-14 * np.maximum(1, np.abs(logZ)) / h + 1e-300
        noise2 = 1e-14 * np.abs(d1) / h + 1e-300
        assert np.all((np.abs(fd1 - d1) <= 1e-6 * np.abs(d1) + noise1)[ok]), v
        assert np.all((np.abs(fd2 - d2) <= 1e-5 * np.abs(d2) + noise2)[ok]), v


def test_noisy_threshold_eps_derivative():
    m = np.linspace(-8, 8, 33)
    for v in (0.0, 0.01, 1.0, 50.0):
        for eps in (1e-6, 0.01, 0.2, 0.45):
            for y in (1, -1):
                lik = NoisyThreshold(eps=eps, eps_bounds=(0, 0.5))
                logZ, _, _, deps = lik.gauss_moments(y, m, v)
                h = 1e-4 * eps
                up = lik.with_params([eps + h]).gauss_moments(y, m, v)[0]
                dn = lik.with_params([eps - h]).gauss_moments(y, m, v)[0]
                noise = 1e-14 * np.maximum(1, np.abs(logZ)) / h
                assert np.all(np.abs(deps - (up - dn) / (2 * h)) <= 1e-6 * np.abs(deps) + noise)
                z = y * m / np.sqrt(v) if v > 0 else np.where(y * m > 0, np.inf, -np.inf)
                z[m == 0] = 0.0
                Z = eps + (1 - 2 * eps) * special.ndtr(z)
                assert rel_err(deps, (1 - 2 * special.ndtr(z)) / Z, floor=1e-12) < 1e-10
    for lik in (Probit(), Logit(), Step()):
        assert np.all(lik.gauss_moments(1, m, 1.0)[3] == 0)


def test_point_limits():
    m = np.array([-3.0, -1e-3, 0.0, 1e-3, 3.0])
    for y in (1, -1):
        # step / noisy threshold: v == 0 gives the point values, no NaN
        logZ, d1, d2, dp = Step().gauss_moments(y, m, 0.0)
        np.testing.assert_array_equal(np.exp(logZ), np.heaviside(y * m, 0.5))
        np.testing.assert_array_equal(d1, 0.0)
        np.testing.assert_array_equal(d2, 0.0)
        eps = 0.1
        logZ, d1, d2, dp = NoisyThreshold(eps=eps).gauss_moments(y, m, 0.0)
        np.testing.assert_allclose(np.exp(logZ), eps + (1 - 2 * eps) * np.heaviside(y * m, 0.5))
        np.testing.assert_array_equal(d1, 0.0)
        np.testing.assert_array_equal(d2, 0.0)
        np.testing.assert_allclose(dp, (1 - 2 * np.heaviside(y * m, 0.5)) / np.exp(logZ))
        # and v -> 0 approaches them away from the threshold (for the step on the
        # wrong side Z -> 0 and d log Z/dm diverges: there v == 0 returns log Z =
        # -inf with zero derivatives)
        for lik, keep in ((Step(), y * m > 0), (NoisyThreshold(eps=eps), m != 0)):
            a = lik.gauss_moments(y, m[keep], 1e-12)
            b = lik.gauss_moments(y, m[keep], 0.0)
            for k in range(4):
                np.testing.assert_allclose(a[k], b[k], rtol=1e-12, atol=1e-300)
        # probit / logit: v == 0 is log p and its derivatives
        for lik in SMOOTH:
            lp, g1, g2, _ = lik.derivatives(y, m)
            logZ, d1, d2, _ = lik.gauss_moments(y, m, 0.0)
            np.testing.assert_allclose([logZ, d1, d2], [lp, g1, g2], rtol=1e-14)
            logZ, d1, d2, _ = lik.gauss_moments(y, m, 1e-10)
            np.testing.assert_allclose([logZ, d1, d2], [lp, g1, g2], rtol=1e-8)
    assert Step().predict(0.0, 0.0) == 0.5
    np.testing.assert_array_equal(Step().predict([-1e-300, 1e-300], 0.0), [0.0, 1.0])


# --------------------------------------------------------------------------------
# logit moments: quadrature accuracy

LOGIT_GRID = [(mu, v) for mu in (-10.0, -3.0, -0.5, 0.0, 2.0, 10.0, -300.0, 50.0)
              for v in (1e-4, 0.3, 1.5, 1.6, 4.0, 100.0, 1e3)]


def test_logit_moments_against_quad():
    mu, v = np.array(LOGIT_GRID).T
    for y in (1.0, -1.0):
        logZ, d1, d2, dp = Logit().gauss_moments(y, y * mu, v)
        for i, (mi, vi) in enumerate(LOGIT_GRID):
            ref = logit_reference(mi, vi)
            assert rel_err(logZ[i], ref[0], floor=1e-300) < 1e-12, (mi, vi)
            assert rel_err(y * d1[i], ref[1], floor=1e-300) < 1e-11, (mi, vi)
            assert rel_err(d2[i], ref[2], floor=1e-300) < 1e-11, (mi, vi)
        assert np.all(dp == 0)


def test_logit_order_and_switch():
    # low orders are less accurate below the switch; the switch itself is seamless
    ref = logit_reference(-1.0, 1.5)
    err32 = rel_err(Logit(gh_order=32).gauss_moments(1, -1.0, 1.5)[2], ref[2])
    err64 = rel_err(Logit().gauss_moments(1, -1.0, 1.5)[2], ref[2])
    assert err64 < 1e-12 < err32 < 1e-7
    m = np.linspace(-20, 20, 41)
    a = Logit().gauss_moments(1, m, 1.5)
    b = Logit().gauss_moments(1, m, np.nextafter(1.5, 2))
    for k in range(3):
        assert rel_err(a[k], b[k], floor=1e-300) < 1e-12


def test_logit_symmetry_and_far_tails():
    m = np.concatenate([-np.logspace(-2, 5, 40), np.logspace(-2, 5, 40)])
    for v in (1e-3, 1.0, 3.0, 250.0, 1e5):
        lp = Logit().gauss_moments(1, m, v)[0]
        lm = Logit().gauss_moments(-1, m, v)[0]
        np.testing.assert_allclose(np.exp(lp) + np.exp(lm), 1.0, rtol=1e-14)
    # deep left tail: F(mu) = exp(mu + v/2) (1 - F(mu + v)) ~ exp(mu + v/2)
    for v in (0.2, 2.0, 40.0, 1e3):
        mu = np.array([-1e4, -1e5, -1e7]) - 3 * v
        logZ, d1, d2, _ = Logit().gauss_moments(1, mu, v)
        np.testing.assert_allclose(logZ, mu + v / 2, rtol=1e-14)
        np.testing.assert_allclose(d1, 1.0, rtol=1e-14)
        assert np.all(d2 <= 0) and np.all(d2 > -1e-100)


MOMENT_LIKS = [Probit(), Logit(), Step(), NoisyThreshold(eps=0.05), NoisyThreshold(eps=1e-6)]


def _check_moments(lik, y, m, v):
    logZ, d1, d2, dp = lik.gauss_moments(y, m, v)
    z = np.abs(m) / np.sqrt(1 + v if lik.code in (0, 1) else max(v, 1e-300))
    assert not np.any(np.isnan([logZ, d1, d2, dp]))
    if (z < 1e150 and (v > 0 or lik.code != 3)) or lik.code == 2:
        assert np.isfinite(logZ)
    if z < 1e100:
        assert np.isfinite(d1) and np.isfinite(d2) and np.isfinite(dp)
    assert logZ <= 0
    if lik.code != 2:
        assert y * d1 >= 0            # Z increases with y m
        assert d2 <= 0                # log-concave
    assert v * d2 >= -1 - 1e-12       # tilted variance v (1 + v d2) >= 0
    if lik.code == 1:
        assert abs(d1) <= 1 + 1e-14 and d2 >= -0.25 * (1 + 1e-14)


@pytest.mark.parametrize("lik", MOMENT_LIKS, ids=repr)
def test_moments_wide_grid(lik):
    a = np.logspace(-3, 6, 25)
    ms = np.concatenate([-a[::-1], [0.0], a])
    vs = np.concatenate([[0.0, 1e-300], np.logspace(-8, 8, 17), [1e300]])
    for y in (1.0, -1.0):
        for v in vs:
            logZ, d1, d2, dp = lik.gauss_moments(y, ms, v)
            for i in range(0, ms.size, 5):
                _check_moments(lik, y, ms[i], v)
            assert not np.any(np.isnan(np.array([logZ, d1, d2, dp])))
            # log Z is nondecreasing in y m
            lz = logZ[np.argsort(y * ms)]
            lz = lz[np.isfinite(lz)]
            assert np.all(np.diff(lz) >= -1e-13 * np.abs(lz[1:]))
            if lik.code != 2:
                assert np.all(d2 <= 0) and np.all(y * d1 >= 0)


@given(m=st.floats(-1e4, 1e4), v=st.just(0.0) | st.floats(1e-300, 1e6),
       y=st.sampled_from([-1.0, 1.0]),
       which=st.integers(0, len(MOMENT_LIKS) - 1))
@HYP
def test_moments_property(m, v, y, which):
    _check_moments(MOMENT_LIKS[which], y, m, v)


@given(mu=st.floats(-1e3, 1e3), logv=st.floats(-6, 6))
@HYP
def test_logit_predict_matches_moments_property(mu, logv):
    # predict(m, v) = Z(y=+1) = exp(log Z), a probability, on both sides of the switch
    v = 10.0 ** logv
    logZ = Logit().gauss_moments(1, mu, v)[0]
    p = Logit().predict(mu, v)
    assert 0 <= p <= 1
    assert abs(np.exp(logZ) - p) <= 1e-13 * max(p, 1e-300) + 1e-300


# --------------------------------------------------------------------------------
# predictions

def test_predict_closed_forms():
    m = np.linspace(-30, 30, 121)
    for v in (0.0, 0.5, 10.0):
        np.testing.assert_allclose(Probit().predict(m, v), special.ndtr(m / np.sqrt(1 + v)),
                                   rtol=1e-14, atol=1e-300)
        if v > 0:
            np.testing.assert_allclose(Step().predict(m, v), special.ndtr(m / np.sqrt(v)),
                                       rtol=1e-14, atol=1e-300)
            np.testing.assert_allclose(NoisyThreshold(eps=0.1).predict(m, v),
                                       0.1 + 0.8 * special.ndtr(m / np.sqrt(v)), rtol=1e-14)
    np.testing.assert_allclose(NoisyThreshold(eps=0.1).predict([-1, 0, 1], 0.0),
                               [0.1, 0.5, 0.9])


def test_predict_logit_against_quad_and_mackay():
    for m in (-7.0, -1.0, 0.0, 0.4, 3.0):
        for v in (1e-3, 1.0, 2.5, 60.0):
            s = np.sqrt(v)
            ref = _quad(lambda f: special.expit(f) * _normpdf(f, m, v), m - 40 * s,
                        m + 40 * s, points=[0.0] if abs(m) < 40 * s else None, limit=500,
                        epsabs=1e-15, epsrel=1e-13)
            assert abs(Logit().predict(m, v) - ref) < 1e-13
            mk = Logit(predictive="mackay").predict(m, v)
            assert mk == pytest.approx(special.expit(m / np.sqrt(1 + np.pi * v / 8)),
                                       rel=1e-15)
            assert abs(mk - ref) < 0.02        # it is only an approximation


@pytest.mark.parametrize("lik", ALL + [Logit(predictive="mackay")], ids=repr)
def test_predict_properties(lik):
    m = np.concatenate([-np.logspace(-3, 300, 80)[::-1], [0.0], np.logspace(-3, 300, 80)])
    for v in (0.0, 1e-8, 1.0, 1.6, 1e3, 1e8):
        p = lik.predict(m, v)
        assert np.all(np.isfinite(p)) and np.all((p >= 0) & (p <= 1))
        assert np.all(np.diff(p) >= 0)
        np.testing.assert_allclose(p + lik.predict(-m, v), 1.0, rtol=1e-14)
        if not isinstance(lik, Logit) or lik.predictive == "quadrature":
            # predict is Z(y=+1)
            logZ = lik.gauss_moments(1, m, v)[0]
            np.testing.assert_allclose(p, np.exp(logZ), rtol=1e-13, atol=1e-300)


# --------------------------------------------------------------------------------
# input handling

def test_broadcasting_and_scalars():
    lik = Logit()
    out = lik.gauss_moments([[1], [-1]], [0.0, 1.0, 2.0], 0.5)
    assert all(o.shape == (2, 3) for o in out)
    logZ = lik.gauss_moments(1, 0.0, 1.0)[0]
    assert isinstance(logZ, np.floating) and np.ndim(logZ) == 0
    assert np.shape(lik.predict([1.0, 2.0], [[0.1], [0.2], [0.3]])) == (3, 2)
    assert np.shape(Probit().derivatives([1, -1], 0.0)[3]) == (2,)
    assert np.shape(Step().log_lik(np.ones((2, 2), np.int64), 1)) == (2, 2)
    x = np.arange(6.0)[::2]                                  # non-contiguous
    np.testing.assert_array_equal(Probit().log_lik(1, x), special.log_ndtr(x))


def test_input_validation():
    lik = Probit()
    with pytest.raises(ValueError, match="-1 or \\+1"):
        lik.gauss_moments([0, 1], 0.0, 1.0)
    with pytest.raises(ValueError, match="-1 or \\+1"):
        lik.log_lik(2, 0.0)
    with pytest.raises(ValueError, match="non-negative"):
        lik.gauss_moments(1, 0.0, -1.0)
    with pytest.raises(ValueError, match="non-negative"):
        lik.predict(0.0, [1.0, -1e-3])
    with pytest.raises(ValueError):
        lik.gauss_moments(1, [0.0, 1.0], [1.0, 1.0, 1.0])     # not broadcastable
    assert np.isnan(lik.gauss_moments(1, np.nan, 1.0)[0])
    assert np.isnan(Logit().predict(np.nan, 1.0))


def test_kernel_wrapper_validation():
    one = np.ones(3)
    with pytest.raises(ValueError, match="equal lengths"):
        M.gauss_moments(M.LIK_PROBIT, one, np.zeros(2), one)
    with pytest.raises(ValueError, match="unknown likelihood code"):
        M.predict(7, one, one)
    with pytest.raises(ValueError, match="parameter"):
        M.gauss_moments(M.LIK_NOISY_THRESHOLD, one, one, one, np.zeros(0))
    with pytest.raises(ValueError, match="1-D"):
        M.log_lik(M.LIK_PROBIT, np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="quad_x and quad_logw"):
        M.predict(M.LIK_LOGIT, one, one, None, np.zeros(3), np.zeros(2))
    # logit needs a Gauss-Hermite rule for v <= LOGIT_GH_VMAX only
    out = M.gauss_moments(M.LIK_LOGIT, one, one, np.array([0.5, 1.5, 2.0]))
    assert np.isnan(out[0][:2]).all() and np.isfinite(out[0][2])
    x, lw = M.gauss_hermite(64)
    logZ = M.gauss_moments(M.LIK_LOGIT, one, one, one, None, x, lw)[0]
    np.testing.assert_array_equal(logZ, Logit().gauss_moments(1, 1.0, 1.0)[0])
    # the wrappers accept read-only inputs
    ro = np.ones(3)
    ro.flags.writeable = False
    M.predict(M.LIK_PROBIT, ro, ro)


def test_no_overflow_warnings_anywhere():
    m = np.array([-1e308, -1e200, -1e15, -37.0, 0.0, 37.0, 1e15, 1e200, 1e308])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for lik in ALL + [Logit(predictive="mackay")]:
            for v in (0.0, 1e-300, 1.0, 1e300):
                lik.predict(m, v)
                out = lik.gauss_moments(1, m, v)
                assert not np.any(np.isnan(np.array(out)))
                lik.log_lik(-1, m)
        for lik in SMOOTH:
            out = lik.derivatives(1, m)
            assert np.all(np.isfinite(np.array(out[1:])))


def test_base_class_is_abstract_enough():
    assert issubclass(Probit, Likelihood)
    with pytest.raises(TypeError):
        get_likelihood(Likelihood)


# --------------------------------------------------------------------------------
# Gaussian (regression) likelihood

def _gauss_logpdf(y, m, s2):
    return -0.5 * np.log(2 * np.pi * s2) - 0.5 * (y - m) ** 2 / s2


def test_gaussian_construction_and_params():
    assert gl.LIK_GAUSSIAN == M.LIK_GAUSSIAN == 4
    lik = Gaussian()
    assert repr(lik) == "Gaussian(noise_variance=1.0, noise_variance_bounds=(1e-06, 1000000.0))"
    assert lik.code == 4 and lik.name == "gaussian" and lik.has_derivatives
    assert lik.is_classification is False
    assert all(other.is_classification is True for other in ALL)
    assert isinstance(get_likelihood("Gaussian"), Gaussian)
    lik = Gaussian(noise_variance=0.3, noise_variance_bounds=(0.01, 10.0))
    assert lik.param_names == ("noise_variance",)
    np.testing.assert_array_equal(lik.params, [0.3])
    np.testing.assert_array_equal(lik.param_bounds, [[0.01, 10.0]])
    new = lik.with_params([2.0])
    assert new.noise_variance == 2.0 and lik.noise_variance == 0.3
    np.testing.assert_array_equal(Gaussian(0.2, "fixed").param_bounds, [[0.2, 0.2]])
    for kw in [dict(noise_variance=0.0), dict(noise_variance=-1.0),
               dict(noise_variance=np.inf), dict(noise_variance=np.nan),
               dict(noise_variance=20.0, noise_variance_bounds=(0.1, 10.0)),
               dict(noise_variance_bounds=(0.0, 1.0)), dict(noise_variance_bounds=(2.0, 1.0)),
               dict(noise_variance_bounds=(1e-3, np.inf)), dict(noise_variance_bounds="free")]:
        with pytest.raises(ValueError):
            Gaussian(**kw)
    with pytest.raises(TypeError):
        Gaussian(noise_variance="1")
    with pytest.raises(ValueError):
        lik.with_params([100.0])       # outside the bounds
    for other in (pickle.loads(pickle.dumps(lik)), copy.deepcopy(lik)):
        assert repr(other) == repr(lik)


@pytest.mark.parametrize("s2", [1e-4, 0.3, 1.0, 50.0])
def test_gaussian_derivatives(s2):
    lik = Gaussian(s2)
    y = np.array([-3.0, 0.0, 0.25, 7.5])[:, None]
    f = np.linspace(-10, 10, 41)[None, :]
    lp, d1, d2, d3 = lik.derivatives(y, f)
    assert rel_err(lp, _gauss_logpdf(y, f, s2)) < 1e-14
    assert rel_err(lik.log_lik(y, f), lp, floor=0) == 0
    assert rel_err(d1, (y - f) / s2) < 1e-15
    np.testing.assert_array_equal(d2, np.full(d2.shape, -1 / s2))
    np.testing.assert_array_equal(d3, 0.0)
    h = 1e-5 * np.sqrt(s2)
    for k in range(3):
        fd = (lik.derivatives(y, f + h)[k] - lik.derivatives(y, f - h)[k]) / (2 * h)
        exact = (d1, d2, d3)[k]
        noise = 1e-14 * np.maximum(1, np.abs(lik.derivatives(y, f)[k])) / h
        assert np.all(np.abs(fd - exact) <= 1e-7 * np.abs(exact) + noise), k
    # the kernel wrappers take real y for this code
    out = M.loglik_derivs(M.LIK_GAUSSIAN, np.array([0.5]), np.array([0.0]), [s2])
    assert out[1][0] == pytest.approx(0.5 / s2, rel=1e-15)


@pytest.mark.parametrize("s2", [0.05, 1.0, 20.0])
def test_gaussian_moments_against_quad_and_closed_form(s2):
    lik = Gaussian(s2)
    for y in (-2.5, 0.0, 1.3):
        for m in (-4.0, -0.5, 0.0, 2.0):
            for v in (0.0, 0.01, 0.7, 9.0):
                logZ, d1, d2, dpar = lik.gauss_moments(y, m, v)
                S = v + s2
                assert rel_err(logZ, _gauss_logpdf(y, m, S)) < 1e-14
                assert rel_err(d1, (y - m) / S) < 1e-15
                assert rel_err(d2, -1 / S) < 1e-15
                assert rel_err(dpar, 0.5 * ((y - m) ** 2 / S ** 2 - 1 / S)) < 1e-14
                if v > 0:
                    p = lambda f: np.exp(_gauss_logpdf(y, f, s2))  # noqa: E731
                    ref = quad_moments(p, m, v, points=(y,))
                    assert rel_err(logZ, ref[0]) < 1e-9
                    assert rel_err(d1, ref[1]) < 1e-8
                    assert rel_err(d2, ref[2]) < 1e-7


def test_gaussian_moment_derivatives_against_finite_differences():
    y = np.array([-3.0, 0.0, 0.4, 5.0])[:, None]
    m = np.linspace(-8, 8, 33)[None, :]
    for s2 in (0.01, 1.0, 30.0):
        lik = Gaussian(s2)
        for v in (0.0, 0.3, 4.0):
            logZ, d1, d2, dpar = lik.gauss_moments(y, m, v)
            h = 1e-5 * np.sqrt(v + s2)
            up, dn = lik.gauss_moments(y, m + h, v), lik.gauss_moments(y, m - h, v)
            noise = 1e-14 * np.maximum(1, np.abs(logZ)) / h
            assert np.all(np.abs((up[0] - dn[0]) / (2 * h) - d1) <= 1e-7 * np.abs(d1) + noise)
            noise = 1e-14 * np.maximum(1, np.abs(d1)) / h
            assert np.all(np.abs((up[1] - dn[1]) / (2 * h) - d2) <= 1e-7 * np.abs(d2) + noise)
            hs = 1e-5 * s2
            lup = lik.with_params([s2 + hs]).gauss_moments(y, m, v)[0]
            ldn = lik.with_params([s2 - hs]).gauss_moments(y, m, v)[0]
            noise = 1e-14 * np.maximum(1, np.abs(logZ)) / hs
            fd = (lup - ldn) / (2 * hs)
            assert np.all(np.abs(fd - dpar) <= 1e-7 * np.abs(dpar) + noise), (s2, v)


def test_gaussian_kernel_edge_cases():
    one = np.ones(2)
    # a non-positive noise variance gives NaN in the kernels (the class refuses it)
    for s2 in (0.0, -1.0, np.nan):
        assert np.isnan(M.gauss_moments(M.LIK_GAUSSIAN, one, one, one, [s2])).all()
        assert np.isnan(M.loglik_derivs(M.LIK_GAUSSIAN, one, one, [s2])).all()
    # no class probability: the kernel gives NaN, the class raises
    assert np.isnan(M.predict(M.LIK_GAUSSIAN, one, one, [1.0])).all()
    with pytest.raises(ValueError, match="parameter"):
        M.gauss_moments(M.LIK_GAUSSIAN, one, one, one)
    with pytest.raises(ValueError, match="regression likelihood.*latent mean and variance"):
        Gaussian().predict(0.0, 1.0)
    with pytest.raises(ValueError, match="non-negative"):
        Gaussian().gauss_moments(0.0, 0.0, -1.0)
    with pytest.raises(ValueError, match="real numbers"):
        Gaussian().log_lik(["a"], 0.0)
    # far tails stay finite, no warnings
    m = np.array([-1e150, -1e10, 0.0, 1e10, 1e150])
    logZ, d1, d2, dpar = Gaussian(1.0).gauss_moments(0.0, m, 1.0)
    assert np.all(np.isfinite(logZ)) and np.all(np.isfinite(d1)) and np.all(d2 == -0.5)
    assert np.isnan(Gaussian().log_lik(np.nan, 0.0))


def test_check_targets_classification():
    for lik in ALL:
        y = lik.check_targets([1, -1, 1], 3)
        assert y.dtype == np.float64 and y.flags.c_contiguous
        np.testing.assert_array_equal(y, [1.0, -1.0, 1.0])
        np.testing.assert_array_equal(lik.check_targets(np.array([1, -1], np.int8)), [1, -1])
        view = np.array([-1.0, 0.0, 1.0])[::2]                    # non-contiguous
        got = lik.check_targets(view, 2)
        assert got.flags.c_contiguous
        np.testing.assert_array_equal(got, [-1.0, 1.0])
        assert lik.check_targets(np.zeros(0), 0).shape == (0,)
        with pytest.raises(ValueError, match=r"only -1 and \+1 \(found 0.5\)"):
            lik.check_targets([1, 0.5])
        with pytest.raises(ValueError, match=r"-1 and \+1"):
            lik.check_targets([0, 1])
        with pytest.raises(ValueError, match=r"-1 and \+1"):
            lik.check_targets([1.0, np.nan])
        with pytest.raises(ValueError, match="3 labels but 2"):
            lik.check_targets([1, -1, 1], 2)
        with pytest.raises(ValueError, match="1-D"):
            lik.check_targets([[1, -1]])
        with pytest.raises(ValueError, match="1-D"):
            lik.check_targets(1.0)
        with pytest.raises(ValueError, match="numbers -1 and \\+1"):
            lik.check_targets(["a", "b"])


def test_check_targets_regression():
    lik = Gaussian()
    y = lik.check_targets([0.5, -3, 1e10], 3)
    assert y.dtype == np.float64 and y.flags.c_contiguous
    np.testing.assert_array_equal(y, [0.5, -3.0, 1e10])
    np.testing.assert_array_equal(lik.check_targets(np.arange(4, dtype=np.int32)), [0, 1, 2, 3])
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(ValueError, match="finite"):
            lik.check_targets([0.0, bad])
    with pytest.raises(ValueError, match="3 targets but 4"):
        lik.check_targets([1.0, 2.0, 3.0], 4)
    with pytest.raises(ValueError, match="1-D"):
        lik.check_targets(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="real numbers"):
        lik.check_targets(["a", "b"])
    with pytest.raises(ValueError, match="real numbers"):
        lik.check_targets(np.array([1 + 1j]))
