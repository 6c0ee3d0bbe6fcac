"""Covariance functions (kernels) with fast gradient contraction.

Every kernel in this module *is* a scikit-learn kernel: it subclasses
:class:`sklearn.gaussian_process.kernels.Kernel`, stores its
hyperparameters as :class:`~sklearn.gaussian_process.kernels.Hyperparameter`
objects (positive values, exposed in log space through ``theta`` and
``bounds``; ``"fixed"`` bounds remove a hyperparameter from ``theta``) and
supports ``clone_with_theta``, ``get_params``/``set_params``,
``__call__(X, Y=None, eval_gradient=False)``, ``diag``, pickling and
:func:`sklearn.base.clone`.  gpc kernels can therefore be passed to
scikit-learn's Gaussian process estimators, and scikit-learn kernels can be
used everywhere gpc expects a kernel.

What gpc adds is **contraction**.  Inference works on the kernel matrix
``K = k(X)`` and returns ``dK``, the derivative of the log evidence with
respect to ``K`` (an ``n x n`` matrix).  The gradient with respect to the
log-hyperparameters is then

.. math::

    g_p = \\frac{\\partial}{\\partial \\theta_p}
          \\sum_{ij} dK_{ij} \\, K_{ij}(\\theta),

computed by :func:`contract` (or the ``contract`` method of gpc kernels)
without forming the ``n x n x p`` tensor ``kernel(X, eval_gradient=True)[1]``.
For an ARD squared exponential this is one compiled pass over ``dK`` and ``K``
that sums the pairs' squared coordinate differences directly (up to 16 input
dimensions; beyond, the pass and one BLAS symmetric matrix product).

``dK`` is normally symmetric (inference returns a symmetric matrix), but this
is not required: every formula here uses both row and column sums, so the
result is the exact gradient of ``sum(dK * K(X))`` for any square ``dK``
(only the symmetric part of ``dK`` matters because ``K(X)`` is symmetric).

Kernels
-------
SquaredExponential, Matern, Constant, White, Linear, Polynomial, and the
composites Sum, Product and Exponentiation (produced by ``+``, ``*`` and
``**``; a scalar ``c * k`` becomes ``Product(Constant(c), k)``).
:func:`paper_kernel` builds ``theta1 * SE_ARD + theta2 + jitter * delta``.

Numerics
--------
Distances are taken between inputs centred at their mean and divided by the
length scales.  For ``K(X)`` a compiled pass (``gpc._kern.sym_stationary``)
forms the lower triangle and mirrors it, so ``K(X)`` is exactly symmetric with
an exactly zero-distance diagonal: up to 16 input dimensions it sums the
squared differences coordinate by coordinate (nothing cancels); beyond, it uses
``|z_i|^2 / 2 + |z_j|^2 / 2 - z_i . z_j`` from one BLAS ``dsyrk``, clipped at
zero.  Cross-covariances ``K(X, Y)`` use that same identity through one BLAS
``dgemm``, clipped at zero.  Dot products come from BLAS too: ``dsyrk``,
mirrored, for ``X @ X.T`` and ``dgemm`` for ``X @ Y.T``.
"""

import numbers

import numpy as np
from sklearn.gaussian_process import kernels as _sk
from sklearn.gaussian_process.kernels import Hyperparameter

from ._blocks import frob, gram, matmul
from ._kern import sym_stationary, weighted_sqdist_sum
from ._validation import NotPositiveDefiniteError, as_kernel_matrix, fortran_view

__all__ = [
    "Kernel",
    "Hyperparameter",
    "SquaredExponential",
    "Matern",
    "Constant",
    "White",
    "Linear",
    "Polynomial",
    "Sum",
    "Product",
    "Exponentiation",
    "paper_kernel",
    "contract",
    "is_psd_by_construction",
    "as_kernel",
    "cross_covariance_chunks",
    "contract_inputs",
]

_DEFAULT_BOUNDS = (1e-5, 1e5)
_SQRT3 = np.sqrt(3.0)
_SQRT5 = np.sqrt(5.0)


# ---------------------------------------------------------------------------
# Input validation
# ---------------------------------------------------------------------------


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
        includes every kernel of this module.

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


# ---------------------------------------------------------------------------
# Shared numerical core (used by gpc kernels and by the scikit-learn fast paths)
# ---------------------------------------------------------------------------


def _scaled_inputs(X, Y, length_scale):
    """Centre the inputs (common shift) and divide by the length scales."""
    if Y is None:
        shift = X.mean(axis=0)
        return (X - shift) / length_scale, None
    shift = (X.sum(axis=0) + Y.sum(axis=0)) / (X.shape[0] + Y.shape[0])
    return (X - shift) / length_scale, (Y - shift) / length_scale


def _neg_half_sqdist(Z, ZY=None):
    """``-0.5 * |z_i - y_j|^2``, clipped at zero (result <= 0).

    For ``ZY is None`` the compiled one-pass routine
    (:func:`gpc._kern.sym_stationary`) computes the lower triangle and mirrors
    it: exactly symmetric, zero diagonal.  Otherwise it is computed by one BLAS
    ``dgemm`` as ``z_i . y_j - (h_i + h'_j)`` with ``h = |z|^2 / 2`` and
    ``h' = |y|^2 / 2``.
    """
    if ZY is None:
        return sym_stationary(np.ascontiguousarray(Z, dtype=np.float64), 1.0, False)
    # One GEMM on the augmented inputs [z, -|z|^2/2, -1] . [y, 1, |y|^2/2] (no
    # n x m temporary for the subtraction).
    A = np.empty((Z.shape[0], Z.shape[1] + 2))
    A[:, :-2] = Z
    A[:, -2] = -0.5 * np.einsum("ij,ij->i", Z, Z)
    _check_norms(A[:, -2])
    A[:, -1] = -1.0
    B = np.empty((ZY.shape[0], ZY.shape[1] + 2))
    B[:, :-2] = ZY
    B[:, -2] = 1.0
    B[:, -1] = 0.5 * np.einsum("ij,ij->i", ZY, ZY)
    _check_norms(B[:, -1])
    E = matmul(B, A.T).T       # C-ordered (the product's Fortran transpose)
    np.minimum(E, 0.0, out=E)
    return E


class _NormOverflowError(ValueError):
    """Inputs whose squared norms overflow (see :func:`_check_norms`)."""


def _check_norms(h):
    """Refuse inputs whose squared norms (in length scales) overflow: the
    distances formed from them would be NaN."""
    if not np.isfinite(h.sum()):
        raise _NormOverflowError(
            "The inputs' squared norms, in units of the length scales, overflow "
            "float64 (|x| > 1e154), so their distances cannot be computed: rescale "
            "the inputs, e.g. with sklearn.preprocessing.StandardScaler.")


def _sqdist(Z, ZY=None):
    """Squared Euclidean distances (>= 0, exact zero diagonal if ZY is None)."""
    D = _neg_half_sqdist(Z, ZY)
    D *= -2.0
    return D


def _se_matrix(Z, ZY, variance):
    """``variance * exp(-0.5 * |z_i - y_j|^2)`` with a single n x m buffer."""
    if ZY is None:
        return sym_stationary(np.ascontiguousarray(Z, dtype=np.float64), variance, True)
    K = _neg_half_sqdist(Z, ZY)
    np.exp(K, out=K)
    if variance != 1.0:
        K *= variance
    return K


def _pairwise_sqdiff(Z):
    """The (n, n, d) tensor (z_ik - z_jk)^2 (only for eval_gradient)."""
    diff = Z[:, np.newaxis, :] - Z[np.newaxis, :, :]
    diff *= diff
    return diff


def _weighted_sqdist_sum(Z, W, anisotropic, K=None):
    """``sum_ij W_ij K_ij (z_ik - z_jk)^2`` for every k (ARD) or summed over k.

    Without ``K`` (all ones), ``W`` is scratch owned by the caller (it may be
    overwritten); it need not be symmetric.  ``K``, when given, is symmetric
    and neither array is written.  The compiled ``weighted_sqdist_sum`` sums
    the pairs directly for up to 16 coordinates; beyond, it uses the identity

        sum_ij W_ij (z_ik - z_jk)^2 = sum_i z_ik (r_i z_ik - (M Z)_ik)

    with M the pair weights W_ij + W_ji off the diagonal (times K) and r their
    row sums: one pass over W (and K) and one BLAS product.  Pairs on the
    diagonal contribute exactly zero and are left out, which avoids the largest
    cancellation (the inputs are also centred).

    Returns ``(g, total)`` with ``total = sum(W o K)`` (computed on the way).
    """
    # The sum is unchanged by transposing W (or the symmetric K).
    W = fortran_view(W)
    if K is not None:
        K = fortran_view(K)
    g, total = weighted_sqdist_sum(W, np.ascontiguousarray(Z, dtype=np.float64), K)
    if not anisotropic:
        g = np.array([g.sum()])
    return g, total


