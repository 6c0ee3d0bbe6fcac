# Planned linear algebra for gpc's Python code: the products, factorisations,
# inverses and solves that the methods' Python parts call, on SciPy's BLAS and
# LAPACK through the routines of _blas.pxd.  Each call is planned when it starts,
# like the compiled loops' own calls: LAPACK or BLAS itself where its threads have
# cores that other processes leave free, else gpc's tiles in the calling thread and
# gpc's pool (src_c/_pool.h).  Matrices are float64; factors use the lower triangle.

import numpy as np

from _blas cimport (SOLVE_CHOLESKY, SOLVE_N, SOLVE_T, Tiles, chol_inverse_lower,
                    chol_lower, gemm_planned, solve_left_lower, symv_any, sync_threads,
                    syrk_lower, tiles_next, tiles_start)


cdef extern from "_pairs.h" nogil:
    void gpc_mirror_tile(double* K, long n, long i0, long i1, long j0, long j1)


cdef _operand(X):
    """A float64 matrix as a Fortran array and whether it is transposed: a
    C-contiguous X is the Fortran X' (no copy), anything else is copied."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"2-D arrays expected, got {X.ndim} dimensions.")
    if X.flags.f_contiguous:
        return X, False
    if X.flags.c_contiguous:
        return X.T, True
    return np.asfortranarray(X), False


def matmul(A, B, int threads=0):
    """``A @ B`` for float64 matrices on SciPy's BLAS, planned like gpc's other
    large calls: dgemm where its threads have free cores, else tiles of at most
    64 x 64 x 64 on gpc's threads (``threads`` > 0: on that many, 1 all in the
    calling thread).  The result is C-ordered when A and B both are, else
    Fortran-ordered.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc._linalg import matmul
    >>> matmul(np.eye(2), np.arange(4.0).reshape(2, 2))
    array([[0., 1.],
           [2., 3.]])
    """
    Af, trans_a = _operand(A)
    Bf, trans_b = _operand(B)
    cdef bint ta = trans_a, tb = trans_b
    cdef Py_ssize_t m = Af.shape[1] if ta else Af.shape[0]
    cdef Py_ssize_t k = Af.shape[0] if ta else Af.shape[1]
    cdef Py_ssize_t n = Bf.shape[0] if tb else Bf.shape[1]
    if (Bf.shape[1] if tb else Bf.shape[0]) != k:
        raise ValueError(f"matmul: shapes {np.shape(A)} and {np.shape(B)} do not align.")
    if ta and tb:                           # (B' A')' : C-ordered, nothing copied
        return matmul(Bf, Af, threads).T
    if m == 0 or n == 0 or k == 0:
        return np.zeros((m, n), order="F")
    out = np.empty((m, n), order="F")
    cdef const double[::1, :] a = Af
    cdef const double[::1, :] b = Bf
    cdef double[::1, :] c = out
    sync_threads(max(m, n, k))
    with nogil:
        gemm_planned(ta, tb, m, n, k, 1.0, &a[0, 0], <int> a.shape[0], &b[0, 0],
                     <int> b.shape[0], 0.0, &c[0, 0], m, threads)
    return out


def gram(Z):
    """``Z @ Z.T`` for a float64 matrix Z, exactly symmetric: syrk on the lower
    triangle, planned like :func:`matmul`, then mirrored.  A C- or
    Fortran-ordered Z is not copied.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc._linalg import gram
    >>> gram(np.array([[1.0, 2.0], [3.0, 4.0]]))
    array([[ 5., 11.],
           [11., 25.]])
    """
    Zf, trans = _operand(Z)     # Z, or Z' (d x n) for a C-ordered Z: no copy
    cdef const double[::1, :] z = Zf
    cdef bint outer = not trans
    cdef int n = z.shape[0] if outer else z.shape[1]
    cdef int d = z.shape[1] if outer else z.shape[0]
    if n == 0 or d == 0:
        return np.zeros((n, n), order="F")
    out = np.empty((n, n), order="F")           # syrk's lower triangle, mirrored
    cdef double[::1, :] g = out
    sync_threads(max(n, d))
    with nogil:
        # Z Z' from Z itself (outer), or as (Z')' Z' from Z'
        syrk_lower(outer, &z[0, 0], d, z.shape[0], n, 1.0, 0.0, &g[0, 0])
        _mirror(&g[0, 0], n)
    return out


cdef void _mirror(double* A, long n) noexcept nogil:
    """The lower triangle of the n x n Fortran-ordered A copied onto its upper
    one, tile by tile."""
    cdef Tiles t
    tiles_start(&t, n, 64)
    while tiles_next(&t):
        gpc_mirror_tile(A, n, t.i0, t.i1, t.j0, t.j1)


cdef int _in_place(double[::1, :] A, bint inverse, str name) except -2:
    """cholesky (or cho_inverse) of the square A in place; LAPACK's info."""
    cdef int n = A.shape[0], info = 0
    if A.shape[1] != n:
        raise ValueError(f"{name}: a square matrix is needed, got "
                         f"{(A.shape[0], A.shape[1])}.")
    if n == 0:
        return 0
    sync_threads(n)
    with nogil:
        info = chol_inverse_lower(&A[0, 0], n) if inverse else chol_lower(&A[0, 0], n)
    return info


