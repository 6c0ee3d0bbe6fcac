"""Sample weights: the equivalences they promise, and class_weight on imbalanced data.

* Equivalences on 120 examples of the ionosphere data (inputs 3-6, fixed
  ``C(2) * RBF(1.3)``): the largest difference in log evidence and in the latent
  mean and variance at 50 held-out inputs between a weighted fit and the fit it
  should equal — zero weights (a fifth of the examples, the rest uniform in
  [0.3, 3]) against the examples dropped; integer weights 1-3 against the
  examples repeated; Laplace's weights all c = 2.5 against the probit raised to
  the power 2.5 (a Python likelihood with derivatives from scipy's log_ndtr),
  and EP's all 0.4 against EP on the probit to the power 0.4 (whose moments
  gpc integrates by its generic path for Python likelihoods).
  Sparse EP (:func:`gpc.sparse.sparse_ep`, 30 of the examples as inducing
  inputs) likewise.
* ``class_weight="balanced"`` on the UCI glass table (6 types; the smallest is 9
  of 214 examples, 4 %): stratified 5-fold cross-validation, inputs
  standardised on each training fold, ``C(1) * RBF(1)`` learnt by the method's
  (weighted) evidence, one-vs-rest; the balanced accuracy and accuracy of the
  weighted and the unweighted fit, and how many of the 5 fits warned (EP's and
  PL's improper cavities or unconverged runs).

``python bench/bench_sample_weight.py`` prints the tables (markdown).
"""

import time
import warnings

import numpy as np
from scipy.special import log_ndtr
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score, balanced_accuracy_score
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import gpc
from gpc.datasets import load_glass, load_ionosphere
from gpc.likelihoods import Likelihood, get_likelihood
from gpc.sparse import sparse_ep

#: The fixed kernel of the equivalence checks.
_KERNEL = C(2.0) * RBF(1.3)
#: The methods that take weights (the probit likelihood for each).
_METHODS = ("laplace", "ep", "pl", "vb")


class _PowerProbit(Likelihood):
    """``Phi(y f)^c``; with z = y f and r = N(z) / Phi(z) the derivatives of
    log Phi in z are r, -r (z + r) and r ((z + r) (z + 2 r) - 1)."""

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


def _fit(X, y, method, likelihood="probit", w=None):
    return gpc.infer(_KERNEL(X), y, method, likelihood, sample_weight=w, tol=1e-12)


def _gap(a, Xa, b, Xb, Xs):
    la = a.posterior.latent_mean_and_variance(_KERNEL(Xa, Xs), _KERNEL.diag(Xs))
    lb = b.posterior.latent_mean_and_variance(_KERNEL(Xb, Xs), _KERNEL.diag(Xs))
    return (abs(a.log_evidence - b.log_evidence), np.abs(la[0] - lb[0]).max(),
            np.abs(la[1] - lb[1]).max())


def equivalences():
    X, y = load_ionosphere()
    X, y = X[:, 2:6], np.where(y == y.max(), 1.0, -1.0)
    X, y, Xs = X[:120], y[:120], X[120:170]
    rng = np.random.default_rng(0)
    rows = ["| equivalence | method | log evidence | latent mean | latent variance |",
            "|---|---|---|---|---|"]
    w = rng.uniform(0.3, 3.0, len(y))
    w[rng.permutation(len(y))[:24]] = 0.0
    keep = w > 0
    wi = rng.integers(1, 4, len(y)).astype(float)
    rep = np.repeat(np.arange(len(y)), wi.astype(int))
    for method in _METHODS:
        cases = [("zero weight = example dropped",
                  _fit(X, y, method, w=w), X, _fit(X[keep], y[keep], method, w=w[keep]),
                  X[keep]),
                 ("integer weight = example repeated", _fit(X, y, method, w=wi), X,
                  _fit(X[rep], y[rep], method), X[rep])]
        # Laplace's weights c are the likelihood to the power c; EP's weights
        # below 1 are EP on the likelihood to that power (the tempered likelihood).
        c = {"laplace": 2.5, "ep": 0.4}.get(method)
        if c is not None:
            cases.append((f"weights {c} = likelihood^{c}",
                          _fit(X, y, method, w=np.full(len(y), c)), X,
                          _fit(X, y, method, _PowerProbit(c)), X))
        for name, a, Xa, b, Xb in cases:
            rows.append(_row(name, method, _gap(a, Xa, b, Xb, Xs)))
    rows += _sparse_equivalences(X, y, Xs, w, wi)
    return "\n".join(rows)


