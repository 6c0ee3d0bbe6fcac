"""Tests of the Laplace and one-sided exponential regression likelihoods and of the
EM statistic (gpc.likelihoods, gpc._moments, src_c/_lik.pxd)."""

import copy
import pickle
import warnings

import numpy as np
import pytest
from scipy import integrate

import gpc.likelihoods as gl
from gpc import _moments as M
from gpc.likelihoods import (Gaussian, Laplace, Logit, NoisyThreshold,
                             NotDifferentiableError, OneSidedExponential, Probit, Step,
                             get_likelihood)
from gpc.likelihoods._base import _REGISTRY

# Every numerical test runs with warnings as errors: no overflow / invalid warnings.
pytestmark = pytest.mark.filterwarnings("error")

KINDS = {"laplace": Laplace, "one_sided": OneSidedExponential}
MUS = (-30.0, -3.0, -0.5, 0.0, 0.5, 3.0, 30.0)          # y - m
VS = (1e-4, 0.1, 1.0, 25.0)
RATES = (0.5, 2.0)
QUANTITIES = ("logZ", "dlogZ", "d2logZ", "dpar", "em")


# --------------------------------------------------------------------------------
# reference: adaptive quadrature of the tilted distribution

def _quad(fun, a, b, points):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        return integrate.quad(fun, a, b, points=points, limit=5000, epsabs=0.0,
                              epsrel=2e-14)[0]


def tilted_reference(kind, lam, mu, v):
    """Quadrature of the tilted law of the noise z = y - f ~ N(mu, v) x p(z).

    The integration variable is u = z - z0 (z0 the mode of the tilted density) and
    every exponent is written as a difference from its value at the mode, so that
    neither large offsets (|mu| >> sqrt v) nor large exponents lose digits.
    Breakpoints: the kink z = 0 (f = y), the mode, and multiples of the local
    widths (sqrt v and the decay lengths at the kink).  Returns log Z, the
    m-derivatives d log Z/dm = (E_t[f] - m)/v and d2 = (Var_t[f] - v)/v^2, the rate
    derivative E_t[d log p/d lam], the EM statistic and the tilted variance.
    """
    s = np.sqrt(v)
    if kind == "laplace":
        if mu - lam * v > 0:
            z0, d0 = mu - lam * v, -lam * v           # d0 = z0 - mu, exactly
        elif mu + lam * v < 0:
            z0, d0 = mu + lam * v, lam * v
        else:
            z0, d0 = 0.0, -mu

        def dlogp(u):                                 # log p(z0 + u) - log p(z0)
            z = z0 + u
            if z0 != 0 and (z > 0) == (z0 > 0):
                return -lam * np.sign(z0) * u
            return -lam * (abs(z) - abs(z0))

        logp0 = np.log(lam / 2) - lam * abs(z0)
        stat = lambda u: abs(z0 + u)  # noqa: E731
        lo, hi = -60 * s, 60 * s
        slopes = (abs(mu / v - lam), abs(mu / v + lam))
    else:
        if mu - lam * v > 0:
            z0, d0 = mu - lam * v, -lam * v
        else:
            z0, d0 = 0.0, -mu
        dlogp = lambda u: -lam * u  # noqa: E731
        logp0 = np.log(lam) - lam * z0
        stat = lambda u: z0 + u  # noqa: E731
        lo, hi = -z0, 60 * s                           # z > 0 only
        slopes = (abs(mu / v - lam),)
    w = lambda u: np.exp(dlogp(u) - u * (u + 2 * d0) / (2 * v))  # noqa: E731
    pts = {0.0, -z0}
    for width in (s,) + tuple(1 / sl for sl in slopes if sl > 0):
        for k in (0.5, 1, 2, 4, 8, 16, 32):
            pts.update((k * width, -k * width))
    pts = sorted(p for p in pts if lo < p < hi)
    I0 = _quad(w, lo, hi, pts)
    Eu = _quad(lambda u: u * w(u), lo, hi, pts) / I0
    var = _quad(lambda u: (u - Eu) ** 2 * w(u), lo, hi, pts) / I0
    em = _quad(lambda u: stat(u) * w(u), lo, hi, pts) / I0
    # d log p / d lam = 1/lam - |z| (Laplace), 1/lam - z (one-sided)
    dpar = _quad(lambda u: (1 / lam - stat(u)) * w(u), lo, hi, pts) / I0
    mean_shift = d0 + Eu                              # E_t[z] - mu = m - E_t[f]
    return dict(logZ=logp0 - 0.5 * d0 * d0 / v + np.log(I0) - 0.5 * np.log(2 * np.pi * v),
                dlogZ=-mean_shift / v, d2logZ=(var - v) / v ** 2, dpar=dpar, em=em,
                var=var, shift=mean_shift)


