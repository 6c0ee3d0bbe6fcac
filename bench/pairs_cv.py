"""Every method x likelihood pair's cross-validated log loss on real data, beside
EP's with the same likelihood (the target: within 1.3x).

Protocol:

* data: the bundled breast cancer set (699 cases, 9 integer inputs), Pima (Ripley's
  200 + 332 = 532 cases, 7 inputs) and scikit-learn's breast cancer (WDBC, 569
  cases, 30 inputs), each in ``--folds`` stratified folds (shuffled, seed 0),
  inputs standardised with the training fold's statistics;
* model: ``GaussianProcessClassifier`` with the pair's method, schedule and
  likelihood and the kernel ``C(1) * RBF(1)``, alone or plus a learnt
  ``WhiteKernel(1e-2)`` (bounds 1e-5 to 10), its hyperparameters learnt by
  maximising the pair's evidence (or bound) from that start, plus ``--restarts``
  random starts.  A pair that refuses the setting (ADF: no evidence gradient; the
  ensemble mean field: no noise term) is reported with its error message;
* score: the test folds' mean log loss (probabilities clipped to [1e-15, 1 - 1e-15],
  as scikit-learn's ``log_loss``) and error rate; the ratio is the pair's log loss
  over EP's (parallel schedule) with the same likelihood on the same folds.

The pairs come from gpc's registries: every method, each of its schedules, and every
classification likelihood the method accepts.

Usage::

    python bench/pairs_cv.py --write bench/results/pairs_cv.md
    python bench/pairs_cv.py --quick     # breast cancer, noise term, 2 folds
"""

import inspect
import time
import warnings

import numpy as np
from _common import (add_paper_arguments, footer, paper_main, run_tasks, shown_path,
                     standardise)
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.model_selection import StratifiedKFold

import gpc
from gpc.datasets import load_breast_cancer, load_pima
from gpc.inference import get_method
from gpc.likelihoods._base import _REGISTRY

# The full report's file in bench/results (run_all.py writes it there).
REPORT = "pairs_cv.md"
#: The reference every pair is compared with: EP, parallel schedule.
REFERENCE = ("ep", "parallel")
#: The kernels: a squared exponential, alone or plus a learnt white-noise term.
KERNELS = {"se": False, "se+white": True}
KERNEL_NAMES = {False: "C(1) * RBF(1)", True: "C(1) * RBF(1) + WhiteKernel(1e-2)"}


def load(name):
    if name == "breast_cancer":
        return load_breast_cancer()
    if name == "wdbc":
        from sklearn.datasets import load_breast_cancer as load_wdbc
        return load_wdbc(return_X_y=True)
    Xa, ya, Xb, yb = load_pima()
    return np.vstack([Xa, Xb]), np.concatenate([ya, yb])


def pairs():
    """(method, schedule or None, likelihood) for every classification pair that
    gpc accepts."""
    liks = [name for name in sorted(_REGISTRY)
            if gpc.get_likelihood(name).is_classification]
    out = []
    for method in gpc.available_methods():
        has_updates = "updates" in inspect.signature(get_method(method)).parameters
        for updates in (["sequential", "parallel"] if has_updates else [None]):
            for lik in liks:
                opts = {} if updates is None else {"updates": updates}
                try:
                    gpc.infer(np.eye(2), np.array([-1.0, 1.0]), method=method,
                              likelihood=lik, **opts)
                except ValueError:
                    continue
                out.append((method, updates, lik))
    return out


def fold_score(task):
    """One pair's scores on one test fold: a dict of its log loss, error rate,
    fit seconds, learnt kernel and ConvergenceWarnings, or ``{"refused": message}``
    when the fit raises."""
    dataset, (method, updates, lik), fold, n_folds, restarts, white = task
    X, y = load(dataset)
    cv = StratifiedKFold(n_folds, shuffle=True, random_state=0)
    train, test = list(cv.split(X, y))[fold]
    Xtr, Xte = standardise(X[train], X[test])
    kernel = C(1.0) * RBF(1.0)
    if white:
        kernel = kernel + WhiteKernel(1e-2, (1e-5, 10.0))
    clf = gpc.GaussianProcessClassifier(
        kernel, method=method, likelihood=lik, n_restarts_optimizer=restarts,
        random_state=0,
        inference_options=None if updates is None else {"updates": updates})
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        try:
            clf.fit(Xtr, y[train])
        except (ValueError, FloatingPointError, np.linalg.LinAlgError) as exc:
            return {"refused": f"{type(exc).__name__}: {exc}"}
    seconds = time.perf_counter() - t0
    p = np.clip(clf.predict_proba(Xte)[:, 1], 1e-15, 1 - 1e-15)
    yt = y[test]
    loss = -np.mean(yt * np.log(p) + (1 - yt) * np.log1p(-p))
    return {"log_loss": float(loss), "error": float(np.mean((p >= 0.5) != yt)),
            "seconds": seconds, "kernel": str(clf.kernel_),
            "warnings": len([w for w in caught
                             if issubclass(w.category, ConvergenceWarning)])}


