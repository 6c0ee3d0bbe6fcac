"""Where a warm-started parallel EP evaluation spends its time (a diagnostic).

The speed table of ``bench_ep.py`` gives the whole evaluation in units of one LAPACK
Cholesky; this script splits it into its steps: the kernel matrix, each step of the
compiled EP loop (``gpc._site_loop.TIMER_STEPS``: the factorisations' LAPACK calls
and the passes between them, the chord model and its linearised sweeps, B^{-1} for the
gradient), and the kernel contraction of dK.  The EP steps are timed inside the
compiled loop, so it needs a build with the meson option ``timers``: from the
project root ::

    python -m pip install . -Csetup-args=-Dtimers=true
    cd bench && python profile_ep.py --n 2000 --write results/ep_profile.md
    cd .. && python -m pip install .

Same data, kernel, warm-start scenario (all length scales grow by 5% after a cold
fit) and steps as ``bench_ep.py``'s evaluation: the kernel matrix, the EP method as
evidence maximisation calls it (``gpc.inference.get_method("ep")``: no input
validation; a workspace kept across calls), the contraction (no finiteness passes).
"""

import argparse
import sys
import time

import numpy as np
from _common import command_line, machine_line, make_data, publish, settle
from bench_ep import _kernel, _moved
from scipy.linalg import lapack

from gpc import _site_loop
from gpc.inference import get_method
from gpc.kernels import contract
from gpc.likelihoods import get_likelihood

#: Steps counted as LAPACK calls in the summary line.
LAPACK_STEPS = ("dpotrf (double)", "dtrtri (double)",
                "single-precision factorisation (B formed, spotrf, strtri, L^{-1} "
                "copied)", "chord model (slauum + scaling pass)",
                "dlauum for B^{-1} (gradient)")


def profile(n, repeat):
    try:
        _site_loop.timers(reset=True)
    except RuntimeError as exc:
        raise SystemExit(f"{exc} (see this script's docstring).") from None
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
    total = dict.fromkeys(_site_loop.TIMER_STEPS, 0.0)
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
        _site_loop.timers(reset=True)
        t0 = time.perf_counter()
        K = np.asfortranarray(moved(X))
        t1 = time.perf_counter()
        res = ep(K, y, lik, init=cold.state, updates="parallel", workspace=workspace)
        t2 = time.perf_counter()
        contract(moved, X, res.dK, K=K, check_finite=False)
        t3 = time.perf_counter()
        if r:
            for name, seconds in _site_loop.timers().items():
                total[name] += seconds
            t_kernel += t1 - t0
            t_infer += t2 - t1
            t_contract += t3 - t2
            t_chol += t_chol_r
    whole = (t_kernel + t_infer + t_contract) / t_chol
    t_lapack = sum(total[name] for name in LAPACK_STEPS) / t_chol
    info = res.info
    head = (f"n = {n}: one warm evaluation, mean of {repeat}, in units of one dpotrf "
            f"({t_chol / repeat * 1e3:.1f} ms, timed between the runs); "
            f"{info['n_single_precision']} single- and "
            f"{info['n_sweeps'] + 1 - info['n_single_precision']} double-precision "
            f"factorisations, {info['n_linearised_sweeps']} linearised sweeps")
    intro = (f"`{command_line(sys.argv)}` on a build "
             "with the meson option `timers` (`python -m pip install . "
             "-Csetup-args=-Dtimers=true`: timers around each step of the compiled "
             "EP loop; see the script). Same data, kernel and warm start "
             "as the EP speed table; means over the runs and their units, where "
             "that table takes the median of per-round ratios (the two differ by "
             "a few tenths: this machine's speed drifts).")
    rest = t_infer - sum(total.values())
    lines = ["# Where a warm-started parallel EP evaluation spends its time", "",
             intro, "", machine_line(), "", head, "",
             "| step | Choleskys |", "|---|---|",
             f"| kernel matrix | {t_kernel / t_chol:.2f} |"]
    lines += [f"| {name} | {seconds / t_chol:.2f} |" for name, seconds in total.items()]
    lines += [f"| rest of the EP call (sites and dK written) | "
              f"{rest / t_chol:.2f} |",
              f"| kernel contraction of dK | {t_contract / t_chol:.2f} |",
              f"| **whole evaluation** | **{whole:.2f}** |", "",
              f"LAPACK calls (dpotrf, dtrtri, the single-precision factorisation, "
              f"the chord model, dlauum): {t_lapack:.2f} Choleskys; everything else: "
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
