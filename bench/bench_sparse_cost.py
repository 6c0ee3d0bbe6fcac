"""Where a large-data fit's time goes: the staged evidence maximisation's
evaluations per stage, against the BLAS work of one pass over the data.

``SparseGPClassifier`` (200 inducing points, the problems of
``bench_sparse_learning.py``) is fitted with every evidence evaluation timed.  In
the same process, and so on the same machine state, one *BLAS pass* is timed: a
triangular solve and a rank-k update (``dtrsm`` + ``dsyrk``) of every 2048-row
chunk of an n x M matrix, the least work a sweep of EP over the data must do (an
evaluation from converged sites does about nine: one each for the features and
the sites' shares, two for a sweep, five for the evidence and gradient).  The ratio says how far an evaluation is from
that floor; the seconds, set against the peers' time to come within 0.005 of
their final log loss (``bench_sparse_learning.py``), say what a fit that
evaluates the evidence on all the data can reach.

Run standalone: ``python bench/bench_sparse_cost.py --cost-sizes 1000000``.
"""

import time

import numpy as np
from _common import machine_line, standalone
from bench_sparse_learning import _in_child, make_problem
from scipy.linalg import blas
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C


def _blas_pass(n, M, chunk=2048):
    """Seconds of ``dtrsm`` + ``dsyrk`` over ceil(n / chunk) chunks of M x chunk."""
    rng = np.random.RandomState(0)
    A = rng.randn(M, M)
    L = np.linalg.cholesky(A @ A.T + M * np.eye(M))
    P = np.asfortranarray(rng.randn(M, chunk))
    V, S = np.empty_like(P, order="F"), np.zeros((M, M), order="F")
    t0 = time.perf_counter()
    for _ in range(-(-n // chunk)):
        np.copyto(V, P)
        blas.dtrsm(1.0, L, V, lower=1, overwrite_b=1)
        blas.dsyrk(1.0, P, beta=1.0, c=S, lower=1, overwrite_c=1)
    return time.perf_counter() - t0


def _cost_child(conn, n, M, problem):
    import gpc
    import gpc.sparse.learning as sparse_learning

    X, y, _, _ = make_problem(n, problem)
    log, original = [], sparse_learning.SparseEvidence.__call__

    def timed(self, theta):
        t0 = time.perf_counter()
        out = original(self, theta)
        log.append((self.data.n, time.perf_counter() - t0))
        return out

    sparse_learning.SparseEvidence.__call__ = timed
    clf = gpc.SparseGPClassifier(C(1.0) * RBF(np.ones(8)), likelihood="probit",
                                 max_basis=M, random_state=0)
    t0 = time.perf_counter()
    clf.fit(X, y)
    conn.send(dict(seconds=time.perf_counter() - t0, log=log, blas=_blas_pass(n, M)))


def run(args):
    lines = ["## Where a large-data fit's time goes", "",
             f"`SparseGPClassifier`, {args.cost_inducing} inducing points; *BLAS "
             "pass* = `dtrsm` + `dsyrk` of every 2048-row chunk of the n x M "
             "features, timed in the same process after the fit.", "",
             "| problem | n | fit (s) | stage n | evaluations | stage (s) | per "
             "evaluation (s) | per evaluation / BLAS pass |",
             "|---|---|---|---|---|---|---|---|"]
    for problem in args.cost_problems:
        for n in args.cost_sizes:
            r = _in_child(_cost_child, n, args.cost_inducing, problem)
            stages = sorted({s for s, _ in r["log"]})
            for s in stages:
                secs = [t for m, t in r["log"] if m == s]
                blas_s = r["blas"] * s / n
                lines.append(
                    f"| {problem} | {n:.0e} | {r['seconds']:.1f} | {s} | {len(secs)} | "
                    f"{sum(secs):.1f} | {np.mean(secs):.2f} | "
                    f"{np.mean(secs) / blas_s:.1f} (pass {blas_s:.2f} s) |")
            print(f"  {problem} n={n}: fit {r['seconds']:.1f} s", flush=True)
    return "\n".join(lines + ["", machine_line()])


def add_arguments(ap):
    ap.add_argument("--cost-sizes", type=int, nargs="+", default=[10 ** 6])
    ap.add_argument("--cost-inducing", type=int, default=200)
    ap.add_argument("--cost-problems", nargs="+", default=["interaction", "smooth"])


def main(argv=None):
    standalone(__doc__, add_arguments, run, argv,
               quick={"cost_sizes": [20000], "cost_problems": ["interaction"]})


if __name__ == "__main__":
    main()
