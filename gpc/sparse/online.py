"""The sparse online GP of Csató & Opper (2002): a posterior on a basis-vector
(BV) set of bounded size, built in one pass over the data, refined by EP sweeps,
and the EM step that learns its hyperparameters.

:class:`gpc.SparseGPClassifier` and :class:`gpc.SparseGPRegressor` run it with
``method="adf"`` and in ``partial_fit``.

The posterior process is kept on a basis-vector (BV) set of at most ``max_basis``
training inputs: ``mean(x) = k(x)' alpha``, ``cov(x, x') = K(x, x') + k(x)' C k(x')``
with ``k(x) = K(BV, x)``.  Memory is O(max_basis^2) whatever the number of
examples, and no n x n matrix is ever formed; kernel values are computed in chunks.

* **Online pass** (one sweep, also ``partial_fit``): each example updates
  ``(alpha, C)`` by assumed density filtering; it joins the BV set when its novelty
  ``gamma = k(x, x) - k' K_BV^{-1} k`` (the variance of f(x) left unexplained by the
  BV set) exceeds ``novelty_tol * k(x, x)`` and the bound ``tr(K_BV)
  tr(K_BV^{-1})`` on the condition number of ``K_BV`` stays below 1e12, otherwise
  the update is projected onto the BV set; over capacity the BV with the smallest score
  ``alpha_i^2 / (Q_ii + C_ii)`` (``Q = K_BV^{-1}``) is removed by the KL-optimal
  projection.  The novelty comes from a Cholesky factor of ``K_BV`` kept up to
  date (never a recursively updated inverse, which loses accuracy as the BV set
  becomes ill-conditioned and then admits BVs that add nothing).  The hot loop is
  ``gpc._sparse`` (``src_c/_sparse.pyx``).
* **EP sweeps** (``n_sweeps > 1``): with the BV set of the online pass fixed, the
  model is ``f(x) = p(x)' f_BV + noise of variance gamma(x)`` (``p = Q k``), on
  which the online pass is exact ADF.  Expectation propagation refines one Gaussian
  site per example on its projected latent ``u = p' f_BV``: each is removed, the
  example re-included by moment matching and the site replaced (rank-one updates).
  After each sweep ``(alpha, C)`` are recomputed from the sites,
  ``alpha = (K_BV + M)^{-1} eta``, ``C = (K_BV + M)^{-1} - K_BV^{-1}`` with
  ``M = K_BX T K_XB`` and ``eta = K_BX nu``, and the EP log evidence is evaluated.
  With every example in the BV set (``max_basis >= n``, ``novelty_tol = 0``) the
  online pass is ADF and the sweeps are sequential EP on the full GP.
* **EM** (Csató & Opper section 3), when ``optimizer`` is set: the E-step is the
  inference above; the M-step sets likelihood parameters in closed form from the
  tilted distributions (``Likelihood.em_update``: the maximiser of
  ``sum_i E[log p(y_i | f_i)]``) and maximises over the kernel's
  log-hyperparameters (L-BFGS-B) the evidence of the BV-set model with the
  E-step's site factors held fixed in BV coordinates,
  ``log int N(f; 0, K_BV) exp(eta~'f - f'A~f/2) df``, whose gradient in ``K_BV`` is
  the paper's eq. (10), ``(alpha alpha' + C) / 2``.

Use the likelihood's noise (Gaussian, Laplace, one-sided exponential) rather than a
white-noise kernel: a kernel's white-noise term enters ``K_BV`` but not the
cross-covariances ``K(BV, x)`` (scikit-learn's convention), so it acts as part of the
residual ``gamma``.
"""

import time
import warnings

import numpy as np
from scipy.linalg import LinAlgError

from .. import _model, _sparse
from .._blocks import gram as _gram
from .._blocks import matmul as _matmul
from .._linalg import cho_solve, factor_inverse, lower_cholesky, solve_lower
from .._validation import symmetric_from_lower
from ..inference import NumericalError, with_jitter
from ..kernels import cross_covariance_chunks
from .ep import _log_site_mass


