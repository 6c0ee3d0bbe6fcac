"""Expectation propagation on inducing inputs, with the exact gradient of its
log evidence: the large-data route to hyperparameter learning.

The model (FITC; Csato & Opper's basis-vector model with the basis fixed) puts
the prior on the latent values ``u = f(Z)`` at ``M`` inducing inputs ``Z`` and
makes each latent value independent given them::

    f(x) | u  ~  N(p(x)'u, g(x)),   p(x) = K_mm^{-1} k(x),
                                    g(x) = k(x, x) - k(x)' K_mm^{-1} k(x),

with ``k(x) = K(Z, x)``.  With ``Z`` equal to the training inputs it is the full
GP.  Everything is computed in whitened coordinates: with ``K_mm = L_K L_K'``,
the features ``Phi = L_K^{-1} K(Z, X)`` give ``g(x) = k(x, x) - |Phi_x|^2``.  EP
keeps one Gaussian site per example on its projected latent ``Phi_x'v``
(``v = L_K^{-1} u``), of precision ``E_i >= 0`` and shift ``beta_i``, so the
posterior of ``v`` is ``N(Sigma^{-1} eta, Sigma^{-1})`` with
``Sigma = I + Phi E Phi'`` (eigenvalues >= 1, so it factorises however badly
``K_mm`` is conditioned) and ``eta = Phi beta``.  Everything an EP iteration, the
evidence and its gradient need is a sum over chunks of data of M-vectors and
M x M matrices given ``(Sigma, eta)``: memory is O(chunk x M + M^2) (plus the
n x M features when they fit in ``cache_bytes``), never n x n, and the time
O(n M^2) per pass, in level-3 BLAS.

Notes
-----
*Updates* are block-sequential: a sweep visits the chunks in turn, and each
chunk's sites are updated together (cavities, tilted moments, new sites)
against the posterior that already holds every earlier chunk's new sites; the
chunk's share of ``Sigma`` and ``eta`` is then swapped for the new one (each
chunk keeps its M x M share: O(n M^2 / chunk) memory, and one M x M Cholesky
factorisation per chunk).  Against updating every site from one posterior per
pass (parallel EP), this needs fewer sweeps than parallel EP needs passes,
most so from zero sites (``bench/RESULTS.md``), and does not oscillate where
parallel EP does at large signal variance.  A sweep whose
largest site change (``|dE| v`` and ``|dbeta| sqrt(v)``, ``v`` the cavity
variance of ``f``; of the undamped update, so that it measures the distance
from the fixed point and not the step taken) grows is followed by damped
sweeps.  The evidence and gradient are then taken in one pass at the final
sites, all chunks against one posterior.

*The log evidence* is ``log Z_q + sum_i (log Z_i - log C_i)``::

    log Z_q = eta'a / 2 - log|Sigma| / 2,   a = Sigma^{-1} eta,

``Z_i`` the tilted mass of example i (the likelihood averaged over its cavity,
whose variance includes ``g_i``) and ``C_i`` the integral of site i against the
cavity of its projected latent.

*The gradient* at the EP fixed point is the partial derivative with the sites
held fixed (the cavities' influence cancels there).  The residual variances
``g_i`` enter the tilted masses directly, with ``s_i = d log Z_i / d g_i``.  In
the kernel's matrices, with ``S = diag(s)``::

    d/dK_mm = L_K^{-T} (Phi S Phi' - a a' / 2 - (Sigma^{-1} - I) / 2) L_K^{-1}
    d/dK_nm = ((beta - E Phi'a) a' - E Phi' Sigma^{-1} - 2 S Phi') L_K^{-1}
    d/dk_ii = s_i

contracted chunk by chunk into the hyperparameters by
:func:`gpc.kernels.contract_cross` and :func:`gpc.kernels.contract_diag`, and
``K_mm``'s by :func:`gpc.kernels.contract`.  The likelihood's parameters get
``sum_i d log Z_i / d theta_lik``.

*Jitter*: ``K_mm``'s diagonal is multiplied by ``1 + jitter``; that is part of
the model (the gradient includes it), so the evidence stays smooth.

*Weights* w_i raise example i's factor (its likelihood averaged over ``f_i``
given ``u``) to the power w_i, by power EP as for the full GP
(:func:`gpc.inference.ep.ep`), with the site's power a_i = w_i (1 for a weight
below 1 and a likelihood that ``tempers``): the cavity removes the site's root
``(E_i / a_i, beta_i / a_i)``, the tilted mass is that of the likelihood to the
power w_i / a_i, and the new site is the moment-matched one raised to a_i; each
example's evidence term, its ``s_i`` and its d/d theta_lik are multiplied by
a_i.  A zero weight holds the site at 1.  Copies of an example share its
features, so an integer weight k stands for k copies at a common fixed point.
"""

