"""Shared pieces of the benchmark scripts."""

import os
import platform
import time

import numpy as np
import scipy
import sklearn
from scipy.linalg import lapack

import gpc


def make_data(n, d=8, seed=0):
    """A smooth nonlinear d-D problem with label noise (labels 0/1)."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    w = rng.randn(d)
    f = np.sin(X @ w / np.sqrt(d)) * 2 + 0.5 * X[:, 0] * X[:, 1]
    y = (f + 0.6 * rng.randn(n) > 0).astype(int)
    return X, y


def settle():
    """Let BLAS worker threads from earlier calls go idle before a timing.

    OpenBLAS workers spin for about 0.1 s after a call; numpy and SciPy may each load
    their own OpenBLAS, and spinning workers of one slow the other on 2 cores.
    """
    time.sleep(0.3)


def best_of(fn, repeat):
    """(best wall time, last result) of ``repeat`` calls, each after :func:`settle`."""
    best, out = np.inf, None
    for _ in range(repeat):
        settle()
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def cholesky_time(K, repeat=3):
    """Best time of one LAPACK dpotrf of I + K/4 (the factorisation gpc repeats)."""
    B = np.eye(K.shape[0]) + 0.25 * np.asarray(K)

    def once():
        A = np.array(B, order="F", copy=True)
        settle()
        t0 = time.perf_counter()
        lapack.dpotrf(A, lower=1, overwrite_a=1, clean=0)
        return time.perf_counter() - t0

    return min(once() for _ in range(max(3, repeat)))


def machine_line():
    from threadpoolctl import threadpool_info

    libs = [f"{i.get('internal_api')} {i.get('version')} ({i.get('num_threads')} threads)"
            for i in threadpool_info() if i.get("user_api") == "blas"]
    return (f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}, numpy {np.__version__}, scipy "
            f"{scipy.__version__}, scikit-learn {sklearn.__version__}, gpc "
            f"{gpc.__version__}; BLAS: {', '.join(libs) or 'unknown'}.")


def publish(text, path=None):
    """Print a Markdown report and, with a path, write it there (folders made)."""
    print(text)
    if path:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w") as fh:
            fh.write(text)


def standalone(doc, add_arguments, run, argv=None, repeat=3):
    """``main`` of a benchmark suite run by itself: its options plus ``--repeat`` and
    ``--write``, the report printed (and written)."""
    import argparse
    import sys

    argv = sys.argv if argv is None else argv
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=repeat)
    ap.add_argument("--write", help="write the Markdown report to this file")
    add_arguments(ap)
    args = ap.parse_args(argv[1:])
    publish(run(args), args.write)
