"""The joint multinomial model against one-vs-rest: held-out log loss,
accuracy and fit time, and the accuracy of its deterministic predictive.

Protocol:

* data: scikit-learn's wine (178 cases, 13 inputs, 3 classes), iris (150 cases,
  4 inputs, 3 classes) and digits (its first 1000 cases, 64 inputs, 10
  classes), and the UCI glass (214 cases, 9 inputs, its 6 glass types) and
  new-thyroid (215 cases, 5 inputs, normal, hyper, hypo) tables that
  ``gpc.datasets`` bundles, with their original multi-class labels
  (``load_glass(multiclass=True)``, ``load_thyroid(multiclass=True)``), in
  ``--folds`` stratified folds (shuffled, seed 0), inputs standardised with the
  training fold's statistics (constant columns left unscaled);
* models, each with the kernel ``C(1) * RBF(sqrt(d))`` (d inputs; default
  bounds) learnt by maximising its evidence from that start (from ``RBF(1)``
  every kernel value between 64-D standardised digits is below 1e-20, the
  evidence flat, and every model stays at its start): gpc's
  ``multi_class="multinomial"`` (Laplace, one kernel shared by the classes; on
  the small data sets, all but digits, also one kernel per class;
  ``method="vb"``, Bohning's bound, its hyperparameters learnt by maximising
  the bound; and ``method="ep", likelihood="probit"``, the multinomial probit
  model by nested EP, learnt by EP's evidence), gpc's one-vs-rest (Laplace,
  logit) and scikit-learn's ``GaussianProcessClassifier`` (one-vs-rest,
  Laplace, logit);
* scores: the test folds' log loss (probabilities clipped to [1e-15, 1 - 1e-15]
  as ``sklearn.metrics.log_loss`` does) and accuracy, over all test cases, and
  the median fit time over the folds (one process, BLAS threads as they are)
  and the median over the folds of each fit's time divided by the multinomial
  Laplace fit's on the same fold (the models of a fold are fitted one after the
  other); for gpc's models also the log loss of the plug-in probabilities (the
  softmax, or the normalised sigmoids, of the latent means; for the probit
  model ``MultinomialProbit.predict`` at the latent means with zero covariance,
  i.e. the probit likelihood itself at the means: the posterior's spread
  ignored) and the learnt kernels' median signal variance and length scale;
  the fits that raised a ``ConvergenceWarning`` are counted by its kind
  (scikit-learn's for a learnt hyperparameter close to its bound, gpc's
  optimizer's, EP's);
* predictive accuracy: for the first fold's multinomial fit, ``predict_proba``
  against a Monte Carlo average of ``softmax(f)`` with ``--mc-draws`` draws
  from the same latent Gaussian, at up to 60 test points: the largest
  difference, beside the largest Monte Carlo standard error;
* two classes: the joint model's log evidence against the binary logit's with
  the kernel 2K (the same model), on 40 2-D points with labels from a noisy
  and from a noise-free boundary, over signal variances 1 to 1e6 and length
  scales 0.5 and 2 (``gpc.infer``).

Usage::

    python bench/bench_multinomial.py --write bench/results/multinomial.md
    python bench/bench_multinomial.py --quick
"""

import time
import warnings

import numpy as np
from _common import add_paper_arguments, footer, paper_main, standardise
from sklearn.datasets import load_digits, load_iris, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessClassifier as SkGPC
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.model_selection import StratifiedKFold

import gpc
from gpc.datasets import load_glass, load_thyroid
from gpc.likelihoods import MultinomialProbit, softmax

REPORT = "multinomial.md"


def _kernel(d):
    return C(1.0) * RBF(np.sqrt(d))


MODELS = {
    "gpc multinomial": lambda C_, d: gpc.GaussianProcessClassifier(
        _kernel(d), multi_class="multinomial"),
    "gpc multinomial, vb": lambda C_, d: gpc.GaussianProcessClassifier(
        _kernel(d), multi_class="multinomial", method="vb"),
    "gpc multinomial, ep (probit)": lambda C_, d: gpc.GaussianProcessClassifier(
        _kernel(d), multi_class="multinomial", method="ep", likelihood="probit"),
    "gpc multinomial, kernel per class": lambda C_, d: gpc.GaussianProcessClassifier(
        [_kernel(d) for _ in range(C_)], multi_class="multinomial"),
    "gpc one-vs-rest": lambda C_, d: gpc.GaussianProcessClassifier(_kernel(d)),
    "scikit-learn one-vs-rest": lambda C_, d: SkGPC(_kernel(d)),
}
#: The reference of the fit-time ratios.
REFERENCE = "gpc multinomial"
#: The models run on each data set (per-class kernels on the small ones only).
DATASETS = {"wine": list(MODELS), "iris": list(MODELS), "thyroid": list(MODELS),
            "glass": list(MODELS),
            "digits": [m for m in MODELS if "per class" not in m]}


