"""Speed of gpc's expectation propagation, as ratios measured in one run.

* n = 500, 1000, 2000 on 8-D data: one evidence + gradient evaluation (EP to
  convergence, dK, the kernel contraction), cold and warm-started after a 5% change
  of the length scales, divided by one LAPACK Cholesky of size n; sequential and
  parallel updates.
* Sequential sweep cost against n rank-one updates (dsyr) of an n x n matrix.
* A full fit with ARD hyperparameter optimisation against scikit-learn's Laplace fit:
  time and mean test log-likelihood on held-out data.
* GPy's EP on the same data, when GPy is installed.

Run through ``bench/run_all.py`` (which writes ``bench/RESULTS.md``).
"""

import time
import warnings

import numpy as np
from _common import best_of, cholesky_call, make_data, paired_ratio, settle
from scipy.linalg import blas
from sklearn.gaussian_process import GaussianProcessClassifier as SkGPC
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

import gpc
from gpc.inference import get_method
from gpc.kernels import SquaredExponential
from gpc.likelihoods import get_likelihood
from gpc.evidence import EvidenceObjective


def _kernel(d=8):
    """gpc's own squared exponential (ARD): the same covariance as scikit-learn's
    ``C(2.0) * RBF(sqrt(d))``, evaluated by gpc's compiled kernel matrix routine."""
    return SquaredExponential(length_scale=np.full(d, np.sqrt(d)), variance=2.0)


def _moved(kernel):
    """The kernel after all length scales grew by 5% (the warm-start scenario)."""
    grow = np.where([h.name == "length_scale" for h in kernel.hyperparameters
                     if not h.fixed for _ in range(h.n_elements)], np.log(1.05), 0.0)
    return kernel.clone_with_theta(kernel.theta + grow)


def _objective(kernel, X, y, updates):
    """One evidence + gradient evaluation as evidence maximisation makes it:
    ``EvidenceObjective(theta)`` builds K with gpc's compiled kernel routine, runs EP
    from the sites in ``objective.state`` (no input validation: K comes from the
    kernel) and contracts dK with the kernel's derivatives."""
    return EvidenceObjective(kernel, X, y, get_likelihood("probit"), method="ep",
                             options={"updates": updates})


def _evaluation(objective, theta, state=None):
    objective.state = state
    return objective(theta)


def _rank_one_updates(n):
    """Time of n dsyr updates of an n x n matrix (what one sequential sweep must do)."""
    A = np.asfortranarray(np.eye(n))
    x = np.random.RandomState(0).randn(n) * 1e-3
    settle()
    t0 = time.perf_counter()
    for _ in range(n):
        A = blas.dsyr(-1e-6, x, a=A, lower=1, overwrite_a=1)
    return time.perf_counter() - t0


def bench_evaluations(sizes, repeat):
    rows = []
    for n in sizes:
        X, y01 = make_data(n)
        y = 2.0 * y01 - 1.0
        kernel = _kernel()
        theta, theta_moved = kernel.theta, _moved(kernel).theta
        chol = cholesky_call(kernel(X))
        t_r1 = min(_rank_one_updates(n) for _ in range(2))
        ep = get_method("ep")
        for updates in ("parallel", "sequential"):
            # Parallel evaluations take about a second: 3x as many rounds.
            reps = 3 * repeat if updates == "parallel" else (repeat if n <= 1000 else 1)
            obj = _objective(kernel, X, y, updates)
            r_cold, c_cold, _ = paired_ratio(lambda: _evaluation(obj, theta), chol,
                                             reps)
            obj.state = None
            cold, _ = obj.infer(theta)             # (untimed) its sites and counts
            r_warm, c_warm, _ = paired_ratio(
                lambda: _evaluation(obj, theta_moved, cold.state), chol, reps)
            obj.state = cold.state
            warm, K_moved = obj.infer(theta_moved)
            r_warm_ep, c_ep, _ = paired_ratio(lambda: ep(
                K_moved, y, obj.likelihood, init=cold.state, updates=updates), chol,
                reps)
            row = dict(n=n, updates=updates,
                       t_chol=float(np.median([c_cold, c_warm, c_ep])), r_cold=r_cold,
                       sweeps_cold=_sweeps(cold), r_warm=r_warm, r_warm_ep=r_warm_ep,
                       sweeps_warm=_sweeps(warm), t_r1=t_r1, sweep_r1=None,
                       rounds=reps)
            if updates == "sequential":
                K = np.asfortranarray(kernel(X))
                t1, _ = best_of(lambda: _one_sweep(K, y, 1), repeat)
                t3, _ = best_of(lambda: _one_sweep(K, y, 3), repeat)
                row["sweep_r1"] = (t3 - t1) / 2 / t_r1
            rows.append(row)
            print(f"  EP {updates} n={n}: cold {r_cold:.1f} chol "
                  f"({row['sweeps_cold']} sweeps), warm {r_warm:.1f} chol "
                  f"(EP alone {r_warm_ep:.1f}; {row['sweeps_warm']} sweeps)",
                  flush=True)
    return rows


