"""Speed suite: fit and predict times against scikit-learn (and GPy), and every
inference method's cost per iteration in units of one LAPACK Cholesky, in one run.

* Fit and predict with fixed hyperparameters (``optimizer=None``) on the 8-D data of
  ``_common.make_data``, kernel ``C(2.0, "fixed") * RBF(np.full(8, sqrt(8)),
  "fixed")``, n = 500, 1000, 2000, 4000, 8000 (``--speed-sizes``; ``--quick``: 500,
  1000); predictions (``predict_proba``) on 1000 test inputs.
  scikit-learn's ``GaussianProcessClassifier`` (Laplace, logit) against gpc's with
  the same kernel and likelihood (the same model: the largest difference of their
  probabilities is reported as a correctness check); gpc's other methods (EP and PL
  parallel, probit; VB, logit; mean field, probit; ADF, probit) as times and as
  ratios to gpc's Laplace; GPy's EP (``GPClassification``, probit) against gpc's
  parallel EP up to n = 1000 (``--speed-gpy-max-n``), if GPy imports.
* Cost per iteration: ``gpc.infer(K, y, method=..., compute_gradient=False,
  check_psd=False)`` from the prior to convergence, divided by its number of
  iterations (Newton steps, sweeps, fixed-point steps: read from ``result.info``),
  in units of one ``dpotrf`` of size n measured in the same run, for every method
  (Laplace, EP and PL parallel and sequential, mean field, naive mean field, VB,
  ADF) at the sizes up to 4000 (``--speed-iteration-sizes``; ``--quick``: up to
  1000).
  Sequential EP and PL are capped at 2 sweeps from n = 4000 on.
* A figure: fit (and predict) time against n, log-log, in the folder ``--out``.

Times are best of ``--repeat`` runs for n <= 2000 (a single run above, and for any
call whose first run took over 10 s); every ratio is of two figures measured in this
run.  Run it on an otherwise idle machine (with 2 BLAS threads on 2 busy cores,
OpenBLAS's level-2 loops, e.g. sequential EP's, slow down 20-50 fold)::

    cd bench && python bench_speed.py --write results/speed.md     # about 20 min
    python bench_speed.py --quick --out /tmp/speed                 # about 5 min

(estimated for a machine with a 0.64 s ``dpotrf`` at n = 4000; n = 8000 takes about
two thirds of the full run, ``--speed-methods-max-n 4000`` leaves gpc's methods
other than Laplace out of it and saves about 8 min).

Run standalone or through ``bench/run_all.py`` (``add_arguments`` / ``run``).
"""

import argparse
import functools
import os
import sys
import time
import warnings

import numpy as np
from _common import (best_of, cholesky_time, command_line, figure_ref, machine_line,
                     make_data, shown_path, standalone)
from sklearn.gaussian_process import GaussianProcessClassifier as SkGPC
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

import gpc

FULL_SIZES = [500, 1000, 2000, 4000, 8000]
QUICK_SIZES = [500, 1000]
FULL_ITERATION_MAX_N = 4000
QUICK_ITERATION_MAX_N = 1000
N_TEST = 1000
#: Best of ``--repeat`` only up to this size; single runs above.
REPEAT_MAX_N = 2000
#: A call whose first run takes longer than this (s) is not repeated.
LONG_CALL = 10.0
#: Sequential EP / PL are capped at this many sweeps from this size on.
SEQUENTIAL_CAP_N = 4000
SEQUENTIAL_MAX_SWEEPS = 2
FIGURE = "speed_fit.png"
BENCH = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(BENCH, "results")
#: The quick mode's option values (``--quick``; also applied by ``run`` itself).
QUICK = {"speed_sizes": QUICK_SIZES}

#: gpc's methods in the fit/predict comparison: (label, method, likelihood, options).
FIT_METHODS = [
    ("EP parallel", "ep", "probit", {"updates": "parallel"}),
    ("PL parallel", "pl", "probit", {"updates": "parallel"}),
    ("VB", "vb", "logit", {}),
    ("mean field", "mean_field", "probit", {}),
    ("ADF", "adf", "probit", {}),
]

