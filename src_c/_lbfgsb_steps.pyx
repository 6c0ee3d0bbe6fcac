# The numeric steps of gpc._lbfgsb's L-BFGS-B: the limited-memory matrix and its
# update, the generalised Cauchy point, the subspace step and its projection, as
# plain C loops in the calling thread.  The one BLAS routine is ddot, on pieces of
# at most 4096 entries (_blas's dot_here), which OpenBLAS runs there.  The 2k x 2k
# systems (k <= maxcor pairs) are solved by the LU factorisation written out here,
# which stays in the calling thread for any maxcor (OpenBLAS shares LAPACK's LU
# out from 10000 entries, maxcor 50).
#
# Storage: the pairs' s and y are rows of n entries in a circular store of maxcor
# rows; the small matrices are row-major, their pairs oldest first.
"""The compiled steps of :mod:`gpc._lbfgsb`'s L-BFGS-B, all in the calling thread."""

import numpy as np

from libc.float cimport DBL_EPSILON
from libc.math cimport INFINITY, fabs
from libc.stdlib cimport calloc, free, qsort
from libc.string cimport memcpy, memset
from _blas cimport dot_here


cdef struct Break:
    # A breakpoint of the projected steepest-descent path: its step and variable.
    double t
    Py_ssize_t i


cdef struct Pairs:
    # The limited-memory matrix B = theta I - W M W' of k <= maxcor pairs (s, y),
    # with W = [Y, theta S] and M the inverse of the middle matrix, and the work
    # space of the steps that use it.
    Py_ssize_t n
    int maxcor, k, head     # head: the slot of the oldest pair
    double theta
    double* S               # maxcor x n: the pairs' s, circular
    double* Y
    double** s              # the pairs' s and y, oldest first (into S and Y)
    double** y
    double* SY              # maxcor x maxcor: s_i' y_j for i >= j
    double* SS              # s_i' s_j for i >= j
    double* middle          # 2k x 2k: [[-D, L'], [L, theta S'S]]
    double* M               # 2k x 2k: its inverse
    # the steps' work space: n-vectors, 2 maxcor-vectors, (2 maxcor)^2 matrices
    double* t
    double* d
    double* xc
    double* r
    double* du
    char* free
    Break* breaks
    double* p
    double* c
    double* w
    double* Mw
    double* v
    double* A
    int* piv


cdef inline double _dot(Py_ssize_t n, const double* a, const double* b) noexcept nogil:
    """a' b without BLAS threads."""
    return dot_here(n, a, b)


cdef inline void _matvec(int m, const double* a, const double* x,
                         double* y) noexcept nogil:
    """y <- A x for the m x m row-major a."""
    cdef int r
    for r in range(m):
        y[r] = _dot(m, a + r * m, x)


cdef inline double _clip(double v, double lo, double hi) noexcept nogil:
    """v clipped into [lo, hi] (NaN stays NaN, as in numpy.clip)."""
    if v < lo:
        v = lo
    if v > hi:
        v = hi
    return v


cdef inline double _breakpoint(double x, double d, double lo,
                               double hi) noexcept nogil:
    """The step t >= 0 along -d at which x - t d reaches lo (d > 0) or hi (d < 0);
    infinite where d = 0 or that bound is."""
    cdef double t
    if d > 0.0:
        t = (x - lo) / d
    elif d < 0.0:
        t = (x - hi) / d
    else:
        return INFINITY
    return t if t >= 0.0 else 0.0


cdef double _longest(Py_ssize_t n, const double* x, const double* d, const double* lo,
                     const double* hi, double cap, const char* mask) noexcept nogil:
    """The longest step a <= cap with lo <= x + a d <= hi, over the variables of
    mask (all where it is NULL)."""
    cdef Py_ssize_t i
    cdef double t
    for i in range(n):
        if mask == NULL or mask[i]:
            t = _breakpoint(x[i], -d[i], lo[i], hi[i])
            if t < cap:
                cap = t
    return cap


cdef int _by_step(const void* a, const void* b) noexcept nogil:
    """qsort's order of breakpoints: by step, ties by variable (a stable sort's)."""
    cdef const Break* p = <const Break*> a
    cdef const Break* q = <const Break*> b
    if p.t != q.t:
        return -1 if p.t < q.t else 1
    return -1 if p.i < q.i else (1 if p.i > q.i else 0)


