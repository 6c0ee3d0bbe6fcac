"""Laplace's approximation for the multinomial (softmax) model: C latent functions.

Each class c has a latent function ``f_c`` with its own GP prior ``K_c`` (the same
matrix for all classes when the kernel is shared), and ``p(y = c | f) =
softmax(f)_c``.  The posterior over the ``C n`` latent values is one joint
Gaussian: Rasmussen & Williams (2006), section 3.5, Algorithms 3.3 and 3.4.
Every factorisation is n x n, so a Newton step costs ``O(C n^3)``.
"""

import warnings

import numpy as np
from scipy.linalg import lapack
from sklearn.exceptions import ConvergenceWarning

from .._blocks import gram
from .._linalg import cho_inverse, cholesky, mirror_lower, solve_lower, symv
from .._validation import check_integer, check_real, fortran_view
from ..likelihoods import Softmax, log_normaliser, softmax
from ..posterior import MultinomialPosterior
from ._base import InferenceResult, NumericalError, register

#: Halvings of a Newton step tried before the line search gives up.
_MAX_HALVINGS = 40


def _cholesky(A, what, method, clean=False):
    """Lower Cholesky factor of the symmetric positive definite A (Fortran-ordered,
    overwritten; zero above the diagonal with ``clean``); a failure is a
    NumericalError of ``method``."""
    L = np.asfortranarray(A)
    info = cholesky(L, clean)
    if info != 0:
        raise NumericalError(f"multinomial model: the Cholesky factorisation of {what}"
                             f" failed (LAPACK info {info}); the kernel matrices are "
                             "probably not positive semi-definite.", method)
    return L


class _Factors:
    """The n x n factorisations for a curvature ``W = D - k D R R' D`` with
    ``D = diag(d)``, d of shape (C, n), and ``k = 1 / sum_c d_c`` at each point
    (R the stacked identities): the softmax's negative Hessian (d = pi, k = 1),
    Bohning's bound on it (d = 1/2), or the precision of multinomial EP's
    sites (d from the sites).  A failure is a NumericalError of ``method``.

    ``E_c = (K_c + D_c^{-1})^{-1} = D_c^{1/2} B_c^{-1} D_c^{1/2}`` with ``B_c = I +
    D_c^{1/2} K_c D_c^{1/2}``, and ``M`` the lower Cholesky factor of ``P =
    sum_c E_c``.  ``half_logdet`` is half the log determinant of ``I + K W``:
    ``sum_c log|B_c| + log|k P|``.
    """

    def __init__(self, Ks, d, method="laplace"):
        C, n = d.shape
        self.E = np.empty((C, n, n))
        self.half_logdet = -0.5 * float(np.sum(np.log(np.sum(d, axis=0))))
        logdet_c = 0.0
        for c in range(C):
            if c and Ks[c] is Ks[c - 1] and np.array_equal(d[c], d[c - 1]):
                self.E[c] = self.E[c - 1]            # a shared K and curvature
                self.half_logdet += logdet_c
                continue
            sd = np.sqrt(d[c])
            B = np.multiply(fortran_view(Ks[c]), sd[:, None], order="F")
            B *= sd                                           # symmetric
            B.flat[::n + 1] += 1.0
            L = _cholesky(B, "I + sqrt(D) K sqrt(D)", method)
            logdet_c = float(np.sum(np.log(np.diagonal(L))))
            self.half_logdet += logdet_c
            info = cho_inverse(L)
            if info != 0:
                raise NumericalError("multinomial model: inverting B failed (LAPACK"
                                     f" info {info}).", method)
            E = self.E[c].T                              # Fortran view, symmetric
            np.multiply(mirror_lower(L), sd[:, None], out=E)
            E *= sd
        self.M = _cholesky(np.asfortranarray(self.E.sum(axis=0)), "sum_c E_c", method,
                           clean=True)
        self.half_logdet += float(np.sum(np.log(np.diagonal(self.M))))

    def apply_E(self, X):
        """``E_c x_c`` for each class; X of shape (C, n)."""
        return np.stack([symv(E, x) for E, x in zip(self.E, X)])

    def solve_P(self, r):
        """``P^{-1} r`` for a vector r."""
        return lapack.dpotrs(self.M, r, lower=1)[0]

    def apply_A(self, X):
        """``A x`` with ``A = (K + W^{-1})^{-1} = E - E R P^{-1} R' E`` (R the
        stacked identities), for X of shape (C, n)."""
        EX = self.apply_E(X)
        return EX - self.apply_E(np.broadcast_to(self.solve_P(EX.sum(axis=0)), X.shape))

    def solve(self, Ks, X):
        """``(I + W K)^{-1} x = x - A K x`` for X of shape (C, n)."""
        return X - self.apply_A(_mv(Ks, X))