import threading
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import LinAlgError
from sklearn.exceptions import ConvergenceWarning

from .._blocks import gram as _gram
from .._blocks import matmul as _matmul
from .._linalg import cho_solve, factor_inverse, lower_cholesky, solve_lower
from .._validation import symmetric_from_lower
from ..kernels import (as_kernel, contract, contract_cross, contract_diag,
                      contract_inputs, cross_covariance)
from ..inference import NumericalError
from ..inference._base import check_sample_weight
from ._chunked import ChunkedData

__all__ = ["SparseEPResult", "sparse_ep"]


@dataclass
class SparseEPResult:
    """What :func:`~gpc.sparse.sparse_ep` returns.

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
    factors : tuple of two ndarrays of shape (M, M)
        ``(L_K, L_S)``: the same variance without C's cancellation,
        ``k(x, x) - |L_K^{-1} k(x)|^2 + |L_S^{-1} L_K^{-1} k(x)|^2``.
    info : dict
        ``iterations`` (EP sweeps), ``passes`` (over the data, all kinds),
        ``converged``, ``max_change``, ``n_skipped`` (site updates skipped in
        the last sweep: improper cavity, negative precision, zero tilted mass),
        ``gradient_exact`` (converged with no update skipped in the last
        sweep: the sites are EP's fixed point, where ``grad`` is the evidence's
        gradient), ``damping`` (at the end), ``seconds``.
    dZ : ndarray of shape (M, n_features) or None
        The log evidence's gradient in the inducing inputs
        (``inducing_gradient=True``).
    """

    log_evidence: float
    grad: np.ndarray
    dlik: np.ndarray
    sites: tuple
    alpha: np.ndarray
    C: np.ndarray
    factors: tuple = None
    info: dict = field(default_factory=dict)
    dZ: np.ndarray = None


class _Prior:
    """The inducing-point prior at one set of hyperparameters: ``K_mm`` (jittered),
    its Cholesky factor ``L_K``, and the whitened features
    ``Phi = L_K^{-1} K(Z, X_chunk)`` with the residual variances ``g``;
    ``inducing_gradient``: the chunks' gradient pieces include Z's."""

    def __init__(self, kernel, Z, jitter, inducing_gradient=False):
        self.kernel, self.Z = kernel, Z
        self.inducing_gradient = bool(inducing_gradient)
        self.jitter = float(jitter)
        K = np.array(kernel(Z), dtype=np.float64)
        K[np.diag_indices_from(K)] *= 1.0 + self.jitter
        self.Kmm = K
        try:
            self.LK = lower_cholesky(K)
        except (LinAlgError, ValueError):
            repeats = Z.shape[0] - np.unique(Z, axis=0).shape[0]
            why = (f"the inducing inputs hold {repeats} repeated row(s)" if repeats
                   else "the inducing inputs are too close for the kernel")
            raise NumericalError(
                f"sparse EP: K(Z, Z) of the inducing inputs Z does not factorise at "
                f"these hyperparameters with jitter={self.jitter:g}: {why}. Raise "
                "jitter (the default is 1e-6), or give fewer or more distant "
                "inducing inputs.", "sparse_ep") from None

    def cross(self, Xc):
        """K(X_chunk, Z), C-ordered B x M."""
        return cross_covariance(self.kernel, Xc, self.Z)

    def features(self, Xc):
        """``(Phi, g)``: ``Phi = L_K^{-1} K(Z, X_chunk)`` (Fortran M x B) and the
        residual variances ``k(x, x) - |Phi_x|^2``, clipped at 0."""
        Phi = solve_lower(self.LK, self.cross(Xc).T, overwrite_b=True)
        g = np.asarray(self.kernel.diag(Xc), dtype=np.float64) - np.einsum(
            "ij,ij->j", Phi, Phi)
        return Phi, np.maximum(g, 0.0)

    def unwhiten(self, D):
        """``L_K^{-T} D L_K^{-1}`` for a symmetric M x M D."""
        A = solve_lower(self.LK, D, trans=True)
        return solve_lower(self.LK, A.T, trans=True).T


