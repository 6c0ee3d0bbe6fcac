"""Variational GP classification with the Jaakkola-Jordan bounds (Gibbs & MacKay).

The logistic likelihood ``sigma(z)``, ``z = y f``, is bounded by Gaussians in f:

* below, for any ``nu > 0`` (Jaakkola & Jordan):
  ``sigma(z) >= sigma(nu) exp((z - nu) / 2 - lambda(nu) (z^2 - nu^2))`` with
  ``lambda(nu) = tanh(nu / 2) / (4 nu)``;
* above, for any ``mu`` in [0, 1] (the concave conjugate of ``log sigma``):
  ``sigma(z) <= exp(mu z - H(mu))``, ``H`` the binary entropy.

Hence ``Z' <= p(y) <= Z''`` with Gaussian integrals (paper eq. 34 and 38).  For
the probit, whose log has curvature in (-1, 0), the quadratic bound of curvature -1
at nu is the Gaussian lower bound used instead (unit site precisions; no upper
bound is offered for it):

* ``log Z' = sum_n [log sigma(nu_n) - nu_n / 2 + lambda_n nu_n^2]
  + b'(K^{-1} + W)^{-1} b / 2 - log|I + W K| / 2`` with ``W = 2 diag(lambda)``
  and ``b = y / 2``.  The Gaussian ``q(f) ∝ N(f; 0, K) exp(b'f - f'W f / 2)`` is a
  posterior in site form (site precisions W, the factorisation
  ``B = I + W^(1/2) K W^(1/2)``, never an inverse of K).  For fixed K, the bound is
  maximised over nu by the fixed point ``nu_n^2 = E_q[f_n^2]`` (the EM view: each
  step cannot lower Z'), Anderson-accelerated in log(nu^2) and, once its residual
  is below ``NEWTON_START``, by chord-Newton steps with the exact Jacobian of an
  iterate, refreshed when a step cuts the residual less than tenfold (the plain map
  contracts slowly when the signal variance is large: 136 steps from nu = 1 on an
  8-D problem of 500 points at the Laplace evidence maximum, about a dozen
  accelerated); at the maximum, the derivative in K is the partial one,
  ``dK = (alpha alpha' - (K + W^{-1})^{-1}) / 2``, ``alpha = K^{-1} E_q[f]``.
* ``log Z'' = -sum_n H(mu_n) + b'K b / 2`` with ``b = mu o y``, convex in mu,
  minimised over [0, 1]^n (L-BFGS-B, bounds) at fixed hyperparameters (its
  supremum over the signal variance is infinite, paper section IV-C).  Its
  posterior ``∝ N(f; 0, K) exp(b'f)`` is ``N(K b, K)``: at a test point the mean
  is ``k'b`` and the variance the prior's (this is the marginal of the paper's eq.
  26; its printed eq. 27-28 do not follow from it).
"""

import warnings

import numpy as np
from scipy.special import log_expit, log_ndtr
from sklearn.exceptions import ConvergenceWarning

from .. import _lbfgsb, _linalg, _vb
from .._anderson import Anderson
from .._moments import mills
from .._validation import check_integer, check_real
from ..likelihoods import Logit, Probit
from ..posterior import ExplicitPosterior, SitePosterior
from ._base import (InferenceResult, NumericalError, check_sample_weight, register,
                    with_jitter)


def jj_lambda(nu):
    """``lambda(nu) = tanh(nu / 2) / (4 nu)`` (1/8 at nu = 0), elementwise."""
    nu = np.abs(np.asarray(nu, dtype=np.float64))
    small = nu < 1e-6
    safe = np.where(small, 1.0, nu)
    return np.where(small, 0.125 - nu * nu / 96.0, np.tanh(0.5 * safe) / (4.0 * safe))


def _check_likelihood(likelihood):
    # The bounds are those of these densities: by class, so that another
    # likelihood under one of their names does not get them.
    if not isinstance(likelihood, (Logit, Probit)):
        raise ValueError(
            f"method='vb' bounds the logistic likelihood (Jaakkola-Jordan) and the "
            f"probit (curvature bound); got {likelihood.name!r}.")


