"""The softmax predictive (``gpc.likelihoods.Softmax.predict``): the previous
Rao-Blackwellised rule (plain averages of the C integrands, one scalar loop,
rows normalised) against the current one (the same integrands in vectorised
loops, each class's average corrected by the sum-to-one control variate), in
speed and accuracy.

* speed: milliseconds per test point at C = 3, 5, 10 and 20 on ``--points``
  synthetic latent Gaussians (random means of scale 3, random covariances of
  scale 30), best of 3 rounds, one process, each rule with its default number
  of points;
* accuracy on data: the first fold's Laplace fit of
  ``bench/bench_multinomial.py`` on wine (C = 3) and digits (C = 10), up to 60
  test points: the largest difference from Monte Carlo averages of
  ``--mc-draws`` pseudo-random draws per point (``bench_multinomial.mc_averages``),
  beside the largest Monte Carlo standard error; both rules at their
  defaults, and the current rule at 2^12 .. 2^15 points;
* accuracy on a synthetic stress case: 20 random latent Gaussians per C
  (means of scale 3, covariances ``A A^T / C`` with ``A`` of scale 5.5:
  variances around 30 in every direction, as in the digits fit) at C = 3, 5,
  10 and 20: the largest difference from a 2^20-point reference (the current
  rule with two other point sets, seeds 1 and 2, averaged), beside the two
  references' largest difference.

The previous rule's compiled loop is kept below as Cython source and built on
first use by pyximport (Cython and a C compiler, which building gpc needs too).
Run it with one BLAS thread (``OPENBLAS_NUM_THREADS=1``).

Usage::

    python bench/bench_softmax_predict.py --write bench/results/softmax_predict.md
    python bench/bench_softmax_predict.py --quick
"""

import os
import sys
import tempfile
import time
import warnings

import numpy as np
from _common import add_paper_arguments, footer, paper_main, standardise
from bench_multinomial import MODELS, load, mc_averages
from scipy.special import ndtri
from scipy.stats import qmc
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import StratifiedKFold

from gpc.likelihoods import Softmax, softmax
from gpc.likelihoods._multinomial import (_default_points, _logistic_normal_table,
                                          _softmax_rule)

REPORT = "softmax_predict.md"

# The previous rule's loop over the points, as src_c/_softmax.pyx had it.
_PREVIOUS_PYX = '''
# cython: boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
from libc.math cimport exp, log, floor, sqrt
import numpy as np

cdef double PI2_3 = 3.289868133696453


cdef void _slice(const double[:, ::1] tv, const double[:, ::1] td, double r,
                 double* sv, double* sd) noexcept nogil:
    cdef Py_ssize_t nr = tv.shape[0], nx = tv.shape[1], j, k, i0
    cdef double fr = r * (nr - 1), t, a, b
    cdef double L[4]
    i0 = <Py_ssize_t>floor(fr) - 1
    if i0 < 0:
        i0 = 0
    if i0 > nr - 4:
        i0 = nr - 4
    t = fr - i0
    L[0] = -(t - 1.0) * (t - 2.0) * (t - 3.0) / 6.0
    L[1] = t * (t - 2.0) * (t - 3.0) / 2.0
    L[2] = -t * (t - 1.0) * (t - 3.0) / 2.0
    L[3] = t * (t - 1.0) * (t - 2.0) / 6.0
    for j in range(nx):
        a = 0.0
        b = 0.0
        for k in range(4):
            a += L[k] * tv[i0 + k, j]
            b += L[k] * td[i0 + k, j]
        sv[j] = a
        sd[j] = b


cdef inline double _lookup(const double* sv, const double* sd, Py_ssize_t nx,
                           double x, double X, double inv_h) noexcept nogil:
    cdef double fx, u, u2, u3
    cdef Py_ssize_t j
    if x <= -X:
        return 0.0
    if x >= X:
        return 1.0
    fx = (x + X) * inv_h
    j = <Py_ssize_t>fx
    if j > nx - 2:
        j = nx - 2
    u = fx - j
    u2 = u * u
    u3 = u2 * u
    return ((2.0 * u3 - 3.0 * u2 + 1.0) * sv[j] + (u3 - 2.0 * u2 + u) * sd[j]
            + (3.0 * u2 - 2.0 * u3) * sv[j + 1] + (u3 - u2) * sd[j + 1])


def rb_softmax(const double[:, ::1] mean, const double[:, :, ::1] R,
               const double[:, :, ::1] Q, const double[:, ::1] s2,
               const double[:, ::1] U, const double[:, ::1] table_v,
               const double[:, ::1] table_d, double X):
    cdef Py_ssize_t m = mean.shape[0], C = mean.shape[1], d = U.shape[1]
    cdef Py_ssize_t n = U.shape[0], nx = table_v.shape[1]
    cdef Py_ssize_t i, p, j, k, c, top
    cdef double inv_h = (nx - 1) / (2.0 * X), m1, m2, S, lse, lse_top, acc_sum
    cdef double gj, tj, x
    out = np.empty((m, C))
    cdef double[:, ::1] o = out
    cdef double[:, ::1] sv = np.empty((C, nx)), sd = np.empty((C, nx))
    cdef double[::1] g = np.empty(C), t = np.empty(C), e = np.empty(C)
    cdef double[::1] scale = np.empty(C), acc = np.empty(C)
    cdef const double* u
    with nogil:
        for i in range(m):
            for c in range(C):
                _slice(table_v, table_d, s2[i, c] / (s2[i, c] + PI2_3), &sv[c, 0],
                       &sd[c, 0])
                scale[c] = 1.0 / sqrt(s2[i, c] + PI2_3)
                acc[c] = 0.0
            for p in range(n):
                u = &U[p, 0]
                top = 0
                for j in range(C):
                    gj = mean[i, j]
                    tj = 0.0
                    for k in range(d):
                        gj = gj + R[i, j, k] * u[k]
                        tj = tj + Q[i, j, k] * u[k]
                    g[j] = gj
                    t[j] = tj
                    if gj > g[top]:
                        top = j
                m1 = g[top]
                S = 0.0
                for j in range(C):
                    e[j] = exp(g[j] - m1)
                    S = S + e[j]
                m2 = g[1] if top == 0 else g[0]
                for j in range(C):
                    if j != top and g[j] > m2:
                        m2 = g[j]
                lse_top = 0.0
                for j in range(C):
                    if j != top:
                        lse_top = lse_top + exp(g[j] - m2)
                lse_top = m2 + log(lse_top)
                for c in range(C):
                    if c == top:
                        lse = lse_top
                    else:
                        lse = m1 + log(S - e[c])
                    x = (g[c] - t[c] - lse) * scale[c]
                    acc[c] += _lookup(&sv[c, 0], &sd[c, 0], nx, x, X, inv_h)
            acc_sum = 0.0
            for c in range(C):
                acc_sum = acc_sum + acc[c]
            for c in range(C):
                o[i, c] = acc[c] / acc_sum
    return out
'''

