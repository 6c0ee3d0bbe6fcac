"""Property-based robustness of :func:`gpc.infer` (hypothesis).

Every inference method (``gpc.available_methods()``, EP and PL with both update
schedules) meets every likelihood on generated covariance matrices: well conditioned,
nearly singular, with duplicated rows, of overall scale 1e-6 to 1e6, and not positive
semi-definite; with random and adversarial labels.  A run either returns finite
results (log evidence, dK, dlik, the posterior's predictions at the training points)
or raises one of the exceptions that :func:`gpc.infer` documents, each only where
the documentation says it is raised:

* ``ValueError``: a method/likelihood pair the method does not support (decided by
  calling the pair once on a trivial problem, so a new method or likelihood is
  covered without editing this file), always with the same message;
* :class:`gpc.NotPositiveDefiniteError`: a K that is not positive semi-definite
  even after jitter (and only such a K);
* :class:`gpc.NumericalError` (a ``FloatingPointError``) raised by the method
  itself, its ``method`` attribute naming it (never a bare numpy floating-point
  error), where the answer is not finite in floating point.  Each is recorded as a
  hypothesis event, so ``--hypothesis-show-statistics`` shows how often each
  method gives up.

The number of examples per combination comes from the hypothesis profile chosen in
``conftest.py`` (``GPC_HYPOTHESIS_PROFILE``: "ci" by default, "full").
"""

import warnings

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

import gpc
from gpc.inference import get_method
from _registry import COMBINATIONS, LIKELIHOODS, options, support

#: Methods documented to return ``dlik=None`` for a likelihood with parameters.
DLIK_NOT_IMPLEMENTED = {"laplace"}


SUPPORT = {c: support(*c) for c in COMBINATIONS}


# --- strategies ---------------------------------------------------------------------

def _rbf(X, length_scale):
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    return np.exp(-0.5 * d2 / length_scale ** 2)


def _orthogonal(rng, n):
    Q, R = np.linalg.qr(rng.standard_normal((n, n)))
    return Q * np.sign(np.diag(R))


@st.composite
def sizes(draw):
    """Mostly small n (1-12), sometimes up to 50, rarely 100-200."""
    bucket = draw(st.integers(0, 19))
    if bucket == 0:
        return draw(st.integers(100, 200))
    if bucket <= 3:
        return draw(st.integers(13, 50))
    return draw(st.integers(1, 12))


class Problem:
    """A generated case: ``K``, labels ``y`` in {-1, +1}, whether K is PSD, and
    the parameters that made it (its repr: ``build_problem(**params)`` rebuilds
    it, and a failure report stays short)."""

    def __init__(self, K, y, psd, params):
        self.K, self.y, self.psd, self.params = K, y, psd, params

    def __repr__(self):
        return f"build_problem(**{self.params!r})"


def build_problem(n, kind, seed, log10_scale, dim, labels, flip, distinct=None,
                  log10_ell=None, nugget=None, spectrum=None, rank=None):
    """The :class:`Problem` of these parameters (see :func:`problems`)."""
    params = {k: v for k, v in locals().items() if v is not None}
    rng = np.random.default_rng(seed)
    base_n = distinct if kind == "duplicated" else n
    X = rng.uniform(-1.0, 1.0, size=(base_n, dim))
    if log10_ell is not None:
        K = _rbf(X, 10.0 ** log10_ell)
        K[np.diag_indices(base_n)] += nugget
    else:
        Q = _orthogonal(rng, base_n)
        if spectrum == "well":
            lam = rng.uniform(0.5, 2.0, base_n)
        elif spectrum == "nearly singular":
            lam = 10.0 ** rng.uniform(-16, 0, base_n)
            lam[0] = 1.0
        else:
            lam = np.zeros(base_n)
            lam[:rank] = rng.uniform(0.5, 2.0, rank)
        if kind == "indefinite":
            lam[-1] = -0.5 * np.max(lam)
        K = (Q * lam) @ Q.T
        # "The first input" of a K without inputs: the eigenvector of its largest
        # eigenvalue, so that "separable" labels follow the prior's main direction.
        X = Q[:, [int(np.argmax(lam))]]
    if kind == "duplicated":
        idx = np.sort(np.concatenate([np.arange(base_n),
                                      rng.integers(0, base_n, n - base_n)]))
        K, X = K[np.ix_(idx, idx)], X[idx]
    K = 0.5 * (K + K.T) * 10.0 ** log10_scale
    if labels == "random":
        y = np.where(rng.uniform(size=n) < 0.5, -1.0, 1.0)
    elif labels == "all one class":
        y = np.ones(n)
    elif labels == "all but one":
        y = np.ones(n)
        y[rng.integers(n)] = -1.0
    elif labels == "separable":
        y = np.where(X[:, 0] > np.median(X[:, 0]), 1.0, -1.0)
    else:
        y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    return Problem(np.asfortranarray(K), -y if flip else y, kind != "indefinite",
                   params)


