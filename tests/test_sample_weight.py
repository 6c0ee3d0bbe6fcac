"""Sample weights: the weighted likelihood prod_i p(y_i | f_i)^(w_i).

The checks are scikit-learn's sample-weight equivalences, made exact where the
method is: a zero weight is the example dropped, an integer weight is the example
repeated (Laplace: its objective is that of the copies; EP: power EP's weighted
site equals the copies' sites when the copies share their input), weights c for
Laplace are the likelihood raised to the power c (an independent Python
likelihood with scipy's log Phi), and the weighted evidence's gradient agrees
with finite differences.  Then the estimators: one-vs-rest and one-vs-one pass
each binary problem its weights, and ``class_weight`` as scikit-learn's
classifiers take it.
"""

import numpy as np
import pytest
from scipy.special import log_ndtr
from scipy.stats import multivariate_normal
from sklearn.gaussian_process.kernels import RBF, ConstantKernel as C
from sklearn.metrics import balanced_accuracy_score
from sklearn.model_selection import StratifiedKFold

import gpc
from gpc.datasets import load_glass, load_ionosphere
from gpc.evidence import EvidenceObjective
from gpc.inference.variational import upper_bound
from gpc.likelihoods import Likelihood, get_likelihood

from _sites import assert_objective_gradient

WEIGHTED = ("laplace", "ep", "vb", "pl")


def _rbf(A, B, variance=2.0, length=1.3):
    d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return variance * np.exp(-0.5 * d2 / length ** 2)


@pytest.fixture(scope="module")
def problem():
    """A real problem: 60 examples of the ionosphere data, 4 of its inputs."""
    X, y = load_ionosphere()
    return X[:60, 2:6], np.where(y[:60] == y.max(), 1.0, -1.0), X[60:70, 2:6]


def _latent(res, X, Xs):
    return res.posterior.latent_mean_and_variance(_rbf(X, Xs), np.full(len(Xs), 2.0))


@pytest.mark.parametrize("method", WEIGHTED)
@pytest.mark.parametrize("likelihood", ["probit", "logit"])
def test_zero_weight_is_the_example_dropped(problem, method, likelihood):
    X, y, Xs = problem
    w = np.random.default_rng(1).uniform(0.3, 3.0, len(y))
    w[[0, 5, 17, 40]] = 0.0
    keep = w > 0
    res = gpc.infer(_rbf(X, X), y, method, likelihood, sample_weight=w)
    ref = gpc.infer(_rbf(X[keep], X[keep]), y[keep], method, likelihood,
                    sample_weight=w[keep])
    assert res.log_evidence == pytest.approx(ref.log_evidence, abs=1e-10)
    for a, b in zip(_latent(res, X, Xs), _latent(ref, X[keep], Xs)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)
    # The dropped examples' rows of dK vanish: their inputs do not matter.
    np.testing.assert_allclose(res.dK[~keep], 0.0, atol=1e-12)


@pytest.mark.parametrize("method", WEIGHTED)
def test_integer_weight_is_the_example_repeated(problem, method):
    """Laplace: exact, the objective is that of the copies.  EP: the copies
    share one latent value, so their k sites at a fixed point are equal and their
    product is power EP's site of power 1/k: the same fixed point (a weight
    between integers has no such counterpart).  vb: the copies' tangent points
    solve the same equation (nu^2 = E[f^2] at one input), so their bounds are
    equal and their product is the site's bound to the power k.  PL: the copies
    share one marginal, so their linearisations are equal."""
    X, y, Xs = problem
    w = np.random.default_rng(2).integers(1, 4, len(y)).astype(float)
    rows = np.repeat(np.arange(len(y)), w.astype(int))
    tight = {"tol": 1e-12}                 # the copies' own iterates, to 1e-10
    res = gpc.infer(_rbf(X, X), y, method, "logit", sample_weight=w, **tight)
    ref = gpc.infer(_rbf(X[rows], X[rows]), y[rows], method, "logit", **tight)
    assert ref.info["jitter"] == 0.0
    assert res.log_evidence == pytest.approx(ref.log_evidence, abs=1e-10)
    for a, b in zip(_latent(res, X, Xs), _latent(ref, X[rows], Xs)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)


