"""Elliptical slice steps for many chains at once: the target (under the prior or a
reference Gaussian), the slicer, the Cholesky factor of K with jitter only if needed,
and the argument checks shared by the samplers."""

import math
import time

import numpy as np
from scipy.linalg import LinAlgError
from scipy.special import log_expit, log_ndtr

from .._linalg import lower_cholesky, matmul, solve_lower
from .._validation import NotPositiveDefiniteError, as_kernel_matrix
from ..likelihoods import Logit, Probit, get_likelihood


#: Jitter tried (relative to the mean prior variance) when the Cholesky of K fails.
JITTER_LADDER = (1e-10, 1e-8, 1e-6, 1e-4)
#: Below this angle-bracket width a shrinking search gives up and keeps the state.
_MIN_BRACKET = 1e-12
#: Up to this n the samplers' products run in the calling thread (see ``_Target``).
_SINGLE_THREAD_N = 1000
_TWO_PI = 2.0 * math.pi


def _rng(random_state):
    """A numpy Generator from None, an int, a Generator or a RandomState."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1, size=4))
    if random_state is None or isinstance(random_state, (int, np.integer)):
        return np.random.default_rng(random_state)
    raise ValueError(f"random_state must be None, an int, a numpy Generator or a "
                     f"RandomState, got {random_state!r}.")


def _positive_int(value, name, minimum=1):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
            or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def _check_labels(y, n, name):
    y = np.asarray(y)
    if y.dtype.kind not in "fiub" or y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"{name} must be a numeric 1-D array of length {n}.")
    y = y.astype(np.float64)
    if not np.all((y == 1.0) | (y == -1.0)):
        raise ValueError(f"{name} must contain only -1 and +1.")
    return y


def kernel_cholesky(K, name="K"):
    """Lower Cholesky factor of a covariance matrix, with jitter only if needed.

    Parameters
    ----------
    K : array_like of shape (n, n)
        Symmetric positive (semi-)definite, finite.
    name : str
        Used in error messages.

    Returns
    -------
    L : ndarray of shape (n, n)
        Lower triangular with ``L @ L.T = K + jitter I``.
    jitter : float
        0.0 when K itself factorises; otherwise the first of ``JITTER_LADDER``
        times ``mean(diag(K))`` that works.

    Raises
    ------
    ValueError
        If K is not a finite, square, symmetric array.
    gpc.NotPositiveDefiniteError
        If even the largest jitter does not make it factorise.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.mcmc import kernel_cholesky
    >>> L, jitter = kernel_cholesky(np.ones((2, 2)))     # rank one: needs jitter
    >>> jitter > 0, np.allclose(L @ L.T, np.ones((2, 2)) + jitter * np.eye(2))
    (True, True)
    """
    K = np.ascontiguousarray(as_kernel_matrix(K, name=name))
    n = K.shape[0]
    if n == 0:
        raise ValueError(f"{name} must have at least one row.")
    scale = float(np.mean(np.diag(K)))
    if not scale > 0:
        raise NotPositiveDefiniteError(f"{name} has a non-positive mean diagonal: it "
                                       "is not a covariance matrix.")
    for rel in (0.0,) + JITTER_LADDER:
        jitter = rel * scale
        A = K + jitter * np.eye(n) if jitter else K
        try:
            L = lower_cholesky(A)
        except LinAlgError:
            continue
        if np.all(np.isfinite(L)):
            return np.ascontiguousarray(L), jitter
    raise NotPositiveDefiniteError(
        f"{name} is not positive semi-definite: its Cholesky factorisation failed "
        f"even with {JITTER_LADDER[-1]:g} x mean(diag) added to the diagonal.")


def _total_log_lik(likelihood, y):
    """``F -> sum_i log p(y_i | F[i, :])`` for a matrix F of states (one per column)."""
    kind = type(likelihood)
    if kind is Probit or kind is Logit:
        fn = log_ndtr if kind is Probit else log_expit
        yc = y[:, None]

        def total(F):
            Z = F * yc
            fn(Z, out=Z)
            return Z.sum(axis=0)
    else:
        yc = y[:, None]

        def total(F):
            return np.asarray(likelihood.log_lik(yc, F), dtype=np.float64).sum(axis=0)
    return total


def _setup(K, y, likelihood):
    lik = get_likelihood(likelihood)
    L, jitter = kernel_cholesky(K)
    yv = lik.check_targets(y, L.shape[0])
    return lik, yv, L, jitter


def _check_init(init, n):
    F = np.asarray(init, dtype=np.float64)
    if F.ndim == 1:
        F = F[None, :]
    if F.ndim != 2 or F.shape[1] != n or F.shape[0] < 1:
        raise ValueError(f"init must have shape (n_chains, {n}), got "
                         f"{np.shape(init)}.")
    if not np.all(np.isfinite(F)):
        raise ValueError("init contains NaN or infinity.")
    return F


class _Target:
    """The target ``q(f) exp(b r(f))`` of the slice steps, with the chains' states.

    Without a reference Gaussian, ``q = N(0, K)`` and ``r(f) = log p(y | f)``; a
    state is the matrix F of latent values (one chain per column) and an ellipse
    point ``F cos t + (L w) sin t``, ``w ~ N(0, I)``.

    With a reference ``q``, everything is written in the prior's whitened
    coordinates ``v = L^{-1} f`` (prior ``N(0, I)``), where ``q = N(mu, R R')``:
    ``r = log p(y | L v) + log N(v; 0, I) - log N(v; mu, R R')``, so that
    ``q exp(r)`` is still the unnormalised posterior and ``E_q[exp(r)] = p(y | K)``.
    A state holds ``x = v - mu``, ``h = R^{-1} x`` and ``L x``; an ellipse point
    ``x cos t + (R w) sin t`` moves the three linearly (second axes ``L R w``,
    ``R w`` and ``w``), so both Gaussian densities cost O(n) per chain and
    proposal and a step costs two matrix products for all chains.  K itself is
    never inverted: for a posterior in site form the precision of q in these
    coordinates is ``I + L' W L`` (eigenvalues >= 1), for an explicit one the
    covariance is ``I + L' C L``.
    """

    def __init__(self, L, total_log_lik, reference=None):
        self.L = L
        self.total = total_log_lik
        n = L.shape[0]
        self.n = n
        # The step's n x n by n x c products: one thread up to _SINGLE_THREAD_N
        # (threads gain nothing there, and spinning ones take the cores from the
        # elementwise work of the slice search), else planned like gpc's others.
        self.threads = 1 if n <= _SINGLE_THREAD_N else 0
        self.mu = None
        if reference is None:
            return
        post = getattr(reference, "posterior", reference)
        if hasattr(post, "alpha") and (hasattr(post, "sW") or hasattr(post, "C")):
            alpha = np.asarray(post.alpha, dtype=np.float64).reshape(-1)
            if alpha.shape[0] != n:
                raise ValueError(f"the reference posterior is for {alpha.shape[0]} "
                                 f"training points, not {n}.")
            mu = L.T @ alpha                     # L^{-1} K alpha
            if hasattr(post, "sW"):
                if getattr(post, "Q", None) is not None:
                    raise ValueError("a reference posterior with negative site "
                                     "precisions is not supported; pass (mean, "
                                     "cov) instead.")
                sWL = np.asarray(post.sW, dtype=np.float64)[:, None] * L
                P, _ = kernel_cholesky(np.eye(n) + sWL.T @ sWL,
                                       name="the reference precision")
                R = solve_lower(P, np.eye(n)).T
                self._h = lambda X: P.T @ X
                self.log_det_R = -float(np.sum(np.log(np.diag(P))))
            else:
                CL = np.asarray(post.C, dtype=np.float64) @ L
                self._set_covariance(np.eye(n) + L.T @ CL)
                R = self.R
        else:
            if not (isinstance(reference, (tuple, list)) and len(reference) == 2):
                raise ValueError("reference must be a gpc.infer result, a posterior "
                                 "or a pair (mean, cov).")
            m, S = reference
            m = np.asarray(m, dtype=np.float64).reshape(-1)
            S = np.asarray(S, dtype=np.float64)
            if m.shape[0] != n or not np.all(np.isfinite(m)):
                raise ValueError(f"the reference mean must be a finite vector of "
                                 f"length {n}.")
            if S.shape != (n, n) or not np.all(np.isfinite(S)):
                raise ValueError(f"the reference covariance must be a finite "
                                 f"({n}, {n}) array.")
            mu = solve_lower(L, m)
            V = solve_lower(L, S)
            self._set_covariance(solve_lower(L, V.T))
            R = self.R
        self.mu = mu[:, None]
        self.R = R
        self.LR = L @ R
        self.f_mean = L @ mu[:, None]

    def _set_covariance(self, Sigma):
        R, _ = kernel_cholesky(0.5 * (Sigma + Sigma.T),
                               name="the reference covariance")
        self.R = R
        self._h = lambda X: solve_lower(R, X)
        self.log_det_R = float(np.sum(np.log(np.diag(R))))

    # -- states ------------------------------------------------------------------
    def draw(self, c, rng):
        """c states from q."""
        W = rng.standard_normal((self.n, c))
        if self.mu is None:
            return [matmul(self.L, W, self.threads)]
        return [matmul(self.LR, W, self.threads), matmul(self.R, W, self.threads), W]

    def from_f(self, F):
        """States from latent values F (n, c)."""
        if self.mu is None:
            return [np.array(F, order="C")]
        X = solve_lower(self.L, F) - self.mu
        return [F - self.f_mean, X, self._h(X)]

    def f(self, state):
        """Latent values (n, c) of states."""
        return state[0] if self.mu is None else state[0] + self.f_mean

    def directions(self, c, rng):
        """The ellipses' second axes for c chains."""
        return self.draw(c, rng)

    def evaluate(self, state):
        """(r, log p(y | f)) of states, each of shape (c,)."""
        if self.mu is None:
            ll = self.total(state[0])
            return ll, ll
        ll = self.total(state[0] + self.f_mean)
        V = state[1] + self.mu
        r = ll + self.log_det_R - 0.5 * np.einsum("ij,ij->j", V, V) \
            + 0.5 * np.einsum("ij,ij->j", state[2], state[2])
        return r, ll

    def ellipse(self, state, D):
        """Per-chain constants of ``r`` on the ellipses ``state cos t + D sin t``.

        The two Gaussian terms are quadratic in (cos t, sin t): with
        ``x(t) = x cos t + d sin t`` and ``h(t) = h cos t + w sin t``,
        ``|mu + x(t)|^2 - |h(t)|^2 = A c^2 + B s^2 + 2 E c s + 2 G c + 2 H s + |mu|^2``
        (c, s the cosine and sine), so a proposal costs only its likelihood.
        """
        if self.mu is None:
            return None
        X, H = state[1], state[2]
        d, w = D[1], D[2]

        def dot(a, b):
            return np.einsum("ij,ij->j", a, b)

        mu = self.mu
        return (dot(X, X) - dot(H, H), dot(d, d) - dot(w, w),
                dot(X, d) - dot(H, w), (mu.T @ X)[0], (mu.T @ d)[0],
                float(mu[:, 0] @ mu[:, 0]))

    def r_on_ellipse(self, ll, cs, sn, consts, idx):
        """r of proposals with log likelihoods ll at angles (cs, sn) = (cos, sin);
        ``idx`` selects the chains (None: all)."""
        if self.mu is None:
            return ll
        A, B, E, G, H, mm = consts
        if idx is not None:
            A, B, E, G, H = A[idx], B[idx], E[idx], G[idx], H[idx]
        quad = A * cs * cs + B * sn * sn + 2.0 * (E * cs * sn + G * cs + H * sn) + mm
        return ll + self.log_det_R - 0.5 * quad


class _Slicer:
    """Elliptical slice steps for all chains (columns) at once."""

    def __init__(self, target, rng):
        self.target = target
        self.rng = rng
        self.n_evals = 0
        self.n_calls = 0
        self.n_stuck = 0

    def step(self, state, r, ll, beta):
        """One step targeting ``q(f) exp(beta r(f))``; the state (a list of n x c
        arrays), r and ll (log p(y | f)) are updated in place.

        Only the latent values of a proposal are formed during the search (the
        Gaussian terms come from :meth:`_Target.ellipse`); each chain's accepted
        angle then moves its whole state once.
        """
        rng = self.rng
        target = self.target
        c = r.shape[0]
        D = target.directions(c, rng)
        consts = target.ellipse(state, D)
        F, DF = state[0], D[0]
        shift = target.f_mean if target.mu is not None else None
        # 0 * (-inf) must not make the level NaN: a zero temperature accepts all.
        level = np.log(rng.random(c))
        if beta != 0.0:
            level += beta * r
        theta = rng.random(c) * _TWO_PI
        lo = theta - _TWO_PI
        hi = theta.copy()
        accepted = np.zeros(c)            # angle 0 keeps the state
        active = None                     # all chains, no copies on the first pass
        self.n_calls += c
        while True:
            if active is None:
                th, lvl = theta, level
                cs, sn = np.cos(th), np.sin(th)
                Fp = F * cs + DF * sn
            else:
                th, lvl = theta[active], level[active]
                cs, sn = np.cos(th), np.sin(th)
                Fp = F[:, active] * cs + DF[:, active] * sn
            if shift is not None:
                Fp += shift
            llp = target.total(Fp)
            rp = target.r_on_ellipse(llp, cs, sn, consts, active)
            self.n_evals += th.shape[0]
            tempered = beta * rp if beta != 0.0 else np.zeros_like(rp)
            ok = tempered > lvl
            idx = np.arange(c) if active is None else active
            acc = idx[ok]
            accepted[acc] = th[ok]
            r[acc], ll[acc] = rp[ok], llp[ok]
            if ok.all():
                break
            rej = idx[~ok]
            t = th[~ok]
            neg = t < 0
            lo[rej[neg]] = t[neg]
            hi[rej[~neg]] = t[~neg]
            stuck = (hi[rej] - lo[rej]) < _MIN_BRACKET
            if stuck.any():                 # keep the current state
                self.n_stuck += int(stuck.sum())
                rej = rej[~stuck]
                if rej.size == 0:
                    break
            theta[rej] = lo[rej] + rng.random(rej.size) * (hi[rej] - lo[rej])
            active = rej
        cs, sn = np.cos(accepted), np.sin(accepted)
        for X, d in zip(state, D):
            X *= cs
            X += d * sn


def _progress(what, done, total, t0, extra=""):
    print(f"{what}: {done}/{total} ({100.0 * done / total:.0f}%), "
          f"{time.perf_counter() - t0:.1f} s{extra}", flush=True)
