"""The tempered likelihoods p(y|f)^c, 0 < c < 1: EP's tilted law for an example of
weight c below 1.  Their Gaussian integrals (log Z and its first two derivatives
in the mean, and in the likelihood's parameter) against scipy's adaptive
quadrature of the integrand itself, over means and variances from the tails to
variances of 1e4; the closed forms (noisy threshold, Gaussian, Laplace,
one-sided exponential, step) likewise; and the power 1 as the limit."""

import warnings

import numpy as np
import pytest
from scipy import integrate, optimize
from scipy.special import log_expit, log_ndtr

from gpc.likelihoods import get_likelihood

LOG_P = {
    "probit": lambda y, f: log_ndtr(y * f),
    "logit": lambda y, f: log_expit(y * f),
    "step": lambda y, f: np.where(y * f > 0, 0.0, -np.inf),
    "noisy_threshold": lambda y, f, eps=0.1: np.log(np.where(y * f > 0, 1 - eps, eps)),
    "gaussian": lambda y, f, s2=0.7: -0.5 * (np.log(2 * np.pi * s2) + (y - f) ** 2 / s2),
    "laplace": lambda y, f, lam=1.3: np.log(0.5 * lam) - lam * np.abs(y - f),
    "one_sided": lambda y, f, lam=1.3: np.where(y - f > 0, np.log(lam) - lam * (y - f),
                                                -np.inf),
}
PARAMS = {"noisy_threshold": {"eps": 0.1}, "gaussian": {"noise_variance": 0.7},
          "laplace": {"rate": 1.3}, "one_sided": {"rate": 1.3}}


def _likelihood(name, **params):
    lik = get_likelihood("one_sided_exponential" if name == "one_sided" else name)
    return lik.set_params(**{**PARAMS.get(name, {}), **params})


def _reference(log_p, y, m, v, c):
    """log Z, d log Z/dm and d2 log Z/dm2 of int N(f; m, v) p^c df by scipy's quad
    of the tilted density (relative to its maximum), with its moments."""
    def h(f):
        with np.errstate(divide="ignore", invalid="ignore"):
            return c * log_p(y, f) - 0.5 * (f - m) ** 2 / v

    with warnings.catch_warnings():         # quad's roundoff notes, -inf sides
        warnings.simplefilter("ignore")
        return _integrate(h, y, m, v)


def _integrate(h, y, m, v):
    reach = 40 * np.sqrt(v) + 40                   # the Gaussian's scale bounds both
    best = optimize.minimize_scalar(lambda f: -h(f), bounds=(m - reach, m + reach),
                                    method="bounded", options={"xatol": 1e-12})
    peak, top = best.x, -best.fun
    a, b = peak - reach, peak + reach
    points = sorted({peak, 0.0, float(y)} & set(np.clip([peak, 0.0, y], a, b)))

    def moment(k):
        return integrate.quad(lambda f: (f - peak) ** k * np.exp(h(f) - top), a, b,
                              points=points, epsabs=0, epsrel=1e-13, limit=1000)[0]

    s0, s1, s2 = moment(0), moment(1), moment(2)
    mean, var = peak + s1 / s0, s2 / s0 - (s1 / s0) ** 2
    return (top + np.log(s0) - 0.5 * np.log(2 * np.pi * v), (mean - m) / v,
            (var - v) / v ** 2)


@pytest.mark.parametrize("name", ["probit", "logit"])
@pytest.mark.parametrize("m", [-7.0, -1.5, 0.0, 2.0])
@pytest.mark.parametrize("v", [1e-3, 0.5, 9.0, 1e4])
@pytest.mark.parametrize("c", [1e-4, 0.3, 0.9])
def test_quadrature_against_scipy(name, m, v, c):
    got = _likelihood(name).gauss_moments(1.0, m, v, power=c)
    ref = _reference(LOG_P[name], 1.0, m, v, c)
    assert got[0] == pytest.approx(ref[0], rel=1e-10, abs=1e-10)
    assert got[1] == pytest.approx(ref[1], rel=1e-8, abs=1e-10 / np.sqrt(v))
    assert got[2] == pytest.approx(ref[2], rel=1e-6, abs=1e-9 / v)


@pytest.mark.parametrize("name", ["noisy_threshold", "gaussian", "laplace", "one_sided",
                                  "step"])
@pytest.mark.parametrize("m, v", [(-1.0, 0.2), (0.5, 3.0), (2.0, 40.0)])
def test_closed_forms_against_scipy(name, m, v):
    c, y = 0.35, 1.0
    got = _likelihood(name).gauss_moments(y, m, v, power=c)
    ref = _reference(LOG_P[name], y, m, v, c)
    np.testing.assert_allclose(got[:3], ref, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name, param, value", [("noisy_threshold", "eps", 0.1),
                                                ("gaussian", "noise_variance", 0.7),
                                                ("laplace", "rate", 1.3),
                                                ("one_sided", "rate", 1.3)])
def test_parameter_derivative_by_central_differences(name, param, value):
    c, h = 0.35, 1e-6
    y, m, v = 1.0, np.array([-1.0, 0.5, 2.0]), np.array([0.2, 3.0, 40.0])

    def log_z(p):
        return _likelihood(name, **{param: p}).gauss_moments(y, m, v, power=c)[0]

    got = _likelihood(name).gauss_moments(y, m, v, power=c)[3]
    np.testing.assert_allclose(got, (log_z(value + h) - log_z(value - h)) / (2 * h),
                               rtol=1e-6)


@pytest.mark.parametrize("name", ["probit", "logit", "noisy_threshold", "gaussian"])
def test_power_one_is_the_likelihood(name):
    lik = _likelihood(name)
    y, m, v = 1.0, np.array([-2.0, 0.3, 1.0]), np.array([0.01, 1.0, 50.0])
    plain = lik.gauss_moments(y, m, v)
    np.testing.assert_array_equal(lik.gauss_moments(y, m, v, power=1.0), plain)
    near = lik.gauss_moments(y, m, v, power=1.0 - 1e-9)
    np.testing.assert_allclose(near[:3], plain[:3], rtol=1e-7, atol=1e-8)


def test_python_likelihoods_refuse_a_power():
    from gpc.likelihoods import Likelihood

    class Cauchit(Likelihood):
        name = "cauchit"

        def log_lik(self, y, f):
            return np.log(0.5 + np.arctan(np.asarray(y) * f) / np.pi)

    assert not Cauchit().tempers
    assert all(_likelihood(name).tempers for name in LOG_P)
    with pytest.raises(ValueError, match="no tempered moments"):
        Cauchit().gauss_moments(1.0, 0.0, 1.0, power=0.5)


@pytest.mark.parametrize("power", [0.0, 1.5, np.nan, -0.2])
def test_powers_outside_zero_one_are_refused(power):
    with pytest.raises(ValueError, match="power must be in"):
        get_likelihood("probit").gauss_moments(1.0, 0.0, 1.0, power=power)
