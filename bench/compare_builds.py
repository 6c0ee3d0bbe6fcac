"""gpc against itself: the same workloads timed in two installed builds, in one run.

A refactor must not slow anything down, and this machine's speed drifts by 10-30 %
over seconds to minutes, so two builds timed in separate runs cannot be compared.
This script takes two Python interpreters, each with its own gpc installed (say,
the main branch before and after a change), starts a worker under each, and asks
the two for one call of a workload at a time, in turn and in alternating order, so
that the calls compared are adjacent in time. The report gives, per workload, each
build's median time in units of one LAPACK Cholesky of the workload's size (timed
just before each call, as in ``_common.paired_ratio``) and the median and range of
the ratios after / before of adjacent calls::

    python -m venv /tmp/before && /tmp/before/bin/pip install <gpc at the old commit>
    cd bench && python compare_builds.py --before /tmp/before/bin/python \\
        --after "$(which python)" --labels OLD NEW --write results/compare_builds.md

The workloads use only API that every build since ``updates="auto"`` (fc09d70)
has: the evidence objective of evidence maximisation
(``gpc.evidence.EvidenceObjective``), the estimator, and gpc's squared-exponential
kernel.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def _workloads():
    """name -> (n, setup) where setup() returns the function to time."""
    from sklearn.gaussian_process.kernels import RBF
    from sklearn.gaussian_process.kernels import ConstantKernel as C

    import gpc
    from gpc.kernels import SquaredExponential
    from gpc.likelihoods import get_likelihood
    try:
        from gpc.evidence import EvidenceObjective
    except ImportError:                 # a build from before it moved there
        from gpc.optimize import EvidenceObjective

    from _common import make_data

    def kernel(d=8):
        return SquaredExponential(length_scale=np.full(d, np.sqrt(d)), variance=2.0)

    def objective(n, method, updates="auto"):
        X, y01 = make_data(n)
        options = {"updates": updates} if method == "ep" else {}
        return EvidenceObjective(kernel(), X, 2.0 * y01 - 1.0,
                                 get_likelihood("probit"), method=method,
                                 options=options)

    def cold(n, method, updates="auto"):
        obj = objective(n, method, updates)

        def run():
            obj.state = None
            return obj(obj.theta)
        return run

    def warm(n):
        obj = objective(n, "ep")
        obj.state = None
        start = obj.infer(obj.theta)[0].state
        grow = [h.name == "length_scale" for h in kernel().hyperparameters
                for _ in range(h.n_elements)]
        moved = obj.theta + np.log(1.05) * np.array(grow, dtype=float)

        def run():
            obj.state = start
            return obj(moved)
        return run

    def kernel_matrix(n):
        X, _ = make_data(n)
        k = kernel()
        return lambda: k(X)

    def laplace_fit(n):
        X, y = make_data(n)
        clf = gpc.GaussianProcessClassifier(C(2.0) * RBF(np.sqrt(8)), optimizer=None,
                                            method="laplace", likelihood="probit")
        return lambda: clf.fit(X, y)

    def predict(n):
        X, y = make_data(n)
        Xt, _ = make_data(n // 2, seed=1)
        clf = gpc.GaussianProcessClassifier(C(2.0) * RBF(np.sqrt(8)), optimizer=None,
                                            method="laplace",
                                            likelihood="probit").fit(X, y)
        return lambda: clf.predict_proba(Xt)

    def ard_fit(n, method):
        X, y = make_data(n)
        clf = gpc.GaussianProcessClassifier(C(2.0) * RBF(np.full(8, np.sqrt(8))),
                                            method=method, likelihood="probit")
        return lambda: clf.fit(X, y)

    return {
        "EP cold evaluation + gradient, n = 1000": (1000, lambda: cold(1000, "ep")),
        "EP warm evaluation + gradient, n = 2000": (2000, lambda: warm(2000)),
        "EP sequential, cold evaluation, n = 500": (
            500, lambda: cold(500, "ep", "sequential")),
        "PL cold evaluation + gradient, n = 1000": (1000, lambda: cold(1000, "pl")),
        "Laplace fit (fixed C * RBF), n = 2000": (2000, lambda: laplace_fit(2000)),
        "predict_proba, 1000 points after a fit on 2000": (2000, lambda: predict(2000)),
        "kernel matrix (ARD squared exponential), n = 2000": (
            2000, lambda: kernel_matrix(2000)),
        "Laplace ARD evidence maximisation, n = 500": (500, lambda: ard_fit(500, "laplace")),
        "EP ARD evidence maximisation, n = 500": (500, lambda: ard_fit(500, "ep")),
    }


def _selected(only):
    """The workloads whose names contain one of the strings ``only`` (all if
    None), as a list of (name, (n, setup))."""
    return [(name, spec) for name, spec in _workloads().items()
            if not only or any(part in name for part in only)]


def worker(only):
    """Serve timings of this interpreter's gpc: after "ready", each line naming a
    workload (its index in ``_selected(only)``) is answered by ``[t, t_ref]``, the
    time of one call and of one dpotrf of the workload's size just before it, in
    seconds."""
    from _common import cholesky_call, settle

    warnings.simplefilter("ignore")
    calls = []
    for _, (n, setup) in _selected(only):
        fn = setup()
        fn()                                             # first call: warm caches
        calls.append((fn, cholesky_call(np.eye(n))))     # dpotrf of an n x n matrix
    print("ready", flush=True)
    for line in sys.stdin:
        fn, reference = calls[int(line)]
        t_ref = reference()
        settle()
        t0 = time.perf_counter()
        fn()
        print(json.dumps([time.perf_counter() - t0, t_ref]), flush=True)


class _Worker:
    """A worker process under another interpreter, asked for one call at a time."""

    def __init__(self, python, only):
        self.python = python
        args = ["--only", *only] if only else []
        self.proc = subprocess.Popen([python, os.path.abspath(__file__), "--worker",
                                      *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, cwd=HERE)
        self._expect("ready")

    def _expect(self, what):
        line = self.proc.stdout.readline()
        if what not in line:
            self.proc.kill()
            raise RuntimeError(f"the worker under {self.python} failed (see above)")
        return line

    def time(self, index):
        self.proc.stdin.write(f"{index}\n")
        self.proc.stdin.flush()
        return json.loads(self._expect("["))

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def _describe(python, label):
    code = "import gpc; print(gpc.__version__)"
    version = subprocess.run([python, "-c", code], capture_output=True, text=True,
                             cwd="/", check=True).stdout.strip()
    return f"gpc {version}" + (f" ({label})" if label else "")


def _command(argv):
    """This run's command as its report shows it (``_common.command_line``), the two
    builds' interpreters, paths of this machine, named by what they are."""
    from _common import command_line

    shown, which = [], None
    for arg in argv:
        if which:
            arg, which = f"<python of the build {which}>", None
        elif arg in ("--before", "--after"):
            which = arg[2:]
        elif arg.startswith(("--before=", "--after=")):
            arg = f"{arg.split('=')[0]}=<python of the build {arg[2:].split('=')[0]}>"
        shown.append(arg)
    return command_line([os.path.basename(__file__)] + shown)


