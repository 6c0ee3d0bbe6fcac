# Single-pass input checks on n x n matrices (they run on K before inference; the
# NumPy equivalent makes several full passes and n x n temporaries), and which
# build this is: BOUNDS_CHECKED, C_ASSERTS, PLAIN_C and the test hooks of the
# checked build.

from libc.math cimport fabs

from cython cimport floating

from _blas cimport (Tiles, chol_lower, chol_lower_tiled_on, gpc_threads,
                   lower_gram_tiled, solve_right_tiled, symv_panels, sync_threads,
                   tiles_next, tiles_start, tri_inverse_tiled, trmv_panels)

import numpy as np


# Which build this is (src_c/meson.build, options `checks` and `simd`): GPC_CHECKS is
# defined only in the bounds-checked build, NDEBUG only when the C asserts are off,
# GPC_PLAIN only in the plain-C build.
cdef extern from *:
    """
    #ifdef GPC_CHECKS
    #define GPC_BOUNDS_CHECKED 1
    #else
    #define GPC_BOUNDS_CHECKED 0
    #endif
    #ifdef NDEBUG
    #define GPC_C_ASSERTS 0
    #else
    #define GPC_C_ASSERTS 1
    #endif
    #ifdef GPC_PLAIN
    #define GPC_PLAIN_C 1
    #else
    #define GPC_PLAIN_C 0
    #endif
    """
    const int GPC_BOUNDS_CHECKED
    const int GPC_C_ASSERTS
    const int GPC_PLAIN_C

#: True in the bounds-checked build (``-Csetup-args=-Dchecks=true``): every compiled
#: module indexes its memoryviews with boundscheck, initializedcheck and nonecheck on.
BOUNDS_CHECKED = bool(GPC_BOUNDS_CHECKED)
#: True when the compiled modules were built with C ``assert`` active (no NDEBUG).
C_ASSERTS = bool(GPC_C_ASSERTS)
#: True in the plain-C build (``-Csetup-args=-Dsimd=false``): the C headers' plain
#: loops instead of their vector ones (src_c/_platform.h).
PLAIN_C = bool(GPC_PLAIN_C)


def _test_index_probe(Py_ssize_t n, Py_ssize_t i):
    """Test hook, not API: read entry ``i`` of a length-``n`` memoryview, unchecked.

    Compiled with this module's directives like every loop in gpc, so in the
    bounds-checked build an index outside ``0 <= i < n`` raises IndexError (which
    tests/test_bounds.py asserts). In the normal build such a read would be undefined
    behaviour, so there the hook refuses to run (RuntimeError).
    """
    cdef double[::1] v
    if not GPC_BOUNDS_CHECKED:
        raise RuntimeError("_test_index_probe runs only in the bounds-checked build")
    v = np.arange(n, dtype=np.float64)
    return v[i]


def _test_uninitialized_probe():
    """Test hook, not API: read from a memoryview that was never assigned.

    In the bounds-checked build (initializedcheck on) this raises UnboundLocalError;
    in the normal build it would dereference a null buffer, so it refuses to run there.
    """
    cdef double[::1] v
    if not GPC_BOUNDS_CHECKED:
        raise RuntimeError("_test_uninitialized_probe runs only in the bounds-checked build")
    return v[0]


ctypedef fused Square:
    const double[:, :]
    const double[::1, :]


