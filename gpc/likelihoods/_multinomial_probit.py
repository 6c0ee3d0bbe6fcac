"""The multinomial probit likelihood of C latent values, and the nested expectation
propagation that approximates its Gaussian integrals (Riihimaki, Jylanki & Vehtari,
"Nested expectation propagation for Gaussian process classification with a
multinomial probit likelihood", JMLR 14, 2013).

With an auxiliary ``u ~ N(0, 1)``, ``p(y = c | f) = E_u[prod_{j != c} Phi(u + f_c -
f_j)]`` is the integral over ``w = (f, u)`` of ``C - 1`` probit factors
``Phi(b_j' w)``, ``b_j = e_u + e_c - e_j``.  The inner EP approximates each
factor by a Gaussian site ``exp(nu_j s - tau_j s^2 / 2)`` in ``s = b_j' w``.
Integrating u out of ``N(u; 0, 1)`` times the sites leaves a Gaussian site in f
whose precision is ``D - d d' / sum(d)`` with ``d_c = 1`` for the label and
``d_j = tau_j`` for the other classes: the structure of the softmax's Hessian,
which keeps the outer EP at n x n factorisations.

The site parameters of the example with label ``y_i`` are stored in arrays of
shape (C, n), ``tau[j, i]`` for the factor of class ``j != y_i``; the entries
``tau[y_i, i]`` and ``nu[y_i, i]`` are unused and kept at 0.
"""

import numpy as np
from scipy.special import log_ndtr, logsumexp, roots_hermite

from ._base import _check_count, _register
from ._classification import Probit
from ._multinomial import MultinomialLikelihood

_PROBIT = Probit()
#: Gauss-Hermite rule of :meth:`MultinomialProbit.log_lik`, centred on the mode in u.
_HERMITE = roots_hermite(40)