@register("vb", lower_bound=True, state=("nu",), sample_weight=True)
def vb(K, y, likelihood, *, init=None, compute_gradient=True, sample_weight=None,
       tol=1e-8, max_iter=500):
    """The Jaakkola-Jordan lower bound ``log Z'`` on the log evidence (logit).

    Called through :func:`gpc.infer` with ``method="vb"``; see
    :mod:`gpc.inference.variational`.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Prior covariance, Fortran-ordered float64 (see :func:`gpc.infer`).
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    likelihood : Likelihood
        The logit (Jaakkola-Jordan bound) or the probit (the curvature bound
        ``log Phi(z) >= log Phi(nu) + r(nu)(z - nu) - (z - nu)^2 / 2``, looser: its
        site precision is 1 whatever the data; see ``_vb_probit``).
    init : dict, optional
        A previous result's ``state`` (``{"nu": ...}``) to start the fixed point
        from (otherwise ``nu = 1``).
    compute_gradient : bool
        Whether to compute ``dK`` (``dlik`` is empty: the logit has no parameter).
    sample_weight : ndarray of shape (n,), optional
        Non-negative weights of the examples (checked by :func:`gpc.infer`): the
        bound is then that of the weighted likelihood ``prod_i p(y_i | f_i)^(w_i)``,
        each site's Gaussian bound raised to its weight.  A zero weight is the
        example left out.
    tol : float, default=1e-8
        Converged when no ``nu_n^2`` changes by more than ``tol * (1 + nu_n^2)``
        (the bound is stationary in nu, so its error is of the order of tol^2 and
        the gradient's of tol).
    max_iter : int, default=500
        Largest number of fixed-point steps (one Cholesky of B each).

    Returns
    -------
    InferenceResult
        ``log_evidence = log Z'`` (a lower bound); ``posterior`` the Gaussian q in
        site form; ``state = {"nu"}``; ``info`` holds ``n_iter``, ``converged``,
        ``nu``, ``jitter``.

    Examples
    --------
    >>> import numpy as np
    >>> import gpc
    >>> X = np.linspace(-2, 2, 6)[:, None]
    >>> K = 4.0 * np.exp(-0.5 * (X - X.T) ** 2)
    >>> y = [-1, -1, 1, -1, 1, 1]
    >>> lower = gpc.infer(K, y, method="vb", likelihood="logit")
    >>> ep = gpc.infer(K, y, method="ep", likelihood="logit")
    >>> bool(lower.log_evidence < ep.log_evidence)
    True
    """
    _check_likelihood(likelihood)
    check_real(tol, "tol", 0.0, low_open=True)
    check_integer(max_iter, "max_iter", 1)
    solve = _vb_probit if isinstance(likelihood, Probit) else _vb_logit
    w = np.ones(K.shape[0]) if sample_weight is None else sample_weight
    return _without_zero_weights(
        lambda K, y, w, init: solve(K, y, likelihood, init, compute_gradient, w, tol,
                                    max_iter), K, np.asarray(y, dtype=np.float64), w,
        init)


