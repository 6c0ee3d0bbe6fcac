"""The sparse online GP at scale: one online pass over n = 10^4, 10^5, 10^6 examples.

8-D data of ``_common.make_data``, RBF kernel with length scale sqrt(8), probit,
``max_basis = 200``, novelty tolerance 1e-6, chunks of 512: the time of one pass
(``gpc.sparse.online_pass``: kernel blocks, the compiled updates, BV removals), its
growth from one n to the next (linear: 10 per decade), and the peak memory the pass
allocates (tracemalloc, which sees numpy's allocations; the data themselves are
allocated before and not counted).

Run standalone (``python bench/bench_sparse.py``) or through ``bench/run_all.py``.
"""

import time
import tracemalloc

import numpy as np
from _common import make_data, settle, standalone
from sklearn.gaussian_process.kernels import RBF

from gpc.likelihoods import get_likelihood
from gpc.sparse import SparseState, online_pass


def one_pass(n, max_basis):
    X, y01 = make_data(n)
    y = 2.0 * y01 - 1.0
    state = SparseState(max_basis, X.shape[1])
    settle()
    tracemalloc.start()
    t0 = time.perf_counter()
    info = online_pass(RBF(np.sqrt(8.0)), get_likelihood("probit"), X, y, state,
                       novelty_tol=1e-6, chunk_size=512)
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return dict(n=n, seconds=seconds, peak_mb=peak / 2 ** 20, d=state.d,
                joined=info["n_joined"], removed=info["n_removed"],
                mean_logz=info["log_evidence"] / n)


def report(rows, max_basis):
    lines = [
        f"## Sparse online GP: one pass (8-D, RBF, probit, max_basis = {max_basis})",
        "",
        "Time of one online pass and the peak memory it allocates (tracemalloc; the "
        "data are allocated before). Growth: time over the previous row's time "
        "(linear in n: 10 per decade; target: 10^6 over 10^5 within 12).",
        "",
        "| n | time (s) | per example (us) | growth | peak memory (MiB) | BVs | joined "
        "| removed | mean log p(y given earlier) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    prev = None
    for r in rows:
        growth = "" if prev is None else f"{r['seconds'] / prev['seconds']:.1f}"
        lines.append(f"| {r['n']:.0e} | {r['seconds']:.3g} | "
                     f"{1e6 * r['seconds'] / r['n']:.0f} | {growth} | "
                     f"{r['peak_mb']:.1f} | {r['d']} | {r['joined']} | {r['removed']} "
                     f"| {r['mean_logz']:.4f} |")
        prev = r
    return "\n".join(lines) + "\n"


# The sizes of the quick mode (``--quick``: the main job's smoke run).
QUICK = {"sparse_sizes": [10_000]}


def add_arguments(ap):
    ap.add_argument("--sparse-sizes", type=int, nargs="+",
                    default=[10 ** 4, 10 ** 5, 10 ** 6])
    ap.add_argument("--sparse-basis", type=int, default=200)


def run(args):
    """Run the scale benchmark; returns the Markdown section."""
    rows = []
    for n in args.sparse_sizes:
        rows.append(one_pass(n, args.sparse_basis))
        r = rows[-1]
        print(f"  sparse n={n}: {r['seconds']:.3g} s, peak {r['peak_mb']:.1f} MiB",
              flush=True)
    return report(rows, args.sparse_basis)


def main(argv=None):
    standalone(__doc__, add_arguments, run, argv, quick=QUICK)


if __name__ == "__main__":
    main()
