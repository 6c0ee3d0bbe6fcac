"""L-BFGS-B whose own algebra stays in the calling thread.

SciPy's L-BFGS-B solves its small triangular systems with LAPACK's ``dtrtrs``,
which OpenBLAS shares out to its worker threads whatever the size; on a machine
whose cores are busy with other processes, each of those calls waits for threads
that are not scheduled, and a hyperparameter fit that is mostly such waits slows
down four- to fivefold.  :func:`minimize` is the same algorithm: the
generalised Cauchy point and the direct primal subspace step of Byrd, Lu,
Nocedal & Zhu (1995), the projection of that step of Morales & Nocedal (2011),
and the line search of More & Thuente (1994) with L-BFGS-B's constants.

The numeric steps are compiled (``gpc._lbfgsb_steps``): the limited-memory
matrix and its update, the generalised Cauchy point, the subspace step with its
projection, and the products, trial points and norms of the driver.  They are C
loops in the calling thread; their one BLAS routine is ``ddot`` on pieces of at
most 4096 entries (OpenBLAS shares it out from 10000), and their 2m x 2m systems (m = 10 correction pairs by default) are
solved by an LU factorisation written out in C rather than by LAPACK.  This
module keeps the driver, the scalar logic of the line search and the stopping
tests.
"""

import math

import numpy as np
from scipy.optimize import LbfgsInvHessProduct, OptimizeResult

from ._lbfgsb_steps import (Memory, direction, dot, longest_step, projected_norm,
                            trial_point)

_FTOL_LS, _GTOL_LS, _XTOL_LS = 1e-3, 0.9, 0.1     # L-BFGS-B's line search
_PGTOL_MESSAGE = "CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL"


def minimize(fun, x0, bounds=None, *, maxcor=10, ftol=2.2204460492503131e-09,
             gtol=1e-5, maxiter=15000, maxfun=15000, maxls=20, callback=None):
    """Minimise ``fun`` within bounds by L-BFGS-B.

    The options and the result are those of ``scipy.optimize.minimize(fun, x0,
    jac=True, method="L-BFGS-B", bounds=bounds, options=...)``, and the
    iterates are the same up to rounding.  The differences: no call wakes BLAS
    or LAPACK threads (see the module's docstring), a line search that ends
    above its start counts as failed rather than as a step, and ``hess_inv``
    (below).

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (f, g)``: the objective and its gradient at a float64 array.
        A value or gradient that is not finite ends the line search as a
        failed one.
    x0 : array-like of shape (n,)
        The start; clipped into the bounds.
    bounds : array-like of shape (n, 2), optional
        ``(low, high)`` per variable; infinite entries for none.
    maxcor : int, default=10
        The number of correction pairs the quasi-Newton model keeps.
    ftol : float, default=2.22e-9
        Stop when ``(f_k - f_{k+1}) / max(|f_k|, |f_{k+1}|, 1) <= ftol``.
    gtol : float, default=1e-5
        Stop when the largest absolute projected gradient is at most ``gtol``.
    maxiter, maxfun : int, default=15000
        Limits on the iterations and on the evaluations of ``fun`` (checked
        after each iteration).
    maxls : int, default=20
        The most evaluations of one line search.
    callback : callable, optional
        Called after each iteration with an ``OptimizeResult`` holding the
        iterate ``x`` and its value ``fun``.

    Returns
    -------
    scipy.optimize.OptimizeResult
        ``x``, ``fun``, ``jac``, ``nit``, ``nfev``, ``status`` (0 converged, 1 a
        limit reached, 2 an abnormal stop), ``success``, ``message`` and
        ``hess_inv``, the quasi-Newton inverse Hessian as a
        ``scipy.optimize.LbfgsInvHessProduct`` of every pair in memory, oldest
        first (SciPy's leaves out the newest pair, and after ``maxcor``
        updates takes them in the order of its circular store).

    Examples
    --------
    >>> import numpy as np
    >>> from gpc._lbfgsb import minimize
    >>> fun = lambda x: (float(((x - 2.0) ** 2).sum()), 2.0 * (x - 2.0))
    >>> res = minimize(fun, np.zeros(2), bounds=[(-1.0, 1.0), (-5.0, 5.0)])
    >>> np.round(res.x, 6).tolist(), res.status
    ([1.0, 2.0], 0)
    """
    x = np.asarray(x0, dtype=np.float64).ravel().copy()
    lo, hi = _bounds(bounds, x.size)
    np.clip(x, lo, hi, out=x)
    constrained = bool(np.isfinite(lo).any() or np.isfinite(hi).any())
    boxed = bool(np.isfinite(lo).all() and np.isfinite(hi).all())
    counter = _Counted(fun)
    f, g = counter(x)
    memory, nit, status, message = Memory(x.size, int(maxcor)), 0, None, None
    if not (np.isfinite(f) and np.isfinite(g).all()):
        status, message = 2, "ABNORMAL: the objective is not finite at the start"
    elif projected_norm(x, g, lo, hi) <= gtol:
        status, message = 0, _PGTOL_MESSAGE
    while status is None:
        try:
            d = direction(x, g, lo, hi, memory, constrained)
        except np.linalg.LinAlgError:       # a singular subspace system
            memory.reset()
            continue
        found = _line_search(counter, x, f, g, d, (lo, hi), _first_step(
            x, d, lo, hi, nit, constrained, boxed), maxls)
        if found is None:                   # no step: forget the curvature
            if memory.k == 0:
                status, message = 2, "ABNORMAL: the line search found no lower point"
            memory.reset()
            continue
        x_new, f_new, g_new, stp = found
        nit += 1
        status, message = _stopped(f, f_new, x_new, g_new, lo, hi, ftol, gtol)
        if status is None:
            memory.update(x_new - x, g_new - g, -stp * dot(g, d))
        x, f, g = x_new, f_new, g_new
        if callback is not None:
            callback(OptimizeResult(x=x.copy(), fun=f))
        if status is None and (nit >= maxiter or counter.n > maxfun):
            status, message = 1, "STOP: TOTAL NO. OF ITERATIONS OR EVALUATIONS " \
                                 "REACHED LIMIT"
    return OptimizeResult(x=x, fun=f, jac=g, nit=nit, nfev=counter.n, njev=counter.n,
                          status=status, success=status == 0, message=message,
                          hess_inv=LbfgsInvHessProduct(*memory.pairs()))