def reference_scales(ref, lam, v):
    """Size of the terms each reference value is formed from: its attainable
    absolute accuracy is ~1e-14 of this (d2 = (Var - v)/v^2 and dpar = 1/lam - E|z|
    cancel in the reference itself)."""
    return dict(logZ=max(1.0, abs(ref["logZ"])),
                dlogZ=(abs(ref["shift"]) + np.sqrt(v)) / v,
                d2logZ=(ref["var"] + ref["shift"] ** 2) / v ** 2,
                dpar=1 / lam + ref["em"], em=ref["em"])


def kernel_values(lik, y, m, v):
    logZ, d1, d2, dpar = lik.gauss_moments(y, m, v)
    return dict(logZ=logZ, dlogZ=d1, d2logZ=d2, dpar=dpar, em=lik.em_statistic(y, m, v))


# --------------------------------------------------------------------------------
# moments and EM statistic against quadrature

@pytest.mark.parametrize("lam", RATES)
@pytest.mark.parametrize("kind", list(KINDS))
def test_moments_against_quadrature(kind, lam):
    lik = KINDS[kind](rate=lam)
    y = 1.7
    worst_scaled = dict.fromkeys(QUANTITIES, 0.0)
    worst_rel = dict.fromkeys(QUANTITIES, 0.0)
    for mu in MUS:
        for v in VS:
            got = kernel_values(lik, y, y - mu, v)
            ref = tilted_reference(kind, lam, mu, v)
            scale = reference_scales(ref, lam, v)
            for q in QUANTITIES:
                assert np.isfinite(got[q]), (q, mu, v)
                err = abs(got[q] - ref[q])
                worst_scaled[q] = max(worst_scaled[q], err / scale[q])
                if abs(ref[q]) > 1e-3 * scale[q]:          # the reference is accurate
                    worst_rel[q] = max(worst_rel[q], err / abs(ref[q]))
    # measured: scaled <= 2e-14, relative <= 5e-14
    assert max(worst_scaled.values()) < 1e-12, worst_scaled
    assert max(worst_rel.values()) < 5e-12, worst_rel


@pytest.mark.parametrize("kind", list(KINDS))
def test_moments_in_the_tails_against_quadrature(kind):
    # |y - m| up to 1e3, v from 1e-2 to 1e4, rates over the whole default range:
    # finite, and right to the accuracy of the reference.
    worst = 0.0
    for lam in (1e-3, 0.5, 2.0, 1e3):
        lik = KINDS[kind](rate=lam)
        for mu in (-1e3, -100.0, 100.0, 1e3):
            for v in (1e-2, 1.0, 1e2, 1e4):
                got = kernel_values(lik, mu, 0.0, v)
                assert all(np.isfinite(got[q]) for q in QUANTITIES), (lam, mu, v, got)
                ref = tilted_reference(kind, lam, mu, v)
                scale = reference_scales(ref, lam, v)
                worst = max(worst, max(abs(got[q] - ref[q]) / scale[q] for q in QUANTITIES))
    assert worst < 1e-11          # measured 4e-13 (the reference's own error)