def _vb_logit(K, y, likelihood, init, compute_gradient, w, tol, max_iter):
    """The Jaakkola-Jordan bound (see :func:`vb` and the module's docstring) with
    positive weights w: each site's bound to the power w_i, so its precision is
    ``2 w_i lambda_i`` and its linear term ``w_i y_i / 2``."""
    n = K.shape[0]
    nu0 = np.ones(n)
    if init is not None and "nu" in init:
        v = np.asarray(init["nu"], dtype=np.float64)
        if v.shape == (n,) and np.isfinite(v).all():
            nu0 = np.abs(v)
    b = 0.5 * w * y

    def attempt(Kj):
        ws = _Workspace(n)

        def evaluate(x):
            # The Gaussian and the bound at the tangent points nu = sqrt(x).
            nu = np.sqrt(x)
            lam = jj_lambda(nu)
            q = _gaussian(Kj, np.sqrt(2.0 * w * lam), b, ws)
            if q is None:
                return None
            bound = (w @ (log_expit(nu) - 0.5 * nu + lam * nu * nu)
                     + 0.5 * b @ q[2] - np.sum(np.log(np.diag(q[0]))))
            return q, bound

        x = nu0 * nu0                                # the iterate: nu^2
        converged = False
        accel = Anderson(ANDERSON_MEMORY)
        best = np.inf
        chord = None                                 # a factorised Newton matrix
        point = evaluate(x)
        for it in range(1, int(max_iter) + 1):
            if point is None:
                return None
            (L, Linv, mean, var, alpha), log_z = point
            fx = mean * mean + var                   # the EM map F(x)
            res = np.max(np.abs(fx - x) / (1.0 + fx), initial=0.0)
            if res <= tol:
                converged = True
                break
            if it == int(max_iter):
                break
            if res > 2.0 * best:
                accel.reset()                        # an extrapolation overshot
                chord = None
            improved = res < CHORD_RATE * best
            best = min(best, res)
            x_new = _jj_proposal(accel, chord, x, fx, improved, Linv, mean, w)
            chord = x_new[1]
            trial = evaluate(x_new[0])
            if trial is None or not trial[1] >= log_z:
                # An accelerated step that lowers the bound gives way to the EM
                # step F(x), which cannot lower it.
                accel.reset()
                chord = None
                x_new = (fx, None)
                trial = evaluate(fx)
            x, point = x_new[0], trial
        Binv = _b_inverse(Linv) if compute_gradient else None
        # The bound and the posterior at the last nu (its fixed-point residual is
        # below tol when converged).
        sW = np.sqrt(2.0 * w * jj_lambda(np.sqrt(x)))
        return Kj, np.sqrt(x), sW, L, Binv, alpha, mean, var, log_z, it, converged

    (Kj, nu, sW, L, Binv, alpha, mean, var, log_z, n_iter, converged), jitter = \
        with_jitter(K, attempt)
    return _result(likelihood, nu, sW, L, Binv, alpha, mean, var, log_z, n_iter,
                   converged, jitter, max_iter, compute_gradient)


def _jj_proposal(accel, chord, x, fx, improved, Linv, mean, w):
    """The next iterate of the fixed point ``x = F(x)`` (x = nu^2) of the logit
    bound and the Newton matrix to keep: a chord-Newton step once the residual is
    below ``NEWTON_START`` (a fresh Jacobian unless the last chord step cut the
    residual enough), else Anderson's extrapolation in log(nu^2)."""
    if np.max(np.abs(fx - x) / (1.0 + fx), initial=0.0) < NEWTON_START:
        if chord is None or not improved:
            sW = np.sqrt(2.0 * w * jj_lambda(np.sqrt(x)))
            chord = _newton_matrix(_b_inverse(Linv), sW, mean, x, w)
        if chord is not None:
            proposal = _chord_step(chord, x, fx)
            if np.all(proposal > 0.0):
                return proposal, chord
    # Anderson on log(nu^2): positive by construction, and the slow regime (nu^2
    # growing steadily at large signal variances) is geometric there.
    proposal = np.exp(accel.step(np.log(np.maximum(x, 1e-300)),
                                 np.log(np.maximum(fx, 1e-300))))
    if np.all(np.isfinite(proposal)) and np.all(proposal > 0.0):
        return proposal, None
    accel.reset()
    return fx, None