def _mv(Ks, X):
    """``K_c x_c`` for each class."""
    return np.stack([symv(K, x) for K, x in zip(Ks, X)])


def _objective(Ks, alpha, F, Y, w):
    """``psi = sum_i w_i log p(y_i | f_i) - f' K^{-1} f / 2`` at ``f = K alpha``."""
    return float(-0.5 * np.sum(alpha * F)
                 + w @ (np.sum(Y * F, axis=0) - log_normaliser(F)))


def _newton_step(Ks, fac, pi, F, alpha, Y, w):
    """The Newton step ``(d alpha, d f)`` from f (R&W Algorithm 3.3, lines
    9-12, the likelihood's gradient and curvature weighted); ``d f = K d
    alpha`` rather than the difference of two ``K alpha``, whose rounding is
    of K's scale."""
    b = w * (pi * F - pi * np.sum(pi * F, axis=0) + Y - pi)   # W f + w (y - pi)
    d_alpha = fac.solve(Ks, b) - alpha
    return d_alpha, _mv(Ks, d_alpha)


def _mode(Ks, Y, w, alpha, tol, max_iter, refactor=True):
    """Newton's method with step halving from ``f = K alpha`` for the examples
    weighted by w (positive); returns
    ``(alpha, F, pi, factors, n_iter, converged, n_halvings)`` where the factors
    are those at the returned F (None with ``refactor=False``, for a caller
    that needs only the mode).

    The step that meets the tolerance is taken and the factors made again
    there: the log determinant in the evidence is not stationary at the mode,
    so it is evaluated one (quadratically converging) step further."""
    F = _mv(Ks, alpha)
    psi = _objective(Ks, alpha, F, Y, w)
    halvings, last = 0, np.inf
    for it in range(max_iter + 1):
        pi = softmax(F)
        fac = _Factors(Ks, w * pi)
        if it == max_iter:
            break
        d_alpha, d_F = _newton_step(Ks, fac, pi, F, alpha, Y, w)
        if not (np.isfinite(d_F).all() and np.isfinite(d_alpha).all()):
            raise NumericalError("multinomial model: a non-finite value appeared in "
                                 "Newton's method (the kernel matrices are probably "
                                 "too badly scaled).", "laplace")
        step = float(np.max(np.abs(d_F), initial=0.0))
        scale = 1.0 + float(np.max(np.abs(F), initial=0.0))
        # Converged, or at the rounding floor (the steps stopped shrinking).
        if step <= tol * scale or (step >= last and step <= np.sqrt(tol) * scale):
            alpha, F = alpha + d_alpha, F + d_F
            pi = softmax(F)
            return (alpha, F, pi, _Factors(Ks, w * pi) if refactor else None, it + 1,
                    True, halvings)
        last, t = step, 1.0
        for _ in range(_MAX_HALVINGS):
            alpha_t, F_t = alpha + t * d_alpha, F + t * d_F
            psi_t = _objective(Ks, alpha_t, F_t, Y, w)
            if psi_t >= psi - 1e-13 * (1.0 + abs(psi)):
                break
            t *= 0.5
            halvings += 1
        else:
            if np.max(np.abs(w * (Y - pi) - alpha), initial=0.0) <= 1e-6:
                return alpha, F, pi, fac, it, True, halvings    # rounding floor
            raise NumericalError(
                "multinomial model: no step along Newton's direction raises the log "
                "posterior: the factorisations are too badly conditioned (signal "
                "variances of 1e11 and more); bound the kernel's variance lower.",
                "laplace")
        alpha, F, psi = alpha_t, F_t, psi_t
    return alpha, F, pi, fac, max_iter, False, halvings


