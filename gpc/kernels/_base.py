"""The base class of gpc's kernels and the contraction of any kernel.

:class:`Kernel` adds ``contract`` and gpc's operators to scikit-learn's kernel; its
operators build the composites :class:`Sum`, :class:`Product` and
:class:`Exponentiation`, and turn numbers into :class:`Constant` kernels.
:func:`contract` dispatches: gpc's kernels contract themselves, scikit-learn's
standard kernels and composites take the same fast paths, and any other kernel
falls back to its gradient tensor.
"""

import numbers

import numpy as np
from sklearn.gaussian_process import kernels as _sk
from sklearn.gaussian_process.kernels import Hyperparameter

from .._blocks import frob
from ._distances import _matern_contract, _se_contract
from ._inputs import (_DEFAULT_BOUNDS, _check_square, _check_X, _check_XY,
                      _length_scale_for, _num_samples, _positive_scalar, as_kernel)


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
# Constant and white noise: the kernels that numbers and jitter become
# ---------------------------------------------------------------------------


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


#: The kernel types (exact types) whose contraction is linear in the K it is given,
#: ``c * contract(k, X, dK, K / c) == contract(k, X, dK, K)``, so that a constant
#: factor need not be divided out of K: scikit-learn's RBF, and gpc's
#: SquaredExponential, which :mod:`gpc.kernels._stationary` adds where it defines it.
_LINEAR_IN_K = {_sk.RBF}


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