cdef int _lu(int m, double* a, int* piv) noexcept nogil:
    """In place, the LU factorisation with partial pivoting of the m x m row-major
    a (the unblocked algorithm of LAPACK's dgetf2): L unit lower below the
    diagonal, U on and above it, row c swapped with row piv[c].  1 when a pivot
    is zero (A singular, LAPACK's info > 0), else 0."""
    cdef int r, c, j, p
    cdef double l
    for c in range(m):
        p = c
        for r in range(c + 1, m):
            if fabs(a[r * m + c]) > fabs(a[p * m + c]):
                p = r
        piv[c] = p
        if a[p * m + c] == 0.0:
            return 1
        if p != c:
            for j in range(m):
                a[c * m + j], a[p * m + j] = a[p * m + j], a[c * m + j]
        for r in range(c + 1, m):
            l = a[r * m + c] / a[c * m + c]
            a[r * m + c] = l
            for j in range(c + 1, m):
                a[r * m + j] -= l * a[c * m + j]
    return 0


cdef void _lu_solve(int m, const double* lu, const int* piv, double* b) noexcept nogil:
    """b <- A^{-1} b from _lu's factorisation of A."""
    cdef int r, j
    cdef double s
    for r in range(m):
        if piv[r] != r:
            b[r], b[piv[r]] = b[piv[r]], b[r]
    for r in range(m):
        s = b[r]
        for j in range(r):
            s -= lu[r * m + j] * b[j]
        b[r] = s
    for r in range(m - 1, -1, -1):
        s = b[r]
        for j in range(r + 1, m):
            s -= lu[r * m + j] * b[j]
        b[r] = s / lu[r * m + r]


cdef bint _finite(Py_ssize_t n, const double* v) noexcept nogil:
    """Whether every entry of v is finite."""
    cdef Py_ssize_t i
    for i in range(n):
        if not fabs(v[i]) < INFINITY:
            return False
    return True


cdef void _order(Pairs* m) noexcept nogil:
    """Point m.s and m.y at the pairs, oldest first."""
    cdef int j
    cdef Py_ssize_t slot
    for j in range(m.k):
        slot = (m.head + j) % m.maxcor
        m.s[j] = m.S + slot * m.n
        m.y[j] = m.Y + slot * m.n


cdef void _reset(Pairs* m) noexcept nogil:
    """Forget every pair."""
    m.k = 0
    m.head = 0
    m.theta = 1.0


cdef void _drop_oldest(Pairs* m) noexcept nogil:
    """Forget the oldest pair and its products."""
    cdef int i, j, mc = m.maxcor
    m.head = (m.head + 1) % mc
    m.k -= 1
    for i in range(m.k):
        for j in range(i + 1):
            m.SY[i * mc + j] = m.SY[(i + 1) * mc + j + 1]
            m.SS[i * mc + j] = m.SS[(i + 1) * mc + j + 1]
    _order(m)


cdef void _fill_middle(Pairs* m) noexcept nogil:
    """m.middle <- [[-D, L'], [L, theta S'S]], D the diagonal and L the strictly
    lower triangle of S'Y."""
    cdef int i, j, k = m.k, K = 2 * m.k, mc = m.maxcor
    memset(m.middle, 0, <size_t> K * K * sizeof(double))
    for i in range(k):
        m.middle[i * K + i] = -m.SY[i * mc + i]
        for j in range(i):
            m.middle[(k + i) * K + j] = m.SY[i * mc + j]
            m.middle[j * K + k + i] = m.SY[i * mc + j]
        for j in range(i + 1):
            m.middle[(k + i) * K + k + j] = m.theta * m.SS[i * mc + j]
            m.middle[(k + j) * K + k + i] = m.theta * m.SS[i * mc + j]


cdef int _invert_middle(Pairs* m) noexcept nogil:
    """m.M <- the inverse of m.middle; -1 when that is singular or not finite."""
    cdef int r, c, K = 2 * m.k
    memcpy(m.A, m.middle, <size_t> K * K * sizeof(double))
    if _lu(K, m.A, m.piv):
        return -1
    for c in range(K):
        memset(m.v, 0, <size_t> K * sizeof(double))
        m.v[c] = 1.0
        _lu_solve(K, m.A, m.piv, m.v)
        for r in range(K):
            m.M[r * K + c] = m.v[r]
    return 0 if _finite(K * K, m.M) else -1


cdef int _add(Pairs* m, const double* s, const double* y, double sy) noexcept nogil:
    """Store the pair (s, y) (the oldest dropped when the store is full), its
    products with the others, theta = y'y / s'y, the middle matrix and M; -1 when
    the middle matrix is singular (the memory then unusable)."""
    cdef int j, k, mc = m.maxcor
    cdef Py_ssize_t slot
    if m.k == mc:
        _drop_oldest(m)
    slot = (m.head + m.k) % mc
    memcpy(m.S + slot * m.n, s, m.n * sizeof(double))
    memcpy(m.Y + slot * m.n, y, m.n * sizeof(double))
    m.k += 1
    _order(m)
    k = m.k
    for j in range(k):
        m.SY[(k - 1) * mc + j] = _dot(m.n, m.s[k - 1], m.y[j])
        m.SS[(k - 1) * mc + j] = _dot(m.n, m.s[k - 1], m.s[j])
    m.theta = _dot(m.n, y, y) / sy
    _fill_middle(m)
    return _invert_middle(m)