def _bounds(bounds, n):
    """``(low, high)`` arrays of the bounds (None entries: infinite)."""
    if bounds is None:
        return np.full(n, -np.inf), np.full(n, np.inf)
    b = np.array([[np.nan if v is None else v for v in row] for row in bounds],
                 dtype=np.float64)
    if b.shape != (n, 2):
        raise ValueError(f"bounds must have shape ({n}, 2), got {b.shape}.")
    lo, hi = b[:, 0].copy(), b[:, 1].copy()
    lo[np.isnan(lo)], hi[np.isnan(hi)] = -np.inf, np.inf
    if (lo > hi).any():
        raise ValueError("A lower bound is greater than its upper bound.")
    return lo, hi


class _Counted:
    """``fun`` as ``(float, float64 array)``, its calls counted."""

    def __init__(self, fun):
        self.fun, self.n = fun, 0

    def __call__(self, x):
        self.n += 1
        f, g = self.fun(x.copy())
        return float(f), np.array(g, dtype=np.float64).ravel()


def _stopped(f_old, f, x, g, lo, hi, ftol, gtol):
    """``(status, message)`` of the convergence tests after an iteration, or
    ``(None, None)`` to go on."""
    if projected_norm(x, g, lo, hi) <= gtol:
        return 0, _PGTOL_MESSAGE
    if f_old - f <= ftol * max(abs(f_old), abs(f), 1.0):
        return 0, "CONVERGENCE: RELATIVE REDUCTION OF F <= FACTR*EPSMCH"
    return None, None


