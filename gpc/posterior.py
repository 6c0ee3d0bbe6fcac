"""Gaussian posteriors over the latent function and their predictions.

Every inference method returns a posterior in one of two forms, both giving the latent
mean ``k_*^T alpha``:

* site form (:class:`SitePosterior`: Laplace, EP, posterior linearisation, variational):
  ``sW`` and ``L = chol(I + sW K sW)``; variance ``k_** - |L^{-1} (sW k_*)|^2``
  (``+ |Q' k_*|^2`` when some site precisions are negative).
* explicit form (:class:`ExplicitPosterior`: ADF, online / sparse methods): ``C``
  with posterior covariance ``K + K C K``; variance ``k_** + k_*^T C k_*``.

The multinomial model (C latent functions) has a third,
:class:`MultinomialPosterior`, whose latent covariance at each test point is a
C x C matrix.

All also hold the posterior marginals at the training points, ``marginal_mean``
and ``marginal_var``, where the method computed them.
"""

import numpy as np

from ._blocks import gram, matmul
from ._linalg import solve_lower
from .likelihoods import get_likelihood


class _Posterior:
    """What both posterior forms share: the mean ``K_cross^T alpha`` and the
    predictive probability; subclasses give the variance term."""

    @property
    def n(self):
        """Number of training points."""
        return self.alpha.shape[0]

    def _set_marginals(self, marginal_mean, marginal_var):
        for name, value in (("marginal_mean", marginal_mean),
                            ("marginal_var", marginal_var)):
            if value is not None:
                value = np.asarray(value, dtype=np.float64)
                if value.shape != (self.n,):
                    raise ValueError(f"{name} must have shape ({self.n},), one value "
                                     f"per training point, got {value.shape}.")
            setattr(self, name, value)

    def _check_cross(self, K_cross):
        K_cross = np.asarray(K_cross, dtype=np.float64)
        if K_cross.ndim != 2 or K_cross.shape[0] != self.n:
            raise ValueError(
                f"K_cross must have shape ({self.n}, m): one row per training point, "
                f"got {K_cross.shape}."
            )
        return K_cross

    def latent_mean(self, K_cross):
        """Latent mean ``K_cross^T alpha`` at m test points.

        Parameters
        ----------
        K_cross : array-like of shape (n, m)
            Covariances between the n training and m test points.
        """
        return matmul(self._check_cross(K_cross).T, self.alpha)

    def latent_mean_and_variance(self, K_cross, k_diag, overwrite_cross=False):
        """Latent mean and variance at m test points.

        Parameters
        ----------
        K_cross : array-like of shape (n, m)
            Covariances between the n training and m test points.
        k_diag : array-like of shape (m,)
            Prior variances of the test points.
        overwrite_cross : bool, default=False
            Allow the computation to overwrite ``K_cross`` (a Fortran-ordered
            float64 array then saves a copy of its size).

        Returns
        -------
        mean, var : ndarray of shape (m,)
            ``var`` is clipped at 0 from below (rounding only).
        """
        K_cross = self._check_cross(K_cross)
        k_diag = np.asarray(k_diag, dtype=np.float64).reshape(-1)
        if k_diag.shape[0] != K_cross.shape[1]:
            raise ValueError("k_diag must have one entry per column of K_cross.")
        mean = matmul(K_cross.T, self.alpha)
        if self.n == 0:
            return mean, k_diag.copy()
        change = self._variance_change(K_cross, overwrite_cross)
        return mean, np.maximum(k_diag + change, 0.0)

    def predict_proba(self, K_cross, k_diag, likelihood):
        """Predictive probability ``p(y = +1)`` at m test points.

        Parameters
        ----------
        K_cross, k_diag : see :meth:`latent_mean_and_variance`.
        likelihood : str or Likelihood
            The likelihood whose Gaussian average gives the probability.
        """
        mean, var = self.latent_mean_and_variance(K_cross, k_diag)
        return get_likelihood(likelihood).predict(mean, var)


