"""Shared pieces of the benchmark scripts."""

import os
import platform
import re
import time

import numpy as np
import scipy
import sklearn
from scipy.linalg import lapack

import gpc

def _cpu_snapshot():
    """``(busy, total, own)`` CPU seconds: the machine's non-idle and total time
    from /proc/stat (summed over cores) and this process's with its waited-for
    children; None where /proc/stat is missing."""
    try:
        with open("/proc/stat") as fh:
            ticks = [int(v) for v in fh.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    hz, t = os.sysconf("SC_CLK_TCK"), os.times()
    idle = ticks[3] + ticks[4]                         # idle and iowait
    return ((sum(ticks) - idle) / hz, sum(ticks) / hz,
            t.user + t.system + t.children_user + t.children_system)


_START = _cpu_snapshot()          # when the suite's first module imported this one


def others_busy():
    """The share of the machine's CPU time that other processes used since this
    module was imported (0 = the cores were otherwise idle, 1 = all busy); None
    where it cannot be read."""
    end = _cpu_snapshot()
    if _START is None or end is None or end[1] <= _START[1]:
        return None
    others = (end[0] - _START[0]) - (end[2] - _START[2])
    return min(1.0, max(0.0, others / (end[1] - _START[1])))


# The reports' links (figures, other reports) are written relative to BENCH, where
# RESULTS.md lives; publish() rewrites them for the folder of the file it writes.
BENCH = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(BENCH, "results")


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


def best_of(fn, repeat, stop_after=None):
    """(best wall time, last result) of ``repeat`` calls, each after :func:`settle`
    (the previous result freed first); with ``stop_after`` (seconds), no further
    calls once one took longer."""
    best, out = np.inf, None
    for _ in range(max(1, repeat)):
        out = None
        settle()
        t0 = time.perf_counter()
        out = fn()
        elapsed = time.perf_counter() - t0
        best = min(best, elapsed)
        if stop_after is not None and elapsed > stop_after:
            break
    return best, out


def cholesky_call(K, invert=False):
    """A function that returns the time of one LAPACK dpotrf of I + K/4 (the
    factorisation gpc repeats), run on a fresh copy after :func:`settle`; with
    ``invert``, followed by dtrtri of the factor."""
    B = np.eye(K.shape[0]) + 0.25 * np.asarray(K)

    def once():
        A = np.array(B, order="F", copy=True)
        settle()
        t0 = time.perf_counter()
        L, _ = lapack.dpotrf(A, lower=1, overwrite_a=1, clean=0)
        if invert:
            lapack.dtrtri(L, lower=1, overwrite_c=1)
        return time.perf_counter() - t0

    return once


def cholesky_time(K, repeat=3):
    """Best time of one LAPACK dpotrf of I + K/4."""
    once = cholesky_call(K)
    return min(once() for _ in range(max(3, repeat)))


def paired_ratio(fn, reference, rounds):
    """Time of ``fn()`` in units of ``reference()`` (which returns its own time),
    the two timed back to back in each of ``rounds`` rounds.

    This machine's speed drifts by 10-30% over seconds to minutes (2 shared
    cores): a reference timed once, before or after, can be taken in a fast spell
    and the call in a slow one.  Pairing them and taking the median of the
    per-round ratios cancels that drift.  Returns ``(ratio, t_ref, out)``: the
    median ratio, the median reference time (seconds) and the last result.
    """
    ratios, t_ref, out = [], [], None
    for _ in range(max(1, rounds)):
        r = reference()
        out = None
        settle()
        t0 = time.perf_counter()
        out = fn()
        ratios.append((time.perf_counter() - t0) / r)
        t_ref.append(r)
    return float(np.median(ratios)), float(np.median(t_ref)), out


def machine_line():
    from threadpoolctl import threadpool_info

    libs = [f"{i.get('internal_api')} {i.get('version')} ({i.get('num_threads')} threads)"
            for i in threadpool_info() if i.get("user_api") == "blas"]
    try:
        load = "load average {:.2f} / {:.2f} / {:.2f} (1 / 5 / 15 min) as the " \
            "report was written".format(*os.getloadavg())
    except OSError:
        load = "load average unknown"
    share = others_busy()
    if share is not None:
        load += (f"; other processes used {100 * share:.0f} % of the cores' time "
                 "during the run")
        if share > 0.1:
            load += " (the ratios above were taken beside that load)"
    return (f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}, numpy {np.__version__}, scipy "
            f"{scipy.__version__}, scikit-learn {sklearn.__version__}, gpc "
            f"{gpc.__version__}; BLAS: {', '.join(libs) or 'unknown'}; {load}.")


