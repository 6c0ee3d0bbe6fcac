"""The multinomial likelihood of C latent values, :class:`Softmax`, its quasi-Monte
Carlo predictive rule, and the overflow-free :func:`softmax` and
:func:`log_normaliser`."""

import numpy as np
from scipy.special import ndtr, ndtri
from scipy.stats import qmc

from .. import _moments, _softmax
from ._base import LikelihoodBase, _check_count, _register


def softmax(F, axis=0, overwrite=False):
    """Class probabilities ``exp(F) / sum(exp(F))`` along ``axis``, without overflow
    (computed in F itself with ``overwrite`` and a float64 array F).

    Examples
    --------
    >>> from gpc.likelihoods import softmax
    >>> softmax([[0.0, 1000.0], [0.0, 0.0]]).round(3)
    array([[0.5, 1. ],
           [0.5, 0. ]])
    """
    F = np.asarray(F, dtype=np.float64)
    P = F if overwrite else F.copy()
    P -= np.max(P, axis=axis, keepdims=True)
    np.exp(P, out=P)
    P /= np.sum(P, axis=axis, keepdims=True)
    return P


def log_normaliser(F, axis=0):
    """``log(sum(exp(F)))`` along ``axis``, without overflow."""
    F = np.asarray(F, dtype=np.float64)
    top = np.max(F, axis=axis, keepdims=True)
    return np.squeeze(top, axis) + np.log(np.sum(np.exp(F - top), axis=axis))


class MultinomialLikelihood(LikelihoodBase):
    """Base of the likelihoods of C latent values per example.

    The multinomial model's likelihoods, of labels ``0 .. C - 1``.

    A subclass defines ``log_lik(y, F)`` (F of shape (C, n)) and ``predict(mean,
    cov)`` (class probabilities for latent Gaussians of means (m, C) and
    covariances (m, C, C)), and the methods registered for it do the rest.
    """

    _abstract = True
    multinomial = True
    n_classes = None

    def log_lik(self, y, F):
        """``log p(y_i | f_i)`` for labels y (n,) and latent values F (C, n)."""
        raise NotImplementedError

    def predict(self, mean, cov):
        """Class probabilities (m, C) for latent means (m, C) and covariances
        (m, C, C)."""
        raise NotImplementedError

    def check_targets(self, y, n=None):
        """Integer labels ``0, 1, ..., C - 1`` as an int64 array (ValueError otherwise)."""
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D, got shape {y.shape}.")
        if n is not None and y.shape[0] != n:
            raise ValueError(f"y has {y.shape[0]} labels but {n} were expected.")
        if y.dtype.kind not in "iub" and not (
                y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y))):
            raise ValueError("y must hold integer class labels 0 .. C - 1, got "
                             f"dtype {y.dtype}.")
        top = self.n_classes
        # Checked in y's own type: a uint64 label of 2**63 or more would wrap.
        if y.size and (y.min() < 0 or y.max() >= (2 ** 31 if top is None else top)):
            raise ValueError(f"y must hold labels 0 .. {'C' if top is None else top} - 1,"
                             f" got {int(y.min())} .. {int(y.max())}.")
        return y.astype(np.int64)

    def _checked_moments(self, mean, cov):
        """The arguments of ``predict`` as float64 arrays, checked (the
        likelihood's own parameters too)."""
        self._validate()
        mean = np.asarray(mean, dtype=np.float64)
        cov = np.asarray(cov, dtype=np.float64)
        if mean.ndim != 2:
            raise ValueError(f"mean must have shape (m, C), got {mean.shape}.")
        m, C = mean.shape
        if cov.shape != (m, C, C):
            raise ValueError(f"cov must have shape {(m, C, C)}, got {cov.shape}.")
        for name, a in (("mean", mean), ("cov", cov)):
            bad = ~np.isfinite(a).reshape(m, int(np.prod(a.shape[1:]))).all(axis=1)
            if bad.any():
                raise ValueError(f"{name} is not finite for {int(bad.sum())} of the "
                                 f"{m} points (the first: row {int(np.argmax(bad))}).")
        return mean, cov