cdef inline void _w_row(const Pairs* m, Py_ssize_t i, double* w) noexcept nogil:
    """w <- row i of W = [Y, theta S]."""
    cdef int j
    for j in range(m.k):
        w[j] = m.y[j][i]
        w[m.k + j] = m.theta * m.s[j][i]


cdef void _cauchy(Pairs* m, const double* x, const double* g, const double* lo,
                  const double* hi) noexcept nogil:
    """m.xc <- the generalised Cauchy point, the first local minimiser of the
    model along the projected steepest-descent path from x; m.c <- W'(xc - x);
    m.free <- whether each variable is off its bounds there."""
    cdef Py_ssize_t n = m.n, i, b, q, nb = 0
    cdef int j, k = m.k, K = 2 * m.k
    cdef double f1, f2, f2_first, dt_min, dt, gb, t_old = 0.0, theta = m.theta
    cdef double* d = m.d
    cdef double* p = m.p
    for i in range(n):
        m.t[i] = _breakpoint(x[i], g[i], lo[i], hi[i])
        d[i] = -g[i] if m.t[i] > 0.0 else 0.0
        m.xc[i] = x[i]
        m.free[i] = m.t[i] > 0.0 and lo[i] < hi[i]
        if m.t[i] > 0.0 and m.t[i] < INFINITY:
            m.breaks[nb].t = m.t[i]
            m.breaks[nb].i = i
            nb += 1
    for j in range(k):                                  # p = W'd, c = 0
        p[j] = _dot(n, m.y[j], d)
        p[k + j] = theta * _dot(n, m.s[j], d)
    memset(m.c, 0, <size_t> K * sizeof(double))
    f1 = -_dot(n, d, d)
    f2 = -theta * f1
    if k:
        _matvec(K, m.M, p, m.Mw)
        f2 -= _dot(K, p, m.Mw)
    f2_first = f2
    dt_min = -f1 / f2 if f2 > 0.0 else INFINITY
    qsort(m.breaks, nb, sizeof(Break), _by_step)
    for q in range(nb):
        b = m.breaks[q].i
        if dt_min < m.t[b] - t_old:
            break
        dt, gb = m.t[b] - t_old, g[b]
        m.xc[b] = hi[b] if d[b] > 0.0 else lo[b]
        for j in range(K):
            m.c[j] += dt * p[j]
        f1 += dt * f2 + gb * gb + theta * gb * (m.xc[b] - x[b])
        f2 -= theta * gb * gb
        if k:
            _w_row(m, b, m.w)
            _matvec(K, m.M, m.w, m.Mw)
            f1 -= gb * _dot(K, m.Mw, m.c)
            f2 -= 2.0 * gb * _dot(K, m.Mw, p) + gb * gb * _dot(K, m.w, m.Mw)
        if not f2 > DBL_EPSILON * f2_first:
            f2 = DBL_EPSILON * f2_first
        for j in range(K):
            p[j] += gb * m.w[j]
        d[b], m.free[b], t_old = 0.0, 0, m.t[b]
        dt_min = -f1 / f2
    if dt_min < 0.0:
        dt_min = 0.0
    for i in range(n):
        if d[i] != 0.0:
            m.xc[i] = x[i] + (t_old + dt_min) * d[i]
    for j in range(K):
        m.c[j] += dt_min * p[j]