def _se_contract(X, length_scale, variance, dK, K, want_ls, want_var):
    """Contraction for ``variance * exp(-0.5 * sum_k (x_k - x'_k)^2 / l_k^2)``.

    The single implementation of the squared-exponential maths, shared by
    :class:`SquaredExponential`, scikit-learn's ``RBF`` and ``Matern(nu=inf)``.

    ``K`` (optional) is the full kernel matrix including ``variance``.
    Returns ``(g_length_scale, g_variance)`` (``None`` where not wanted).
    With ``M = dK * K``: ``g_variance = sum(M)`` and
    ``g_length_scale[k] = sum_ij M_ij (x_ik - x_jk)^2 / l_k^2``.
    """
    if not want_ls:
        if K is None:
            Z, _ = _scaled_inputs(X, None, length_scale)
            K = _se_matrix(Z, None, variance)
        return None, (np.array([frob(dK, K)]) if want_var else None)
    Z, _ = _scaled_inputs(X, None, length_scale)
    anisotropic = np.ndim(length_scale) == 1
    if K is not None:                      # M = dK o K formed in the pass itself
        g_ls, total = _weighted_sqdist_sum(Z, dK, anisotropic, K)
    else:
        W = _se_matrix(Z, None, variance)  # owned: becomes M in place
        W *= dK
        g_ls, total = _weighted_sqdist_sum(Z, W, anisotropic)
    return g_ls, (np.array([total]) if want_var else None)


def _matern_f(r, nu):
    """Unit-variance Matern correlation as a function of the scaled distance."""
    if nu == 0.5:
        return np.exp(-r)
    if nu == 1.5:
        a = _SQRT3 * r
        out = np.exp(-a)
        out *= 1.0 + a
        return out
    a = _SQRT5 * r
    out = np.exp(-a)
    out *= 1.0 + a + a * a / 3.0
    return out


def _matern_weight(r, nu):
    """``-f'(r) / r`` so that ``dK/dlog l_k = variance * weight * d_k^2``."""
    if nu == 0.5:
        out = np.zeros_like(r)
        np.divide(np.exp(-r), r, out=out, where=r > 0)
        return out
    if nu == 1.5:
        out = np.exp(-_SQRT3 * r)
        out *= 3.0
        return out
    a = _SQRT5 * r
    out = np.exp(-a)
    out *= (5.0 / 3.0) * (1.0 + a)
    return out


def _matern_contract(X, length_scale, variance, nu, dK, K, want_ls, want_var):
    """Contraction for the Matern kernel with nu in {0.5, 1.5, 2.5, inf}.

    Shared by :class:`Matern` and scikit-learn's ``Matern``.  Same structure
    as the SE case with ``M = dK * variance * (-f'(r) / r)``.
    """
    if nu == np.inf:
        return _se_contract(X, length_scale, variance, dK, K, want_ls, want_var)
    Z, _ = _scaled_inputs(X, None, length_scale)
    r = _sqdist(Z)
    np.sqrt(r, out=r)
    g_ls = g_var = None
    if want_var:
        if K is None:
            g_var = np.array([variance * frob(dK, _matern_f(r, nu))])
        else:
            g_var = np.array([frob(dK, K)])
    if want_ls:
        W = _matern_weight(r, nu)
        W *= dK
        if variance != 1.0:
            W *= variance
        if np.ndim(length_scale) == 1:
            del r
            g_ls, _ = _weighted_sqdist_sum(Z, W, True)
        else:
            # isotropic: sum(W * r^2) directly (r is at hand; no cancellation)
            r *= r
            g_ls = np.array([frob(W, r)])
    return g_ls, g_var


def _matern_gradient_tensor(Z, D, variance, nu, anisotropic):
    W = _matern_weight(np.sqrt(D), nu) * variance
    if anisotropic:
        return W[:, :, np.newaxis] * _pairwise_sqdiff(Z)
    return (W * D)[:, :, np.newaxis]


def _contract_fallback(kernel, X, dK):
    """Generic path: build the gradient tensor and contract it."""
    _, K_gradient = kernel(X, eval_gradient=True)
    K_gradient = np.asarray(K_gradient, dtype=np.float64)
    n = dK.shape[0]
    if K_gradient.ndim != 3 or K_gradient.shape[:2] != (n, n):
        raise ValueError(
            f"{kernel!r}(X, eval_gradient=True) returned a gradient of shape "
            f"{K_gradient.shape}; expected ({n}, {n}, n_dims)."
        )
    return np.tensordot(dK, K_gradient, axes=([0, 1], [0, 1]))


def _ordered(kernel, parts):
    """Concatenate per-hyperparameter parts in scikit-learn's theta order."""
    out = [
        np.atleast_1d(parts[h.name]) for h in kernel.hyperparameters if not h.fixed
    ]
    if not out:
        return np.zeros(0)
    return np.concatenate(out)


def _ordered_tensor(kernel, parts, n):
    """Stack per-hyperparameter (n, n[, k]) gradients in theta order."""
    out = []
    for h in kernel.hyperparameters:
        if h.fixed:
            continue
        g = parts[h.name]
        out.append(g if g.ndim == 3 else g[:, :, np.newaxis])
    if not out:
        return np.empty((n, n, 0))
    if len(out) == 1:
        return out[0]
    return np.concatenate(out, axis=2)


# ---------------------------------------------------------------------------
# Base class
# ---------------------------------------------------------------------------


class Kernel(_sk.Kernel):
    """Base class of gpc kernels: a scikit-learn kernel with ``contract``.

    Subclasses implement the scikit-learn kernel interface (``__init__``
    storing every parameter unchanged, ``hyperparameter_<name>`` properties,
    ``__call__``, ``diag``, ``is_stationary``).  They may override
    ``_contract(X, dK, K)`` with a fast contraction; the default builds the
    gradient tensor with ``eval_gradient=True``.

    The arithmetic operators return gpc composites, so composites keep fast
    contraction: ``k1 + k2`` is :class:`Sum`, ``k1 * k2`` is
    :class:`Product`, ``k ** p`` is :class:`Exponentiation`, and a number
    ``c`` is wrapped as ``Constant(c)`` (``2.0 * k`` is
    ``Product(Constant(2.0), k)``, ``k + 1.0`` is ``Sum(k, Constant(1.0))``).

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.kernels import SquaredExponential, Linear
    >>> k = 2.0 * SquaredExponential(length_scale=0.5) + Linear()
    >>> k
    Constant(value=2) * SquaredExponential(length_scale=0.5, variance=1) + Linear(variance=1)
    >>> X = np.array([[0.0], [1.0], [2.0]])
    >>> dK = np.ones((3, 3))
    >>> k.contract(X, dK).shape == k.theta.shape
    True
    """

    # numpy must not try to broadcast over kernels in ``np.float64(2) * k``;
    # returning NotImplemented lets Python call Kernel.__rmul__.
    __array_ufunc__ = None

    def contract(self, X, dK, K=None):
        """Gradient of ``sum(dK * self(X))`` with respect to ``self.theta``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        dK : array-like of shape (n_samples, n_samples)
            Derivative of the objective with respect to ``K = self(X)``;
            usually symmetric, but any square matrix is handled exactly.
        K : array-like of shape (n_samples, n_samples), optional
            ``self(X)`` if it has already been computed; saves work for
            kernels whose gradient reuses ``K`` (e.g. the squared
            exponential).

        Returns
        -------
        grad : ndarray of shape (n_dims,)
            Gradient with respect to the log-hyperparameters, in the order
            of ``self.theta`` (fixed hyperparameters are excluded).

        See Also
        --------
        gpc.kernels.contract : the same for any scikit-learn kernel.

        Examples
        --------
        >>> import numpy as np
        >>> from gpc.kernels import SquaredExponential
        >>> X = np.array([[0.0, 0.0], [1.0, 2.0]])
        >>> k = SquaredExponential(length_scale=[1.0, 2.0], variance=2.0)
        >>> dK = np.array([[0.0, 1.0], [1.0, 0.0]])
        >>> k.contract(X, dK)  # d/dlog l1, d/dlog l2, d/dlog variance
        array([1.47151776, 1.47151776, 1.47151776])
        """
        return contract(self, X, dK, K)

    def _contract(self, X, dK, K):
        return _contract_fallback(self, X, dK)

    def __add__(self, b):
        if isinstance(b, _sk.Kernel):
            return Sum(self, b)
        if isinstance(b, numbers.Real):
            return Sum(self, Constant(b))
        return NotImplemented

    def __radd__(self, b):
        if isinstance(b, _sk.Kernel):
            return Sum(b, self)
        if isinstance(b, numbers.Real):
            return Sum(Constant(b), self)
        return NotImplemented

    def __mul__(self, b):
        if isinstance(b, _sk.Kernel):
            return Product(self, b)
        if isinstance(b, numbers.Real):
            return Product(self, Constant(b))
        return NotImplemented

    def __rmul__(self, b):
        if isinstance(b, _sk.Kernel):
            return Product(b, self)
        if isinstance(b, numbers.Real):
            return Product(Constant(b), self)
        return NotImplemented

    def __pow__(self, b):
        if isinstance(b, numbers.Real):
            return Exponentiation(self, b)
        return NotImplemented


# ---------------------------------------------------------------------------
# Base kernels
# ---------------------------------------------------------------------------