# A Markdown inline link's target: "](target)" or "](target "title")".
_LINK = re.compile(r"(\]\()([^)\s]+)")


def _relative(target):
    """Whether a link target is a relative path (not a URL, absolute path or anchor)."""
    return not (re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", target)
                or target.startswith(("/", "#")))


def relink(markdown, source=BENCH, dest=BENCH):
    """``markdown`` with its relative link targets, written relative to the folder
    ``source``, rewritten relative to the folder ``dest`` (URLs, absolute paths and
    in-page anchors unchanged)."""
    def fix(match):
        target = match.group(2)
        if not _relative(target):
            return match.group(0)
        path, hash_, anchor = target.partition("#")
        new = os.path.relpath(os.path.join(source, path), dest).replace(os.sep, "/")
        return match.group(1) + new + hash_ + anchor

    return _LINK.sub(fix, markdown)


def broken_links(path):
    """The relative link targets of the Markdown file ``path`` that name no existing
    file or folder from the file's folder (anchors not checked)."""
    folder = os.path.dirname(os.path.abspath(path))
    with open(path) as fh:
        targets = [m.group(2) for m in _LINK.finditer(fh.read())]
    return [t for t in targets if _relative(t) and not os.path.exists(
        os.path.join(folder, t.partition("#")[0]))]


def publish(text, path=None, echo=True):
    """Print a Markdown report (unless not ``echo``) and, with a path, write it there
    (folders made), its links, written relative to the ``bench`` folder, rewritten
    to resolve from the file's folder."""
    if echo:
        print(text)
    if path:
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        with open(path, "w") as fh:
            fh.write(relink(text, BENCH, folder))


def standalone(doc, add_arguments, run, argv=None, repeat=3, quick=None):
    """``main`` of a benchmark suite run by itself: its options plus ``--repeat``,
    ``--quick`` (the suite's ``quick`` option values, e.g. smaller sizes, unless
    given) and ``--write``, the report printed (and written)."""
    import argparse
    import sys

    argv = sys.argv if argv is None else argv
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=repeat)
    ap.add_argument("--write", help="write the Markdown report to this file")
    ap.add_argument("--quick", action="store_true", help="the quick mode's sizes")
    add_arguments(ap)
    args = ap.parse_args(argv[1:])
    if args.quick and quick:
        ap.set_defaults(**quick)
        args = ap.parse_args(argv[1:])
    publish(run(args), args.write)