def load(name):
    if name == "wine":
        return load_wine(return_X_y=True)
    if name == "iris":
        return load_iris(return_X_y=True)
    if name == "glass":
        return load_glass(multiclass=True)
    if name == "thyroid":
        return load_thyroid(multiclass=True)
    X, y = load_digits(return_X_y=True)
    return X[:1000], y[:1000]


def add_arguments(ap):
    add_paper_arguments(ap, "2 folds, digits on 300 cases, 2e5 Monte Carlo draws")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--mc-draws", type=int, default=8_000_000)


def _log_loss(proba, y):
    p = np.clip(proba[np.arange(len(y)), y], 1e-15, 1 - 1e-15)
    return -np.log(p)


def mc_averages(mean, cov, draws, rng):
    """Monte Carlo averages of softmax(f), f ~ N(mean_i, cov_i), and their
    standard errors, ``draws`` pseudo-random draws per row (in batches)."""
    mc, se = np.empty_like(mean), np.empty_like(mean)
    for i in range(len(mean)):
        w, V = np.linalg.eigh(cov[i])
        root = V * np.sqrt(np.maximum(w, 0.0))
        total, total_sq, done = 0.0, 0.0, 0
        while done < draws:
            k = min(250_000, draws - done)
            S = softmax(mean[i][:, None] + root @ rng.standard_normal((len(w), k)))
            total, total_sq, done = total + S.sum(1), total_sq + (S ** 2).sum(1), done + k
        mc[i] = total / draws
        se[i] = np.sqrt(np.maximum(total_sq / draws - mc[i] ** 2, 0.0) / draws)
    return mc, se


def _mc_check(clf, X_test, draws, rng):
    """(largest |predict_proba - Monte Carlo|, largest MC standard error)."""
    X_test = X_test[:60]
    proba = clf.predict_proba(X_test)
    mc, se = mc_averages(*clf.latent_mean_and_variance(X_test), draws, rng)
    return float(np.max(np.abs(proba - mc))), float(np.max(se))


def _plug_in(clf, X_test):
    """Probabilities from the latent means alone; None for scikit-learn's model."""
    if not isinstance(clf, gpc.GaussianProcessClassifier):
        return None
    if clf.multi_class == "multinomial":
        mean = clf.latent_mean_and_variance(X_test)[0]
        likelihood = clf.base_estimator_.likelihood_
        if isinstance(likelihood, MultinomialProbit):
            C_ = mean.shape[1]
            return likelihood.predict(mean, np.zeros((len(mean), C_, C_)))
        return softmax(mean, axis=1)
    means = np.column_stack([e.latent_mean_and_variance(X_test)[0]
                             for e in clf.base_estimator_.estimators_])
    p = 1.0 / (1.0 + np.exp(-means))
    return p / p.sum(axis=1, keepdims=True)


def _hyperparameters(clf):
    """(signal variances, length scales) of a fitted ``C * RBF`` model's kernels."""
    kernels = getattr(clf, "kernel_", None)
    kernels = getattr(kernels, "kernels", [kernels])
    return [(k.k1.constant_value, k.k2.length_scale) for k in kernels]


def _warning_kind(message):
    """A ConvergenceWarning's short name in the report."""
    if "close to the specified" in message:
        return "a hyperparameter at a bound"
    if "did not converge" in message and "EP" in message:
        return "EP not converged"
    return "optimizer not converged"


def _evaluate(name, models, folds, draws, n_max):
    X, y = load(name)
    X, y = X[:n_max], y[:n_max]
    n_classes = np.unique(y).size
    split = StratifiedKFold(folds, shuffle=True, random_state=0)
    out = {m: {"loss": [], "hit": [], "time": [], "plug": [], "hyp": [],
               "warned": {}} for m in models}
    mc = None
    for k, (tr, te) in enumerate(split.split(X, y)):
        Xtr, Xte = standardise(X[tr], X[te])
        for m in models:
            clf = MODELS[m](n_classes, X.shape[1])
            t0 = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                clf.fit(Xtr, y[tr])
            out[m]["time"].append(time.perf_counter() - t0)
            kinds = set()
            for w in caught:
                if issubclass(w.category, ConvergenceWarning):
                    kinds.add(_warning_kind(str(w.message)))
                else:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            for kind in kinds:
                out[m]["warned"][kind] = out[m]["warned"].get(kind, 0) + 1
            proba = clf.predict_proba(Xte)
            out[m]["loss"].extend(_log_loss(proba, y[te]))
            out[m]["hit"].extend(np.argmax(proba, axis=1) == y[te])
            plug = _plug_in(clf, Xte)
            if plug is not None:
                out[m]["plug"].extend(_log_loss(plug, y[te]))
                out[m]["hyp"].extend(_hyperparameters(clf))
            print(f"  {name} fold {k + 1}/{folds} {m}: {out[m]['time'][-1]:.1f} s",
                  flush=True)
            if k == 0 and m == "gpc multinomial":
                mc = _mc_check(clf, Xte, draws, np.random.default_rng(0))
    return len(y), n_classes, out, mc