class SquaredExponential(Kernel):
    """Squared exponential (RBF) kernel with a variance, optionally ARD.

    .. math::

        k(x, x') = \\sigma^2 \\exp\\Big(-\\frac12 \\sum_k
                   \\frac{(x_k - x'_k)^2}{\\ell_k^2}\\Big)

    Equal to scikit-learn's ``ConstantKernel(variance) * RBF(length_scale)``
    but with its own parametrisation (``theta = [log l..., log variance]``)
    and an ``O(n^2 d)`` :meth:`contract`.

    Parameters
    ----------
    length_scale : float or array-like of shape (n_features,), default=1.0
        Length scale(s) ``l``.  An array with one entry per input dimension
        gives automatic relevance determination (ARD).
    variance : float, default=1.0
        Signal variance ``sigma^2`` (the value of ``k(x, x)``).
    length_scale_bounds : pair of floats or "fixed", default=(1e-5, 1e5)
        Bounds on the length scale(s); ``"fixed"`` removes them from
        ``theta``.
    variance_bounds : pair of floats or "fixed", default=(1e-5, 1e5)
        Bounds on the variance.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.kernels import SquaredExponential
    >>> X = np.array([[0.0, 0.0], [1.0, 2.0]])
    >>> k = SquaredExponential(length_scale=[1.0, 2.0], variance=2.0)
    >>> k(X)
    array([[2.        , 0.73575888],
           [0.73575888, 2.        ]])
    >>> k.theta  # log length scales, then log variance
    array([0.        , 0.69314718, 0.69314718])
    """

    def __init__(
        self,
        length_scale=1.0,
        variance=1.0,
        length_scale_bounds=_DEFAULT_BOUNDS,
        variance_bounds=_DEFAULT_BOUNDS,
    ):
        _length_scale_array(length_scale, type(self).__name__)
        _positive_scalar(variance, "variance", type(self).__name__)
        self.length_scale = length_scale
        self.variance = variance
        self.length_scale_bounds = length_scale_bounds
        self.variance_bounds = variance_bounds

    @property
    def anisotropic(self):
        """Whether there is one length scale per input dimension (ARD)."""
        return _is_anisotropic(self.length_scale)

    @property
    def hyperparameter_length_scale(self):
        return _length_scale_hyperparameter(self.length_scale, self.length_scale_bounds)

    @property
    def hyperparameter_variance(self):
        return Hyperparameter("variance", "numeric", self.variance_bounds)

    def _values(self, X):
        name = type(self).__name__
        return (
            _length_scale_for(self.length_scale, X, name),
            _positive_scalar(self.variance, "variance", name),
        )

    def __call__(self, X, Y=None, eval_gradient=False):
        """Evaluate ``K(X, Y)`` and optionally its gradient.

        Parameters
        ----------
        X : array-like of shape (n_samples_X, n_features)
        Y : array-like of shape (n_samples_Y, n_features), optional
            If None, ``K(X, X)`` is returned (exactly symmetric).
        eval_gradient : bool, default=False
            Also return the gradient with respect to ``theta``
            (only when ``Y`` is None).

        Returns
        -------
        K : ndarray of shape (n_samples_X, n_samples_Y)
        K_gradient : ndarray of shape (n_samples_X, n_samples_X, n_dims)
            Only when ``eval_gradient`` is True.
        """
        X, Y = _check_XY(X, Y, eval_gradient)
        ls, var = self._values(X)
        Z, ZY = _scaled_inputs(X, Y, ls)
        K = _se_matrix(Z, ZY, var)
        if not eval_gradient:
            return K
        parts = {}
        if not self.hyperparameter_length_scale.fixed:
            if np.ndim(ls) == 1:
                parts["length_scale"] = K[:, :, np.newaxis] * _pairwise_sqdiff(Z)
            else:
                parts["length_scale"] = K * _sqdist(Z)
        if not self.hyperparameter_variance.fixed:
            parts["variance"] = K.copy()
        return K, _ordered_tensor(self, parts, X.shape[0])

    def _contract(self, X, dK, K):
        ls, var = self._values(X)
        g_ls, g_var = _se_contract(
            X,
            ls,
            var,
            dK,
            K,
            not self.hyperparameter_length_scale.fixed,
            not self.hyperparameter_variance.fixed,
        )
        return _ordered(self, {"length_scale": g_ls, "variance": g_var})

    def diag(self, X):
        """Diagonal of ``K(X)``: ``variance`` everywhere.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        K_diag : ndarray of shape (n_samples,)
        """
        X = _check_X(X)
        _, var = self._values(X)
        return np.full(X.shape[0], var)

    def is_stationary(self):
        """Returns True (the kernel depends on x - x' only)."""
        return True

    def __repr__(self):
        return "{0}(length_scale={1}, variance={2:.3g})".format(
            type(self).__name__, _fmt_length_scale(self.length_scale), self.variance
        )


class Matern(Kernel):
    """Matern kernel with a variance, nu in {1.5, 2.5}, optionally ARD.

    With the scaled distance ``r = sqrt(sum_k (x_k - x'_k)^2 / l_k^2)``:

    * ``nu=1.5``: ``variance * (1 + sqrt(3) r) exp(-sqrt(3) r)``
    * ``nu=2.5``: ``variance * (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r)``

    Equal to scikit-learn's ``ConstantKernel(variance) * Matern(length_scale,
    nu=nu)``.  ``nu`` is a fixed setting, not a hyperparameter.

    Parameters
    ----------
    length_scale : float or array-like of shape (n_features,), default=1.0
        Length scale(s); an array gives ARD.
    variance : float, default=1.0
        Signal variance (the value of ``k(x, x)``).
    nu : {1.5, 2.5}, default=1.5
        Smoothness.
    length_scale_bounds, variance_bounds : pair of floats or "fixed"
        Bounds, default ``(1e-5, 1e5)``.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.kernels import Matern
    >>> X = np.array([[0.0], [1.0]])
    >>> Matern(length_scale=1.0, nu=2.5)(X)
    array([[1.        , 0.52399411],
           [0.52399411, 1.        ]])
    """

    def __init__(
        self,
        length_scale=1.0,
        variance=1.0,
        nu=1.5,
        length_scale_bounds=_DEFAULT_BOUNDS,
        variance_bounds=_DEFAULT_BOUNDS,
    ):
        _length_scale_array(length_scale, "Matern")
        _positive_scalar(variance, "variance", "Matern")
        self._check_nu(nu)
        self.length_scale = length_scale
        self.variance = variance
        self.nu = nu
        self.length_scale_bounds = length_scale_bounds
        self.variance_bounds = variance_bounds

    @staticmethod
    def _check_nu(nu):
        if isinstance(nu, bool) or not isinstance(nu, numbers.Real) or nu not in (
            1.5,
            2.5,
        ):
            raise ValueError(
                f"Matern: nu must be 1.5 or 2.5, got {nu!r} (use "
                "SquaredExponential for nu=inf or scikit-learn's Matern for "
                "other values)."
            )
        return float(nu)

    @property
    def anisotropic(self):
        """Whether there is one length scale per input dimension (ARD)."""
        return _is_anisotropic(self.length_scale)

    @property
    def hyperparameter_length_scale(self):
        return _length_scale_hyperparameter(self.length_scale, self.length_scale_bounds)

    @property
    def hyperparameter_variance(self):
        return Hyperparameter("variance", "numeric", self.variance_bounds)

    def _values(self, X):
        return (
            _length_scale_for(self.length_scale, X, "Matern"),
            _positive_scalar(self.variance, "variance", "Matern"),
            self._check_nu(self.nu),
        )

    def __call__(self, X, Y=None, eval_gradient=False):
        """Evaluate ``K(X, Y)`` and optionally its gradient.

        See :meth:`SquaredExponential.__call__` for the parameters.
        """
        X, Y = _check_XY(X, Y, eval_gradient)
        ls, var, nu = self._values(X)
        Z, ZY = _scaled_inputs(X, Y, ls)
        D = _sqdist(Z, ZY)
        K = _matern_f(np.sqrt(D), nu)
        K *= var
        if not eval_gradient:
            return K
        parts = {}
        if not self.hyperparameter_length_scale.fixed:
            parts["length_scale"] = _matern_gradient_tensor(
                Z, D, var, nu, np.ndim(ls) == 1
            )
        if not self.hyperparameter_variance.fixed:
            parts["variance"] = K.copy()
        return K, _ordered_tensor(self, parts, X.shape[0])

    def _contract(self, X, dK, K):
        ls, var, nu = self._values(X)
        g_ls, g_var = _matern_contract(
            X,
            ls,
            var,
            nu,
            dK,
            K,
            not self.hyperparameter_length_scale.fixed,
            not self.hyperparameter_variance.fixed,
        )
        return _ordered(self, {"length_scale": g_ls, "variance": g_var})

    def diag(self, X):
        """Diagonal of ``K(X)``: ``variance`` everywhere."""
        X = _check_X(X)
        return np.full(X.shape[0], self._values(X)[1])

    def is_stationary(self):
        """Returns True."""
        return True

    def __repr__(self):
        return "{0}(length_scale={1}, variance={2:.3g}, nu={3:.3g})".format(
            type(self).__name__,
            _fmt_length_scale(self.length_scale),
            self.variance,
            self.nu,
        )


class Constant(Kernel):
    """Constant (bias) kernel ``k(x, x') = value``.

    Used as a bias term in sums and as a scale factor in products
    (``c * k`` is ``Product(Constant(c), k)``).

    Parameters
    ----------
    value : float, default=1.0
        The constant covariance.
    value_bounds : pair of floats or "fixed", default=(1e-5, 1e5)

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.kernels import Constant
    >>> Constant(2.0)(np.zeros((2, 3)))
    array([[2., 2.],
           [2., 2.]])
    """

    def __init__(self, value=1.0, value_bounds=_DEFAULT_BOUNDS):
        _positive_scalar(value, "value", "Constant")
        self.value = value
        self.value_bounds = value_bounds

    @property
    def hyperparameter_value(self):
        return Hyperparameter("value", "numeric", self.value_bounds)

    def __call__(self, X, Y=None, eval_gradient=False):
        """Evaluate ``K(X, Y)`` (all entries ``value``) and optionally its gradient."""
        X, Y = _check_XY(X, Y, eval_gradient)
        c = _positive_scalar(self.value, "value", "Constant")
        m = X.shape[0] if Y is None else Y.shape[0]
        K = np.full((X.shape[0], m), c)
        if not eval_gradient:
            return K
        parts = {"value": K.copy()} if not self.hyperparameter_value.fixed else {}
        return K, _ordered_tensor(self, parts, X.shape[0])

    def _contract(self, X, dK, K):
        c = _positive_scalar(self.value, "value", "Constant")
        return np.array([c * dK.sum()])

    def diag(self, X):
        """Diagonal of ``K(X)``: ``value`` everywhere."""
        X = _check_X(X)
        return np.full(X.shape[0], _positive_scalar(self.value, "value", "Constant"))

    def is_stationary(self):
        """Returns True."""
        return True

    def __repr__(self):
        return "{0}(value={1:.3g})".format(type(self).__name__, self.value)