class Softmax(MultinomialLikelihood):
    """Multinomial likelihood of C latent values: ``p(y = c | f) = softmax(f)_c``.

    The likelihood of ``GaussianProcessClassifier(multi_class="multinomial")``
    and of :func:`gpc.infer` with ``likelihood="softmax"``: one latent function
    per class, labels ``0 .. C - 1``.  With two classes it is the logit
    likelihood of ``f_1 - f_0``.

    Parameters
    ----------
    n_classes : int or None, default=None
        The number of classes C.  None takes it from the data: the number of
        kernel matrices given to :func:`gpc.infer`, or else the largest label
        plus one.
    n_points : int or None, default=None
        Points of the quasi-Monte Carlo rule of :meth:`predict` (a power of 2),
        shared by the C classes.  None chooses by the number of classes: 1 for
        two (the rule is then exact), 2^11 for three, 2^12 for four, 2^13 for
        five to ten, 2^14 for 11 to 15 and 2^15 from 16.

    Notes
    -----
    :meth:`predict` integrates one direction per class exactly and the others
    by quasi-Monte Carlo.  With ``G = P cov P`` the covariance in the C - 1
    directions that change the softmax (``P`` the projection orthogonal to
    ``(1, ..., 1)``; ``softmax(f + t 1) = softmax(f)``) and ``v_c = P e_c``
    the direction that moves class c against all the others, ``f - mean``
    splits into an independent normal term ``tau_c v_c`` of variance
    ``s_c^2 = 1 / (G^+)_cc`` (the largest such variance) and a remainder
    ``y_c``.  As ``softmax(f)_c = sigma(f_c - logsumexp(f_{-c}))`` and the
    term moves ``f_c - logsumexp(f_{-c})`` by ``tau_c``,

        p_c = E[Lambda(mean_c + y_cc - logsumexp(mean_{-c} + y_{c,-c}), s_c^2)],

    where ``Lambda(a, v) = E[sigma(a + sqrt(v) z)]`` is the logistic-normal
    integral (read from a table built once from the normal scale mixture of
    the logistic, within 1e-8).  The remaining expectation is an average over
    a fixed scrambled Sobol' point set (seed 0) mapped through the normal
    quantile function and the principal axes of ``G`` in decreasing
    variance, the same points for every class.  The C integrands, ``h_c``,
    sum to a function ``1 + z`` whose mean is exactly 1, so ``z`` is a
    control variate: each class's average is corrected by its regression on
    ``z``, with the slope estimated from the same points (and saturated at 4
    in size); the C results, clipped at zero, are divided by their sum.  The
    rule is deterministic and smooth in the mean and covariance, gives
    ``softmax(mean)`` for a zero covariance and, for two classes (where the
    remainder vanishes), the logistic-normal integral of ``f_1 - f_0``.  Its
    error grows with the latent variance, as the softmax approaches a step,
    and with C; the default numbers of points keep it within 1e-3 of long
    Monte Carlo averages on the predictive distributions of the wine and
    digits fits of ``bench/bench_multinomial.py`` (see ``bench/RESULTS.md``),
    where the latent variances reach several hundred.  The cost is
    ``n_points * C`` exponentials, logarithms and table look-ups per test
    point, in loops over blocks of points that the compiler vectorises.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.likelihoods import Softmax
    >>> p = Softmax().predict(np.zeros((1, 3)), np.eye(3)[None])
    >>> p.round(3)
    array([[0.333, 0.333, 0.333]])
    """

    name = "softmax"

    def __init__(self, n_classes=None, n_points=None):
        self.n_classes = n_classes
        self.n_points = n_points
        self._validate()

    def _validate(self):
        if self.n_classes is not None:
            _check_count(self.n_classes, "n_classes", 2)
        if self.n_points is not None:
            _check_count(self.n_points, "n_points", 1)
            if self.n_points & (self.n_points - 1):
                raise ValueError(f"n_points must be a power of 2, got {self.n_points}.")

    def log_lik(self, y, F):
        """``log p(y_i | f_i)`` for labels y (n,) and latent values F (C, n)."""
        F = np.asarray(F, dtype=np.float64)
        y = self.check_targets(y, F.shape[1])
        return F[y, np.arange(F.shape[1])] - log_normaliser(F)

    def predict(self, mean, cov):
        """Class probabilities ``E[softmax(f)]`` for ``f ~ N(mean, cov)``.

        Parameters
        ----------
        mean : array_like of shape (m, C)
        cov : array_like of shape (m, C, C)
            Symmetric positive semi-definite (negative eigenvalues from rounding
            are set to zero).

        Returns
        -------
        ndarray of shape (m, C)
            Rows summing to 1.

        Raises
        ------
        ValueError
            If the shapes disagree or a mean or covariance is not finite.
        """
        mean, cov = self._checked_moments(mean, cov)
        C = mean.shape[1]
        n_points = int(self.n_points or _default_points(C))
        return _softmax_rule(mean, cov, _normal_points(C - 1, n_points))


