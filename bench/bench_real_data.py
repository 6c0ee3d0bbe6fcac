"""Hyperparameters learnt on real data: gpc's drop-in against scikit-learn's.

Each library fits ``GaussianProcessClassifier(kernel)`` with its defaults (Laplace,
logit, L-BFGS-B from the kernel's own start) on real data with many inputs, standardised
with the training set's mean and deviation:

* scikit-learn's breast cancer (569 cases, 30 inputs; a seeded 2/3 - 1/3 split);
* the first 1500 training rows of two of :func:`gpc.datasets.load_tabular`'s tables
  (``tv16``: 76 inputs, 59 of them one-hot; ``cps1988``: 12 inputs, 10 one-hot),
  tested on their whole test sets;
* scikit-learn's digits, the first 1000 (700 training, 300 test), ten classes:
  one-vs-rest in both libraries and gpc's joint multinomial model.

Kernels: ``C(1) * RBF(np.ones(d))`` (ARD) and ``C(1) * RBF(1.0)`` (isotropic); digits
``1.0 * RBF(1.0)`` as scikit-learn's documentation writes it.  Reported: fit seconds,
the log evidence of every binary sub-problem (the smallest difference gpc minus
scikit-learn over the sub-problems), test accuracy and log loss, gpc's evidence
evaluations and the largest projected gradient at its optimum.  For the ARD rows the
isotropic kernel's gpc evidence is beside it: an ARD optimum can never be below it.

Run standalone (``python bench/bench_real_data.py``) or through ``bench/run_all.py``.
"""

import time
import warnings

import numpy as np
from _common import settle, standalone, standardise
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessClassifier as SkGPC
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.metrics import log_loss

import gpc
from gpc.datasets import load_tabular


def problem(name, n_train):
    """``(X_train, y_train, X_test, y_test)``, standardised."""
    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
        order = np.random.RandomState(0).permutation(len(y))
        cut = int(round(2 * len(y) / 3))
        tr, te = order[:cut], order[cut:]
        X_train, y_train, X_test, y_test = X[tr], y[tr], X[te], y[te]
    elif name == "digits":
        X, y = load_digits(return_X_y=True)
        X_train, y_train, X_test, y_test = X[:700], y[:700], X[700:1000], y[700:1000]
    else:
        X_train, y_train, X_test, y_test = load_tabular(name)
    X_train, y_train = X_train[:n_train], y_train[:n_train]
    X_train, X_test = standardise(X_train, X_test)
    return X_train, y_train, X_test, y_test


def _binary_evidences(clf):
    """The log evidence of every binary sub-problem of a fitted classifier."""
    base = clf.base_estimator_
    estimators = getattr(base, "estimators_", [base])
    return np.array([e.log_marginal_likelihood_value_ for e in estimators])


def _fit(make, X, y, X_test, y_test):
    settle()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        t0 = time.perf_counter()
        clf = make().fit(X, y)
        seconds = time.perf_counter() - t0
    proba = clf.predict_proba(X_test)
    row = dict(seconds=seconds, accuracy=float(np.mean(clf.predict(X_test) == y_test)),
               log_loss=float(log_loss(y_test, proba, labels=clf.classes_)),
               warned=sum(issubclass(w.category, ConvergenceWarning) for w in caught))
    if hasattr(clf.base_estimator_, "kernels_"):            # the joint model
        row["evidence"] = np.array([clf.log_marginal_likelihood_value_])
    else:
        row["evidence"] = _binary_evidences(clf)
    base = clf.base_estimator_
    results = [e.optimizer_result_ for e in getattr(base, "estimators_", [base])
               if getattr(e, "optimizer_result_", None) is not None]
    if results and isinstance(clf, gpc.GaussianProcessClassifier):
        row["evaluations"] = sum(r.n_evaluations for r in results)
        row["gradient"] = max(r.projected_gradient or 0.0 for r in results)
    return row


