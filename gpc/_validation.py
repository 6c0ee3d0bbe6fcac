"""Input checks shared by the K-level API and the estimators."""

import functools
import numbers
import os

import numpy as np

from ._checks import symmetry_check


class NotPositiveDefiniteError(np.linalg.LinAlgError, ValueError):
    """A covariance matrix is not positive semi-definite, even after jitter.

    Subclasses both :class:`numpy.linalg.LinAlgError` and :class:`ValueError`, so
    either may be caught.
    """


def is_integer(value):
    """Whether ``value`` is an integer (Python's or NumPy's), not a bool."""
    return (isinstance(value, numbers.Integral)
            and not isinstance(value, (bool, np.bool_)))


def is_real(value):
    """Whether ``value`` is a real number (integers included), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def check_integer(value, name, low):
    """Refuse ``value`` unless it is an integer >= ``low``.

    Raises
    ------
    TypeError
        If it is not an integer (a float such as 1.5 or 2.0 included).
    ValueError
        If it is below ``low``.
    """
    if not is_integer(value):
        raise TypeError(f"{name} must be an integer >= {low}, got {value!r}.")
    if value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}.")


def check_real(value, name, low=-np.inf, high=np.inf, low_open=False, high_open=False):
    """Refuse ``value`` unless it is a finite real number in the interval from
    ``low`` to ``high`` (each end closed unless ``low_open`` / ``high_open``).

    Raises
    ------
    TypeError
        If it is not a real number.
    ValueError
        If it is not finite or lies outside the interval.
    """
    close = ")" if high_open or high == np.inf else "]"
    interval = f"{'(' if low_open or low == -np.inf else '['}{low:g}, {high:g}{close}"
    if not is_real(value):
        raise TypeError(f"{name} must be a real number in {interval}, got {value!r}.")
    inside = ((value > low if low_open else value >= low)
              and (value < high if high_open else value <= high))
    if not (np.isfinite(value) and inside):
        raise ValueError(f"{name} must be a finite number in {interval}, got "
                         f"{value!r}.")


def as_kernel_matrix(K, name="K", symmetry_tol=1e-8):
    """Validate a covariance matrix and return it as a Fortran float64 array.

    A C-ordered symmetric matrix is returned as its transpose (a Fortran view of the
    same memory), so no copy is made for float64 input.

    Raises
    ------
    ValueError
        If ``K`` is not a finite, square, symmetric 2-D array.
    NotPositiveDefiniteError
        If its diagonal (the prior variances) holds a negative entry beyond
        rounding (1e-12 of K's largest magnitude).
    """
    K = np.asarray(K)
    if K.dtype.kind not in "fiub":
        raise ValueError(f"{name} must be a numeric array, got dtype {K.dtype}.")
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(f"{name} must be a square 2-D array, got shape {K.shape}.")
    K = np.asarray(K, dtype=np.float64)
    finite, scale, asym = symmetry_check(K)
    if not finite:
        raise ValueError(f"{name} contains NaN or infinity.")
    if asym > symmetry_tol * max(scale, 1e-300):
        raise ValueError(f"{name} must be symmetric.")
    diagonal = np.diagonal(K)
    if (diagonal < -1e-12 * scale).any():       # (rounding can leave -0-ish ones)
        i = int(np.argmin(diagonal))
        raise NotPositiveDefiniteError(
            f"{name} is not positive semi-definite: its diagonal, the prior "
            f"variances, holds {name}[{i}, {i}] = {diagonal[i]:g}.")
    return fortran_view(K)


def symmetric_from_lower(A):
    """The symmetric matrix whose lower triangle A holds (a new array)."""
    L = np.tril(A)
    L += np.tril(L, -1).T
    return L


def fortran_view(A):
    """A symmetric (or transposition-invariant) matrix as a Fortran-ordered float64
    array: itself, its transpose when it is C ordered (a view of the same memory),
    or a copy."""
    A = np.asarray(A, dtype=np.float64)
    if A.flags.f_contiguous:
        return A
    return A.T if A.flags.c_contiguous else np.asfortranarray(A)


# n x n float64 arrays a full (O(n^2)) fit holds at once at the least: K, a
# factorisation of B = I + sW K sW, and B^{-1} (or the posterior covariance).
FULL_FIT_ARRAYS = 3


def multinomial_fit_arrays(n_classes):
    """n x n float64 arrays a multinomial fit holds at once at the least: per
    class ``E_c``, ``dK_c`` and the posterior's covariance terms, and ``P``, its
    factor and one temporary."""
    return 3 * n_classes + 3


def available_memory():
    """Bytes of memory available to a new allocation without swapping (Linux's
    MemAvailable, else the free physical pages), or None where unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def _bytes(n):
    for unit in ("bytes", "KB", "MB", "GB", "TB", "PB"):
        if n < 1024 or unit == "PB":
            return f"{n:.1f} {unit}" if unit != "bytes" else f"{n:.0f} bytes"
        n /= 1024


@functools.lru_cache(maxsize=1)
def physical_memory():
    """Bytes of physical memory of the machine (read once), or None where unknown."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def check_full_fit_memory(n, who, arrays=FULL_FIT_ARRAYS):
    """Fail fast, before any n x n allocation, when ``arrays`` n x n float64
    matrices would not fit in the available memory.  A need of at most 1 % of the
    machine's physical memory is not checked: reading the available memory costs
    about a fifth of a ``gpc.infer`` call at n = 20, and so small a need that
    does not fit fails in the allocation itself.

    Raises
    ------
    MemoryError
        With the size needed and the sparse alternative.
    """
    need = arrays * 8.0 * float(n) * float(n)
    total = physical_memory()
    if total is not None and need <= 0.01 * total:
        return
    have = available_memory()
    if have is not None and need > have:
        raise MemoryError(
            f"{who} with n = {n} training points needs at least {arrays} n x n "
            f"float64 matrices ({_bytes(need)}), but only {_bytes(have)} of memory is "
            "available. Use gpc.SparseGPClassifier (memory O(n m) for m basis "
            "vectors) for data this large, or fit on a subsample.")