class PowerProbit(Likelihood):
    """``p(y | f) = Phi(y f)^c``, its derivatives from scipy's ``log_ndtr``:
    with z = y f and r = N(z) / Phi(z), d log Phi / dz = r, d2 = -r (z + r),
    d3 = r ((z + r) (z + 2 r) - 1)."""

    name = "power_probit"

    def __init__(self, power=1.0):
        self.power = power

    def log_lik(self, y, f):
        return self.power * log_ndtr(np.asarray(y) * f)

    def derivatives(self, y, f):
        y = np.asarray(y, dtype=float)
        z = y * np.asarray(f, dtype=float)
        r = np.exp(-0.5 * z * z - 0.5 * np.log(2 * np.pi) - log_ndtr(z))
        c = self.power
        return (c * log_ndtr(z), c * y * r, -c * r * (z + r),
                c * y * r * ((z + r) * (z + 2 * r) - 1.0))


def test_power_probit_derivatives_by_finite_differences():
    lik, y, f, h = PowerProbit(2.5), np.array([1.0, -1.0, 1.0]), np.array([-3.0, 0.4,
                                                                         2.0]), 1e-5
    values = [lik.derivatives(y, f + s * h) for s in (1, -1)]
    got = lik.derivatives(y, f)
    for k in range(3):
        np.testing.assert_allclose((values[0][k] - values[1][k]) / (2 * h), got[k + 1],
                                   rtol=1e-7)


@pytest.mark.parametrize("c", [0.3, 2.0, 7.5])
def test_laplace_weights_scaled_by_c_are_the_likelihood_to_the_power_c(problem, c):
    X, y, Xs = problem
    K = _rbf(X, X)
    res = gpc.infer(K, y, "laplace", "probit", sample_weight=np.full(len(y), c))
    ref = gpc.infer(K, y, "laplace", PowerProbit(c))
    assert res.log_evidence == pytest.approx(ref.log_evidence, abs=1e-10)
    np.testing.assert_allclose(res.dK, ref.dK, rtol=0, atol=1e-10)
    for a, b in zip(_latent(res, X, Xs), _latent(ref, X, Xs)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)


@pytest.mark.parametrize("method, likelihood", [("laplace", "logit"),
                                                ("laplace", "probit"),
                                                ("ep", "probit"), ("ep", "logit"),
                                                ("ep", "noisy_threshold"),
                                                ("vb", "logit"), ("vb", "probit"),
                                                ("pl", "probit"), ("pl", "logit"),
                                                ("pl", "noisy_threshold"),
                                                ("pl", "gaussian"), ("ep", "gaussian")])
def test_weighted_evidence_gradient_by_finite_differences(problem, method, likelihood):
    """d log evidence / d theta, kernel hyperparameters and (noisy threshold) the
    label-flip probability, against central differences (tight inference)."""
    X, y, _ = problem
    w = np.random.default_rng(3).uniform(0.0, 3.0, len(y))
    w[:3] = 0.0
    lik = get_likelihood(likelihood)
    learn = likelihood in ("noisy_threshold", "gaussian")
    if likelihood == "noisy_threshold":
        lik = lik.set_params(eps=0.05, eps_bounds=(1e-4, 0.5))
    if likelihood == "gaussian":
        lik = lik.set_params(noise_variance=0.3)
    options = {"tol": 1e-12}
    obj = EvidenceObjective(C(1.5) * RBF([1.0, 2.0, 0.7, 1.4]), X, y, lik, method,
                            options, learn_likelihood=learn, sample_weight=w)
    assert_objective_gradient(obj)


def test_logit_upper_bound_weights(problem):
    """The upper bound (minimised over mu, strictly convex) with a zero weight is
    that of the data without the example, and with integer weights that of the
    repeated examples (the copies' mu are equal at the minimum, by symmetry)."""
    X, y, _ = problem
    w = np.random.default_rng(6).integers(0, 4, len(y)).astype(float)
    keep, rows = w > 0, np.repeat(np.arange(len(y)), w.astype(int))
    value = upper_bound(_rbf(X, X), y, sample_weight=w)[0]
    dropped = upper_bound(_rbf(X[keep], X[keep]), y[keep], sample_weight=w[keep])[0]
    repeated = upper_bound(_rbf(X[rows], X[rows]), y[rows])[0]
    assert value == pytest.approx(dropped, abs=1e-8)
    assert value == pytest.approx(repeated, abs=1e-8)
    # Still an upper bound: above EP's estimate of the same weighted evidence.
    assert value > gpc.infer(_rbf(X, X), y, "ep", "logit", sample_weight=w).log_evidence


@pytest.mark.parametrize("bad, match", [
    (np.full(60, -1.0), "non-negative"), (np.ones(59), "60 finite"),
    (np.full(60, np.nan), "finite"), (np.zeros(60), "nothing to fit")])
