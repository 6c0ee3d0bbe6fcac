"""gpc on a busy machine: each workload alone and beside a competing BLAS load.

Users run gpc beside other work (a grid search, a notebook next to a training job).
This suite runs each workload twice in one run: alone, then beside a second process
that multiplies 1000 x 1000 matrices in a loop with one BLAS thread per core (the
*load*), and reports the slowdown (busy / alone) and gpc's time against
scikit-learn's under the same conditions. Both libraries run with the BLAS threads
the environment gives them (the report says how many).

Workloads:

* ``--load-calls`` calls (default 50) of ``gpc.infer(K, y)`` at n = 100 (``--load-n``)
  with EP and with Laplace, and of the multinomial Laplace with C = 3; the same
  number of scikit-learn ``GaussianProcessClassifier(optimizer=None).fit`` calls on
  the same data (two classes, and three, which scikit-learn fits one-vs-rest);
* one fit with a fixed kernel at n = 500 and n = 2000 (``--load-fit-sizes``), gpc's
  Laplace and EP and scikit-learn's Laplace;
* one fit with the optimizer (both libraries' default) at n = 200, and gpc's with
  one BLAS thread for the process; gpc's at n = 500;
* before the rounds, idle: gpc's fixed-kernel fits with one BLAS thread and on
  gpc's tiles on one and on two threads, the floors those routes have beside the
  load (``floors``);
* ``SparseGPClassifier`` fits with a fixed kernel, sparse EP and the online sparse
  GP, n = 6000, 300 basis vectors;
* ``GridSearchCV(n_jobs=2)`` over gpc's classifier (4 length scales, 3 folds, n = 300);
* the floor: LAPACK's Cholesky through SciPy (the library gpc calls) at n = 200 and
  2000, with the same threads, with one thread, and gpc's tiled Cholesky (its BLAS
  calls small enough to run in the calling thread, its tiles shared out to as many
  of gpc's own threads as gpc plans: the free cores, or its fair share of them
  from 5e8 multiply-adds).

Each round runs a workload as many times in a row as take ``MIN_ROUND`` seconds
alone and takes the mean.

Run standalone (``python bench/bench_load.py``) or through ``bench/run_all.py``.
"""

import contextlib
import multiprocessing as mp
import os
import time
import warnings

import numpy as np
import scipy.linalg
from _common import machine_line, make_data, settle, standalone
from sklearn.gaussian_process import GaussianProcessClassifier as SkGPC
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.model_selection import GridSearchCV

import gpc
from gpc import _checks


def _compete(stop, ready, parent):
    """The load: BLAS matrix products on every core until ``stop`` is set or the
    process ``parent`` is gone (a benchmark killed before it could set ``stop``
    would otherwise leave the load running)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=os.cpu_count() or 1, user_api="blas"):
        A = np.random.RandomState(0).randn(1000, 1000)
        ready.set()
        while not stop.is_set() and os.getppid() == parent:
            A = A @ A
            A /= np.abs(A).max()


class Load:
    """``with Load():`` runs the competing process for the block's duration."""

    def __enter__(self):
        ctx = mp.get_context("spawn")
        self.stop, ready = ctx.Event(), ctx.Event()
        self.proc = ctx.Process(target=_compete, args=(self.stop, ready, os.getpid()),
                                daemon=True)
        self.proc.start()
        ready.wait(60)
        time.sleep(1.0)                     # its threads up and running
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.proc.join(30)
        if self.proc.is_alive():
            self.proc.terminate()
        return False


def _problem(n, seed=0):
    X, y = make_data(n, d=8, seed=seed)
    return X, y


def _kernel():
    return C(2.0) * RBF(np.full(8, np.sqrt(8.0)))