@pytest.mark.parametrize("kind", list(KINDS))
def test_far_tails_are_finite(kind):
    y = np.array([-1e3, -300.0, -37.0, 0.0, 37.0, 300.0, 1e3])[:, None]
    for lam in (1e-3, 1.0, 1e3):
        lik = KINDS[kind](rate=lam)
        for v in (1e-2, 1.0, 1e2, 1e4):
            out = np.array(lik.gauss_moments(y, 0.0, v))
            assert np.all(np.isfinite(out)), (lam, v)
            stat = lik.em_statistic(y, 0.0, v)
            assert np.all(np.isfinite(stat)) and np.all(stat > 0)
            assert np.all(out[2] <= 0)                    # log-concave in m


def test_one_sided_tail_asymptotics():
    # m far above y: the tilted mass sits just below f = y, so d log Z/dm -> (y - m)/v,
    # d2 -> -1/v and E_t[y - f] -> v/(m - y) (continued fraction, no cancellation).
    lik = OneSidedExponential(rate=1.0)
    for v in (1e-2, 1.0, 1e2):
        m = 1e3 * max(1.0, v)
        logZ, d1, d2, dpar = lik.gauss_moments(0.0, m, v)
        a = (-m - v) / np.sqrt(v)
        assert d1 == pytest.approx(-m / v, rel=2 / a ** 2)
        assert d2 == pytest.approx(-1 / v, rel=3 / a ** 2)
        assert lik.em_statistic(0.0, m, v) == pytest.approx(np.sqrt(v) / -a, rel=2 / a ** 2)
        assert dpar == pytest.approx(1.0 - lik.em_statistic(0.0, m, v), rel=1e-15)
        assert logZ == pytest.approx(-0.5 * m * m / v - np.log(-a * np.sqrt(2 * np.pi)),
                                     rel=1e-6)


def test_laplace_first_derivative_keeps_relative_accuracy_near_the_kink():
    # d log Z/dm = lam (P(z > 0) - P(z < 0)) is odd in mu = y - m: for small mu the
    # reference is lam * int exp(-lam z) sinh(z mu/v) .. / int exp(-lam z) cosh(..),
    # both with the factor exp(-(z - mu)^2/(2v)) taken relative to its maximum.
    worst = 0.0
    for lam in (0.5, 2.0):
        for v in (1e-4, 1.0, 25.0, 1e4):
            s = np.sqrt(v)
            for mu in (1e-12, 1e-8, 1e-5, 1e-3, 0.1 * s, 0.5 * s, 2 * s):
                z0 = max(mu - lam * v, 0.0)
                d0 = z0 - mu
                g = lambda u: np.exp(-lam * u - u * (u + 2 * d0) / (2 * v))  # noqa: E731
                pts = sorted({k * wd for k in (0.5, 1, 2, 4, 8, 16) for wd in (s, 1 / lam)})
                pts = [p for p in pts if p < 60 * s]
                num = _quad(lambda u: g(u) * -np.expm1(-2 * (z0 + u) * mu / v), -z0,
                            60 * s, pts)
                den = _quad(lambda u: g(u) * (1 + np.exp(-2 * (z0 + u) * mu / v)), -z0,
                            60 * s, pts)
                ref = lam * num / den
                got = Laplace(rate=lam).gauss_moments(mu, 0.0, v)[1]
                worst = max(worst, abs(got - ref) / ref)
                # odd in mu
                assert Laplace(rate=lam).gauss_moments(-mu, 0.0, v)[1] == -got
    assert worst < 1e-13          # measured 2e-15
    assert Laplace().gauss_moments(0.0, 0.0, 1.0)[1] == 0.0