def test_bad_weights_are_refused(problem, bad, match):
    X, y, _ = problem
    with pytest.raises(ValueError, match=match):
        gpc.infer(_rbf(X, X), y, "laplace", sample_weight=bad)


@pytest.mark.parametrize("method, low", [("pl", 0.2), ("ep", 1.0), ("ep", 0.2)])
def test_weighted_gaussian_regression_is_exact(problem, method, low):
    """With the Gaussian likelihood EP and PL are exact, weights too: the
    weighted likelihood prod_i N(y_i; f_i, s2)^(w_i) is, up to a constant, the
    regression likelihood of noise variances s2 / w_i, so the evidence is
    log N(y; 0, K + diag(s2 / w)) + sum_i [log(2 pi s2 / w_i) - w_i log(2 pi s2)]
    / 2 over the examples of positive weight (scipy's multivariate normal)."""
    X, y, _ = problem
    t = y + np.sin(X[:, 0])                             # real targets
    w = np.random.default_rng(7).uniform(low, 4.0, len(y))
    w[[3, 11]] = 0.0
    keep, s2 = w > 0, 0.3
    K = _rbf(X, X)
    res = gpc.infer(K, t, method, get_likelihood("gaussian").set_params(
        noise_variance=s2), sample_weight=w, tol=1e-12)
    cov = K[np.ix_(keep, keep)] + np.diag(s2 / w[keep])
    exact = (multivariate_normal(cov=cov).logpdf(t[keep])
             + 0.5 * np.sum(np.log(2 * np.pi * s2 / w[keep])
                            - w[keep] * np.log(2 * np.pi * s2)))
    assert res.log_evidence == pytest.approx(exact, abs=1e-10)


@pytest.mark.parametrize("c", [0.05, 0.5, 0.9])
def test_ep_weights_below_one_are_ep_on_the_tempered_likelihood(problem, c):
    """Weights c < 1 make EP's sites those of plain EP on p(y|f)^c: the same as EP
    on the Python likelihood Phi(y f)^c, whose moments gpc integrates by its
    generic numerical path (an independent computation)."""
    X, y, Xs = problem
    K = 25.0 * _rbf(X, X) / 2.0                     # a large signal variance
    res = gpc.infer(K, y, "ep", "probit", sample_weight=np.full(len(y), c), tol=1e-12)
    ref = gpc.infer(K, y, "ep", PowerProbit(c), tol=1e-12)
    assert res.info["n_improper_final"] == 0
    assert res.log_evidence == pytest.approx(ref.log_evidence, abs=1e-8)
    np.testing.assert_allclose(res.state["tau"], ref.state["tau"], atol=1e-8)


def test_ep_tiny_weights_tend_to_the_examples_dropped(problem):
    """As the weights of some examples fall to 0 the weighted evidence tends to
    that without them, every cavity proper (a power 1 / w of the site would
    leave them improper at this signal variance)."""
    X, y, _ = problem
    K = 100.0 * _rbf(X, X) / 2.0
    keep = np.ones(len(y), bool)
    keep[::3] = False
    dropped = gpc.infer(K[np.ix_(keep, keep)], y[keep], "ep", "logit").log_evidence
    gaps = []
    for small in (1e-2, 1e-4, 1e-6):
        w = np.where(keep, 1.0, small)
        res = gpc.infer(K, y, "ep", "logit", sample_weight=w)
        assert res.info["n_improper_final"] == 0
        gaps.append(abs(res.log_evidence - dropped))
    assert gaps[2] < 1e-4 and gaps[2] < gaps[1] < gaps[0]


@pytest.mark.parametrize("method", ["mean_field", "adf"])
def test_methods_without_weights_refuse_them(problem, method):
    X, y, _ = problem
    with pytest.raises(ValueError, match="does not take sample weights.*'ep', "
                                         "'laplace', 'pl', 'vb'"):
        gpc.infer(_rbf(X, X), y, method, sample_weight=np.ones(len(y)))
    est = gpc.GaussianProcessClassifier(method=method, optimizer=None)
    with pytest.raises(ValueError, match="does not take sample weights"):
        est.fit(X, y, sample_weight=np.ones(len(y)))
    with pytest.raises(ValueError, match="does not take sample weights"):
        est.set_params(class_weight="balanced").fit(X, y)


def test_estimators_without_weights_refuse_them(problem):
    X, y, _ = problem
    with pytest.raises(ValueError, match="multinomial model does not take"):
        gpc.GaussianProcessClassifier(multi_class="multinomial", method="ep",
                                      likelihood="probit").fit(
            X, y, sample_weight=np.ones(len(y)))