class White(Kernel):
    """White-noise kernel ``k(x, x') = noise * delta``.

    Like scikit-learn's ``WhiteKernel``, ``K(X)`` is ``noise * I`` and
    ``diag(X)`` is ``noise``, but ``K(X, Y)`` with an explicit ``Y`` is
    zero (also when ``Y`` is ``X``): the delta is over sample *indices*, so
    the term acts on the training covariance only (jitter / noise).

    Parameters
    ----------
    noise : float, default=1.0
        Noise variance.
    noise_bounds : pair of floats or "fixed", default=(1e-5, 1e5)

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.kernels import White
    >>> White(0.1)(np.zeros((2, 1)))
    array([[0.1, 0. ],
           [0. , 0.1]])
    """

    def __init__(self, noise=1.0, noise_bounds=_DEFAULT_BOUNDS):
        _positive_scalar(noise, "noise", "White")
        self.noise = noise
        self.noise_bounds = noise_bounds

    @property
    def hyperparameter_noise(self):
        return Hyperparameter("noise", "numeric", self.noise_bounds)

    def __call__(self, X, Y=None, eval_gradient=False):
        """Evaluate ``K(X)`` (``noise * I``) or ``K(X, Y)`` (zeros)."""
        X, Y = _check_XY(X, Y, eval_gradient)
        s = _positive_scalar(self.noise, "noise", "White")
        if Y is not None:
            return np.zeros((X.shape[0], Y.shape[0]))
        K = s * np.eye(X.shape[0])
        if not eval_gradient:
            return K
        parts = {"noise": K.copy()} if not self.hyperparameter_noise.fixed else {}
        return K, _ordered_tensor(self, parts, X.shape[0])

    def _contract(self, X, dK, K):
        return np.array([_positive_scalar(self.noise, "noise", "White") * np.trace(dK)])

    def diag(self, X):
        """Diagonal of ``K(X)``: ``noise`` everywhere."""
        X = _check_X(X)
        return np.full(X.shape[0], _positive_scalar(self.noise, "noise", "White"))

    def is_stationary(self):
        """Returns True."""
        return True

    def __repr__(self):
        return "{0}(noise={1:.3g})".format(type(self).__name__, self.noise)


class Linear(Kernel):
    """Linear (dot-product) kernel ``k(x, x') = variance * x^T x'``.

    Equal to scikit-learn's ``ConstantKernel(variance) *
    DotProduct(sigma_0=0)`` with ``sigma_0`` fixed.

    Parameters
    ----------
    variance : float, default=1.0
        Prior variance of the weights.
    variance_bounds : pair of floats or "fixed", default=(1e-5, 1e5)

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.kernels import Linear
    >>> Linear(2.0)(np.array([[1.0, 0.0], [1.0, 1.0]]))
    array([[2., 2.],
           [2., 4.]])
    """

    def __init__(self, variance=1.0, variance_bounds=_DEFAULT_BOUNDS):
        _positive_scalar(variance, "variance", "Linear")
        self.variance = variance
        self.variance_bounds = variance_bounds

    @property
    def hyperparameter_variance(self):
        return Hyperparameter("variance", "numeric", self.variance_bounds)

    def __call__(self, X, Y=None, eval_gradient=False):
        """Evaluate ``K(X, Y)`` and optionally its gradient."""
        X, Y = _check_XY(X, Y, eval_gradient)
        v = _positive_scalar(self.variance, "variance", "Linear")
        K = gram(X) if Y is None else matmul(X, Y.T)
        K *= v
        if not eval_gradient:
            return K
        parts = {"variance": K.copy()} if not self.hyperparameter_variance.fixed else {}
        return K, _ordered_tensor(self, parts, X.shape[0])

    def _contract(self, X, dK, K):
        if K is not None:
            return np.array([frob(dK, K)])
        v = _positive_scalar(self.variance, "variance", "Linear")
        # sum_ij dK_ij x_i . x_j = sum(X * (dK @ X)): O(n^2 d), no n x n K.
        return np.array([v * np.vdot(X, matmul(dK, X))])

    def diag(self, X):
        """Diagonal of ``K(X)``: ``variance * |x|^2``."""
        X = _check_X(X)
        v = _positive_scalar(self.variance, "variance", "Linear")
        return v * np.einsum("ij,ij->i", X, X)

    def is_stationary(self):
        """Returns False."""
        return False

    def __repr__(self):
        return "{0}(variance={1:.3g})".format(type(self).__name__, self.variance)


class Polynomial(Kernel):
    """Polynomial kernel ``k(x, x') = (1 + x^T x' / scale)^degree``.

    ``scale`` (written ``m`` in the papers) is a positive hyperparameter in
    log space; ``degree`` is a fixed positive integer.  The kernel equals
    scikit-learn's ``ConstantKernel(scale**-degree) *
    DotProduct(sqrt(scale)) ** degree``.

    Parameters
    ----------
    degree : int, default=2
        Polynomial degree (>= 1), fixed.
    scale : float, default=1.0
        Scale ``m`` of the dot product.
    scale_bounds : pair of floats or "fixed", default=(1e-5, 1e5)

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.kernels import Polynomial
    >>> Polynomial(degree=2, scale=2.0)(np.array([[1.0, 1.0], [2.0, 0.0]]))
    array([[4., 4.],
           [4., 9.]])
    """

    def __init__(self, degree=2, scale=1.0, scale_bounds=_DEFAULT_BOUNDS):
        self._check_degree(degree)
        _positive_scalar(scale, "scale", "Polynomial")
        self.degree = degree
        self.scale = scale
        self.scale_bounds = scale_bounds

    @staticmethod
    def _check_degree(degree):
        if (
            isinstance(degree, bool)
            or not isinstance(degree, numbers.Real)
            or degree != int(degree)
            or degree < 1
        ):
            raise ValueError(
                f"Polynomial: degree must be an integer >= 1, got {degree!r}."
            )
        return int(degree)

    @property
    def hyperparameter_scale(self):
        return Hyperparameter("scale", "numeric", self.scale_bounds)

    def _base(self, X, Y):
        """``B = 1 + X Y^T / scale`` and ``G = X Y^T / scale``."""
        s = _positive_scalar(self.scale, "scale", "Polynomial")
        Z = X / np.sqrt(s)
        G = gram(Z) if Y is None else matmul(Z, (Y / np.sqrt(s)).T)
        return G + 1.0, G

    def __call__(self, X, Y=None, eval_gradient=False):
        """Evaluate ``K(X, Y)`` and optionally its gradient."""
        X, Y = _check_XY(X, Y, eval_gradient)
        p = self._check_degree(self.degree)
        B, G = self._base(X, Y)
        K = B if p == 1 else np.power(B, p)
        if not eval_gradient:
            return K
        parts = {}
        if not self.hyperparameter_scale.fixed:
            # d/dlog m (1 + G)^p = -p (1 + G)^(p-1) G
            Bp = np.ones_like(B) if p == 1 else np.power(B, p - 1)
            parts["scale"] = -p * Bp * G
        return K, _ordered_tensor(self, parts, X.shape[0])

    def _contract(self, X, dK, K):
        p = self._check_degree(self.degree)
        B, G = self._base(X, None)
        W = dK * G
        if p > 1:
            W *= B if p == 2 else np.power(B, p - 1)
        return np.array([-p * W.sum()])

    def diag(self, X):
        """Diagonal of ``K(X)``: ``(1 + |x|^2 / scale)^degree``."""
        X = _check_X(X)
        s = _positive_scalar(self.scale, "scale", "Polynomial")
        return (1.0 + np.einsum("ij,ij->i", X, X) / s) ** self._check_degree(self.degree)

    def is_stationary(self):
        """Returns False."""
        return False

    def __repr__(self):
        return "{0}(degree={1}, scale={2:.3g})".format(
            type(self).__name__, self.degree, self.scale
        )


# ---------------------------------------------------------------------------
# Composites (shared with scikit-learn's Sum / Product / Exponentiation)
# ---------------------------------------------------------------------------


def _scalar_parameter(kernel, kinds):
    """``float(getattr(kernel, name))`` for the first ``(class, name)`` of kinds
    whose class is exactly the kernel's, else None."""
    for cls, name in kinds:
        if type(kernel) is cls:
            return float(getattr(kernel, name))
    return None


def _constant_value(kernel):
    """The value of a constant kernel (gpc or scikit-learn), else None."""
    return _scalar_parameter(kernel, ((Constant, "value"),
                                      (_sk.ConstantKernel, "constant_value")))


def _sum_leaves(kernel):
    """Terms of a (nested) sum, in theta order."""
    if type(kernel) in (Sum, _sk.Sum):
        return _sum_leaves(kernel.k1) + _sum_leaves(kernel.k2)
    return [kernel]