@pytest.mark.parametrize("kind", list(KINDS))
def test_moment_derivatives_against_finite_differences(kind):
    # the kernel's own log Z: d/dm, d2/dm2 and d/d lam by central differences
    y = np.array([-3.0, -0.4, 0.0, 0.3, 2.0, 8.0])[:, None]
    m = np.linspace(-6, 6, 25)[None, :]
    for lam in (0.3, 1.0, 4.0):
        lik = KINDS[kind](rate=lam)
        for v in (0.05, 1.0, 9.0):
            logZ, d1, d2, dpar = lik.gauss_moments(y, m, v)
            h = 1e-5 * np.sqrt(v)
            up, dn = lik.gauss_moments(y, m + h, v), lik.gauss_moments(y, m - h, v)
            noise = 1e-14 * np.maximum(1, np.abs(logZ)) / h
            assert np.all(np.abs((up[0] - dn[0]) / (2 * h) - d1)
                          <= 1e-7 * np.abs(d1) + noise)
            noise = 1e-14 * np.maximum(1, np.abs(d1)) / h
            assert np.all(np.abs((up[1] - dn[1]) / (2 * h) - d2)
                          <= 1e-6 * np.abs(d2) + noise)
            hl = 1e-5 * lam
            lup = lik.with_params([lam + hl]).gauss_moments(y, m, v)[0]
            ldn = lik.with_params([lam - hl]).gauss_moments(y, m, v)[0]
            noise = 1e-14 * np.maximum(1, np.abs(logZ)) / hl
            fd = (lup - ldn) / (2 * hl)
            assert np.all(np.abs(fd - dpar) <= 1e-7 * np.abs(dpar) + noise)
            # the rate derivative is 1/lam minus the EM statistic
            np.testing.assert_allclose(dpar, 1 / lam - lik.em_statistic(y, m, v),
                                       rtol=0, atol=1e-15 * (1 / lam))


@pytest.mark.parametrize("kind", list(KINDS))
def test_rate_derivative_against_quadrature_finite_differences(kind):
    for lam in RATES:
        for mu in (-3.0, 0.5, 3.0):
            for v in (0.1, 1.0):
                h = 1e-4 * lam
                fd = (tilted_reference(kind, lam + h, mu, v)["logZ"]
                      - tilted_reference(kind, lam - h, mu, v)["logZ"]) / (2 * h)
                got = KINDS[kind](rate=lam).gauss_moments(mu, 0.0, v)[3]
                assert abs(got - fd) <= 1e-7 * max(1.0, abs(got)), (lam, mu, v)


def test_gaussian_em_statistic_against_quadrature():
    for s2 in (0.05, 1.0, 20.0):
        lik = Gaussian(s2)
        for y in (-2.5, 0.0, 1.3):
            for m in (-4.0, 0.0, 2.0):
                for v in (0.01, 0.7, 9.0):
                    w = lambda f: np.exp(-0.5 * (y - f) ** 2 / s2  # noqa: E731
                                         - 0.5 * (f - m) ** 2 / v)
                    sd = np.sqrt(min(v, s2))
                    mt = m + v * (y - m) / (v + s2)
                    a, b = mt - 60 * sd, mt + 60 * sd
                    pts = [mt, y]
                    pts = sorted(p for p in pts if a < p < b)
                    ref = (_quad(lambda f: (y - f) ** 2 * w(f), a, b, pts)
                           / _quad(w, a, b, pts))
                    assert lik.em_statistic(y, m, v) == pytest.approx(ref, rel=1e-12)
        # v == 0: the point value
        assert lik.em_statistic(1.5, 0.5, 0.0) == 1.0


# --------------------------------------------------------------------------------
# point values, edge cases, log_lik

