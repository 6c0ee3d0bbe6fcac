"""scikit-learn's own GaussianProcessClassifier tests, run against gpc's estimator.

The test functions are imported from the installed scikit-learn (its wheels ship
them) and the module's ``GaussianProcessClassifier`` is replaced by gpc's, so every
behaviour scikit-learn checks for its classifier is checked for the drop-in too.
``test_lml_gradient`` is marked as a known failure upstream (scikit-learn issue
31366); it is run here in two forms that can be met in double precision (see the
comments on each).
"""

import pytest

import gpc

skt = pytest.importorskip("sklearn.gaussian_process.tests.test_gpc")
skt.GaussianProcessClassifier = gpc.GaussianProcessClassifier

_PLAIN = [
    "test_predict_consistent",
    "test_lml_improving",
    "test_lml_precomputed",
    "test_lml_without_cloning_kernel",
    "test_converged_to_local_maximum",
    "test_random_starts",
    "test_custom_optimizer",
    "test_multi_class",
    "test_multi_class_n_jobs",
    "test_warning_bounds",
    "test_gpc_fit_error",
    "test_gpc_latent_mean_and_variance_shape",
    "test_gpc_latent_mean_and_variance_complain_on_more_than_2_classes",
]
for _name in _PLAIN:
    globals()[_name] = getattr(skt, _name)


def _fitted_at_length_scale(kernel, length_scale):
    kernel = skt.clone(kernel)
    name = next(n for n in kernel.get_params() if n.endswith("length_scale"))
    kernel.set_params(**{name: length_scale})
    return kernel, gpc.GaussianProcessClassifier(kernel=kernel).fit(skt.X, skt.y)


@pytest.mark.parametrize("kernel", skt.non_fixed_kernels)
@pytest.mark.parametrize("length_scale", skt.np.logspace(-3, 3, 13))
def test_lml_gradient_forward_difference_1e9(kernel, length_scale):
    # Upstream's test_lml_gradient (xfail upstream, issue 31366): forward differences
    # with step 1e-9 on every length scale from 1e-3 to 1e3. Its tolerance,
    # rtol=1e-4 and atol=1e-7, is finer than the resolution of the difference
    # quotient itself: two doubles near |lml| ~ 20 differ by at least
    # spacing(20) = 3.6e-15, i.e. 3.6e-6 after dividing by 1e-9, so even a correctly
    # rounded lml cannot meet it for gradients below ~0.03. Here the same check
    # allows 4 units of that resolution on top: gpc's evidence is accurate and smooth
    # to about one ulp (an unconverged mode shows up as errors of 1e-3 or more).
    kernel, clf = _fitted_at_length_scale(kernel, length_scale)
    lml, grad = clf.log_marginal_likelihood(kernel.theta, eval_gradient=True)
    eps = 1e-9
    approx = skt.approx_fprime(kernel.theta.copy(),
                               lambda t: clf.log_marginal_likelihood(t, False), eps)
    resolution = skt.np.spacing(abs(lml)) / eps
    skt.assert_allclose(grad, approx, rtol=1e-4, atol=eps * 100 + 4 * resolution)


@pytest.mark.parametrize("kernel", skt.non_fixed_kernels)
@pytest.mark.parametrize("length_scale", skt.np.logspace(-3, 3, 13))
def test_lml_gradient_richardson(kernel, length_scale):
    # The stricter check scikit-learn adopted later (scipy.differentiate.derivative:
    # adaptive central differences with Richardson extrapolation), per component.
    differentiate = pytest.importorskip("scipy.differentiate")
    kernel, clf = _fitted_at_length_scale(kernel, length_scale)
    theta0 = kernel.theta.copy()
    _, grad = clf.log_marginal_likelihood(theta0, eval_gradient=True)
    for k in range(theta0.size):
        def f(t, k=k):
            out = []
            for tk in skt.np.atleast_1d(t).ravel():
                th = theta0.copy()
                th[k] = tk
                out.append(clf.log_marginal_likelihood(th, False))
            return skt.np.reshape(out, skt.np.shape(t))
        res = differentiate.derivative(f, theta0[k], initial_step=1e-2)
        # Status -1 (the error estimate grew: the evidence's rounding reached) or -2
        # (its iterations spent) where the derivative is tiny against |lml|, as at
        # length scale 1e3 on some machines (5.9e-5 +- 4.4e-9 here, scipy 1.17): the
        # best estimate comes with its error, which the comparison allows.
        assert res.success or res.status in (-1, -2)
        skt.assert_allclose(grad[k], res.df, rtol=1e-6, atol=1e-9 + 2 * res.error)


def test_predict_consistent_structured_ties():
    # Upstream's test_predict_consistent_structured asserts predict == (p >= 0.5) on
    # a problem whose latent means are exactly 0; it passes upstream only because
    # scikit-learn's erf-mixture gives 0.4999999950 there. gpc's predictive is exactly
    # 0.5 at a tie, and predict, like scikit-learn's, returns classes_[0] (the
    # argmax of predict_proba). The structured-input behaviour is checked here.
    X = ["A", "AB", "B", "BB"]
    y = skt.np.array([True, False, True, False])
    kernel = skt.MiniSeqKernel(baseline_similarity_bounds="fixed")
    clf = gpc.GaussianProcessClassifier(kernel=kernel).fit(X, y)
    proba = clf.predict_proba(X)
    skt.assert_array_equal(clf.predict(X), clf.classes_[skt.np.argmax(proba, axis=1)])
    skt.assert_almost_equal(proba.sum(axis=1), 1.0)