def _gradient_terms(pi, S, w):
    """``s2 = -1/2 d log|I + K W| / d f`` (C, n) from the class probabilities,
    the posterior covariances at the training points S (n, C, C) and the
    weights w.

    With ``W_i = w_i (diag(pi_i) - pi_i pi_i')`` and ``v = d pi_i / d f_ik =
    pi_ik (e_k - pi_i)``: ``tr(S_i dW_i) = w_i (sum_c S_icc v_c - 2 pi_i' S_i
    v)``.
    """
    P = pi.T                                                   # (n, C)
    diag = np.einsum("icc->ic", S)
    Sp = np.einsum("icd,id->ic", S, P)
    term1 = P * (diag - np.sum(diag * P, axis=1, keepdims=True))
    term2 = P * (Sp - np.sum(Sp * P, axis=1, keepdims=True))
    return (-0.5 * (term1 - 2.0 * term2)).T * w


def _explicit_dK(fac, alpha):
    """``d/dK_c`` of ``psi - log|I + K W| / 2`` holding f and W (C, n, n):
    ``alpha alpha' / 2 - A_cc / 2``."""
    C, n = alpha.shape
    dK = np.empty((C, n, n))
    for c in range(C):
        V = solve_lower(fac.M, fac.E[c].T)                    # M^{-1} E_c
        G = fac.E[c] - gram(V.T)                              # A_cc
        G *= -0.5
        G += 0.5 * np.outer(alpha[c], alpha[c])
        dK[c] = G
    return dK


def _evidence_dK(Ks, fac, pi, alpha, w):
    """``d log q / d K_c`` for every class, the implicit term through the mode
    included (C, n, n).

    ``log q = psi(f) - log|I + K W| / 2``; besides :func:`_explicit_dK`, through
    the mode (where ``alpha = w (y - pi)``), ``df = (I + K W)^{-1} dK alpha``:
    ``b alpha'`` with ``b = (I + W K)^{-1} s2 = s2 - A K s2``.  Symmetrised.
    """
    posterior = MultinomialPosterior(alpha, fac.E, fac.M)
    S = posterior.latent_covariance(Ks, np.stack([np.diagonal(K) for K in Ks]))
    b = fac.solve(Ks, _gradient_terms(pi, S, w))
    dK = _explicit_dK(fac, alpha)
    for c in range(alpha.shape[0]):
        dK[c] += 0.5 * (np.outer(b[c], alpha[c]) + np.outer(alpha[c], b[c]))
    return dK