def _calls(n, calls):
    """Workloads of many small calls: name -> zero-argument function."""
    X, y = _problem(n)
    K = _kernel()(X)
    ypm = 2.0 * y - 1.0
    X3, y3 = _problem(n, seed=1)
    y3 = np.digitize(X3[:, 0] + X3[:, 1], [-0.5, 0.5])
    K3 = [_kernel()(X3)] * 3

    def repeat(fn):
        return lambda: [fn() for _ in range(calls)]

    return {
        f"gpc.infer EP, n = {n}": repeat(lambda: gpc.infer(K, ypm, method="ep")),
        f"gpc.infer Laplace, n = {n}": repeat(lambda: gpc.infer(K, ypm,
                                                                method="laplace")),
        f"gpc.infer multinomial Laplace, C = 3, n = {n}": repeat(
            lambda: gpc.infer(K3, y3, likelihood="softmax", method="laplace")),
        f"scikit-learn fit (optimizer=None), n = {n}": repeat(
            lambda: SkGPC(_kernel(), optimizer=None).fit(X, y)),
        f"scikit-learn fit (optimizer=None), 3 classes, n = {n}": repeat(
            lambda: SkGPC(_kernel(), optimizer=None).fit(X3, y3)),
    }


def _factorisations():
    """The floor: LAPACK's own Cholesky (scipy.linalg.cholesky, the library gpc
    calls) at a small and a large size, about 0.02 s and 0.2 s alone."""
    from threadpoolctl import threadpool_limits

    out = {}
    for n, calls in ((200, 200), (2000, 5)):
        A = make_data(n, seed=3)[0]
        S = np.asfortranarray(_kernel()(A) + np.eye(n))

        def chol(S=S, calls=calls):
            return [scipy.linalg.cholesky(S, lower=True, check_finite=False)
                    for _ in range(calls)]

        def chol_one_thread(chol=chol):
            with threadpool_limits(limits=1, user_api="blas"):
                return chol()

        def chol_tiled(S=S, calls=calls):
            return [_checks._tiled("cholesky", np.array(S, order="F")) for _ in range(calls)]

        out[f"LAPACK Cholesky (scipy), n = {n}, {calls} calls"] = chol
        out[f"the same, one BLAS thread, n = {n}"] = chol_one_thread
        out[f"gpc's tiled Cholesky, threads as gpc plans them, n = {n}"] = chol_tiled
    return out


# The thread-count getter under the names OpenBLAS builds give it (SciPy's and
# numpy's wheels prefix their symbols, numpy's with a 64-bit-integer suffix).
_GET_NUM_THREADS = ("openblas_get_num_threads", "scipy_openblas_get_num_threads",
                    "scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_")


def per_thread_control():
    """For each OpenBLAS loaded: whether ``openblas_set_num_threads_local(1)``
    called in one thread is seen by ``openblas_get_num_threads()`` in another
    (True: the setting is process-wide), or None where the library lacks them."""
    import ctypes
    import threading

    from threadpoolctl import threadpool_info

    out = {}
    for info in threadpool_info():
        if info.get("internal_api") != "openblas":
            continue
        lib = ctypes.CDLL(info["filepath"])
        get = next((getattr(lib, name) for name in _GET_NUM_THREADS
                    if hasattr(lib, name)), None)
        set_local = getattr(lib, "openblas_set_num_threads_local", None)
        if get is None or set_local is None:
            out[info["filepath"]] = None
            continue
        before = get()
        worker = threading.Thread(target=lambda: set_local(1))
        worker.start()
        worker.join()
        out[info["filepath"]] = get() == 1 and before != 1
        set_local(before)
    return out