def _white_noise(kernel):
    """The noise level of a white-noise kernel (gpc or scikit-learn), else None."""
    return _scalar_parameter(kernel, ((White, "noise"), (_sk.WhiteKernel, "noise_level")))


def has_white_noise(kernel):
    """Whether ``kernel`` (gpc's or scikit-learn's) is a sum with a white-noise
    term (:class:`White` or ``WhiteKernel``) of positive noise."""
    return any((_white_noise(term) or 0.0) > 0 for term in _sum_leaves(kernel))


def _subtract_cheap(K, kernel):
    """In place ``K -= kernel(X)`` for constant / white terms; False otherwise."""
    constant, noise = _constant_value(kernel), _white_noise(kernel)
    if constant is not None:
        K -= constant
    elif noise is not None:
        K.flat[:: K.shape[0] + 1] -= noise
    else:
        return False
    return True


_CHEAP_TYPES = (Constant, White, _sk.ConstantKernel, _sk.WhiteKernel)


def _contract_sum(kernel, X, dK, K):
    """Sum: the gradients of the terms, concatenated in theta order.

    Nested sums are flattened.  If ``K`` is given and all terms but one are
    constant / white-noise terms (e.g. :func:`paper_kernel`), that term's
    matrix is recovered in place as ``K - constants - noise * I`` (absolute
    error of order eps times the constants) instead of being recomputed.
    """
    leaves = _sum_leaves(kernel)
    K_main, main = None, None
    if K is not None:
        others = [i for i, leaf in enumerate(leaves) if type(leaf) not in _CHEAP_TYPES]
        if len(others) == 1 and leaves[others[0]].n_dims:
            main = others[0]
            K_main = np.array(K, dtype=np.float64, order="C", copy=True)
            for i, leaf in enumerate(leaves):
                if i != main:
                    _subtract_cheap(K_main, leaf)
    parts = [
        _contract(leaf, X, dK, K_main if i == main else None)
        for i, leaf in enumerate(leaves)
    ]
    return np.concatenate(parts)


_LINEAR_IN_K = (SquaredExponential, _sk.RBF)


def _contract_product(kernel, X, dK, K):
    """Product ``k1 * k2``: contract k1 with ``dK * K2`` and k2 with ``dK * K1``.

    A constant factor ``c`` is treated as a scalar (no ``n x n`` constant
    matrix): ``d/dlog c = sum(dK * K)`` and, contraction being linear in
    ``dK``, the other factor's gradient is ``c * contract(other, dK)``.
    """
    k1, k2 = kernel.k1, kernel.k2
    n1, n2 = k1.n_dims, k2.n_dims
    c1, c2 = _constant_value(k1), _constant_value(k2)
    if c1 is not None or c2 is not None:
        if c1 is not None:
            c, nc, other, no = c1, n1, k2, n2
        else:
            c, nc, other, no = c2, n2, k1, n1
        if K is not None and no and c != 0.0:
            # Kernels whose contraction is linear in K (the squared exponential)
            # take K itself: c * contract(other, dK, K / c) == contract(other, dK, K),
            # which saves an n x n division.
            if type(other) in _LINEAR_IN_K:
                K_other, c_o = K, 1.0
            else:
                K_other, c_o = K / c, c
        else:
            K_other, c_o = None, c
        g_c = g_o = np.zeros(0)
        if nc and no and K is not None and type(other) is _sk.RBF:
            # sum(dK * K), the constant's gradient, is a by-product of the
            # squared exponential's pass over dK and K (which includes c).
            ls = _length_scale_for(other.length_scale, X, "RBF")
            g_o, g_c = _se_contract(X, ls, 1.0, dK, K, True, True)
        else:
            if nc and K is not None:
                g_c = np.array([frob(dK, K)])
            elif nc:
                K_other, c_o = other(X), c
                g_c = np.array([c * frob(dK, K_other)])
            if no:
                g_o = c_o * _contract(other, X, dK, K_other)
        return np.concatenate([g_c, g_o] if c1 is not None else [g_o, g_c])
    K1 = k1(X) if n2 else None
    K2 = k2(X) if n1 else None
    g1 = _contract(k1, X, dK * K2, K1) if n1 else np.zeros(0)
    g2 = _contract(k2, X, dK * K1, K2) if n2 else np.zeros(0)
    return np.concatenate([g1, g2])


def _contract_exponentiation(kernel, X, dK, K):
    """``k ** p``: contract k with ``dK * p * k(X) ** (p - 1)``."""
    base, p = kernel.kernel, kernel.exponent
    Kb = base(X)
    W = np.power(Kb, p - 1)
    W *= p
    W *= dK
    return _contract(base, X, W, Kb)


class Sum(Kernel, _sk.Sum):
    """Sum of two kernels, ``k1(x, x') + k2(x, x')``.

    A scikit-learn ``Sum`` (so ``theta`` is ``k1``'s then ``k2``'s, and
    nested parameters are ``k1__...``/``k2__...``) whose contraction
    contracts each part.  Usually created with ``k1 + k2``.

    Parameters
    ----------
    k1, k2 : Kernel
        Any scikit-learn kernels (gpc kernels keep fast contraction).

    Examples
    --------
    >>> from gpc.kernels import SquaredExponential, Constant, Sum
    >>> Sum(SquaredExponential(), Constant(0.5)) == SquaredExponential() + 0.5
    True
    """

    def __init__(self, k1, k2):
        self.k1 = as_kernel(k1)
        self.k2 = as_kernel(k2)

    _contract = _contract_sum


class Product(Kernel, _sk.Product):
    """Product of two kernels, ``k1(x, x') * k2(x, x')``.

    A scikit-learn ``Product`` with fast contraction; ``c * k`` for a number
    ``c`` gives ``Product(Constant(c), k)`` (the constant factor is handled
    as a scalar).

    Parameters
    ----------
    k1, k2 : Kernel
        Any scikit-learn kernels.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.kernels import SquaredExponential
    >>> k = 2.0 * SquaredExponential()
    >>> type(k).__name__, k.k1
    ('Product', Constant(value=2))
    >>> k(np.zeros((1, 1)))
    array([[2.]])
    """

    def __init__(self, k1, k2):
        self.k1 = as_kernel(k1)
        self.k2 = as_kernel(k2)

    _contract = _contract_product


class Exponentiation(Kernel, _sk.Exponentiation):
    """Elementwise power of a kernel, ``k(x, x') ** exponent``.

    Positive-definite by construction for integer exponents (Schur product
    theorem).  Usually created with ``k ** p``.

    Parameters
    ----------
    kernel : Kernel
        Base kernel.
    exponent : float
        Exponent (fixed, not a hyperparameter).

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.kernels import Linear
    >>> (Linear() ** 2)(np.array([[1.0, 2.0]]))
    array([[25.]])
    """

    def __init__(self, kernel, exponent):
        self.kernel = as_kernel(kernel)
        self.exponent = exponent

    _contract = _contract_exponentiation


# ---------------------------------------------------------------------------
# Fast paths for scikit-learn's own kernels (exact types only: subclasses may
# override __call__, as Matern does for RBF)
# ---------------------------------------------------------------------------


def _contract_sk_rbf(kernel, X, dK, K):
    ls = _length_scale_for(kernel.length_scale, X, "RBF")
    g_ls, _ = _se_contract(X, ls, 1.0, dK, K, True, False)
    return g_ls


def _contract_sk_matern(kernel, X, dK, K):
    nu = kernel.nu
    if nu not in (0.5, 1.5, 2.5, np.inf):
        return None  # general nu: scikit-learn's own (numerical) gradient
    ls = _length_scale_for(kernel.length_scale, X, "Matern")
    g_ls, _ = _matern_contract(X, ls, 1.0, nu, dK, K, True, False)
    return g_ls


def _contract_sk_constant(kernel, X, dK, K):
    return np.array([kernel.constant_value * dK.sum()])


def _contract_sk_white(kernel, X, dK, K):
    return np.array([kernel.noise_level * np.trace(dK)])


def _contract_sk_dot_product(kernel, X, dK, K):
    # K = sigma_0^2 + x.x'  =>  d/dlog sigma_0 = 2 sigma_0^2
    return np.array([2.0 * kernel.sigma_0**2 * dK.sum()])


_SKLEARN_FAST_PATHS = {
    _sk.RBF: _contract_sk_rbf,
    _sk.Matern: _contract_sk_matern,
    _sk.ConstantKernel: _contract_sk_constant,
    _sk.WhiteKernel: _contract_sk_white,
    _sk.DotProduct: _contract_sk_dot_product,
    _sk.Sum: _contract_sum,
    _sk.Product: _contract_product,
    _sk.Exponentiation: _contract_exponentiation,
}


def _contract(kernel, X, dK, K):
    """Dispatch without re-validating the inputs."""
    if kernel.n_dims == 0:
        return np.zeros(0)
    if isinstance(kernel, Kernel):
        g = kernel._contract(X, dK, K)
    else:
        fast = _SKLEARN_FAST_PATHS.get(type(kernel))
        g = fast(kernel, X, dK, K) if fast is not None else None
        if g is None:
            g = _contract_fallback(kernel, X, dK)
    return np.asarray(g, dtype=np.float64).reshape(-1)