def _without_zero_weights(solve, K, y, w, init):
    """``solve(K, y, w, init)`` on the examples of positive weight, extended to
    all n.  A zero weight's site is 1 (``sW = 0``, ``alpha = 0``), so B has the
    identity's row and column there, and so does its Cholesky factor (the others'
    entries are the factor of the examples kept); dK has a zero row and column
    (their inputs do not enter the bound), and their marginals are the
    posterior's predictions.  The state's nu is 1 there (any value serves)."""
    keep = w > 0
    if keep.all():
        return solve(K, y, w, init)
    n, idx = len(w), np.flatnonzero(keep)
    kept_init = None
    if init is not None and np.shape(init.get("nu")) == (n,):
        kept_init = {"nu": np.asarray(init["nu"])[idx]}
    block = np.ix_(idx, idx)
    res = solve(np.asfortranarray(K[block]), y[idx], w[idx], kept_init)

    def full(v, fill=0.0):
        out = np.full(n, fill)
        out[idx] = v
        return out

    post = res.posterior
    L = np.eye(n, order="F")
    L[block] = post.L
    alpha, sW = full(post.alpha), full(post.sW)
    drop = np.flatnonzero(~keep)
    mean, var = full(post.marginal_mean), full(post.marginal_var)
    mean[drop], var[drop] = SitePosterior(alpha, sW, L).latent_mean_and_variance(
        K[:, drop], np.diag(K)[drop])
    res.posterior = SitePosterior(alpha, sW, L, marginal_mean=mean, marginal_var=var)
    if res.dK is not None:
        dK, res.dK = res.dK, np.zeros((n, n))
        res.dK[block] = dK
    res.state = {"nu": full(res.state["nu"], 1.0)}
    res.info["nu"] = res.state["nu"]
    return res


def _result(likelihood, nu, sW, L, Binv, alpha, mean, var, log_z, n_iter, converged,
            jitter, max_iter, compute_gradient):
    """The InferenceResult of a lower bound (both likelihoods): warnings, checks
    and ``dK = (alpha alpha' - sW B^{-1} sW) / 2``."""
    if not converged:
        warnings.warn(f"vb: the fixed point for nu did not converge in {n_iter} steps "
                      f"(max_iter={max_iter}); the bound is below its maximum and its "
                      "gradient approximate.", ConvergenceWarning, stacklevel=4)
    if not np.isfinite(log_z):
        raise NumericalError("vb: the lower bound is not finite.", "vb")
    dK = None
    if compute_gradient:
        dK = np.outer(alpha, alpha)
        dK -= sW[:, None] * Binv * sW[None, :]
        dK *= 0.5
    return InferenceResult(
        posterior=SitePosterior(alpha, sW, L, marginal_mean=mean, marginal_var=var),
        log_evidence=float(log_z), dK=dK,
        dlik=np.zeros(0) if compute_gradient else None, state={"nu": nu},
        info={"method": "vb", "likelihood": likelihood.name, "n_iter": n_iter,
              "converged": bool(converged), "nu": nu, "jitter": jitter})


def _vb_probit(K, y, likelihood, init, compute_gradient, w, tol, max_iter):
    """The probit's Gaussian lower bound (see :func:`vb`): since
    ``(log Phi)'' >= -1``, ``log Phi(z) >= log Phi(nu) + r(nu) (z - nu) - (z - nu)^2
    / 2`` (``r = (log Phi)'``), Gaussian in f with unit precision for every nu, and
    precision w_i for the site's bound to the power w_i (positive weights).  So
    ``q = N(Sigma b, Sigma)`` with the fixed ``Sigma = (K^{-1} + W)^{-1} =
    W^{-1/2} (I - B^{-1}) W^{-1/2}`` (one Cholesky of ``B = I + W^{1/2} K W^{1/2}``)
    and ``b = w o y o (r(nu) + nu)``.  The bound's gradient in nu is
    ``w o (1 + r') o u``, ``u = y o E_q[f] - nu``, so its maximum is the root of u;
    it is found by Newton steps on u with a backtracking line search on the bound
    itself (:func:`_probit_newton`), so every iterate raises the bound."""
    n = K.shape[0]
    nu = np.zeros(n)
    if init is not None and "nu" in init:
        v = np.asarray(init["nu"], dtype=np.float64)
        if v.shape == (n,) and np.isfinite(v).all():
            nu = v.copy()
    sW = np.sqrt(w)

    def attempt(Kj):
        q = _gaussian(Kj, sW, np.zeros(n))
        return None if q is None else (q[0], _b_inverse(q[1]))

    (L, Binv), jitter = with_jitter(K, attempt)
    half_logdet = np.sum(np.log(np.diag(L)))
    binv_norm = np.sqrt(np.einsum("ij,ij->", Binv, Binv))
    nu, pt, it, converged = _probit_newton(
        lambda v: _probit_bound(Binv, y, v, w, half_logdet, binv_norm), Binv, y, sW,
        nu, tol, int(max_iter))
    var = np.maximum(1.0 - np.diag(Binv), 0.0) / w    # (1 - diag(B^-1)) / W
    return _result(likelihood, nu, sW, L, Binv, pt["alpha"], pt["mean"], var,
                   pt["bound"], it, converged, jitter, max_iter, compute_gradient)