cdef int _subspace(Pairs* m, const double* x, const double* g) noexcept nogil:
    """m.du <- on the free variables, the Newton step of the model from xc:
    -Bf^{-1} r with Bf = theta I - Wf M Wf' by Sherman-Morrison-Woodbury, r the
    model's reduced gradient at xc.  -1 when the 2k x 2k system is singular."""
    cdef Py_ssize_t i
    cdef int a, b, K = 2 * m.k
    cdef double ri, gab, theta = m.theta
    cdef double* Mc = m.Mw
    _matvec(K, m.M, m.c, Mc)
    memset(m.A, 0, <size_t> K * K * sizeof(double))  # Wf'Wf (lower), then the system
    for a in range(K):
        m.v[a] = 0.0                                # Wf'r
    for i in range(m.n):
        if m.free[i]:
            _w_row(m, i, m.w)
            ri = g[i] + theta * (m.xc[i] - x[i]) - _dot(K, m.w, Mc)
            m.r[i] = ri
            for a in range(K):
                m.v[a] += m.w[a] * ri
                for b in range(a + 1):
                    m.A[a * K + b] += m.w[a] * m.w[b]
    for a in range(K):                              # middle - Wf'Wf / theta
        for b in range(a + 1):
            gab = m.A[a * K + b] / theta
            m.A[a * K + b] = m.middle[a * K + b] - gab
            m.A[b * K + a] = m.middle[b * K + a] - gab
    if _lu(K, m.A, m.piv):
        return -1
    _lu_solve(K, m.A, m.piv, m.v)
    if not _finite(K, m.v):
        return -1
    for i in range(m.n):
        if m.free[i]:
            _w_row(m, i, m.w)
            m.du[i] = -m.r[i] / theta - _dot(K, m.w, m.v) / (theta * theta)
    return 0


cdef void _project(Pairs* m, const double* x, const double* g, const double* lo,
                   const double* hi, double* out) noexcept nogil:
    """out <- the step from x to xc + du projected into the box, or, where that
    is no descent direction, to xc + a du with a <= 1 the longest step in it
    (du on the free variables)."""
    cdef Py_ssize_t i, n = m.n
    cdef double a
    for i in range(n):
        out[i] = (_clip(m.xc[i] + m.du[i], lo[i], hi[i]) if m.free[i]
                  else m.xc[i]) - x[i]
    if _dot(n, out, g) <= 0.0:
        return
    a = _longest(n, m.xc, m.du, lo, hi, 1.0, m.free)
    for i in range(n):
        out[i] = _clip(m.xc[i] + a * m.du[i] if m.free[i] else m.xc[i],
                       lo[i], hi[i]) - x[i]


cdef int _direction(Pairs* m, const double* x, const double* g, const double* lo,
                    const double* hi, bint constrained, double* out) noexcept nogil:
    """out <- the step to the point the model proposes (direction's); -1 when the
    subspace system is singular."""
    cdef Py_ssize_t i
    cdef bint any_free = False
    if constrained or m.k == 0:
        _cauchy(m, x, g, lo, hi)
    else:                                   # the Cauchy point is x itself
        memcpy(m.xc, x, m.n * sizeof(double))
        memset(m.c, 0, <size_t> (2 * m.k) * sizeof(double))
        memset(m.free, 1, m.n)
    for i in range(m.n):
        any_free = any_free or m.free[i]
    if m.k == 0 or not any_free:
        for i in range(m.n):
            out[i] = m.xc[i] - x[i]
        return 0
    if _subspace(m, x, g):
        return -1
    _project(m, x, g, lo, hi, out)
    return 0


cdef class Memory:
    """The limited-memory BFGS matrix ``B = theta I - W M W'`` of the last pairs
    (s, y), oldest first: ``W = [Y, theta S]``, ``M`` the inverse of the middle
    matrix ``[[-D, L'], [L, theta S'S]]`` (D the diagonal, L the strictly lower
    triangle of S'Y).

    Parameters
    ----------
    n : int
        The number of variables.
    maxcor : int
        The most pairs it keeps (at least one).
    """

    cdef Pairs p

    def __cinit__(self, Py_ssize_t n, int maxcor):
        cdef Pairs* m = &self.p
        cdef Py_ssize_t mc = max(maxcor, 1), m2 = 2 * mc
        m.n, m.maxcor = n, mc
        m.S = <double*> calloc(2 * mc * n + 2 * mc * mc + 3 * m2 * m2 + 5 * n + 5 * m2,
                               sizeof(double))
        m.s = <double**> calloc(2 * mc, sizeof(double*))
        m.breaks = <Break*> calloc(n + 1, sizeof(Break))
        m.piv = <int*> calloc(m2, sizeof(int))
        m.free = <char*> calloc(n + 1, 1)
        if (m.S == NULL or m.s == NULL or m.breaks == NULL or m.piv == NULL
                or m.free == NULL):
            raise MemoryError()
        m.y = m.s + mc
        m.Y = m.S + mc * n
        m.SY = m.Y + mc * n
        m.SS = m.SY + mc * mc
        m.middle = m.SS + mc * mc
        m.M = m.middle + m2 * m2
        m.A = m.M + m2 * m2
        m.t = m.A + m2 * m2
        m.d = m.t + n
        m.xc = m.d + n
        m.r = m.xc + n
        m.du = m.r + n
        m.p = m.du + n
        m.c = m.p + m2
        m.w = m.c + m2
        m.Mw = m.w + m2
        m.v = m.Mw + m2
        _reset(m)

    def __dealloc__(self):
        free(self.p.S)
        free(self.p.s)
        free(self.p.breaks)
        free(self.p.piv)
        free(self.p.free)

    @property
    def k(self):
        """The number of pairs."""
        return self.p.k

    def reset(self):
        """Forget every pair."""
        _reset(&self.p)

    def update(self, const double[::1] s, const double[::1] y, double descent):
        """Add the pair ``(s, y)`` unless its curvature ``s'y`` is not positive
        enough (``descent``: ``-s'g`` at the step's start, as L-BFGS-B tests);
        start afresh when the new middle matrix is singular (S nearly
        rank-deficient)."""
        cdef Py_ssize_t n = self.p.n
        cdef double sy
        if s.shape[0] != n or y.shape[0] != n:
            raise ValueError(f"update: vectors of {n} entries expected.")
        if n == 0:
            return
        sy = _dot(n, &s[0], &y[0])
        if sy > DBL_EPSILON * descent and _add(&self.p, &s[0], &y[0], sy):
            _reset(&self.p)

    def pairs(self):
        """``(S, Y)``: the pairs' s and y as the rows of two ``(k, n)`` arrays,
        oldest first."""
        cdef int j
        cdef Py_ssize_t n = self.p.n
        S, Y = np.empty((self.p.k, n)), np.empty((self.p.k, n))
        cdef double[:, ::1] s = S, y = Y
        for j in range(self.p.k if n else 0):
            memcpy(&s[j, 0], self.p.s[j], n * sizeof(double))
            memcpy(&y[j, 0], self.p.y[j], n * sizeof(double))
        return S, Y


