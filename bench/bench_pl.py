"""Posterior linearisation: speed as ratios measured in one run.

* n = 1000, 2000 on 8-D data (the EP benchmark's data and kernel), probit, from the
  prior: a parallel PL fit with and without the chord-Newton acceleration, and with
  the evidence gradient, in units of one LAPACK Cholesky of size n; the cost per
  iteration (factorisation) of the plain run.

Run through ``bench/run_all.py`` (which writes ``bench/RESULTS.md``).
"""

import warnings

import numpy as np
from _common import cholesky_call, make_data, paired_ratio
from bench_ep import _kernel

import gpc


def _fit(K, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gpc.infer(K, y, method="pl", likelihood="probit", updates="parallel",
                         check_psd=False, tol=1e-8, **kw)


def bench_speed(sizes, repeat):
    rows = []
    for n in sizes:
        X, y01 = make_data(n)
        y = 2.0 * y01 - 1.0
        K = np.asfortranarray(_kernel()(X))
        chol = cholesky_call(K)
        r_acc, c1, acc = paired_ratio(lambda: _fit(K, y, compute_gradient=False),
                                      chol, repeat)
        r_plain, c2, plain = paired_ratio(
            lambda: _fit(K, y, compute_gradient=False, accelerate=False), chol, repeat)
        r_grad, c3, _ = paired_ratio(lambda: _fit(K, y, compute_gradient=True),
                                     chol, repeat)
        # The LAPACK work an exact PL iteration cannot do without: the marginal
        # variances diag(Sigma) = (1 - diag(B^{-1})) / tau need the inverse factor,
        # n^3/3 flops like the factorisation.
        floor = cholesky_call(K, invert=True)
        r_floor = float(np.median([floor() / chol() for _ in range(3 * repeat)]))
        row = dict(n=n, t_chol=float(np.median([c1, c2, c3])), r_acc=r_acc,
                   r_plain=r_plain, r_grad=r_grad, r_floor=r_floor,
                   f_acc=acc.info["n_sweeps"] + 1, lin=acc.info["n_linearised_sweeps"],
                   s_acc=acc.info["n_single_precision"],
                   f_plain=plain.info["n_sweeps"] + 1,
                   s_plain=plain.info["n_single_precision"])
        rows.append(row)
        print(f"  PL n={n}: accelerated {r_acc:.1f} chol "
              f"({row['f_acc']} factorisations), plain {r_plain:.1f} chol "
              f"({row['f_plain']}: {r_plain / row['f_plain']:.2f} each; dpotrf + "
              f"dtrtri {r_floor:.2f}), with gradient {r_grad:.1f}", flush=True)
    return rows


def report(speed):
    lines = [
        "## Posterior linearisation: a fit from the prior (8-D, the EP benchmark's "
        "kernel, probit, parallel, tol 1e-8)",
        "",
        "In units of one `dpotrf` of size n timed just before each call (the median "
        "of the per-round ratios; the dpotrf column is the median of those "
        "references). Accelerated: chord-Newton steps between factorisations (the "
        "default); plain: one factorisation per PL iteration. Factorisations include "
        "the single-precision ones that steer the first steps. Per sweep: the "
        "accelerated fit over all its relinearisations of every site (exact and on "
        "the linearised marginals); per iteration: the plain fit over its "
        "factorisations. Floor: one `dpotrf` + `dtrtri` of the same size, which an "
        "exact iteration cannot do without (the marginal variances need the inverse "
        "factor, as many flops as the factorisation).",
        "",
        "| n | accelerated (Choleskys) | factorisations (single) + cheap sweeps | "
        "accelerated, per sweep | plain (Choleskys) | iterations (single) | "
        "plain, per iteration | floor: dpotrf + dtrtri | accelerated + gradient | "
        "dpotrf (ms) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in speed:
        lines.append(
            f"| {r['n']} | {r['r_acc']:.1f} | {r['f_acc']} ({r['s_acc']}) + "
            f"{r['lin']} | {r['r_acc'] / (r['f_acc'] + r['lin']):.2f} | "
            f"{r['r_plain']:.1f} | {r['f_plain']} ({r['s_plain']}) | "
            f"{r['r_plain'] / r['f_plain']:.2f} | {r['r_floor']:.2f} | "
            f"{r['r_grad']:.1f} | {1e3 * r['t_chol']:.1f} |")
    lines += [
        "",
        "The evidence-maximisation optimum with the analytic gradient against finite "
        "differences on the paper's six data sets, and Table I: "
        "[`results/pl_optimum.md`](results/pl_optimum.md) and "
        "[`results/pl_table1.md`](results/pl_table1.md) (`bench/paper_pl.py`).",
    ]
    return "\n".join(lines) + "\n"


# The sizes of the quick mode (``--quick``: the main job's smoke run).
QUICK = {"pl_sizes": [1000]}


def add_arguments(ap):
    ap.add_argument("--pl-sizes", type=int, nargs="+", default=[1000, 2000])


def run(args):
    """Run the PL speed benchmark; returns the Markdown section."""
    return report(bench_speed(args.pl_sizes, args.repeat))