def contract(kernel, X, dK, K=None, *, check_finite=True):
    """Gradient of ``sum(dK * kernel(X))`` with respect to ``kernel.theta``.

    Works for any scikit-learn kernel.  gpc kernels use their own fast
    contraction; scikit-learn's ``RBF`` (isotropic and ARD),
    ``ConstantKernel``, ``WhiteKernel``, ``Matern`` (nu 0.5, 1.5, 2.5, inf),
    ``DotProduct``, ``Sum``, ``Product`` and ``Exponentiation`` use the same
    ``O(n^2 d)`` code paths; any other kernel falls back to
    ``kernel(X, eval_gradient=True)`` followed by a tensor contraction.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        The kernel (gpc or scikit-learn).
    X : array-like of shape (n_samples, n_features)
        Inputs (2-D, finite).
    dK : array-like of shape (n_samples, n_samples)
        Derivative of the objective with respect to ``K = kernel(X)``.
        Inference returns a symmetric ``dK``; a non-symmetric one is handled
        exactly too (only its symmetric part matters since ``K`` is
        symmetric).
    K : array-like of shape (n_samples, n_samples), optional
        ``kernel(X)`` if already computed; it is reused where that saves
        work and must be the matrix of *this* kernel at the current
        hyperparameters.
    check_finite : bool, default=True
        Whether to check that ``dK`` and ``K`` hold finite numbers (one pass
        over each).  With False, a non-finite entry gives a non-finite
        gradient instead of an error: for callers that check the gradient
        (as :class:`~gpc.evidence.EvidenceObjective` does) or know their
        matrices are finite.

    Returns
    -------
    grad : ndarray of shape (kernel.n_dims,)
        ``grad[p] = sum_ij dK_ij * dK_ij/dtheta_p`` (``theta`` in log
        space), in the order of ``kernel.theta``: fixed hyperparameters are
        excluded, composites list ``k1``'s entries before ``k2``'s.

    Raises
    ------
    TypeError
        If ``kernel`` is not a scikit-learn kernel.
    ValueError
        If ``X`` is not 2-D or not finite, if ``dK`` or ``K`` have the wrong
        shape or non-finite entries, or if the kernel's hyperparameters do
        not fit ``X`` (e.g. the number of ARD length scales).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from gpc.kernels import contract
    >>> X = np.array([[0.0, 0.0], [1.0, 2.0]])
    >>> dK = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> kernel = ConstantKernel(2.0) * RBF([1.0, 2.0])
    >>> contract(kernel, X, dK)  # d/dlog c, d/dlog l1, d/dlog l2
    array([1.47151776, 1.47151776, 1.47151776])
    >>> K, K_gradient = kernel(X, eval_gradient=True)
    >>> np.allclose(contract(kernel, X, dK), np.tensordot(dK, K_gradient, 2))
    True
    """
    kernel = as_kernel(kernel)
    if kernel.requires_vector_input:
        X = _check_X(X)
    n = _num_samples(X)
    dK = _check_square(dK, n, "dK", check_finite)
    if K is not None:
        K = _check_square(K, n, "K", check_finite)
    return _contract(kernel, X, dK, K)


# ---------------------------------------------------------------------------
# Cross-covariances and diagonals: the contractions of sparse (inducing-point)
# models, which work on K(X, Z) in chunks and on k(x, x) instead of K(X)
# ---------------------------------------------------------------------------


def _se_form(kernel):
    """``(variance, length_scale)`` when the kernel is a squared exponential,
    alone or times a constant; None otherwise."""
    t = type(kernel)
    if t is _sk.RBF:
        return 1.0, kernel.length_scale
    if t is SquaredExponential:
        return float(kernel.variance), kernel.length_scale
    if t in (Product, _sk.Product):
        for a, b in ((kernel.k1, kernel.k2), (kernel.k2, kernel.k1)):
            c, inner = _constant_value(a), _se_form(b)
            if c is not None and inner is not None:
                return c * inner[0], inner[1]
    return None


def cross_covariance(kernel, X, Z):
    """``kernel(X, Z)``, by one matrix product for squared exponentials.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
    X : ndarray of shape (n_samples, n_features)
    Z : ndarray of shape (n_inducing, n_features)

    Returns
    -------
    K : ndarray of shape (n_samples, n_inducing), C-ordered float64

    Notes
    -----
    A squared exponential (scikit-learn's ``RBF`` or :class:`SquaredExponential`,
    alone or times a constant) is evaluated as
    ``variance * exp(x.z - |x|^2 / 2 - |z|^2 / 2)`` on the scaled inputs (one
    GEMM and one exp pass, no distance matrix); other kernels are called.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from gpc.kernels import cross_covariance
    >>> X, Z = np.random.RandomState(0).randn(5, 3), np.zeros((2, 3))
    >>> np.allclose(cross_covariance(2.0 * RBF([1.0, 2.0, 3.0]), X, Z),
    ...             (2.0 * RBF([1.0, 2.0, 3.0]))(X, Z))
    True
    """
    form = _se_form(kernel)
    if form is None:
        return np.ascontiguousarray(kernel(X, Z), dtype=np.float64)
    variance, ls = form
    ls = _length_scale_for(ls, X, type(kernel).__name__)
    Xs, Zs = _scaled_inputs(X, Z, ls)
    return _se_matrix(Xs, Zs, variance)


def covariance_matrix(kernel, X):
    """``kernel(X)``, by gpc's compiled routine for squared exponentials.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
    X : array-like of shape (n_samples, n_features) or list of object

    Returns
    -------
    K : ndarray of shape (n_samples, n_samples)

    Notes
    -----
    A squared exponential (scikit-learn's ``RBF`` or :class:`SquaredExponential`,
    alone or times a constant) on a numeric array is evaluated as gpc's own
    :class:`SquaredExponential` is (:func:`gpc._kern.sym_stationary`: one pass over
    the lower triangle, mirrored; exactly symmetric), instead of through
    scikit-learn's distance matrix and its copies; the values agree to rounding.
    Other kernels and inputs are called.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from gpc.kernels import covariance_matrix
    >>> X = np.random.RandomState(0).randn(5, 3)
    >>> np.allclose(covariance_matrix(2.0 * RBF([1.0, 2.0, 3.0]), X),
    ...             (2.0 * RBF([1.0, 2.0, 3.0]))(X))
    True
    """
    return _covariance_matrix(kernel, X)[0]


def _covariance_matrix(kernel, X):
    """``(covariance_matrix(kernel, X), exact)``: ``exact`` when the matrix came
    from the compiled routine with finite inputs, norms and variance, so that it
    is finite and exactly symmetric by construction (a Fortran float64 array that
    needs no check)."""
    form = _se_form(kernel)
    if (form is None or not isinstance(X, np.ndarray) or X.ndim != 2
            or X.dtype.kind not in "fiu"):
        return kernel(X), False
    variance, ls = form
    ls = _length_scale_for(ls, X, type(kernel).__name__)
    Xs, _ = _scaled_inputs(np.asarray(X, dtype=np.float64), None, ls)
    K = _se_matrix(Xs, None, variance)
    # Finite squared norms (in length scales) bound every distance: no inf - inf.
    exact = bool(np.isfinite(variance) and np.isfinite(np.einsum("ij,ij->", Xs, Xs)))
    return K, exact


def kernel_matrix(kernel, X, error=ValueError):
    """``kernel(X)`` (by :func:`covariance_matrix`) checked by
    :func:`gpc._validation.as_kernel_matrix` (a Fortran float64 array), unless it
    is finite and symmetric by construction; a failed check raises ``error`` with
    its message, naming the kernel (a NotPositiveDefiniteError stays one)."""
    try:
        K, exact = _covariance_matrix(kernel, X)
        return fortran_view(K) if exact else as_kernel_matrix(K)
    except ValueError as exc:
        kind = type(exc) if isinstance(exc, NotPositiveDefiniteError) else error
        raise kind(f"The kernel {kernel!r}: {exc}") from None


def cross_covariance_chunks(kernel, X, Z, chunk_size):
    """``kernel(X, Z)`` and ``kernel.diag(Z)`` in blocks of the rows of Z.

    Yields ``(start, K, k_diag)`` per block ``Z[start:start + chunk_size]``: ``K``
    of shape (n_X, block) is Fortran-ordered float64 and freshly allocated (the
    caller may overwrite it), computed by :func:`cross_covariance`, or by the
    kernel itself (from differences) where the inputs' squared norms overflow.
    Memory stays at one block however many rows Z has.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
    X : array-like of shape (n_X, n_features) or list of object
    Z : array-like of shape (n_Z, n_features) or list of object
    chunk_size : int
        Rows of Z per block (at least 1).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from gpc.kernels import cross_covariance_chunks
    >>> X, Z = np.zeros((2, 1)), np.arange(5.0)[:, None]
    >>> [(start, K.shape) for start, K, _ in cross_covariance_chunks(RBF(), X, Z, 2)]
    [(0, (2, 2)), (2, (2, 2)), (4, (2, 1))]
    """
    step = max(int(chunk_size), 1)
    for start in range(0, len(Z), step):
        Zc = Z[start:start + step]
        try:
            K = cross_covariance(kernel, Zc, X)
        except _NormOverflowError:
            K = np.asarray(kernel(Zc, X), dtype=np.float64)
        yield (start, np.asfortranarray(K.T),
               np.ascontiguousarray(kernel.diag(Zc), dtype=np.float64))


def _se_cross_sum(X, Z, length_scale, P):
    """``sum_ij P_ij (x_ik - z_jk)^2 / l_k^2`` per k (summed over k when the
    length scale is a scalar), by one GEMM: O(n m d), no n x m x d tensor."""
    Xs, Zs = _scaled_inputs(X, Z, length_scale)
    _check_norms(np.einsum("ij,ij->i", Xs, Xs))
    _check_norms(np.einsum("ij,ij->i", Zs, Zs))
    g = (P.sum(axis=1) @ (Xs * Xs) + P.sum(axis=0) @ (Zs * Zs)
         - 2.0 * np.einsum("ik,ik->k", Xs, matmul(P, Zs)))
    return g if np.ndim(length_scale) == 1 else np.array([g.sum()])