def cholesky(double[::1, :] A, bint clean=False):
    """Overwrite the lower triangle of the symmetric Fortran-ordered A with its
    lower Cholesky factor; returns LAPACK's info (0, or the order of the first
    minor that is not positive).  The upper triangle is left as it was, or set
    to zero with ``clean``.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc._linalg import cholesky
    >>> A = np.asfortranarray([[4.0, 2.0], [2.0, 5.0]])
    >>> cholesky(A, clean=True), A
    (0, array([[2., 0.],
           [1., 2.]]))
    """
    cdef int info = _in_place(A, False, "cholesky"), i, j
    if clean:
        with nogil:
            for j in range(1, A.shape[1]):
                for i in range(j):
                    A[i, j] = 0.0
    return info


def lower_cholesky(A):
    """The lower Cholesky factor of the symmetric positive definite A, as a new
    array (A is not overwritten).

    Planned like :func:`cholesky`, which it calls on a Fortran-ordered copy of
    A; A's lower triangle is read, the factor is zero above its diagonal.

    Parameters
    ----------
    A : array_like of shape (n, n)

    Returns
    -------
    ndarray of shape (n, n), Fortran-ordered

    Raises
    ------
    ValueError
        If A is not a square matrix.
    LinAlgError
        If A is not positive definite (LAPACK's info > 0).

    Examples
    --------
    >>> import numpy as np
    >>> from gpc._linalg import lower_cholesky
    >>> lower_cholesky([[4.0, 2.0], [2.0, 5.0]])
    array([[2., 0.],
           [1., 2.]])
    """
    L = np.array(A, dtype=np.float64, order="F", copy=True)
    cdef int info = cholesky(L, True)
    if info != 0:
        raise np.linalg.LinAlgError(f"lower_cholesky: the leading minor of order "
                                    f"{info} is not positive definite.")
    return L


def factor_inverse(L):
    """``(L L')^{-1}`` of a lower Cholesky factor L, as a new symmetric
    Fortran-ordered array (L is not overwritten): one planned potri, a third of
    the work of solving against the identity.

    Raises
    ------
    LinAlgError
        If L has a zero diagonal entry.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc._linalg import factor_inverse
    >>> factor_inverse(np.array([[2.0, 0.0], [1.0, 2.0]])) @ [[4.0, 2.0], [2.0, 5.0]]
    array([[1., 0.],
           [0., 1.]])
    """
    A = np.array(L, dtype=np.float64, order="F", copy=True)
    if A.shape[0] and cho_inverse(A) != 0:
        raise np.linalg.LinAlgError("factor_inverse: the factor is singular.")
    return mirror_lower(A)


def mirror_lower(A):
    """Copy the lower triangle of the square Fortran-ordered A onto its upper
    triangle, in place: A becomes the symmetric matrix its lower triangle
    holds.  Returns A.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc._linalg import mirror_lower
    >>> mirror_lower(np.asfortranarray([[1.0, 9.0], [2.0, 3.0]]))
    array([[1., 2.],
           [2., 3.]])
    """
    cdef double[::1, :] a = A
    cdef long n = a.shape[0]
    if a.shape[1] != n:
        raise ValueError(f"mirror_lower: a square matrix expected, got shape "
                         f"{np.shape(A)}.")
    if n:
        with nogil:
            _mirror(&a[0, 0], n)
    return A


def cho_inverse(double[::1, :] L):
    """Overwrite the lower triangle of L, a lower Cholesky factor (Fortran
    order), with that of ``(L L')^{-1}`` (LAPACK's potri); returns LAPACK's info
    (the index of a zero diagonal entry, else 0)."""
    return _in_place(L, True, "cho_inverse")