def test_log_lik():
    f = np.linspace(-4, 4, 33)
    for lam in (0.2, 1.0, 7.0):
        np.testing.assert_allclose(Laplace(rate=lam).log_lik(0.5, f),
                                   np.log(lam / 2) - lam * np.abs(0.5 - f), rtol=1e-15)
        lp = OneSidedExponential(rate=lam).log_lik(0.5, f)
        above = f < 0.5
        np.testing.assert_allclose(lp[above], np.log(lam) - lam * (0.5 - f[above]),
                                   rtol=1e-15)
        assert np.all(lp[~above] == -np.inf)                  # y <= f, y == f included
    assert OneSidedExponential().log_lik(1.0, 1.0) == -np.inf
    assert np.isnan(OneSidedExponential().log_lik(np.nan, 0.0))
    assert np.isnan(Laplace().log_lik(0.0, np.nan))
    for cls in KINDS.values():
        with pytest.raises(NotDifferentiableError):
            cls().derivatives(0.0, 0.0)
        with pytest.raises(ValueError, match="no derivatives"):
            M.loglik_derivs(cls.code, np.zeros(1), np.zeros(1), [1.0])


def test_point_values_at_zero_variance():
    mu = np.array([-2.0, -0.5, 0.0, 0.5, 2.0])
    lam = 1.5
    logZ, d1, d2, dpar = Laplace(rate=lam).gauss_moments(mu, 0.0, 0.0)
    np.testing.assert_allclose(logZ, np.log(lam / 2) - lam * np.abs(mu), rtol=1e-15)
    assert np.all(d1 == 0) and np.all(d2 == 0)
    np.testing.assert_allclose(dpar, 1 / lam - np.abs(mu), rtol=1e-15)
    np.testing.assert_array_equal(Laplace(rate=lam).em_statistic(mu, 0.0, 0.0), np.abs(mu))
    logZ, d1, d2, dpar = OneSidedExponential(rate=lam).gauss_moments(mu, 0.0, 0.0)
    pos = mu > 0
    np.testing.assert_allclose(logZ[pos], np.log(lam) - lam * mu[pos], rtol=1e-15)
    assert np.all(logZ[~pos] == -np.inf)
    assert np.all(d1 == 0) and np.all(d2 == 0)
    np.testing.assert_allclose(dpar, 1 / lam - np.maximum(mu, 0), rtol=1e-15)
    stat = OneSidedExponential(rate=lam).em_statistic(mu, 0.0, 0.0)
    np.testing.assert_array_equal(stat, np.maximum(mu, 0))
    # and these are the v -> 0 limits (rate derivative, statistic; log Z for y > m)
    for kind, cls in KINDS.items():
        small = np.array(cls(rate=lam).gauss_moments(mu, 0.0, 1e-14))
        point = np.array(cls(rate=lam).gauss_moments(mu, 0.0, 0.0))
        np.testing.assert_allclose(small[3], point[3], atol=1e-6)
        ok = mu != 0 if kind == "laplace" else mu > 0
        np.testing.assert_allclose(small[0][ok], point[0][ok], atol=1e-6)


def test_kernel_edge_cases():
    one = np.ones(3)
    for code in (M.LIK_LAPLACE, M.LIK_ONE_SIDED):
        # v < 0 or NaN, NaN inputs: NaN
        for y, m, v in ((1.0, 0.0, -1.0), (1.0, 0.0, np.nan), (np.nan, 0.0, 1.0),
                        (1.0, np.nan, 1.0), (np.nan, 0.0, 0.0)):
            out = M.gauss_moments(code, [y], [m], [v], [1.0])
            assert np.isnan(out).all(), (code, y, m, v)
            assert np.isnan(M.em_statistic(code, [y], [m], [v], [1.0])).all()
        # an invalid rate gives NaN in the kernels (the classes refuse it)
        for lam in (0.0, -1.0, np.nan):
            assert np.isnan(M.gauss_moments(code, one, one, one, [lam])).all()
            assert np.isnan(M.em_statistic(code, one, one, one, [lam])).all()
            assert np.isnan(M.log_lik(code, one, one - 1, [lam])).all()
        # no class probability
        assert np.isnan(M.predict(code, one, one, [1.0])).all()
        with pytest.raises(ValueError, match="parameter"):
            M.gauss_moments(code, one, one, one)
    assert np.isnan(M.em_statistic(M.LIK_GAUSSIAN, one, one, one, [0.0])).all()
    for code in (M.LIK_PROBIT, M.LIK_LOGIT, M.LIK_STEP):
        with pytest.raises(NotImplementedError):
            M.em_statistic(code, one, one, one)
    with pytest.raises(NotImplementedError):
        M.em_statistic(M.LIK_NOISY_THRESHOLD, one, one, one, [0.1])