_PREVIOUS = []


def _previous_loop():
    """The previous rule's compiled loop, built once per process by pyximport."""
    if not _PREVIOUS:
        import pyximport
        build = tempfile.mkdtemp(prefix="softmax_previous_")
        with open(os.path.join(build, "_softmax_previous.pyx"), "w") as fh:
            fh.write(_PREVIOUS_PYX)
        pyximport.install(build_dir=build, language_level=3)
        sys.path.insert(0, build)
        import _softmax_previous
        _PREVIOUS.append(_softmax_previous)
    return _PREVIOUS[0]


def _previous_points(C):
    """The previous default numbers of points."""
    return 1 if C == 2 else 1 << (10 if C == 3 else 11 if C == 4 else 12 if C <= 7
                                  else 14)


def previous_predict(self, mean, cov):
    """The previous ``Softmax.predict``: the same integrands h_c as the current
    rule, averaged over 2^10 .. 2^14 scrambled Sobol' points (seed 0) in one
    scalar loop, the C averages divided by their sum."""
    mean = np.asarray(mean, dtype=np.float64)
    cov = np.asarray(cov, dtype=np.float64)
    C = mean.shape[1]
    basis = np.linalg.qr(np.eye(C) - 1.0 / C)[0][:, :C - 1]
    w, V = np.linalg.eigh(basis.T @ cov @ basis)
    w, V = w[:, ::-1], basis @ V[:, :, ::-1]
    w = np.maximum(w, np.maximum(1e-13 * w[:, :1], 1e-200))
    R = V * np.sqrt(w)[:, None, :]
    QV = V / np.sqrt(w)[:, None, :]
    s2 = 1.0 / np.einsum("ick,ick->ic", QV, QV)
    Q = QV * s2[:, :, None]
    n = self.n_points or _previous_points(C)
    Z = np.ascontiguousarray(_points(C - 1, n, 0).T)
    tv, td, X = _logistic_normal_table()
    return _previous_loop().rb_softmax(
        np.ascontiguousarray(mean), np.ascontiguousarray(R), np.ascontiguousarray(Q),
        np.ascontiguousarray(s2), Z, tv, td, X)


_POINTS = {}


def _points(d, n, seed):
    """n scrambled Sobol' points (this seed) mapped to N(0, I_d), one column each."""
    key = (d, n, seed)
    if key not in _POINTS:
        u = qmc.Sobol(d, scramble=True, seed=seed).random_base2(int(n).bit_length() - 1)
        _POINTS[key] = np.ascontiguousarray(ndtri(u).T)
    return _POINTS[key]


def add_arguments(ap):
    add_paper_arguments(ap, "10 points per C, 2e5 Monte Carlo draws, 2^16-point "
                        "references")
    ap.add_argument("--points", type=int, default=50)
    ap.add_argument("--mc-draws", type=int, default=8_000_000)