def symv(A, x):
    """``A x`` for the symmetric n x n A, read from one triangle (the lower of
    its Fortran layout)."""
    A = np.asarray(A, dtype=np.float64)
    cdef const double[::1, :] a = A.T if A.flags.c_contiguous else np.asfortranarray(A)
    cdef const double[::1] v = np.ascontiguousarray(x, dtype=np.float64)
    cdef int n = a.shape[0]
    if a.shape[1] != n or v.shape[0] != n:
        raise ValueError(f"symv: shapes {np.shape(A)} and {np.shape(x)} do not align.")
    out = np.zeros(n)
    cdef double[::1] y = out
    if n == 0:
        return out
    sync_threads(n)
    with nogil:
        symv_any(False, &a[0, 0], n, &v[0], &y[0], 1.0, 0.0)
    return out


cdef _solve(L, B, bint overwrite_b, int ops, str name):
    """``op(L)^{-1} B`` for the lower triangular n x n L and B of shape (n, m) or
    (n,), op by ``ops`` (_blas.pxd's SOLVE_N, SOLVE_T or SOLVE_CHOLESKY): a new
    array, or B itself when ``overwrite_b`` and B is a Fortran-ordered float64
    matrix.  A zero on L's diagonal raises LinAlgError."""
    cdef const double[::1, :] l = np.asfortranarray(L, dtype=np.float64)
    cdef int n = l.shape[0], m
    vector = np.ndim(B) == 1
    X = np.array(B, dtype=np.float64, order="F", ndmin=2,
                 copy=None if overwrite_b and not vector else True)
    if vector:
        X = X.T
    if l.shape[1] != n or X.ndim != 2 or X.shape[0] != n:
        raise ValueError(f"{name}: shapes {np.shape(L)} and {np.shape(B)} do not "
                         "align.")
    m = X.shape[1]
    if n == 0 or m == 0:
        return X[:, 0] if vector else X
    zero = np.flatnonzero(np.diagonal(l) == 0.0)
    if zero.size:
        raise np.linalg.LinAlgError(f"{name}: L[{zero[0]}, {zero[0]}] is 0.")
    cdef double[::1, :] x = X
    cdef int info
    sync_threads(n)
    with nogil:
        info = solve_left_lower(&l[0, 0], n, &x[0, 0], m, ops)
    if info != 0:
        raise MemoryError(f"{name}: no memory for L's inverse.")
    return X[:, 0] if vector else X


def solve_lower(L, B, bint overwrite_b=False, bint trans=False):
    """``L^{-1} B``, or ``L^{-T} B`` with ``trans``, for the lower triangular L.

    Planned like gpc's other large calls: dtrsv for a vector (in the calling
    thread at any order), dtrsm where its threads have free cores, else L's
    inverse (tiled) times B by gpc's tiled trmm.

    Parameters
    ----------
    L : array_like of shape (n, n)
        Lower triangular (the upper triangle is not read).
    B : array_like of shape (n, m) or (n,)
    overwrite_b : bool, default=False
        Solve in B itself when it is a Fortran-ordered float64 matrix.
    trans : bool, default=False
        Solve ``L' X = B`` instead of ``L X = B``.

    Returns
    -------
    ndarray of B's shape (Fortran-ordered)

    Raises
    ------
    ValueError
        If the shapes do not align.
    LinAlgError
        If L has a zero on its diagonal.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc._linalg import solve_lower
    >>> L = np.array([[2.0, 0.0], [1.0, 1.0]])
    >>> solve_lower(L, np.array([2.0, 3.0]))
    array([1., 2.])
    >>> solve_lower(L, np.array([4.0, 2.0]), trans=True)
    array([1., 2.])
    """
    return _solve(L, B, overwrite_b, SOLVE_T if trans else SOLVE_N, "solve_lower")


def cho_solve(L, B, bint overwrite_b=False):
    """``(L L')^{-1} B`` for the lower Cholesky factor L: ``L^{-T} (L^{-1} B)``.

    Planned like :func:`solve_lower`, whose two solves it makes in turn (on
    the tiled route, by one inverse of L).

    Parameters
    ----------
    L, B, overwrite_b
        As for :func:`solve_lower`.

    Returns
    -------
    ndarray of B's shape (Fortran-ordered)

    Raises
    ------
    ValueError, LinAlgError
        As :func:`solve_lower` does.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc._linalg import cho_solve
    >>> L = np.array([[2.0, 0.0], [1.0, 1.0]])          # L L' = [[4, 2], [2, 2]]
    >>> cho_solve(L, np.array([6.0, 4.0]))
    array([1., 1.])
    """
    return _solve(L, B, overwrite_b, SOLVE_CHOLESKY, "cho_solve")