def _contract_cross_stacked(kernel, X, Z, G):
    """Any kernel: ``contract`` on the stacked inputs [X; Z] with G in the
    off-diagonal blocks (exact; O((n + m)^2) per call, so callers pass chunks)."""
    n, m = X.shape[0], Z.shape[0]
    W = np.zeros((n + m, n + m))
    W[:n, n:] = 0.5 * G
    W[n:, :n] = 0.5 * G.T
    return _contract(kernel, np.concatenate([X, Z]), W, None)


def _contract_cross(kernel, X, Z, G, K):
    """Dispatch of :func:`contract_cross` (inputs already checked)."""
    if kernel.n_dims == 0:
        return np.zeros(0)
    t = type(kernel)
    c = _constant_value(kernel)
    if c is not None:
        return np.array([c * G.sum()])
    if t in (White, _sk.WhiteKernel):              # zero off the training diagonal
        return np.zeros(kernel.n_dims)
    if t in (SquaredExponential, _sk.RBF):
        K = kernel(X, Z) if K is None else K
        P = G * K
        if t is _sk.RBF:
            return _se_cross_sum(X, Z, _length_scale_for(kernel.length_scale, X, "RBF"),
                                 P)
        ls, _ = kernel._values(X)
        parts = {"variance": np.array([P.sum()])}
        if not kernel.hyperparameter_length_scale.fixed:
            parts["length_scale"] = _se_cross_sum(X, Z, ls, P)
        return _ordered(kernel, parts)
    if t in (Sum, _sk.Sum):
        return np.concatenate([_contract_cross(kernel.k1, X, Z, G, None),
                               _contract_cross(kernel.k2, X, Z, G, None)])
    if t in (Product, _sk.Product):
        k1, k2 = kernel.k1, kernel.k2
        c1, c2 = _constant_value(k1), _constant_value(k2)
        if K is not None and (c1 is not None or c2 is not None):
            # A constant factor c: d/dlog c = sum(G * K); the other factor gets
            # c * contract(other, G, K / c), which is contract(other, G, K) for
            # the squared exponential (linear in K).
            c, other = (c1, k2) if c1 is not None else (c2, k1)
            K_o, scale = (K, 1.0) if type(other) in _LINEAR_IN_K else (K / c, c)
            g_c = np.array([frob(G, K)]) if (k1 if c1 is not None else k2).n_dims \
                else np.zeros(0)
            g_o = scale * _contract_cross(other, X, Z, G, K_o)
            return np.concatenate([g_c, g_o] if c1 is not None else [g_o, g_c])
        K1 = k1(X, Z) if k2.n_dims else None
        K2 = k2(X, Z) if k1.n_dims else None
        return np.concatenate([
            _contract_cross(k1, X, Z, G * K2, None) if k1.n_dims else np.zeros(0),
            _contract_cross(k2, X, Z, G * K1, None) if k2.n_dims else np.zeros(0)])
    return np.asarray(_contract_cross_stacked(kernel, X, Z, G),
                      dtype=np.float64).reshape(-1)


def _cross_arguments(kernel, X, Z, G):
    """``(kernel, X, Z, G)`` checked for :func:`contract_cross` and
    :func:`contract_inputs`: G of shape (n_X, n_Z), X and Z with as many
    features."""
    kernel = as_kernel(kernel)
    X, Z = _check_X(X), _check_X(Z, "Z")
    G = np.asarray(G, dtype=np.float64)
    if G.shape != (X.shape[0], Z.shape[0]):
        raise ValueError(f"G has shape {G.shape}; expected {(X.shape[0], Z.shape[0])}.")
    if X.shape[1] != Z.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features; Z has {Z.shape[1]}.")
    return kernel, X, Z, G


def contract_cross(kernel, X, Z, G, K=None):
    """Gradient of ``sum(G * kernel(X, Z))`` with respect to ``kernel.theta``.

    The cross-covariance counterpart of :func:`contract`, for models that work
    on ``K(X, Z)`` between data and inducing inputs (:mod:`gpc.sparse.ep`).

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        The kernel (gpc or scikit-learn).
    X : array-like of shape (n_samples, n_features)
    Z : array-like of shape (n_inducing, n_features)
    G : array-like of shape (n_samples, n_inducing)
        Derivative of the objective with respect to ``kernel(X, Z)``.
    K : array-like of shape (n_samples, n_inducing), optional
        ``kernel(X, Z)`` if already computed (used by squared-exponential
        kernels standing alone).

    Returns
    -------
    grad : ndarray of shape (kernel.n_dims,)
        In the order of ``kernel.theta`` (log space).

    Notes
    -----
    Squared exponentials (``RBF``, :class:`SquaredExponential`, isotropic or
    ARD), constants, white noise (zero between distinct inputs), sums and
    products are contracted in O(n m d) with one matrix product; any other
    kernel goes through :func:`contract` on the stacked inputs ``[X; Z]``,
    which costs O((n + m)^2 d): call it on chunks of X.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from gpc.kernels import contract_cross
    >>> X, Z = np.array([[0.0, 0.0], [1.0, 2.0]]), np.array([[0.5, 1.0]])
    >>> kernel = ConstantKernel(2.0) * RBF([1.0, 2.0])
    >>> g = contract_cross(kernel, X, Z, np.ones((2, 1)))
    >>> h = 1e-6
    >>> fd = [(kernel.clone_with_theta(kernel.theta + h * e)(X, Z).sum()
    ...        - kernel(X, Z).sum()) / h for e in np.eye(3)]
    >>> np.allclose(g, fd, rtol=1e-5)
    True
    """
    return _contract_cross(*_cross_arguments(kernel, X, Z, G), K)


def contract_diag(kernel, X, s, chunk_size=256):
    """Gradient of ``sum(s * kernel.diag(X))`` with respect to ``kernel.theta``.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
    X : array-like of shape (n_samples, n_features)
    s : array-like of shape (n_samples,)
        Derivative of the objective with respect to ``kernel.diag(X)``.
    chunk_size : int, default=256
        Rows per call of :func:`contract` for non-stationary kernels.

    Returns
    -------
    grad : ndarray of shape (kernel.n_dims,)

    Notes
    -----
    For a stationary kernel ``k(x, x)`` is one number, so the gradient is
    ``sum(s)`` times that of ``k(x, x)``: O(n).  Other kernels contract
    ``diag(s)`` chunk by chunk.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from gpc.kernels import contract_diag
    >>> kernel = ConstantKernel(2.0) * RBF(1.0)
    >>> contract_diag(kernel, np.zeros((3, 1)), np.ones(3))  # 3 * d(2)/dlog 2
    array([6., 0.])
    """
    kernel = as_kernel(kernel)
    X = _check_X(X)
    s = np.asarray(s, dtype=np.float64).reshape(-1)
    if s.shape[0] != X.shape[0]:
        raise ValueError(f"s has {s.shape[0]} entries; X has {X.shape[0]} rows.")
    if kernel.n_dims == 0 or X.shape[0] == 0:
        return np.zeros(kernel.n_dims)
    if kernel.is_stationary():
        return float(s.sum()) * _contract(kernel, X[:1], np.ones((1, 1)), None)
    return sum(_contract(kernel, X[i:i + chunk_size], np.diag(s[i:i + chunk_size]), None)
               for i in range(0, X.shape[0], chunk_size))


def _radial_form(kernel, X):
    """``(variance, length_scale, nu)`` of a squared exponential (nu = inf; alone
    or times a constant, :func:`_se_form`) or a Matern kernel with nu in {0.5,
    1.5, 2.5, inf}, gpc's or scikit-learn's; None for any other kernel."""
    form = _se_form(kernel)
    if form is not None:
        return form[0], _length_scale_for(form[1], X, type(kernel).__name__), np.inf
    t = type(kernel)
    if t is _sk.Matern and kernel.nu in (0.5, 1.5, 2.5, np.inf):
        return 1.0, _length_scale_for(kernel.length_scale, X, "Matern"), kernel.nu
    if t is Matern:
        ls, variance, nu = kernel._values(X)
        return variance, ls, nu
    return None


def _radial_inputs(X, Z, G, form, K=None):
    """``d/dZ sum(G * k(X, Z))`` for ``k = variance * f(r)``, r the distance in
    length scales: ``sum_i A_ij (x_i - z_j) / l^2`` with ``A = G * variance *
    (-f'(r) / r)`` (``G * K`` for the squared exponential, K given or formed),
    by one GEMM."""
    variance, ls, nu = form
    Xs, Zs = _scaled_inputs(X, Z, ls)
    if nu == np.inf:
        A = G * (_se_matrix(Xs, Zs, variance) if K is None else K)
    else:
        r = _sqdist(Xs, Zs)
        np.sqrt(np.maximum(r, 0.0, out=r), out=r)
        A = G * _matern_weight(r, nu)
        A *= variance
    return (matmul(A.T, Xs) - A.sum(axis=0)[:, None] * Zs) / ls


