"""Mean-field paper (Csató, Fokoué, Opper, Schottky & Winther 2000): Table 1 (Pima)
and Fig. 2 (the sequential algorithm on sonar and crabs), ours beside theirs.

Table 1 protocol (the paper's section 6, as far as it states it):

* Ripley's Pima split, 200 training / 332 test cases (gpc.datasets.load_pima),
  inputs standardised with the training mean and standard deviation (not stated in
  the paper);
* kernel ``exp(-sum_l w_l (x_l - x'_l)^2 / 2) + v delta`` (amplitude fixed at 1),
  i.e. ``RBF(ARD) + WhiteKernel``; every w_l starts at 1 (uniform, as the paper
  says; length scale 1 on the standardised inputs) and v at 0.1;
* the noise-free step likelihood (1);
* each free energy minimised (L-BFGS-B with the analytic gradient; the paper used
  gradient descent); the "hybrid" cells evaluate the other method at those
  hyperparameters; test errors count sign(posterior mean) mistakes out of 332.

Fig. 2 protocol: the sequential algorithm (ADF, section 5) with the noise-free step
likelihood and the fixed kernel ``(1 + x.x'/m)^2`` (m = input dimension) on sonar
(208 cases, 60 inputs; the paper's Gorman-Sejnowski split is not in our copy of the
data, so a stratified random 104 / 104 split) and crabs (sex from the 6 inputs,
80 training / 120 test cases, stratified random split); inputs standardised with
the training statistics; the training set presented once in a random order, then
twice more in the same order (the paper's reuse heuristic).  Training and test
errors after every example, averaged over ``--splits`` random splits (the first
split's curves are also drawn); the figure goes to
``meanfield_fig2.png`` in ``--out`` (default ``bench/results``).

Usage::

    python bench/paper_meanfield.py --write bench/results/meanfield_paper.md
    python bench/paper_meanfield.py --quick        # 2 splits for Fig. 2
"""

import os
import time
import warnings

import numpy as np
from _common import add_paper_arguments, figure_ref, footer, paper_main
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C

import gpc
from gpc import _online
from gpc.datasets import load_dataset, load_pima
from gpc import maximize_evidence
from gpc.evidence import EvidenceObjective

METHODS = ["mean_field", "naive_mean_field"]
LABEL = {"mean_field": "Ensemble MF, eq. (7)", "naive_mean_field": "Naive MF, eq. (10)"}
# The paper's Table 1: (hyperparameters from, evaluated with) -> (errors, -ln P(D)).
PAPER_TABLE1 = {
    ("mean_field", "mean_field"): (72, 100.6),
    ("mean_field", "naive_mean_field"): (70, 183.2),
    ("naive_mean_field", "mean_field"): (62, 107.0),
    ("naive_mean_field", "naive_mean_field"): (62, 110.9),
}


# The full report's file in bench/results (run_all.py writes it there).
REPORT = "meanfield_paper.md"


def pima():
    X_train, y_train, X_test, y_test = load_pima()
    mu, sd = X_train.mean(0), X_train.std(0)
    return (X_train - mu) / sd, 2.0 * y_train - 1.0, (X_test - mu) / sd, y_test


def pima_kernel(d):
    return (C(1.0, "fixed") * RBF(np.ones(d), length_scale_bounds=(1e-2, 1e5))
            + WhiteKernel(0.1, noise_level_bounds=(1e-5, 1e2)))


def fit_free_energy(method, X, y):
    """Minimise a free energy over the kernel's log-hyperparameters; return the
    fitted kernel, the number of evaluations and the mean-field Newton steps per
    evaluation."""
    lik = gpc.likelihoods.get_likelihood("step")
    objective = EvidenceObjective(pima_kernel(X.shape[1]), X, y, lik, method)
    steps = []
    infer = objective._infer

    def counted(*args, **kwargs):
        res = infer(*args, **kwargs)
        steps.append(res.info["n_iter"])
        return res

    objective._infer = counted
    opt = maximize_evidence(objective, objective.theta, objective.bounds)
    objective.set_theta(opt.theta)
    return objective.kernel, opt.n_evaluations, steps