def _first_step(x, d, lo, hi, nit, constrained, boxed):
    """``(first trial step, largest step)`` of the line search along d, as
    L-BFGS-B takes them: at the first iteration the whole step when every
    variable is boxed, else one unit long; later the whole step, the largest
    the one that reaches the box."""
    if not constrained:
        stpmax = 1e10
    else:
        stpmax = 1.0 if nit == 0 else longest_step(x, d, lo, hi, 1e10)
    norm = math.sqrt(dot(d, d))
    first = min(1.0 / norm, stpmax) if nit == 0 and not boxed and norm > 0 else 1.0
    return first, stpmax


def _line_search(fun, x, f, g, d, box, steps, maxls):
    """More-Thuente search along d from x for a step meeting the strong Wolfe
    conditions (L-BFGS-B's constants): ``(x, f, g, step)`` there, or None when
    d is no descent direction, a value is not finite, ``maxls`` evaluations
    did not do, or the search ends above f (SciPy's L-BFGS-B takes such an
    end).  Trial points are clipped into ``box`` against rounding."""
    stp, stpmax = steps
    d0 = dot(g, d)
    if not d0 < 0.0:
        return None
    search = _WolfeSearch(f, d0, stp, stpmax)
    for _ in range(maxls):
        xt = trial_point(x, stp, d, *box)
        ft, gt = fun(xt)
        dt = dot(gt, d)
        if not (math.isfinite(ft) and math.isfinite(dt)):
            return None
        stp, done = search.next(stp, ft, dt)
        if done:                            # (More-Thuente may end higher up)
            return (xt, ft, gt, stp) if ft <= f else None
    return None


class _WolfeSearch:
    """The More-Thuente safeguarded search for a step ``stp`` with ``phi(stp) <=
    phi(0) + ftol stp phi'(0)`` and ``|phi'(stp)| <= gtol |phi'(0)|`` (the
    algorithm of MINPACK-2's dcsrch, smallest step 0)."""

    def __init__(self, f0, d0, stp, stpmax):
        self.f0, self.d0, self.stpmax = f0, d0, stpmax
        self.gtest = _FTOL_LS * d0
        self.width, self.width1 = stpmax, 2.0 * stpmax
        self.bracketed, self.stage1 = False, True
        self.x = (0.0, f0, d0)                  # the best step so far
        self.y = (0.0, f0, d0)                  # the other end of the interval
        self.stmin, self.stmax = 0.0, 5.0 * stp

    def next(self, stp, f, g):
        """``(next trial step, done)`` after evaluating ``phi`` at ``stp``."""
        ftest = self.f0 + stp * self.gtest
        if self.stage1 and f <= ftest and g >= min(_FTOL_LS, _GTOL_LS) * self.d0:
            self.stage1 = False
        if self._ends(stp, f, g, ftest):
            return stp, True
        if self.stage1 and f <= self.x[1] and f > ftest:   # the modified function
            shift = lambda s: (s[0], s[1] - s[0] * self.gtest, s[2] - self.gtest)
            unshift = lambda s: (s[0], s[1] + s[0] * self.gtest, s[2] + self.gtest)
            x, y, new, self.bracketed = _step(shift(self.x), shift(self.y),
                                              shift((stp, f, g)), self.bracketed,
                                              self.stmin, self.stmax)
            self.x, self.y = unshift(x), unshift(y)
        else:
            self.x, self.y, new, self.bracketed = _step(
                self.x, self.y, (stp, f, g), self.bracketed, self.stmin, self.stmax)
        return self._safeguard(new), False

    def _ends(self, stp, f, g, ftest):
        """Whether the search ends at ``stp``: the Wolfe conditions hold, or it
        can go no further (an interval below the rounding or xtol, or a bound of
        the step reached as More and Thuente's warnings say)."""
        if f <= ftest and abs(g) <= _GTOL_LS * -self.d0:
            return True
        if self._stalled(stp):
            return True
        if stp == self.stpmax and f <= ftest and g <= self.gtest:
            return True
        return stp == 0.0 and (f > ftest or g >= self.gtest)

    def _safeguard(self, stp):
        sx, sy = self.x[0], self.y[0]
        if self.bracketed:
            if abs(sy - sx) >= 0.66 * self.width1:
                stp = sx + 0.5 * (sy - sx)
            self.width1, self.width = self.width, abs(sy - sx)
            self.stmin, self.stmax = min(sx, sy), max(sx, sy)
        else:
            self.stmin, self.stmax = stp + 1.1 * (stp - sx), stp + 4.0 * (stp - sx)
        stp = min(max(stp, 0.0), self.stpmax)
        return sx if self._stalled(stp) else stp

    def _stalled(self, stp):
        """Whether a bracketed search can make no progress at ``stp``: at an end
        of its interval (rounding), or the interval within xtol."""
        return self.bracketed and (stp <= self.stmin or stp >= self.stmax or
                                   self.stmax - self.stmin <= _XTOL_LS * self.stmax)