# --------------------------------------------------------------------------------
# classes, registry, parameters

def test_codes_registry_and_params():
    assert gl.LIK_LAPLACE == M.LIK_LAPLACE == 5
    assert gl.LIK_ONE_SIDED == M.LIK_ONE_SIDED == 6
    for name, cls, code in (("laplace", Laplace, 5),
                            ("one_sided_exponential", OneSidedExponential, 6)):
        lik = get_likelihood(name)
        assert type(lik) is cls and lik.code == code and lik.name == name
        assert get_likelihood(name.replace("_", "-").upper()).code == code
        assert lik.is_classification is False and lik.has_derivatives is False
        assert lik.has_em_statistic is True
        assert lik.param_names == ("rate",)
        assert repr(lik) == f"{cls.__name__}(rate=1.0, rate_bounds=(0.001, 1000.0))"
        np.testing.assert_array_equal(lik.params, [1.0])
        np.testing.assert_array_equal(lik.param_bounds, [[1e-3, 1e3]])
        new = lik.with_params([2.5])
        assert new.rate == 2.5 and lik.rate == 1.0 and type(new) is cls
        np.testing.assert_array_equal(new.params, [2.5])
        np.testing.assert_array_equal(cls(0.7, "fixed").param_bounds, [[0.7, 0.7]])
        for kw in [dict(rate=0.0), dict(rate=-1.0), dict(rate=np.inf), dict(rate=np.nan),
                   dict(rate=2e3), dict(rate_bounds=(0.0, 1.0)),
                   dict(rate_bounds=(2.0, 3.0)), dict(rate_bounds=(1e-3, np.inf)),
                   dict(rate_bounds="free")]:
            with pytest.raises(ValueError):
                cls(**kw)
        with pytest.raises(TypeError):
            cls(rate="1")
        with pytest.raises(ValueError):
            lik.with_params([1e4])                        # outside the bounds
        for other in (pickle.loads(pickle.dumps(new)), copy.deepcopy(new),
                      get_likelihood(new)):
            assert repr(other) == repr(new)
        assert lik.get_params() == {"rate": 1.0, "rate_bounds": (1e-3, 1e3)}
        with pytest.raises(ValueError, match="regression likelihood"):
            lik.predict(0.0, 1.0)
        with pytest.raises(ValueError, match="non-negative"):
            lik.gauss_moments(0.0, 0.0, -1.0)
        with pytest.raises(ValueError, match="real numbers"):
            lik.log_lik(["a"], 0.0)
        np.testing.assert_array_equal(lik.check_targets([0.5, -3, 2], 3), [0.5, -3.0, 2.0])
        with pytest.raises(ValueError, match="finite"):
            lik.check_targets([0.0, np.nan])
    for name in ("laplace", "one_sided_exponential"):
        assert name in _REGISTRY
    names = {"Laplace", "OneSidedExponential", "LIK_LAPLACE", "LIK_ONE_SIDED"}
    assert names <= set(gl.__all__)


def test_broadcasting_and_shapes():
    lik = Laplace(rate=2.0)
    y = np.array([[0.0], [1.0]])
    out = lik.gauss_moments(y, np.array([0.0, 0.5, 1.0]), 1.0)
    assert all(a.shape == (2, 3) for a in out)
    assert lik.em_statistic(y, np.array([0.0, 0.5, 1.0]), 1.0).shape == (2, 3)
    assert np.ndim(lik.em_statistic(0.0, 0.0, 1.0)) == 0


