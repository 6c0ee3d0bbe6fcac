"""gpc's L-BFGS-B against SciPy's: the same algorithm, so the same iterates up to
rounding, the same counts of iterations and evaluations, and the same end."""

import numpy as np
import pytest
import scipy.optimize

from gpc._lbfgsb import minimize


def _rosen(x):
    return scipy.optimize.rosen(x), scipy.optimize.rosen_der(x)


def _quadratic(seed=0, n=20):
    rng = np.random.RandomState(seed)
    A = rng.randn(n, n)
    A = A @ A.T + 0.1 * np.eye(n)
    b = 5.0 * rng.randn(n)
    return lambda x: (0.5 * x @ A @ x - b @ x, A @ x - b)


PROBLEMS = {
    "rosenbrock, 2-D, no bounds": (_rosen, [-1.2, 1.0], None),
    "rosenbrock, 10-D, no bounds": (_rosen, np.full(10, -1.0), None),
    "rosenbrock, upper bounds active": (_rosen, np.full(10, -1.0), [(None, 0.8)] * 10),
    "rosenbrock, boxed": (_rosen, np.full(10, -1.0), [(-2.0, 0.8)] * 10),
    "rosenbrock, mixed bounds, start on one": (
        _rosen, np.linspace(-1.0, 1.0, 10),
        [(-2.0, 2.0) if i % 2 else (None, 0.5) for i in range(10)]),
    "quadratic, boxed": (_quadratic(), np.zeros(20), [(-1.0, 1.0)] * 20),
    "quadratic, lower bounds": (_quadratic(1), np.zeros(20), [(0.0, None)] * 20),
    "quadratic, one variable fixed": (
        _quadratic(2, 5), np.ones(5), [(-3.0, 3.0)] * 4 + [(1.0, 1.0)]),
}


def _scipy(fun, x0, bounds, **options):
    iterates = []
    res = scipy.optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                                  options=options,
                                  callback=lambda xk: iterates.append(np.copy(xk)))
    return res, iterates


@pytest.mark.parametrize("name", PROBLEMS)
def test_iterates_are_scipys(name):
    fun, x0, bounds = PROBLEMS[name]
    ref, ref_iterates = _scipy(fun, x0, bounds)
    iterates = []
    res = minimize(fun, x0, bounds, callback=lambda r: iterates.append(r.x))
    assert (res.nit, res.nfev, res.status) == (ref.nit, ref.nfev, ref.status)
    assert len(iterates) == len(ref_iterates) == res.nit
    for mine, theirs in zip(iterates, ref_iterates):    # rounding, amplified in
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-6)  # the valley
    np.testing.assert_allclose(res.x, ref.x, rtol=0, atol=1e-7)
    assert res.fun == pytest.approx(ref.fun, rel=1e-12, abs=1e-12)
    assert res.message.split(":")[0] == ref.message.split(":")[0]
    if bounds is not None:
        lo = np.array([-np.inf if b[0] is None else b[0] for b in bounds])
        hi = np.array([np.inf if b[1] is None else b[1] for b in bounds])
        assert np.all((res.x >= lo) & (res.x <= hi))


def test_inverse_hessian_holds_scipys_pairs_and_the_newest():
    """Before its store wraps, SciPy's inverse Hessian is built from the pairs
    in order, all but the newest; gpc's from all of them."""
    fun, x0, _ = PROBLEMS["rosenbrock, 10-D, no bounds"]
    ref, _ = _scipy(fun, x0, None, maxiter=6)
    res = minimize(fun, x0, maxiter=6)
    assert res.status == ref.status == 1
    assert res.hess_inv.sk.shape == (6, 10) and ref.hess_inv.sk.shape == (5, 10)
    np.testing.assert_allclose(res.hess_inv.sk[:-1], ref.hess_inv.sk, atol=1e-12)
    np.testing.assert_allclose(res.hess_inv.yk[:-1], ref.hess_inv.yk, atol=1e-12)
    v = np.arange(10.0)                  # and H v by the two-loop recursion
    np.testing.assert_allclose(res.hess_inv.matvec(v), res.hess_inv.todense() @ v)


def test_tolerances_and_limits():
    fun, x0, bounds = PROBLEMS["rosenbrock, boxed"]
    for options in ({"gtol": 1e-3}, {"ftol": 1e-4}, {"maxiter": 7}, {"maxcor": 3},
                    {"maxfun": 10}):
        ref, _ = _scipy(fun, x0, bounds, **options)
        res = minimize(fun, x0, bounds, **options)
        assert (res.nit, res.nfev, res.status) == (ref.nit, ref.nfev, ref.status), \
            options
        np.testing.assert_allclose(res.x, ref.x, rtol=0, atol=1e-9)


def test_start_outside_the_box_is_clipped_and_a_stationary_start_ends_at_once():
    fun = lambda x: (float(((x - 2.0) ** 2).sum()), 2.0 * (x - 2.0))
    res = minimize(fun, [5.0, -7.0], [(-1.0, 1.0), (-5.0, 5.0)])
    np.testing.assert_allclose(res.x, [1.0, 2.0], atol=1e-8)
    res = minimize(fun, [2.0, 2.0])
    assert (res.nit, res.nfev, res.status) == (0, 1, 0)


@pytest.mark.parametrize("start", [[1.0, -2.0], [0.3, 0.1]])
def test_a_wrong_gradient_never_ends_above_the_start(start):
    """A gradient of the wrong sign: every line search ends where the value
    is higher, or (its steps shrunk below the rounding) where it is the same.
    The run ends at the start, with SciPy's verdict, not an exception."""
    fun = lambda x: (float(x @ x), -2.0 * x)
    res = minimize(fun, start)
    ref, _ = _scipy(fun, start, None)
    np.testing.assert_array_equal(res.x, start)
    assert res.fun == fun(np.array(start))[0] and res.status == ref.status


def test_a_value_that_is_not_finite_stops_at_the_best_point():
    """A trial point where the objective is not finite ends that line search;
    with no curvature pairs left, the run stops at its last finite iterate."""
    def fun(x):
        if x[0] > 0.5:
            return np.nan, np.full(1, np.nan)
        return float((x[0] - 3.0) ** 2), np.array([2.0 * (x[0] - 3.0)])

    res = minimize(fun, [0.0])
    assert np.isfinite(res.fun) and res.x[0] <= 0.5 and res.fun <= 9.0
    assert res.status == 2
    with pytest.raises(ValueError, match="shape"):
        minimize(fun, [0.0], [(0.0, 1.0), (0.0, 1.0)])
    with pytest.raises(ValueError, match="greater"):
        minimize(fun, [0.0], [(1.0, 0.0)])