def _time(fn, mean, cov):
    fn(mean[:1], cov[:1])                               # tables, point sets, builds
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        fn(mean, cov)
        best = min(best, time.perf_counter() - t0)
    return 1e3 * best / len(mean)


def _speed_lines(n):
    lines = [f"Milliseconds per test point (best of 3 rounds over {n} random latent "
             "Gaussians, mean scale 3, covariance scale 30):", "",
             "| C | previous rule | points | current rule | points | speed-up |",
             "|---|---|---|---|---|---|"]
    rng = np.random.default_rng(0)
    new = Softmax()
    for C in (3, 5, 10, 20):
        mean = 3 * rng.normal(size=(n, C))
        A = rng.normal(size=(n, C, C)) * 30
        cov = A @ A.transpose(0, 2, 1) / C
        t_old = _time(lambda mu, S: previous_predict(new, mu, S), mean, cov)
        t_new = _time(new.predict, mean, cov)
        lines.append(f"| {C} | {t_old:.3f} | 2^{_previous_points(C).bit_length() - 1} | "
                     f"{t_new:.3f} | 2^{_default_points(C).bit_length() - 1} | "
                     f"{t_old / t_new:.1f} |")
    return lines


def _fit(name):
    X, y = load(name)
    tr, te = next(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    Xtr, Xte = standardise(X[tr], X[te])
    clf = MODELS["gpc multinomial"](np.unique(y).size, X.shape[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(Xtr, y[tr])
    return clf, Xte


def _data_lines(draws):
    sweep = (12, 13, 14, 15)
    lines = [f"Largest difference from {draws:.0e}-draw Monte Carlo averages at up to "
             "60 test points of the first fold's multinomial Laplace fit (each rule at "
             "its default number of points; then the current rule at 2^12 .. 2^15):",
             "", "| data | C | previous rule | current rule | "
             + " | ".join(f"2^{k}" for k in sweep) + " | largest MC standard error |",
             "|---|---|---|---|" + "---|" * len(sweep) + "---|"]
    for name in ("wine", "digits"):
        clf, Xte = _fit(name)
        mean, cov = clf.latent_mean_and_variance(Xte[:60])
        mc, se = mc_averages(mean, cov, draws, np.random.default_rng(0))
        old = np.abs(previous_predict(Softmax(), mean, cov) - mc).max()
        new = np.abs(clf.predict_proba(Xte[:60]) - mc).max()
        errs = [np.abs(_softmax_rule(mean, cov, _points(mean.shape[1] - 1, 1 << k, 0))
                       - mc).max() for k in sweep]
        lines.append(f"| {name} | {mean.shape[1]} | {old:.1e} | {new:.1e} | "
                     + " | ".join(f"{e:.1e}" for e in errs) + f" | {se.max():.1e} |")
    return lines


def _stress_lines(ref_bits):
    sweep = (11, 12, 13, 14, 15)
    lines = [f"Synthetic stress case: largest difference from a 2^{ref_bits}-point "
             "reference at 20 random latent Gaussians per C (mean scale 3, covariance "
             "scale 5.5: variances around 30), each rule at its default number of "
             "points, then the current rule at 2^11 .. 2^15:", "",
             "| C | previous rule | current rule | " + " | ".join(f"2^{k}" for k in sweep)
             + " | reference's seeds differ by |",
             "|---|---|---|" + "---|" * len(sweep) + "---|"]
    rng = np.random.default_rng(1)
    for C in (3, 5, 10, 20):
        mean = 3 * rng.normal(size=(20, C))
        A = rng.normal(size=(20, C, C)) * 5.5
        cov = A @ A.transpose(0, 2, 1) / C
        refs = [_softmax_rule(mean, cov, _points(C - 1, 1 << ref_bits, seed))
                for seed in (1, 2)]
        ref = 0.5 * (refs[0] + refs[1])
        old = np.abs(previous_predict(Softmax(), mean, cov) - ref).max()
        new = np.abs(Softmax().predict(mean, cov) - ref).max()
        errs = [np.abs(_softmax_rule(mean, cov, _points(C - 1, 1 << k, 0)) - ref).max()
                for k in sweep]
        lines.append(f"| {C} | {old:.1e} | {new:.1e} | "
                     + " | ".join(f"{e:.1e}" for e in errs)
                     + f" | {np.abs(refs[0] - refs[1]).max():.1e} |")
    return lines


def run(args, argv=None):
    t0 = time.perf_counter()
    n = 10 if args.quick else args.points
    draws = min(args.mc_draws, 200_000) if args.quick else args.mc_draws
    lines = ["## The softmax predictive: the previous Rao-Blackwellised rule against "
             "the current one (vectorised, with a control variate)", ""]
    lines += _speed_lines(n) + [""]
    lines += _data_lines(draws) + [""]
    lines += _stress_lines(16 if args.quick else 20)
    return "\n".join(lines + footer(argv, t0))


if __name__ == "__main__":
    paper_main(__doc__, add_arguments, run)