def add_paper_arguments(ap, quick_help):
    """The options every paper-reproduction script shares: ``--quick`` (a run of a
    few minutes at most), ``--out`` (the folder for its PNG figures; default
    ``bench/results``), ``--jobs`` (joblib workers for independent tasks such as
    cross-validation folds) and ``--write`` (the Markdown report's file)."""
    ap.add_argument("--quick", action="store_true", help=quick_help)
    ap.add_argument("--out", default=RESULTS,
                    help="folder for the figures (default: bench/results)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="joblib workers for independent tasks (default: all cores)")
    ap.add_argument("--write", help="write the Markdown report to this file")


def figure_ref(png):
    """How a report names a figure: a Markdown link to its path relative to the
    ``bench`` folder (the convention of every report's links, see
    :func:`publish`, which rewrites it for the report's folder); a figure outside
    ``bench`` is named by its file name alone, never by this machine's folders."""
    path = os.path.abspath(png)
    rel = os.path.relpath(path, BENCH).replace(os.sep, "/")
    if rel.startswith("../"):
        rel = os.path.basename(path)
    return f"[`{rel}`]({rel})"


def run_tasks(fn, tasks, jobs=1, describe=None, backend=None, checkpoint=None):
    """``[fn(t) for t in tasks]`` through joblib, with progress output.

    With ``jobs > 1`` the tasks run in ``jobs`` joblib workers (the default loky
    processes, or any backend registered with joblib, e.g. Dask's or Ray's, through
    ``backend`` or ``joblib.parallel_config``), each limited to one BLAS thread by
    threadpoolctl so that workers and BLAS threads do not oversubscribe the cores;
    with ``jobs == 1`` they run here with the BLAS threads as they are.
    ``describe(result)`` gives the progress line of a finished task.

    ``checkpoint``: a JSON-lines file to which every finished task's result is
    appended as it arrives (results must be JSON-serialisable); tasks already
    there (same ``repr``) are not run again, so an interrupted long run resumes
    where it stopped.  Delete the file to start afresh.
    """
    import json

    from joblib import Parallel, delayed

    done = {}
    if checkpoint and os.path.exists(checkpoint):
        with open(checkpoint) as fh:
            for line in fh:
                if line.strip():
                    rec = json.loads(line)
                    done[rec["task"]] = rec["result"]
    todo = [t for t in tasks if repr(t) not in done]
    if done:
        print(f"  {len(tasks) - len(todo)} of {len(tasks)} tasks taken from "
              f"{shown_path(checkpoint)}", flush=True)
    t0 = time.perf_counter()
    if jobs == 1:
        results = (fn(t) for t in todo)
    else:
        results = Parallel(n_jobs=jobs, backend=backend, return_as="generator")(
            delayed(_one_blas_thread)(fn, t) for t in todo)
    for i, (task, r) in enumerate(zip(todo, results)):
        done[repr(task)] = r
        if checkpoint:
            os.makedirs(os.path.dirname(os.path.abspath(checkpoint)), exist_ok=True)
            with open(checkpoint, "a") as fh:
                fh.write(json.dumps({"task": repr(task), "result": r}) + "\n")
        what = describe(r) if describe is not None else ""
        print(f"  [{i + 1}/{len(todo)} {time.perf_counter() - t0:.0f}s] {what}",
              flush=True)
    return [done[repr(t)] for t in tasks]


def _one_blas_thread(fn, task):
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        return fn(task)


def standardise(X_train, X_test):
    """Inputs scaled by the training set's mean and standard deviation (constant
    columns left unscaled)."""
    mean, sd = X_train.mean(0), X_train.std(0)
    sd = np.where(sd == 0, 1.0, sd)
    return (X_train - mean) / sd, (X_test - mean) / sd


def _shown_from():
    """``(prefix, base)``: how a report's command starts and the folder its
    relative paths are relative to: ``cd bench && python `` from ``bench/``,
    ``python bench/`` from the repository root (and from anywhere else, whose
    folders mean nothing to a reader)."""
    if os.path.abspath(os.getcwd()) == os.path.abspath(BENCH):
        return "cd bench && python ", BENCH
    return "python bench/", os.path.dirname(os.path.abspath(BENCH))


def _portable(arg, base=None):
    """A command-line argument as a report shows it: an absolute path relative to
    ``base`` (default: the repository) when inside the repository, else its last
    component (another machine's folders mean nothing to a reader)."""
    if not os.path.isabs(arg):
        return arg
    root = os.path.dirname(os.path.abspath(BENCH))
    base = root if base is None else base
    inside = os.path.commonpath([root, os.path.abspath(arg)]) == root
    return os.path.relpath(arg, base) if inside else os.path.basename(arg)


#: Environment variables that change a run's timings, shown in its command when set.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def command_line(argv):
    """The command that reproduces a report, as its reader types it: ``argv`` (the
    script, then its arguments) from the folder it ran in, ``bench/`` or the
    repository root, with no absolute path of this machine, and the thread counts
    set in the environment (``OPENBLAS_NUM_THREADS=1 python ...``)."""
    prefix, base = _shown_from()
    script = os.path.basename(argv[0]) if argv else "?"
    args = [_portable(a, base) for a in argv[1:]]
    env = " ".join(f"{name}={os.environ[name]}" for name in THREAD_VARIABLES
                   if name in os.environ)
    if env:
        prefix = prefix.replace("python ", f"{env} python ", 1)
    return prefix + " ".join([script] + args)


def shown_path(path):
    """A file's path as a progress line shows it: relative to the folder the
    command runs in when inside the repository, else its last component."""
    return _portable(os.path.abspath(path), os.getcwd())


def footer(argv, t0, jobs=None):
    """The report's last lines: the date, the command (see :func:`command_line`),
    the machine and BLAS, the run time."""
    import sys

    import datetime

    argv = sys.argv if argv is None else argv
    par = f" {jobs} joblib worker(s), 1 BLAS thread each;" if jobs and jobs > 1 else ""
    return ["", f"{datetime.date.today().isoformat()}. Command: "
            f"`{command_line(argv)}`  ",
            machine_line() + f"{par} {time.perf_counter() - t0:.0f} s in all.", ""]


def paper_main(doc, add_arguments, run, argv=None):
    """``main`` of a paper suite: parse its options, print (and ``--write``) the
    report that ``run(args, argv)`` returns."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    add_arguments(ap)
    args = ap.parse_args(sys.argv[1:] if argv is None else argv[1:])
    publish(run(args, argv), args.write)
