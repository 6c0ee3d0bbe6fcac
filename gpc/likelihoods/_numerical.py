"""The Python path of a likelihood that gives only its log density: its derivatives
in f by finite differences and its Gaussian integrals by quadrature, both vectorised
over the entries and both from :meth:`~gpc.likelihoods.Likelihood.log_lik` alone.

Derivatives.  Central differences on the seven points ``f + k h``, k = -3 .. 3,
with the weights that are exact for polynomials of degree 6 (solved for below, not
tabulated): truncation errors of order h^6 (first and second derivatives) and h^4
(third), rounding errors of order eps |log p| / h^j.  With the default ``h = 1e-2``
on a likelihood whose log density varies on the scale 1 in f (every link of a
classifier), that is about 1e-12, 1e-11 and 1e-8 for the three derivatives.

Gaussian integrals.  ``Z = int p(y | f) N(f; m, v) df`` is computed by the
trapezoidal rule on a grid ``f = c + s t``, ``t`` in [-T, T] with step ``h``,
centred on the tilted law ``p(y | f) N(f; m, v) / Z``:

1. The centre c and scale s start at the prior's (m, sqrt v), or where the
   prior's grid carries weight at its ends (a tilted law far out in the prior's
   tail, e.g. a probit label with y m << 0) at the mode and curvature of the
   tilted law (Newton's method), and move to the tilted mean and standard
   deviation that the grid gives, until they settle.  The grid is widened while its end points carry
   weight (tilted laws with exponential tails).
2. The step is then halved until log Z and the tilted mean and variance agree
   between two steps to about 1e-13 relative (the trapezoidal rule converges
   faster than any power of h for smooth integrands that vanish at both ends, so
   this takes one or two halvings unless p(y | f) changes on a scale much finer
   than s, as a probit link does for a broad prior: the halving finds that scale
   by itself).

The derivatives in m follow from the tilted moments, ``d log Z / dm = (E_t[f] -
m) / v`` and ``d^2 log Z / dm^2 = (Var_t[f] - v) / v^2``, which loses about
eps / v to cancellation; below ``v = 1e-2`` they come instead from ``E_t[d log p /
df]`` and ``E_t[d^2 log p / df^2] + Var_t[d log p / df]`` (the derivatives in f by
differences).  ``v == 0`` gives the point values.
The derivative in the first likelihood parameter is ``E_t[d log p / d par]``, the
inner derivative by central differences.  A log density with jumps (a step) is
integrated too, with an error of the order of the final grid step instead.
"""

import math

import numpy as np

#: Half-width of the grid in units of the scale s (the tilted law's standard
#: deviation once settled), at first and at most, and the largest weight left at
#: its ends (a Gaussian tilted law has weights exp(-T^2 / 2) = 1e-56 there).
_T, _T_MAX, _TAIL = 16.0, 256.0, 1e-20
#: First step (in units of s), smallest step, and the relative agreement sought.
_H0, _H_MIN, _RTOL = 0.25, 2.0 ** -14, 1e-13
#: Prior variances below this take the derivatives in m from those in f.
_V_SMALL = 1e-2
#: Steps of the search for the centre and scale.
_LOCATE_STEPS = 30


def _central_weights(order, half=3):
    """Weights w_k with sum_k w_k g(k) = g^(order)(0) for polynomials of degree
    2 half, k = -half .. half (the Taylor conditions, solved)."""
    k = np.arange(-half, half + 1, dtype=np.float64)
    A = np.vander(k, increasing=True).T
    b = np.zeros(k.size)
    b[order] = math.factorial(order)
    return np.linalg.solve(A, b)


_OFFSETS = np.arange(-3.0, 4.0)
_WEIGHTS = np.stack([_central_weights(j) for j in (1, 2, 3)])   # (3, 7)


def derivatives(likelihood, y, f, h=1e-2):
    """log p(y | f) and its first three derivatives in f (1-D arrays y, f)."""
    pts = f[:, None] + h * _OFFSETS
    lp = np.asarray(likelihood.log_lik(y[:, None], pts), dtype=np.float64)
    lp = np.broadcast_to(lp, pts.shape)
    d = lp @ _WEIGHTS.T / (h ** np.arange(1, 4))
    d[~np.isfinite(lp).all(axis=1)] = np.nan
    return lp[:, 3].copy(), d[:, 0], d[:, 1], d[:, 2]