def _probit_bound(Binv, y, nu, w, half_logdet, binv_norm):
    """The probit's lower bound at the tangent points nu, with what the Newton
    step and the result need: ``bound``, ``u = y o mean - nu``, ``dr = 1 + r'(nu)``
    (in (0, 1]), ``mean = Sigma b``, ``alpha = K^{-1} mean``, the fixed-point
    ``residual`` and the bound's ``rounding`` (``binv_norm``: the Frobenius norm
    of ``B^{-1}``)."""
    r, shift = mills(nu)                              # r = N/Phi, shift = nu + r
    sw = np.sqrt(w)
    c = sw * y * shift                                # W^{-1/2} b
    # alpha = K^{-1} Sigma b = (I + W K)^{-1} b = W^{1/2} B^{-1} c and mean =
    # W^{-1/2} (c - B^{-1} c), free of the cancellation in b - W^{1/2} B^{-1}
    # W^{1/2} K b when K is large.
    bc = _linalg.symv(Binv, c)
    alpha = sw * bc
    mean = (c - bc) / sw
    log_phi = log_ndtr(nu)
    bound = (w @ (log_phi - r * nu - 0.5 * nu * nu) + 0.5 * c @ (c - bc)
             - half_logdet)
    # What rounding can move the bound by between two evaluations with the same
    # B^-1: each of its sums and products of n terms is off by at most ~n eps
    # times the sum of the terms' magnitudes; for B^-1 c that is |B^-1| |c|, and
    # |c|'|B^-1||c| <= ||B^-1||_F |c|^2.
    cc = c @ c
    size = (w @ (np.abs(log_phi) + np.abs(r * nu) + 0.5 * nu * nu)
            + 0.5 * (cc + np.abs(c) @ np.abs(c - bc) + binv_norm * cc)
            + abs(half_logdet))
    u = y * mean - nu
    return {"bound": bound, "u": u, "dr": 1.0 - r * shift, "mean": mean,
            "alpha": alpha, "rounding": (nu.shape[0] + 1) * _EPS * size,
            "residual": np.max(np.abs(u) / (1.0 + np.abs(nu + u)), initial=0.0)}


def _probit_newton(evaluate, Binv, y, sW, nu, tol, max_iter):
    """Maximise the probit bound over nu from ``nu``: Newton steps on the root of
    ``u(nu) = y o Sigma b(nu) - nu`` (Jacobian ``Y Sigma W Y D - I``, ``D = diag(1 +
    r')``, ``Sigma W = W^{-1/2} (I - B^{-1}) W^{1/2}``, ``W = diag(sW^2)``), each an
    ascent direction of the bound since ``I - Y Sigma W Y D`` is similar (through
    ``(W D)^{1/2}``) to the positive definite ``A = I - D + D^{1/2} Y B^{-1} Y
    D^{1/2}``, the step being ``(W D)^{-1/2} A^{-1} (W D)^{1/2} u``; halved until
    the bound does not fall, and replaced by the EM step ``nu <- y o E_q[f]``
    (which cannot lower it) when halving fails.  Near the maximum a step raises
    the bound by about the square of the residual, below the bound's rounding
    (``point["rounding"]``) once the residual is below ~1e-7: there a step is also
    taken when the bound stays within its rounding and the residual falls, so
    that reaching a tolerance finer than that does not hang on the last bits of
    the bound.
    Returns ``(nu, point, n_iter, converged)``."""
    pt = evaluate(nu)
    for it in range(1, max_iter + 1):
        if pt["residual"] <= tol:
            return nu, pt, it, True
        if it == max_iter:
            break
        sdr = np.sqrt(np.maximum(pt["dr"], 1e-12))    # dr > 0, up to rounding
        sd = sdr * y
        A = Binv * sd[:, None]
        A *= sd[None, :]
        A[np.diag_indices_from(A)] += 1.0 - sdr * sdr
        LA = np.asfortranarray(A)
        candidates = []
        if _linalg.cholesky(LA) == 0:
            s = sdr * sW
            step = _linalg.cho_solve(LA, s * pt["u"]) / s
            candidates = [step * 0.5 ** k for k in range(HALVINGS)]
        for step in candidates + [pt["u"]]:           # the EM step last
            trial = evaluate(nu + step)
            if trial["bound"] >= pt["bound"] or (
                    trial["bound"] >= pt["bound"] - pt["rounding"] - trial["rounding"]
                    and trial["residual"] < pt["residual"]):
                break
        else:
            break                                     # the EM step at rounding level
        nu, pt = nu + step, trial
    return nu, pt, it, False


