"""The contract of every registered inference method: its registered description,
the keys of its ``info``, its posterior marginals and the exception it raises on
numerical failure.  The methods come from the registry, so a new one is covered
without editing this file."""

import inspect
import pickle

import numpy as np
import pytest

import gpc
from gpc.inference import InferenceMethod, get_method, register
from gpc.inference import INFO_KEYS
from _registry import SUPPORTED, options
from _sites import data, se


def _name(combination):
    return "-".join(part for part in combination if part)


@pytest.mark.parametrize("combination", SUPPORTED, ids=_name)
def test_info_holds_the_common_keys_and_no_marginals(combination):
    method, updates, likelihood = combination
    X, y = data(15, 2)
    if not gpc.get_likelihood(likelihood).is_classification:
        y = 2.0 * y + 0.1 * X[:, 1]
    K = se(X, 1.0, 2.0) + 1e-2 * np.eye(15)
    res = gpc.infer(K, y, method=method, likelihood=likelihood, **options(updates))
    for key, kind in INFO_KEYS.items():
        assert isinstance(res.info.get(key), kind), (key, res.info.get(key))
    assert res.info["method"] == method
    assert res.info["likelihood"] == gpc.get_likelihood(likelihood).name
    assert not {"mean", "var", "mode"} & set(res.info)
    post = res.posterior
    for marginal in (post.marginal_mean, post.marginal_var):
        assert marginal is None or (marginal.shape == (15,)
                                    and np.isfinite(marginal).all())
    if post.marginal_mean is not None:
        # The mean of the factorised mean-field marginals is also K alpha; their
        # variances are not the linear-response ones that predictions use.
        np.testing.assert_allclose(post.marginal_mean, post.latent_mean(K),
                                   rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("combination", SUPPORTED, ids=_name)
def test_site_woodbury_inverse_gives_the_predictive_variances(combination):
    method, updates, likelihood = combination
    X, y = data(15, 3)
    if not gpc.get_likelihood(likelihood).is_classification:
        y = 2.0 * y + 0.1 * X[:, 1]
    K = se(X, 1.0, 2.0) + 1e-2 * np.eye(15)
    post = gpc.infer(K, y, method=method, likelihood=likelihood,
                     **options(updates)).posterior
    if not isinstance(post, gpc.SitePosterior):
        pytest.skip("not a site-form posterior")
    A = post.woodbury_inverse()
    np.testing.assert_allclose(A, A.T, atol=1e-12)
    Z = np.random.RandomState(4).randn(6, 2)
    K_cross = se(X, 1.0, 2.0, Z)
    _, var = post.latent_mean_and_variance(K_cross, np.full(6, 2.0))
    expected = 2.0 - np.einsum("ij,ij->j", K_cross, A @ K_cross)
    np.testing.assert_allclose(var, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("method", gpc.available_methods())
def test_the_description_is_callable_like_its_function(method):
    spec = get_method(method)
    assert isinstance(spec, InferenceMethod) and spec.name == method
    K, y = np.asfortranarray(np.eye(3) + 0.5), np.array([-1.0, 1.0, 1.0])
    lik = gpc.get_likelihood("probit")
    a = spec(K, y, lik, compute_gradient=False)
    b = spec.function(K, y, lik, compute_gradient=False)
    assert a.log_evidence == b.log_evidence
    params = inspect.signature(spec).parameters
    assert list(params)[:3] == ["K", "y", "likelihood"]
    assert dict(spec.options) == {k: p.default for k, p in params.items()
                                  if p.kind == p.KEYWORD_ONLY and k not in (
                                      "init", "compute_gradient", "sample_weight")}
    assert ("sample_weight" in params) == spec.accepts_sample_weight
    if spec.max_iter_option is not None:
        assert spec.max_iter_option in spec.options


def _toy(K, y, likelihood, *, init=None, compute_gradient=True, tol=1.0):
    raise AssertionError("never called")


def test_registration_refuses_a_taken_name_and_a_wrong_signature():
    with pytest.raises(ValueError, match="already registered"):
        register("ep")(_toy)
    with pytest.raises(ValueError, match="max_iter_option names 'max_iter'"):
        register("toy")(_toy)
    with pytest.raises(TypeError, match="signature"):
        register("toy", max_iter_option=None)(lambda K, y, likelihood: None)
    assert "toy" not in gpc.available_methods()


def test_a_numerical_error_names_its_method_and_survives_pickling():
    # The ensemble mean field refuses a nearly singular K (see MIN_RCOND).
    X = np.linspace(0, 1, 30)[:, None]
    K = se(X, 1.0, 1.0)
    y = np.where(X[:, 0] > 0.5, 1.0, -1.0)
    with pytest.raises(gpc.NumericalError) as info:
        gpc.infer(K, y, method="mean_field", likelihood="probit")
    exc = info.value
    assert isinstance(exc, FloatingPointError) and exc.method == "mean_field"
    again = pickle.loads(pickle.dumps(exc))
    assert again.method == "mean_field" and str(again) == str(exc)