@st.composite
def problems(draw):
    """A :class:`Problem`: a covariance matrix and labels in {-1, +1}.

    kinds: "kernel" (an RBF on random inputs, length scale 1e-3..1e3, or a random
    spectrum), "spectrum" (a random eigenbasis with a well conditioned, nearly
    singular or low-rank spectrum), "duplicated" (rows and columns of one of those
    repeated), "indefinite" (one clearly negative eigenvalue: not PSD).  Overall
    scale 1e-6..1e6.  labels: random, all one class, all one class but one,
    separable by the first input, alternating (either class first).
    """
    p = {"n": draw(sizes(), label="n"),
         "kind": draw(st.sampled_from(["kernel", "kernel", "spectrum", "spectrum",
                                       "duplicated", "indefinite"]), label="kind"),
         "seed": draw(st.integers(0, 2 ** 32 - 1), label="seed"),
         "log10_scale": draw(st.sampled_from([-6, -3, 0, 0, 0, 2, 4, 6]),
                             label="log10 scale"),
         "dim": draw(st.integers(1, 3), label="dim"),
         "labels": draw(st.sampled_from(["random", "all one class", "all but one",
                                         "separable", "alternating"]), label="labels"),
         "flip": draw(st.booleans(), label="flip")}
    base_n = p["n"]
    if p["kind"] == "duplicated":
        base_n = p["distinct"] = draw(st.integers(1, max(1, p["n"] // 2)),
                                      label="distinct points")
    if p["kind"] in ("kernel", "duplicated") and draw(st.booleans(), label="rbf"):
        p["log10_ell"] = draw(st.sampled_from([-3, -1, 0, 0, 1, 3]), label="ell")
        p["nugget"] = draw(st.sampled_from([0.0, 0.0, 1e-12, 1e-6, 1e-2]),
                           label="nugget")
    else:
        p["spectrum"] = draw(st.sampled_from(["well", "nearly singular", "low rank"]),
                             label="spectrum")
        if p["spectrum"] == "low rank":
            p["rank"] = draw(st.integers(1, max(1, base_n // 3)), label="rank")
    return build_problem(**p)


def _targets(y, likelihood, rng_seed):
    """Labels for a classification likelihood; for a regression one, real targets
    (the labels, scaled, with noise)."""
    if gpc.get_likelihood(likelihood).is_classification:
        return y
    rng = np.random.default_rng(rng_seed)
    return 3.0 * y + 0.3 * rng.standard_normal(y.shape[0])


# --- the property -------------------------------------------------------------------

def _is_numpy_fp_warning(w):
    """numpy's floating-point warnings ("overflow encountered in ...") say that an
    inf or NaN was made somewhere, silently."""
    return issubclass(w.category, RuntimeWarning) and "encountered in" in str(w.message)


def _check_result(res, K, y, method, likelihood):
    n = K.shape[0]
    lik = gpc.get_likelihood(likelihood)
    assert isinstance(res.log_evidence, float) and np.isfinite(res.log_evidence), \
        res.log_evidence
    if get_method(method).has_gradient:
        dK = np.asarray(res.dK)
        assert dK.shape == (n, n)
        assert np.isfinite(dK).all(), "dK has non-finite entries"
        scale = np.max(np.abs(dK), initial=0.0)
        np.testing.assert_allclose(dK, dK.T, rtol=0, atol=1e-8 * scale + 1e-300)
        if res.dlik is None:
            assert method in DLIK_NOT_IMPLEMENTED and len(lik.params) > 0
        else:
            dlik = np.asarray(res.dlik)
            assert dlik.shape == (len(lik.params),)
            assert np.isfinite(dlik).all(), f"dlik {dlik}"
    else:
        assert res.dK is None
    mean, var = res.posterior.latent_mean_and_variance(K, np.diag(K))
    assert mean.shape == (n,) and var.shape == (n,)
    assert np.isfinite(mean).all(), "posterior mean at the training points not finite"
    assert np.isfinite(var).all() and (var >= 0).all(), "posterior variance"
    if lik.is_classification:
        p = res.posterior.predict_proba(K, np.diag(K), lik)
        assert np.isfinite(p).all() and ((p >= 0) & (p <= 1)).all(), p


@pytest.mark.parametrize("method, updates, likelihood", COMBINATIONS)
@given(problem=problems())
def test_infer_finite_or_documented_error(method, updates, likelihood, problem):
    K, psd = problem.K, problem.psd
    y = _targets(problem.y, likelihood, K.shape[0])
    unsupported = SUPPORT[(method, updates, likelihood)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = gpc.infer(K, y, method=method, likelihood=likelihood,
                            **options(updates))
        except gpc.NotPositiveDefiniteError as exc:
            event("NotPositiveDefiniteError")
            assert not psd, f"a PSD K was rejected: {exc}"
            assert "not positive semi-definite" in str(exc)
            return
        except FloatingPointError as exc:
            # Documented: the method's own message (never numpy's errstate), for a
            # problem whose answer is not finite in floating point (e.g. the
            # noise-free step likelihood with labels that a singular K cannot
            # produce: the evidence is 0).
            assert unsupported is None and psd
            message = str(exc)
            assert isinstance(exc, gpc.NumericalError), message
            assert exc.method == method, (exc.method, message)
            event(f"FloatingPointError: {message[:60]}")
            return
        except ValueError as exc:
            event("ValueError (unsupported pair)")
            assert unsupported is not None, f"ValueError on a supported pair: {exc}"
            assert str(exc) == unsupported
            return
    assert unsupported is None, "an unsupported pair ran"
    assert psd, "a K that is not PSD was accepted"
    for w in caught:
        event(f"warning: {w.category.__name__}")
        assert not _is_numpy_fp_warning(w), \
            f"silent floating-point trouble: {w.message}"
        if issubclass(w.category, (ConvergenceWarning, RuntimeWarning)):
            assert str(w.message), "a warning without a message"
    event("finite result")
    _check_result(res, K, y, method, likelihood)


def test_combinations_cover_every_method_and_likelihood():
    """The parametrisation is derived from the registries, so a new method or
    likelihood is covered automatically; every method supports some likelihood."""
    assert {m for m, _, _ in COMBINATIONS} == set(gpc.available_methods())
    assert {lik for _, _, lik in COMBINATIONS} == set(LIKELIHOODS)
    for m in gpc.available_methods():
        assert any(SUPPORT[c] is None for c in COMBINATIONS if c[0] == m), m