def _cubic_ratio(a, b, fa, fb, da, db):
    """``(r, gamma)`` of the cubic interpolating ``(a, fa, da)`` and ``(b, fb,
    db)``: its minimiser is ``b + r (a - b)``; gamma = 0 where the cubic has
    no turning point (the root clipped at 0)."""
    theta = 3.0 * (fa - fb) / (b - a) + da + db
    s = max(abs(theta), abs(da), abs(db))
    gamma = s * np.sqrt(max(0.0, (theta / s) ** 2 - (da / s) * (db / s)))
    if b > a:
        gamma = -gamma
    return ((gamma - db) + theta) / ((gamma - db) + gamma + da), gamma


def _cubic_min(a, b, fa, fb, da, db):
    """The minimiser of the cubic interpolating ``(a, fa, da)`` and ``(b, fb,
    db)``."""
    return b + _cubic_ratio(a, b, fa, fb, da, db)[0] * (a - b)


def _step(bx, by, trial, bracketed, stpmin, stpmax):
    """One safeguarded step of More & Thuente's search: the new best ``bx`` and
    other end ``by`` of the interval (each ``(step, value, derivative)``), the
    next trial step and whether a minimiser is bracketed."""
    stx, fx, dx = bx
    stp, fp, dp = trial
    sgnd = dp * np.sign(dx)
    if fp > fx:                              # higher: a minimiser is bracketed
        stpc = _cubic_min(stp, stx, fp, fx, dp, dx)
        stpq = stx + dx / ((fx - fp) / (stp - stx) + dx) / 2.0 * (stp - stx)
        stpf = stpc if abs(stpc - stx) < abs(stpq - stx) else stpc + (stpq - stpc) / 2
        bracketed = True
    elif sgnd < 0:                           # derivatives of opposite signs
        stpc = _cubic_min(stx, stp, fx, fp, dx, dp)
        stpq = stp + dp / (dp - dx) * (stx - stp)
        stpf = stpc if abs(stpc - stp) > abs(stpq - stp) else stpq
        bracketed = True
    elif abs(dp) < abs(dx):                  # lower, the slope falls in magnitude
        stpf = _decreasing_slope(bx, trial, by, bracketed, stpmin, stpmax)
    elif bracketed:                          # lower, the slope does not fall
        stpf = _cubic_min(by[0], stp, by[1], fp, by[2], dp)
    else:
        stpf = stpmax if stp > stx else stpmin
    if fp > fx:
        by = trial
    else:
        if sgnd < 0:
            by = bx
        bx = trial
    return bx, by, stpf, bracketed


def _decreasing_slope(bx, trial, by, bracketed, stpmin, stpmax):
    """More and Thuente's third case: a lower value whose derivative has the
    best point's sign and is smaller in magnitude."""
    stx, fx, dx = bx
    stp, fp, dp = trial
    r, gamma = _cubic_ratio(stx, stp, fx, fp, dx, dp)
    if r < 0 and gamma != 0:
        stpc = stp + r * (stx - stp)
    else:
        stpc = stpmax if stp > stx else stpmin
    stpq = stp + dp / (dp - dx) * (stx - stp)
    if bracketed:
        stpf = stpc if abs(stpc - stp) < abs(stpq - stp) else stpq
        reach = stp + 0.66 * (by[0] - stp)
        return min(reach, stpf) if stp > stx else max(reach, stpf)
    stpf = stpc if abs(stpc - stp) > abs(stpq - stp) else stpq
    return max(stpmin, min(stpmax, stpf))
