"""EP against an independent implementation: GPy's expectation propagation."""

import warnings

import numpy as np
import pytest

import gpc

GPy = pytest.importorskip("GPy")


@pytest.mark.parametrize("n,ell,sf2,seed", [(40, 1.0, 1.0, 0), (80, 0.5, 4.0, 1),
                                            (60, 3.0, 0.5, 2)])
def test_probit_ep_evidence_and_predictions_match_gpy(n, ell, sf2, seed):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 2)
    y01 = (np.sin(2 * X[:, 0]) + X[:, 1] + 0.5 * rng.randn(n) > 0).astype(float)
    kern = GPy.kern.RBF(2, variance=sf2, lengthscale=ell)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = GPy.inference.latent_function_inference.expectation_propagation.EP(
            epsilon=1e-12, max_iters=1000)
        m = GPy.models.GPClassification(X, y01[:, None], kernel=kern, inference_method=ep)
        ref = float(m.log_likelihood())
        Xs = rng.randn(7, 2)
        ref_p = m.predict(Xs)[0][:, 0]
    K = kern.K(X)
    res = gpc.infer(K, 2 * y01 - 1, method="ep", likelihood="probit", tol=1e-12)
    assert res.log_evidence == pytest.approx(ref, rel=1e-7)
    p = res.posterior.predict_proba(kern.K(X, Xs), kern.Kdiag(Xs), "probit")
    np.testing.assert_allclose(p, ref_p, atol=1e-6)
