"""The estimator: agreement with scikit-learn, scikit-learn conventions, bad input."""

import pickle
import re
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessClassifier as SkGPC
from sklearn.gaussian_process.kernels import RBF, DotProduct, Kernel, Matern, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator
from threadpoolctl import threadpool_limits

import gpc
from gpc import GaussianProcessClassifier
from gpc.datasets import load_dataset, load_pima
from gpc.inference import get_method
from _registry import expected_failed_checks


def binary_data(n=60, d=3, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = (np.sin(2 * X[:, 0]) + X[:, 1] + 0.3 * rng.randn(n) > 0).astype(int)
    return X, y


@pytest.mark.parametrize("kernel", [
    1.0 * RBF(1.0),
    C(3.0) * RBF([0.5, 2.0, 1.0]),
    C(0.5) * Matern(0.8, nu=1.5) + C(0.1),
])
def test_fixed_kernel_matches_sklearn(kernel):
    X, y = binary_data()
    ours = GaussianProcessClassifier(kernel, optimizer=None).fit(X, y)
    ref = SkGPC(kernel, optimizer=None).fit(X, y)
    assert ours.log_marginal_likelihood_value_ == pytest.approx(
        ref.log_marginal_likelihood_value_, rel=1e-6)
    Xt, _ = binary_data(40, seed=1)
    m1, v1 = ours.latent_mean_and_variance(Xt)
    m2, v2 = ref.latent_mean_and_variance(Xt)
    np.testing.assert_allclose(m1, m2, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(v1, v2, rtol=1e-6, atol=1e-12)
    # scikit-learn integrates the logistic against the Gaussian with a 5-erf mixture,
    # gpc with Gauss-Hermite quadrature: they agree to 1e-3.
    np.testing.assert_allclose(ours.predict_proba(Xt), ref.predict_proba(Xt), atol=1e-3)
    np.testing.assert_array_equal(ours.predict(Xt), ref.predict(Xt))


def test_iris_docstring_example():
    # scikit-learn's docstring: score 0.9866..., and its printed probabilities.
    X, y = load_iris(return_X_y=True)
    clf = GaussianProcessClassifier(1.0 * RBF(1.0), random_state=0).fit(X, y)
    assert clf.score(X, y) == pytest.approx(0.98666666, abs=1e-6)
    expected = [[0.83548752, 0.03228706, 0.13222543], [0.79064206, 0.06525643, 0.14410151]]
    np.testing.assert_allclose(clf.predict_proba(X[:2, :]), expected, atol=1e-3)
    # scikit-learn's fit of 50 x 50 matrices on one BLAS thread: threads only
    # wait on a busy 2-core machine (0.5 s instead of 24).
    with threadpool_limits(limits=1, user_api="blas"):
        ref = SkGPC(1.0 * RBF(1.0), random_state=0).fit(X, y)
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(X), atol=1e-3)
    assert clf.log_marginal_likelihood_value_ == pytest.approx(
        ref.log_marginal_likelihood_value_, rel=1e-6)


def test_optimised_evidence_at_least_sklearns():
    X, y = binary_data(80, 3, seed=3)
    kernel = C(1.0) * RBF(np.ones(3))
    ours = GaussianProcessClassifier(kernel).fit(X, y)
    ref = SkGPC(kernel).fit(X, y)
    assert ours.log_marginal_likelihood_value_ >= ref.log_marginal_likelihood_value_ - 1e-6
    # The stored value is the evidence at the stored kernel.
    assert ours.log_marginal_likelihood(ours.kernel_.theta) == pytest.approx(
        ours.log_marginal_likelihood_value_, rel=1e-12)


def test_the_first_optimiser_step_does_not_leap_to_a_corner_of_the_bounds():
    # With every hyperparameter bounded, L-BFGS-B's first trial step is the whole
    # negative gradient: from a gradient of 200 it reached the corner (11.5, 11.5)
    # of the box, where this objective (like a mean-field free energy on a
    # singular K) cannot be evaluated, and the run ended at its start.
    evaluated = []

    def fun(theta):
        evaluated.append(np.array(theta))
        if np.max(np.abs(theta)) > 5.0:
            raise FloatingPointError("cannot be evaluated here")
        return -100.0 * np.sum((theta - 1.0) ** 2), -200.0 * (theta - 1.0)

    res = gpc.maximize_evidence(fun, [0.0, 0.0], [(-11.5, 11.5)] * 2)
    np.testing.assert_allclose(res.theta, [1.0, 1.0], atol=1e-5)
    # The first step is one unit long in log space.
    assert np.linalg.norm(evaluated[1] - evaluated[0]) == pytest.approx(1.0)
    assert all(np.max(np.abs(t)) <= 5.0 for t in evaluated)


def test_vb_probit_learns_from_the_default_start():
    # Once, from C(1) * RBF(1), the first step of the bound's maximisation
    # went to a flat corner of the bounds (theta (-11.5, 11.5): constant
    # probabilities: 0.319**2 * RBF(2.83e+04), training accuracy 0.63, on
    # scikit-learn's breast cancer data).
    from sklearn.datasets import load_breast_cancer
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    clf = GaussianProcessClassifier(C(1.0) * RBF(1.0), method="vb",
                                    likelihood="probit").fit(X, y)
    assert np.all(np.abs(clf.kernel_.theta) < 11.0)
    ep = GaussianProcessClassifier(C(1.0) * RBF(1.0), method="ep",
                                   likelihood="probit").fit(X, y)
    assert clf.score(X, y) >= ep.score(X, y) - 0.02


def test_mean_field_learns_hyperparameters_only_with_a_noise_term():
    # Without a noise term its free energy rises towards the noise-free limit:
    # C * RBF's signal variance went to its upper bound (1e5), with test log loss
    # 2.7 times EP's on scikit-learn's breast cancer data (bench/pairs_cv.py).
    X, y = binary_data(40, 2, seed=1)
    with pytest.raises(ValueError, match="only when the kernel has a white-noise"):
        GaussianProcessClassifier(C(1.0) * RBF(1.0), method="mean_field").fit(X, y)
    noisy = C(1.0) * RBF(1.0) + WhiteKernel(1e-2)
    GaussianProcessClassifier(noisy, method="mean_field").fit(X, y)
    fixed = C(1.0, "fixed") * RBF(1.0, "fixed") + WhiteKernel(1e-2, "fixed")
    GaussianProcessClassifier(fixed, method="mean_field").fit(X, y)
    # Fixed hyperparameters need no noise term (this K is well conditioned).
    GaussianProcessClassifier(C(1.0) * RBF(0.3), method="mean_field",
                              optimizer=None).fit(X, y)
    assert gpc.kernels.has_white_noise(noisy)
    assert gpc.kernels.has_white_noise(gpc.kernels.White(0.1) + RBF(1.0))
    assert not gpc.kernels.has_white_noise(C(1.0) * (RBF(1.0) + WhiteKernel(1.0)))
    assert not gpc.kernels.has_white_noise(RBF(1.0) + WhiteKernel(0.0))


@pytest.mark.parametrize("likelihood", ["probit", "logit"])
def test_gpc_kernels_and_likelihoods(likelihood):
    X, y = binary_data(50, 2, seed=4)
    kernel = gpc.kernels.paper_kernel(length_scale=[1.0, 1.0])
    clf = GaussianProcessClassifier(kernel, likelihood=likelihood).fit(X, y)
    assert clf.score(X, y) > 0.8
    lml, grad = clf.log_marginal_likelihood(clf.kernel_.theta, eval_gradient=True)
    # At the optimum the gradient vanishes where theta is inside its bounds.
    inside = ((clf.kernel_.theta > clf.kernel_.bounds[:, 0] + 1e-6)
              & (clf.kernel_.theta < clf.kernel_.bounds[:, 1] - 1e-6))
    assert np.all(np.abs(grad[inside]) < 1e-3)


def test_likelihood_without_derivatives_is_a_clear_error():
    X, y = binary_data(20)
    with pytest.raises(ValueError, match="derivatives"):
        GaussianProcessClassifier(likelihood="step").fit(X, y)


def test_priors_shift_the_optimum():
    X, y = binary_data(40, 2, seed=5)
    kernel = C(1.0, (1e-3, 1e3)) * RBF(1.0, (1e-2, 1e2))
    free = GaussianProcessClassifier(kernel).fit(X, y)
    tight = GaussianProcessClassifier(
        kernel, priors={"k2__length_scale": gpc.LogNormalPrior(np.log(20.0), 0.01)}
    ).fit(X, y)
    assert tight.kernel_.k2.length_scale == pytest.approx(20.0, rel=0.05)
    assert free.kernel_.k2.length_scale != pytest.approx(20.0, rel=0.05)
    with pytest.raises(ValueError, match="unknown hyperparameters"):
        GaussianProcessClassifier(kernel, priors={"nope": gpc.GammaPrior()}).fit(X, y)


@pytest.mark.parametrize("prior, match", [
    (gpc.LogNormalPrior(np.nan, 1.0), "mu must be a finite number"),
    (gpc.LogNormalPrior(np.inf, 1.0), "mu must be a finite number"),
    (gpc.LogNormalPrior(0.0, np.inf), "sigma must be a finite number"),
    (gpc.LogNormalPrior(0.0, 0.0), "sigma must be a finite number"),
    (gpc.GammaPrior(np.nan, 1.0), "shape must be a finite number"),
    (gpc.GammaPrior(2.0, -1.0), "rate must be a finite number"),
])
def test_a_prior_that_is_no_density_is_refused(prior, match):
    # A NaN or infinite parameter made every evaluation's objective NaN: the
    # learner stopped at its start without a word.
    X, y = binary_data(40, 2, seed=5)
    with pytest.raises(ValueError, match=match):
        GaussianProcessClassifier(C(1.0) * RBF(1.0),
                                  priors={"k2__length_scale": prior}).fit(X, y)


def test_restarts_are_reproducible_and_never_worse():
    X, y = binary_data(40, 2, seed=6)
    kernel = C(1.0, (1e-2, 1e2)) * RBF([1e-2, 1e-2], (1e-3, 1e2))
    a = GaussianProcessClassifier(kernel, n_restarts_optimizer=3, random_state=1).fit(X, y)
    b = GaussianProcessClassifier(kernel, n_restarts_optimizer=3, random_state=1).fit(X, y)
    c = GaussianProcessClassifier(kernel).fit(X, y)
    np.testing.assert_array_equal(a.kernel_.theta, b.kernel_.theta)
    assert a.log_marginal_likelihood_value_ >= c.log_marginal_likelihood_value_ - 1e-9


def test_warm_start_refit_on_other_data_uses_no_stale_state():
    X, y = binary_data(50, 2, seed=7)
    X2, y2 = binary_data(50, 2, seed=8)
    kernel = C(1.0) * RBF([1.0, 1.0])
    warm = GaussianProcessClassifier(kernel, warm_start=True).fit(X, y).fit(X2, y2)
    cold = GaussianProcessClassifier(kernel).fit(X2, y2)
    assert warm.log_marginal_likelihood_value_ == pytest.approx(
        cold.log_marginal_likelihood_value_, rel=1e-7)
    # Refitting the same data warm starts from the stored mode.
    again = GaussianProcessClassifier(kernel, warm_start=True, optimizer=None).fit(X, y)
    n_cold = again.base_estimator_.inference_info_["n_iter"]
    again.fit(X, y)
    assert again.base_estimator_.inference_info_["n_iter"] < n_cold


def _iris_subset(start=0):
    """Every third example of the standardised iris data (three classes)."""
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    return X[start::3], y[start::3]


def _problems(clf, X):
    """Each binary problem's inference iterations and probabilities at X, in
    the wrapper's order (fixed by the classes each separates)."""
    problems = clf.base_estimator_.estimators_
    return ([e.inference_info_["n_iter"] for e in problems],
            [e.predict_proba(X) for e in problems])


def _multiclass(multi_class, method, warm_start):
    return GaussianProcessClassifier(C(2.0) * RBF(1.5), optimizer=None, method=method,
                                     multi_class=multi_class, warm_start=warm_start)


@pytest.mark.parametrize("method", ["laplace", "ep"])
@pytest.mark.parametrize("multi_class", ["one_vs_rest", "one_vs_one"])
def test_warm_start_starts_each_binary_problem_from_its_own_state(multi_class, method):
    X, y = _iris_subset()
    clf = _multiclass(multi_class, method, warm_start=True).fit(X, y)
    n_cold, proba_cold = _problems(clf, X)
    n_warm, proba_warm = _problems(clf.fit(X, y), X)
    assert all(w < c for w, c in zip(n_warm, n_cold)), (n_warm, n_cold)
    for warm, cold in zip(proba_warm, proba_cold):
        np.testing.assert_allclose(warm, cold, rtol=0, atol=1e-8)
    np.testing.assert_array_equal(clf.predict(X), _multiclass(
        multi_class, method, warm_start=False).fit(X, y).predict(X))
    # Other data: every problem starts afresh, as a fit on them alone does.
    X2, y2 = _iris_subset(start=1)
    n_other, proba_other = _problems(clf.fit(X2, y2), X)
    fresh = _multiclass(multi_class, method, warm_start=False).fit(X2, y2)
    n_fresh, proba_fresh = _problems(fresh, X)
    assert n_other == n_fresh
    for other, fresh in zip(proba_other, proba_fresh):
        np.testing.assert_array_equal(other, fresh)


def test_warm_start_restarts_only_the_binary_problems_whose_data_changed():
    X, y = _iris_subset()
    clf = _multiclass("one_vs_one", "ep", warm_start=True).fit(X, y)
    n_before, _ = _problems(clf, X)
    # Without the last example of class 2, only the pair (0, 1) keeps its data.
    keep = np.arange(len(y)) != np.flatnonzero(y == 2)[-1]
    n_after, proba_after = _problems(clf.fit(X[keep], y[keep]), X)
    n_fresh, proba_fresh = _problems(
        _multiclass("one_vs_one", "ep", warm_start=False).fit(X[keep], y[keep]), X)
    assert n_after[0] < n_before[0] and n_after[0] < n_fresh[0]
    np.testing.assert_allclose(proba_after[0], proba_fresh[0], rtol=0, atol=1e-8)
    assert n_after[1:] == n_fresh[1:]
    for after, fresh in zip(proba_after[1:], proba_fresh[1:]):
        np.testing.assert_array_equal(after, fresh)


def test_sklearn_machinery():
    X, y = binary_data(60, 2, seed=9)
    pipe = make_pipeline(StandardScaler(), GaussianProcessClassifier(1.0 * RBF(1.0)))
    assert cross_val_score(pipe, X, y, cv=3).mean() > 0.7
    grid = GridSearchCV(GaussianProcessClassifier(optimizer=None),
                        {"kernel": [1.0 * RBF(0.3), 1.0 * RBF(3.0)],
                         "likelihood": ["logit", "probit"]}, cv=3).fit(X, y)
    assert grid.best_score_ > 0.7
    clf = GaussianProcessClassifier(1.0 * RBF(1.0)).fit(X, y)
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(restored.predict_proba(X), clf.predict_proba(X))
    cl = clone(clf)
    assert not hasattr(cl, "base_estimator_")
    assert cl.get_params()["kernel"] == clf.kernel


@pytest.mark.parametrize("method", gpc.available_methods())
def test_check_estimator(method):
    # Every registered method (a new one is covered by registering it).
    # With "adf" the estimator has partial_fit, which scikit-learn checks too.
    # The ensemble mean field refuses a nearly singular K (its cavity variances
    # 1 / [K^-1]_ii would be rounding noise), which the checks' data give the
    # default kernel; it gets the paper's noise term.
    kernel = (C(1.0, "fixed") * RBF(1.0, "fixed") + WhiteKernel(1e-2, "fixed")
              if method == "mean_field" else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(
            GaussianProcessClassifier(kernel, method=method), on_fail=None,
            expected_failed_checks=expected_failed_checks(
                get_method(method).accepts_sample_weight))
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results
              if r["status"] == "failed"]
    assert failed == []


def test_multiclass_one_vs_one_and_rest():
    X, y = load_iris(return_X_y=True)
    ovr = GaussianProcessClassifier(1.0 * RBF(1.0), optimizer=None).fit(X, y)
    ovo = GaussianProcessClassifier(1.0 * RBF(1.0), optimizer=None,
                                    multi_class="one_vs_one").fit(X, y)
    assert ovr.score(X, y) > 0.9 and ovo.score(X, y) > 0.9
    with pytest.raises(ValueError, match="one_vs_one"):
        ovo.predict_proba(X)
    with pytest.raises(ValueError, match="Unknown multi-class"):
        GaussianProcessClassifier(multi_class="all").fit(X, y)


class _IndefiniteKernel(Kernel):
    """A 'kernel' with a strongly negative eigenvalue on the training set."""

    def __init__(self):
        pass

    def __call__(self, X, Y=None, eval_gradient=False):
        Y = X if Y is None else Y
        K = np.cos(3 * (X[:, :1] - Y[:, :1].T)) - 0.9 * (X[:, :1] @ Y[:, :1].T) ** 2
        return K

    def diag(self, X):
        return np.diag(self(X))

    def is_stationary(self):
        return False


class _NaNKernel(Kernel):
    """A squared exponential whose matrix has a NaN in one pair of entries."""

    def __init__(self):
        pass

    def __call__(self, X, Y=None, eval_gradient=False):
        Y = X if Y is None else Y
        K = np.exp(-0.5 * (X[:, :1] - Y[:, :1].T) ** 2)
        K[0, 1] = K[1, 0] = np.nan
        return K

    def diag(self, X):
        return np.ones(len(X))

    def is_stationary(self):
        return True


def _assert_unchanged(clf, before):
    assert clf.predict_proba(before[0]).tolist() == before[1]
    assert clf.log_marginal_likelihood_value_ == before[2]


@pytest.mark.parametrize("X_bad,y_bad,match", [
    (np.array([[np.nan, 1.0]] * 4), [0, 1, 0, 1], "NaN"),
    (np.array([[np.inf, 1.0]] * 4), [0, 1, 0, 1], "infinity"),
    (np.ones((4, 2)), [0.0, np.nan, 1.0, 0.0], "NaN"),
    (np.ones((4, 2)), [1, 1, 1, 1], "2 or more distinct classes"),
    (np.ones((4, 2)), [0, 1, 0], "inconsistent numbers of samples"),
    (np.ones((0, 2)), [], "0 sample"),
    (np.ones(4), [0, 1, 0, 1], "2D array"),
    (np.array([["a", "b"]] * 4), [0, 1, 0, 1], "could not convert|numeric"),
])
def test_bad_input_leaves_fitted_estimator_untouched(X_bad, y_bad, match):
    X, y = binary_data(30, 2)
    clf = GaussianProcessClassifier(1.0 * RBF(1.0)).fit(X, y)
    before = (X[:5], clf.predict_proba(X[:5]).tolist(), clf.log_marginal_likelihood_value_)
    with pytest.raises(ValueError, match=match):
        clf.fit(X_bad, y_bad)
    _assert_unchanged(clf, before)
    assert clf.n_features_in_ == 2


def test_non_psd_kernel_is_named_in_the_error():
    X, y = binary_data(30, 2)
    clf = GaussianProcessClassifier(1.0 * RBF(1.0)).fit(X, y)
    before = (X[:5], clf.predict_proba(X[:5]).tolist(), clf.log_marginal_likelihood_value_)
    with pytest.raises(gpc.NotPositiveDefiniteError, match="_IndefiniteKernel"):
        GaussianProcessClassifier(_IndefiniteKernel()).fit(X, y)
    with pytest.raises(ValueError, match="not positive semi-definite"):
        clf.set_params(kernel=_IndefiniteKernel(), optimizer=None).fit(X, y)
    clf.set_params(kernel=1.0 * RBF(1.0), optimizer="fmin_l_bfgs_b")
    _assert_unchanged(clf, before)


class _CountingRBF(RBF):
    """scikit-learn's RBF, counting its evaluations (a subclass: gpc calls it)."""

    calls = [0]

    def __call__(self, X, Y=None, eval_gradient=False):
        self.calls[0] += 1
        return super().__call__(X, Y, eval_gradient)


def test_a_fixed_kernel_fit_builds_the_kernel_matrix_once():
    # The kernel matrix checked before the fit is the one the fit uses.
    X, y = binary_data(40, 2)
    _CountingRBF.calls[0] = 0
    counted = GaussianProcessClassifier(
        C(2.0, "fixed") * _CountingRBF([1.0, 2.0], "fixed")).fit(X, y)
    assert _CountingRBF.calls[0] == 1
    # scikit-learn's own RBF goes through gpc's compiled squared exponential:
    # the same fit to rounding.
    plain = GaussianProcessClassifier(
        C(2.0, "fixed") * RBF([1.0, 2.0], "fixed")).fit(X, y)
    assert plain.log_marginal_likelihood_value_ == pytest.approx(
        counted.log_marginal_likelihood_value_, rel=1e-13)
    np.testing.assert_allclose(plain.predict_proba(X), counted.predict_proba(X),
                               rtol=0, atol=1e-13)


@pytest.mark.parametrize("likelihood", ["probit", "logit", "noisy_threshold"])
def test_gradient_at_the_fitted_theta_from_the_fitted_posterior(likelihood):
    # At the fitted hyperparameters EP's gradient comes from the fitted posterior
    # (B^{-1} from its factor), with no second EP run: it equals the gradient of an
    # independent evaluation that runs EP from the prior, negative sites (noisy
    # threshold) included.
    X, y = binary_data(80, 3, seed=2)
    clf = GaussianProcessClassifier(C(4.0) * RBF([1.0, 2.0, 1.5]), method="ep",
                                    likelihood=likelihood, optimizer=None).fit(X, y)
    est = clf.base_estimator_
    assert (est.inference_info_["n_negative"] > 0) == (likelihood == "noisy_threshold")
    theta = clf.kernel_.theta
    fitted = est._fitted_result(theta)
    assert fitted is not None
    value, grad = clf.log_marginal_likelihood(theta, eval_gradient=True)
    objective = gpc.evidence.EvidenceObjective(
        est.kernel_, X, 2.0 * est.y_train_ - 1.0, est.likelihood_, "ep",
        {"tol": 1e-10}, jitter=est.jitter_)
    ref_value, ref_grad = objective(theta)
    assert value == pytest.approx(ref_value, abs=1e-8)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-6, atol=1e-8)
    assert clf.log_marginal_likelihood(theta) == pytest.approx(value, abs=1e-8)
    # Elsewhere, or after an unconverged fit, EP runs again.
    assert est._fitted_result(theta + 0.1) is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        rough = GaussianProcessClassifier(
            C(4.0) * RBF([1.0, 2.0, 1.5]), method="ep", likelihood=likelihood,
            optimizer=None, max_iter_predict=1).fit(X, y)
        assert rough.base_estimator_._fitted_result(theta) is None
        rough_grad = rough.log_marginal_likelihood(theta, eval_gradient=True)[1]
    assert np.isfinite(rough_grad).all()


