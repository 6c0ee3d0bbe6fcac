"""scikit-learn's own GaussianProcessClassifier tests, run against gpc's estimator.

The whole of scikit-learn's ``gaussian_process/tests/test_gpc.py`` (its wheels ship
it) is read from the installed scikit-learn and run with exactly one change: its
import of ``GaussianProcessClassifier`` is swapped for gpc's.  Every test it defines
is collected here, with its own marks (its ``xfail`` included) as they are.

``test_lml_gradient`` is marked as a known failure upstream (scikit-learn issue
31366); it is also run here in two forms that can be met in double precision (see
the comments on each).
"""

import importlib.util
import types

import pytest

import gpc

skt = pytest.importorskip("sklearn.gaussian_process.tests.test_gpc")

_UPSTREAM_IMPORT = "from sklearn.gaussian_process import GaussianProcessClassifier\n"
_GPC_IMPORT = "from gpc import GaussianProcessClassifier\n"


def _upstream_module():
    """scikit-learn's test module, executed with gpc's classifier imported."""
    origin = importlib.util.find_spec(skt.__name__).origin
    with open(origin, encoding="utf-8") as fh:
        source = fh.read()
    assert source.count(_UPSTREAM_IMPORT) == 1, "upstream import line not found"
    module = types.ModuleType("sklearn_test_gpc_with_gpc")
    module.__file__ = origin
    exec(compile(source.replace(_UPSTREAM_IMPORT, _GPC_IMPORT), origin, "exec"),
         module.__dict__)
    assert module.GaussianProcessClassifier is gpc.GaussianProcessClassifier
    return module


_upstream = _upstream_module()
for _name, _test in vars(_upstream).items():
    if _name.startswith("test_") and callable(_test):
        globals()[f"{_name}_upstream"] = _test


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
