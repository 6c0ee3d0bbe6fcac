"""Every method x likelihood pair's evidence is smooth in the hyperparameters, its
gradient is right, and a lower bound is a bound.

The pairs come from the registries (``_registry``), so a new method or likelihood
is held to these properties without editing this file.  The data are
scikit-learn's ``test_gpc.py``: 30 inputs on [0, 10], labels ``sin(x) > 0``
(targets ``sin(x)`` for the regression likelihoods), with the kernel
``sf2 * RBF(length_scale)``.  A pair may refuse a case only with its own
documented FloatingPointError (e.g. the ensemble mean field on a nearly singular
K), or not converge within its iteration limit (which it says with a
ConvergenceWarning); such points are left out, and every pair must answer
somewhere.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import gpc
from gpc.inference import get_method
from _registry import SUPPORTED, options

X = np.linspace(0, 10, 30)[:, None]
D2 = (X - X.T) ** 2
LABELS = np.where(np.sin(X[:, 0]) > 0, 1.0, -1.0)
TARGETS = np.sin(X[:, 0])
#: The signal variance: large enough that the likelihoods' shapes matter.
SF2 = 4.0
#: Length scales of the gradient check (0.3 to 30).
LENGTH_SCALES = [0.3, 1.0, 3.0, 10.0, 30.0]


def _targets(likelihood):
    return LABELS if gpc.get_likelihood(likelihood).is_classification else TARGETS


def _evidence(pair, log_ls, init=None):
    """(log evidence, its derivative in log length scale, state), or None where
    the method refuses the case with its own FloatingPointError.  ``init``: a
    neighbouring point's state, to follow the fixed point reached there."""
    method, updates, likelihood = pair
    K = SF2 * np.exp(-0.5 * D2 / np.exp(2 * log_ls))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = gpc.infer(K, _targets(likelihood), method=method,
                            likelihood=likelihood, tol=_TOL.get(method, 1e-10),
                            init=init, **options(updates))
    except FloatingPointError as exc:
        assert isinstance(exc, gpc.NumericalError) and exc.method == method, exc
        return None
    if not res.info.get("converged", True):
        return None               # said with a ConvergenceWarning; not an answer
    grad = float(np.sum(res.dK * K * D2 / np.exp(2 * log_ls)))
    return res.log_evidence, grad, res.state


#: Iteration tolerances tight enough for central differences at step 1e-2.
_TOL = {"laplace": 1e-12, "mean_field": 1e-12, "naive_mean_field": 1e-12,
        "vb": 1e-8}

GRADIENT_PAIRS = [p for p in SUPPORTED if get_method(p[0]).has_gradient]


def _name(pair):
    return "-".join(part for part in pair if part)


@pytest.mark.parametrize("pair", GRADIENT_PAIRS, ids=_name)
def test_gradient_equals_richardson_differences(pair):
    # The neighbours start from the centre's state: where a likelihood that is not
    # log-concave gives several fixed points, the gradient is that of the one
    # reached (the branch that evidence maximisation's warm starts follow).
    answered = 0
    for ls in LENGTH_SCALES:
        t = np.log(ls)
        here = _evidence(pair, t)
        if here is None:
            continue
        answered += 1
        h = 1e-2
        values = [_evidence(pair, t + s, init=here[2]) for s in (-h, h, -h / 2, h / 2)]
        assert all(v is not None for v in values), (pair, ls)
        d_h = (values[1][0] - values[0][0]) / (2 * h)
        d_h2 = (values[3][0] - values[2][0]) / h
        richardson = (4 * d_h2 - d_h) / 3
        assert here[1] == pytest.approx(richardson, rel=1e-5, abs=1e-7), (pair, ls)
    assert answered > 0, pair


def _simpson_holds(points, h):
    """Whether three equally spaced (value, gradient, ...) points agree with
    Simpson's rule on the gradient."""
    (f0, g0, _), (_, g1, _), (f2, g2, _) = points
    simpson = h / 3 * (g0 + 4 * g1 + g2)
    return abs(f2 - f0 - simpson) <= 1e-6 * (1 + abs(f0))


def _followed_smoothly(pair, t0, t2, p0, depth=4):
    """Whether the evidence, followed from ``p0`` (the point at ``t0``, each next
    run started from the previous one's state) to ``t2``, moves as its gradient
    says: Simpson's rule holds over [t0, t2], or over each half, recursively
    (``depth`` halvings).  A smooth branch passes as the steps shrink (the rule's
    error falls as their fifth power, which a steep stretch before a fold of the
    branch needs), a jump never does."""
    t1 = (t0 + t2) / 2
    p1 = _evidence(pair, t1, init=p0[2])
    p2 = None if p1 is None else _evidence(pair, t2, init=p1[2])
    if p2 is None:
        return False
    if _simpson_holds([p0, p1, p2], (t2 - t0) / 2):
        return True
    return (depth > 0 and _followed_smoothly(pair, t0, t1, p0, depth - 1)
            and _followed_smoothly(pair, t1, t2, p1, depth - 1))


@pytest.mark.parametrize("pair", GRADIENT_PAIRS, ids=_name)
def test_evidence_is_smooth_over_a_fine_grid(pair):
    # Between grid points the evidence must move as its gradient says: Simpson's
    # rule on the analytic gradient over each pair of steps agrees with the
    # evidence's change to within the rule's error, so a jump (a discontinuity
    # of the kind the quadrature of a step gave PL, 0.14 nats) cannot hide.
    # Runs start from the prior, as a first evaluation does.  With a likelihood
    # that is not log-concave (the noisy threshold), EP and PL can have two fixed
    # points at once, and the one reached from the prior can change between grid
    # points; there the evidence must be smooth along the branch that a
    # warm-started run follows from one side or the other.
    grid = np.linspace(np.log(0.3), np.log(30.0), 241)
    h = grid[1] - grid[0]
    points = [_evidence(pair, t) for t in grid]
    ok = np.array([p is not None for p in points])
    assert ok.any(), pair
    log_concave = gpc.get_likelihood(pair[2]).log_concave
    for k in range(1, len(grid) - 1):
        if not ok[k - 1:k + 2].all() or _simpson_holds(points[k - 1:k + 2], h):
            continue
        assert not log_concave, (pair, np.exp(grid[k]))
        assert (_followed_smoothly(pair, grid[k - 1], grid[k + 1], points[k - 1])
                or _followed_smoothly(pair, grid[k + 1], grid[k - 1], points[k + 1])
                ), (pair, np.exp(grid[k]))


BOUND_PAIRS = [p for p in SUPPORTED if get_method(p[0]).lower_bound]


@pytest.mark.parametrize("pair", BOUND_PAIRS, ids=_name)
def test_a_lower_bound_stays_below_ep_and_rises_as_it_converges(pair):
    method, updates, likelihood = pair
    answered = 0
    for ls in LENGTH_SCALES:
        K = SF2 * np.exp(-0.5 * D2 / ls ** 2)
        y = _targets(likelihood)
        values = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                for max_iter in range(1, 200):
                    res = gpc.infer(K, y, method=method, likelihood=likelihood,
                                    max_iter=max_iter, **options(updates))
                    values.append(res.log_evidence)
                    if res.info["converged"]:
                        break
            except FloatingPointError:
                continue
        answered += 1
        assert res.info["converged"], (pair, ls)
        assert np.all(np.diff(values) >= -1e-9 * (1 + np.abs(values[1:]))), (pair, ls)
        ep = gpc.infer(K, y, method="ep", likelihood=likelihood, tol=1e-10)
        assert values[-1] <= ep.log_evidence, (pair, ls)
    assert answered > 0, pair
