"""Where the multinomial EP fit's time goes, against the multinomial Laplace fit's.

On the first fold of ``bench_multinomial.py``'s digits (its first 1000 cases,
stratified 5-fold split with seed 0, inputs standardised with the training
fold's statistics: 800 training cases, 10 classes), in one process:

* *one iteration of each method*, in units of one LAPACK Cholesky of order n
  (paired ratios, :func:`_common.paired_ratio`): EP's outer iteration (the
  posterior of its sites: each class's factorisation and inverse, then the
  marginal covariances, ``_Posterior``) at its converged sites, and Laplace's
  Newton step (each class's factorisation and inverse at the softmax's
  curvature, ``_Factors``) at its mode, both at the hyperparameters each learns
  on this fold;
* *the fits*: ``GaussianProcessClassifier(C(1) * RBF(8), multi_class=
  "multinomial")`` with ``method="laplace"`` and with ``method="ep",
  likelihood="probit"``, kernel learnt: the time, the evidence evaluations and
  the iterations (EP's outer iterations, Newton steps) over all of them;
* *EP's tolerance*: at EP's learnt hyperparameters, EP from zero sites with
  ``tol`` 1e-5, 1e-6, 1e-8 (the default) and 1e-10: outer iterations, and the
  log evidence's and its gradient's (in log hyperparameters) largest difference
  from the 1e-10 run, beside the optimizer's stopping test (a projected gradient
  of 1e-5).

Usage::

    python bench/bench_multinomial_ep_cost.py --write bench/results/multinomial_ep_cost.md
"""

import time
import warnings

import numpy as np
from _common import (add_paper_arguments, cholesky_call, footer, paired_ratio,
                     paper_main, standardise)
from sklearn.datasets import load_digits
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.model_selection import StratifiedKFold

import gpc
import gpc.evidence
from gpc.inference.multinomial import _Factors, _mv
from gpc.kernels import contract
from gpc.inference.multinomial_ep import _Posterior
from gpc.likelihoods import softmax

REPORT = "multinomial_ep_cost.md"
TOLS = (1e-5, 1e-6, 1e-8, 1e-10)


def add_arguments(ap):
    add_paper_arguments(ap, "400 digits, 2 rounds")
    ap.add_argument("--rounds", type=int, default=5)


def _fold(n_max):
    X, y = load_digits(return_X_y=True)
    X, y = X[:n_max], y[:n_max]
    tr, _ = next(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    return standardise(X[tr], X[tr])[0], y[tr]


def _fit(X, y, **kw):
    """(fit time, fitted estimator, [n_iter of each evidence evaluation])."""
    counts = []
    run = gpc.evidence.EvidenceObjective._run

    def counted(self, compute_gradient, workspace):
        res, Ks = run(self, compute_gradient, workspace)
        counts.append(res.info["n_iter"])
        return res, Ks

    clf = gpc.GaussianProcessClassifier(C(1.0) * RBF(8.0), multi_class="multinomial",
                                        **kw)
    gpc.evidence.EvidenceObjective._run = counted
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            clf.fit(X, y)
            elapsed = time.perf_counter() - t0
    finally:
        gpc.evidence.EvidenceObjective._run = run
    return elapsed, clf, counts


def _tolerances(X, y, kernel):
    K = np.asfortranarray(kernel(X))
    Ks = [K] * int(y.max() + 1)
    out = {}
    for tol in TOLS[::-1]:
        t0 = time.perf_counter()
        res = gpc.infer(Ks, y, method="ep", likelihood="multinomial_probit", tol=tol)
        out[tol] = (res.info["n_iter"], time.perf_counter() - t0, res.log_evidence,
                    contract(kernel, X, res.dK.sum(axis=0)), res)
    return out


def run(args, argv=None):
    t_start = time.perf_counter()
    X, y = _fold(400 if args.quick else 1000)
    rounds = 2 if args.quick else args.rounds
    fits = {name: _fit(X, y, **kw) for name, kw in
            [("Laplace", {}), ("EP", {"method": "ep", "likelihood": "probit"})]}
    lap, ep = fits["Laplace"][1].base_estimator_, fits["EP"][1].base_estimator_
    Ks_lap = [np.asfortranarray(lap.kernel_(X))] * lap.classes_.size
    pi = softmax(_mv(Ks_lap, lap.posterior_.alpha))
    tol = _tolerances(X, y, ep.kernel_)
    state = tol[1e-8][4].state
    Ks_ep = [np.asfortranarray(ep.kernel_(X))] * ep.classes_.size
    reference = cholesky_call(Ks_ep[0])
    cost = {
        "EP outer iteration": paired_ratio(
            lambda: _Posterior(Ks_ep, y, state["tau"], state["nu"]), reference, rounds),
        "Laplace Newton step": paired_ratio(
            lambda: _Factors(Ks_lap, pi), reference, rounds)}
    n, C_ = len(y), lap.classes_.size
    lines = [f"## Multinomial EP's fit time against Laplace's (digits, n = {n}, "
             f"C = {C_})", "",
             "One iteration, in units of one LAPACK Cholesky of order n (median "
             f"of {rounds} paired rounds; the Cholesky took "
             f"{1e3 * cost['EP outer iteration'][1]:.1f} ms):", "",
             "| step | / Cholesky | seconds |", "|---|---|---|"]
    for name, (ratio, t_ref, _) in cost.items():
        lines.append(f"| {name} | {ratio:.1f} | {ratio * t_ref:.3f} |")
    lines += ["", "The fits, kernel learnt from `C(1) * RBF(8)`:", "",
              "| method | fit (s) | evaluations | iterations | per evaluation | "
              "learnt kernel |", "|---|---|---|---|---|---|"]
    for name, (elapsed, clf, counts) in fits.items():
        lines.append(f"| {name} | {elapsed:.1f} | {len(counts)} | {sum(counts)} | "
                     f"{sum(counts) / max(len(counts), 1):.1f} | "
                     f"`{clf.kernel_}` |")
    lines.append(f"\nEP's fit time / Laplace's: "
                 f"{fits['EP'][0] / fits['Laplace'][0]:.2f}.")
    ref = tol[TOLS[-1]]
    lines += ["", f"EP from zero sites at its learnt `{ep.kernel_}`, by `tol`:", "",
              "| tol | outer iterations | seconds | log evidence - tol 1e-10's | "
              "largest gradient difference |", "|---|---|---|---|---|"]
    for t in TOLS:
        it, secs, value, grad, _ = tol[t]
        lines.append(f"| {t:g} | {it} | {secs:.1f} | {value - ref[2]:.1e} | "
                     f"{np.max(np.abs(grad - ref[3])):.1e} |")
    lines.append(f"\nThe gradient at tol 1e-10: {np.array2string(ref[3], precision=5)}.")
    return "\n".join(lines + footer(argv, t_start))


if __name__ == "__main__":
    paper_main(__doc__, add_arguments, run)