class _Posterior:
    """The sites' posterior in whitened coordinates: ``Sigma = I + Phi E Phi'``,
    ``eta = Phi beta``, ``L_S = chol(Sigma)``, ``a = Sigma^{-1} eta``.  (``Sigma``'s
    eigenvalues are >= 1: it factorises whatever ``K_mm``'s conditioning.)"""

    def __init__(self, Sigma, eta):
        self.Sigma, self.eta = Sigma, eta
        try:
            self.LS = lower_cholesky(Sigma)
        except (LinAlgError, ValueError):
            raise NumericalError("sparse EP: I + Phi E Phi' does not factorise "
                                 "(non-finite sites?).", "sparse_ep") from None
        self.a = cho_solve(self.LS, eta)

    def log_zq(self):
        return 0.5 * float(self.eta @ self.a) - np.sum(np.log(np.diag(self.LS)))

    def inverse_minus_identity(self):
        """``Sigma^{-1} - I`` (computed once; the gradient and C both use it)."""
        if "_inv_minus_eye" not in self.__dict__:
            S = factor_inverse(self.LS)
            S[np.diag_indices_from(S)] -= 1.0
            self._inv_minus_eye = S
        return self._inv_minus_eye


_SCRATCH = threading.local()


def _scratch(slot, like):
    """A Fortran array shaped as ``like``, kept per thread and slot: a pass's
    chunk-sized temporaries are not allocated (and page-faulted in) afresh."""
    key = (slot, like.shape)
    buf = getattr(_SCRATCH, "arrays", None)
    if buf is None:
        buf = _SCRATCH.arrays = {}
    if key not in buf:
        if len(buf) > 8:
            buf.clear()
        buf[key] = np.empty(like.shape, order="F")
    return buf[key]


def _site_stats(Phi, E, beta):
    """A chunk's contributions ``{"Sigma": Phi E Phi', "eta": Phi beta}`` (E >= 0),
    planned on SciPy's BLAS (see :func:`gpc._blocks.matmul` for why not numpy's)."""
    W = np.multiply(Phi, np.sqrt(E), out=_scratch("W", Phi))
    return {"Sigma": _gram(W), "eta": _matmul(Phi, beta)}


def _log_site_mass(E, beta, mc, vc):
    """log of the integral of a site ``exp(beta u - E u^2 / 2)`` against
    ``N(u; mc, vc)``."""
    q = 1.0 + E * vc
    quad = beta * beta * vc + 2.0 * beta * mc - E * mc * mc
    return -0.5 * np.log(q) + quad / (2.0 * q)


def _site_powers(likelihood, w):
    """The sites' powers s (see :func:`sparse_ep`): w, but 1 for the weights in
    (0, 1) of a likelihood that ``tempers``."""
    return np.where((w > 0) & (w < 1) & likelihood.tempers, 1.0, w)


def _root(x, s):
    """A site's natural parameter x to the power 1 / s (``x / s``; 0 for a zero
    weight): what power EP's cavity removes (see :func:`sparse_ep`)."""
    return np.divide(x, s, out=np.zeros_like(x), where=s > 0)


def _tilted_moments(likelihood, yc, mc, vc, w, s):
    """``gauss_moments`` of the tilted laws: the likelihood to the powers w / s."""
    c = np.divide(w, s, out=np.ones_like(w), where=s > 0)
    if np.all(c == 1.0):
        return likelihood.gauss_moments(yc, mc, vc)
    return likelihood.gauss_moments(yc, mc, vc, power=c)


