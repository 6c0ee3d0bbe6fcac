"""Expectation propagation on inducing inputs, with the exact gradient of its
log evidence: the large-data route to hyperparameter learning.

The model (FITC; Csato & Opper's basis-vector model with the basis fixed) puts
the prior on the latent values ``u = f(Z)`` at ``M`` inducing inputs ``Z`` and
makes each latent value independent given them::

    f(x) | u  ~  N(p(x)'u, g(x)),   p(x) = K_mm^{-1} k(x),
                                    g(x) = k(x, x) - k(x)' K_mm^{-1} k(x),

with ``k(x) = K(Z, x)``.  With ``Z`` equal to the training inputs it is the full
GP.  EP keeps one Gaussian site per example on its projected latent
``p(x_i)'u``, of precision ``E_i >= 0`` and shift ``beta_i``, so the posterior of
``u`` is ``N(K_mm a, K_mm Sigma^{-1} K_mm)`` with ``Sigma = K_mm + K_mn E K_nm``
and ``a = Sigma^{-1} K_mn beta``.  Everything an EP iteration, the evidence and its
gradient need is a sum over chunks of data of M-vectors and M x M matrices given
``(Sigma, a)``: memory is O(chunk x M + M^2), never n x n, and the time
O(n M^2) per pass, in level-3 BLAS.

Notes
-----
*Updates* are parallel: one pass over the data computes every site's cavity
from the current ``(Sigma, a)``, its tilted moments and its new site, and
accumulates the next ``Sigma`` and ``K_mn beta`` from the new sites.  A pass
whose largest site change (``|dE| v`` and ``|dbeta| sqrt(v)``, ``v`` the cavity
variance of ``f``) grows is followed by damped passes.

*The log evidence* is ``log Z_q + sum_i (log Z_i - log C_i)``::

    log Z_q = eta'a / 2 - log|Sigma| / 2 + log|K_mm| / 2,   eta = K_mn beta,

``Z_i`` the tilted mass of example i (the likelihood averaged over its cavity,
whose variance includes ``g_i``) and ``C_i`` the integral of site i against the
cavity of its projected latent.

*The gradient* at the EP fixed point is the partial derivative with the sites
held fixed (the cavities' influence cancels there).  The residual variances
``g_i`` enter the tilted masses directly, with ``s_i = d log Z_i / d v_i``.  In
the kernel's matrices::

    d/dK_mm = -(a a' + Sigma^{-1} - K_mm^{-1}) / 2 + K_mm^{-1} K_mn S K_nm K_mm^{-1}
    d/dK_nm = (beta - E K_nm a) a' - E K_nm Sigma^{-1} - 2 S K_nm K_mm^{-1}
    d/dk_ii = s_i

(``S = diag(s)``), contracted chunk by chunk into the hyperparameters by
:func:`gpc.kernels.contract_cross` and :func:`gpc.kernels.contract_diag`, and
``K_mm``'s by :func:`gpc.kernels.contract`.  The likelihood's parameters get
``sum_i d log Z_i / d theta_lik``.

*Jitter*: ``K_mm``'s diagonal is multiplied by ``1 + jitter``; that is part of
the model (the gradient includes it), so the evidence stays smooth.
"""

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import LinAlgError, cho_solve, cholesky, solve_triangular

from .kernels import as_kernel, contract, contract_cross, contract_diag

__all__ = ["SparseEPResult", "sparse_ep"]


@dataclass
class SparseEPResult:
    """What :func:`sparse_ep` returns.

    Attributes
    ----------
    log_evidence : float
        EP's approximation of log p(y | X, theta) under the inducing-point model.
    grad : ndarray of shape (kernel.n_dims,) or None
        Its gradient in the kernel's log-hyperparameters (``kernel.theta``).
    dlik : ndarray of shape (n_lik_params,) or None
        Its derivative in the likelihood's parameters (not their logs).
    sites : tuple of two ndarrays of shape (n,)
        ``(E, beta)``: pass back as ``sites=`` to warm-start.
    alpha : ndarray of shape (M,)
    C : ndarray of shape (M, M)
        The posterior in explicit form: latent mean ``k(x)' alpha``, variance
        ``k(x, x) + k(x)' C k(x)`` with ``k(x) = K(Z, x)``.
    info : dict
        ``iterations`` (EP passes that updated sites), ``passes`` (over the data,
        all kinds), ``converged``, ``max_change``, ``n_skipped`` (site updates
        skipped in the last pass: improper cavity, update or zero tilted mass),
        ``damping`` (at the end), ``seconds``.
    """

    log_evidence: float
    grad: np.ndarray
    dlik: np.ndarray
    sites: tuple
    alpha: np.ndarray
    C: np.ndarray
    info: dict = field(default_factory=dict)