# --------------------------------------------------------------------------------
# EM

@pytest.mark.parametrize("lik", [Probit(), Logit(), NoisyThreshold(), Step()], ids=repr)
def test_em_not_available_for_classification(lik):
    assert lik.has_em_statistic is False
    with pytest.raises(NotImplementedError):
        lik.em_statistic(1, 0.0, 1.0)
    with pytest.raises(NotImplementedError):
        lik.em_update(np.ones(3), 0.0, 1.0)


def test_em_update_recovers_the_parameter():
    rng = np.random.default_rng(1)
    n = 200_000
    f = rng.normal(scale=3.0, size=n)
    for lam in (0.3, 2.5):
        y = f + rng.laplace(scale=1 / lam, size=n)
        got = Laplace(rate=1.0).em_update(y, f, 1e-10).rate
        assert got == pytest.approx(lam, rel=4 / np.sqrt(n))
        y = f + rng.exponential(scale=1 / lam, size=n)
        got = OneSidedExponential(rate=1.0).em_update(y, f, 1e-10).rate
        assert got == pytest.approx(lam, rel=4 / np.sqrt(n))
    for s2 in (0.01, 4.0):
        y = f + rng.normal(scale=np.sqrt(s2), size=n)
        got = Gaussian(1.0).em_update(y, f, 1e-10).noise_variance
        assert got == pytest.approx(s2, rel=4 * np.sqrt(2 / n))


def test_em_update_is_the_m_step():
    # the statistic's mean gives the maximiser of sum_i E_t[log p(y_i | f_i, lam)]
    rng = np.random.default_rng(2)
    y = rng.normal(size=50)
    m = rng.normal(size=50)
    v = rng.uniform(0.1, 2.0, size=50)
    for cls in (Laplace, OneSidedExponential):
        lik = cls(rate=1.3)
        stat = lik.em_statistic(y, m, v)
        new = lik.em_update(y, m, v)
        assert new.rate == pytest.approx(1 / np.mean(stat), rel=1e-15)
        assert type(new) is cls and lik.rate == 1.3
        obj = lambda r: np.sum(np.log(r) - r * stat)  # noqa: E731  (up to constants)
        assert obj(new.rate) >= max(obj(new.rate * 1.01), obj(new.rate / 1.01))
    lik = Gaussian(0.4)
    stat = lik.em_statistic(y, m, v)
    assert lik.em_update(y, m, v).noise_variance == pytest.approx(np.mean(stat), rel=1e-15)


def test_em_update_bounds_and_errors():
    y, m = np.array([1.5, 0.75, 1.25]), 1.0                 # mean |y - m| = 1/3
    assert Laplace().em_update(y, m, 0.0).rate == pytest.approx(3.0, rel=1e-15)
    assert Laplace(rate_bounds=(0.1, 2.0)).em_update(y, m, 0.0).rate == 2.0
    assert Laplace(rate=1.0, rate_bounds=(1.0, 10.0)).em_update(
        y * 100, m * 100, 0.0).rate == 1.0                   # 1/33.3 clipped up to 1
    fixed = Laplace(rate=0.7, rate_bounds="fixed")
    new = fixed.em_update(y, m, 0.0)
    assert new.rate == 0.7 and new is not fixed
    # a zero statistic (targets on the means, v = 0): the upper bound
    assert OneSidedExponential().em_update([1.0, 2.0], [1.0, 2.0], 0.0).rate == 1e3
    assert Gaussian(noise_variance_bounds=(1e-3, 10.0)).em_update(
        [1.0], [1.0], 0.0).noise_variance == 1e-3
    with pytest.raises(ValueError, match="at least one"):
        Laplace().em_update([], [], [])
    with pytest.raises(ValueError, match="not finite"):
        Laplace().em_update([np.nan, 1.0], 0.0, 1.0)
    with pytest.raises(ValueError, match="non-negative"):
        Laplace().em_update([1.0], 0.0, -1.0)