def _sweeps(res):
    """Sweeps followed by a factorisation, plus the cheap linearised ones."""
    inner = res.info.get("n_linearised_sweeps", 0)
    return f"{res.info['n_sweeps']}" + (f" + {inner}" if inner else "")


def _one_sweep(K, y, sweeps):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gpc.infer(K, y, method="ep", likelihood="probit", updates="sequential",
                         max_sweeps=sweeps, compute_gradient=False, check_psd=False)


def bench_gpy(sizes, repeat):
    """GPy's EP (probit) on the same data and kernel: model construction runs the
    kernel matrix, EP to GPy's convergence and the gradients; gpc's figure is the
    same work (kernel matrix, EP, dK contraction)."""
    try:
        import GPy
    except ImportError:
        return []
    rows = []
    for n in sizes:
        X, y01 = make_data(n)
        y = 2.0 * y01 - 1.0
        kernel = _kernel()

        def gpy_fit():
            k = GPy.kern.RBF(8, variance=2.0, lengthscale=np.sqrt(8), ARD=True)
            ep = GPy.inference.latent_function_inference.expectation_propagation.EP()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return GPy.models.GPClassification(X, y01[:, None].astype(float),
                                                   kernel=k, inference_method=ep)

        t_gpy, m = best_of(gpy_fit, 1)
        obj = _objective(kernel, X, y, "parallel")
        t_gpc, (lml_gpc, _) = best_of(lambda: _evaluation(obj, kernel.theta), repeat)
        rows.append(dict(n=n, t_gpy=t_gpy, t_gpc=t_gpc, lml_gpy=float(m.log_likelihood()),
                         lml_gpc=lml_gpc))
        print(f"  GPy EP n={n}: {t_gpy:.2f}s vs gpc {t_gpc:.2f}s", flush=True)
    return rows


def _test_loglik(clf, X, y):
    p = np.clip(clf.predict_proba(X)[np.arange(len(y)), y], 1e-300, 1.0)
    return float(np.mean(np.log(p)))


def bench_fit(n_train, n_test):
    X, y = make_data(n_train + n_test, seed=2)
    Xtr, ytr, Xte, yte = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    kernel = C(1.0, (1e-3, 1e3)) * RBF(np.ones(8), (1e-2, 1e2))
    models = [
        ("scikit-learn Laplace (logit)", lambda: SkGPC(kernel)),
        ("gpc Laplace (logit)", lambda: gpc.GaussianProcessClassifier(kernel)),
        ("gpc EP parallel (probit)", lambda: gpc.GaussianProcessClassifier(
            kernel, method="ep", likelihood="probit",
            inference_options={"updates": "parallel"})),
        ("gpc EP sequential (probit)", lambda: gpc.GaussianProcessClassifier(
            kernel, method="ep", likelihood="probit")),
    ]
    rows = []
    for name, make in models:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t, clf = best_of(lambda: make().fit(Xtr, ytr), 1)
        rows.append(dict(name=name, t=t, lml=clf.log_marginal_likelihood_value_,
                         tll=_test_loglik(clf, Xte, yte),
                         err=1.0 - clf.score(Xte, yte)))
        print(f"  fit {name}: {t:.2f}s, test log-lik {rows[-1]['tll']:.4f}", flush=True)
    return rows


def _rounds(evals, updates):
    """The rounds of the rows with these updates, as the report states them."""
    rows = [r for r in evals if r["updates"] == updates]
    if len({r["rounds"] for r in rows}) == 1:
        return str(rows[0]["rounds"])
    return ", ".join(f"{r['rounds']} at n = {r['n']}" for r in rows)