@register("laplace", state=("alpha",), likelihoods=(Softmax,), sample_weight=True)
def laplace_multinomial(K, y, likelihood, *, init=None, compute_gradient=True,
                        sample_weight=None, tol=1e-10, max_iter=100):
    """Laplace approximation of the multinomial (softmax) GP classification posterior.

    Called through :func:`gpc.infer` with ``likelihood="softmax"`` and
    ``method="laplace"``.

    Parameters
    ----------
    K : sequence of C ndarrays of shape (n, n)
        The prior covariance of each class's latent function, Fortran-ordered
        float64 (the same array repeated when the classes share a kernel).
    y : ndarray of shape (n,)
        Integer labels in ``0 .. C - 1``.
    likelihood : Softmax
    init : dict, optional
        A previous result's ``state`` (``{"alpha": ...}`` of shape (C, n)):
        Newton starts from ``f = K alpha`` when that beats ``f = 0``.
    compute_gradient : bool
        Whether to compute ``dK``, including the implicit term through the mode.
    sample_weight : ndarray of shape (n,), optional
        Non-negative weights of the examples (checked by :func:`gpc.infer`):
        the weighted likelihood ``prod_i softmax(f_i)[y_i]^(w_i)``.  A zero
        weight is the example left out, an integer weight the example repeated.
    tol : float, default=1e-10
        Converged when a Newton step moves the mode by at most
        ``tol * (1 + max|f|)`` (that step is taken).
    max_iter : int, default=100
        Maximum number of Newton steps; a ConvergenceWarning is issued when reached.

    Returns
    -------
    InferenceResult
        ``posterior`` a :class:`gpc.posterior.MultinomialPosterior`;
        ``log_evidence`` R&W's eq. 3.44 (with the ``log|P|`` term its
        Algorithm 3.3 omits); ``dK`` of shape (C, n, n), ``dK[c]`` the derivative
        with respect to ``K_c`` (sum over c for a shared K); ``state =
        {"alpha": alpha}``; ``info`` with ``n_halvings`` besides the common keys.

    Notes
    -----
    ``W``, the negative Hessian of ``log softmax``, couples the classes at each
    point: ``W = D - Pi Pi'`` with ``D = diag(pi)``.  Woodbury's identity and
    ``sum_c D_c = I`` reduce every solve with ``I + K W`` to the C matrices
    ``B_c`` and one ``n x n`` matrix ``P = sum_c E_c`` (R&W eq. 3.40).  Each
    Newton step is halved until ``psi`` does not decrease, so the iteration
    converges from any start (``psi`` is concave).

    With weights, example i's log likelihood, its gradient and its curvature
    are multiplied by ``w_i``: ``W_i = w_i (diag(pi_i) - pi_i pi_i')``, the
    same reduction with ``D = diag(w pi)`` and ``sum_c D_c = diag(w)``.  The
    examples of zero weight are left out and the result extended to them
    (``alpha`` and their rows and columns of ``dK`` are zero).
    """
    def solve(K, y, w, init):
        Y, alpha, F, pi, fac, info = _fitted_mode(K, y, w, init, tol, max_iter)
        dK = _evidence_dK(K, fac, pi, alpha, w) if compute_gradient else None
        return _result("laplace", likelihood, K, Y, w, alpha, F, fac, dK, info)

    return _without_zero_weights(solve, K, y, sample_weight, init)


@register("vb", lower_bound=True, state=("alpha",), likelihoods=(Softmax,),
          sample_weight=True)
def vb_multinomial(K, y, likelihood, *, init=None, compute_gradient=True,
                   sample_weight=None, tol=1e-10, max_iter=100):
    """Bohning's lower bound on the multinomial (softmax) evidence.

    Called through :func:`gpc.infer` with ``likelihood="softmax"`` and
    ``method="vb"``.  Parameters as for ``method="laplace"``.

    Returns
    -------
    InferenceResult
        ``log_evidence`` a lower bound on the exact log evidence;
        ``posterior`` the Gaussian of the bound; other fields as Laplace's.

    Notes
    -----
    Bohning (1992) bounds the curvature of ``log softmax`` by ``H = (I - 1 1' /
    C) / 2`` everywhere, so ``log p(y | f)`` lies above a quadratic around any
    ``psi``, and the Gaussian integral of that quadratic is a lower bound on
    the evidence.  The best ``psi`` is the posterior mode (the bound's fixed
    point is Laplace's Newton condition ``K^{-1} f = y - pi``), where the
    bound is ``log p(y | f) - f' K^{-1} f / 2 - log|I + K H| / 2``: Laplace's
    evidence with H in place of the softmax's Hessian W.  The posterior is
    ``N(f, (K^{-1} + H)^{-1})``, narrower than Laplace's where W is small
    (confidently classified points).  H has the structure of W (D = I / 2), so
    the same n x n factorisations serve, one for all classes when they share
    a kernel.  The gradient has no implicit term: the bound is stationary in
    its ``psi`` (envelope theorem).

    With weights, each example's quadratic bound is raised to its weight
    (curvature ``w_i H``, linear term times ``w_i``), so it stays a lower bound
    on the weighted evidence; its best ``psi`` is the weighted Laplace mode.
    Examples of zero weight are left out as for Laplace.
    """
    def solve(K, y, w, init):
        try:
            Y, alpha, F, _, _, info = _fitted_mode(K, y, w, init, tol, max_iter,
                                                   refactor=False)
            fac = _Factors(K, np.broadcast_to(0.5 * w, F.shape))
        except NumericalError as exc:    # raised for the shared steps as "laplace"
            raise NumericalError(exc.args[0], "vb") from exc
        dK = _explicit_dK(fac, alpha) if compute_gradient else None
        return _result("vb", likelihood, K, Y, w, alpha, F, fac, dK, info)

    return _without_zero_weights(solve, K, y, sample_weight, init)


