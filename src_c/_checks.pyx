# Single-pass input checks on n x n matrices (the NumPy equivalent makes several full
# passes and temporaries, which costs about one Cholesky of the same size).

from libc.math cimport fabs, isfinite


def symmetry_check(const double[:, :] K, Py_ssize_t tile=64):
    """Scan a square matrix once, in tiles that keep K[i, j] and K[j, i] in cache.

    Returns ``(finite, max_abs, max_asym)``: whether every entry is finite, the largest
    ``|K_ij|`` and the largest ``|K_ij - K_ji|`` (both 0 when not finite).
    """
    cdef Py_ssize_t n = K.shape[0], i0, j0, i, j, i1, j1
    cdef double a, d, max_abs = 0.0, max_asym = 0.0
    cdef bint finite = True
    if K.shape[1] != n:
        raise ValueError("symmetry_check: K must be square.")
    if tile < 1:
        tile = 64
    with nogil:
        j0 = 0
        while j0 < n and finite:
            j1 = j0 + tile if j0 + tile < n else n
            i0 = j0
            while i0 < n and finite:
                i1 = i0 + tile if i0 + tile < n else n
                for j in range(j0, j1):
                    for i in range(i0 if i0 > j else j, i1):
                        a = K[i, j]
                        d = K[j, i]
                        if not (isfinite(a) and isfinite(d)):
                            finite = False
                            break
                        if fabs(a) > max_abs:
                            max_abs = fabs(a)
                        if fabs(d) > max_abs:
                            max_abs = fabs(d)
                        if fabs(a - d) > max_asym:
                            max_asym = fabs(a - d)
                    if not finite:
                        break
                i0 = i1
            j0 = j1
    if not finite:
        return False, 0.0, 0.0
    return True, max_abs, max_asym