class SparseState:
    """The posterior on a BV set, with room for one more BV than ``max_basis``.

    Attributes
    ----------
    X : ndarray of shape (d, n_features)
        The BV inputs, in slot order.
    alpha : ndarray of shape (max_basis + 1,)
        Mean weights (the first d are used).
    C, L : ndarray of shape (max_basis + 1, max_basis + 1), Fortran
        Covariance correction and the lower Cholesky factor of ``K_BV`` (lower
        triangles of the leading d x d blocks).
    diag_q : ndarray of shape (max_basis + 1,)
        The diagonal of ``K_BV^{-1}`` (for the removal scores).
    n_seen : int
        Examples presented (first presentations).
    log_evidence : float
        Sum of the log predictive probabilities of the online pass.
    """

    def __init__(self, max_basis, n_features):
        cap = int(max_basis) + 1
        self.max_basis = int(max_basis)
        self.X = np.zeros((0, n_features))
        self.alpha = np.zeros(cap)
        self.C = np.zeros((cap, cap), order="F")
        self.L = np.zeros((cap, cap), order="F")
        self.diag_q = np.zeros(cap)
        self.n_seen = 0
        self.log_evidence = 0.0

    @property
    def d(self):
        """Current number of basis vectors."""
        return self.X.shape[0]

    def weights(self):
        """``(alpha, C)`` of the d basis vectors (C symmetric)."""
        return self.alpha[:self.d].copy(), _full(self.C, self.d)

    def matrices(self):
        """``(alpha, C, Q)`` of the d basis vectors (C symmetric, ``Q = K_BV^{-1}``
        from the Cholesky factor)."""
        d = self.d
        L = np.tril(self.L[:d, :d])
        Q = factor_inverse(L)
        return (*self.weights(), Q)

    def copy(self):
        new = SparseState.__new__(SparseState)
        new.__dict__.update({k: (v.copy(order="K") if isinstance(v, np.ndarray) else v)
                             for k, v in self.__dict__.items()})
        return new


def _full(M, d):
    """The symmetric d x d matrix held in the lower triangle of M's leading block."""
    return symmetric_from_lower(M[:d, :d])


def _store_full(M, A):
    d = A.shape[0]
    M[:d, :d] = A


def _refresh_factor(kernel, state):
    """Recompute the Cholesky factor of K_BV and diag(K_BV^{-1}) from the kernel
    (stops the rounding drift of their updates); kept as they are when K_BV does
    not factorise."""
    d = state.d
    if d == 0:
        return
    try:
        L = lower_cholesky(kernel(state.X))
    except (LinAlgError, ValueError):
        return
    state.L[:d, :d] = L
    Linv = solve_lower(L, np.eye(d))
    state.diag_q[:d] = np.einsum("ij,ij->j", Linv, Linv)