def _fits(sizes):
    """One fit each with a fixed kernel."""
    out = {}
    for n in sizes:
        X, y = _problem(n)
        out[f"gpc Laplace fit, n = {n}"] = lambda X=X, y=y: gpc.GaussianProcessClassifier(
            _kernel(), optimizer=None).fit(X, y)
        out[f"gpc EP fit, n = {n}"] = lambda X=X, y=y: gpc.GaussianProcessClassifier(
            _kernel(), optimizer=None, method="ep", likelihood="probit").fit(X, y)
        out[f"scikit-learn Laplace fit, n = {n}"] = lambda X=X, y=y: SkGPC(
            _kernel(), optimizer=None).fit(X, y)
    # With the optimizer (the default): gpc's L-BFGS-B keeps its algebra in the
    # calling thread; scikit-learn's, SciPy's, solves its small triangular
    # systems with LAPACK's dtrtrs, which OpenBLAS shares out to its threads
    # whatever the size.
    from threadpoolctl import threadpool_limits

    for n in (200, 500):
        X, y = _problem(n)
        out[f"gpc fit with the optimizer, n = {n}"] = (
            lambda X=X, y=y: gpc.GaussianProcessClassifier(_kernel()).fit(X, y))
    X, y = _problem(200)

    def one_thread():
        with threadpool_limits(limits=1, user_api="blas"):
            gpc.GaussianProcessClassifier(_kernel()).fit(X, y)

    out["the same fit, one BLAS thread, n = 200"] = one_thread
    out["scikit-learn fit with the optimizer, n = 200"] = lambda: SkGPC(
        _kernel()).fit(X, y)
    X, y = _problem(6000)
    for method in ("ep", "adf"):
        out[f"gpc sparse {method} fit, n = 6000, 300 basis vectors"] = (
            lambda method=method: gpc.SparseGPClassifier(
                _kernel(), likelihood="probit", method=method, max_basis=300,
                optimizer=None, random_state=0).fit(X, y))
    X, y = _problem(300)
    grid = {"kernel": [C(2.0) * RBF(s) for s in (0.5, 1.0, 2.0, 4.0)]}
    out["GridSearchCV(n_jobs=2) over gpc, n = 300"] = lambda: GridSearchCV(
        gpc.GaussianProcessClassifier(optimizer=None), grid, cv=3, n_jobs=2).fit(X, y)
    out["GridSearchCV(n_jobs=2) over scikit-learn, n = 300"] = lambda: GridSearchCV(
        SkGPC(optimizer=None), grid, cv=3, n_jobs=2).fit(X, y)
    return out


# A round of a workload repeats it until it has run this long (seconds) and
# takes the mean: a single fit of a few milliseconds beside the load measures
# the scheduler's time slices more than the fit.
MIN_ROUND = 0.3


def _time(fn, reps=1):
    """Seconds per call of ``fn``, the mean of ``reps`` calls in a row."""
    settle()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(reps):
            fn()
    return (time.perf_counter() - t0) / reps


def bench(n, calls, sizes, repeat):
    """``(alone, busy, reps)``: each workload's timings alone and under the
    load, the workloads in turn and the whole round ``repeat`` times (a slow
    phase of the machine then falls on different workloads rather than on
    one); each round the mean of ``reps[name]`` calls (``MIN_ROUND``)."""
    work = {**_factorisations(), **_calls(n, calls), **_fits(sizes)}
    for fn in work.values():             # imports, caches and pools warmed once
        _time(fn)
    reps = {name: max(1, int(np.ceil(MIN_ROUND / _time(fn))))
            for name, fn in work.items()}
    alone = {name: [] for name in work}
    busy = {name: [] for name in work}
    for _ in range(repeat):
        for name, fn in work.items():
            alone[name].append(_time(fn, reps[name]))
    with Load():
        for _ in range(repeat):
            for name, fn in work.items():
                busy[name].append(_time(fn, reps[name]))
    for name in work:
        a, b = np.median(alone[name]), np.median(busy[name])
        print(f"  {name}: alone {a:.3g} s, busy {b:.3g} s ({b / a:.1f}x; busy runs "
              f"{', '.join(f'{t:.3g}' for t in busy[name])})", flush=True)
    return alone, busy, reps


def floors(sizes, repeat):
    """Idle, for gpc's fixed-kernel fits: the time alone, with one BLAS thread
    for the process (LAPACK in the calling thread), and on gpc's tiles on one
    and on two threads (the routes a busy machine gets); Markdown lines.
    Beside two busy threads on two cores one thread gets two thirds of a core
    and two threads half a core each, so 1.5 times the one-thread time and 2
    times the two-thread time over the time alone are the slowdowns a call on
    that route cannot go below there."""
    from threadpoolctl import threadpool_limits

    from gpc._threads import _tiles

    fits = {k: v for k, v in _fits(sizes).items() if k.startswith("gpc") and
            "optimizer" not in k}
    routes = {"alone": contextlib.nullcontext,
              "one BLAS thread": lambda: threadpool_limits(limits=1, user_api="blas"),
              "gpc's tiles on one thread": lambda: _tiles(1),
              "gpc's tiles on two threads": lambda: _tiles(2)}
    lines = ["| workload | " + " (s) | ".join(routes) + " (s) | 1.5 x one BLAS "
             "thread / alone | 1.5 x tiles on one / alone | 2 x tiles on two / "
             "alone |", "|---|---|---|---|---|---|---|---|"]
    for name, fn in fits.items():
        t = []
        for route in routes.values():
            with route():
                reps = max(1, int(np.ceil(MIN_ROUND / _time(fn))))
                t.append(float(np.median([_time(fn, reps) for _ in range(repeat)])))
        lines.append(f"| {name} | " + " | ".join(f"{v:.3g}" for v in t) + " | " +
                     " | ".join(f"{f * v / t[0]:.2f}" for f, v in
                                ((1.5, t[1]), (1.5, t[2]), (2.0, t[3]))) + " |")
    return lines


