"""Evidence quality (Kuss & Rasmussen 2005 style): on ionosphere and sonar, the log
evidence and the test log predictive probability of every gpc inference method
against a long MCMC run at fixed hyperparameters.

Protocol:

* data: ionosphere (351 cases, 34 inputs) and sonar (208 cases, 60 inputs) from
  ``gpc.datasets``; one stratified random split (seed 0), two thirds for training
  (234 and 138 cases), one third for testing; inputs standardised with the training
  statistics (ionosphere's constant input stays 0);
* kernel: the isotropic squared exponential ``sf^2 exp(-|x - x'|^2 / (2 ell^2))``
  (``gpc.kernels.SquaredExponential``) at three (log ell, log sf) points per data
  set, in the spirit of Kuss & Rasmussen's grid: a small signal variance, one near
  the evidence maximum, and a large one (sf = e^2.5), where Laplace's approximation
  is known to be poor (17-19 nats below EP here);
* methods: every gpc method with a log evidence for classification, through
  ``gpc.infer``: Laplace, EP (sequential and parallel updates: the same fixed point),
  posterior linearisation, the ensemble (variational) and naive mean field, the
  variational lower bound (``vb``) and, for the logit, its upper bound
  (``gpc.inference.variational.upper_bound``), and ADF (one sweep; evidence as the
  sum of the log predictive probabilities); probit likelihood at every setting, and
  in the full mode the logit at the setting near the evidence maximum.  Each
  method's test predictions come from its own Gaussian posterior
  (``posterior.predict_proba``);
* evidence reference: annealed importance sampling (``gpc.mcmc.ais``) on the
  training set with elliptical slice transitions, annealing from EP's Gaussian
  (``reference=``) to the posterior along the geometric path, a sigmoidal schedule
  of T temperatures (T = 1000, 2000, 4000 from the small to the large signal
  variance; the slice sampler mixes more slowly as the posterior gets further from
  a Gaussian), one slice step each, C = 256 independent chains; the estimate is the
  log of the mean importance weight, its Monte Carlo standard error by the delta
  method, with the effective sample size of the weights.  The estimate is unbiased
  for the evidence whatever the starting Gaussian; starting from the prior instead
  (K&R's choice) needs far more temperatures at these signal variances.  As a check
  that the start does not matter, the full mode also anneals from the prior on
  sonar at the small signal variance, with 20 times the temperatures;
* predictive reference: elliptical slice sampling (``gpc.mcmc.elliptical_slice``,
  again with EP's Gaussian as the ellipses' centre and shape; same posterior)
  started from final AIS states (64 chains), 200 steps of burn-in, then 500 draws
  one every second step; the predictive probability ``E[p(y* | f*)]`` with
  ``f* | f`` Gaussian averaged over the draws (``gpc.mcmc.predictive_probability``);
  the standard error of the mean test log predictive probability by the delta
  method over the independent chains.

Every (data set, likelihood, hyperparameters) task is independent and runs in one of
``--jobs`` joblib workers (one BLAS thread each).  The figure (every method's
difference to the MCMC values, with their error bands) goes to
``--out``/evidence_quality.png.

Usage::

    python bench/paper_evidence.py --quick          # sonar, one setting, probit
    python bench/paper_evidence.py --write bench/results/evidence_paper.md

The quick mode (under a minute) runs sonar at (log ell, log sf) = (2, 2) with the
probit, 256 AIS chains x 1000 temperatures and 32 slice sampling chains x 1100 steps;
the full mode (9 tasks, about 15-20 minutes on 2 cores) everything above.
"""

import os
import time
import warnings

import numpy as np
from _common import (add_paper_arguments, figure_ref, footer, paper_main, run_tasks,
                     standardise)

