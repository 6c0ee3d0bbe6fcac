"""gpc as GPy's inference method (gpc.backends.gpy) against GPy's own EP and
Laplace: the same log likelihood, gradients and predictions."""

import warnings

import numpy as np
import pytest

GPy = pytest.importorskip("GPy")
from GPy.inference.latent_function_inference import Laplace  # noqa: E402
from GPy.inference.latent_function_inference.expectation_propagation import EP  # noqa: E402

from gpc.backends.gpy import GPCInference  # noqa: E402
from gpc.datasets import load_ionosphere, load_sonar  # noqa: E402


def _synthetic():
    rng = np.random.RandomState(0)
    X = rng.randn(60, 2)
    y = np.sin(2 * X[:, 0]) + X[:, 1] + 0.5 * rng.randn(60) > 0
    return X, y, GPy.kern.RBF(2, variance=2.0, lengthscale=0.8)


def _standardised(load, n, d):
    X, y = load()
    rng = np.random.RandomState(1)
    rows = rng.choice(len(y), n, replace=False)
    X = X[rows, :d]
    X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    return X, y[rows] == 1


def _ionosphere():
    X, y = _standardised(load_ionosphere, 100, 8)
    return X, y, GPy.kern.RBF(8, variance=4.0, lengthscale=2.0)


def _sonar():
    X, y = _standardised(load_sonar, 90, 10)
    kern = GPy.kern.RBF(10, variance=1.5, lengthscale=np.linspace(2, 4, 10), ARD=True)
    return X, y, kern


DATA = {"synthetic": _synthetic, "ionosphere": _ionosphere, "sonar": _sonar}


def _models(data, method, link=None):
    X, y, kern = DATA[data]()
    Y = y.astype(float)[:, None]
    if method == "ep":
        reference = EP(epsilon=1e-15, max_iters=5000, ep_mode="nested")
    else:
        reference = Laplace()
    options = {"tol": 1e-12} if method == "ep" else {"tol": 1e-13}

    def model(inference):
        likelihood = GPy.likelihoods.Bernoulli(link)
        return GPy.core.GP(X, Y, kern.copy(), likelihood, inference_method=inference)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model(reference), model(GPCInference(method, options)), X


@pytest.mark.parametrize("method", ["ep", "laplace"])
@pytest.mark.parametrize("data", list(DATA))
def test_log_likelihood_gradient_and_predictions_equal_gpys(data, method):
    theirs, ours, X = _models(data, method)
    assert ours.log_likelihood() == pytest.approx(theirs.log_likelihood(), rel=1e-8)
    np.testing.assert_allclose(ours.gradient, theirs.gradient, rtol=1e-6, atol=1e-9)
    mean, var = ours.predict_noiseless(X[:10])
    ref_mean, ref_var = theirs.predict_noiseless(X[:10])
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(var, ref_var, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(ours.predict(X[:10])[0], theirs.predict(X[:10])[0],
                               atol=1e-8)


def test_heaviside_link_is_gpcs_step_likelihood():
    theirs, ours, _ = _models("synthetic", "ep", GPy.likelihoods.link_functions.Heaviside())
    assert ours.inference_method.result_.info["likelihood"] == "step"
    assert ours.log_likelihood() == pytest.approx(theirs.log_likelihood(), rel=1e-8)
    # The noise-free step makes the evidence independent of the signal variance:
    # its derivative is 0 (gpc: 9e-14, GPy: 1.2e-9 at its convergence).
    np.testing.assert_allclose(ours.gradient, theirs.gradient, rtol=1e-6, atol=1e-8)
    assert abs(ours.gradient[0]) < 1e-10


def test_optimise_and_warm_start():
    _, ours, _ = _models("synthetic", "ep")
    start = ours.log_likelihood()
    cold_iterations = ours.inference_method.result_.info["n_iter"]
    ours.kern.lengthscale = 0.81             # a small step: warm start from the last
    assert ours.inference_method.result_.info["n_iter"] < cold_iterations
    ours.optimize()
    assert ours.log_likelihood() > start
    # At the optimum the gradient vanishes (the log parameters' scale of GPy).
    params = ours.optimizer_array
    assert np.all(np.abs(ours._grads(params)) < 1e-3)


def test_refuses_what_it_cannot_serve():
    X, y, kern = _synthetic()
    Y = y.astype(float)[:, None]
    with pytest.raises(ValueError, match="Bernoulli"):
        GPy.core.GP(X, Y, kern, GPy.likelihoods.Gaussian(),
                    inference_method=GPCInference())
    with pytest.raises(ValueError, match="Bernoulli"):
        GPy.core.GP(X, Y, kern, GPy.likelihoods.Bernoulli(
            GPy.likelihoods.link_functions.ScaledProbit(nu=2.0)),
            inference_method=GPCInference())
    with pytest.raises(ValueError, match="mean functions"):
        GPy.core.GP(X, Y, kern, GPy.likelihoods.Bernoulli(),
                    mean_function=GPy.mappings.Constant(2, 1, 0.5),
                    inference_method=GPCInference())
    with pytest.raises(ValueError, match="0 \\(or -1\\)"):
        GPy.core.GP(X, 2 * Y, kern, GPy.likelihoods.Bernoulli(),
                    inference_method=GPCInference())
    with pytest.raises(ValueError, match="gradient"):
        GPy.core.GP(X, Y, kern, GPy.likelihoods.Bernoulli(),
                    inference_method=GPCInference("adf"))
    with pytest.raises(ValueError, match="unknown|Unknown"):
        GPy.core.GP(X, Y, kern, GPy.likelihoods.Bernoulli(),
                    inference_method=GPCInference("no such method"))
