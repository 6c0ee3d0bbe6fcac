"""gpc's tiled factorisations against LAPACK's, routine by routine.

Above order 128 gpc plans each factorisation, inverse and product when it starts:
LAPACK's own (threaded) routine when the cores are free, its tiled version
(``src_c/_blas.pxd``: BLAS calls on 64 x 64 tiles, shared out to gpc's own
threads) when other processes keep them busy.  This suite times, for each order
(``--tiles-sizes``), in milliseconds (median of the calls):

* LAPACK through SciPy with the threads the environment gives it, and with one
  thread (``threadpoolctl``);
* gpc's tiled version on one and on two threads (the test hook
  ``gpc._checks._tiled``, which forces the thread count);

for the Cholesky factorisation in double and single precision (dpotrf / spotrf),
the triangular inverse (dtrtri) and the product ``L'L`` (dlauum).  The input is
copied into a preallocated buffer before each call, outside the timing.

Run standalone (``python bench/bench_tiles.py``) or through ``bench/run_all.py``.
"""

import time

import numpy as np
from _common import machine_line, standalone
from scipy.linalg import lapack
from threadpoolctl import threadpool_limits

from gpc import _checks

ROUTINES = (("Cholesky", "cholesky", np.float64, lapack.dpotrf, "overwrite_a"),
            ("Cholesky, single precision", "cholesky", np.float32, lapack.spotrf,
             "overwrite_a"),
            ("triangular inverse", "inverse", np.float64, lapack.dtrtri, "overwrite_c"),
            ("L'L", "gram", np.float64, lapack.dlauum, "overwrite_c"))


def _median(fn, src, reps):
    """Median seconds of ``fn(buffer)``, the buffer refilled from src before each."""
    buf = np.array(src, order="F")
    times = []
    for _ in range(reps):
        buf[...] = src
        t0 = time.perf_counter()
        fn(buf)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def bench_size(n, reps):
    X = np.random.RandomState(0).randn(n, n + 5)
    A = X @ X.T / n + np.eye(n)
    L = np.linalg.cholesky(A)
    rows = []
    for name, op, dtype, lapack_fn, overwrite in ROUTINES:
        src = np.asfortranarray(A if op == "cholesky" else L, dtype=dtype)

        def call(buf, fn=lapack_fn, kw={overwrite: 1}):
            fn(buf, lower=1, **kw)

        row = {"n": n, "routine": name, "lapack": _median(call, src, reps)}
        with threadpool_limits(1):
            row["lapack, 1 thread"] = _median(call, src, reps)
        for threads in (1, 2):
            row[f"tiled, {threads}"] = _median(
                lambda buf, t=threads: _checks._tiled(op, buf, t), src, reps)
        print(f"  n={n} {name}: " + ", ".join(
            f"{k} {v * 1e3:.3f} ms" for k, v in row.items()
            if k not in ("n", "routine")), flush=True)
        rows.append(row)
    return rows


def report(rows, args):
    lines = [
        "## gpc's tiled factorisations against LAPACK's",
        "",
        "Milliseconds per call (medians); *tiled / LAPACK*: gpc's tiles on two "
        "threads over LAPACK with the environment's threads.",
        "",
        "| n | routine | LAPACK (ms) | LAPACK, one thread (ms) | tiled, one thread "
        "(ms) | tiled, two threads (ms) | tiled / LAPACK |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['n']} | {r['routine']} | {r['lapack'] * 1e3:.3f} | "
                     f"{r['lapack, 1 thread'] * 1e3:.3f} | {r['tiled, 1'] * 1e3:.3f} | "
                     f"{r['tiled, 2'] * 1e3:.3f} | {r['tiled, 2'] / r['lapack']:.2f} |")
    lines += ["", f"Command: `python bench/bench_tiles.py --tiles-sizes "
              f"{' '.join(map(str, args.tiles_sizes))} --repeat {args.repeat}`.", "",
              machine_line()]
    return "\n".join(lines) + "\n"


def add_arguments(ap):
    ap.add_argument("--tiles-sizes", type=int, nargs="+", default=[500, 1000, 2000])


def run(args):
    rows = []
    for n in args.tiles_sizes:
        rows += bench_size(n, max(args.repeat, int(2e10 / n ** 3)))
    return report(rows, args)


def main(argv=None):
    standalone(__doc__, add_arguments, run, argv, repeat=5,
               quick={"tiles_sizes": [300]})


if __name__ == "__main__":
    main()