DATASETS = ["ionosphere", "sonar"]
LIKELIHOODS = ["probit", "logit"]
# (log length scale, log signal sd) per data set: a small signal variance, one near
# the evidence maximum (EP's, on a grid of step 0.5), a large signal variance; and
# the factor on the number of AIS temperatures (the larger the signal variance, the
# further the posterior from a Gaussian and the slower the slice sampler mixes).
SETTINGS = {"ionosphere": [(1.0, 1.0, 1), (2.0, 2.0, 2), (1.5, 2.5, 4)],
            "sonar": [(1.5, 1.0, 1), (2.0, 2.0, 2), (2.0, 2.5, 4)]}
QUICK_SETTING = ("sonar", (2.0, 2.0, 2))
# The logit runs at the settings near the evidence maximum only (it costs as much as
# the probit; it adds the VB upper bound, which exists for the logit only).
LOGIT_SETTINGS = 1
# The prior-started cross-check: data set, setting, likelihood, temperature factor.
CROSS_CHECK = ("sonar", (1.5, 1.0, 1), "probit", 20)
# (label, gpc method, options) of the compared methods.
METHODS = [
    ("Laplace", "laplace", {}),
    ("EP (sequential)", "ep", {"updates": "sequential"}),
    ("EP (parallel)", "ep", {"updates": "parallel"}),
    ("PL", "pl", {}),
    ("mean field", "mean_field", {}),
    ("naive mean field", "naive_mean_field", {}),
    ("VB lower bound", "vb", {}),
    ("VB upper bound", "upper_bound", {}),
    ("ADF", "adf", {}),
]
# MCMC sizes: AIS chains, AIS temperatures (times the setting's factor), slice
# sampling chains, draws kept per chain (one every THIN steps), burn-in steps.
FULL = dict(ais_chains=256, ais_temperatures=1000, ess_chains=64, ess_draws=500,
            burn_in=200)
QUICK = dict(ais_chains=256, ais_temperatures=500, ess_chains=32, ess_draws=500,
             burn_in=100)
THIN = 2
SEED = 0

# The full report's file in bench/results (run_all.py writes it there).
REPORT = "evidence_paper.md"


def split(name, seed=SEED):
    """Standardised train / test inputs and labels in {-1, +1}."""
    from sklearn.model_selection import train_test_split

    from gpc.datasets import load_dataset

    X, y = load_dataset(name)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=1 / 3, stratify=y,
                                              random_state=seed)
    X_tr, X_te = standardise(X_tr, X_te)
    return X_tr, 2.0 * y_tr - 1.0, X_te, 2.0 * y_te - 1.0


def kernel(log_ell, log_sf):
    from gpc.kernels import SquaredExponential

    return SquaredExponential(length_scale=float(np.exp(log_ell)),
                              variance=float(np.exp(2 * log_sf)))


def mean_log_pred(p, y):
    """Mean log probability of the labels y in {-1, +1} given p(y = +1)."""
    q = np.where(y > 0, p, 1.0 - p)
    with np.errstate(divide="ignore"):
        return float(np.mean(np.log(q)))


def run_method(method, options, K, y, K_cross, k_diag, y_test, likelihood):
    """(log evidence, mean test log predictive, seconds, note) of one method."""
    import gpc
    from gpc.inference.variational import upper_bound
    from sklearn.exceptions import ConvergenceWarning

    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if method == "upper_bound":
                log_z, post, _ = upper_bound(K, y)
            else:
                res = gpc.infer(K, y, method=method, likelihood=likelihood,
                                compute_gradient=False, **options)
                log_z, post = res.log_evidence, res.posterior
            p = post.predict_proba(K_cross, k_diag, likelihood)
        except Exception as exc:  # a failed method is reported, not fatal
            return dict(log_z=None, lpp=None, seconds=time.perf_counter() - t0,
                        note=f"failed: {type(exc).__name__}: {exc}"[:120])
    unconverged = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    return dict(log_z=float(log_z), lpp=mean_log_pred(p, y_test),
                seconds=time.perf_counter() - t0,
                note="did not converge" if unconverged else "")