def fixed_point_steps(K, y, s, eta, tol=1e-9, limit=5000):
    """Steps of the damped fixed-point iteration m <- m - eta (m - (K - S) g(m)) of
    the paper's equations to gpc's convergence criterion (None: not in ``limit``)."""
    lik = gpc.likelihoods.get_likelihood("step")
    m = np.zeros(y.shape[0])
    for step in range(limit + 1):
        g = lik.gauss_moments(y, m, s)[1]
        Kg = K @ g
        r = m - (Kg - s * g)
        if not np.isfinite(r).all():
            return None
        if np.max(np.abs(r)) <= tol * (1.0 + np.max(np.abs(Kg))):
            return step
        m = m - eta * r
    return None


def solver_comparison(kernels, X, y, etas=(1.0, 0.5, 0.2, 0.05)):
    """Newton (gpc) against the damped fixed-point iteration, from m = 0 at each
    method's optimum."""
    lines = ["## Solver: Newton against the damped fixed-point iteration", "",
             "Iterations from m = 0 to the same criterion (max residual <= 1e-9 (1 + "
             "max |K g|)) at each free energy's optimum on Pima; a damped "
             "fixed-point step is m <- m - eta (m - (K - S) g(m)); '-' = not "
             "converged in 5000 steps.", "",
             "| method | Newton | " + " | ".join(f"eta = {e}" for e in etas) + " |",
             "|---|---|" + "---|" * len(etas)]
    for method, kernel in kernels.items():
        K = kernel(X)
        res = gpc.infer(K, y, method=method, likelihood="step", compute_gradient=False)
        s = res.info["cavity_var"] if method == "mean_field" else np.diag(K)
        steps = [fixed_point_steps(K, y, s, eta) for eta in etas]
        lines.append(f"| {LABEL[method]} | {res.info['n_iter']} | "
                     + " | ".join("-" if k is None else str(k) for k in steps) + " |")
    return lines


def evaluate(kernel, method, X, y, X_test, y_test):
    """(test errors, -log evidence, Newton steps from the prior) of a method."""
    res = gpc.infer(kernel(X), y, method=method, likelihood="step",
                    compute_gradient=False)
    mean = kernel(X, X_test).T @ res.posterior.alpha
    errors = int(np.sum((mean > 0).astype(int) != y_test))
    return errors, -res.log_evidence, res.info["n_iter"]


def table1(verbose=True):
    X, y, X_test, y_test = pima()
    rows, notes, kernels = [], [], {}
    for fitted in METHODS:
        t0 = time.perf_counter()
        kernel, n_eval, steps = fit_free_energy(fitted, X, y)
        kernels[fitted] = kernel
        seconds = time.perf_counter() - t0
        cells = {}
        for used in METHODS:
            cells[used] = evaluate(kernel, used, X, y, X_test, y_test)
        rows.append((fitted, cells))
        w = 1.0 / np.asarray(kernel.k1.k2.length_scale) ** 2
        notes.append(
            f"- {LABEL[fitted]}: {n_eval} evaluations in {seconds:.1f} s, Newton steps "
            f"per evaluation mean {np.mean(steps):.1f} (max {max(steps)}; "
            f"{cells[fitted][2]} from the prior at the optimum); w = "
            f"{np.array2string(w, precision=3)}, v = {kernel.k2.noise_level:.3g}.")
        if verbose:
            print(notes[-1], flush=True)
    lines = ["## Table 1: Pima (200 / 332), hyperparameters by free-energy "
             "minimisation", "",
             "Errors out of 332 test cases and -ln P(D) (the free energy) at the "
             "hyperparameters found by minimising the row's free energy; "
             "ours / the paper's.", "",
             "| free energy minimised | Ensemble MF: errors | Ensemble MF: -ln P(D) "
             "| Naive MF: errors | Naive MF: -ln P(D) |",
             "|---|---|---|---|---|"]
    for fitted, cells in rows:
        parts = [LABEL[fitted]]
        for used in METHODS:
            err, nlp, _ = cells[used]
            p_err, p_nlp = PAPER_TABLE1[(fitted, used)]
            parts += [f"{err} / {p_err}", f"{nlp:.1f} / {p_nlp}"]
        lines.append("| " + " | ".join(parts) + " |")
    return lines + [""] + notes + [""] + solver_comparison(kernels, X, y)


def poly_kernel(A, B):
    """The paper's (1 + a.b / m)^2, m the input dimension."""
    return (1.0 + A @ B.T / A.shape[1]) ** 2


def split(name, seed):
    """Standardised (X_train, y_train, X_test, y_test) in {-1, +1} of a random
    stratified split: sonar 104 / 104, crabs (sex) 80 / 120."""
    from sklearn.model_selection import train_test_split

    X, y = load_dataset(name)
    n_train = 104 if name == "sonar" else 80
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, train_size=n_train, stratify=y,
                                              random_state=seed)
    mu, sd = X_tr.mean(0), X_tr.std(0)
    return (X_tr - mu) / sd, 2.0 * y_tr - 1, (X_te - mu) / sd, 2.0 * y_te - 1