def _without_zero_weights(solve, K, y, sample_weight, init):
    """``solve(K, y, w, init)`` on the examples of positive weight (all of
    weight 1 without ``sample_weight``), extended to all n.

    A zero weight's curvature is zero, so in the extension ``alpha`` is 0 there,
    the ``E_c`` have zero rows and columns and M the identity's (P's block of
    the examples kept is their P): predictions are those of the examples kept.
    The marginal means there are the posterior's predictions, and dK has zero
    rows and columns (their inputs do not enter the evidence)."""
    n, C = K[0].shape[0], len(K)
    w = np.ones(n) if sample_weight is None else sample_weight
    keep = w > 0
    if keep.all():
        return solve(K, y, w, init)
    idx, drop = np.flatnonzero(keep), np.flatnonzero(~keep)
    block = np.ix_(idx, idx)
    kept = {id(Kc): np.asfortranarray(Kc[block]) for Kc in K}    # shared stays shared
    a = None if init is None else init.get("alpha")
    res = solve(tuple(kept[id(Kc)] for Kc in K), y[idx], w[idx],
                {"alpha": np.asarray(a)[:, idx]} if np.shape(a) == (C, n) else None)
    post = res.posterior
    alpha, E, M = np.zeros((C, n)), np.zeros((C, n, n)), np.eye(n, order="F")
    alpha[:, idx] = post.alpha
    E[:, idx[:, None], idx] = post.E
    M[block] = post.M
    mean = np.empty((n, C))
    mean[idx] = post.marginal_mean
    mean[drop] = MultinomialPosterior(alpha, E, M).latent_mean([Kc[:, drop] for Kc in K])
    res.posterior = MultinomialPosterior(alpha, E, M, marginal_mean=mean)
    if res.dK is not None:
        dK, res.dK = res.dK, np.zeros((C, n, n))
        res.dK[:, idx[:, None], idx] = dK
    res.state = {"alpha": alpha}
    return res


def _fitted_mode(K, y, w, init, tol, max_iter, refactor=True):
    """The checked options, then the posterior mode of the examples weighted by
    w (positive) from ``init`` (or f = 0): ``(Y, alpha, F, pi, Laplace's
    factors there or None, info)``, warning when Newton's method ran out of
    iterations."""
    check_real(tol, "tol", 0.0, low_open=True)
    check_integer(max_iter, "max_iter", 0)
    C, n = len(K), K[0].shape[0]
    Y = np.zeros((C, n))
    Y[y, np.arange(n)] = 1.0
    alpha0 = np.zeros((C, n))
    if init is not None and "alpha" in init:
        a = np.asarray(init["alpha"], dtype=np.float64)
        if (a.shape == (C, n) and np.isfinite(a).all()
                and _objective(K, a, _mv(K, a), Y, w) > -np.sum(w) * np.log(C)):
            alpha0 = a.copy()
    alpha, F, pi, fac, n_iter, converged, halvings = _mode(K, Y, w, alpha0, float(tol),
                                                            int(max_iter), refactor)
    if not converged:
        # The frame of the method's caller (gpc.infer), past solve and
        # _without_zero_weights.
        warnings.warn(
            f"multinomial model: Newton's method for the posterior mode did not "
            f"converge in {n_iter} iterations (max_iter={max_iter}); the evidence and "
            "its gradient are approximate.", ConvergenceWarning, stacklevel=6)
    return Y, alpha, F, pi, fac, {"n_iter": n_iter, "converged": bool(converged),
                                  "n_halvings": halvings}


def _result(method, likelihood, K, Y, w, alpha, F, fac, dK, info):
    """The InferenceResult of a multinomial method at the mode with factors fac."""
    return InferenceResult(
        posterior=MultinomialPosterior(alpha, fac.E, fac.M, marginal_mean=F.T),
        log_evidence=_objective(K, alpha, F, Y, w) - fac.half_logdet, dK=dK,
        dlik=np.zeros(0) if dK is not None else None,
        state={"alpha": alpha},
        info={"method": method, "likelihood": likelihood.name, "jitter": 0.0, **info})
