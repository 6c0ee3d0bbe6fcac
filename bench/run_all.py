"""Run gpc's benchmark suite: the speed benchmarks and the papers' reproductions.

Usage::

    python bench/run_all.py --quick                    # the main job: every suite's
                                                       # quick mode, a few minutes
    python bench/run_all.py --write bench/RESULTS.md   # full mode (hours)
    python bench/run_all.py --only ep paper_vb         # a subset, full mode

Speed suites (``bench_*.py``) measure ratios in one run (gpc vs scikit-learn, gpc vs
one LAPACK Cholesky of the same size): run them on an otherwise idle machine.  Paper
suites (``paper_*.py``) reproduce the papers' tables and figures; their
independent tasks (cross-validation folds, settings) run in ``--jobs`` joblib
workers with one BLAS thread each.

Both modes print their progress, not the report.  The quick mode writes its report
and figures to ``bench/results/quick/`` and prints the report's path.  The full mode
writes the figures to ``bench/results/`` and the report to ``--write`` (printing it
without ``--write``); a paper suite left out with ``--only`` is represented by its
latest full report (the suite's ``REPORT`` file in ``bench/results/``, written
whenever the full mode runs it), so that ``bench/RESULTS.md`` always holds every table.
The report's links resolve from the folder of its file.
"""

import argparse
import datetime
import os
import sys
import time

import bench_adf
import bench_defaults
import bench_ep
import bench_gpy_backend
import bench_laplace
import bench_load
import bench_multinomial
import bench_overhead
import bench_pl
import bench_real_data
import bench_sparse
import bench_sparse_learning
import bench_speed
import bench_tiles
import bench_vb
import pairs_cv
import paper_evidence
import paper_meanfield
import paper_pl
import paper_sparse
import paper_vb
from _common import (BENCH, RESULTS, broken_links, command_line, machine_line,
                     publish, relink)

SPEED = {"defaults": bench_defaults, "laplace": bench_laplace, "ep": bench_ep,
         "pl": bench_pl, "adf": bench_adf, "sparse": bench_sparse,
         "sparse_learning": bench_sparse_learning, "vb": bench_vb, "speed": bench_speed,
         "real_data": bench_real_data, "load": bench_load,
         "overhead": bench_overhead, "tiles": bench_tiles}
PAPERS = {"paper_pl": paper_pl, "paper_meanfield": paper_meanfield,
          "paper_vb": paper_vb, "paper_sparse": paper_sparse,
          "paper_evidence": paper_evidence, "pairs_cv": pairs_cv,
          "multinomial": bench_multinomial, "gpy_backend": bench_gpy_backend}
ORDER = list(SPEED) + list(PAPERS)


def _paper_report(name, module, quick, out, jobs):
    """Run a paper suite in this process with its own options; its Markdown."""
    ap = argparse.ArgumentParser()
    module.add_arguments(ap)
    argv = ["--out", out, "--jobs", str(jobs)] + (["--quick"] if quick else [])
    args = ap.parse_args(argv)
    return module.run(args, [f"bench/{module.__name__}.py"] + argv)


def _demote(markdown):
    """Headings one level down, so that a suite's report nests in the whole."""
    return "\n".join("#" + line if line.startswith("#") else line
                     for line in markdown.splitlines())


def main(argv=None):
    argv = sys.argv if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=ORDER, nargs="+", default=ORDER)
    ap.add_argument("--quick", action="store_true",
                    help="every suite's quick mode; report in bench/results/quick/")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="joblib workers of the paper suites (default: all cores)")
    ap.add_argument("--write", help="write the Markdown report to this file (default "
                    "with --quick: bench/results/quick/REPORT.md)")
    for suite in SPEED.values():
        suite.add_arguments(ap)
    args = ap.parse_args(argv[1:])
    if args.quick:
        for suite in SPEED.values():
            ap.set_defaults(**getattr(suite, "QUICK", {}))
        ap.set_defaults(repeat=2)
        args = ap.parse_args(argv[1:])
    out = os.path.join(RESULTS, "quick") if args.quick else RESULTS
    write = args.write or (os.path.join(out, "REPORT.md") if args.quick else None)
    args.out = out
    t0 = time.perf_counter()
    mode = "quick mode (smaller sizes, fewer folds and samples)" if args.quick \
        else "full mode"
    sections = ["# Benchmark results", "",
                f"{datetime.date.today().isoformat()}, {mode}. Command: "
                f"`{command_line(argv)}`  ", machine_line(), ""]
    todo = [name for name in ORDER if name in args.only]
    for name in ORDER:
        if name in args.only:
            print(f"== {name} ({todo.index(name) + 1} of {len(todo)}, "
                  f"{time.perf_counter() - t0:.0f} s so far)", flush=True)
        if name in SPEED and name in args.only:
            sections.append(SPEED[name].run(args))
        elif name in PAPERS:
            saved = os.path.join(RESULTS, PAPERS[name].REPORT)
            if name in args.only:
                text = _paper_report(name, PAPERS[name], args.quick, out, args.jobs)
                if not args.quick:
                    publish(text, saved, echo=False)
                    print(f"  report: {os.path.relpath(saved)}", flush=True)
            elif not args.quick and os.path.exists(saved):
                with open(saved) as fh:  # its links resolve from bench/results
                    text = relink(fh.read(), RESULTS, BENCH)
            else:
                continue
            sections.append(_demote(text))
    seconds = time.perf_counter() - t0
    sections += ["", f"All suites of this run: {seconds:.0f} s.", ""]
    # The report goes to its file; printed only when there is no file to point to.
    publish("\n".join(sections), write, echo=not write)
    print(f"\nAll suites done in {seconds:.0f} s.")
    if write:
        print(f"Report: {os.path.relpath(write)} (figures in {os.path.relpath(out)}/)")
        for target in broken_links(write):
            print(f"  broken link in the report: {target}")


if __name__ == "__main__":
    main()