@pytest.mark.parametrize("method", WEIGHTED)
@pytest.mark.parametrize("multi_class", ["one_vs_rest", "one_vs_one"])
def test_estimator_zero_weight_is_the_example_dropped(method, multi_class):
    """Three classes of the glass data (88 examples): each binary problem gets
    its examples' weights (one-vs-one: those of its two classes)."""
    X, y = load_glass(multiclass=True)
    rows = np.flatnonzero(np.isin(y, [0, 1, 5]))[::2]
    X, y = X[rows], y[rows]
    w = np.random.default_rng(4).uniform(0.5, 2.0, len(y))
    w[::7] = 0.0
    keep = w > 0

    def fit(X, y, w):
        return gpc.GaussianProcessClassifier(C(1.0) * RBF(2.0), optimizer=None,
                                             method=method, multi_class=multi_class
                                             ).fit(X, y, sample_weight=w)

    a, b = fit(X, y, w), fit(X[keep], y[keep], w[keep])
    assert a.log_marginal_likelihood_value_ == pytest.approx(
        b.log_marginal_likelihood_value_, abs=1e-10)
    if multi_class == "one_vs_rest":
        np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), atol=1e-10)
    for ea, eb in zip(a.base_estimator_.estimators_, b.base_estimator_.estimators_):
        Xa = np.asarray(ea.X_train_)
        m_a = ea.latent_mean_and_variance(X)
        m_b = eb.latent_mean_and_variance(X)
        np.testing.assert_allclose(m_a, m_b, atol=1e-10)
        assert ea._sample_weight.shape == (len(Xa),)


def test_estimator_integer_weights_are_repeated_examples_for_laplace(problem):
    X, y, Xs = problem
    w = np.random.default_rng(5).integers(0, 3, len(y)).astype(float)
    rows = np.repeat(np.arange(len(y)), w.astype(int))
    kernel = C(2.0) * RBF(1.3)
    a = gpc.GaussianProcessClassifier(kernel, optimizer=None).fit(X, y, sample_weight=w)
    b = gpc.GaussianProcessClassifier(kernel, optimizer=None).fit(X[rows], y[rows])
    assert a.log_marginal_likelihood_value_ == pytest.approx(
        b.log_marginal_likelihood_value_, abs=1e-10)
    np.testing.assert_allclose(a.predict_proba(Xs), b.predict_proba(Xs), atol=1e-10)
    # The evidence of the fitted estimator at another theta uses the weights too.
    theta = np.log([1.5, 0.9])
    va, ga = a.log_marginal_likelihood(theta, eval_gradient=True)
    vb, gb = b.log_marginal_likelihood(theta, eval_gradient=True)
    assert va == pytest.approx(vb, abs=1e-10)
    np.testing.assert_allclose(ga, gb, atol=1e-8)


def test_learnt_hyperparameters_ignore_zero_weight_examples(problem):
    """The learner's start and tolerance come from the examples of positive
    weight, so learning with zero weights lands where learning without the
    examples does."""
    X, y, Xs = problem
    w = np.ones(len(y))
    w[::5] = 0.0
    a = gpc.GaussianProcessClassifier(method="laplace").fit(X, y, sample_weight=w)
    b = gpc.GaussianProcessClassifier(method="laplace").fit(X[w > 0], y[w > 0])
    np.testing.assert_allclose(a.kernel_.theta, b.kernel_.theta, atol=1e-8)
    np.testing.assert_allclose(a.predict_proba(Xs), b.predict_proba(Xs), atol=1e-8)


@pytest.mark.parametrize("method", WEIGHTED)
def test_balanced_class_weight_raises_balanced_accuracy_on_glass(method):
    """Glass (6 types; 'tableware' is 9 of 214 examples, 4 %), 5-fold
    stratified cross-validation: ``class_weight="balanced"`` against the
    unweighted fit, with the default (fixed) kernel.  (bench_sample_weight.py
    measures it with the hyperparameters learnt.)"""
    X, y = load_glass(multiclass=True)
    assert np.bincount(np.unique(y, return_inverse=True)[1]).min() / len(y) < 0.1
    scores = {None: [], "balanced": []}
    for train, test in StratifiedKFold(5, shuffle=True, random_state=0).split(X, y):
        for cw in scores:
            est = gpc.GaussianProcessClassifier(method=method, class_weight=cw)
            est.fit(X[train], y[train])
            scores[cw].append(balanced_accuracy_score(y[test], est.predict(X[test])))
    assert np.mean(scores["balanced"]) > np.mean(scores[None]) + 0.02
