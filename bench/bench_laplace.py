"""Speed of gpc's Laplace classifier, as ratios measured in one run.

* Fixed kernel, 8-D data, n = 500 ... 4000: gpc fit time / scikit-learn fit time.
* The whole gpc fit (kernel matrix, Newton, stored posterior) in Choleskys: its time
  over that of one LAPACK dpotrf of I + K/4, the two timed back to back and the
  median ratio of ``--laplace-rounds`` pairs taken (``_common.paired_ratio``).
* gpc time per Newton iteration / one LAPACK Cholesky (dpotrf) of the same size.
* ARD hyperparameter optimisation at n = 1000: time and final log evidence of both.

Both libraries get the same scikit-learn kernel object, the same data and the same
BLAS threads.  Times are the best of ``--repeat`` runs.

Run through ``bench/run_all.py`` (which writes ``bench/RESULTS.md``).
"""

import numpy as np
from _common import (best_of, cholesky_call, cholesky_time, make_data, paired_ratio,
                     standalone)
from sklearn.gaussian_process import GaussianProcessClassifier as SkGPC
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

import gpc


def fixed_kernel(d=8):
    return C(2.0, "fixed") * RBF(np.full(d, np.sqrt(d)), "fixed")


def bench_fixed(sizes, repeat, rounds=9):
    rows = []
    for n in sizes:
        X, y = make_data(n)
        kernel = fixed_kernel()
        t_sk, sk = best_of(lambda: SkGPC(kernel).fit(X, y), repeat)
        t_gp, gp = best_of(lambda: gpc.GaussianProcessClassifier(kernel).fit(X, y), repeat)
        # The whole default fit in Choleskys of size n (paired with the reference).
        K = np.asfortranarray(kernel(X))
        fit_chol, _, fit = paired_ratio(
            lambda: gpc.GaussianProcessClassifier(kernel).fit(X, y), cholesky_call(K),
            rounds)
        # Per Newton iteration at the K level, against one dpotrf of the same size.
        ypm = 2.0 * y - 1.0
        # check_psd=False: time the Newton iterations, not infer's one-off validation.
        t_inf, res = best_of(lambda: gpc.infer(K, ypm, "laplace", "logit",
                                               compute_gradient=False, check_psd=False),
                             repeat)
        # every step (from a factorisation of B, single precision or not, or a chord
        # step reusing the last one), plus the final factorisation
        n_fact = res.info["n_iter"] + 1
        t_chol = cholesky_time(K, repeat)
        fit_info = fit.base_estimator_.inference_info_
        rows.append(dict(n=n, t_sk=t_sk, t_gp=t_gp, speedup=t_sk / t_gp,
                         lml_sk=sk.log_marginal_likelihood_value_,
                         lml_gp=gp.log_marginal_likelihood_value_,
                         n_iter=res.info["n_iter"], t_iter=t_inf / n_fact, t_chol=t_chol,
                         iter_per_chol=t_inf / n_fact / t_chol, fit_chol=fit_chol,
                         n_single=fit_info.get("n_single"),
                         n_reused=fit_info.get("n_reused")))
        print(f"  fixed n={n}: sklearn {t_sk:.3f}s gpc {t_gp:.3f}s "
              f"({t_sk / t_gp:.2f}x); fit {fit_chol:.2f} Choleskys; "
              f"iteration/cholesky {rows[-1]['iter_per_chol']:.2f}", flush=True)
    return rows


def bench_optimise(n, repeat):
    X, y = make_data(n, seed=1)
    kernel = C(1.0, (1e-3, 1e3)) * RBF(np.ones(8), (1e-2, 1e2))
    t_sk, sk = best_of(lambda: SkGPC(kernel).fit(X, y), repeat)
    t_gp, gp = best_of(lambda: gpc.GaussianProcessClassifier(kernel).fit(X, y), repeat)
    row = dict(n=n, t_sk=t_sk, t_gp=t_gp, speedup=t_sk / t_gp,
               lml_sk=sk.log_marginal_likelihood_value_,
               lml_gp=gp.log_marginal_likelihood_value_,
               evals_gp=gp.base_estimator_.optimizer_result_.n_evaluations)
    print(f"  ARD optimisation n={n}: sklearn {t_sk:.2f}s (lml {row['lml_sk']:.4f}) "
          f"gpc {t_gp:.2f}s (lml {row['lml_gp']:.4f}) -> {row['speedup']:.2f}x", flush=True)
    return row


def report(fixed, opt):
    lines = [
        "## Laplace, fixed kernel (8-D, `C(2) * RBF(ARD, sqrt(8))`, logit)",
        "",
        "Fit = everything `fit` does (kernel matrix, Newton, stored posterior). "
        "Fit / Cholesky = the gpc fit's time over one `dpotrf` of I + K/4, timed "
        "back to back (median of the pairs' ratios). "
        "Iteration = `gpc.infer(K, y)` time / (Newton steps + 1: each step, from a "
        "factorisation of B in single or double precision or reusing the last one, "
        "and the final factorisation), against one `dpotrf` of an n x n matrix. "
        "Single precision / reused: the fit's single-precision factorisations and "
        "chord steps.",
        "",
        "| n | scikit-learn fit (s) | gpc fit (s) | speed-up | log evidence sklearn | "
        "log evidence gpc | gpc fit / Cholesky | Newton steps | single precision | "
        "reused | gpc iteration (ms) | dpotrf (ms) | iteration / Cholesky |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in fixed:
        lines.append(
            f"| {r['n']} | {r['t_sk']:.3f} | {r['t_gp']:.3f} | {r['speedup']:.2f}x | "
            f"{r['lml_sk']:.6f} | {r['lml_gp']:.6f} | {r['fit_chol']:.2f} | "
            f"{r['n_iter']} | {r['n_single']} | {r['n_reused']} | "
            f"{1e3 * r['t_iter']:.1f} | "
            f"{1e3 * r['t_chol']:.1f} | {r['iter_per_chol']:.2f} |")
    if opt is not None:
        lines += [
            "",
            f"## Laplace, ARD hyperparameter optimisation (n = {opt['n']}, 9 "
            "hyperparameters, L-BFGS-B from the same start)",
            "",
            "| | time (s) | final log evidence |",
            "|---|---|---|",
            f"| scikit-learn | {opt['t_sk']:.2f} | {opt['lml_sk']:.6f} |",
            f"| gpc | {opt['t_gp']:.2f} | {opt['lml_gp']:.6f} |",
            "",
            f"Speed-up {opt['speedup']:.2f}x; gpc evaluated the evidence "
            f"{opt['evals_gp']} times.",
        ]
    return "\n".join(lines) + "\n"


# The sizes of the quick mode (``--quick``: the main job's smoke run).
QUICK = {"laplace_sizes": [500, 1000], "laplace_opt_n": 300}


def add_arguments(ap):
    ap.add_argument("--laplace-sizes", type=int, nargs="+", default=[500, 1000, 2000, 4000])
    ap.add_argument("--laplace-opt-n", type=int, default=1000, help="0 skips it")
    ap.add_argument("--laplace-rounds", type=int, default=9,
                    help="pairs of fit and Cholesky timed for the fit's ratio")


def run(args):
    """Run the Laplace benchmarks; returns the Markdown section."""
    fixed = bench_fixed(args.laplace_sizes, args.repeat, args.laplace_rounds)
    opt = bench_optimise(args.laplace_opt_n, 1) if args.laplace_opt_n else None
    return report(fixed, opt)


def main(argv=None):
    standalone(__doc__, add_arguments, run, argv, quick=QUICK)


if __name__ == "__main__":
    main()