def _cavity(Phi, post, E, beta):
    """Marginals of the projected latents and their cavities (the posterior
    without the sites ``(E, beta)``): ``(V, m, v, mc, vc, ok)`` with ``V = L_S^{-1}
    Phi`` (``v = |V|^2``, no cancellation)."""
    V = _scratch("V", Phi)
    np.copyto(V, Phi)
    V = solve_lower(post.LS, V, overwrite_b=True)
    v = np.einsum("ij,ij->j", V, V)
    m = _matmul(Phi.T, post.a)
    den = 1.0 - E * v
    ok = den > 0.0
    safe = np.where(ok, den, 1.0)
    vc = np.where(ok, v / safe, v)
    mc = np.where(ok, (m - v * beta) / safe, m)
    return V, m, v, mc, vc, ok


def _site_update(E, beta, mc, vc, g, d1, d2, good, damping, w):
    """New sites from the tilted moments (damped; each moment-matched site
    raised to its power w), the largest change of the undamped update (the
    distance from EP's fixed point, whatever the damping) and the number of
    updates skipped (improper cavity or update, zero tilted mass)."""
    nu2 = -d2
    den = 1.0 - vc * nu2
    valid = good & (den > 0.0)
    safe = np.where(valid, den, 1.0)
    E_new = nu2 / safe
    valid &= E_new >= 0.0
    E_new = np.where(valid, E + damping * (w * E_new - E), E)
    beta_new = np.where(valid, beta + damping * (w * (d1 + mc * nu2) / safe - beta),
                        beta)
    valid |= w == 0
    E_new[w == 0] = beta_new[w == 0] = 0.0                # a site held at 1
    v_f = vc + g
    change = np.maximum(np.abs(E_new - E) * v_f, np.abs(beta_new - beta) * np.sqrt(v_f))
    return (E_new, beta_new, float(np.max(change, initial=0.0)) / damping,
            int(np.sum(~valid)))


def _chunk_pass(post, likelihood, Phi, g, yc, wc, E, beta, damping, update):
    """One chunk of a pass at the sites ``(E, beta)`` that ``post`` was built from,
    the examples weighted by ``wc`` (None: all 1).

    Returns ``(E, beta, stats, local)``: the new sites (the old ones unless
    ``update``), ``stats`` (evidence terms, d/d likelihood parameter, and with
    ``update`` the largest change, skipped count and the new sites' ``Sigma`` and
    ``eta`` contributions), and ``local = (V, m, s)`` for the gradient."""
    w = np.ones(E.shape) if wc is None else wc
    p = _site_powers(likelihood, w)
    Er, br = _root(E, p), _root(beta, p)
    V, m, v, mc, vc, ok = _cavity(Phi, post, Er, br)
    logz, d1, d2, dpar = _tilted_moments(likelihood, yc, mc, vc + g, w, p)
    good = ok & np.isfinite(logz) & np.isfinite(d1) & np.isfinite(d2)
    counted = good & (w > 0)
    stats = {"evidence": float(np.sum(np.where(
        counted, p * (logz - _log_site_mass(Er, br, mc, vc)), 0.0))),
        "dlik": float(np.sum(np.where(counted, p * dpar, 0.0)))}
    s = np.where(counted, 0.5 * p * (d1 * d1 + d2), 0.0)   # d log Z_i^p / d g_i
    if update:
        E, beta, stats["change"], stats["skipped"] = _site_update(
            E, beta, mc, vc, g, d1, d2, good, damping, p)
        stats.update(_site_stats(Phi, E, beta))
    return E, beta, stats, (V, m, s)


def _gradient_pieces(prior, post, Xc, Phi, local, E, beta):
    """A chunk's share of the gradient: its cross and diagonal contractions and
    ``H = Phi S Phi'`` (for the K_mm term).

    ``d/dK_nm = G^ L_K^{-1}`` with the whitened
    ``G^ = (beta - E m) a' - E Phi' Sigma^{-1} - 2 S Phi'`` (B x M), built
    transposed: ``Phi' Sigma^{-1} = (L_S^{-T} V)'`` with ``V = L_S^{-1} Phi``,
    both triangular solves in place on V."""
    V, m, s = local
    Gt = solve_lower(post.LS, V, overwrite_b=True, trans=True)
    Gt *= -E
    Gt -= Phi * (2.0 * s)
    Gt += post.a[:, None] * (beta - E * m)
    Gt = solve_lower(prior.LK, Gt, overwrite_b=True, trans=True)
    K = prior.cross(Xc)
    pieces = {"cross": contract_cross(prior.kernel, Xc, prior.Z, Gt.T, K),
              "diag": contract_diag(prior.kernel, Xc, s),
              "H": _matmul(Phi * s, Phi.T)}
    if prior.inducing_gradient:
        pieces["dZ"] = contract_inputs(prior.kernel, Xc, prior.Z, Gt.T, K)
    return pieces