def _session(pythons, first, only, rounds, times):
    """One pair of fresh workers, the one of ``first`` started first: ``rounds``
    adjacent calls of each selected workload in each build, appended to
    ``times[which][name]``."""
    order = (first, "after" if first == "before" else "before")
    workers = {which: _Worker(pythons[which], only) for which in order}
    try:
        for index, (name, _) in enumerate(_selected(only)):
            for r in range(rounds):
                for which in order[::1 if r % 2 == 0 else -1]:
                    times[which][name].append(workers[which].time(index))
    finally:
        for w in workers.values():
            w.close()


def compare(before, after, rounds, sessions=4, labels=(None, None), only=None,
            verbose=True):
    """Time each workload (those whose names contain one of the strings ``only``)
    ``rounds`` times in each build, the two builds' calls adjacent and in
    alternating order, over ``sessions`` pairs of fresh workers started in
    alternating order; return the markdown report."""
    t0 = time.perf_counter()
    names = [name for name, _ in _selected(only)]
    times = {which: {name: [] for name in names} for which in ("before", "after")}
    per_session = max(1, -(-rounds // sessions))
    for k in range(sessions):
        _session({"before": before, "after": after}, ("before", "after")[k % 2],
                 only, per_session, times)
        if verbose:
            print(f"session {k + 1}/{sessions} done ({time.perf_counter() - t0:.0f} s)",
                  flush=True)
    lines = ["| workload | before | after | after / before (median, range) |",
             "|---|---:|---:|---|"]
    for name in names:
        b, a = np.array(times["before"][name]), np.array(times["after"][name])
        q = a[:, 0] / b[:, 0]
        lines.append(f"| {name} | {np.median(b[:, 0] / b[:, 1]):.2f} | "
                     f"{np.median(a[:, 0] / a[:, 1]):.2f} | {np.median(q):.3f} "
                     f"({q.min():.3f} - {q.max():.3f}) |")
    head = (f"Before: {_describe(before, labels[0])}; after: "
            f"{_describe(after, labels[1])}. Each workload is called "
            f"{per_session * sessions} times in each build, in {sessions} sessions "
            "of two fresh worker processes started in alternating order, the two "
            "builds' calls adjacent in time and in alternating order. Before and "
            "after: the median time of a call in units of one LAPACK Cholesky of the "
            "workload's n timed just before it; after / before: the median and range "
            "of the ratios of adjacent calls. Run time "
            f"{time.perf_counter() - t0:.0f} s.")
    return head + "\n\n" + "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", help="Python interpreter of the build before")
    ap.add_argument("--after", default=sys.executable,
                    help="Python interpreter of the build after (default: this one)")
    ap.add_argument("--rounds", type=int, default=16,
                    help="calls of each workload in each build")
    ap.add_argument("--sessions", type=int, default=4,
                    help="pairs of fresh worker processes the rounds are split over")
    ap.add_argument("--labels", nargs=2, metavar=("BEFORE", "AFTER"),
                    default=(None, None),
                    help="what the two builds are, for the report (say, commits)")
    ap.add_argument("--only", nargs="+", metavar="TEXT",
                    help="only the workloads whose names contain one of these")
    ap.add_argument("--write", help="also write the table to this markdown file")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    argv = sys.argv[1:] if argv is None else argv
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.only)
    if not args.before:
        ap.error("--before is required")
    text = compare(args.before, args.after, args.rounds, args.sessions, args.labels,
                   args.only)
    text = f"Command: `{_command(argv)}`\n\n" + text
    print(text)
    if args.write:
        with open(args.write, "w", encoding="utf-8") as f:
            f.write("# Two builds of gpc compared (`bench/compare_builds.py`)\n\n" + text)


if __name__ == "__main__":
    main()
