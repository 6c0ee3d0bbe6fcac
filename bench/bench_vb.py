"""Variational (Jaakkola-Jordan lower bound) fit against Laplace's, in one run.

n = 1000 (``--vb-sizes``) on the 8-D data of ``_common.make_data``, logit, kernel
``C * RBF(ARD)`` from the same start: a full fit with L-BFGS-B maximisation of the
evidence (Laplace) and of the lower bound (``method="vb"``), best of ``--repeat``;
the target is a ratio within 2.

Run through ``bench/run_all.py`` or standalone.
"""

import warnings

import numpy as np
from _common import best_of, make_data, standalone
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

import gpc


def _fit(method, X, y):
    kernel = C(1.0) * RBF(np.full(X.shape[1], np.sqrt(X.shape[1])))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gpc.GaussianProcessClassifier(kernel, method=method,
                                             likelihood="logit").fit(X, y)


def bench(sizes, repeat):
    rows = []
    for n in sizes:
        X, y = make_data(n)
        t_lap, lap = best_of(lambda: _fit("laplace", X, y), repeat)
        t_vb, vb = best_of(lambda: _fit("vb", X, y), repeat)
        rows.append(dict(n=n, t_lap=t_lap, t_vb=t_vb,
                         e_lap=lap.base_estimator_.optimizer_result_.n_evaluations,
                         e_vb=vb.base_estimator_.optimizer_result_.n_evaluations,
                         z_lap=lap.log_marginal_likelihood_value_,
                         z_vb=vb.log_marginal_likelihood_value_))
        print(f"  VB n={n}: {t_vb:.3g} s against Laplace {t_lap:.3g} s "
              f"(ratio {t_vb / t_lap:.2f})", flush=True)
    return rows


def report(rows, repeat):
    lines = ["## Variational lower bound: a fit with ARD optimisation against Laplace's "
             "(8-D, logit, `C * RBF(ARD)`)", "",
             f"Best of {repeat}, both in this run; evaluations = evidence (bound) "
             "evaluations of L-BFGS-B. Target: ratio within 2.", "",
             "| n | Laplace (s) | evaluations | log evidence | VB (s) | evaluations | "
             "log Z' | ratio |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['n']} | {r['t_lap']:.3g} | {r['e_lap']} | {r['z_lap']:.2f} | "
                     f"{r['t_vb']:.3g} | {r['e_vb']} | {r['z_vb']:.2f} | "
                     f"{r['t_vb'] / r['t_lap']:.2f} |")
    return "\n".join(lines) + "\n"


# The sizes of the quick mode (``--quick``: the main job's smoke run).
QUICK = {"vb_sizes": [500]}


def add_arguments(ap):
    ap.add_argument("--vb-sizes", type=int, nargs="+", default=[1000])


def run(args):
    """Run the VB benchmark; returns the Markdown section."""
    return report(bench(args.vb_sizes, args.repeat), args.repeat)


def main(argv=None):
    standalone(__doc__, add_arguments, run, argv, repeat=1, quick=QUICK)


if __name__ == "__main__":
    main()
