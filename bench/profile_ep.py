"""Where a warm-started parallel EP evaluation spends its time (a diagnostic).

The speed table of ``bench_ep.py`` gives the whole evaluation in units of one LAPACK
Cholesky; this script splits it into its steps: the kernel matrix, each LAPACK call
of the EP run (single-precision first factorisation, double-precision refactorisations,
the chord models' ``slauum``, the final ``dlauum`` for B^{-1}), the O(n^2) passes
between them, and the kernel contraction of dK.  The EP steps are timed inside the
compiled loop, so it needs a build with timers: from the project root ::

    git apply bench/ep_timers.patch && python -m pip install .
    cd bench && python profile_ep.py --n 2000 --write results/ep_profile.md
    cd .. && git apply -R bench/ep_timers.patch && python -m pip install .

(an editable install rebuilds by itself on import).  The patch adds
``gpc._ep.timers()``; it was last refreshed for ``src_c/_ep.pyx`` as of the
session-14 review commit and may need refreshing after that file changes.  Same
data, kernel, warm-start scenario (all length scales grow by 5% after a cold fit)
and steps as
``bench_ep.py``'s evaluation: the kernel matrix, the EP method as evidence
maximisation calls it (``gpc.inference.get_method("ep")``: no input validation; a
workspace kept across calls), the contraction (no finiteness passes).
"""

import argparse
import time

import numpy as np
from _common import machine_line, make_data, publish, settle
from bench_ep import _kernel, _moved
from scipy.linalg import lapack

from gpc import _ep
from gpc.inference import get_method
from gpc.kernels import contract
from gpc.likelihoods import get_likelihood

# The timers of ep_timers.patch, in the order of gpc._ep.timers() (nested ones last).
STEPS = [("B = I + S K S formed (and t = K nu)", 0), ("dpotrf (double)", 1),
         ("L copied for dtrtri (or the weak sites' rows)", 2), ("dtrtri (double)", 3),
         ("negative sites' correction", 4),
         ("single-precision factorisation (spotrf + strtri)", 5),
         ("marginal means and variances", 6), ("log evidence", 7),
         ("site proposals (outside the linearised sweeps)", 8),
         ("chord model (slauum + scaling pass)", 9), ("linearised sweeps", 10),
         ("dlauum for B^{-1} (gradient)", 11)]
NESTED = [("  of which slauum", 12), ("  of which the scaling / squaring pass", 13),
          ("  of which the means (marginals)", 14)]


def profile(n, repeat):
    if not hasattr(_ep, "timers"):
        raise SystemExit("gpc._ep has no timers(): apply bench/ep_timers.patch and "
                         "reinstall first (see this script's docstring).")
    X, y01 = make_data(n)
    y = 2.0 * y01 - 1.0
    kernel = _kernel()
    moved = _moved(kernel)
    # The steps of bench_ep's evaluation (EvidenceObjective's call), timed apart.
    ep = get_method("ep")
    lik = get_likelihood("probit")
    K_cold = np.asfortranarray(kernel(X))
    cold = ep(K_cold, y, lik, updates="parallel")
    workspace = {}                            # kept across calls, as the objective does
    B_ref = np.eye(n) + 0.25 * K_cold           # bench_ep's reference matrix
    total = np.zeros(16)
    t_kernel = t_infer = t_contract = t_chol = 0.0
    for r in range(repeat + 1):               # the first round warms memory up
        # The unit, one dpotrf, is timed in every round too (the machine's speed
        # drifts by 10-20% over minutes): mean against mean.
        A = np.asfortranarray(B_ref)
        settle()
        t0 = time.perf_counter()
        lapack.dpotrf(A, lower=1, overwrite_a=1, clean=0)
        t_chol_r = time.perf_counter() - t0
        settle()
        _ep.timers(reset=True)
        t0 = time.perf_counter()
        K = np.asfortranarray(moved(X))
        t1 = time.perf_counter()
        res = ep(K, y, lik, init=cold.state, updates="parallel", workspace=workspace)
        t2 = time.perf_counter()
        contract(moved, X, res.dK, K=K, check_finite=False)
        t3 = time.perf_counter()
        if r:
            total += np.asarray(_ep.timers())
            t_kernel += t1 - t0
            t_infer += t2 - t1
            t_contract += t3 - t2
            t_chol += t_chol_r
    whole = (t_kernel + t_infer + t_contract) / t_chol
    t_lapack = sum(total[i] for i in (1, 3, 5, 11, 12)) / t_chol
    info = res.info
    head = (f"n = {n}: one warm evaluation, mean of {repeat}, in units of one dpotrf "
            f"({t_chol / repeat * 1e3:.1f} ms, timed between the runs); "
            f"{info['n_single_precision']} single- and "
            f"{info['n_sweeps'] + 1 - info['n_single_precision']} double-precision "
            f"factorisations, {info['n_linearised_sweeps']} linearised sweeps")
    intro = ("`cd bench && python profile_ep.py` on a build with "
             "`bench/ep_timers.patch` applied (timers around each step of the "
             "compiled EP loop; see the script). Same data, kernel and warm start "
             "as the EP speed table; means over the runs and their units, where "
             "that table takes the median of per-round ratios (the two differ by "
             "a few tenths: this machine's speed drifts).")
    rest = t_infer - sum(total[i] for _, i in STEPS)
    lines = ["# Where a warm-started parallel EP evaluation spends its time", "",
             intro, "", machine_line(), "", head, "",
             "| step | Choleskys |", "|---|---|",
             f"| kernel matrix | {t_kernel / t_chol:.2f} |"]
    lines += [f"| {name} | {total[i] / t_chol:.2f} |" for name, i in STEPS + NESTED]
    lines += [f"| rest of the EP call (sites and dK written) | "
              f"{rest / t_chol:.2f} |",
              f"| kernel contraction of dK | {t_contract / t_chol:.2f} |",
              f"| **whole evaluation** | **{whole:.2f}** |", "",
              f"LAPACK calls (dpotrf, dtrtri, the single-precision factorisation, "
              f"slauum, dlauum): {t_lapack:.2f} Choleskys; everything else: "
              f"{whole - t_lapack:.2f}."]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--write", metavar="PATH", help="also write the report there")
    args = ap.parse_args()
    publish(profile(args.n, args.repeat), args.write)


if __name__ == "__main__":
    main()