def learning_curve(name, seed, n_sweeps=3):
    """Training and test error after each presented example (ADF, step likelihood):
    the examples go one at a time through gpc's ADF sweep (``gpc._online``), the
    errors come from the sign of the posterior mean."""
    X, y, X_test, y_test = split(name, seed)
    n = X.shape[0]
    K = np.asfortranarray(poly_kernel(X, X))
    K_test = poly_kernel(X, X_test)
    lik = gpc.likelihoods.get_likelihood("step")
    par, qx, qw = (np.ascontiguousarray(a, dtype=np.float64)
                   for a in (lik.params, lik.quad_x, lik.quad_logw))
    perm = np.random.RandomState(1000 + seed).permutation(n)
    order = np.ascontiguousarray(np.tile(perm, n_sweeps), dtype=np.intc)
    alpha, C = np.zeros(n), np.zeros((n, n), order="F")
    logz = np.empty(order.shape[0])
    t_active, train, test = 0, [], []
    for i in range(order.shape[0]):
        status, _, t_active, _, _ = _online.adf_sweep(
            K, y, lik.code, par, qx, qw, alpha, C, order[:i + 1], i, t_active, logz)
        if status != _online.STATUS_OK:
            raise FloatingPointError(f"ADF failed at example {i} ({name})")
        train.append(np.mean(np.sign(K @ alpha) != y))
        test.append(np.mean(np.sign(K_test.T @ alpha) != y_test))
    return np.array(train), np.array(test), n


def fig2(n_splits, png, verbose=True):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    lines = ["## Fig. 2: the sequential algorithm (ADF), sonar and crabs", "",
             f"Errors (fractions) averaged over {n_splits} random splits; the paper "
             "reports zero training error on sonar after one sweep.", "",
             "| data | after 1 sweep: train | test | after 3 sweeps: train | test "
             "| splits with zero training error after 1 sweep |",
             "|---|---|---|---|---|---|"]
    for ax, name in zip(axes, ["sonar", "crabs"]):
        curves = [learning_curve(name, seed) for seed in range(n_splits)]
        n = curves[0][2]
        train = np.mean([c[0] for c in curves], axis=0)
        test = np.mean([c[1] for c in curves], axis=0)
        zero = sum(c[0][n - 1] == 0 for c in curves)
        lines.append(f"| {name} | {train[n - 1]:.3f} | {test[n - 1]:.3f} | "
                     f"{train[-1]:.3f} | {test[-1]:.3f} | {zero} / {n_splits} |")
        t = np.arange(1, train.shape[0] + 1)
        ax.plot(t, train, label=f"training (mean of {n_splits})", color="C0")
        ax.plot(t, test, label=f"test (mean of {n_splits})", color="C1")
        ax.plot(t, curves[0][0], color="C0", lw=0.6, alpha=0.5,
                label="training (split 1)")
        ax.plot(t, curves[0][1], color="C1", lw=0.6, alpha=0.5, label="test (split 1)")
        ax.axvline(n, ls="-.", color="k", lw=0.8)
        ax.set_title(f"{name}: {n} training examples, then reused")
        ax.set_xlabel("examples presented")
        ax.set_ylabel("error")
        ax.set_ylim(0, 0.6)
        ax.legend(fontsize=7)
        if verbose:
            print(lines[-1], flush=True)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return lines + ["", f"Figure: {figure_ref(png)}"]


def add_arguments(ap):
    add_paper_arguments(ap, "2 splits for Fig. 2")
    ap.add_argument("--splits", type=int, default=20,
                    help="random splits averaged in Fig. 2 (default 20)")


def run(args, argv=None):
    """The Markdown report: Table 1 and Fig. 2 (the figure written to ``args.out``)."""
    png = os.path.join(args.out, "meanfield_fig2.png")
    os.makedirs(args.out, exist_ok=True)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        lines = ["# Mean-field paper (Csató et al. 2000): reproduction", ""]
        lines += table1()
        lines += [""] + fig2(2 if args.quick else args.splits, png)
    return "\n".join(lines + footer(argv, t0))


def main(argv=None):
    paper_main(__doc__, add_arguments, run, argv)


if __name__ == "__main__":
    main()
