"""Hyperparameter learning on real data: evidence maximisation reaches the optimum
of the evidence it maximises, from any start the user gives, with many inputs.

Reference values come from scikit-learn's own fits in the same test (L-BFGS-B from
the same start) and from gpc's fits with the isotropic kernel, which an ARD kernel
contains: its optimum can never be below the isotropic one's."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessClassifier as SkGPC
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from threadpoolctl import threadpool_limits

import gpc
from gpc.datasets import load_tabular
from gpc.optimize import data_start, median_distance, parameter_groups


def _standardised(X):
    sd = X.std(0)
    return (X - X.mean(0)) / np.where(sd == 0, 1.0, sd)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return _standardised(X[:700]), y[:700]


@pytest.fixture(scope="module")
def tv16():
    X, y, _, _ = load_tabular("tv16")
    return _standardised(X[:300]), y[:300]


# scikit-learn's fits (the references here) of a few hundred points run on one
# BLAS thread: its threads only wait on a busy 2-core machine (a fit of 700
# digits took 94 s with two threads, 7 s with one).  700 points are still slow;
# 200 keep the flat start (K nearly the identity) at a tenth of the cost.
@pytest.mark.parametrize("n", [200, pytest.param(700, marks=pytest.mark.slow)])
def test_a_flat_start_does_not_end_at_a_constant_model(digits, n):
    # From RBF(1.0) on 64 standardised inputs K is nearly the identity; the
    # first quasi-Newton steps used to leap to a length scale of 1e5, where the
    # evidence is flat (a constant prediction, log evidence -235 for 700 points,
    # -71 for 200).  The start at the inputs' median distance reaches
    # scikit-learn's optimum.
    X, y = digits
    X, y = X[:n], y[:n]
    y0 = (y == 0).astype(int)
    ours = gpc.GaussianProcessClassifier(1.0 * RBF(1.0)).fit(X, y0)
    with threadpool_limits(limits=1, user_api="blas"):   # see above
        ref = SkGPC(1.0 * RBF(1.0)).fit(X, y0)
    assert ours.log_marginal_likelihood_value_ >= \
        ref.log_marginal_likelihood_value_ - 1e-6
    assert ours.log_marginal_likelihood_value_ > -30.0
    assert ours.base_estimator_.optimizer_result_.stationary


def test_ard_ends_at_or_above_the_isotropic_optimum(tv16):
    X, y = tv16
    d = X.shape[1]
    iso = gpc.GaussianProcessClassifier(C(1.0) * RBF(1.0)).fit(X, y)
    ard = gpc.GaussianProcessClassifier(C(1.0) * RBF(np.ones(d))).fit(X, y)
    assert ard.log_marginal_likelihood_value_ >= \
        iso.log_marginal_likelihood_value_ - 1e-6
    for clf in (iso, ard):
        assert clf.base_estimator_.optimizer_result_.stationary


def test_ard_on_breast_cancer_reaches_scikit_learns_evidence():
    X, y = load_breast_cancer(return_X_y=True)
    X = _standardised(X)[::2]
    y = y[::2]
    kernel = C(1.0) * RBF(np.ones(X.shape[1]))
    with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="blas"):
        warnings.simplefilter("ignore")            # scikit-learn's bound warnings
        ref = SkGPC(kernel).fit(X, y)
    ours = gpc.GaussianProcessClassifier(kernel).fit(X, y)
    assert ours.log_marginal_likelihood_value_ >= \
        ref.log_marginal_likelihood_value_ - 1e-6


def test_multinomial_learning_starts_from_the_data(digits):
    X, y = digits
    keep = y < 3
    clf = gpc.GaussianProcessClassifier(1.0 * RBF(1.0), multi_class="multinomial")
    clf.fit(X[keep], y[keep])
    # Not the flat corner of a huge length scale: the classes are separated.
    assert clf.kernel_.k2.length_scale < 1e3
    assert clf.score(X[keep], y[keep]) == 1.0


def test_tied_stage_and_data_start_helpers():
    kernel = C(1.0) * RBF(np.ones(3)) + C(0.5)
    np.testing.assert_array_equal(parameter_groups([kernel], n_extra=1),
                                  [0, 1, 1, 1, 2, 3])
    theta = data_start([kernel], np.r_[kernel.theta, 0.0], 4.0)
    np.testing.assert_allclose(theta, [0.0, *np.log([4.0] * 3), np.log(0.5), 0.0])
    assert data_start([kernel], kernel.theta, None) is not kernel.theta
    X = np.random.RandomState(0).randn(3000, 5)
    # The median distance of a 1000-row subset: close to that of all rows.
    from scipy.spatial.distance import pdist
    assert median_distance(X) == pytest.approx(np.median(pdist(X)), rel=0.02)
    assert median_distance(np.zeros((5, 2))) is None
    assert median_distance(np.array([["a"], ["b"]])) is None


def test_tied_stage_reaches_what_the_free_one_cannot_from_its_start():
    # An objective whose free maximisation from the start stops on a plateau
    # (the gradient vanishes where the two coordinates differ much), while
    # along the tied direction it rises to the optimum.
    def fun(t):
        a, b = t
        w = np.exp(-(a - b) ** 2)
        value = w * -((a - 2.0) ** 2 + (b - 2.0) ** 2)
        da = w * (-2 * (a - 2.0)) - 2 * (a - b) * value
        db = w * (-2 * (b - 2.0)) + 2 * (a - b) * value
        return value, np.array([da, db])

    bounds = [(-5.0, 5.0)] * 2
    tied = gpc.maximize_evidence(fun, [0.0, 0.0], bounds, groups=[0, 0])
    np.testing.assert_allclose(tied.theta, [2.0, 2.0], atol=1e-4)
    assert tied.projected_gradient <= 1e-3 and tied.stationary


def test_a_non_stationary_end_is_reported():
    # A kink at 1.234: L-BFGS-B stops on it with a gradient of 1.
    fun = lambda t: (-abs(t[0] - 1.234), np.array([-np.sign(t[0] - 1.234), 0.0]))
    with pytest.warns(ConvergenceWarning, match="projected gradient is 1 "):
        res = gpc.maximize_evidence(fun, [0.0, 0.0], [(-5.0, 5.0)] * 2)
    assert res.projected_gradient == pytest.approx(1.0) and not res.stationary
    assert abs(res.theta[0] - 1.234) < 1e-3


@pytest.mark.parametrize("output", [
    lambda t: (-float(t @ t), -2 * t[:1]),          # a gradient too short
    lambda t: (-float(t @ t), -2 * t[:, None]),     # a column
    lambda t: (-(t * t), -2 * t),                   # a vector for the value
])
def test_an_objective_of_the_wrong_shapes_is_an_error(output):
    # A gradient of the wrong shape made every step fail: the start came back.
    with pytest.raises(ValueError, match=r"gradient of theta's shape \(2,\)"):
        gpc.maximize_evidence(output, [1.0, 1.0], [(-5.0, 5.0)] * 2)


def test_sparse_ard_ends_at_or_above_the_isotropic_optimum():
    X, y, _, _ = load_tabular("cps1988")
    X, y = _standardised(X[:11000]), y[:11000]
    fits = {}
    for name, kernel in (("iso", C(1.0) * RBF(1.0)),
                         ("ard", C(1.0) * RBF(np.ones(X.shape[1])))):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            fits[name] = gpc.SparseGPClassifier(kernel, max_basis=30,
                                                random_state=0).fit(X, y)
        info = fits[name].inference_info_
        assert info["stages"] == [5000, 11000]
        # Stationary on the whole data (a projected gradient per example of at
        # most TOL_PER_EXAMPLE, or a quasi-Newton gain below a hundredth of it).
        assert info["stationary"]
    assert fits["ard"].log_marginal_likelihood_value_ >= \
        fits["iso"].log_marginal_likelihood_value_ - 1e-6 * 11000


def test_sparse_and_multinomial_fits_warn_at_a_bound():
    # As the binary estimator (and scikit-learn's) does: a learnt hyperparameter
    # that ends at its bound is named.
    rng = np.random.RandomState(0)
    X = rng.randn(3000, 2)
    y = (X[:, 0] + 0.3 * rng.randn(3000) > 0).astype(int)
    kernel = C(1.0) * RBF(1.0, length_scale_bounds=(1e-2, 5e-2))
    with pytest.warns(ConvergenceWarning, match="length_scale is close to the "
                      "specified upper bound"):
        clf = gpc.SparseGPClassifier(kernel, max_basis=20, random_state=0).fit(X, y)
    # The median-distance start (1.6) lies outside the bounds: clipped to them.
    assert clf.kernel_.k2.length_scale == pytest.approx(5e-2)
    y3 = np.digitize(X[:300, 0], [-0.5, 0.5])
    with pytest.warns(ConvergenceWarning, match="length_scale is close to the "
                      "specified upper bound"):
        gpc.GaussianProcessClassifier(kernel, multi_class="multinomial").fit(
            X[:300], y3)