cdef int _check(Py_ssize_t n, const double[::1] a, const double[::1] b,
                const double[::1] c) except -1:
    """ValueError unless a, b and c have n entries."""
    if a.shape[0] != n or b.shape[0] != n or c.shape[0] != n:
        raise ValueError(f"vectors of {n} entries expected.")
    return 0


def direction(const double[::1] x, const double[::1] g, const double[::1] lo,
              const double[::1] hi, Memory memory, bint constrained):
    """The step from x to the point the quasi-Newton model proposes: the
    subspace minimiser from the generalised Cauchy point (from x itself without
    bounds and with pairs), projected into the box, or cut back to it where the
    projection is no descent direction.

    Raises
    ------
    numpy.linalg.LinAlgError
        When the subspace system is singular or its solution not finite.
    """
    cdef Py_ssize_t n = x.shape[0]
    if memory.p.n != n:
        raise ValueError(f"direction: a memory of {memory.p.n} variables, not {n}.")
    _check(n, g, lo, hi)
    out = np.empty(n)
    cdef double[::1] o = out
    if n and _direction(&memory.p, &x[0], &g[0], &lo[0], &hi[0], constrained, &o[0]):
        raise np.linalg.LinAlgError("singular matrix")
    return out


def dot(const double[::1] a, const double[::1] b):
    """``a' b`` without BLAS threads."""
    if a.shape[0] != b.shape[0]:
        raise ValueError("dot: vectors of different lengths.")
    return _dot(a.shape[0], &a[0], &b[0]) if a.shape[0] else 0.0


def longest_step(const double[::1] x, const double[::1] d, const double[::1] lo,
                 const double[::1] hi, double cap):
    """The longest step ``a <= cap`` with ``lo <= x + a d <= hi``."""
    cdef Py_ssize_t n = x.shape[0]
    _check(n, d, lo, hi)
    return _longest(n, &x[0], &d[0], &lo[0], &hi[0], cap, NULL) if n else cap


def projected_norm(const double[::1] x, const double[::1] g, const double[::1] lo,
                   const double[::1] hi):
    """The largest absolute component of the projected gradient
    ``clip(x - g, lo, hi) - x`` (NaN when one is)."""
    cdef Py_ssize_t i, n = x.shape[0]
    cdef double a, top = 0.0
    _check(n, g, lo, hi)
    for i in range(n):
        a = fabs(_clip(x[i] - g[i], lo[i], hi[i]) - x[i])
        if a != a:
            return a
        if a > top:
            top = a
    return top


def trial_point(const double[::1] x, double stp, const double[::1] d,
                const double[::1] lo, const double[::1] hi):
    """``clip(x + stp d, lo, hi)``, a new array."""
    cdef Py_ssize_t i, n = x.shape[0]
    _check(n, d, lo, hi)
    out = np.empty(n)
    cdef double[::1] o = out
    for i in range(n):
        o[i] = _clip(x[i] + stp * d[i], lo[i], hi[i])
    return out
