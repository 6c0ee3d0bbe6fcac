"""Adding an inference method as CONTRIBUTING.md ("Adding an inference method")
describes it: one function with the method's signature, one registration, and no
other test edited.

The toy method, "prior only", keeps every site at zero: its posterior is the prior,
and its log evidence is ``sum_i log E_{N(0, K_ii)}[p(y_i | f)]``, which ignores the
correlations of the prior and is exact for a diagonal K.  It is registered only
for the tests that use it (a fixture), and unregistered after them, so that the
registry of the other tests stays as it is.
"""

import warnings

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

import gpc
from gpc.inference import InferenceResult, register, unregister
from gpc.inference import INFO_KEYS
from gpc.posterior import ExplicitPosterior

from _sites import data, se


# Step 1: the function (in gpc, its own module gpc/inference/prior_only.py).
def prior_only(K, y, likelihood, *, init=None, compute_gradient=True):
    """Fixed zero sites: the posterior is the prior N(0, K).

    The log evidence is ``sum_i log Z_i`` with ``Z_i = E[p(y_i | f)]`` under the
    prior marginal ``N(0, K_ii)``; only the diagonal of K enters it, so ``dK`` is
    diagonal, ``d log Z_i / d K_ii = (d2_i + d1_i^2) / 2`` (``d1``, ``d2`` the
    first two derivatives of ``log Z_i`` in the mean).
    """
    n = K.shape[0]
    var = np.array(np.diag(K))
    log_z, d1, d2, dpar = likelihood.gauss_moments(y, np.zeros(n), var)
    log_evidence = float(np.sum(log_z))
    if not np.isfinite(log_evidence):
        raise gpc.NumericalError("prior_only: the log evidence is not finite.",
                                 "prior_only")
    dK = dlik = None
    if compute_gradient:
        dK = np.diag(0.5 * (d2 + d1 * d1))
        dlik = np.full(len(likelihood.params), float(np.sum(dpar)))
    return InferenceResult(
        posterior=ExplicitPosterior(np.zeros(n), np.zeros((n, n)),
                                    marginal_mean=np.zeros(n), marginal_var=var),
        log_evidence=log_evidence, dK=dK, dlik=dlik,
        info={"method": "prior_only", "likelihood": likelihood.name,
              "converged": True, "n_iter": 0, "jitter": 0.0})


# Step 2: the registration (in gpc, the decorator on the function), here for the
# tests that ask for it only.
@pytest.fixture
def method():
    before = gpc.available_methods()
    register("prior_only", max_iter_option=None)(prior_only)
    yield "prior_only"
    unregister("prior_only")
    assert gpc.available_methods() == before


def _problem(n=12):
    X, y = data(n, 7)
    return X, y, se(X, 1.0, 2.0)


def test_infer_runs_the_new_method(method):
    X, labels, K = _problem()
    y = 2.0 * labels + 0.3 * X[:, 1]            # regression targets: Z_i varies
    res = gpc.infer(K, y, method=method, likelihood="gaussian")
    assert res.info["method"] == method
    for key, kind in INFO_KEYS.items():
        assert isinstance(res.info[key], kind), key
    np.testing.assert_array_equal(res.posterior.marginal_var, np.diag(K))
    # For a diagonal K the sites' independence is exact: EP agrees.
    D = np.diag(np.linspace(0.5, 3.0, y.shape[0]))
    ep = gpc.infer(D, y, method="ep", likelihood="gaussian")
    toy = gpc.infer(D, y, method=method, likelihood="gaussian")
    assert toy.log_evidence == pytest.approx(ep.log_evidence, rel=1e-10)
    # dK is the derivative of the evidence in the diagonal of K.
    h = 1e-6
    for i in (0, 5):
        E = np.zeros_like(K)
        E[i, i] = h
        up = gpc.infer(K + E, y, method=method, likelihood="gaussian").log_evidence
        down = gpc.infer(K - E, y, method=method, likelihood="gaussian").log_evidence
        assert res.dK[i, i] == pytest.approx((up - down) / (2 * h), rel=1e-6)
    with pytest.raises(ValueError, match="'tol' is not an option of "
                                         "method='prior_only'"):
        gpc.infer(K, y, method=method, tol=1e-3)


def test_the_classifier_uses_the_new_method(method):
    X, y, _ = _problem()
    clf = gpc.GaussianProcessClassifier(C(1.0) * RBF(1.0), method=method,
                                        likelihood="probit").fit(X, y)
    assert clf.base_estimator_.inference_info_["method"] == method
    # The prior gives each label probability 1/2, whatever the hyperparameters:
    # the evidence is n log(1/2), its gradient zero, and no input is told apart.
    assert clf.log_marginal_likelihood_value_ == pytest.approx(len(y) * np.log(0.5))
    value, grad = clf.log_marginal_likelihood(clf.kernel_.theta, eval_gradient=True)
    assert value == pytest.approx(len(y) * np.log(0.5))
    np.testing.assert_allclose(grad, 0.0, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # "tied class probabilities"
        np.testing.assert_allclose(clf.predict_proba(X), 0.5)