# -- per-chunk tasks (run where the chunk lives: see gpc.sparse._chunked) --------------------

def _features_task(prior, Xc):
    return prior.features(Xc)


def _accumulate_task(prior, Xc, feat, site):
    """A chunk's ``(Phi E Phi', Phi beta)``."""
    Phi = (feat if feat is not None else prior.features(Xc))[0]
    return _site_stats(Phi, site[0], site[1])


def _pass_task(prior, post, likelihood, damping, update, gradient, Xc, yc, wc, feat,
               site):
    """One chunk of a pass at the sites ``post`` was built from: ``(new sites,
    stats)``, with the gradient pieces when ``gradient``."""
    Phi, g = feat if feat is not None else prior.features(Xc)
    E, beta = site
    E_new, beta_new, st, local = _chunk_pass(post, likelihood, Phi, g, yc, wc, E, beta,
                                             damping, update)
    if gradient:
        st.update(_gradient_pieces(prior, post, Xc, Phi, local, E, beta))
    return (E_new, beta_new), st


def _total(own):
    """``(Sigma, eta)``: the chunks' contributions summed (lower triangle)."""
    return (sum((o["Sigma"] for o in own), np.zeros((own[0]["eta"].size,) * 2)),
            sum(o["eta"] for o in own))


def _sweep(data, run_chunk, sites, own, M):
    """One block-sequential sweep: each chunk's sites against the posterior that
    holds every earlier chunk's new sites; ``sites`` and ``own`` (each chunk's
    share of ``Sigma`` and ``eta``) are updated in place.  Returns the largest
    change and the number of skipped updates."""
    ex = data.executor
    Sigma, eta = _total(own)
    change, skipped = 0.0, 0
    for c in range(len(sites)):
        out = run_chunk(c, _Posterior(np.eye(M) + symmetric_from_lower(Sigma), eta))
        sites[c] = ex.item(out, 0)
        st = ex.gather([ex.item(out, 1)])[0]
        Sigma = Sigma + (st["Sigma"] - own[c]["Sigma"])
        eta = eta + (st["eta"] - own[c]["eta"])
        own[c] = st
        change, skipped = max(change, st["change"]), skipped + st["skipped"]
    return change, skipped


