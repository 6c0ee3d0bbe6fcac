"""Evidence gradients against Richardson differences, where the evidence is flat.

Every inference method with a gradient (and sparse EP, :func:`gpc.sparse.sparse_ep`,
on every third input as inducing input), every binary classification likelihood
(probit, logit, noisy threshold with eps = 0.1, step) and the joint multi-class
model's (softmax with Laplace and VB, multinomial probit with EP, on the data's
three-class labels); the kernels ``RBF(l)``, ``C(1) * RBF(l)`` and ``C(1) * RBF(l)
+ C(1)`` at 13 length scales l from 1e-3 to 1e3; scikit-learn's own GPC test data
(``sklearn/gaussian_process/tests/test_gpc.py``: 30 inputs on a line, labels in
four runs).  Each case's gradient in the log-hyperparameters is compared with
Richardson-extrapolated central differences (steps 1e-4 and 2e-4) of the same
objective, as the relative error ``|g - d| / max(|d|, 1e-2)``, and sorted into

* exact: within 1e-5, with no warning;
* declared: the evaluation warned that its evidence and gradient are approximate
  (an unconverged run, sites not moment-matched);
* refused: a ValueError (a pairing the method does not take) or a NumericalError;
* resolution: beyond 1e-5 without a warning, but within what the differences
  resolve: the site methods report how far the rounding errors of K alone can
  move their evidence (``info["evidence_rounding"]``, kappa), and a quotient of
  step h is good to about kappa / h; here within 3 kappa / h (+ 1e-5);
* silent: beyond that; for these the table also gives the largest error against
  differences of step 1e-2 (truncation O(h^4)), which tells a wrong gradient
  from differences that rounding swamps.

``python bench/bench_gradient_grid.py`` prints the table (markdown), in about 45 s.
"""

import time
import warnings

import numpy as np
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.gaussian_process.tests import test_gpc as skt

from gpc.evidence import EvidenceObjective
from gpc.inference import NumericalError, available_methods
from gpc.likelihoods import NoisyThreshold, get_likelihood
from gpc.sparse import sparse_ep

KERNELS = {"RBF": lambda ls: RBF(ls),
           "C*RBF": lambda ls: C(1.0) * RBF(ls),
           "C*RBF+C": lambda ls: C(1.0) * RBF(ls) + C(1.0)}
LIKELIHOODS = {"probit": lambda: get_likelihood("probit"),
               "logit": lambda: get_likelihood("logit"),
               "noisy threshold": lambda: NoisyThreshold(0.1),
               "step": lambda: get_likelihood("step")}
#: The joint multi-class model's likelihoods (three classes) and its methods.
MULTINOMIAL = {"softmax": ("laplace", "vb"), "multinomial_probit": ("ep",)}
LENGTH_SCALES = np.logspace(-3, 3, 13)
X, Y = skt.X, np.where(skt.y > 0, 1.0, -1.0)


def richardson(f, theta, h):
    out = []
    for e in np.eye(theta.size):
        d1 = (f(theta + h * e) - f(theta - h * e)) / (2 * h)
        d2 = (f(theta + 2 * h * e) - f(theta - 2 * h * e)) / (4 * h)
        out.append((4 * d1 - d2) / 3)
    return np.array(out)


def objective(method, kernel, likelihood):
    """``f(theta) -> (log evidence, gradient)``."""
    if likelihood.multinomial:
        return EvidenceObjective(kernel, X, skt.y_mc, likelihood, method)
    if method == "sparse ep":
        Z = X[::3] + 0.1

        def f(theta):
            res = sparse_ep(kernel.clone_with_theta(theta), likelihood, X, Y, Z)
            return res.log_evidence, res.grad
        return f
    return EvidenceObjective(kernel, X, Y, likelihood, method)


def case(method, kernel, likelihood, h=1e-4):
    """``(kind, relative error)`` of one case."""
    f = objective(method, kernel, likelihood)
    theta = kernel.theta.copy()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _, grad = f(theta)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fd = richardson(lambda t: f(t)[0], theta, h)
            kappa = f.infer(theta)[0].info.get("evidence_rounding") \
                if isinstance(f, EvidenceObjective) else None
    except (ValueError, NumericalError):
        return "refused", np.nan
    scale = np.maximum(np.abs(fd), 1e-2)
    error = float(np.max(np.abs(grad - fd) / scale))
    if caught:
        return "declared", error
    if error <= 1e-5:
        return "exact", error
    resolved = np.abs(grad - fd) <= 3.0 * (kappa or 0.0) / h + 1e-5 * scale
    return ("resolution" if resolved.all() else "silent"), error


def likelihood(name):
    if name in MULTINOMIAL:
        return get_likelihood(name).set_params(n_classes=3)
    return LIKELIHOODS[name]()


def row(method, lik_name):
    """The cases of one method and likelihood by kind, and the largest error of
    the silent ones at step 1e-2."""
    kinds = {"exact": [], "declared": [], "refused": [], "resolution": [], "silent": []}
    coarse = 0.0
    for kname, ls in ((k, ls) for k in KERNELS for ls in LENGTH_SCALES):
        kind, error = case(method, KERNELS[kname](ls), likelihood(lik_name))
        kinds[kind].append((error, kname, ls))
        if kind == "silent":
            coarse = max(coarse, case(method, KERNELS[kname](ls),
                                      likelihood(lik_name), h=1e-2)[1])
    return kinds, coarse


def _worst(items):
    if not items:
        return ""
    error, kname, ls = max(items)
    return f"{error:.1e} ({kname}, {ls:.3g})"


def main():
    t0 = time.perf_counter()
    methods = available_methods() + ["sparse ep"]
    print("| method | likelihood | exact | largest exact error | declared approximate "
          "| refused | within resolution: largest error (kernel, length scale) "
          "| silent: largest error (kernel, length scale); at step 1e-2 |")
    print("|---|---|---|---|---|---|---|---|")
    rows = [(m, lik) for m in methods for lik in LIKELIHOODS] + [
        (m, lik) for lik, ms in MULTINOMIAL.items() for m in ms]
    for method, lik_name in rows:
        k, coarse = row(method, lik_name)
        exact = max((e for e, _, _ in k["exact"]), default=np.nan)
        print(f"| {method} | {lik_name} | {len(k['exact'])} | {exact:.1e} | "
              f"{len(k['declared'])} | {len(k['refused'])} | "
              f"{len(k['resolution'])}: {_worst(k['resolution'])} | "
              f"{len(k['silent'])}: {_worst(k['silent'])}"
              f"{f'; {coarse:.1e}' if k['silent'] else ''} |", flush=True)
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