#: Methods of the cost-per-iteration table: (label, method, likelihood, options).
ITERATION_METHODS = [
    ("Laplace", "laplace", "logit", {}),
    ("EP parallel", "ep", "probit", {"updates": "parallel"}),
    ("EP sequential", "ep", "probit", {"updates": "sequential"}),
    ("PL parallel", "pl", "probit", {"updates": "parallel"}),
    ("PL sequential", "pl", "probit", {"updates": "sequential"}),
    ("mean field", "mean_field", "probit", {}),
    ("naive mean field", "naive_mean_field", "probit", {}),
    ("VB", "vb", "logit", {}),
    ("ADF", "adf", "probit", {}),
]


def fixed_kernel(d=8):
    return C(2.0, "fixed") * RBF(np.full(d, np.sqrt(d)), "fixed")


def test_inputs(d=8):
    """The 1000 test inputs (standard normal, as the training inputs)."""
    return np.random.RandomState(12345).randn(N_TEST, d)


def _quiet(fn):
    """``fn`` with warnings (convergence of capped runs, ...) silenced."""
    @functools.wraps(fn)
    def wrapped():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    return wrapped


def timed(fn, n, repeat):
    """(best wall time, last result) of ``fn()``: best of ``repeat`` runs for
    n <= REPEAT_MAX_N, one run otherwise, no further runs once one took over
    LONG_CALL seconds (:func:`_common.best_of`)."""
    return best_of(fn, repeat if n <= REPEAT_MAX_N else 1, stop_after=LONG_CALL)


def _latent(clf, X):
    """(mean, variance) of the latent function at X (untimed; both libraries'
    ``latent_mean_and_variance``), or None if the scikit-learn version has none
    (before 1.7)."""
    if not hasattr(clf, "latent_mean_and_variance"):
        return None
    return tuple(np.asarray(a, dtype=np.float64) for a in clf.latent_mean_and_variance(X))


def _max_diffs(a, b):
    if a is None or b is None:
        return [np.nan, np.nan]
    return [float(np.max(np.abs(u - v))) for u, v in zip(a, b)]


def _p1(proba):
    return np.asarray(proba)[:, 1]


def _iterations(info):
    """(count the call's time is divided by, its text for the table)."""
    if "n_iter" in info:
        k = int(info["n_iter"])
        return k, str(k)
    k = int(info["n_sweeps"])
    inner = int(info.get("n_linearised_sweeps", 0) or 0)
    return k, f"{k} + {inner}" if inner else str(k)


def _notes(info, capped):
    notes = []
    if capped:
        notes.append(f"capped at {SEQUENTIAL_MAX_SWEEPS} sweeps")
    if not info.get("converged", True) and not capped:
        notes.append("not converged")
    if info.get("n_runs", 1) > 1:
        notes.append(f"{info['n_runs']} runs (time of all)")
    if info.get("n_single_precision"):
        notes.append(f"{info['n_single_precision']} single-precision factorisations")
    if info.get("n_halvings"):
        notes.append(f"{info['n_halvings']} step halvings")
    if info.get("warm_start_rejected"):
        notes.append("warm start rejected")
    if info.get("jitter"):
        notes.append(f"jitter {info['jitter']:.1e}")
    return "; ".join(notes)