def _softmax_rule(mean, cov, points):
    """:meth:`Softmax.predict` with the standard normal points given, (C - 1, n)."""
    C = mean.shape[1]
    # softmax(f + t 1) = softmax(f): only the covariance orthogonal to 1
    # matters, C - 1 directions, taken in decreasing variance so that the
    # first (best spread) coordinates of the point set carry the most.
    basis = np.linalg.qr(np.eye(C) - 1.0 / C)[0][:, :C - 1]   # orthonormal, 1-free
    w, V = np.linalg.eigh(basis.T @ cov @ basis)
    w, V = w[:, ::-1], basis @ V[:, :, ::-1]
    # Variances below 1e-13 of the largest are raised to it (a covariance
    # changed by that much): G^+ then exists.
    w = np.maximum(w, np.maximum(1e-13 * w[:, :1], 1e-200))
    R = V * np.sqrt(w)[:, None, :]                  # f = mean + R u
    QV = V / np.sqrt(w)[:, None, :]
    s2 = 1.0 / np.einsum("ick,ick->ic", QV, QV)     # 1 / (G^+)_cc
    Q = QV * s2[:, :, None]                         # tau_c = Q_c u
    tv, td, X = _logistic_normal_table()
    sums = _softmax.rb_sums(np.ascontiguousarray(mean), np.ascontiguousarray(R),
                            np.ascontiguousarray(R - Q), np.ascontiguousarray(s2),
                            np.ascontiguousarray(points, dtype=np.float64), tv, td, X)
    return _combine(sums, points.shape[1])


def _combine(sums, n):
    """Class probabilities from the sums of :func:`gpc._softmax.rb_sums` over n points.

    Each class's average of ``h_c`` is corrected by its regression on the control
    variate ``z = sum_c h_c - 1``, whose mean is known to be 0; the results,
    clipped at 0, are divided by their sum.  The slopes sum to 1, so the
    corrected averages already do.  Each slope b is used as
    ``b / (1 + (b / 4)^8)^(1/8)``, smooth, within 1e-8 of b up to 0.5 in size
    and never above 4: a ``z`` nearly constant, whose average is then the
    table's error rather than the rule's, cannot be amplified.
    """
    C = (sums.shape[1] - 2) // 2
    h = sums[:, :C] / n
    z = sums[:, 2 * C] / n
    var = np.maximum(sums[:, 2 * C + 1] / n - z * z, 0.0)
    beta = (sums[:, C:2 * C] / n - h * z[:, None]) / (var + 1e-300)[:, None]
    t = np.abs(beta) / 4.0
    beta = np.where(t <= 1.0, beta / (1.0 + np.minimum(t, 1.0) ** 8) ** 0.125,
                    4.0 * np.sign(beta) / (1.0 + np.maximum(t, 1.0) ** -8) ** 0.125)
    p = np.maximum(h - beta * z[:, None], 0.0)
    return p / p.sum(axis=1, keepdims=True)


def _default_points(C):
    """The default ``n_points`` of :meth:`Softmax.predict` for C classes."""
    if C == 2:
        return 1
    return 1 << (11 if C == 3 else 12 if C == 4 else 13 if C <= 10 else
                 14 if C <= 15 else 15)


_TABLE = []


def _logistic_normal_table():
    """The table of ``Lambda(a, v) = E[sigma(a + sqrt(v) z)]`` read by the softmax
    predictive: values and (node spacing times) x-derivatives on a grid of
    ``r = v / (v + pi^2 / 3)`` in [0, 1] (65 nodes) by ``x = a / sqrt(v + pi^2 / 3)``
    in [-X, X] (1025 nodes), and X; built once from the 64-node normal scale
    mixture of the logistic, ``sigma(z) = E[Phi(z / sqrt(tau))]``."""
    if not _TABLE:
        X, nr, nx = 16.0, 65, 1025
        tau, logw = _moments.scale_mixture_rule()
        weight = np.exp(logw)
        x = np.linspace(-X, X, nx)[:, None]
        values, derivs = np.empty((nr, nx)), np.empty((nr, nx))
        for i, r in enumerate(np.linspace(0.0, 1.0, nr)):
            # a / sqrt(tau + v) = x / sqrt(tau (1 - r) 3 / pi^2 + r)
            scale = np.sqrt(tau * (1.0 - r) * (3.0 / np.pi ** 2) + r)
            z = x / scale
            values[i] = (weight * ndtr(z)).sum(-1)
            derivs[i] = ((weight / scale) * np.exp(-0.5 * z * z)).sum(-1)
        derivs *= (2.0 * X / (nx - 1)) / np.sqrt(2.0 * np.pi)
        values.setflags(write=False)
        derivs.setflags(write=False)
        _TABLE.extend([values, derivs, X])
    return _TABLE[0], _TABLE[1], _TABLE[2]


_POINTS = {}


def _normal_points(d, n):
    """n standard normal points in d dimensions, one column each (d, n): scrambled
    Sobol' (seed 0), cached."""
    Z = _POINTS.get((d, n))
    if Z is None:
        u = qmc.Sobol(d, scramble=True, seed=0).random_base2(int(n).bit_length() - 1)
        Z = _POINTS[(d, n)] = np.ascontiguousarray(ndtri(u).T)
        Z.setflags(write=False)
    return Z


_register(Softmax)