def _ep(prior, likelihood, data, sites, *, tol, max_iter, damping, cache_bytes,
        compute_gradient, verbose):
    """EP on chunked data (``gpc.sparse._chunked.ChunkedData``); ``sites`` per chunk
    or None.  Returns ``(post, parts, sites, info)``: the posterior the evidence
    and gradient were taken at, the chunks' stats of that pass, the sites."""
    ex, M = data.executor, prior.Z.shape[0]
    prior_s = ex.share(prior)
    keep = 8.0 * data.n * M <= cache_bytes
    feats = (data.map(_features_task, data.X, shared=(prior_s,)) if keep
             else [None] * len(data.sizes))
    if sites is None:
        sites, passes = data.zero_sites(), 0
        own = [{"Sigma": np.zeros((M, M)), "eta": np.zeros(M)} for _ in data.sizes]
    else:
        sites = list(sites)             # the caller's stay as they are
        own = ex.gather(data.map(_accumulate_task, data.X, feats, sites,
                                 shared=(prior_s,)))
        passes = 1
    info = {"iterations": 0, "converged": False, "max_change": np.inf, "n_skipped": 0}
    last, max_damping, t0 = np.inf, float(damping), time.perf_counter()
    for it in range(max_iter):
        change, skipped = _sweep(data, lambda c, post: ex.submit(
            _pass_task, prior_s, post, likelihood, damping, True, False,
            data.X[c], data.y[c], data.w[c], feats[c], sites[c]), sites, own, M)
        passes += 1
        info.update(iterations=it + 1, max_change=change, n_skipped=skipped)
        if verbose:
            print(f"  [gpc sparse EP] sweep {it + 1}: largest site change "
                  f"{change:.2e}, damping {damping:g}, {skipped} updates skipped, "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
        if change < tol:
            info["converged"] = True
            break
        # A growing change halves the step; steady progress lengthens it again.
        damping = (max(0.5 * damping, 0.05) if change > last
                   else min(1.25 * damping, max_damping))
        last = change
    Sigma, eta = _total(own)
    post = _Posterior(np.eye(M) + symmetric_from_lower(Sigma), eta)
    outs = data.map(_pass_task, data.X, data.y, data.w, feats, sites,
                    shared=(prior_s, ex.share(post), likelihood, damping, False,
                            compute_gradient))
    info.update(passes=passes + 1, damping=damping)
    return post, ex.gather(ex.item(o, 1) for o in outs), sites, info


def sparse_ep(kernel, likelihood, X, y, Z, *, sample_weight=None, sites=None,
              jitter=1e-6, tol=1e-8, max_iter=100, damping=1.0, chunk_size=2048,
              cache_bytes=2 ** 31, compute_gradient=True, inducing_gradient=False,
              verbose=0):
    """EP on the inducing-point (FITC) model: sites, log evidence and its gradient.

    Parameters
    ----------
    kernel : kernel
        Any scikit-learn or :mod:`gpc.kernels` kernel, at its current
        hyperparameters.
    likelihood : Likelihood
        A likelihood of :mod:`gpc.likelihoods`.  The sites keep non-negative
        precisions, which is exact for the log-concave ones (probit, logit,
        step, the regression noises); with the noisy threshold the updates to a
        negative precision are skipped, and a ConvergenceWarning says that the
        evidence and its gradient are then approximate.
    X : ndarray of shape (n, n_features) or gpc.sparse._chunked.ChunkedData
        Inputs; or the data in chunks (then ``y`` is None and ``sites`` per
        chunk).
    y : ndarray of shape (n,)
        Labels in {-1, +1} (real targets for regression likelihoods).
    Z : ndarray of shape (M, n_features)
        Inducing inputs.
    sample_weight : array-like of shape (n,), optional
        Non-negative weights of the examples (not with chunked data, which
        carry their own): each example's likelihood, averaged over its latent
        value given the inducing values, is raised to its weight (see Notes).
        A zero weight is the example left out.
    sites : tuple of two ndarrays of shape (n,), optional
        ``(E, beta)`` of an earlier call (warm start); zeros when None.
    jitter : float, default=1e-6
        ``K(Z, Z)``'s diagonal is multiplied by ``1 + jitter`` (part of the model).
    tol : float, default=1e-8
        EP stops when the largest site change of a sweep (of the undamped
        update) is below ``tol``.  The gradient is exact at the fixed point and
        errs by about ``tol`` off it, the evidence by about its square (as for
        :func:`gpc.inference.ep.ep`, whose default this is).
    max_iter : int, default=100
        Most EP sweeps.
    damping : float in (0, 1], default=1.0
        Largest step of the site updates: a sweep whose largest change grew
        halves the step (down to 0.05), one whose change fell lengthens it by
        1.25 (up to ``damping``).
    chunk_size : int, default=2048
        Examples per block of kernel evaluations.
    cache_bytes : int, default=2 ** 31
        The whitened features (8 n M bytes) are kept across the passes of the
        call when they fit in this; otherwise recomputed at each pass.
    compute_gradient : bool, default=True
        Also return the gradient.
    inducing_gradient : bool, default=False
        With ``compute_gradient``, also return the gradient in Z (``dZ``); it
        needs a kernel of :func:`gpc.kernels.contract_inputs`.
    verbose : int, default=0
        Print one line per sweep when > 0.

    Returns
    -------
    SparseEPResult

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from gpc.likelihoods import get_likelihood
    >>> from gpc.sparse import sparse_ep
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(500, 2)
    >>> y = np.sign(X[:, 0] + 0.3 * rng.randn(500))
    >>> res = sparse_ep(RBF(1.0), get_likelihood("probit"), X, y, X[:20])
    >>> res.info["converged"], res.grad.shape
    (True, (1,))
    """
    t0 = time.perf_counter()
    chunked = isinstance(X, ChunkedData)
    if chunked and sample_weight is not None:
        raise ValueError("sparse_ep: chunked data carry their weights; "
                         "sample_weight must be None with them.")
    if sample_weight is not None:
        sample_weight = check_sample_weight(sample_weight, len(y))
    data = X if chunked else ChunkedData.from_arrays(X, y, chunk_size,
                                                     w=sample_weight)
    if sites is not None and not chunked:
        cuts = np.cumsum(data.sizes)[:-1]
        sites = list(zip(np.split(np.asarray(sites[0], dtype=np.float64), cuts),
                         np.split(np.asarray(sites[1], dtype=np.float64), cuts)))
    prior = _Prior(as_kernel(kernel), Z, jitter, compute_gradient and inducing_gradient)
    post, parts, sites, info = _ep(prior, likelihood, data, sites, tol=tol,
                                   max_iter=max_iter, damping=damping,
                                   cache_bytes=cache_bytes,
                                   compute_gradient=compute_gradient, verbose=verbose)
    info["gradient_exact"] = bool(info["converged"] and info["n_skipped"] == 0)
    message = unreached(info, tol)
    if message:
        warnings.warn(f"sparse EP: {message}", ConvergenceWarning, stacklevel=2)
    log_ev = post.log_zq() + sum(p["evidence"] for p in parts)
    grad = dlik = dZ = None
    if compute_gradient:
        D = _kmm_derivative(prior, post, parts)
        grad = (contract(prior.kernel, prior.Z, D) + sum(p["cross"] for p in parts)
                + sum(p["diag"] for p in parts))
        dlik = np.array([sum(p["dlik"] for p in parts)])[: len(likelihood.params)]
        if prior.inducing_gradient:   # K(Z, Z): both arguments move (see contract_inputs)
            dZ = 2.0 * contract_inputs(prior.kernel, prior.Z, prior.Z, D) + sum(
                p["dZ"] for p in parts)
    if not chunked:
        sites = tuple(np.concatenate(a) for a in zip(*sites))
    alpha = solve_lower(prior.LK, post.a, trans=True)
    info["seconds"] = time.perf_counter() - t0
    return SparseEPResult(log_evidence=float(log_ev), grad=grad, dlik=dlik,
                          sites=sites, alpha=alpha,
                          C=prior.unwhiten(post.inverse_minus_identity()),
                          factors=(prior.LK, post.LS), info=info, dZ=dZ)


def unreached(info, tol):
    """Why a run's sites are not EP's fixed point (its ``info``, the ``tol`` it
    ran to), or None when they are.  Its evidence and gradient are then
    approximate: the gradient assumes every site moment-matched."""
    if not info["converged"]:
        return (f"EP did not converge in {info['iterations']} sweeps (largest site "
                f"change {info['max_change']:.2e}, tol {tol:g}); the evidence and "
                "its gradient are approximate.")
    if info["n_skipped"]:
        return (f"{info['n_skipped']} site update(s) were skipped in the last sweep "
                "(an improper cavity, zero tilted mass, or a negative precision: "
                "the likelihood is not log-concave); those sites are not "
                "moment-matched, so the evidence and its gradient are approximate.")
    return None


def _kmm_derivative(prior, post, parts):
    """The log evidence's derivative in the kernel's ``K(Z, Z)`` (before the
    jitter: its diagonal times ``1 + jitter``), from the chunks' pieces:
    ``L_K^{-T} (H - a a' / 2 - (Sigma^{-1} - I) / 2) L_K^{-1}``."""
    Dh = sum(p["H"] for p in parts) - 0.5 * (np.outer(post.a, post.a)
                                             + post.inverse_minus_identity())
    D = prior.unwhiten(0.5 * (Dh + Dh.T))
    D = 0.5 * (D + D.T)
    D[np.diag_indices_from(D)] *= 1.0 + prior.jitter
    return D