def _chunks(n, chunk_size):
    return [slice(i, min(i + chunk_size, n)) for i in range(0, n, chunk_size)]


class _Prior:
    """The inducing-point prior at one set of hyperparameters: K_mm (jittered)
    and its Cholesky factor."""

    def __init__(self, kernel, Z, jitter):
        self.kernel, self.Z = kernel, Z
        self.jitter = float(jitter)
        K = np.array(kernel(Z), dtype=np.float64)
        K[np.diag_indices_from(K)] *= 1.0 + self.jitter
        self.Kmm = K
        try:
            self.LK = cholesky(K, lower=True, check_finite=False)
        except (LinAlgError, ValueError):
            raise FloatingPointError(
                "sparse EP: K(Z, Z) is not positive definite at these "
                "hyperparameters (raise jitter, or use fewer or more distant "
                "inducing inputs).") from None

    def cross(self, Xc):
        """K(Z, X_chunk) as a Fortran M x B array (a transposed C array)."""
        return np.asarray(self.kernel(Xc, self.Z), dtype=np.float64, order="C").T

    def residual(self, Xc, Kc):
        """``(g, Phi)``: residual variances ``k(x, x) - |L_K^{-1} k(x)|^2`` (clipped
        at 0) and ``Phi = L_K^{-1} K(Z, X_chunk)``."""
        Phi = solve_triangular(self.LK, Kc, lower=True, check_finite=False)
        g = np.asarray(self.kernel.diag(Xc), dtype=np.float64) - np.einsum(
            "ij,ij->j", Phi, Phi)
        return np.maximum(g, 0.0), Phi


class _Posterior:
    """``(Sigma, eta)`` of the sites, with ``L_S`` and ``a = Sigma^{-1} eta``."""

    def __init__(self, Sigma, eta):
        self.Sigma, self.eta = Sigma, eta
        try:
            self.LS = cholesky(Sigma, lower=True, check_finite=False)
        except (LinAlgError, ValueError):
            raise FloatingPointError("sparse EP: K_mm + K_mn E K_nm does not "
                                     "factorise (non-finite sites?).") from None
        self.a = cho_solve((self.LS, True), eta, check_finite=False)

    def log_zq(self, prior):
        return (0.5 * float(self.eta @ self.a) - np.sum(np.log(np.diag(self.LS)))
                + np.sum(np.log(np.diag(prior.LK))))


def _accumulate(Kc, E, beta, Sigma, eta):
    """``Sigma += K_c E K_c'`` (E >= 0), ``eta += K_c beta``."""
    W = Kc * np.sqrt(E)
    Sigma += W @ W.T
    eta += Kc @ beta


def _log_site_mass(E, beta, mc, vc):
    """log of the integral of a site ``exp(beta u - E u^2 / 2)`` against
    ``N(u; mc, vc)``."""
    q = 1.0 + E * vc
    return -0.5 * np.log(q) + (beta * beta * vc + 2.0 * beta * mc - E * mc * mc) / (2.0 * q)


def _cavity(Kc, post, E, beta):
    """Marginals of the projected latents and their cavities: ``(V, m, v, mc, vc,
    ok)`` with ``V = L_S^{-1} K_c`` (``v = |V|^2``, no cancellation)."""
    V = solve_triangular(post.LS, Kc, lower=True, check_finite=False)
    v = np.einsum("ij,ij->j", V, V)
    m = Kc.T @ post.a
    den = 1.0 - E * v
    ok = den > 0.0
    safe = np.where(ok, den, 1.0)
    vc = np.where(ok, v / safe, v)
    mc = np.where(ok, (m - v * beta) / safe, m)
    return V, m, v, mc, vc, ok