def symmetry_check(K, int tile=64):
    """Scan a square matrix once, in tiles that keep K[i, j] and K[j, i] in cache.

    Returns ``(finite, max_abs, max_asym)``: whether every entry is finite, the largest
    ``|K_ij|`` and the largest ``|K_ij - K_ji|`` (both 0 when not finite).  The answer
    is the same for K and K', so a C-ordered matrix is scanned as the Fortran-ordered
    K' (unit stride down the columns, a specialised loop).
    """
    cdef const double[::1, :] KF
    cdef const double[:, :] KS
    K = np.asarray(K, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError("symmetry_check: K must be square.")
    if not K.flags.f_contiguous and K.flags.c_contiguous:
        K = K.T
    if K.flags.f_contiguous:
        KF = K
        return _scan(KF, tile)
    KS = K
    return _scan(KS, tile)


cdef tuple _scan(Square K, int tile):
    cdef int i, j
    cdef double a, d, e, max_abs = 0.0, max_asym = 0.0, nonfinite = 0.0
    cdef Tiles t
    with nogil:
        tiles_start(&t, K.shape[0], tile)
        while nonfinite == 0.0 and tiles_next(&t):
            for j in range(t.j0, t.j1):
                for i in range(t.i0 if t.i0 > j else j, t.i1):
                    a = K[i, j]
                    d = K[j, i]
                    # 0 * x is 0 for finite x and NaN for NaN or infinity.
                    nonfinite += 0.0 * a + 0.0 * d
                    e = fabs(a - d)
                    a = fabs(a)
                    d = fabs(d)
                    max_abs = a if a > max_abs else max_abs
                    max_abs = d if d > max_abs else max_abs
                    max_asym = e if e > max_asym else max_asym
    if nonfinite != 0.0:
        return False, 0.0, 0.0
    return True, max_abs, max_asym


def factorises(K, double jitter, double[::1, :] work=None):
    """Whether the lower Cholesky factorisation of ``K + jitter I`` succeeds.

    K is a square float64 matrix (its lower triangle is read; it is not
    modified); ``work``, an n x n Fortran buffer overwritten with the factor,
    is allocated when not given.  One copy and one Cholesky
    (``_blas.chol_lower``) without Python in between: the positive-definiteness
    check that :func:`gpc.infer` runs on every K costs what the factorisation
    costs, even at small n.
    """
    cdef const double[::1, :] KF
    cdef Py_ssize_t n, i, j
    cdef int info = 0
    K = np.asarray(K, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError("factorises: K must be square.")
    if not K.flags.f_contiguous and K.flags.c_contiguous:
        K = K.T                      # symmetric: the transpose has the same factor
    KF = np.asfortranarray(K)
    n = KF.shape[0]
    if work is None:
        work = np.empty((n, n), order="F")
    elif work.shape[0] != n or work.shape[1] != n:
        raise ValueError("factorises: work must be n x n.")
    if n == 0:
        return True
    sync_threads(n)
    with nogil:
        for j in range(n):
            work[j, j] = KF[j, j] + jitter
            for i in range(j + 1, n):
                work[i, j] = KF[i, j]
        info = chol_lower(&work[0, 0], <int> n)
    return info == 0


def _tiled(str op, floating[::1, :] A, int threads=0):
    """Test hook, not API: a tiled routine of ``_blas`` on A in place, on
    ``threads`` threads when positive, else as gpc chooses (float64 or float32):
    ``"cholesky"``, ``"inverse"`` (of the lower triangle) or ``"gram"`` (the
    lower triangle of M'M for the lower triangle M).  Returns LAPACK's info."""
    cdef int info = 0, n = A.shape[0]
    cdef int code = ("cholesky", "inverse", "gram").index(op) if op in (
        "cholesky", "inverse", "gram") else -1
    if A.shape[1] != n:
        raise ValueError("A must be square")
    if code < 0:
        raise ValueError(f"unknown op {op!r}")
    if n == 0:
        return 0
    sync_threads(n)
    if threads <= 0:
        threads = gpc_threads(<double> n * n * n / (3.0 if code == 0 else 6.0))
    with nogil:
        if code == 0:
            info = chol_lower_tiled_on(&A[0, 0], n, threads)
        elif code == 1:
            info = tri_inverse_tiled(&A[0, 0], n, threads)
        else:
            lower_gram_tiled(&A[0, 0], n, threads)
    return info


def _blas2(str op, const double[::1, :] A, double[::1] x):
    """Test hook, not API: the calling thread's route of ``_blas``: ``"symv"``
    (A x from the lower triangle of A's leading n x n block, n = len(x)),
    ``"trmv"`` (L x) or ``"trmv_t"`` (L' x), L the lower triangle of the square
    A; returns the result (x is not modified)."""
    cdef int n = x.shape[0], ld = A.shape[0]
    cdef double[::1] y = np.zeros(n)
    cdef bint symv = op == "symv"
    if (A.shape[1] < n or ld < n) if symv else (A.shape[1] != n or ld != n):
        raise ValueError("inconsistent shapes")
    if n == 0:
        return np.asarray(y)
    with nogil:
        if symv:
            symv_panels(False, &A[0, 0], n, ld, &x[0], &y[0], 1.0, 0.0)
    cdef bint transpose = op == "trmv_t"
    if op in ("trmv", "trmv_t"):
        y[:] = x
        with nogil:
            trmv_panels(&A[0, 0], n, &y[0], transpose)
    elif op != "symv":
        raise ValueError(f"unknown op {op!r}")
    return np.asarray(y)


def _solve_right_tiled(const double[::1, :] L, double[::1, :] B):
    """Test hook, not API: B <- B L^{-T} in place by the tiled route of
    ``_blas.solve_right_lower_t`` (L lower triangular m x m, B n x m); returns
    LAPACK's info."""
    cdef int info, m = L.shape[0], n = B.shape[0]
    if L.shape[1] != m or B.shape[1] != m:
        raise ValueError("inconsistent shapes")
    if m == 0 or n == 0:
        return 0
    with nogil:
        info = solve_right_tiled(&L[0, 0], m, &B[0, 0], n)
    return info
