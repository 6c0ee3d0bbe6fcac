"""gpc behind GPy's models (``gpc.backends.gpy``) against GPy's own EP and Laplace.

Protocol:

* data: ``make_data(n)`` (8 inputs, labels 0/1 from a smooth function with label
  noise) for each n of ``--sizes``; GPy's kernel ``RBF(8, variance=2,
  lengthscale=sqrt(8), ARD=True)``, the Bernoulli likelihood with the probit link;
* the timed unit, for each inference method: one evaluation of a GPy model, as
  an optimiser makes it: ``model.parameters_changed()``, which computes the kernel
  matrix, runs the inference from the prior to convergence, and turns ``dL_dK``
  into the kernel's gradient. The model is built once per method (GPy's model
  construction itself takes about a second); the only difference between the
  two timed calls is the model's inference method, a fresh object before each
  call (so EP starts from the prior): GPy's ``EP()`` / ``Laplace()`` with their
  defaults, or gpc's ``GPCInference("ep" | "laplace", warm_start=False)`` with
  gpc's defaults;
* ratios: GPy's time over gpc's, the two timed back to back in each of
  ``--rounds`` rounds (median of the per-round ratios), and each in units of one
  LAPACK Cholesky factorisation of an n x n matrix timed in the same round;
* agreement: |log likelihood of GPy's model - gpc's| and the largest relative
  difference of the gradients, at these defaults (GPy's EP stops when the mean
  squared change of its site parameters is below 1e-6; ``tests/test_backend_gpy.py``
  checks the agreement at tight tolerances).

Usage::

    python bench/bench_gpy_backend.py --write bench/results/gpy_backend.md
    python bench/bench_gpy_backend.py --quick
"""

import time
import warnings

import numpy as np
from _common import (add_paper_arguments, cholesky_call, footer, make_data,
                     paper_main, settle)

METHODS = ("ep", "laplace")
# The full report's file in bench/results (run_all.py writes it there).
REPORT = "gpy_backend.md"


def add_arguments(ap):
    add_paper_arguments(ap, "n = 200 only, 2 rounds")
    ap.add_argument("--sizes", type=int, nargs="+", default=[500, 1000])
    ap.add_argument("--rounds", type=int, default=3)


def _model(X, Y, inference):
    import GPy

    kernel = GPy.kern.RBF(X.shape[1], variance=2.0, lengthscale=np.sqrt(X.shape[1]),
                          ARD=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return GPy.core.GP(X, Y, kernel, GPy.likelihoods.Bernoulli(),
                           inference_method=inference)


def _gpy_inference(method):
    from GPy.inference.latent_function_inference import Laplace
    from GPy.inference.latent_function_inference.expectation_propagation import EP

    return EP() if method == "ep" else Laplace()


def _evaluation(model, inference):
    """Seconds of one evaluation of ``model`` with a fresh ``inference`` method."""
    model.inference_method = inference
    settle()
    t0 = time.perf_counter()
    model.parameters_changed()
    return time.perf_counter() - t0


def _compare(n, method, rounds):
    from gpc.backends.gpy import GPCInference

    X, y = make_data(n)
    Y = y[:, None].astype(float)
    ours = _model(X, Y, GPCInference(method))
    theirs = _model(X, Y, _gpy_inference(method))
    cholesky = cholesky_call(ours.kern.K(X))
    ratios, gpy_units, gpc_units = [], [], []
    for _ in range(rounds):
        t_chol = cholesky()
        t_gpc = _evaluation(ours, GPCInference(method, warm_start=False))
        t_gpy = _evaluation(theirs, _gpy_inference(method))
        ratios.append(t_gpy / t_gpc)
        gpy_units.append(t_gpy / t_chol)
        gpc_units.append(t_gpc / t_chol)
        print(f"  n={n} {method}: GPy {t_gpy:.2f} s, gpc {t_gpc:.4f} s", flush=True)
    gradient = np.max(np.abs(ours.gradient - theirs.gradient)
                      / np.maximum(np.abs(theirs.gradient), 1e-12))
    return {"n": n, "method": method, "ratio": np.median(ratios),
            "gpy": np.median(gpy_units), "gpc": np.median(gpc_units),
            "lml": abs(ours.log_likelihood() - theirs.log_likelihood()),
            "grad": gradient}


def run(args, argv=None):
    t0 = time.perf_counter()
    sizes, rounds = ([200], 2) if args.quick else (args.sizes, args.rounds)
    rows = [_compare(n, method, rounds) for n in sizes for method in METHODS]
    lines = ["## gpc behind GPy's models against GPy's own inference", "",
             "One evaluation of a GPy model (kernel matrix, inference from the prior, "
             "kernel gradient), the inference method the only difference; medians "
             f"of {rounds} rounds, each timing both back to back.", "",
             "| n | method | GPy's time / gpc's | GPy (Choleskys) | gpc (Choleskys) "
             "| log likelihood difference | gradient, largest relative difference |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['n']} | {r['method']} | {r['ratio']:.0f} | {r['gpy']:.0f} "
                     f"| {r['gpc']:.1f} | {r['lml']:.1e} | {r['grad']:.1e} |")
    return "\n".join(lines + footer(argv, t0))


if __name__ == "__main__":
    paper_main(__doc__, add_arguments, run)