def _chunk_pass(prior, post, likelihood, Xc, yc, E, beta, g, update, grad, damping):
    """One chunk of a pass.  Returns ``(E_new, beta_new, g, stats)``; ``stats`` holds
    the evidence terms, the largest site change, the skipped count, the new sites'
    ``(Sigma, eta)`` contributions (``update``) and the gradient pieces (``grad``)."""
    Kc = prior.cross(Xc)
    Phi = None
    if g is None or grad:
        g, Phi = prior.residual(Xc, Kc)
    V, m, v, mc, vc, ok = _cavity(Kc, post, E, beta)
    logz, d1, d2, dpar = likelihood.gauss_moments(yc, mc, vc + g)
    good = ok & np.isfinite(logz) & np.isfinite(d1) & np.isfinite(d2)
    stats = {"evidence": float(np.sum(np.where(good, logz - _log_site_mass(
        E, beta, mc, vc), 0.0))), "dlik": float(np.sum(np.where(good, dpar, 0.0)))}
    if grad:
        s = np.where(good, 0.5 * (d1 * d1 + d2), 0.0)
        stats.update(_gradient_pieces(prior, post, Xc, Kc, Phi, V, m, E, beta, s))
    if update:
        nu2 = -d2
        den = 1.0 - vc * nu2
        valid = good & (den > 0.0)
        safe = np.where(valid, den, 1.0)
        E_new = nu2 / safe
        valid &= E_new >= 0.0
        E_new = np.where(valid, E + damping * (E_new - E), E)
        beta_new = np.where(valid, beta + damping * ((d1 + mc * nu2) / safe - beta),
                            beta)
        v_f = vc + g
        change = np.maximum(np.abs(E_new - E) * v_f, np.abs(beta_new - beta)
                            * np.sqrt(v_f))
        stats["change"] = float(np.max(change, initial=0.0))
        stats["skipped"] = int(np.sum(~valid))
        Sigma, eta = np.zeros((Kc.shape[0],) * 2), np.zeros(Kc.shape[0])
        _accumulate(Kc, E_new, beta_new, Sigma, eta)
        stats["Sigma"], stats["eta"] = Sigma, eta
        E, beta = E_new, beta_new
    return E, beta, g, stats


def _inverse_factor(owner, name):
    """``L^{-1}`` of the lower Cholesky factor ``owner.<name>``, computed once per
    owner (a prior or a posterior, both fixed during a pass)."""
    key = "_inv_" + name
    if key not in owner.__dict__:
        L = getattr(owner, name)
        owner.__dict__[key] = solve_triangular(L, np.eye(L.shape[0]), lower=True,
                                               check_finite=False)
    return owner.__dict__[key]


def _gradient_pieces(prior, post, Xc, Kc, Phi, V, m, E, beta, s):
    """A chunk's share of the gradient: the cross and diagonal contractions and
    ``H = Phi S Phi'`` (for the K_mm term)."""
    # d/dK_nm (B x M) = (beta - E m) a' - E K_nm Sigma^{-1} - 2 S K_nm K_mm^{-1}
    G = np.outer(beta - E * m, post.a)
    G -= (V.T * E[:, None]) @ _inverse_factor(post, "LS")
    G -= (Phi.T * (2.0 * s)[:, None]) @ _inverse_factor(prior, "LK")
    return {"cross": contract_cross(prior.kernel, Xc, prior.Z, G, Kc.T),
            "diag": contract_diag(prior.kernel, Xc, s),
            "H": (Phi * s) @ Phi.T}


def _sum_stats(parts, keys):
    return {k: sum(p[k] for p in parts) for k in keys}


