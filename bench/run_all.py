"""Run gpc's benchmarks and (with --write) refresh bench/RESULTS.md.

Usage::

    python bench/run_all.py --write bench/RESULTS.md
    python bench/run_all.py --only ep --ep-sizes 500       # a quick subset

Every figure is a ratio measured in the same run (gpc vs scikit-learn, gpc vs one
LAPACK Cholesky of the same size); run it on an otherwise idle machine.
"""

import argparse
import sys

import bench_adf
import bench_ep
import bench_laplace
import bench_pl
import bench_sparse
import bench_vb
from _common import machine_line, publish

SUITES = {"laplace": bench_laplace, "ep": bench_ep, "pl": bench_pl, "adf": bench_adf,
          "sparse": bench_sparse, "vb": bench_vb}


def main(argv=None):
    argv = sys.argv if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(SUITES), nargs="+", default=sorted(SUITES))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write", help="write the Markdown report to this file")
    for suite in SUITES.values():
        suite.add_arguments(ap)
    args = ap.parse_args(argv[1:])
    sections = ["# Benchmark results", "",
                f"Command: `python {' '.join(argv)}`  ", machine_line(), ""]
    for name in ["laplace", "ep", "pl", "adf", "sparse", "vb"]:
        if name in args.only:
            sections.append(SUITES[name].run(args))
    publish("\n".join(sections), args.write)


if __name__ == "__main__":
    main()