class SitePosterior(_Posterior):
    """Posterior in site form: ``q(f) = N(K alpha, (K^{-1} + W)^{-1})``.

    Parameters
    ----------
    alpha : ndarray of shape (n,)
        Weights of the latent mean: ``E[f_*] = k_*^T alpha``.
    sW : ndarray of shape (n,)
        Square roots of the site precisions ``W``.
    L : ndarray of shape (n, n)
        Lower Cholesky factor of ``B = I + sW K sW`` (only the lower triangle is used).
    Q : ndarray of shape (n, m), optional
        Correction for m negative site precisions (EP with likelihoods that are not
        log-concave): ``sW`` then holds the square roots of the positive parts only,
        and ``(K + W^{-1})^{-1} = sW B^{-1} sW - Q Q'``.
    marginal_mean, marginal_var : ndarray of shape (n,), optional
        The posterior marginal means and variances at the training points, when
        the method computed them.

    Attributes
    ----------
    marginal_mean : ndarray of shape (n,) or None
        Posterior means of the latent values at the training points (Laplace: the
        mode); None when the method did not compute them.
    marginal_var : ndarray of shape (n,) or None
        Posterior variances of the latent values at the training points; None when
        the method did not compute them (Laplace).

    Examples
    --------
    >>> import numpy as np
    >>> import gpc
    >>> X = np.array([[0.0], [1.0], [2.0]])
    >>> K = np.exp(-0.5 * (X - X.T) ** 2)
    >>> res = gpc.infer(K, [-1, 1, 1], method="laplace", likelihood="probit")
    >>> mean, var = res.posterior.latent_mean_and_variance(K, np.diag(K))
    >>> bool(np.all(var < np.diag(K)))
    True
    """

    def __init__(self, alpha, sW, L, Q=None, *, marginal_mean=None,
                 marginal_var=None):
        self.alpha = np.asarray(alpha, dtype=np.float64)
        self.sW = np.asarray(sW, dtype=np.float64)
        self.L = L
        self.Q = Q
        self._set_marginals(marginal_mean, marginal_var)

    def woodbury_inverse(self):
        """``(K + W^{-1})^{-1} = sW B^{-1} sW - Q Q'`` as an n x n array: the
        matrix of the predictive covariance ``K_** - K_*' (K + W^{-1})^{-1} K_*``
        and of the explicit evidence gradient ``(alpha alpha' - it) / 2``.

        Returns
        -------
        ndarray of shape (n, n)
        """
        V = solve_lower(self.L, np.diag(self.sW))                        # L^-1 sW
        inverse = gram(V.T)
        if getattr(self, "Q", None) is not None:
            inverse -= self.Q @ self.Q.T
        return inverse

    def _variance_change(self, K_cross, overwrite=False):
        change = np.zeros(K_cross.shape[1])
        if getattr(self, "Q", None) is not None:
            U = matmul(self.Q.T, K_cross)
            change += np.einsum("ij,ij->j", U, U)
        # V = L^{-1} (sW K_cross), scaled and solved in place in a Fortran array.
        V = K_cross if overwrite and K_cross.flags.f_contiguous else \
            np.array(K_cross, order="F")
        V *= self.sW[:, None]
        V = solve_lower(self.L, V, overwrite_b=True)
        change -= np.einsum("ij,ij->j", V, V)
        return change


class ExplicitPosterior(_Posterior):
    """Posterior in explicit form: mean ``k_*^T alpha``, covariance
    ``K(x, x') + k(x)^T C k(x')`` (Csató & Opper's parametrisation, used by ADF).

    Parameters
    ----------
    alpha : ndarray of shape (n,)
        Weights of the latent mean.
    C : ndarray of shape (n, n)
        Symmetric (negative semi-definite for log-concave likelihoods) matrix of the
        covariance correction.
    marginal_mean, marginal_var : ndarray of shape (n,), optional
        The posterior marginal means and variances at the training points, when
        the method computed them.

    Attributes
    ----------
    marginal_mean, marginal_var : ndarray of shape (n,) or None
        As given (None when the method did not compute them: ADF).

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.posterior import ExplicitPosterior
    >>> post = ExplicitPosterior([0.5], [[-0.25]])
    >>> mean, var = post.latent_mean_and_variance([[1.0]], [1.0])
    >>> float(mean[0]), float(var[0])
    (0.5, 0.75)
    """

    def __init__(self, alpha, C, *, marginal_mean=None, marginal_var=None):
        self.alpha = np.asarray(alpha, dtype=np.float64)
        self.C = np.asarray(C, dtype=np.float64)
        if self.C.shape != (self.n, self.n):
            raise ValueError(f"C must have shape ({self.n}, {self.n}), got "
                             f"{self.C.shape}.")
        self._set_marginals(marginal_mean, marginal_var)

    def _variance_change(self, K_cross, overwrite=False):
        return np.einsum("ij,ij->j", K_cross, matmul(self.C, K_cross))


