"""Assumed density filtering (Bayesian online learning): the compiled sweep against
the rank-one BLAS work it replaces, measured in one run.

* n = 2000, 5000 on 8-D data (the EP benchmark's data and kernel), probit: one fresh
  ADF sweep over the examples in data order (``gpc._online.adf_sweep``), against the
  same sequence of rank-one updates done alone: ``dsyr`` on the leading t x t block
  of an n x n array for t = 1, ..., n (``gpc._online.rank_one_baseline``).  Target:
  ratio below 1.5.

Run standalone (``python bench/bench_adf.py``) or through ``bench/run_all.py``.
"""

import time

import numpy as np
from _common import make_data, settle, standalone
from bench_ep import _kernel

import gpc
from gpc import _online
from gpc.likelihoods import get_likelihood


def _blas_threads():
    """Thread counts of the loaded BLAS libraries (threadpoolctl), as text."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown"
    counts = sorted({i.get("num_threads") for i in threadpool_info()
                     if i.get("user_api") == "blas"})
    return "/".join(str(c) for c in counts) or "unknown"


def _best(reset, fn, repeat):
    """Best wall time of ``repeat`` calls of ``fn``, each after ``reset()`` (untimed)
    and :func:`settle`; and the last result."""
    best, out = np.inf, None
    for _ in range(repeat):
        reset()
        settle()
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def bench_speed(sizes, repeat, block):
    lik = get_likelihood("probit")
    rows = []
    for n in sizes:
        X, y01 = make_data(n)
        y = 2.0 * y01 - 1.0
        K = np.asfortranarray(_kernel()(X))
        order = np.arange(n, dtype=np.int32)
        alpha = np.zeros(n)
        C = np.zeros((n, n), order="F")
        logz = np.zeros(n)
        s = np.random.RandomState(0).randn(n) * 1e-3

        def reset():
            alpha[:] = 0.0
            C[:] = 0.0

        def sweep():
            return _online.adf_sweep(K, y, lik.code, lik.params, lik.quad_x,
                                     lik.quad_logw, alpha, C, order, 0, 0, logz, block)

        t_base, _ = _best(reset, lambda: _online.rank_one_baseline(C, s, n), repeat)
        t_adf, out = _best(reset, sweep, repeat)
        status, done, _, sum_logz, _ = out
        if status != _online.STATUS_OK or done != n:
            raise RuntimeError(f"ADF sweep failed at n={n}: status {status}")
        alpha = C = None  # release the n x n buffer before the next measurement
        # The whole user-level call: allocation, the sweep, C made symmetric.
        t_infer, res = _best(lambda: None, lambda: gpc.infer(
            K, y, method="adf", likelihood=lik, check_psd=False), repeat)
        if not np.isclose(res.log_evidence, sum_logz, rtol=1e-9):
            raise RuntimeError("gpc.infer and the sweep disagree")
        row = dict(n=n, t_adf=t_adf, t_base=t_base, t_infer=t_infer,
                   mean_logz=sum_logz / n)
        rows.append(row)
        print(f"  ADF n={n}: sweep {t_adf:.3g} s, gpc.infer {t_infer:.3g} s, rank-one "
              f"baseline {t_base:.3g} s, ratios {t_adf / t_base:.2f} / "
              f"{t_infer / t_base:.2f}", flush=True)
    return rows


def report(rows, block, repeat):
    lines = [
        "## ADF (Bayesian online learning): one sweep against its rank-one updates "
        "(8-D, the EP benchmark's kernel, probit)",
        "",
        "One fresh sweep over the n examples in data order (`gpc._online.adf_sweep`, "
        f"delayed updates in blocks of {block} examples, BLAS-3) against the same "
        "sequence of `dsyr` rank-one updates alone, t x t for t = 1..n on an n x n "
        f"array; best of {repeat}, all in this run. BLAS threads: {_blas_threads()}. "
        "`gpc.infer`: the whole call `gpc.infer(K, y, method=\"adf\")` (allocation "
        "of C, the sweep, C made symmetric; no PSD check). Target: ratio below 1.5.",
        "",
        "| n | ADF sweep (s) | `gpc.infer` (s) | dsyr t = 1..n (s) | ratio: sweep "
        "| ratio: `gpc.infer` | mean log p(y_j given earlier) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['n']} | {r['t_adf']:.3g} | {r['t_infer']:.3g} | "
                     f"{r['t_base']:.3g} | {r['t_adf'] / r['t_base']:.2f} | "
                     f"{r['t_infer'] / r['t_base']:.2f} | {r['mean_logz']:.4f} |")
    return "\n".join(lines) + "\n"


# The sizes of the quick mode (``--quick``: the main job's smoke run).
QUICK = {"adf_sizes": [2000]}


def add_arguments(ap):
    ap.add_argument("--adf-sizes", type=int, nargs="+", default=[2000, 5000])
    ap.add_argument("--adf-block", type=int, default=_online.DEFAULT_BLOCK,
                    help="examples per block of delayed updates")


def run(args):
    """Run the ADF speed benchmark; returns the Markdown section."""
    return report(bench_speed(args.adf_sizes, args.repeat, args.adf_block),
                  args.adf_block, args.repeat)


def main(argv=None):
    standalone(__doc__, add_arguments, run, argv, repeat=3, quick=QUICK)


if __name__ == "__main__":
    main()