def _contract_inputs(kernel, X, Z, G, K=None):
    """Dispatch of :func:`contract_inputs` (inputs already checked; K, when
    given, is ``kernel(X, Z)``)."""
    t = type(kernel)
    if _constant_value(kernel) is not None or t in (White, _sk.WhiteKernel):
        return np.zeros(Z.shape)           # no dependence on distinct inputs
    form = _radial_form(kernel, X)
    if form is not None:
        return _radial_inputs(X, Z, G, form, K)
    if t in (Sum, _sk.Sum):
        return _contract_inputs(kernel.k1, X, Z, G) + _contract_inputs(kernel.k2, X, Z, G)
    if t in (Product, _sk.Product):
        for c, other in ((_constant_value(kernel.k1), kernel.k2),
                         (_constant_value(kernel.k2), kernel.k1)):
            if c is not None:                  # no n x m matrix of the constant
                return c * _contract_inputs(other, X, Z, G)
        return (_contract_inputs(kernel.k1, X, Z, G * cross_covariance(kernel.k2, X, Z))
                + _contract_inputs(kernel.k2, X, Z, G * cross_covariance(kernel.k1, X, Z)))
    if t in (Exponentiation, _sk.Exponentiation):
        p = float(kernel.exponent)
        base = cross_covariance(kernel.kernel, X, Z)
        return _contract_inputs(kernel.kernel, X, Z, G * p * base ** (p - 1.0))
    raise ValueError(
        f"Learning inducing inputs needs the gradient of the kernel {kernel!r} with "
        "respect to its inputs, which gpc has for squared exponential and Matern "
        "(nu 0.5, 1.5, 2.5, inf) kernels, constants, white noise, and their sums, "
        "products and powers.")


def contract_inputs(kernel, X, Z, G, K=None):
    """Gradient of ``sum(G * kernel(X, Z))`` with respect to the inputs Z.

    The derivative that learning a sparse model's inducing inputs needs
    (:mod:`gpc.sparse.ep`).

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        A squared exponential (``RBF``, :class:`SquaredExponential`) or Matern
        kernel with nu in {0.5, 1.5, 2.5, inf} (gpc's or scikit-learn's),
        constants, white noise, or sums, products and powers of these.
    X : array-like of shape (n_samples, n_features)
    Z : array-like of shape (n_inducing, n_features)
    G : array-like of shape (n_samples, n_inducing)
        Derivative of the objective with respect to ``kernel(X, Z)``.
    K : array-like of shape (n_samples, n_inducing), optional
        ``kernel(X, Z)`` if already computed (used by squared exponentials,
        alone or times a constant).

    Returns
    -------
    grad : ndarray of shape (n_inducing, n_features)

    Raises
    ------
    ValueError
        For a kernel outside the list above.

    Notes
    -----
    For ``k(x, z) = v f(r)`` with ``r^2 = sum_k (x_k - z_k)^2 / l_k^2`` the
    derivative is ``dk/dz_k = v (-f'(r) / r) (x_k - z_k) / l_k^2``, so the
    contraction is one matrix product, O(n m d).  White noise is zero between
    distinct inputs and constants do not depend on them.  For ``K(Z, Z)``
    itself (both arguments moving) with a symmetric G the gradient is twice
    ``contract_inputs(kernel, Z, Z, G)``: a stationary kernel's diagonal does
    not depend on Z.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from gpc.kernels import contract_inputs
    >>> X, Z = np.array([[0.0, 0.0], [1.0, 2.0]]), np.array([[0.2, 1.5]])
    >>> kernel = ConstantKernel(2.0) * RBF([1.0, 2.0])
    >>> g = contract_inputs(kernel, X, Z, np.ones((2, 1)))
    >>> h = 1e-6
    >>> fd = [(kernel(X, Z + h * e).sum() - kernel(X, Z - h * e).sum()) / (2 * h)
    ...       for e in np.eye(2)[:, None, :]]
    >>> g.round(4)
    array([[ 0.8301, -0.379 ]])
    >>> np.allclose(g.ravel(), fd, rtol=1e-6)
    True
    """
    return _contract_inputs(*_cross_arguments(kernel, X, Z, G), K)


# ---------------------------------------------------------------------------
# Positive semi-definiteness and the papers' covariance
# ---------------------------------------------------------------------------

_PSD_LEAVES = (
    SquaredExponential,
    Matern,
    Constant,
    White,
    Linear,
    Polynomial,
    _sk.RBF,
    _sk.Matern,
    _sk.RationalQuadratic,
    _sk.ExpSineSquared,
    _sk.DotProduct,
)

# Kernels whose every positive power is again a PSD kernel of the same family.
_INFINITELY_DIVISIBLE = (
    SquaredExponential,
    Constant,
    White,
    _sk.RBF,
    _sk.RationalQuadratic,
    _sk.ExpSineSquared,
)

_PSD_PAIRWISE_METRICS = ("linear", "rbf", "laplacian", "cosine")


def _infinitely_divisible(kernel):
    t = type(kernel)
    if t in _INFINITELY_DIVISIBLE:
        return True
    if t is _sk.ConstantKernel:
        return kernel.constant_value >= 0
    if t is _sk.WhiteKernel:
        return kernel.noise_level >= 0
    if t is _sk.Matern:
        return kernel.nu in (0.5, np.inf)
    if t in (Product, _sk.Product):
        return _infinitely_divisible(kernel.k1) and _infinitely_divisible(kernel.k2)
    if t in (Exponentiation, _sk.Exponentiation):
        return kernel.exponent > 0 and _infinitely_divisible(kernel.kernel)
    return False


def is_psd_by_construction(kernel):
    """Whether ``kernel`` is positive semi-definite by construction.

    True for the kernels of this module, scikit-learn's standard kernels
    (``RBF``, ``Matern``, ``RationalQuadratic``, ``ExpSineSquared``,
    ``DotProduct``, ``ConstantKernel``/``WhiteKernel`` with non-negative
    values, ``PairwiseKernel`` with a linear, rbf, laplacian or cosine
    metric), and sums and products of such kernels and their positive
    integer powers (plus any positive power of an infinitely divisible
    kernel such as the squared exponential).  False for anything else,
    e.g. user-defined kernels, whose matrices should then be checked.

    Only the exact classes are recognised: a subclass may change the
    covariance and is treated as unknown.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel

    Returns
    -------
    bool

    Examples
    --------
    >>> from sklearn.gaussian_process.kernels import RBF, PairwiseKernel
    >>> from gpc.kernels import is_psd_by_construction, Linear
    >>> is_psd_by_construction(2.0 * RBF() + Linear() ** 3)
    True
    >>> is_psd_by_construction(PairwiseKernel(metric="sigmoid"))
    False
    """
    kernel = as_kernel(kernel)
    t = type(kernel)
    if t in _PSD_LEAVES:
        return True
    if t is _sk.ConstantKernel:
        return bool(np.all(np.asarray(kernel.constant_value) >= 0))
    if t is _sk.WhiteKernel:
        return bool(np.all(np.asarray(kernel.noise_level) >= 0))
    if t in (Sum, Product, _sk.Sum, _sk.Product):
        return is_psd_by_construction(kernel.k1) and is_psd_by_construction(kernel.k2)
    if t in (Exponentiation, _sk.Exponentiation):
        p = kernel.exponent
        if isinstance(p, numbers.Real) and not isinstance(p, bool):
            if p >= 1 and p == int(p):
                return is_psd_by_construction(kernel.kernel)
            if p > 0:
                return _infinitely_divisible(kernel.kernel)
        return False
    if t is _sk.PairwiseKernel:
        return isinstance(kernel.metric, str) and kernel.metric in _PSD_PAIRWISE_METRICS
    return False


def paper_kernel(
    length_scale,
    theta1=1.0,
    theta2=1.0,
    jitter=1e-6,
    *,
    length_scale_bounds=_DEFAULT_BOUNDS,
    theta1_bounds=_DEFAULT_BOUNDS,
    theta2_bounds=_DEFAULT_BOUNDS,
    jitter_bounds="fixed",
):
    """The covariance of the papers: ``theta1 * SE_ARD + theta2 + jitter * delta``.

    .. math::

        k(x, x') = \\theta_1 \\exp\\Big(-\\frac12 \\sum_k
                   \\frac{(x_k - x'_k)^2}{\\ell_k^2}\\Big) + \\theta_2
                   + J \\delta_{x x'}

    Built as ``Sum(Sum(SquaredExponential(length_scale, theta1),
    Constant(theta2)), White(jitter))``, so
    ``theta = [log l_1, ..., log l_d, log theta1, log theta2]`` with the
    jitter fixed by default.

    Parameters
    ----------
    length_scale : float or array-like of shape (n_features,)
        Length scales (an array gives ARD; a scalar an isotropic kernel).
    theta1 : float, default=1.0
        Signal variance of the squared exponential.
    theta2 : float, default=1.0
        Bias (constant) variance.
    jitter : float, default=1e-6
        Added to the diagonal of ``K(X)`` (not to cross covariances).
    length_scale_bounds, theta1_bounds, theta2_bounds : pair or "fixed"
        Bounds, default ``(1e-5, 1e5)``.
    jitter_bounds : pair or "fixed", default="fixed"

    Returns
    -------
    kernel : Sum

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.kernels import paper_kernel
    >>> k = paper_kernel([1.0, 2.0], theta1=2.0, theta2=0.5)
    >>> k.theta.shape
    (4,)
    >>> X = np.array([[0.0, 0.0], [1.0, 2.0]])
    >>> k(X)
    array([[2.500001  , 1.23575888],
           [1.23575888, 2.500001  ]])
    """
    se = SquaredExponential(
        length_scale=length_scale,
        variance=theta1,
        length_scale_bounds=length_scale_bounds,
        variance_bounds=theta1_bounds,
    )
    return Sum(
        Sum(se, Constant(theta2, value_bounds=theta2_bounds)),
        White(jitter, noise_bounds=jitter_bounds),
    )
