"""What the defaults give: the estimator as a new user calls it, as ratios in one run.

* EP with its default options (``method="ep"``, probit, ``C(1) * RBF(ARD)`` on the
  8-D data): a cold fit with fixed hyperparameters followed by
  ``log_marginal_likelihood(theta, eval_gradient=True)``, in units of one LAPACK
  Cholesky (dpotrf) of size n timed just before each call, beside the same with
  ``updates="sequential"`` (the default before ``updates="auto"``).
* Laplace (the estimator's default method, logit) with a fixed kernel: the whole
  ``fit`` in Choleskys of size n.
* ``predict_proba`` on 1000 test points after a fit on n = 2000, in Choleskys of
  size 2000, beside scikit-learn's.
* ``predict_proba`` on 10^5 test points after a fit on 1000: the peak memory it
  allocates (tracemalloc), beside scikit-learn's.

Ratios are medians over ``--repeat`` paired rounds (``_common.paired_ratio``).
Run through ``bench/run_all.py`` (which writes ``bench/RESULTS.md``).
"""

import tracemalloc
import warnings

import numpy as np
from _common import cholesky_call, make_data, paired_ratio
from scipy.linalg import blas
from sklearn.gaussian_process import GaussianProcessClassifier as SkGPC
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

import gpc


def _ard(d=8, fixed=False):
    bounds = "fixed" if fixed else (1e-5, 1e5)
    return C(1.0, bounds) * RBF(np.ones(d), bounds)


def _ep_fit_and_gradient(X, y, options):
    clf = gpc.GaussianProcessClassifier(_ard(), method="ep", likelihood="probit",
                                        optimizer=None, inference_options=options)
    clf.fit(X, y)
    return clf.log_marginal_likelihood(clf.kernel_.theta, eval_gradient=True)


def bench_ep_default(sizes, rounds):
    rows = []
    for n in sizes:
        X, y = make_data(n)
        ref = cholesky_call(_ard(fixed=True)(X))
        row = {"n": n}
        for label, options in (("default", None), ("sequential",
                                                   {"updates": "sequential"})):
            ratio, t_ref, _ = paired_ratio(lambda: _ep_fit_and_gradient(X, y, options),
                                           ref, rounds if label == "default" else 1)
            row[label], row["t_chol"] = ratio, t_ref
        print(f"  EP default n={n}: {row['default']:.1f} Choleskys "
              f"(sequential {row['sequential']:.1f})", flush=True)
        rows.append(row)
    return rows


def bench_laplace_default(sizes, rounds):
    rows = []
    kernel = C(2.0, "fixed") * RBF(np.full(8, np.sqrt(8)), "fixed")
    for n in sizes:
        X, y = make_data(n)
        ratio, t_ref, clf = paired_ratio(
            lambda: gpc.GaussianProcessClassifier(kernel).fit(X, y),
            cholesky_call(kernel(X)), rounds)
        rows.append({"n": n, "fit": ratio, "t_chol": t_ref,
                     "n_iter": clf.base_estimator_.inference_info_["n_iter"]})
        print(f"  Laplace default fit n={n}: {ratio:.1f} Choleskys", flush=True)
    return rows


def bench_predict(n, m, rounds):
    X, y = make_data(n + m, seed=2)
    kernel = C(2.0, "fixed") * RBF(np.full(8, np.sqrt(8)), "fixed")
    ref = cholesky_call(kernel(X[:n]))
    gp = gpc.GaussianProcessClassifier(kernel).fit(X[:n], y[:n])
    sk = SkGPC(kernel).fit(X[:n], y[:n])
    r_gp, t_ref, p_gp = paired_ratio(lambda: gp.predict_proba(X[n:]), ref, rounds)
    r_sk, _, p_sk = paired_ratio(lambda: sk.predict_proba(X[n:]), ref, rounds)
    # The floor of an exact (double-precision) predictive variance: the triangular
    # solve L^{-1} (sW K_cross) alone, n^2 m flops (1.5 times a Cholesky's at m = n/2).
    L, V = gp.base_estimator_.posterior_.L, np.asfortranarray(kernel(X[:n], X[n:]))
    r_solve, _, _ = paired_ratio(
        lambda: blas.dtrsm(1.0, L, V.copy(order="F"), lower=1, overwrite_b=1),
        ref, rounds)
    print(f"  predict_proba {m} after fit on {n}: gpc {r_gp:.2f}, scikit-learn "
          f"{r_sk:.2f} Choleskys (dtrsm alone {r_solve:.2f})", flush=True)
    return {"n": n, "m": m, "gpc": r_gp, "sklearn": r_sk, "solve": r_solve,
            "t_chol": t_ref, "dp": float(np.max(np.abs(p_gp - p_sk)))}


