"""Checks of the kernels' arguments: the inputs X and Y, the matrices dK and K, the
hyperparameter values, and :func:`as_kernel` for the kernels themselves."""

import numpy as np
from sklearn.gaussian_process import kernels as _sk
from sklearn.gaussian_process.kernels import Hyperparameter


_DEFAULT_BOUNDS = (1e-5, 1e5)


def _check_X(X, name="X"):
    """Return X as a finite 2-D float64 array or raise a clear error."""
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be a 2-D numeric array of shape (n_samples, n_features); "
            f"could not convert {type(X).__name__} to float: {exc}"
        ) from None
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array of shape (n_samples, n_features); got an "
            f"array with {arr.ndim} dimension(s) and shape {arr.shape}. Use "
            f"{name}.reshape(-1, 1) for a single feature or {name}.reshape(1, -1) "
            "for a single sample."
        )
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values.")
    return arr


def _check_XY(X, Y, eval_gradient=False):
    """Validated inputs of a kernel call; a gradient exists only for ``K(X, X)``."""
    if eval_gradient and Y is not None:
        raise ValueError("Gradient can only be evaluated when Y is None.")
    X = _check_X(X, "X")
    if Y is None:
        return X, None
    Y = _check_X(Y, "Y")
    if Y.shape[1] != X.shape[1]:
        raise ValueError(
            f"X and Y must have the same number of features; got {X.shape[1]} "
            f"and {Y.shape[1]}."
        )
    return X, Y


def _num_samples(X):
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) > 0:
        return shape[0]
    return len(X)


def _check_square(A, n, name, check_finite=True):
    """Return A as an (n, n) float64 array (with finite entries, if checked)."""
    A = np.asarray(A, dtype=np.float64)
    if A.shape != (n, n):
        raise ValueError(
            f"{name} must have shape ({n}, {n}) to match X with {n} samples; "
            f"got shape {A.shape}."
        )
    # A single reduction is much cheaper than np.isfinite on n^2 entries; the
    # full check only runs when the sum is not finite.
    if check_finite and not np.isfinite(A.sum()) and not np.isfinite(A).all():
        raise ValueError(f"{name} contains NaN or infinite values.")
    return A


def _positive_scalar(value, name, owner):
    """Validate a positive finite scalar; return it as float."""
    if isinstance(value, bool):
        raise TypeError(f"{owner}: {name} must be a positive number, got {value!r}.")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"{owner}: {name} must be a positive number, got {value!r}."
        ) from None
    if arr.size != 1:
        raise ValueError(f"{owner}: {name} must be a scalar, got shape {arr.shape}.")
    v = float(arr.reshape(-1)[0])
    if not (np.isfinite(v) and v > 0.0):
        raise ValueError(f"{owner}: {name} must be finite and > 0, got {value!r}.")
    return v


def _length_scale_array(value, owner):
    """Validate a length scale; return a float (isotropic) or 1-D array."""
    try:
        ls = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"{owner}: length_scale must be a positive number or a 1-D array of "
            f"positive numbers, got {value!r}."
        ) from None
    if ls.ndim > 1:
        ls = np.squeeze(ls)
        if ls.ndim > 1:
            raise ValueError(
                f"{owner}: length_scale must be a scalar or 1-D, got shape "
                f"{np.shape(value)}."
            )
    if ls.size == 0:
        raise ValueError(f"{owner}: length_scale must not be empty.")
    if not (np.isfinite(ls).all() and (ls > 0).all()):
        raise ValueError(
            f"{owner}: length_scale must be finite and > 0, got {value!r}."
        )
    if ls.size == 1:
        return float(ls.reshape(-1)[0])
    return ls


def _length_scale_for(value, X, owner):
    """Length scale checked against the number of features of X."""
    ls = _length_scale_array(value, owner)
    if np.ndim(ls) == 1 and ls.shape[0] != X.shape[1]:
        raise ValueError(
            f"{owner} has {ls.shape[0]} length scales (ARD) but X has "
            f"{X.shape[1]} features; give one length scale per feature or a "
            "scalar."
        )
    return ls


def _is_anisotropic(length_scale):
    return bool(np.iterable(length_scale) and len(length_scale) > 1)


def _length_scale_hyperparameter(length_scale, bounds):
    if _is_anisotropic(length_scale):
        return Hyperparameter("length_scale", "numeric", bounds, len(length_scale))
    return Hyperparameter("length_scale", "numeric", bounds)


def _fmt_length_scale(length_scale):
    if _is_anisotropic(length_scale):
        return "[" + ", ".join("{0:.3g}".format(v) for v in length_scale) + "]"
    return "{0:.3g}".format(float(np.ravel(length_scale)[0]))


def as_kernel(obj):
    """Check that ``obj`` is a scikit-learn kernel instance and return it.

    Parameters
    ----------
    obj : object
        Candidate kernel.  Any instance of
        :class:`sklearn.gaussian_process.kernels.Kernel` is accepted, which
        includes every kernel of :mod:`gpc.kernels`.

    Returns
    -------
    kernel : sklearn.gaussian_process.kernels.Kernel
        ``obj`` itself (no copy is made).

    Raises
    ------
    TypeError
        If ``obj`` is not a kernel instance (for example a kernel *class*, a
        number or a callable).

    Examples
    --------
    >>> from gpc.kernels import as_kernel, SquaredExponential
    >>> k = SquaredExponential()
    >>> as_kernel(k) is k
    True
    >>> as_kernel(lambda x, y: x @ y.T)
    Traceback (most recent call last):
    ...
    TypeError: expected a scikit-learn kernel ...
    """
    if isinstance(obj, _sk.Kernel):
        return obj
    if isinstance(obj, type) and issubclass(obj, _sk.Kernel):
        raise TypeError(
            f"expected a scikit-learn kernel instance, got the class "
            f"{obj.__name__}; did you mean {obj.__name__}()?"
        )
    raise TypeError(
        "expected a scikit-learn kernel (an instance of "
        "sklearn.gaussian_process.kernels.Kernel, e.g. "
        f"gpc.kernels.SquaredExponential()), got {type(obj).__name__}: {obj!r}. "
        "Numbers can be turned into kernels with gpc.kernels.Constant(value)."
    )