def _tilted(likelihood, y, m, v, c, s, h, half=_T):
    """On the grid f = c + s t, t = -half .. half in steps h: log Z, the tilted
    mean of f - m and variance of f, the grid f, the normalised weights and the
    larger weight at the grid's two ends."""
    t = np.arange(-half, half + 0.5 * h, h)
    f = c[:, None] + s[:, None] * t
    lp = np.asarray(likelihood.log_lik(y[:, None], f), dtype=np.float64)
    z = ((c - m) / np.sqrt(v))[:, None] + (s / np.sqrt(v))[:, None] * t
    a = np.broadcast_to(lp, f.shape) - 0.5 * z * z
    with np.errstate(invalid="ignore", divide="ignore"):
        top = np.max(a, axis=1)
        w = np.exp(a - top[:, None])
        total = w.sum(axis=1)
        w /= total[:, None]
        log_z = top + np.log(total * h * s) - 0.5 * np.log(2.0 * np.pi * v)
        et = w @ t
        vt = np.einsum("ij,ij->i", w, (t[None, :] - et[:, None]) ** 2)
    return log_z, (c - m) + s * et, s * s * vt, f, w, np.maximum(w[:, 0], w[:, -1])


def _log_tilted(likelihood, y, m, v, f):
    """log p(y | f) - (f - m)^2 / (2 v) and its first two derivatives in f."""
    lp, d1, d2, _ = derivatives(likelihood, y, f)
    return lp - 0.5 * (f - m) ** 2 / v, d1 - (f - m) / v, d2 - 1.0 / v


def _mode(likelihood, y, m, v):
    """The tilted law's mode by Newton's method with halved steps, and its scale
    1 / sqrt(-curvature) there (sqrt v where it is not concave)."""
    f = m.copy()
    g, g1, g2 = _log_tilted(likelihood, y, m, v, f)
    for _ in range(_LOCATE_STEPS):
        step = np.where(g2 < 0, -g1 / np.where(g2 < 0, g2, -1.0), 0.0)
        step[~np.isfinite(step)] = 0.0
        for _ in range(_LOCATE_STEPS):
            new = _log_tilted(likelihood, y, m, v, f + step)
            worse = ~(new[0] >= g - 1e-12 * np.abs(g))
            if not worse.any():
                break
            step[worse] *= 0.5
        small = np.abs(step) <= 1e-10 * (1.0 + np.abs(f))
        ok = ~worse
        f = np.where(ok, f + step, f)
        g, g1, g2 = (np.where(ok, a, b) for a, b in zip(new, (g, g1, g2)))
        if small.all():
            break
    scale = np.where(g2 < 0, 1.0 / np.sqrt(np.where(g2 < 0, -g2, 1.0)), np.sqrt(v))
    return f, np.minimum(scale, np.sqrt(v))


def _locate(likelihood, y, m, v):
    """Centre and scale of the tilted law (step 1 of the module's notes): moved
    from the prior's, or from the mode and curvature where the prior's grid
    misses the tilted law, to its mean and standard deviation."""
    c, s = m.copy(), np.sqrt(v)
    res = _tilted(likelihood, y, m, v, c, s, _H0)
    lost = ~(res[5] <= _TAIL) | ~np.isfinite(res[0])
    if lost.any():
        c[lost], s[lost] = _mode(likelihood, y[lost], m[lost], v[lost])
        res = _tilted(likelihood, y, m, v, c, s, _H0)
    for _ in range(_LOCATE_STEPS):
        mean, sd = m + res[1], np.sqrt(res[2])
        ok = np.isfinite(mean) & (sd > 0)
        mean, sd = np.where(ok, mean, c), np.where(ok, sd, s)
        settled = (np.abs(mean - c) <= 0.1 * s) & (np.abs(np.log(sd / s)) <= 0.1)
        c, s = mean, sd
        if settled.all():
            break
        res = _tilted(likelihood, y, m, v, c, s, _H0)
    return c, s


def _param_derivative(likelihood, y, f, w):
    """E_t[d log p / d par[0]] on the grid (zero without parameters)."""
    if len(likelihood.param_names) == 0:
        return np.zeros(y.shape[0])
    p = likelihood.params
    lo, hi = likelihood.param_bounds[0]
    step = 1e-6 * max(1.0, abs(p[0]))
    up, down = p.copy(), p.copy()
    up[0], down[0] = min(p[0] + step, hi), max(p[0] - step, lo)
    if up[0] == down[0]:
        return np.zeros(y.shape[0])
    with np.errstate(invalid="ignore"):
        dlp = (np.asarray(likelihood.with_params(up).log_lik(y[:, None], f))
               - np.asarray(likelihood.with_params(down).log_lik(y[:, None], f)))
        return np.sum(np.where(w > 0, dlp * w, 0.0), axis=1) / (up[0] - down[0])