def _peak_mb(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    out = fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20, out


def bench_memory(n, m):
    X, y = make_data(n, seed=3)
    X_test = np.random.RandomState(4).randn(m, X.shape[1])
    kernel = C(2.0, "fixed") * RBF(np.full(8, np.sqrt(8)), "fixed")
    row = {"n": n, "m": m, "out": 2 * m * 8 / 2**20}
    for label, cls in (("gpc", gpc.GaussianProcessClassifier), ("sklearn", SkGPC)):
        clf = cls(kernel).fit(X, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            row[label], _ = _peak_mb(lambda: clf.predict_proba(X_test))
    print(f"  predict_proba on {m} after fit on {n}: peak gpc {row['gpc']:.0f} MiB, "
          f"scikit-learn {row['sklearn']:.0f} MiB", flush=True)
    return row


def report(ep, lap, pred, mem):
    lines = [
        "## The defaults: EP cold fit + evidence gradient, Laplace fit (8-D data)",
        "",
        "In units of one `dpotrf` of size n timed just before each call (median of "
        "the per-round ratios). EP: `GaussianProcessClassifier(C(1) * RBF(ARD), "
        "method=\"ep\", likelihood=\"probit\", optimizer=None).fit(X, y)` then "
        "`log_marginal_likelihood(theta, eval_gradient=True)`, with the default "
        "options and with `updates=\"sequential\"` (one round); at the fitted "
        "theta EP's gradient comes from the fitted posterior (B^{-1} from its "
        "factor, no second EP run). Laplace: "
        "`GaussianProcessClassifier(C(2) * RBF(ARD, sqrt(8)), fixed).fit(X, y)` "
        "(logit). Targets: EP within 15, Laplace within 8.",
        "",
        "| n | EP default (Choleskys) | EP sequential (Choleskys) | Laplace fit "
        "(Choleskys) | Newton steps | dpotrf (ms) |",
        "|---|---|---|---|---|---|",
    ]
    for e, la in zip(ep, lap):
        lines.append(f"| {e['n']} | {e['default']:.1f} | {e['sequential']:.1f} | "
                     f"{la['fit']:.1f} | {la['n_iter']} | {1e3 * la['t_chol']:.1f} |")
    lines += [
        "",
        f"## Prediction: `predict_proba` on {pred['m']} points after a fit on "
        f"{pred['n']} (Laplace, fixed kernel)",
        "",
        f"In units of one `dpotrf` of size {pred['n']} "
        f"({1e3 * pred['t_chol']:.1f} ms): gpc {pred['gpc']:.2f}, scikit-learn "
        f"{pred['sklearn']:.2f} (target: gpc within 1); the `dtrsm` of the "
        f"predictive variance alone, the floor of an exact variance (n^2 m flops, "
        f"1.5 times a Cholesky's at m = n / 2): {pred['solve']:.2f}. Largest "
        "difference in "
        f"probability {pred['dp']:.1e} (scikit-learn approximates the logistic-"
        "Gaussian integral by five error functions).",
        "",
        f"Peak memory allocated by `predict_proba` on {mem['m']:,} points after a "
        f"fit on {mem['n']} (tracemalloc; the returned array is "
        f"{mem['out']:.1f} MiB): gpc {mem['gpc']:.0f} MiB, scikit-learn "
        f"{mem['sklearn']:.0f} MiB (target: gpc under 300 MB).",
    ]
    return "\n".join(lines) + "\n"


QUICK = {"defaults_sizes": [500, 1000], "defaults_predict": [1000, 500],
         "defaults_memory": [500, 20000]}


def add_arguments(ap):
    ap.add_argument("--defaults-sizes", type=int, nargs="+", default=[500, 1000, 2000])
    ap.add_argument("--defaults-predict", type=int, nargs=2, default=[2000, 1000],
                    metavar=("N_TRAIN", "N_TEST"))
    ap.add_argument("--defaults-memory", type=int, nargs=2, default=[1000, 100000],
                    metavar=("N_TRAIN", "N_TEST"))


def run(args):
    """Run the defaults benchmarks; returns the Markdown section."""
    rounds = 3 * args.repeat
    ep = bench_ep_default(args.defaults_sizes, rounds)
    lap = bench_laplace_default(args.defaults_sizes, rounds)
    pred = bench_predict(*args.defaults_predict, rounds)
    mem = bench_memory(*args.defaults_memory)
    return report(ep, lap, pred, mem)