def _two_class_table():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 2))
    labels = {"noisy": (X[:, 0] + 0.3 * rng.normal(size=40) > 0).astype(int),
              "separated": (X[:, 0] > 0).astype(int)}
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    lines = ["| signal variance | length scale | noisy labels | separated labels |",
             "|---|---|---|---|"]
    for variance in (1.0, 1e2, 1e4, 1e5, 1e6):
        for ell in (0.5, 2.0):
            K = variance * np.exp(-0.5 * D / ell ** 2)
            cells = []
            for y in labels.values():
                joint = gpc.infer(K, y, likelihood="softmax").log_evidence
                binary = gpc.infer(2 * K, 2 * y - 1, likelihood="logit").log_evidence
                cells.append(f"{abs(joint - binary):.1e}")
            lines.append(f"| {variance:g} | {ell} | " + " | ".join(cells) + " |")
    return lines


def _ratio(out, m):
    """Median over the folds of model m's fit time over the reference's."""
    if REFERENCE not in out:
        return "-"
    return f"{np.median(np.array(out[m]['time']) / np.array(out[REFERENCE]['time'])):.2f}"


def run(args, argv=None):
    t0 = time.perf_counter()
    folds = 2 if args.quick else args.folds
    draws = min(args.mc_draws, 200_000) if args.quick else args.mc_draws
    lines = ["## The joint multinomial model against one-vs-rest", "",
             f"Stratified {folds}-fold cross-validation, inputs standardised per "
             "fold; kernel `C(1) * RBF(sqrt(d))` learnt by each model's evidence "
             "(vb: Bohning's bound; ep: nested EP's evidence of the multinomial "
             "probit model); Laplace and the logit / softmax unless named.  Log "
             "loss and accuracy over all test cases; fit time the median over "
             "folds; \"/ Laplace\" the median over folds of the fit time over the "
             f"`{REFERENCE}` (Laplace) fit's on the same fold.  Plug-in: the "
             "likelihood at the latent means (softmax, normalised sigmoids, or "
             "`MultinomialProbit.predict` with zero covariance).", "",
             "| data | model | log loss | accuracy | fit time (s) | / Laplace | "
             "plug-in log loss | signal variance | length scale |",
             "|---|---|---|---|---|---|---|---|---|"]
    checks, warned = [], []
    for name, models in DATASETS.items():
        n, n_classes, out, mc = _evaluate(name, models, folds, draws,
                                          300 if args.quick and name == "digits"
                                          else 1000)
        for m in models:
            r = out[m]
            plug, hyp = "| - | - | - |", np.array(r["hyp"])
            if r["plug"]:
                plug = (f"| {np.mean(r['plug']):.4f} | {np.median(hyp[:, 0]):.3g} | "
                        f"{np.median(hyp[:, 1]):.3g} |")
            lines.append(f"| {name} (n = {n}, C = {n_classes}) | {m} | "
                         f"{np.mean(r['loss']):.4f} | {np.mean(r['hit']):.4f} | "
                         f"{np.median(r['time']):.2f} | {_ratio(out, m)} " + plug)
            for kind, count in sorted(r["warned"].items()):
                warned.append(f"{name}, {m}: {kind} ({count} of {folds} folds)")
        checks.append(f"| {name} | {mc[0]:.1e} | {mc[1]:.1e} |")
    lines += ["", "ConvergenceWarnings (scikit-learn's for a learnt hyperparameter "
              "close to its bound, the optimizer's, EP's): "
              + ("; ".join(warned) if warned else "none") + "."]
    lines += ["", "Deterministic predictive (`Softmax.predict`, its default scrambled "
              f"Sobol' points) against {draws:.0e} Monte Carlo draws at up to 60 test "
              "points of the first fold's multinomial fit:", "",
              "| data | largest difference | largest MC standard error |",
              "|---|---|---|"] + checks
    lines += ["", "Two classes: |log evidence of the joint model - that of the binary "
              "logit with kernel 2K| (`gpc.infer`, 40 2-D points, RBF):", ""]
    lines += _two_class_table()
    return "\n".join(lines + footer(argv, t0))


if __name__ == "__main__":
    paper_main(__doc__, add_arguments, run)