def sparse_ep(kernel, likelihood, X, y, Z, *, sites=None, jitter=1e-6, tol=1e-6,
              max_iter=100, damping=1.0, chunk_size=2048, compute_gradient=True,
              verbose=0):
    """EP on the inducing-point (FITC) model: sites, log evidence and its gradient.

    Parameters
    ----------
    kernel : kernel
        Any scikit-learn or :mod:`gpc.kernels` kernel, at its current
        hyperparameters.
    likelihood : Likelihood
        A likelihood of :mod:`gpc.likelihoods` whose site precisions are
        non-negative (log-concave: probit, logit, step, and the regression
        noises).
    X : ndarray of shape (n, n_features)
    y : ndarray of shape (n,)
        Labels in {-1, +1} (real targets for regression likelihoods).
    Z : ndarray of shape (M, n_features)
        Inducing inputs.
    sites : tuple of two ndarrays of shape (n,), optional
        ``(E, beta)`` of an earlier call (warm start); zeros when None.
    jitter : float, default=1e-6
        ``K(Z, Z)``'s diagonal is multiplied by ``1 + jitter`` (part of the model).
    tol : float, default=1e-6
        EP stops when the largest site change of a pass is below ``tol``.
    max_iter : int, default=100
        Most EP passes.
    damping : float in (0, 1], default=1.0
        Initial step of the parallel updates; halved when a pass's largest
        change grows (down to 0.05).
    chunk_size : int, default=2048
        Examples per block of kernel evaluations.
    compute_gradient : bool, default=True
        Also return the gradient (one more pass over the data).
    verbose : int, default=0
        Print one line per pass when > 1.

    Returns
    -------
    SparseEPResult

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from gpc.likelihoods import get_likelihood
    >>> from gpc.sparse_ep import sparse_ep
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(500, 2)
    >>> y = np.sign(X[:, 0] + 0.3 * rng.randn(500))
    >>> res = sparse_ep(RBF(1.0), get_likelihood("probit"), X, y, X[:20])
    >>> res.info["converged"], res.grad.shape
    (True, (1,))
    """
    t0 = time.perf_counter()
    kernel = as_kernel(kernel)
    n = X.shape[0]
    prior = _Prior(kernel, Z, jitter)
    E, beta = ((np.zeros(n), np.zeros(n)) if sites is None else
               (np.array(sites[0], dtype=np.float64), np.array(sites[1], dtype=np.float64)))
    blocks = _chunks(n, chunk_size)
    g = [None] * len(blocks)
    if np.any(E) or np.any(beta):
        Sigma, eta = prior.Kmm.copy(), np.zeros(Z.shape[0])
        for k, sl in enumerate(blocks):
            Kc = prior.cross(X[sl])
            g[k] = prior.residual(X[sl], Kc)[0]
            _accumulate(Kc, E[sl], beta[sl], Sigma, eta)
        passes = 1
    else:
        Sigma, eta, passes = prior.Kmm.copy(), np.zeros(Z.shape[0]), 0
    info = {"iterations": 0, "converged": False, "max_change": np.inf, "n_skipped": 0}
    last = np.inf
    for it in range(max_iter):
        post = _Posterior(Sigma, eta)
        parts = []
        for k, sl in enumerate(blocks):
            E[sl], beta[sl], g[k], st = _chunk_pass(prior, post, likelihood, X[sl],
                                                    y[sl], E[sl], beta[sl], g[k],
                                                    True, False, damping)
            parts.append(st)
        passes += 1
        tot = _sum_stats(parts, ("Sigma", "eta", "skipped"))
        change = max(p["change"] for p in parts)
        Sigma, eta = prior.Kmm + tot["Sigma"], tot["eta"]
        info.update(iterations=it + 1, max_change=change, n_skipped=tot["skipped"])
        if verbose > 1:
            print(f"  [gpc sparse EP] pass {it + 1}: largest site change {change:.2e}, "
                  f"damping {damping:g}, {tot['skipped']} updates skipped", flush=True)
        if change < tol:
            info["converged"] = True
            break
        if change > last and damping > 0.05:
            damping = max(0.5 * damping, 0.05)
        last = change
    post = _Posterior(Sigma, eta)
    parts = [_chunk_pass(prior, post, likelihood, X[sl], y[sl], E[sl], beta[sl], g[k],
                         False, compute_gradient, damping)[3]
             for k, sl in enumerate(blocks)]
    passes += 1
    log_ev = post.log_zq(prior) + sum(p["evidence"] for p in parts)
    grad = dlik = None
    if compute_gradient:
        grad = _assemble_gradient(prior, post, parts)
        dlik = np.array([sum(p["dlik"] for p in parts)])[: len(likelihood.params)]
    Kinv = cho_solve((prior.LK, True), np.eye(Z.shape[0]), check_finite=False)
    Sinv = cho_solve((post.LS, True), np.eye(Z.shape[0]), check_finite=False)
    info.update(passes=passes, damping=damping, seconds=time.perf_counter() - t0)
    return SparseEPResult(log_evidence=float(log_ev), grad=grad, dlik=dlik,
                          sites=(E, beta), alpha=post.a.copy(), C=Sinv - Kinv, info=info)


def _assemble_gradient(prior, post, parts):
    """The kernel gradient from the chunks' pieces and the K_mm term."""
    M = prior.Z.shape[0]
    eye = np.eye(M)
    Kinv = cho_solve((prior.LK, True), eye, check_finite=False)
    Sinv = cho_solve((post.LS, True), eye, check_finite=False)
    H = sum(p["H"] for p in parts)
    LinvK = _inverse_factor(prior, "LK")
    D = -0.5 * (np.outer(post.a, post.a) + Sinv - Kinv) + LinvK.T @ H @ LinvK
    D = 0.5 * (D + D.T)
    D[np.diag_indices(M)] *= 1.0 + prior.jitter
    return (contract(prior.kernel, prior.Z, D) + sum(p["cross"] for p in parts)
            + sum(p["diag"] for p in parts))