def _name(pair):
    return "-".join(p for p in pair if p)


def run(args, argv=None):
    t0 = time.perf_counter()
    if args.quick:
        args.datasets, args.kernels, args.folds = ["breast_cancer"], ["se+white"], 2
        args.restarts = [0]
    todo = [p for p in pairs() if not args.pairs or _name(p) in args.pairs
            or p[:2] == REFERENCE]
    settings = [(d, r, KERNELS[k]) for d in args.datasets for k in args.kernels
                for r in args.restarts]
    tasks = [(d, p, f, args.folds, r, w) for d, r, w in settings for p in todo
             for f in range(args.folds)]
    scores = run_tasks(fold_score, tasks, jobs=args.jobs, checkpoint=args.checkpoint,
                       describe=lambda s: (f"log loss {s['log_loss']:.4f}"
                                           if "log_loss" in s
                                           else "refused (the table says why)"))
    by = dict(zip(tasks, scores))
    lines = ["# Every pair's cross-validated log loss beside EP's", "",
             f"{args.folds}-fold stratified cross-validation (shuffled, seed 0); the "
             "kernel learnt by each pair's own evidence or bound; ratio: the pair's "
             "log loss over EP's (parallel) with the same likelihood. Protocol: "
             "`bench/pairs_cv.py`.", ""]
    worst = []
    for d, r, w in settings:
        lines += [f"## {d}, `{KERNEL_NAMES[w]}`, {r} random restart(s)", "",
                  "| method | schedule | likelihood | log loss | ratio to EP | error "
                  "| fit s / fold | warnings |", "|---|---|---|---|---|---|---|---|"]
        for p in todo:
            folds = [by[(d, p, f, args.folds, r, w)] for f in range(args.folds)]
            ref = [by[(d, REFERENCE + (p[2],), f, args.folds, r, w)]
                   for f in range(args.folds)]
            row, ratio = _row(p, folds, ref)
            lines.append(row)
            if ratio is not None:
                worst.append((ratio, d, KERNEL_NAMES[w], r, _name(p)))
        lines.append("")
    if worst:
        ratio, d, k, r, name = max(worst)
        lines += [f"Largest ratio to EP: {ratio:.2f} ({name}, {d}, `{k}`, {r} "
                  "restart(s)).", ""]
    fits = sum(s.get("seconds", 0.0) for s in scores)
    lines += [f"The {len(tasks)} fits took {fits:.0f} s in all"
              + (f" (those of earlier runs read from `{shown_path(args.checkpoint)}`)."
                 if args.checkpoint else "."), ""]
    return "\n".join(lines + footer(argv, t0, args.jobs))


def _row(pair, folds, ref):
    """A table row of a pair's fold scores, and its ratio to EP (None if refused)."""
    method, updates, lik = pair
    bad = [s["refused"] for s in folds if "log_loss" not in s]
    if bad:
        return (f"| {method} | {updates or ''} | {lik} | refused: {bad[0]} "
                "| | | | |"), None
    loss = np.mean([s["log_loss"] for s in folds])
    ratio = loss / np.mean([s["log_loss"] for s in ref])
    return (f"| {method} | {updates or ''} | {lik} | {loss:.4f} | {ratio:.2f} | "
            f"{np.mean([s['error'] for s in folds]):.3f} | "
            f"{np.mean([s['seconds'] for s in folds]):.1f} | "
            f"{sum(s['warnings'] for s in folds)} |"), ratio


def add_arguments(ap):
    add_paper_arguments(ap, "breast cancer, the kernel with a noise term, 2 folds")
    ap.add_argument("--datasets", nargs="+", default=["breast_cancer", "pima", "wdbc"],
                    choices=["breast_cancer", "pima", "wdbc"])
    ap.add_argument("--kernels", nargs="+", default=list(KERNELS),
                    choices=list(KERNELS))
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--restarts", type=int, nargs="+", default=[0],
                    help="numbers of random restarts to run (default: 0)")
    ap.add_argument("--pairs", nargs="*",
                    help="only these pairs, named method-schedule-likelihood "
                         "(EP's parallel pairs always run)")
    ap.add_argument("--checkpoint", help="JSON-lines file of finished folds, to "
                                         "resume an interrupted run")


if __name__ == "__main__":
    paper_main(__doc__, add_arguments, run)
