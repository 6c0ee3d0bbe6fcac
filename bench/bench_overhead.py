"""What one ``gpc.infer`` call costs at small n, and how much of it is not inference.

Backends and active-learning loops call ``gpc.infer(K, y)`` many times on small
matrices (n = 20-200), where the checks and the dispatch around the inference can
cost as much as the inference itself.  For each n (``--overhead-sizes``) and method
(Laplace and EP, probit), on the 8-D data of ``_common.make_data`` with the EP
benchmark's kernel, this suite times, in microseconds per call (the median of
``--repeat`` rounds of ``--overhead-calls`` calls each):

* the whole call ``gpc.infer(K, y, method=...)``, with its input checks, the
  positive-definiteness check of K and the dispatch;
* the inference method alone (``gpc.inference.get_method(method)`` called on the
  checked K and labels): the part no check can remove;
* one LAPACK ``dpotrf`` of a copy of K through SciPy, the unit of the other speed
  tables;
* the hyperparameter optimizer's own cost: gpc's L-BFGS-B (``gpc._lbfgsb``, whose
  algebra stays in the calling thread) against SciPy's, in microseconds per
  iteration on a bounded 9-D Rosenbrock function (as many parameters as an
  8-D ARD kernel with a signal variance; the same iterates in both).

Run standalone (``python bench/bench_overhead.py``) or through ``bench/run_all.py``.
"""

import time

import numpy as np
import scipy.optimize
from _common import machine_line, make_data, standalone
from scipy.linalg import lapack

import gpc
from gpc import _lbfgsb
from gpc.inference import get_method
from gpc.kernels import SquaredExponential
from gpc.likelihoods import get_likelihood


def _per_call(fn, calls, rounds):
    """Median over ``rounds`` of the mean seconds per call of ``fn`` (``calls``
    calls per round, after one warm-up call)."""
    fn()
    times = []
    for _ in range(max(1, rounds)):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls)
    return float(np.median(times))


def bench_size(n, calls, rounds):
    X, y01 = make_data(n)
    K = np.asfortranarray(SquaredExponential(length_scale=np.full(8, np.sqrt(8.0)),
                                              variance=2.0)(X))
    y = 2.0 * y01 - 1.0
    lik = get_likelihood("probit")

    def cholesky():
        lapack.dpotrf(K, lower=1, overwrite_a=0, clean=0)

    row = {"n": n, "dpotrf": _per_call(cholesky, calls, rounds)}
    for method in ("laplace", "ep"):
        run = get_method(method)
        row[method] = _per_call(lambda: gpc.infer(K, y, method=method), calls, rounds)
        row[method + " alone"] = _per_call(lambda: run(K, y, lik), calls, rounds)
    print(f"  n={n}: " + ", ".join(f"{k} {v * 1e6:.1f} us" for k, v in row.items()
                                   if k != "n"), flush=True)
    return row


def bench_optimizer(calls, rounds):
    """``(gpc's, SciPy's)`` seconds per L-BFGS-B iteration on a bounded 9-D
    Rosenbrock function, and the iterations of a run."""
    fun = lambda x: (scipy.optimize.rosen(x), scipy.optimize.rosen_der(x))
    x0, bounds = np.full(9, -1.0), [(-5.0, 5.0)] * 9
    mine = lambda: _lbfgsb.minimize(fun, x0, bounds)
    theirs = lambda: scipy.optimize.minimize(fun, x0, jac=True, method="L-BFGS-B",
                                             bounds=bounds)
    nit = mine().nit
    assert theirs().nit == nit
    out = (_per_call(mine, calls, rounds) / nit, _per_call(theirs, calls, rounds) / nit,
           nit)
    print(f"  L-BFGS-B: gpc {out[0] * 1e6:.1f} us, SciPy {out[1] * 1e6:.1f} us per "
          f"iteration", flush=True)
    return out


def report(rows, args, optimizer):
    lines = [
        "## `gpc.infer` at small n: the whole call against the inference alone",
        "",
        "Microseconds per call (median of the rounds' means); *checks and dispatch* "
        "= the whole call minus the method alone; the last columns divide by one "
        "LAPACK `dpotrf` of the same K. Probit, the EP benchmark's kernel on the "
        "8-D data, default options (EP parallel).",
        "",
        "| n | method | `gpc.infer` (us) | method alone (us) | checks and dispatch "
        "(us) | dpotrf (us) | `gpc.infer` / dpotrf | checks / dpotrf |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        for m in ("laplace", "ep"):
            whole, alone, chol = r[m], r[m + " alone"], r["dpotrf"]
            lines.append(f"| {r['n']} | {m} | {whole * 1e6:.1f} | {alone * 1e6:.1f} | "
                         f"{(whole - alone) * 1e6:.1f} | {chol * 1e6:.1f} | "
                         f"{whole / chol:.1f} | {(whole - alone) / chol:.1f} |")
    mine, theirs, nit = optimizer
    lines += ["", f"The optimizer's own cost per iteration ({nit} iterations, the "
              "same in both, on a bounded 9-D Rosenbrock function whose evaluation "
              f"costs a few microseconds): gpc's L-BFGS-B {mine * 1e6:.1f} us, "
              f"SciPy's {theirs * 1e6:.1f} us, a ratio of {mine / theirs:.2f}."]
    lines += ["", f"Command: `python bench/bench_overhead.py --overhead-sizes "
              f"{' '.join(map(str, args.overhead_sizes))} --overhead-calls "
              f"{args.overhead_calls} --repeat {args.repeat}`.", "", machine_line()]
    return "\n".join(lines) + "\n"


def add_arguments(ap):
    ap.add_argument("--overhead-sizes", type=int, nargs="+", default=[20, 50, 100, 200])
    ap.add_argument("--overhead-calls", type=int, default=200,
                    help="calls per timed round")


def run(args):
    rows = [bench_size(n, args.overhead_calls, args.repeat * 3)
            for n in args.overhead_sizes]
    optimizer = bench_optimizer(max(args.overhead_calls // 10, 5), args.repeat * 3)
    return report(rows, args, optimizer)


def main(argv=None):
    standalone(__doc__, add_arguments, run, argv, repeat=3,
               quick={"overhead_sizes": [20, 100], "overhead_calls": 50})


if __name__ == "__main__":
    main()
