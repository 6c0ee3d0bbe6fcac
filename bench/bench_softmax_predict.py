"""The softmax predictive (``gpc.likelihoods.Softmax.predict``): the previous
plain quasi-Monte Carlo rule against the Rao-Blackwellised one, in speed and
accuracy.

* speed: milliseconds per test point at C = 3, 5, 10 and 20 on ``--points``
  synthetic latent Gaussians (random means of scale 3, random covariances of
  scale 30), best of 3 rounds, one process;
* accuracy: the first fold's Laplace fit of ``bench/bench_multinomial.py`` on
  wine and digits (``_mc_check``: up to 60 test points, ``--mc-draws``
  pseudo-random draws per point, the same draws for both rules): the largest
  difference from the Monte Carlo average beside the largest Monte Carlo
  standard error.

Run it with one BLAS thread (``OPENBLAS_NUM_THREADS=1``).

Usage::

    python bench/bench_softmax_predict.py --write bench/results/softmax_predict.md
    python bench/bench_softmax_predict.py --quick
"""

import time
import warnings

import numpy as np
from _common import add_paper_arguments, footer, paper_main, standardise
from bench_multinomial import MODELS, _mc_check, load
from scipy.special import ndtri
from scipy.stats import qmc
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import StratifiedKFold

from gpc.likelihoods import Softmax, _default_points, softmax

REPORT = "softmax_predict.md"


def old_predict(self, mean, cov):
    """The previous rule: 2^12 .. 2^17 scrambled Sobol' points (seed 0) in the
    C - 1 directions orthogonal to (1, ..., 1), plain averages of the softmax."""
    m, C = mean.shape
    centre = np.eye(C) - 1.0 / C
    w, V = np.linalg.eigh(centre @ cov @ centre)
    root = (V * np.sqrt(np.maximum(w, 0.0))[:, None, :])[:, :, :0:-1]
    n = self.n_points or 1 << min(17, 12 + 2 * (C - 2))
    Z = ndtri(qmc.Sobol(C - 1, scramble=True, seed=0).random_base2(n.bit_length() - 1))
    out = np.empty((m, C))
    for i in range(m):
        out[i] = softmax(Z @ root[i].T + mean[i], axis=1).mean(axis=0)
    return out


def add_arguments(ap):
    add_paper_arguments(ap, "10 points per C, 2e5 Monte Carlo draws")
    ap.add_argument("--points", type=int, default=50)
    ap.add_argument("--mc-draws", type=int, default=8_000_000)


def _time(fn, mean, cov):
    fn(mean[:1], cov[:1])                               # tables, point sets
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        fn(mean, cov)
        best = min(best, time.perf_counter() - t0)
    return 1e3 * best / len(mean)


def _fit(name):
    X, y = load(name)
    tr, te = next(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    Xtr, Xte = standardise(X[tr], X[te])
    clf = MODELS["gpc multinomial"](np.unique(y).size, X.shape[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(Xtr, y[tr])
    return clf, Xte


def run(args, argv=None):
    t0 = time.perf_counter()
    n = 10 if args.quick else args.points
    draws = min(args.mc_draws, 200_000) if args.quick else args.mc_draws
    lines = ["## The softmax predictive: plain against Rao-Blackwellised quasi-Monte "
             "Carlo", "", f"Milliseconds per test point (best of 3 rounds over {n} "
             "random latent Gaussians, mean scale 3, covariance scale 30):", "",
             "| C | previous rule | points | new rule | points | speed-up |",
             "|---|---|---|---|---|---|"]
    rng = np.random.default_rng(0)
    new = Softmax()
    for C in (3, 5, 10, 20):
        mean = 3 * rng.normal(size=(n, C))
        A = rng.normal(size=(n, C, C)) * 30
        cov = A @ A.transpose(0, 2, 1) / C
        t_old = _time(lambda mu, S: old_predict(new, mu, S), mean, cov)
        t_new = _time(new.predict, mean, cov)
        lines.append(f"| {C} | {t_old:.2f} | 2^{min(17, 12 + 2 * (C - 2))} | "
                     f"{t_new:.3f} | 2^{_default_points(C).bit_length() - 1} | "
                     f"{t_old / t_new:.0f} |")
    lines += ["", f"Largest difference from {draws:.0e}-draw Monte Carlo averages at up "
              "to 60 test points of the first fold's multinomial Laplace fit:", "",
              "| data | previous rule | new rule | largest MC standard error |",
              "|---|---|---|---|"]
    for name in ("wine", "digits"):
        clf, Xte = _fit(name)
        new_err, se = _mc_check(clf, Xte, draws, np.random.default_rng(0))
        saved = Softmax.predict
        Softmax.predict = old_predict
        try:
            old_err, _ = _mc_check(clf, Xte, draws, np.random.default_rng(0))
        finally:
            Softmax.predict = saved
        lines.append(f"| {name} | {old_err:.1e} | {new_err:.1e} | {se:.1e} |")
    return "\n".join(lines + footer(argv, t0))


if __name__ == "__main__":
    paper_main(__doc__, add_arguments, run)
