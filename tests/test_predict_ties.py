"""``predict`` agrees with ``predict_proba`` everywhere, exact ties included.

scikit-learn's contract (its ``test_predict_consistent_structured``): for two
classes, ``predict(X) == classes_[1]`` exactly where ``predict_proba(X)[:, 1] >= 0.5``.
Test points far from the training data have a latent mean of exactly 0 (their
cross-covariances underflow to 0), so their probability is exactly 1/2: a tie that
must go to ``classes_[1]``.  With more classes, ``predict`` is the argmax of
``predict_proba``.
"""

import warnings

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, WhiteKernel

import gpc

METHODS = gpc.available_methods()


def _data(n_classes=2):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 2))
    score = X[:, 0] + 0.3 * rng.standard_normal(40)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    far = 1e3 + rng.standard_normal((5, 2))
    X_test = np.vstack([X, rng.standard_normal((30, 2)), far])
    return X, np.array(["no", "yes", "maybe"])[y], X_test, far.shape[0]


def _check_binary(clf, X_test, n_far):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # the far points' ties
        _check_ties(clf, X_test, n_far)


def _check_ties(clf, X_test, n_far):
    proba = clf.predict_proba(X_test)
    np.testing.assert_array_equal(proba[-n_far:, 1], 0.5)   # exact ties
    np.testing.assert_array_equal(
        clf.predict(X_test), np.where(proba[:, 1] >= 0.5, clf.classes_[1],
                                      clf.classes_[0]))
    assert (clf.predict(X_test[-n_far:]) == clf.classes_[1]).all()


@pytest.mark.parametrize("likelihood", ["probit", "logit"])
@pytest.mark.parametrize("method", METHODS)
def test_dense_predict_follows_predict_proba_at_ties(method, likelihood):
    X, y, X_test, n_far = _data()
    clf = gpc.GaussianProcessClassifier(RBF(1.0) + WhiteKernel(1e-3), optimizer=None,
                                        method=method, likelihood=likelihood)
    _check_binary(clf.fit(X, y), X_test, n_far)


@pytest.mark.parametrize("method", ["ep", "adf"])
def test_sparse_predict_follows_predict_proba_at_ties(method):
    X, y, X_test, n_far = _data()
    clf = gpc.SparseGPClassifier(RBF(1.0), method=method, max_basis=10,
                                 optimizer=None, random_state=0)
    _check_binary(clf.fit(X, y), X_test, n_far)


@pytest.mark.parametrize("estimator", [
    gpc.GaussianProcessClassifier(RBF(1.0), optimizer=None),
    gpc.SparseGPClassifier(RBF(1.0), max_basis=10, optimizer=None, random_state=0)])
def test_multiclass_predict_is_the_argmax_of_predict_proba(estimator):
    X, y, X_test, _ = _data(n_classes=3)
    estimator.fit(X, y)
    np.testing.assert_array_equal(
        estimator.predict(X_test),
        estimator.classes_[np.argmax(estimator.predict_proba(X_test), axis=1)])


def test_tied_probabilities_everywhere_are_warned_about():
    # Raw pixel values against a unit length scale: test digits have no covariance
    # with the training ones, every class probability is 1/3, and predict's classes
    # would follow from rounding.  Said with a warning; scaled inputs give none.
    from sklearn.datasets import load_digits
    X, y = load_digits(n_class=3, return_X_y=True)
    clf = gpc.GaussianProcessClassifier(RBF(1.0), optimizer=None).fit(X[:60], y[:60])
    with pytest.warns(UserWarning, match="All 40 inputs get tied class probabilities"):
        clf.predict(X[60:100])
    scaled = gpc.GaussianProcessClassifier(RBF(30.0), optimizer=None).fit(X[:60], y[:60])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (scaled.predict(X[60:100]) == y[60:100]).mean() >= 0.85


def test_the_warning_names_hyperparameters_at_their_bounds():
    X, y, X_test, _ = _data()
    kernel = RBF(1e-3, length_scale_bounds=(1e-5, 1e-3))
    clf = gpc.GaussianProcessClassifier(kernel).fit(X, y)
    with pytest.warns(UserWarning, match=r"bounds of \['length_scale'\]"):
        clf.predict_proba(X_test[40:])
