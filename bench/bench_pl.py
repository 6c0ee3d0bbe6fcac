"""Posterior linearisation: speed as ratios measured in one run, and the optimum of
evidence maximisation with its analytic gradient against finite differences.

* n = 1000, 2000 on 8-D data (the EP benchmark's data and kernel), probit, from the
  prior: a parallel PL fit with and without the chord-Newton acceleration, and with
  the evidence gradient, in units of one LAPACK Cholesky of size n; the cost per
  iteration (factorisation) of the plain run.
* Crabs (200 cases, the papers' ARD kernel, 8 hyperparameters): L-BFGS-B from the
  same start with the analytic total derivative and with SciPy's finite differences
  of the evidence; the two optima's log evidence.

Run through ``bench/run_all.py`` (which writes ``bench/RESULTS.md``).
"""

import time
import warnings

import numpy as np
from _common import best_of, cholesky_time, make_data
from bench_ep import _kernel
from scipy.optimize import minimize

import gpc
from gpc.datasets import load_dataset
from gpc.kernels import paper_kernel
from gpc.likelihoods import get_likelihood
from gpc.optimize import EvidenceObjective, maximize_evidence


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
        t_chol = cholesky_time(K, 3 * repeat)
        t_acc, acc = best_of(lambda: _fit(K, y, compute_gradient=False), repeat)
        t_plain, plain = best_of(
            lambda: _fit(K, y, compute_gradient=False, accelerate=False), repeat)
        t_grad, _ = best_of(lambda: _fit(K, y, compute_gradient=True), repeat)
        row = dict(n=n, t_chol=t_chol, t_acc=t_acc, t_plain=t_plain, t_grad=t_grad,
                   f_acc=acc.info["n_sweeps"] + 1, lin=acc.info["n_linearised_sweeps"],
                   s_acc=acc.info["n_single_precision"],
                   f_plain=plain.info["n_sweeps"] + 1,
                   s_plain=plain.info["n_single_precision"])
        rows.append(row)
        print(f"  PL n={n}: accelerated {t_acc / t_chol:.1f} chol "
              f"({row['f_acc']} factorisations), plain {t_plain / t_chol:.1f} chol "
              f"({row['f_plain']}: {t_plain / t_chol / row['f_plain']:.2f} each), "
              f"with gradient {t_grad / t_chol:.1f}", flush=True)
    return rows


def bench_optimum(name="crabs", likelihoods=("probit", "logit")):
    X, y = load_dataset(name)
    X = (X - X.mean(0)) / (X.std(0) + 1e-12)
    y = np.where(y == np.unique(y)[1], 1.0, -1.0)
    d = X.shape[1]
    rows = []
    for lik in likelihoods:
        kernel = paper_kernel(np.full(d, np.sqrt(d)), theta1=1.0, theta2=0.1,
                              length_scale_bounds=(1e-2, 1e3),
                              theta1_bounds=(1e-3, 1e4), theta2_bounds=(1e-4, 1e2))
        options = {"tol": 1e-10, "max_sweeps": 1000}
        obj = EvidenceObjective(kernel, X, y, get_likelihood(lik), "pl",
                                options=options)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            opt = maximize_evidence(obj, obj.theta, obj.bounds)
            t1 = time.perf_counter()
            fd_obj = EvidenceObjective(kernel, X, y, get_likelihood(lik), "pl",
                                       options={"tol": 1e-12, "max_sweeps": 1000})

            def negative(theta):
                return -fd_obj.infer(theta, compute_gradient=False)[0].log_evidence

            res = minimize(negative, obj.theta, method="L-BFGS-B", bounds=obj.bounds,
                           options={"eps": 1e-6, "maxiter": 500})
            t2 = time.perf_counter()
        rows.append(dict(name=name, n=len(y), lik=lik, lml=opt.objective, t=t1 - t0,
                         lml_fd=-res.fun, t_fd=t2 - t1, nfev=res.nfev))
        print(f"  PL optimum {name} {lik}: analytic {opt.objective:.6f} "
              f"({t1 - t0:.1f}s), finite differences {-res.fun:.6f} ({t2 - t1:.1f}s)",
              flush=True)
    return rows


def report(speed, optimum):
    lines = [
        "## Posterior linearisation: a fit from the prior (8-D, the EP benchmark's "
        "kernel, probit, parallel, tol 1e-8)",
        "",
        "In units of one `dpotrf` of size n. Accelerated: chord-Newton steps between "
        "factorisations (the default); plain: one factorisation per PL iteration. "
        "Factorisations include the single-precision ones that steer the first steps.",
        "",
        "| n | accelerated (Choleskys) | factorisations (single) + cheap sweeps | "
        "plain (Choleskys) | iterations (single) | plain, per iteration | "
        "accelerated + gradient | dpotrf (ms) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in speed:
        c = r["t_chol"]
        lines.append(
            f"| {r['n']} | {r['t_acc'] / c:.1f} | {r['f_acc']} ({r['s_acc']}) + "
            f"{r['lin']} | {r['t_plain'] / c:.1f} | {r['f_plain']} ({r['s_plain']}) | "
            f"{r['t_plain'] / c / r['f_plain']:.2f} | {r['t_grad'] / c:.1f} | "
            f"{1e3 * c:.1f} |")
    if optimum:
        lines += [
            "",
            "## Posterior linearisation: evidence maximisation, analytic gradient "
            "against finite differences",
            "",
            "The papers' kernel (ARD SE + bias + 1e-6 jitter), inputs standardised, "
            "L-BFGS-B from the same start (length scales sqrt(d), theta1 1, theta2 "
            "0.1); finite differences: SciPy's, step 1e-6, PL to tol 1e-12.",
            "",
            "| data | n | likelihood | log evidence (analytic) | time (s) | "
            "log evidence (finite differences) | time (s) | difference |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in optimum:
            lines.append(
                f"| {r['name']} | {r['n']} | {r['lik']} | {r['lml']:.6f} | "
                f"{r['t']:.1f} | {r['lml_fd']:.6f} | {r['t_fd']:.1f} | "
                f"{r['lml'] - r['lml_fd']:.1e} |")
    return "\n".join(lines) + "\n"


def add_arguments(ap):
    ap.add_argument("--pl-sizes", type=int, nargs="+", default=[1000, 2000])
    ap.add_argument("--pl-optimum", nargs="*", default=["probit", "logit"],
                    help="likelihoods of the crabs optimum check (none skips it)")


def run(args):
    """Run the PL benchmarks; returns the Markdown section."""
    speed = bench_speed(args.pl_sizes, args.repeat)
    optimum = bench_optimum(likelihoods=args.pl_optimum) if args.pl_optimum else []
    return report(speed, optimum)