def run_task(task):
    """One (data set, likelihood, setting): every method, AIS and ESS."""
    import gpc
    from gpc import mcmc

    kind, name, lik, (log_ell, log_sf, factor), cfg, seed = task
    X, y, Xt, yt = split(name)
    k = kernel(log_ell, log_sf)
    K, K_cross, k_diag = k(X), k(X, Xt), k.diag(Xt)
    n_temperatures = factor * cfg["ais_temperatures"]
    out = dict(kind=kind, name=name, lik=lik, setting=[log_ell, log_sf],
               n_train=len(y), n_test=len(yt), cfg=cfg)
    t0 = time.perf_counter()
    ep = gpc.infer(K, y, method="ep", likelihood=lik, compute_gradient=False)
    if kind == "crosscheck":
        res = mcmc.ais(K, y, lik, n_chains=cfg["ais_chains"],
                       n_temperatures=n_temperatures, random_state=seed)
        out["ais"] = _ais_summary(res)
        out["ep_log_z"] = float(ep.log_evidence)
        return out
    methods = {}
    for label, method, options in METHODS:
        if method == "upper_bound" and lik != "logit":
            continue
        methods[label] = run_method(method, options, K, y, K_cross, k_diag, yt, lik)
    out["methods"] = methods
    res = mcmc.ais(K, y, lik, n_chains=cfg["ais_chains"],
                   n_temperatures=n_temperatures, reference=ep, random_state=seed)
    out["ais"] = _ais_summary(res)
    post = mcmc.elliptical_slice(K, y, lik, init=res.samples[:cfg["ess_chains"]],
                                 n_samples=cfg["ess_draws"], burn_in=cfg["burn_in"],
                                 thin=THIN, reference=ep, random_state=seed + 1)
    pred = post.predict_proba(K_cross, k_diag)
    lpp, lpp_se = pred.mean_log_prob(yt)
    out["ess"] = dict(lpp=lpp, lpp_se=lpp_se, chains=post.n_chains,
                      steps=post.n_steps, evals=post.evaluations_per_step,
                      seconds=post.seconds, max_p_se=float(pred.stderr.max()),
                      stuck=post.n_stuck)
    out["seconds"] = time.perf_counter() - t0
    return out


def _ais_summary(res):
    return dict(log_z=res.log_evidence, se=res.stderr, ess=res.ess,
                chains=res.n_chains, temperatures=len(res.temperatures) - 1,
                evals=res.evaluations_per_step, seconds=res.seconds,
                jitter=res.jitter, sd_logw=float(np.std(res.log_weights)))


def _fmt(v, spec=".2f"):
    return "-" if v is None else format(v, spec)


def _setting(s):
    return f"{s[0]:g}, {s[1]:g}"


def tables(results, likelihoods):
    lines = []
    for lik in likelihoods:
        for name in DATASETS:
            rs = [r for r in results if r["kind"] == "main" and r["name"] == name
                  and r["lik"] == lik]
            if not rs:
                continue
            lines += [f"## {name}, {lik} (n = {rs[0]['n_train']} training, "
                      f"{rs[0]['n_test']} test cases)", "",
                      "| log ell, log sf | method | log Z | log Z - AIS | "
                      "test log pred. | - MCMC |", "|---|---|---|---|---|---|"]
            for r in rs:
                a, e = r["ais"], r["ess"]
                lines.append(
                    f"| {_setting(r['setting'])} | **MCMC** (AIS / ESS) | "
                    f"**{a['log_z']:.2f} +- {a['se']:.2f}** | | "
                    f"**{e['lpp']:.4f} +- {e['lpp_se']:.4f}** | |")
                for label, m in r["methods"].items():
                    dz = None if m["log_z"] is None else m["log_z"] - a["log_z"]
                    dp = None if m["lpp"] is None else m["lpp"] - e["lpp"]
                    note = f" ({m['note']})" if m["note"] else ""
                    lines.append(
                        f"|  | {label}{note} | {_fmt(m['log_z'])} | "
                        f"{_fmt(dz, '+.2f')} | {_fmt(m['lpp'], '.4f')} | "
                        f"{_fmt(dp, '+.4f')} |")
            lines.append("")
    return lines