def test_rank_deficient_psd_kernel_fits():
    # A linear kernel on 2-D inputs: K has rank 2 with n = 30 (PSD, singular).
    X, y = binary_data(30, 2)
    clf = GaussianProcessClassifier(DotProduct(sigma_0=0.0, sigma_0_bounds="fixed")).fit(X, y)
    assert np.isfinite(clf.log_marginal_likelihood_value_)


def test_float32_and_noncontiguous_X():
    X, y = binary_data(40, 3)
    ref = GaussianProcessClassifier(1.0 * RBF(1.0), optimizer=None).fit(X, y)
    big = np.zeros((80, 6))
    big[::2, ::2] = X
    for Xv in (X.astype(np.float32), big[::2, ::2], np.asfortranarray(X)):
        clf = GaussianProcessClassifier(1.0 * RBF(1.0), optimizer=None).fit(Xv, y)
        assert clf.log_marginal_likelihood_value_ == pytest.approx(
            ref.log_marginal_likelihood_value_, rel=1e-5)
        np.testing.assert_allclose(clf.predict_proba(Xv), ref.predict_proba(X), atol=1e-5)


def test_any_two_labels():
    X, y = binary_data(30, 2)
    labels = np.array(["no", "yes"])[y]
    clf = GaussianProcessClassifier(optimizer=None).fit(X, labels)
    assert set(clf.predict(X)) <= {"no", "yes"}
    np.testing.assert_array_equal(clf.classes_, ["no", "yes"])