def _row(name, method, gaps):
    return f"| {name} | {method} | " + " | ".join(f"{g:.1e}" for g in gaps) + " |"


def _sparse_fit(X, y, Z, w=None):
    """Sparse EP on the inducing inputs Z, read as :func:`_gap` reads a fit
    (``log_evidence``, and the latent mean and variance from ``K(Z, X_*)``)."""
    return _Sparse(sparse_ep(_KERNEL, get_likelihood("probit"), X, y, Z,
                             sample_weight=w, tol=1e-12, max_iter=2000))


def _sparse_equivalences(X, y, Xs, w, wi):
    keep, rep = w > 0, np.repeat(np.arange(len(y)), wi.astype(int))
    Z = X[np.random.default_rng(1).permutation(len(y))[:30]]
    cases = [("zero weight = example dropped", _sparse_fit(X, y, Z, w),
              _sparse_fit(X[keep], y[keep], Z, w[keep])),
             ("integer weight = example repeated", _sparse_fit(X, y, Z, wi),
              _sparse_fit(X[rep], y[rep], Z))]
    return [_row(name, "sparse ep", _gap(a, Z, b, Z, Xs)) for name, a, b in cases]


class _Sparse:
    """A sparse EP result as a fit of :func:`gpc.infer` reads for :func:`_gap`."""

    def __init__(self, res):
        self.log_evidence, self._res = res.log_evidence, res
        self.posterior = self

    def latent_mean_and_variance(self, k_cross, k_diag):
        LK, LS = self._res.factors
        A = np.linalg.solve(LK, k_cross)
        return k_cross.T @ self._res.alpha, (k_diag - np.sum(A * A, 0)
                                            + np.sum(np.linalg.solve(LS, A) ** 2, 0))


def _classifier(method, cw):
    """The estimator of a row: GaussianProcessClassifier, or the sparse one."""
    if method == "sparse ep":
        return gpc.SparseGPClassifier(C(1.0) * RBF(1.0), max_basis=50, random_state=0,
                                      class_weight=cw)
    return gpc.GaussianProcessClassifier(C(1.0) * RBF(1.0), method=method,
                                         class_weight=cw)


def class_weight():
    X, y = load_glass(multiclass=True)
    rows = ["| method | class_weight | balanced accuracy | accuracy | fits that warned "
            "| fit (s, median) |", "|---|---|---|---|---|---|"]
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    for method in _METHODS + ("sparse ep",):
        for cw in (None, "balanced"):
            bal, acc, secs, warned = [], [], [], 0
            for train, test in folds:
                t0 = time.perf_counter()
                est = make_pipeline(StandardScaler(), _classifier(method, cw))
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    est.fit(X[train], y[train])
                warned += any(issubclass(c.category, (RuntimeWarning, ConvergenceWarning))
                              and "optimal value found" not in str(c.message)
                              for c in caught)
                secs.append(time.perf_counter() - t0)
                pred = est.predict(X[test])
                bal.append(balanced_accuracy_score(y[test], pred))
                acc.append(accuracy_score(y[test], pred))
            rows.append(f"| {method} | {cw} | {np.mean(bal):.3f} | {np.mean(acc):.3f} | "
                        f"{warned} | {np.median(secs):.2f} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(equivalences())
    print()
    print(class_weight())