def bench_case(name, n_train, kernel_name):
    X, y, X_test, y_test = problem(name, n_train)
    d = X.shape[1]
    kernel = {"ard": C(1.0) * RBF(np.ones(d)), "iso": C(1.0) * RBF(1.0),
              "digits": 1.0 * RBF(1.0)}[kernel_name]
    rows = {"sklearn": _fit(lambda: SkGPC(kernel), X, y, X_test, y_test),
            "gpc": _fit(lambda: gpc.GaussianProcessClassifier(kernel), X, y, X_test,
                        y_test)}
    if name == "digits":
        rows["gpc multinomial"] = _fit(
            lambda: gpc.GaussianProcessClassifier(kernel, multi_class="multinomial"),
            X, y, X_test, y_test)
    out = dict(name=name, n=len(y), d=d, kernel=kernel_name, rows=rows)
    for lib, r in rows.items():
        print(f"  {name} n={len(y)} {kernel_name} {lib}: {r['seconds']:.1f} s, log "
              f"evidence {np.round(r['evidence'], 3)}, accuracy {r['accuracy']:.3f}, "
              f"log loss {r['log_loss']:.4f}", flush=True)
    return out


def report(cases):
    lines = [
        "## Real data: the drop-in's hyperparameters against scikit-learn's",
        "",
        "`GaussianProcessClassifier(kernel)` with each library's defaults (Laplace, "
        "logit, L-BFGS-B from the kernel's start), inputs standardised. *Log evidence*: "
        "the sum over the binary sub-problems (one-vs-rest on digits); *min gain*: the "
        "smallest gpc minus scikit-learn log evidence over the sub-problems (>= 0: "
        "gpc's is at least scikit-learn's on every one). *Projected gradient*: the "
        "largest at gpc's optimum over the sub-problems. *Convergence warnings*: "
        "the ConvergenceWarnings the fit gave (both libraries warn at a bound and "
        "at a stop short of stationarity). The ARD rows' last column: "
        "gpc's evidence with the isotropic kernel (an ARD optimum cannot be below it).",
        "",
        "| data | n | inputs | kernel | library | fit (s) | log evidence | min gain | "
        "test accuracy | test log loss | evaluations | projected gradient | "
        "convergence warnings | isotropic evidence |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    iso = {c["name"]: c["rows"]["gpc"]["evidence"].sum() for c in cases
           if c["kernel"] == "iso"}
    for c in cases:
        sk = c["rows"]["sklearn"]
        for lib, r in c["rows"].items():
            gain = (f"{np.min(r['evidence'] - sk['evidence']):+.2e}"
                    if lib == "gpc" else "")
            extra = (f"{iso[c['name']]:.3f}" if lib == "gpc" and c["kernel"] == "ard"
                     and c["name"] in iso else "")
            lines.append(
                f"| {c['name']} | {c['n']} | {c['d']} | {c['kernel']} | {lib} | "
                f"{r['seconds']:.2f} | {r['evidence'].sum():.3f} | {gain} | "
                f"{r['accuracy']:.3f} | {r['log_loss']:.4f} | "
                f"{r.get('evaluations', '')} | "
                f"{'' if 'gradient' not in r else format(r['gradient'], '.1e')} | "
                f"{r['warned']} | {extra} |")
    return "\n".join(lines) + "\n"


CASES = [("breast_cancer", 10 ** 6, "iso"), ("breast_cancer", 10 ** 6, "ard"),
         ("cps1988", 1500, "iso"), ("cps1988", 1500, "ard"),
         ("tv16", 1500, "iso"), ("tv16", 1500, "ard"), ("digits", 700, "digits")]
QUICK = {"real_cases": ["breast_cancer:iso", "breast_cancer:ard"]}


def add_arguments(ap):
    ap.add_argument("--real-cases", nargs="+",
                    default=[f"{name}:{kernel}" for name, _, kernel in CASES],
                    help="data:kernel pairs to run (kernel iso, ard or digits)")


def run(args):
    """Run the real-data fits; returns the Markdown section."""
    sizes = {name: n for name, n, _ in CASES}
    cases = [bench_case(name, sizes[name], kernel)
             for name, kernel in (c.split(":") for c in args.real_cases)]
    return report(cases)


def main(argv=None):
    standalone(__doc__, add_arguments, run, argv, quick=QUICK)


if __name__ == "__main__":
    main()