#: Halvings of a Newton step for the probit bound tried before the EM step.
HALVINGS = 8
#: The unit roundoff of float64.
_EPS = np.finfo(np.float64).eps / 2


#: Past steps mixed by the Anderson acceleration of the fixed point for nu^2.
ANDERSON_MEMORY = 5
#: Residual of the fixed point below which Newton steps are taken.
NEWTON_START = 0.2
#: A chord step (the Newton matrix of an earlier iterate) must cut the residual by
#: this factor, or the matrix is refreshed at the next iterate.
CHORD_RATE = 0.1


def _jj_dlambda_over_nu(nu):
    """``lambda'(nu) / nu`` (-1/48 at nu = 0), elementwise: ``dW / d(nu^2)`` for
    ``W = 2 lambda``."""
    nu = np.abs(np.asarray(nu, dtype=np.float64))
    small = nu < 1e-4
    v = np.where(small, 1.0, nu)
    t = np.tanh(0.5 * v)
    d = (0.5 * (1.0 - t * t) * v - t) / (4.0 * v * v)
    return np.where(small, -1.0 / 48.0, d / v)


def _newton_matrix(Binv, sW, mean, x, w):
    """The factorised Newton matrix of ``x = F(x)``, ``F(x) = mean^2 + diag(Sigma)``
    (x = nu^2): with ``D = dW/dx`` (diagonal, negative; ``W = 2 w lambda``) the
    Jacobian of F is ``J = M |D|``, ``M = Sigma o Sigma + 2 (m m') o Sigma`` (PSD), and
    ``I - J`` is handled through the symmetric ``A = I - sD M sD``
    (``sD = |D|^(1/2)``; positive definite near the solution, where the EM map is a
    contraction).  Returns ``(LA, M, sD)`` or None when A is not positive definite."""
    n = x.shape[0]
    inv_sw = 1.0 / sW
    Sigma = Binv * -1.0
    Sigma[np.diag_indices(n)] += 1.0
    Sigma *= inv_sw[:, None]
    Sigma *= inv_sw[None, :]                          # W^{-1/2} (I - B^{-1}) W^{-1/2}
    M = np.outer(2.0 * mean, mean)
    M += Sigma
    M *= Sigma
    sD = np.sqrt(-w * _jj_dlambda_over_nu(np.sqrt(x)))
    A = M * -sD[:, None]
    A *= sD[None, :]
    A[np.diag_indices(n)] += 1.0
    LA = np.asfortranarray(A)
    return None if _linalg.cholesky(LA) != 0 else (LA, M, sD)


def _chord_step(chord, x, fx):
    """``x + (I - J)^{-1} (F(x) - x)`` with a Newton matrix from this or an earlier
    iterate: ``dx = r + M (sD o A^{-1} (sD o r))``."""
    LA, M, sD = chord
    r = fx - x
    z = _linalg.cho_solve(LA, sD * r)
    # Planned like the factorisations (numpy's product may be another OpenBLAS,
    # whose threads would wake, and on a busy machine wait).
    return x + r + _linalg.symv(M, sD * z)


def _b_inverse(Linv):
    """``B^{-1} = L^{-T} L^{-1}`` (symmetric) from the inverse Cholesky factor
    (``dlauum``, a third of the work of a Cholesky)."""
    n = Linv.shape[0]
    Binv = np.empty((n, n), order="F")
    info = _vb.b_inverse(Linv, Binv)
    if info != 0:
        raise NumericalError(f"vb: forming B^-1 failed (LAPACK info {info}).", "vb")
    return Binv