def _peer(name, names):
    """The scikit-learn row that gpc's row ``name`` is compared with, or None."""
    if name.startswith(("scikit-learn", "LAPACK", "the same", "gpc's tiled")):
        return None
    if name.startswith("gpc.infer"):
        three = "3 classes" if "multinomial" in name else "(optimizer=None), n"
        return next((k for k in names if k.startswith("scikit-learn fit (")
                     and three in k), None)
    if "with the optimizer" in name:
        return name.replace("gpc", "scikit-learn", 1)
    if name.startswith("GridSearchCV"):
        return name.replace("over gpc", "over scikit-learn")
    return "scikit-learn Laplace fit, n = " + name.rsplit("n = ", 1)[-1]


def report(alone, busy, reps, calls, repeat, floor=()):
    med = {k: {name: float(np.median(v)) for name, v in d.items()}
           for k, d in (("alone", alone), ("busy", busy))}
    lines = [
        "## gpc on a busy machine: alone and beside a competing BLAS load",
        "",
        f"Each workload alone, then beside a second process multiplying 1000 x 1000 "
        f"matrices with {os.cpu_count()} BLAS threads (one per core), in one run; the "
        f"many-call rows are {calls} calls. Medians of {repeat} rounds over all the "
        f"workloads, each round the mean of as many runs of a workload in a row as "
        f"take {MIN_ROUND} s alone (*runs*); *slowest busy*: the slowest of the busy "
        "rounds. *Slowdown* = "
        "busy / alone (a fair share of the cores is 2x on two cores); *against "
        "scikit-learn* = gpc's median over scikit-learn's comparable row's under "
        "the same condition.",
        "",
        "| workload | runs | alone (s) | busy (s) | slowest busy (s) | slowdown | "
        "against scikit-learn, alone | against scikit-learn, busy |",
        "|---|---|---|---|---|---|---|---|",
    ]
    a, b = med["alone"], med["busy"]
    for name in alone:
        peer = _peer(name, list(alone))
        vs = f"{a[name] / a[peer]:.2f} | {b[name] / b[peer]:.2f}" if peer in a else " | "
        lines.append(f"| {name} | {reps[name]} | {a[name]:.3g} | {b[name]:.3g} | "
                     f"{max(busy[name]):.3g} | {b[name] / a[name]:.1f}x | {vs} |")
    shared = [f"{os.path.basename(k)}: {'process-wide' if v else 'per thread' if v is False else 'absent'}"
              for k, v in per_thread_control().items()]
    if floor:
        lines += ["", "Idle, before the rounds above: gpc's fixed-kernel fits on the "
                  "routes a busy machine leaves (rounds as above; see ``floors``):",
                  "", *floor]
    lines += ["", "`openblas_set_num_threads_local(1)` called in another thread: "
              + ("; ".join(shared) or "no OpenBLAS loaded") + ".", "", machine_line()]
    return "\n".join(lines) + "\n"


# The quick mode (``--quick``: the main job's smoke run).
QUICK = {"load_calls": 5, "load_fit_sizes": [500]}


def add_arguments(ap):
    ap.add_argument("--load-calls", type=int, default=50)
    ap.add_argument("--load-n", type=int, default=100)
    ap.add_argument("--load-fit-sizes", type=int, nargs="+", default=[500, 2000])


def run(args):
    """Run the busy-machine benchmark; returns the Markdown section."""
    floor = floors(args.load_fit_sizes, args.repeat)
    alone, busy, reps = bench(args.load_n, args.load_calls, args.load_fit_sizes,
                              args.repeat)
    return report(alone, busy, reps, args.load_calls, args.repeat, floor)


def main(argv=None):
    standalone(__doc__, add_arguments, run, argv, repeat=3, quick=QUICK)


if __name__ == "__main__":
    main()