def bench_fit(n, X, y, Xte, repeat, other_methods=True):
    """scikit-learn and gpc (Laplace, and with ``other_methods`` every other method
    of FIT_METHODS): fit and predict times at one size."""
    kernel = fixed_kernel()
    row = dict(n=n, methods={})

    t_fit, sk = timed(_quiet(lambda: SkGPC(kernel, optimizer=None).fit(X, y)), n, repeat)
    t_pred, p_sk = timed(lambda: sk.predict_proba(Xte), n, repeat)
    row.update(t_sk_fit=t_fit, t_sk_pred=t_pred, lml_sk=sk.log_marginal_likelihood_value_)
    latent_sk = _latent(sk, Xte)
    sk = None  # free its n x n arrays before the next measurement
    print(f"  speed n={n}: scikit-learn fit {t_fit:.3g} s, predict {t_pred:.3g} s",
          flush=True)

    def gpc_model(method="laplace", likelihood="logit", options=None):
        return gpc.GaussianProcessClassifier(kernel, optimizer=None, method=method,
                                             likelihood=likelihood,
                                             inference_options=options)

    t_fit, gp = timed(_quiet(lambda: gpc_model().fit(X, y)), n, repeat)
    t_pred, p_gp = timed(lambda: gp.predict_proba(Xte), n, repeat)
    info = gp.base_estimator_.inference_info_
    row.update(t_gp_fit=t_fit, t_gp_pred=t_pred, lml_gp=gp.log_marginal_likelihood_value_,
               dp=float(np.max(np.abs(_p1(p_sk) - _p1(p_gp)))),
               it_gp=_iterations(info)[1],
               d_latent=_max_diffs(latent_sk, _latent(gp, Xte)))
    gp = None  # free its n x n arrays before the next measurement
    print(f"  speed n={n}: gpc Laplace fit {t_fit:.3g} s ({row['t_sk_fit'] / t_fit:.2f}x),"
          f" predict {t_pred:.3g} s ({row['t_sk_pred'] / t_pred:.2f}x); max |dp| "
          f"{row['dp']:.1e}, latent {row['d_latent'][0]:.1e} / {row['d_latent'][1]:.1e}",
          flush=True)

    for label, method, likelihood, options in (FIT_METHODS if other_methods else []):
        t_fit, clf = timed(_quiet(lambda: gpc_model(method, likelihood, options).fit(X, y)),
                           n, repeat)
        t_pred, p = timed(lambda: clf.predict_proba(Xte), n, repeat)
        info = clf.base_estimator_.inference_info_
        m = dict(t_fit=t_fit, t_pred=t_pred, lml=clf.log_marginal_likelihood_value_,
                 iterations=_iterations(info)[1], notes=_notes(info, False), p1=_p1(p))
        row["methods"][label] = m
        clf = None  # free its n x n arrays before the next measurement
        print(f"  speed n={n}: gpc {label} fit {t_fit:.3g} s "
              f"({t_fit / row['t_gp_fit']:.2f}x Laplace), predict {t_pred:.3g} s "
              f"({t_pred / row['t_gp_pred']:.2f}x)", flush=True)
    return row


def bench_gpy(n, X, y, Xte, row):
    """GPy's EP (probit) on the same data and kernel, against gpc's parallel EP of
    ``row``: model construction and ``predict``, single runs."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import GPy
    except Exception:                    # not installed, or broken with this numpy
        return None

    def fit():
        k = GPy.kern.RBF(X.shape[1], variance=2.0, lengthscale=np.sqrt(X.shape[1]),
                         ARD=True)
        ep = GPy.inference.latent_function_inference.expectation_propagation.EP()
        return GPy.models.GPClassification(X, y[:, None].astype(float), kernel=k,
                                           inference_method=ep)

    t_fit, m = timed(_quiet(fit), n, 1)
    t_pred, pred = timed(_quiet(lambda: m.predict(Xte)), n, 1)
    p = np.asarray(pred[0]).ravel()
    ep = row["methods"]["EP parallel"]
    out = dict(t_fit=t_fit, t_pred=t_pred, lml=float(m.log_likelihood()),
               dp=float(np.max(np.abs(p - ep["p1"]))))
    print(f"  speed n={n}: GPy EP fit {t_fit:.3g} s ({t_fit / ep['t_fit']:.1f}x gpc EP), "
          f"predict {t_pred:.3g} s; max |dp| {out['dp']:.1e}", flush=True)
    return out


def bench_iterations(n, X, y01, t_chol, repeat):
    """Cost per iteration of every method at the K level, at one size."""
    K = np.asfortranarray(fixed_kernel()(X))
    y = 2.0 * y01 - 1.0
    rows = []
    for label, method, likelihood, options in ITERATION_METHODS:
        opts = dict(options)
        capped = (options.get("updates") == "sequential" and n >= SEQUENTIAL_CAP_N)
        if capped:
            opts["max_sweeps"] = SEQUENTIAL_MAX_SWEEPS
        t, res = timed(_quiet(lambda: gpc.infer(K, y, method=method, likelihood=likelihood,
                                                compute_gradient=False, check_psd=False,
                                                **opts)), n, repeat)
        k, text = _iterations(res.info)
        rows.append(dict(n=n, label=label, likelihood=likelihood, t=t, k=k, text=text,
                         t_chol=t_chol, per_iter=t / max(k, 1) / t_chol,
                         notes=_notes(res.info, capped)))
        res = None  # free its n x n arrays before the next measurement
        print(f"  per-iteration n={n}: {label} {t:.3g} s = {t / t_chol:.1f} chol, "
              f"{text} iterations, {rows[-1]['per_iter']:.2f} chol each", flush=True)
    return rows


def figure(fits, gpy, path):
    """Fit and predict time against n, log-log (matplotlib's Agg canvas; no pyplot,
    so no global backend is changed when run in-process)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullLocator

    ns = [r["n"] for r in fits]
    fig = Figure(figsize=(11, 5.4))
    FigureCanvasAgg(fig)
    for ax, what, title in zip(fig.subplots(1, 2), ("fit", "pred"),
                               ("fit (fixed hyperparameters)",
                                f"predict_proba on {N_TEST} test points")):
        ax.loglog(ns, [r[f"t_sk_{what}"] for r in fits], "k-o",
                  label="scikit-learn Laplace (logit)")
        ax.loglog(ns, [r[f"t_gp_{what}"] for r in fits], "-s", label="gpc Laplace (logit)")
        for (label, _, likelihood, _), marker in zip(FIT_METHODS, "^v<>D"):
            pts = [(r["n"], r["methods"][label][f"t_{what}"]) for r in fits
                   if label in r["methods"]]
            if pts:
                ax.loglog(*zip(*pts), "-" + marker, label=f"gpc {label} ({likelihood})",
                          alpha=0.85)
        if gpy:
            g = sorted(gpy.items())
            ax.loglog([n for n, _ in g], [v[f"t_{what}"] for _, v in g], "r--x",
                      label="GPy EP (probit)")
        if what == "fit":
            ax.loglog(ns, [r["t_chol"] for r in fits], "k:.",
                      label="one dpotrf of size n (reference)")
        ax.set_xlabel("training points n")
        ax.set_ylabel("wall time (s)")
        ax.set_title(title)
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.grid(True, which="major", alpha=0.3)
    # One legend for both panels (the fit panel has every line), below them.
    handles, labels = fig.axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=110)