class MultinomialProbit(MultinomialLikelihood):
    """Multinomial probit likelihood of C latent values.

    ``p(y = c | f) = E_u[prod_{j != c} Phi(u + f_c - f_j)]`` with ``u ~ N(0, 1)``:
    class c wins when ``f_c + e_c`` is the largest of C values with independent
    standard normal noises ``e``.  The likelihood of
    ``GaussianProcessClassifier(multi_class="multinomial",
    likelihood="multinomial_probit", method="ep")`` and of :func:`gpc.infer` with
    ``likelihood="multinomial_probit"`` and ``method="ep"``: labels ``0 .. C - 1``.
    With two classes it is the probit likelihood of ``(f_1 - f_0) / sqrt(2)``.

    Parameters
    ----------
    n_classes : int or None, default=None
        The number of classes C.  None takes it from the data: the number of
        kernel matrices given to :func:`gpc.infer`, or else the largest label
        plus one.

    Notes
    -----
    :meth:`log_lik` integrates over u with a 40-node Gauss-Hermite rule centred
    on the mode of the integrand and scaled by its curvature there (the
    integrand is log-concave in u).

    :meth:`predict` gives ``E[p(y = c | f)]`` for ``f ~ N(mean, cov)`` by the
    nested EP approximation: for each class, EP over the ``C - 1`` probit
    factors of ``w = (f, u)`` run to convergence, whose normalising constant
    approximates the integral (exact for two classes); the C approximations
    are divided by their sum.  The result is deterministic and smooth in the
    mean and covariance.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.likelihoods import MultinomialProbit
    >>> lik = MultinomialProbit()
    >>> lik.predict(np.zeros((1, 3)), np.eye(3)[None]).round(3)
    array([[0.333, 0.333, 0.333]])
    >>> float(np.exp(lik.log_lik([1], [[0.0], [1.0]]))[0].round(4))   # Phi(1 / sqrt 2)
    0.7602
    """

    name = "multinomial_probit"

    def __init__(self, n_classes=None):
        self.n_classes = n_classes
        self._validate()

    def _validate(self):
        if self.n_classes is not None:
            _check_count(self.n_classes, "n_classes", 2)

    def log_lik(self, y, F):
        """``log p(y_i | f_i)`` for labels y (n,) and latent values F (C, n)."""
        F = np.asarray(F, dtype=np.float64)
        y = self.check_targets(y, F.shape[1])
        n = F.shape[1]
        gaps = (F[y, np.arange(n)] - F).T                   # f_y - f_j, (n, C)
        gaps = gaps[np.arange(F.shape[0])[None, :] != y[:, None]].reshape(
            n, F.shape[0] - 1)
        u, scale = _integrand_mode(gaps)
        x, w = _HERMITE
        nodes = u[:, None] + np.sqrt(2.0) * scale[:, None] * x             # (n, q)
        logf = -0.5 * nodes ** 2 + log_ndtr(nodes[:, :, None]
                                            + gaps[:, None, :]).sum(axis=2)
        return (logsumexp(logf + np.log(w) + x ** 2, axis=1)
                + np.log(scale) - 0.5 * np.log(np.pi))

    def predict(self, mean, cov):
        """Class probabilities ``E[p(y | f)]`` for ``f ~ N(mean, cov)``.

        Parameters
        ----------
        mean : array_like of shape (m, C)
        cov : array_like of shape (m, C, C)
            Symmetric positive semi-definite.

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
        m, C = mean.shape
        log_z = np.empty((m, C))
        for c in range(C):
            y = np.full(m, c)
            log_z[:, c] = tilted_log_normaliser(mean, cov, y)
        return np.exp(log_z - logsumexp(log_z, axis=1, keepdims=True))


def _integrand_mode(gaps, n_iter=50):
    """The mode in u of ``log N(u) + sum_j log Phi(u + gaps_j)`` (concave, its
    second derivative at most -1) by safeguarded Newton steps, and
    ``1 / sqrt(-second derivative)`` there; for each row of gaps (n, C - 1)."""
    u = np.zeros(gaps.shape[0])
    for _ in range(n_iter):
        z = u[:, None] + gaps
        r = np.exp(-0.5 * z * z - 0.5 * np.log(2.0 * np.pi) - log_ndtr(z))  # Mills
        g1 = -u + r.sum(axis=1)
        g2 = -1.0 - (r * (r + z)).sum(axis=1)
        step = -g1 / g2
        u = u + step
        if np.max(np.abs(step), initial=0.0) < 1e-12 * (
                1.0 + np.max(np.abs(u), initial=0.0)):
            break
    z = u[:, None] + gaps
    r = np.exp(-0.5 * z * z - 0.5 * np.log(2.0 * np.pi) - log_ndtr(z))
    return u, 1.0 / np.sqrt(1.0 + (r * (r + z)).sum(axis=1))


def other_classes(y, C):
    """The classes other than each label, in increasing order (n, C - 1)."""
    classes = np.broadcast_to(np.arange(C), (y.shape[0], C))
    return classes[classes != y[:, None]].reshape(y.shape[0], C - 1)


def outer_sites(y, tau, nu):
    """The Gaussian sites in f that the inner sites give once u is integrated out.

    Returns ``(d, nu_f, const)``: the site precision is ``D - d d' / sum(d)``
    with ``D = diag(d)`` (d of shape (C, n), 1 at the label), its linear
    coefficient ``nu_f`` (C, n), and the log of its constant factor (n,) (the
    factors ``Z~`` of the inner sites excluded).
    """
    idx = np.arange(y.shape[0])
    d = tau.copy()
    d[y, idx] = 1.0
    total = d.sum(axis=0)                                      # 1 + sum tau
    h_u = nu.sum(axis=0)
    # sum_j coef_j (e_y - e_j) for coef = nu - h_u tau / total
    coef = nu - tau * (h_u / total)
    nu_f = -coef
    nu_f[y, idx] = coef.sum(axis=0) - coef[y, idx]
    return d, nu_f, 0.5 * h_u ** 2 / total - 0.5 * np.log(total)


def augmented(mean, cov, y, tau, nu):
    """The inner posterior of ``w = (f, u)``: ``(cov_w, mean_w)`` of shapes
    (n, C + 1, C + 1) and (n, C + 1), given the marginal of f (mean (n, C), cov
    (n, C, C)) that the prior times all sites implies, and the inner sites."""
    n, C = mean.shape
    idx = np.arange(n)
    t = tau.T.copy()
    total = 1.0 + t.sum(axis=1)
    t[idx, y] = -(total - 1.0)
    q = -t / total[:, None]              # E[u | f] = h_u / total - q' f
    Sq = np.einsum("icd,id->ic", cov, q)
    cov_w = np.empty((n, C + 1, C + 1))
    cov_w[:, :C, :C] = cov
    cov_w[:, :C, C] = cov_w[:, C, :C] = -Sq
    cov_w[:, C, C] = 1.0 / total + np.einsum("ic,ic->i", q, Sq)
    mean_w = np.empty((n, C + 1))
    mean_w[:, :C] = mean
    mean_w[:, C] = nu.sum(axis=0) / total - np.einsum("ic,ic->i", q, mean)
    return cov_w, mean_w


def _factor_marginal(cov_w, mean_w, y, j):
    """``(cov_w b, b' cov_w b, b' mean_w)`` for the factor of class j of each
    example, ``b = e_u + e_y - e_j``."""
    idx, u = np.arange(y.shape[0]), cov_w.shape[1] - 1
    Sb = cov_w[:, :, u] + cov_w[idx, :, y] - cov_w[idx, :, j]
    return Sb, Sb[:, u] + Sb[idx, y] - Sb[idx, j], mean_w[:, u] + mean_w[idx, y] \
        - mean_w[idx, j]


def _cavity(var, mean, tau, nu):
    """The cavity ``(m, v, proper)`` of a factor from its marginal and site."""
    with np.errstate(divide="ignore", invalid="ignore"):
        prec = 1.0 / var - tau
        proper = (var > 0) & (prec > 0) & np.isfinite(prec)
        v = np.where(proper, 1.0 / np.where(proper, prec, 1.0), 1.0)
        m = np.where(proper, v * (mean / np.where(var > 0, var, 1.0) - nu), 0.0)
    return m, v, proper


def largest_change(old, new):
    """The largest change of a site parameter relative to ``1 + |new value|``."""
    return float(np.max(np.abs(new - old) / (1.0 + np.abs(new)), initial=0.0))


def inner_sweep(cov_w, mean_w, y, J, tau, nu):
    """One sequential EP sweep over the factors of every example, updating
    ``cov_w``, ``mean_w``, ``tau`` and ``nu`` in place.

    A factor whose cavity is improper keeps its site.  Returns the number of
    factors left unchanged.
    """
    idx = np.arange(y.shape[0])
    skipped = 0
    for k in range(J.shape[1]):
        j = J[:, k]
        Sb, var, mean = _factor_marginal(cov_w, mean_w, y, j)
        t_old, n_old = tau[j, idx], nu[j, idx]
        m_c, v_c, ok = _cavity(var, mean, t_old, n_old)
        _, d1, d2, _ = _PROBIT.gauss_moments(1.0, m_c, v_c)
        denom = 1.0 + d2 * v_c                        # in (0, 1] for the probit
        dt = -d2 / denom - t_old
        dn = (d1 - m_c * d2) / denom - n_old
        ok &= np.isfinite(dt) & np.isfinite(dn) & (t_old + dt >= 0)
        dt, dn = np.where(ok, dt, 0.0), np.where(ok, dn, 0.0)
        skipped += int(np.count_nonzero(~ok))
        tau[j, idx] = t_old + dt
        nu[j, idx] = n_old + dn
        den = 1.0 + dt * var
        cov_w -= (dt / den)[:, None, None] * Sb[:, :, None] * Sb[:, None, :]
        mean_w += ((dn - dt * mean) / den)[:, None] * Sb
    return skipped


def log_site_constants(cov_w, mean_w, y, J, tau, nu):
    """``sum_j log Z~_j`` for each example (n,): the log scale factors of the
    inner sites that make each site times its cavity integrate to the probit
    factor's integral against the cavity, at the inner posterior given.

    Raises FloatingPointError when a cavity is improper there."""
    idx = np.arange(y.shape[0])
    total = np.zeros(y.shape[0])
    for k in range(J.shape[1]):
        j = J[:, k]
        _, var, mean = _factor_marginal(cov_w, mean_w, y, j)
        m_c, v_c, ok = _cavity(var, mean, tau[j, idx], nu[j, idx])
        if not ok.all():
            raise FloatingPointError(f"{int(np.count_nonzero(~ok))} inner cavities are "
                                     "improper at the fixed point.")
        log_z = _PROBIT.gauss_moments(1.0, m_c, v_c)[0]
        total += (log_z + 0.5 * np.log(v_c / var) - 0.5 * mean * mean / var
                  + 0.5 * m_c * m_c / v_c)
    return total


def _log_gauss_integral(mean, cov, y, J, tau, nu):
    """``log int N(f; mean, cov) N(u; 0, 1) prod_j exp(nu_j s_j - tau_j s_j^2 / 2)``
    with ``s_j = u + f_y - f_j``, for each example, by the (C - 1)-variate
    Gaussian of s."""
    idx = np.arange(y.shape[0])
    m_s = mean[idx, y][:, None] - np.take_along_axis(mean, J, axis=1)
    # A' cov A + 1 1', A's columns e_y - e_j
    cy = cov[idx, y]                                            # (n, C)
    V = (cov[idx, y, y][:, None, None] - np.take_along_axis(cy, J, 1)[:, :, None]
         - np.take_along_axis(cy, J, 1)[:, None, :]
         + np.take_along_axis(np.take_along_axis(cov, J[:, :, None], 1),
                              J[:, None, :], 2) + 1.0)
    t = np.take_along_axis(tau.T, J, axis=1)
    v = np.take_along_axis(nu.T, J, axis=1)
    st = np.sqrt(t)
    B = st[:, :, None] * V * st[:, None, :]
    B[:, np.arange(B.shape[1]), np.arange(B.shape[1])] += 1.0
    L = np.linalg.cholesky(B)
    r = v - t * m_s
    Vr = np.einsum("ikl,il->ik", V, r)
    z = np.linalg.solve(L, (st * Vr)[:, :, None])[:, :, 0]
    return (-np.sum(np.log(np.diagonal(L, axis1=1, axis2=2)), axis=1)
            + np.sum(v * m_s - 0.5 * t * m_s * m_s, axis=1)
            + 0.5 * np.sum(r * Vr, axis=1) - 0.5 * np.sum(z * z, axis=1))


def tilted_log_normaliser(mean, cov, y, tol=1e-10, max_sweeps=200):
    """The nested EP approximation of ``log E[p(y | f)]`` for ``f ~ N(mean, cov)``
    (mean (n, C), cov (n, C, C)), with inner EP run from zero sites to
    convergence; exact for two classes."""
    n, C = mean.shape
    J = other_classes(y, C)
    tau, nu = np.zeros((C, n)), np.zeros((C, n))
    cov_w, mean_w = augmented(mean, cov, y, tau, nu)
    for _ in range(max_sweeps):
        old = np.concatenate([tau, nu])
        inner_sweep(cov_w, mean_w, y, J, tau, nu)
        if largest_change(old, np.concatenate([tau, nu])) <= tol:
            break
    return (log_site_constants(cov_w, mean_w, y, J, tau, nu)
            + _log_gauss_integral(mean, cov, y, J, tau, nu))


_register(MultinomialProbit)