def online_pass(kernel, likelihood, X, y, state, novelty_tol=1e-4, chunk_size=512,
                sites=None, verbose=0):
    """Present examples once each, in order, to the sparse online GP ``state``.

    Parameters
    ----------
    kernel : kernel
    likelihood : Likelihood
    X : ndarray of shape (n, n_features)
    y : ndarray of shape (n,)
        Targets (labels in {-1, +1} for classification).
    state : SparseState
        Updated in place.
    novelty_tol : float
        An example joins the BV set when ``gamma > novelty_tol * k(x, x)``.
    chunk_size : int
        Examples per block of kernel evaluations.
    sites : tuple of two ndarrays of shape (n,), optional
        Receive each example's site ``(tau, nu)`` on its projected latent.
    verbose : int
        Print progress (about every 10%) when > 0.

    Returns
    -------
    dict
        ``log_evidence`` (sum of the log predictive probabilities of these
        examples), ``n_projected``, ``n_joined``, ``n_removed``, ``n_skipped``
        (examples with a numerically zero predictive probability: not used, left
        out of the evidence, a RuntimeWarning says so).
    """
    n = X.shape[0]
    model = _model.likelihood_model(likelihood)
    cap = state.max_basis + 1
    src = np.zeros(cap, dtype=np.intc)
    total, counts = 0.0, np.zeros(4, dtype=np.int64)
    t0, next_report = time.perf_counter(), 0.1
    for start in range(0, n, chunk_size):
        Xc = X[start:start + chunk_size]
        yc = np.ascontiguousarray(y[start:start + chunk_size], dtype=np.float64)
        B = Xc.shape[0]
        d0 = state.d
        Kbx = (np.asfortranarray(kernel(state.X, Xc), dtype=np.float64) if d0
               else np.zeros((0, B), order="F"))
        Kxx = np.asfortranarray(kernel(Xc), dtype=np.float64)
        kdiag = np.ascontiguousarray(kernel.diag(Xc), dtype=np.float64)
        logz = np.empty(B)
        tau, nu = ((sites[0][start:start + B], sites[1][start:start + B])
                   if sites is not None else (np.empty(B), np.empty(B)))
        joined = np.zeros(B, dtype=np.intc)
        status, done, d, n_proj, n_join, n_rem, n_skip = _sparse.online_chunk(
            Kbx, Kxx, kdiag, yc, model,
            _sparse.Basis(state.alpha, state.C, state.L, state.diag_q, src, d0,
                          state.max_basis, float(novelty_tol)),
            _sparse.ChunkOutput(logz, tau, nu, joined))
        if status != _sparse.STATUS_OK:
            raise NumericalError(
                f"sparse GP: example {state.n_seen + done} gave a non-finite "
                "predictive moment (the kernel is probably badly scaled).",
                "sparse_online")
        rows = src[:d]
        state.X = np.concatenate([state.X, Xc])[rows] if d else state.X[:0]
        state.n_seen += B
        total += float(np.sum(logz[np.isfinite(logz)]))
        counts += (n_proj, n_join, n_rem, n_skip)
        _refresh_factor(kernel, state)
        if verbose and (start + B) / n >= next_report:
            print(f"[gpc sparse] {start + B}/{n} examples, {state.d} basis vectors, "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
            next_report += 0.1
    state.log_evidence += total
    if counts[3]:
        warnings.warn(f"sparse GP: {counts[3]} example(s) had a numerically zero "
                      "predictive probability (non-finite moments) and were skipped; "
                      "they are left out of the log evidence.", RuntimeWarning,
                      stacklevel=3)
    return {"log_evidence": total, "n_projected": int(counts[0]),
            "n_joined": int(counts[1]), "n_removed": int(counts[2]),
            "n_skipped": int(counts[3])}


def _site_posterior(kernel, X, state, tau, nu, chunk_size):
    """The posterior of f(BV) that the prior and the sites define, N(mu, S) with
    ``S = K (K + M)^{-1} K``, ``mu = K a``, ``a = (K + M)^{-1} eta`` (``K = K_BV``,
    ``M = K_BX T K_XB``, ``eta = K_BX nu``): ``(K, LK, LA, a)`` with the Cholesky
    factors of K and K + M, or None when K + M does not factorise."""
    d = state.d
    K = np.asarray(kernel(state.X), dtype=np.float64)
    M, eta = np.zeros((d, d)), np.zeros(d)
    for start, Kbx, _ in cross_covariance_chunks(kernel, state.X, X, chunk_size):
        sl = slice(start, start + Kbx.shape[1])
        M += _matmul(Kbx * tau[sl], Kbx.T)
        eta += _matmul(Kbx, nu[sl])
    try:
        LA = lower_cholesky(K + M)
    except (LinAlgError, ValueError):
        return None
    LK = np.tril(state.L[:d, :d])                    # the kept factor of K_BV
    return K, LK, LA, cho_solve(LA, eta), eta


def _site_evidence(kernel, likelihood, X, y, state, tau, nu, chunk_size, post):
    """EP log evidence and the cavities of f (residual variance included) at the
    site posterior ``post`` (:func:`_site_posterior`).  The marginal variance of
    ``u = p'f(BV)`` is ``|LA^{-1} k|^2`` (since ``p'S p = k'(K + M)^{-1} k``): no
    inverse of K_BV, no cancellation."""
    K, LK, LA, a, eta = post
    pieces = 0.0
    c_mean, c_var = np.empty(X.shape[0]), np.empty(X.shape[0])
    for start, Kbx, kdiag in cross_covariance_chunks(kernel, state.X, X, chunk_size):
        sl = slice(start, start + Kbx.shape[1])
        ta, na = tau[sl], nu[sl]
        m = _matmul(Kbx.T, a)
        W = solve_lower(LA, Kbx)
        vu = np.einsum("ij,ij->j", W, W)
        V = solve_lower(LK, Kbx)
        gamma = np.maximum(kdiag - np.einsum("ij,ij->j", V, V), 0.0)
        # Cavity of u (site removed), written without dividing by vu (which
        # vanishes for an x unrelated to the BV set): vc = vu / (1 - tau vu).
        den = 1.0 - ta * vu
        ok = den > 0
        safe = np.where(ok, den, 1.0)
        vc = np.where(ok, vu / safe, vu)
        mc = np.where(ok, (m - vu * na) / safe, m)
        lz = likelihood.gauss_moments(y[sl], mc, vc + gamma)[0]
        c_mean[sl], c_var[sl] = mc, vc + gamma
        log_t = _log_site_mass(ta, na, mc, vc)
        # Examples with a numerically zero tilted mass are left out (as in the
        # sweeps, which skip them).
        pieces += float(np.sum(np.where(ok & np.isfinite(lz), lz - log_t, 0.0)))
    log_zq = 0.5 * eta @ a - np.sum(np.log(np.diag(LA))) + np.sum(np.log(np.diag(LK)))
    return log_zq + pieces, c_mean, c_var


def ep_sweeps(kernel, likelihood, X, y, state, tau, nu, n_sweeps, damping=1.0,
              tol=1e-6, chunk_size=512, verbose=0):
    """EP sweeps with the BV set of ``state`` fixed (see the module notes).

    ``tau``, ``nu``: the sites of the online pass (updated in place).  The sweeps
    work on the posterior N(mu, S) of f(BV), recomputed from the sites before the
    first and after every sweep; at the end ``(alpha, C)`` of ``state`` are set
    from it.  With ``n_sweeps = 0`` the state is left as it is and the sites'
    posterior only evaluated.  Returns a dict with ``log_evidence`` (EP, at the
    end; NaN when the sites' posterior is improper), ``n_sweeps`` (made),
    ``converged`` (every site updated in the last sweep, the largest relative
    change below ``tol``), ``n_skipped`` (updates skipped for an improper cavity
    or update, or a zero tilted mass) and the cavities of f (``cavity_mean``,
    ``cavity_var``)."""
    model = _model.likelihood_model(likelihood)
    _refresh_factor(kernel, state)
    d, cap = state.d, state.max_basis + 1
    n = X.shape[0]
    post = _site_posterior(kernel, X, state, tau, nu, chunk_size)
    if post is None:
        return {"log_evidence": np.nan, "n_sweeps": 0, "converged": False,
                "n_skipped": 0, "max_change": np.nan, "cavity_mean": np.full(n, np.nan),
                "cavity_var": np.full(n, np.nan)}
    log_ev, c_mean, c_var = _site_evidence(kernel, likelihood, X, y, state, tau, nu,
                                           chunk_size, post)
    mu, S = np.zeros(cap), np.zeros((cap, cap), order="F")

    def load(post):
        K, _, LA, a, _ = post
        W = solve_lower(LA, K)
        mu[:d] = _matmul(K, a)
        S[:d, :d] = _gram(W.T)

    skipped, converged, made, change = 0, n_sweeps == 0, 0, 0.0
    basis_post = _sparse.BasisPosterior(mu, S, state.L, d) if n_sweeps else None
    for sweep in range(n_sweeps):
        load(post)
        change, skipped = 0.0, 0
        for start, Kbx, kdiag in cross_covariance_chunks(kernel, state.X, X, chunk_size):
            sl = slice(start, start + Kbx.shape[1])
            yc = np.ascontiguousarray(y[sl], dtype=np.float64)
            ta, na = tau[sl].copy(), nu[sl].copy()
            status, n_cav, n_upd, ch = _sparse.ep_chunk(
                Kbx, kdiag, yc, model, basis_post, ta, na, float(damping))
            if status != _sparse.STATUS_OK:
                raise NumericalError("sparse GP: non-finite moments in an EP "
                                     f"sweep (examples {start}..).", "sparse_online")
            tau[sl], nu[sl] = ta, na
            skipped += n_cav + n_upd
            change = max(change, ch)
        made += 1
        new = _site_posterior(kernel, X, state, tau, nu, chunk_size)
        if new is None:
            log_ev = np.nan
            break
        post = new
        log_ev, c_mean, c_var = _site_evidence(kernel, likelihood, X, y, state, tau, nu,
                                               chunk_size, post)
        if verbose:
            print(f"[gpc sparse] EP sweep {sweep + 1}: log evidence {log_ev:.6g}, "
                  f"largest site change {change:.2e}, {skipped} updates skipped",
                  flush=True)
        if change < tol and skipped == 0:
            converged = True
            break
    if made:
        K, LK, LA, a, _ = post
        state.alpha[:d] = a
        Q = factor_inverse(LK)
        _store_full(state.C, factor_inverse(LA) - Q)
    return {"log_evidence": log_ev, "n_sweeps": made, "converged": converged,
            "n_skipped": skipped, "max_change": change, "cavity_mean": c_mean,
            "cavity_var": c_var}


def bv_prior_em(K_bv, S):
    """The kernel M-step objective and its gradient in ``K_BV``.

    With the E-step's posterior of the latent values at the basis vectors,
    ``q(f_BV) = N(mu, Sigma)``, held fixed and ``S = Sigma + mu mu'``, the EM
    objective for the kernel is ``E_q[log N(f_BV; 0, K_BV)] = -(log|K_BV| +
    tr(K_BV^{-1} S)) / 2`` (+ const); its gradient ``(K^{-1} S K^{-1} - K^{-1}) / 2``
    is Csató & Opper's eq. (10), ``(alpha alpha' + C) / 2`` with ``alpha = K^{-1} mu``
    and ``C = K^{-1} Sigma K^{-1} - K^{-1}``.

    A K_BV that does not factorise (hyperparameters far from the data's, e.g. very
    long length scales) gets the jitter ladder of :func:`gpc.infer`, so that the
    optimiser's line search can come back from there; past its last rung, a
    :class:`gpc.NotPositiveDefiniteError` (also a LinAlgError).

    Returns ``(value, dK)``.
    """
    def factor(A):
        try:
            return lower_cholesky(A)
        except LinAlgError:
            return None

    L, _ = with_jitter(K_bv, factor, "K(BV, BV)")
    Kinv = factor_inverse(L)
    KS = Kinv @ S
    value = -np.sum(np.log(np.diag(L))) - 0.5 * np.trace(KS)
    return value, 0.5 * (KS @ Kinv - Kinv)