class _Workspace:
    """The n x n buffers of one fixed-point run (L, L^{-1}), allocated once."""

    def __init__(self, n):
        self.L = np.zeros((n, n), order="F")
        self.Linv = np.zeros((n, n), order="F")
        self.work = np.empty(n)


def _gaussian(K, sW, b, ws=None):
    """The Gaussian ``q ∝ N(0, K) exp(b'f - f'W f / 2)`` (``W = sW^2 > 0``):
    ``(L, L^{-1}, mean, var, alpha)`` with ``L = chol(B)``, ``B = I + sW K sW``,
    ``alpha = K^{-1} mean``; None when B does not factorise.  One compiled pass
    (``gpc._vb``): since ``Sigma = W^{-1/2} (I - B^{-1}) W^{-1/2}``, the marginal
    variances are ``(1 - diag(B^{-1})) / W``, the column norms of ``L^{-1}``;
    ``B^{-1}`` itself, for a Newton step or the gradient, is one ``dlauum`` away
    (:func:`_b_inverse`).  ``ws``: a :class:`_Workspace` whose L and L^{-1} are
    overwritten (fresh buffers without it)."""
    n = K.shape[0]
    ws = _Workspace(n) if ws is None else ws
    K = np.asfortranarray(K, dtype=np.float64)
    mean, var, alpha = np.empty(n), np.empty(n), np.empty(n)
    info = _vb.gaussian(K, np.ascontiguousarray(sW, dtype=np.float64),
                        np.ascontiguousarray(b, dtype=np.float64), ws.L, ws.Linv,
                        mean, var, alpha, ws.work)
    if info != 0:
        return None
    return ws.L, ws.Linv, mean, var, alpha


def upper_bound(K, y, *, sample_weight=None, tol=1e-10, max_iter=1000):
    """Minimise the upper bound ``log Z''`` (paper eq. 38) over ``mu`` in [0, 1]^n.

    Parameters
    ----------
    K : array-like of shape (n, n)
        Prior covariance (fixed: the bound has no finite minimum over its scale).
    y : array-like of shape (n,)
        Labels in {-1, +1}.
    sample_weight : array-like of shape (n,), optional
        Non-negative weights: the bound is then on the evidence of the weighted
        likelihood ``prod_i sigma(y_i f_i)^(w_i)`` (each site's bound raised to
        its weight).
    tol : float, default=1e-10
        Projected-gradient tolerance of L-BFGS-B.
    max_iter : int, default=1000

    Returns
    -------
    log_z : float
        ``log Z''`` at the minimum (an upper bound on the log evidence).
    posterior : ExplicitPosterior
        ``N(K b, K)`` with ``b = w o mu o y``: latent mean ``k'b``, the prior variance.
    mu : ndarray of shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.inference.variational import upper_bound
    >>> log_z, post, mu = upper_bound(np.eye(2), [1, -1])
    >>> bool(log_z > 2 * np.log(0.5))        # above the true log evidence
    True
    """
    K = np.asarray(K, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = y.shape[0]
    w = np.ones(n) if sample_weight is None else check_sample_weight(sample_weight, n)
    eps = 1e-12

    def objective(mu):
        m = np.clip(mu, eps, 1.0 - eps)
        ent = -(m * np.log(m) + (1.0 - m) * np.log1p(-m))
        b = w * m * y
        Kb = K @ b
        value = -w @ ent + 0.5 * b @ Kb
        grad = w * (np.log(m) - np.log1p(-m) + y * Kb)
        return value, grad

    start = np.full(n, 0.5)
    res = _lbfgsb.minimize(objective, start, [(eps, 1.0 - eps)] * n,
                           maxiter=int(max_iter), ftol=0.0, gtol=tol)
    mu = res.x
    value = objective(mu)[0]
    if not np.isfinite(value):
        raise NumericalError("vb: the upper bound is not finite.", "vb")
    return float(value), ExplicitPosterior(w * mu * y, np.zeros((n, n))), mu