def diagnostics(results):
    lines = ["## MCMC runs", "",
             "AIS: chains x temperatures, the standard deviation of the log weights, "
             "the weights' effective sample size, likelihood evaluations per slice "
             "step, seconds; ESS: chains x steps (burn-in included), evaluations "
             "per step, the largest standard error of a test predictive probability, "
             "seconds.", "",
             "| data | likelihood | log ell, log sf | AIS | sd(log w) | ESS of weights "
             "| eval./step | s | slice sampler | eval./step | max s.e. of p | s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if r["kind"] != "main":
            continue
        a, e = r["ais"], r["ess"]
        lines.append(
            f"| {r['name']} | {r['lik']} | {_setting(r['setting'])} | "
            f"{a['chains']} x {a['temperatures']} | {a['sd_logw']:.2f} | "
            f"{a['ess']:.0f} | {a['evals']:.1f} | {a['seconds']:.0f} | "
            f"{e['chains']} x {e['steps']} | {e['evals']:.1f} | {e['max_p_se']:.4f} | "
            f"{e['seconds']:.0f} |")
    return lines


def cross_check_lines(results):
    checks = [r for r in results if r["kind"] == "crosscheck"]
    main = {(r["name"], r["lik"], tuple(r["setting"])): r for r in results
            if r["kind"] == "main"}
    lines = []
    for c in checks:
        m = main.get((c["name"], c["lik"], tuple(c["setting"])))
        if m is None:
            continue
        a, b = c["ais"], m["ais"]
        diff = a["log_z"] - b["log_z"]
        se = float(np.hypot(a["se"], b["se"]))
        note = ""
        if diff < 0 and a["sd_logw"] > b["sd_logw"]:
            note = (" With weights this uneven, the log of their mean tends to come "
                    "out low and its delta-method error to be optimistic; the run "
                    "from the prior has the more uneven weights, so a difference of "
                    "this sign is the expected one.")
        lines += ["## Cross-check: annealing from the prior", "",
                  f"{c['name']}, {c['lik']}, log ell, log sf = "
                  f"{_setting(c['setting'])}: AIS from the prior (plain elliptical "
                  f"slice sampling, {a['chains']} chains x {a['temperatures']} "
                  f"temperatures, {a['seconds']:.0f} s) gives {a['log_z']:.3f} +- "
                  f"{a['se']:.3f} (sd of the log weights {a['sd_logw']:.2f}, their "
                  f"ESS {a['ess']:.0f} of {a['chains']}), against {b['log_z']:.3f} +- "
                  f"{b['se']:.3f} from EP's Gaussian (sd {b['sd_logw']:.2f}, ESS "
                  f"{b['ess']:.0f} of {b['chains']}): difference {diff:+.3f} +- "
                  f"{se:.3f} ({abs(diff) / se:.1f} standard errors)." + note, ""]
    return lines


def summary_lines(results):
    main = [r for r in results if r["kind"] == "main"]
    if not main:
        return []
    ses = [r["ais"]["se"] for r in main]
    lpp_ses = [r["ess"]["lpp_se"] for r in main]
    gaps = {}
    for r in main:
        for label, m in r["methods"].items():
            if m["log_z"] is not None:
                gaps.setdefault(label, []).append(abs(m["log_z"] - r["ais"]["log_z"]))
    worst = max(gaps, key=lambda k: np.mean(gaps[k]))
    best = min(gaps, key=lambda k: np.mean(gaps[k]))
    return [f"Monte Carlo errors of the references: AIS log evidence standard errors "
            f"{min(ses):.3f} to {max(ses):.3f}; mean test log predictive standard "
            f"errors {min(lpp_ses):.4f} to {max(lpp_ses):.4f}. Mean |log Z - AIS| "
            f"over the settings: "
            + ", ".join(f"{k} {np.mean(v):.2f}" for k, v in
                        sorted(gaps.items(), key=lambda kv: np.mean(kv[1])))
            + f" (closest: {best}; farthest: {worst}).", ""]


def figure(results, png):
    """Each method's log evidence and test log predictive probability minus the
    MCMC value, per task, with the MCMC values' +-2 standard error bands."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    main = [r for r in results if r["kind"] == "main"]
    labels = [lab for lab, _, _ in METHODS
              if any(lab in r["methods"] for r in main)]
    x = np.arange(len(main))
    fig, axes = plt.subplots(2, 1, figsize=(max(9.0, 1.3 * len(main) + 3), 8.5),
                             sharex=True)
    markers = "osD^v<>Xp*"
    for ax, key, ref, sekey, thresh, ylabel in (
            (axes[0], "log_z", "ais", "se", 0.1, "log Z - AIS (nats)"),
            (axes[1], "lpp", "ess", "lpp_se", 1e-3,
             "mean test log pred. - MCMC")):
        for i, r in enumerate(main):
            se = 2 * r[ref][sekey]
            ax.fill_between([i - 0.42, i + 0.42], -se, se, color="0.75", lw=0,
                            label="MCMC +- 2 s.e." if i == 0 else None, zorder=1)
        ax.axhline(0.0, color="k", lw=0.8, zorder=2)
        for j, lab in enumerate(labels):
            vals = []
            for r in main:
                m = r["methods"].get(lab)
                ref_value = r[ref]["log_z" if key == "log_z" else "lpp"]
                vals.append(np.nan if m is None or m[key] is None
                            else m[key] - ref_value)
            dx = (j - (len(labels) - 1) / 2) * 0.08
            ax.plot(x + dx, vals, markers[j % len(markers)], color=f"C{j}",
                    label=lab, ms=5, zorder=3)
        ax.set_yscale("symlog", linthresh=thresh)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3, axis="y")
    axes[1].set_xticks(x)
    axes[1].set_xticklabels([f"{r['name']} {r['lik']}\n(log ell, log sf) = "
                             f"({_setting(r['setting'])})" for r in main],
                            fontsize=7)
    handles, names = axes[0].get_legend_handles_labels()
    fig.suptitle("Evidence quality against MCMC (symlog scales; grey: the MCMC "
                 "reference +- 2 s.e.)", fontsize=11, y=0.995)
    fig.legend(handles, names, fontsize=8, ncol=5, loc="upper center",
               bbox_to_anchor=(0.5, 0.965), frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    os.makedirs(os.path.dirname(os.path.abspath(png)), exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)


def add_arguments(ap):
    add_paper_arguments(ap, "sonar at (log ell, log sf) = (2, 2), probit, shorter "
                            "chains (a minute or two)")
    ap.add_argument("--datasets", nargs="+", choices=DATASETS)
    ap.add_argument("--likelihoods", nargs="+", choices=LIKELIHOODS)
    ap.add_argument("--ais-chains", type=int,
                    help="AIS chains (default: 256, also in the quick mode)")
    ap.add_argument("--ais-temperatures", type=int,
                    help="AIS temperatures at the small signal variance, doubled and "
                         "quadrupled at the larger ones (default: 1000, quick 500)")
    ap.add_argument("--ess-chains", type=int,
                    help="slice sampling chains (default: 64, quick 32)")
    ap.add_argument("--ess-draws", type=int,
                    help="draws kept per slice sampling chain, one every second step "
                         "(default: 500, also in the quick mode)")


def run(args, argv=None):
    """The Markdown report (and the figure in ``args.out``)."""
    t0 = time.perf_counter()
    quick = bool(getattr(args, "quick", False))
    cfg = dict(QUICK if quick else FULL)
    for key in ("ais_chains", "ais_temperatures", "ess_chains", "ess_draws"):
        if getattr(args, key, None):
            cfg[key] = int(getattr(args, key))
    cfg["ess_chains"] = min(cfg["ess_chains"], cfg["ais_chains"])
    likelihoods = getattr(args, "likelihoods", None) or (
        ["probit"] if quick else LIKELIHOODS)
    datasets = getattr(args, "datasets", None) or (
        [QUICK_SETTING[0]] if quick else DATASETS)
    tasks = []
    for lik in likelihoods:
        for name in datasets:
            if quick:
                settings = [QUICK_SETTING[1]]
            elif lik == "logit":
                settings = [SETTINGS[name][LOGIT_SETTINGS]]
            else:
                settings = SETTINGS[name]
            tasks += [("main", name, lik, s, cfg, SEED) for s in settings]
    cname, csetting, clik, factor = CROSS_CHECK
    if not quick and cname in datasets and clik in likelihoods:
        ccfg = dict(cfg, ais_chains=64, ais_temperatures=factor * cfg["ais_temperatures"])
        # first, so that the longest task overlaps the others
        tasks.insert(0, ("crosscheck", cname, clik, csetting, ccfg, SEED + 7))

    def describe(r):
        a = r["ais"]
        what = (f"{r['name']} {r['lik']} ({_setting(r['setting'])})"
                + (" from the prior" if r["kind"] == "crosscheck" else "")
                + f": AIS {a['log_z']:.3f} +- {a['se']:.3f} ({a['seconds']:.0f} s)")
        if r["kind"] == "main":
            what += f", MCMC test log pred. {r['ess']['lpp']:.4f}"
        return what

    results = run_tasks(run_task, tasks, getattr(args, "jobs", 1), describe)
    png = os.path.join(getattr(args, "out", "."), "evidence_quality.png")
    figure(results, png)
    factors = sorted({s[2] for s in (
        [QUICK_SETTING[1]] if quick else sum(SETTINGS.values(), []))})
    temps = " / ".join(str(f * cfg["ais_temperatures"]) for f in factors)
    a_cfg = (f"AIS: {cfg['ais_chains']} chains x {temps} temperatures (growing with "
             "the signal variance; sigmoidal schedule, delta 4), one elliptical slice "
             "step per temperature, annealing from EP's Gaussian; slice sampling: "
             f"{cfg['ess_chains']} chains started from final AIS states, "
             f"{cfg['burn_in']} steps of burn-in, then {cfg['ess_draws']} draws one "
             f"every {THIN} steps (EP's Gaussian as the ellipses' centre and shape).")
    lines = [
        "# Evidence quality (Kuss & Rasmussen 2005 style)", "",
        "Log evidence on the training set and mean test log predictive probability "
        "of every gpc method at fixed hyperparameters, against annealed importance "
        "sampling and elliptical slice sampling (`gpc.mcmc`). Isotropic squared "
        "exponential kernel on standardised inputs, one stratified 2/3 : 1/3 split "
        f"(seed {SEED}); protocol in the docstring of `bench/paper_evidence.py`. "
        + ("Quick mode: one data set and setting, short chains. " if quick else "")
        + a_cfg + " MCMC values: estimate +- one Monte Carlo standard error. "
        "Differences: method minus MCMC (the VB lower bound, the ensemble mean "
        "field's -F and the VB upper bound are bounds, so their sign is known).", "",
        f"Figure: {figure_ref(png)}", ""]
    lines += summary_lines(results)
    lines += tables(results, likelihoods)
    lines += cross_check_lines(results)
    lines += diagnostics(results)
    return "\n".join(lines + footer(argv, t0, getattr(args, "jobs", None)))


def main(argv=None):
    paper_main(__doc__, add_arguments, run, argv)


if __name__ == "__main__":
    main()