def test_verbose_progress(capsys):
    X, y = binary_data(30, 2)
    GaussianProcessClassifier(C(1.0) * RBF(1.0), verbose=1).fit(X, y)
    assert "[gpc] start 1/1" in capsys.readouterr().out


def test_convergence_warning_when_max_iter_too_small():
    X, y = binary_data(30, 2)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        GaussianProcessClassifier(C(50.0) * RBF(1.0), optimizer=None,
                                  max_iter_predict=1).fit(X, y)


def test_bundled_data_sets():
    X, y = load_dataset("crabs")
    assert X.shape == (200, 6) and y.sum() == 100
    Xtr, ytr, Xte, yte = load_pima()
    assert Xtr.shape == (200, 7) and Xte.shape == (332, 7)
    assert (ytr.sum(), yte.sum()) == (68, 109)
    with pytest.raises(ValueError, match="Unknown data set"):
        load_dataset("usps")


def test_noisy_threshold_eps_is_learnt_with_ep():
    rng = np.random.RandomState(11)
    X = rng.randn(80, 2)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    flip = rng.rand(80) < 0.1
    y[flip] = 1 - y[flip]
    kernel = C(1.0) * RBF([1.0, 1.0])
    learnt = GaussianProcessClassifier(kernel, method="ep",
                                       likelihood=gpc.likelihoods.NoisyThreshold(0.3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learnt.fit(X, y)
        fixed = GaussianProcessClassifier(
            kernel, method="ep",
            likelihood=gpc.likelihoods.NoisyThreshold(0.3, eps_bounds="fixed")).fit(X, y)
    eps = learnt.base_estimator_.likelihood_.eps
    assert eps != 0.3 and 0.0 < eps < 0.3
    assert fixed.base_estimator_.likelihood_.eps == 0.3
    assert learnt.log_marginal_likelihood_value_ > fixed.log_marginal_likelihood_value_
    # The estimator's parameter is left untouched.
    assert learnt.likelihood.eps == 0.3


def test_objective_gradient_in_log_eps_matches_finite_differences():
    from gpc.evidence import EvidenceObjective

    # A problem whose EP fixed point has no clipped site (with clipped sites the EP
    # gradient is approximate, as documented and warned).
    rng = np.random.RandomState(6)
    X = rng.randn(15, 1)
    y = np.where(X[:, 0] + 0.3 * rng.randn(15) > 0, 1.0, -1.0)
    obj = EvidenceObjective(C(1.0) * RBF(0.3), X, y, gpc.likelihoods.NoisyThreshold(0.1),
                            "ep", {"tol": 1e-12, "max_sweeps": 2000},
                            learn_likelihood=True)
    theta = obj.theta.copy()
    assert theta.shape == (3,) and theta[-1] == pytest.approx(np.log(0.1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value, grad = obj(theta)
    h = 1e-5
    for k in range(3):
        e = np.zeros(3)
        e[k] = h
        fd = (obj(theta + e)[0] - obj(theta - e)[0]) / (2 * h)
        assert grad[k] == pytest.approx(fd, rel=1e-5, abs=1e-8)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("method", gpc.available_methods())
def test_a_non_finite_kernel_matrix_gets_the_message_of_infer(method):
    # The estimator once gave K to the method unchecked: Laplace called it
    # "badly scaled", EP suggested more damping, PL found the evidence not finite
    # "after 0 sweeps (converged)".  DotProduct is positive semi-definite by
    # construction, so no Cholesky looked at its K either.
    X, y = binary_data(20, 2)
    with pytest.raises(ValueError, match=r"^K contains NaN or infinity\.$"):
        gpc.infer(_NaNKernel()(X), 2 * y - 1, method=method, likelihood="probit")
    for kernel, Xk in ((_NaNKernel(), X), (DotProduct(1.0), X * 1e200)):
        clf = GaussianProcessClassifier(kernel, method=method, likelihood="probit",
                                        optimizer=None)
        expected = re.escape(f"The kernel {kernel!r}: K contains NaN or infinity.")
        with pytest.raises(ValueError, match=expected):
            clf.fit(Xk, y)
        if method == "adf":
            with pytest.raises(ValueError, match=expected):
                clf.partial_fit(Xk, y, classes=[0, 1])
    # At hyperparameters where the kernel overflows (sigma_0^2 = 1e400), an
    # evaluation fails with the same message (the optimiser steps back from it).
    # (The ensemble mean field refuses the singular K of DotProduct on 2-D inputs:
    # it gets a noise term.)
    kernel = DotProduct(1.0)
    if method == "mean_field":
        kernel = kernel + WhiteKernel(1e-2, "fixed")
    clf = GaussianProcessClassifier(kernel, method=method, optimizer=None,
                                    likelihood="probit").fit(X, y)
    with pytest.raises(FloatingPointError, match="K contains NaN or infinity"):
        clf.log_marginal_likelihood(np.log([1e200]))


@pytest.mark.parametrize("params, error, match", [
    (dict(n_restarts_optimizer=1.5), TypeError, "n_restarts_optimizer must be an int"),
    (dict(n_restarts_optimizer=-1), ValueError, "n_restarts_optimizer must be an int"),
    (dict(optimizer="bfgs", kernel=None), ValueError, "optimizer must be"),
    (dict(priors=[1.0, 2.0]), TypeError, r"priors\[0\] must be None or a prior"),
    (dict(priors={"k2__length_scale": 2.0}), TypeError, r"priors\['k2__length_scale'\]"),
    (dict(priors="k2__length_scale"), TypeError, "priors must be a dict"),
    (dict(inference_options={"tol": "abc"}), TypeError,
     "option 'tol' of method='laplace' must be a real number"),
    (dict(inference_options="tol=1"), TypeError, "must be a dict"),
    (dict(inference_options={"updates": "parallel"}), ValueError,
     "'updates' is not an option of method='laplace'"),
    (dict(inference_options={"workspace": {}}), ValueError,
     "'workspace' is not an option"),
    (dict(inference_options={"max_iter": -5}), ValueError,
     "max_iter must be an integer >= 0"),
])
def test_bad_parameters_are_refused_at_fit_and_named(params, error, match):
    # These were once accepted, or failed later with a message that did not
    # name them ("ufunc 'isfinite' not supported", "dictionary update sequence
    # element #0", AttributeError), or were overridden by max_iter_predict.
    X, y = binary_data(30, 2)
    params = {"kernel": C(1.0) * RBF(1.0), **params}
    with pytest.raises(error, match=match):
        GaussianProcessClassifier(**params).fit(X, y)


@pytest.mark.parametrize("method, option, info", [("laplace", "max_iter", "n_iter"),
                                                  ("ep", "max_sweeps", "n_sweeps")])
def test_an_iteration_limit_in_inference_options_beats_max_iter_predict(method, option,
                                                                       info):
    X, y = binary_data(30, 2)
    clf = GaussianProcessClassifier(C(50.0) * RBF(1.0), optimizer=None, method=method,
                                    max_iter_predict=100,
                                    inference_options={option: 1})
    with pytest.warns(ConvergenceWarning, match=rf"{option}=1\b"):
        clf.fit(X, y)
    assert clf.base_estimator_.inference_info_[info] == 1