class MultinomialPosterior(_Posterior):
    """Joint posterior of the C latent functions of the multinomial model.

    The latent mean of class c is ``k_c(x)' alpha_c``; the C x C covariance at
    x is ``diag(k_c(x, x)) - Kx' A Kx`` with ``A = (K + W^{-1})^{-1}``, which
    the factors give as ``A_cd = delta_cd E_c - E_c P^{-1} E_d`` (Rasmussen &
    Williams, Algorithm 3.4), ``W`` the block-diagonal curvature (Laplace) or
    site precision (EP), each block of the form ``D_i - d_i d_i' / sum(d_i)``.
    Made by :func:`gpc.infer` with a multinomial likelihood.  The methods of
    the binary posteriors take the same arguments and answer with one more
    dimension: means (m, C) and covariances (m, C, C).

    Parameters
    ----------
    alpha : ndarray of shape (C, n)
        Weights of the latent means.
    E : ndarray of shape (C, n, n)
        ``E_c = (K_c + D_c^{-1})^{-1}``, ``D_c`` the diagonal of the class-c
        entries of the ``d_i``.
    M : ndarray of shape (n, n)
        Lower Cholesky factor of ``P = sum_c E_c``.
    marginal_mean : ndarray of shape (n, C), optional
        The posterior means at the training points.
    marginal_var : ndarray of shape (n, C, C), optional
        The posterior covariances at the training points.
    likelihood : str or Likelihood, default="softmax"
        The likelihood :meth:`predict_proba` averages unless given another.

    Examples
    --------
    >>> import numpy as np
    >>> import gpc
    >>> X = np.linspace(-2, 2, 6)[:, None]
    >>> K = np.exp(-0.5 * (X - X.T) ** 2)
    >>> res = gpc.infer(K, [0, 0, 1, 1, 2, 2], likelihood="softmax")
    >>> mean, cov = res.posterior.latent_mean_and_variance(K, np.ones(6))
    >>> mean.shape, cov.shape
    ((6, 3), (6, 3, 3))
    >>> res.posterior.predict_proba(K, np.ones(6)).argmax(axis=1)
    array([0, 0, 1, 1, 2, 2])
    """

    def __init__(self, alpha, E, M, *, marginal_mean=None, marginal_var=None,
                 likelihood="softmax"):
        self.alpha = np.asarray(alpha, dtype=np.float64)
        self.E = E
        self.M = M
        self.marginal_mean = marginal_mean
        self.marginal_var = marginal_var
        self.likelihood = likelihood

    @property
    def n(self):
        """Number of training points."""
        return self.alpha.shape[1]

    @property
    def n_classes(self):
        """Number of classes C."""
        return self.alpha.shape[0]

    def _per_class(self, K_cross, k_diag=None):
        """K_cross as C arrays of shape (n, m) (one repeated when shared), and
        k_diag as an array of shape (C, m)."""
        C = self.n_classes
        if isinstance(K_cross, (list, tuple)) and all(
                isinstance(Kx, np.ndarray) and Kx.ndim == 2 for Kx in K_cross):
            K_cross = [np.asarray(Kx, dtype=np.float64) for Kx in K_cross]  # no stack
        else:
            K_cross = np.asarray(K_cross, dtype=np.float64)
            if K_cross.ndim == 2:
                K_cross = [K_cross] * C
        if len(K_cross) != C or K_cross[0].ndim != 2 or K_cross[0].shape[0] != self.n:
            raise ValueError(f"K_cross must have shape ({self.n}, m) or ({C}, "
                             f"{self.n}, m), got {np.shape(K_cross)}.")
        if k_diag is None:
            return K_cross, None
        m = K_cross[0].shape[1]
        k_diag = np.broadcast_to(np.asarray(k_diag, dtype=np.float64), (C, m)) \
            if np.ndim(k_diag) == 1 else np.asarray(k_diag, dtype=np.float64)
        if k_diag.shape != (C, m):
            raise ValueError(f"k_diag must have shape ({m},) or ({C}, {m}), got "
                             f"{k_diag.shape}.")
        return K_cross, k_diag

    def latent_mean(self, K_cross):
        """Latent means (m, C) from the cross-covariances K_cross, of shape (n, m)
        (a kernel shared by the classes) or (C, n, m)."""
        K_cross, _ = self._per_class(K_cross)
        return np.stack([matmul(Kx.T, a)
                         for Kx, a in zip(K_cross, self.alpha)], axis=1)

    def latent_covariance(self, K_cross, k_diag):
        """Latent covariances (m, C, C) between the classes at each test point.

        Parameters
        ----------
        K_cross : array-like of shape (n, m) or (C, n, m)
            Cross-covariances, one matrix for all classes or one per class.
        k_diag : array-like of shape (m,) or (C, m)
            Prior variances of the test points.
        """
        K_cross, k_diag = self._per_class(K_cross, k_diag)
        C, m = k_diag.shape
        cov = np.zeros((m, C, C))
        Q = np.empty((m, C, self.n))          # at each point, a row per class
        for c, Kx in enumerate(K_cross):
            G = matmul(self.E[c], Kx)                                 # E_c Kx
            cov[:, c, c] = k_diag[c] - np.einsum("ij,ij->j", Kx, G)
            Q[:, c, :] = solve_lower(self.M, G, overwrite_b=True).T    # M^{-1} E_c Kx
        QQ = np.matmul(Q, Q.transpose(0, 2, 1))
        cov += 0.5 * (QQ + QQ.transpose(0, 2, 1))             # exactly symmetric
        return cov

    def latent_mean_and_variance(self, K_cross, k_diag, overwrite_cross=False):
        """Latent means (m, C) and covariances (m, C, C); see
        :meth:`latent_covariance` (``overwrite_cross`` is accepted and
        ignored)."""
        return self.latent_mean(K_cross), self.latent_covariance(K_cross, k_diag)

    def predict_proba(self, K_cross, k_diag, likelihood=None):
        """Class probabilities (m, C): the likelihood (``self.likelihood`` unless
        another is given) averaged over the latent posterior."""
        return get_likelihood(likelihood or self.likelihood).predict(
            *self.latent_mean_and_variance(K_cross, k_diag))