def _reps_text(repeat):
    return (f"best of {repeat} runs for n <= {REPEAT_MAX_N}, a single run above it "
            f"and for any call whose first run took over {LONG_CALL:g} s"
            if repeat > 1 else "single runs")


def report(fits, gpy, iters, repeat, figure_link, command=None, seconds=None):
    lines = []
    if command is not None:
        lines += [f"Command: `{command_line(command)}`  ", machine_line(), ""]
    reps = _reps_text(repeat)
    lines += [
        "## Speed: fit and predict against scikit-learn (8-D `make_data`, fixed "
        "`C(2) * RBF(ARD, sqrt(8))`, Laplace, logit)",
        "",
        "Fit = `GaussianProcessClassifier(kernel, optimizer=None).fit(X, y)` of each "
        "library on the same n training points (everything `fit` does: kernel matrix, "
        "Newton to the mode, stored posterior); predict = `predict_proba` of the "
        f"fitted model on the same {N_TEST} test inputs. Times are wall times, {reps}. "
        "Speed-up = scikit-learn's time / gpc's. max |dp| = the largest absolute "
        "difference between the two libraries' probabilities of class 1 on the test "
        "inputs (the same model: it is the difference of their approximations of the "
        "logistic-Gaussian predictive integral, scikit-learn's five error functions "
        "against gpc's quadrature); latent = the largest absolute differences of the "
        "latent means and of the latent variances at the test inputs "
        "(`latent_mean_and_variance`, not timed). dpotrf = one LAPACK Cholesky of "
        "size n, measured in this run.",
        "",
        "| n | scikit-learn fit (s) | gpc fit (s) | fit speed-up | scikit-learn "
        "predict (s) | gpc predict (s) | predict speed-up | max abs dp | latent: max "
        "abs d mean / d var | log evidence scikit-learn | log evidence gpc | Newton "
        "steps (gpc) | dpotrf (ms) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in fits:
        lines.append(
            f"| {r['n']} | {r['t_sk_fit']:.3g} | {r['t_gp_fit']:.3g} | "
            f"{r['t_sk_fit'] / r['t_gp_fit']:.2f}x | {r['t_sk_pred']:.3g} | "
            f"{r['t_gp_pred']:.3g} | {r['t_sk_pred'] / r['t_gp_pred']:.2f}x | "
            f"{r['dp']:.1e} | {r['d_latent'][0]:.1e} / {r['d_latent'][1]:.1e} | "
            f"{r['lml_sk']:.6f} | {r['lml_gp']:.6f} | {r['it_gp']} | "
            f"{1e3 * r['t_chol']:.1f} |")
    lines += [
        "",
        "## Speed: gpc's other methods, fit and predict (same data, kernel and test "
        "inputs)",
        "",
        "Fit and predict as above, for `gpc.GaussianProcessClassifier(kernel, "
        "optimizer=None, method=..., likelihood=...)` (EP and PL with "
        "`inference_options={\"updates\": \"parallel\"}`); no scikit-learn counterpart, "
        "so each time is also given as a ratio to gpc Laplace's (logit) in the table "
        "above. Iterations: Newton steps (mean field), fixed-point steps (VB), sweeps "
        "followed by a factorisation + cheap linearised sweeps (EP, PL), sweeps (ADF). "
        f"Times: {reps}.",
        "",
        "| n | method | likelihood | fit (s) | fit / gpc Laplace | predict (s) | "
        "predict / gpc Laplace | iterations | log evidence | notes |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in fits:
        for label, _, likelihood, _ in FIT_METHODS:
            m = r["methods"].get(label)
            if m is None:
                continue
            lines.append(
                f"| {r['n']} | {label} | {likelihood} | {m['t_fit']:.3g} | "
                f"{m['t_fit'] / r['t_gp_fit']:.2f} | {m['t_pred']:.3g} | "
                f"{m['t_pred'] / r['t_gp_pred']:.2f} | {m['iterations']} | "
                f"{m['lml']:.4f} | {m['notes']} |")
    if gpy:
        lines += [
            "",
            "## Speed: GPy's EP against gpc's (probit, same data, kernel and test "
            "inputs)",
            "",
            "GPy fit = building `GPy.models.GPClassification(X, y, kernel=RBF(ARD), "
            "inference_method=EP())` (kernel matrix, EP to GPy's default convergence, "
            "and the hyperparameter gradients GPy always computes); GPy predict = "
            f"`model.predict` on the {N_TEST} test inputs (its mean is p(y = 1)). gpc: "
            "the parallel-EP fit and `predict_proba` of the table above (EP to tol "
            "1e-8, no gradient). Single runs for GPy. max |dp| = the largest "
            "absolute difference of the two EP probabilities of class 1.",
            "",
            "| n | GPy fit (s) | gpc EP fit (s) | fit speed-up | GPy predict (s) | "
            "gpc EP predict (s) | predict speed-up | max abs dp | log evidence GPy | "
            "log evidence gpc |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        by_n = {r["n"]: r for r in fits}
        for n, g in sorted(gpy.items()):
            ep = by_n[n]["methods"]["EP parallel"]
            lines.append(
                f"| {n} | {g['t_fit']:.3g} | {ep['t_fit']:.3g} | "
                f"{g['t_fit'] / ep['t_fit']:.1f}x | {g['t_pred']:.3g} | "
                f"{ep['t_pred']:.3g} | {g['t_pred'] / ep['t_pred']:.1f}x | "
                f"{g['dp']:.1e} | {g['lml']:.6f} | {ep['lml']:.6f} |")
    if iters:
        lines += [
            "",
            "## Cost per iteration of every inference method, in units of one "
            "`dpotrf` of size n",
            "",
            "Call = `gpc.infer(K, y, method=..., likelihood=..., "
            "compute_gradient=False, check_psd=False)` from the prior to convergence "
            "(K of the tables above, precomputed: its time is not included); per "
            "iteration = the call's time / its iterations / the time of one `dpotrf` "
            f"of size n (measured in this run, best of 3 or more); {reps}. Iterations "
            "(from `result.info`): Laplace `n_iter`, Newton steps (each factorises "
            "B = I + sW K sW; it is factorised once more at the mode); EP and PL "
            "`n_sweeps`, sweeps followed by a factorisation, + `n_linearised_sweeps`, "
            "the cheap O(n^2) sweeps of the parallel chord-Newton acceleration (not "
            "counted in the division; sequential sweeps are n rank-one updates each, "
            "then a refactorisation); mean field and naive mean field `n_iter`, "
            "Newton steps (one Cholesky of B each, plus one at the solution; the "
            "ensemble method also factorises and inverts K once); VB `n_iter`, "
            "fixed-point steps (one Cholesky and triangular inverse of B each); ADF "
            "`n_sweeps`, one sweep of n moment-matched rank-one updates."
            + (f" From n = {SEQUENTIAL_CAP_N} on, sequential EP and PL are capped at "
               f"`max_sweeps={SEQUENTIAL_MAX_SWEEPS}` (their sweeps cost O(n^3) in "
               "rank-one updates): not converged, their figure is per sweep of the "
               "first sweeps from the prior."
               if any(r["n"] >= SEQUENTIAL_CAP_N for r in iters) else ""),
            "",
            "| n | method | likelihood | iterations | call (s) | call (Choleskys) | "
            "per iteration (Choleskys) | dpotrf (ms) | notes |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in iters:
            lines.append(
                f"| {r['n']} | {r['label']} | {r['likelihood']} | {r['text']} | "
                f"{r['t']:.3g} | {r['t'] / r['t_chol']:.1f} | {r['per_iter']:.2f} | "
                f"{1e3 * r['t_chol']:.1f} | {r['notes']} |")
    if figure_link:
        lines += ["", f"Figure: fit and predict times against n, {figure_link}."]
    if seconds is not None:
        lines += ["", f"This speed suite took {seconds:.0f} s."]
    return "\n".join(lines) + "\n"


def _has(ap, option):
    return option in getattr(ap, "_option_string_actions", {})


def add_arguments(ap):
    ap.add_argument("--speed-sizes", type=int, nargs="+", default=None,
                    help=f"training sizes of the fit/predict tables (default "
                         f"{FULL_SIZES}; --quick: {QUICK_SIZES})")
    ap.add_argument("--speed-iteration-sizes", type=int, nargs="*", default=None,
                    help="sizes of the cost-per-iteration table (default: the sizes "
                         f"up to {FULL_ITERATION_MAX_N}, --quick: up to "
                         f"{QUICK_ITERATION_MAX_N}; none given: skipped)")
    ap.add_argument("--speed-gpy-max-n", type=int, default=1000,
                    help="GPy's EP at the sizes up to this (0 skips GPy)")
    ap.add_argument("--speed-methods-max-n", type=int, default=0,
                    help="gpc's methods other than Laplace in the fit/predict table "
                         "only at the sizes up to this (default 0: at every size)")
    for option, kwargs in (
            ("--quick", dict(action="store_true",
                             help=f"a short run (speed: sizes {QUICK_SIZES})")),
            ("--out", dict(default=DEFAULT_OUT,
                           help="folder for the figures (default: bench/results)"))):
        if not _has(ap, option):
            try:
                ap.add_argument(option, **kwargs)
            except argparse.ArgumentError:
                pass


def run(args, command=None):
    """Run the speed suite; returns the Markdown section(s).  ``command`` (the
    argv of a standalone run) adds the command and machine lines."""
    t_start = time.perf_counter()
    quick = bool(getattr(args, "quick", False))
    repeat = int(getattr(args, "repeat", 3) or 1)
    sizes = args.speed_sizes or (QUICK_SIZES if quick else FULL_SIZES)
    if args.speed_iteration_sizes is None:
        cap = QUICK_ITERATION_MAX_N if quick else FULL_ITERATION_MAX_N
        iteration_sizes = [n for n in sizes if n <= cap]
    else:
        iteration_sizes = list(args.speed_iteration_sizes)
    gpy_max = int(getattr(args, "speed_gpy_max_n", 1000) or 0)
    methods_max = int(getattr(args, "speed_methods_max_n", 0) or 0)
    out = getattr(args, "out", None) or DEFAULT_OUT

    Xte = test_inputs()
    fits, gpy, iters, chol = [], {}, [], {}
    for n in sorted(set(sizes) | set(iteration_sizes)):
        X, y01 = make_data(n)
        chol[n] = cholesky_time(fixed_kernel()(X), max(3, repeat))
        print(f"  speed n={n}: dpotrf {1e3 * chol[n]:.1f} ms", flush=True)
        if n in sizes:
            row = bench_fit(n, X, y01, Xte, repeat,
                            other_methods=not methods_max or n <= methods_max)
            row["t_chol"] = chol[n]
            fits.append(row)
            if n <= gpy_max and "EP parallel" in row["methods"]:
                g = bench_gpy(n, X, y01, Xte, row)
                if g is not None:
                    gpy[n] = g
        if n in iteration_sizes:
            iters += bench_iterations(n, X, y01, chol[n], repeat)

    link = None
    if fits:
        figure_path = os.path.join(out, FIGURE)
        figure(fits, gpy, figure_path)
        print(f"  speed: figure {shown_path(figure_path)}", flush=True)
        link = figure_ref(figure_path)
    return report(fits, gpy, iters, repeat, link, command,
                  time.perf_counter() - t_start)


def main(argv=None):
    argv = sys.argv if argv is None else argv
    standalone(__doc__, add_arguments, functools.partial(run, command=argv), argv,
               repeat=3)


if __name__ == "__main__":
    main()