def report(evals, fits, n_train, n_test, gpy_rows=()):
    rounds = (f"rounds in this run: {_rounds(evals, 'parallel')} for parallel EP, "
              f"3 x `--repeat`; {_rounds(evals, 'sequential')} for sequential EP, "
              "`--repeat` up to n = 1000 and 1 above") if evals else ""
    lines = [
        "## EP: one evidence + gradient evaluation (8-D, gpc `SquaredExponential` ARD, "
        "length scales sqrt(8), variance 2, probit)",
        "",
        "One evaluation = a call of `gpc.evidence.EvidenceObjective`, as evidence "
        "maximisation makes it: the kernel matrix (gpc's compiled routine), EP "
        "(`gpc.inference.get_method(\"ep\")`, without `gpc.infer`'s input checks) to "
        "convergence (tol 1e-8) with dK, and the kernel contraction of dK, in units of "
        "one `dpotrf` of size n timed just before it: the median of the per-round "
        "ratios, so that the machine's drift in speed cancels"
        + (f" ({rounds})" if rounds else "") + "; the dpotrf column is the median of "
        "those references. Warm = started from the sites of the cold run after "
        "all length scales grew by 5%; \"EP alone\" is the EP call of the warm "
        "evaluation by itself. Sweeps: those followed by a factorisation + the cheap "
        "linearised sweeps of parallel EP's chord-Newton acceleration. The last column "
        "is one sequential sweep (including its fresh refactorisation) divided by n "
        "`dsyr` rank-one updates of an n x n matrix. Where the warm evaluation's "
        "time goes, step by step (its LAPACK calls against everything else): "
        "[`results/ep_profile.md`](results/ep_profile.md) (`bench/profile_ep.py`).",
        "",
        "| n | updates | cold (Choleskys) | sweeps | warm (Choleskys) | warm, EP alone | "
        "sweeps | dpotrf (ms) | sweep / n rank-one updates |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in evals:
        s1 = f"{r['sweep_r1']:.2f}" if r["sweep_r1"] is not None else "-"
        lines.append(
            f"| {r['n']} | {r['updates']} | {r['r_cold']:.1f} | "
            f"{r['sweeps_cold']} | {r['r_warm']:.1f} | "
            f"{r['r_warm_ep']:.1f} | {r['sweeps_warm']} | "
            f"{1e3 * r['t_chol']:.1f} | {s1} |")
    if gpy_rows:
        lines += [
            "",
            "## EP against GPy (same data and kernel, probit, cold start)",
            "",
            "GPy: building `GPClassification` with its `EP()` (kernel matrix, EP to "
            "GPy's default convergence, gradients). gpc: kernel matrix, parallel EP to "
            "tol 1e-8, dK contraction.",
            "",
            "| n | GPy (s) | gpc (s) | speed-up | log evidence GPy | log evidence gpc |",
            "|---|---|---|---|---|---|",
        ]
        for r in gpy_rows:
            lines.append(f"| {r['n']} | {r['t_gpy']:.2f} | {r['t_gpc']:.3f} | "
                         f"{r['t_gpy'] / r['t_gpc']:.1f}x | {r['lml_gpy']:.6f} | "
                         f"{r['lml_gpc']:.6f} |")
    if fits:
        lines += [
            "",
            f"## Full fit with ARD optimisation ({n_train} training, {n_test} held-out "
            "cases, 8-D, 9 hyperparameters)",
            "",
            "| model | fit (s) | log evidence | test log-likelihood (mean) | test error |",
            "|---|---|---|---|---|",
        ]
        for r in fits:
            lines.append(f"| {r['name']} | {r['t']:.2f} | {r['lml']:.4f} | "
                         f"{r['tll']:.4f} | {100 * r['err']:.1f}% |")
    return "\n".join(lines) + "\n"


# The sizes of the quick mode (``--quick``: the main job's smoke run).
QUICK = {"ep_sizes": [500, 1000], "ep_gpy_sizes": [500], "ep_fit": [300, 300]}


def add_arguments(ap):
    ap.add_argument("--ep-sizes", type=int, nargs="+", default=[500, 1000, 2000])
    ap.add_argument("--ep-gpy-sizes", type=int, nargs="*", default=[500, 1000])
    ap.add_argument("--ep-fit", type=int, nargs=2, default=[500, 500],
                    metavar=("N_TRAIN", "N_TEST"), help="0 0 skips the fits")


def run(args):
    """Run the EP benchmarks; returns the Markdown section."""
    evals = bench_evaluations(args.ep_sizes, args.repeat)
    n_train, n_test = args.ep_fit
    fits = bench_fit(n_train, n_test) if n_train > 0 else []
    gpy_rows = bench_gpy(args.ep_gpy_sizes, args.repeat)
    return report(evals, fits, n_train, n_test, gpy_rows)