def _by_derivatives(likelihood, y, f, w):
    """d log Z / dm = E_t[d log p / df] and d^2 log Z / dm^2 = E_t[d^2 log p /
    df^2] + Var_t[d log p / df] on the grid f with tilted weights w."""
    _, d1, d2, _ = derivatives(likelihood, np.repeat(y, f.shape[1]), f.reshape(-1))
    d1, d2 = d1.reshape(f.shape), d2.reshape(f.shape)
    e1 = np.sum(np.where(w > 0, w * d1, 0.0), axis=1)
    e2 = np.sum(np.where(w > 0, w * (d2 + (d1 - e1[:, None]) ** 2), 0.0), axis=1)
    return e1, e2


def _half_widths(likelihood, y, m, v, c, s):
    """Per entry, the grid's half-width: doubled from _T while the weights at
    the ends of the coarse grid exceed _TAIL (exponential tails); and log Z and
    the tilted moments on that coarse grid (rows of a (3, n) array)."""
    half = np.full(y.shape[0], _T)
    coarse = np.empty((3, y.shape[0]))
    todo = np.arange(y.shape[0])
    while todo.size:
        res = _tilted(likelihood, y[todo], m[todo], v[todo], c[todo], s[todo], _H0,
                      half[todo[0]])
        wide = (res[5] > _TAIL) & (half[todo] < _T_MAX)
        coarse[:, todo[~wide]] = [a[~wide] for a in res[:3]]
        todo = todo[wide]
        half[todo] *= 2.0
    return half, coarse


def _store(likelihood, out, rows, y, m, v, res):
    """Write the moments of the converged entries ``rows`` from their grid."""
    log_z, dm, var, f, w, _ = res
    out[0, rows] = log_z
    out[1, rows] = dm / v
    out[2, rows] = (var - v) / (v * v)
    narrow = v < _V_SMALL
    if narrow.any():
        out[1:3, rows[narrow]] = _by_derivatives(likelihood, y[narrow], f[narrow],
                                                 w[narrow])
    out[3, rows] = _param_derivative(likelihood, y, f, w)


def _refine(likelihood, out, rows, y, m, v, c, s, half, prev):
    """Halve the step from _H0, where log Z and the tilted moments are ``prev``,
    until each entry's settle (step 2 of the module's notes), storing each entry
    once they have."""
    h = _H0
    act = np.arange(y.shape[0])
    while act.size:
        h *= 0.5
        cur = _tilted(likelihood, y[act], m[act], v[act], c[act], s[act], h, half)
        done = ((np.abs(cur[0] - prev[0]) <= _RTOL * (np.abs(cur[0]) + 1.0))
                & (np.abs(cur[1] - prev[1]) <= _RTOL * (np.abs(cur[1]) + s[act]))
                & (np.abs(cur[2] - prev[2]) <= _RTOL * cur[2]))
        done |= ~np.isfinite(cur[0]) | (h <= _H_MIN)
        k = act[done]
        _store(likelihood, out, rows[k], y[k], m[k], v[k], [a[done] for a in cur])
        prev = [a[~done] for a in cur[:3]]
        act = act[~done]


def gauss_moments(likelihood, y, m, v):
    """log Z, d log Z / dm, d^2 log Z / dm^2 and d log Z / d par[0] for 1-D
    arrays y, m, v (the module's notes)."""
    out = np.full((4, y.shape[0]), np.nan)
    point = v == 0
    if point.any():
        lp, d1, d2, _ = derivatives(likelihood, y[point], m[point])
        out[:3, point] = lp, d1, d2
        out[3, point] = _param_derivative(likelihood, y[point], m[point][:, None],
                                          np.ones((point.sum(), 1)))
    rows = np.flatnonzero(~point)
    if not rows.size:
        return out
    y, m, v = y[rows], m[rows], v[rows]
    c, s = _locate(likelihood, y, m, v)
    half, coarse = _half_widths(likelihood, y, m, v, c, s)
    for width in np.unique(half):
        k = half == width
        _refine(likelihood, out, rows[k], y[k], m[k], v[k], c[k], s[k], width,
                coarse[:, k])
    return out
