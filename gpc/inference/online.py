"""Bayesian online learning (assumed density filtering, ADF) for GP classification.

Csató, Fokoué, Opper, Schottky & Winther (2000), section 5 (eq. 10-12): one sweep
through the data; after each example the Gaussian posterior process is updated by
moment matching, ``<f(x)> = sum_i K(x, x_i) alpha_i``,
``K_t(x, x') = K(x, x') + sum_ij K(x, x_i) C_ij K(x_j, x')``, with rank-one updates of
``alpha`` and ``C`` and no matrix inversion.  The hot loop is ``gpc._online``.
"""

import reprlib

import numpy as np
from sklearn.utils import check_random_state

from .. import _model, _online
from ..posterior import ExplicitPosterior
from ._base import InferenceResult, NumericalError, register


@register("adf", max_iter_option=None, has_gradient=False)
def adf(K, y, likelihood, *, init=None, compute_gradient=True, n_sweeps=1,
        order="fixed", random_state=None, resume=None):
    """Assumed density filtering (Bayesian online learning): one sweep, rank-one
    updates.

    For each example in turn, with ``k = K[:, j]``: the predictive ``N(m, v)``,
    ``m = k' alpha``, ``v = K_jj + k' C k``; ``g, h`` the first two derivatives in m
    of ``log Z = log E[p(y_j | f)]``; ``s = C k + e_j``; ``alpha += g s``,
    ``C += h s s'``.  O(t^2) per example with t examples seen; the updates are
    applied in blocks with level-3 BLAS (see ``src_c/_online.pyx``), which gives the
    same result up to rounding.  Called through :func:`gpc.infer` with
    ``method="adf"``.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Prior covariance, Fortran-ordered float64 (see :func:`gpc.infer`).
    y : ndarray of shape (n,)
        Labels in {-1, +1} (real targets for the Gaussian likelihood).
    likelihood : Likelihood
        Any likelihood with Gaussian moments (probit, logit, noisy threshold, step,
        Gaussian).
    init : dict, optional
        None, or the state of an ADF result on the same points, which is
        ignored: a sweep has nothing to warm-start (see ``resume`` to continue
        learning).  Anything else is a ValueError.
    compute_gradient : bool
        Ignored: ADF has no evidence gradient (``dK`` and ``dlik`` are None), so
        its hyperparameters are not learnt by evidence maximisation.
    n_sweeps : int, default=1
        Presentations of the data in a fresh fit (not a continued one).  Only the
        first sweep has a probabilistic meaning; the further ones are the paper's
        reuse heuristic (each example is included again as if it were new).
    order : {"fixed", "random"}, default="fixed"
        Presentation order of each sweep: data order, or a permutation drawn from
        ``random_state`` per sweep (a continued fit always takes the new points in
        data order).
    random_state : int, RandomState or None
    resume : dict, optional
        The ``state`` of a previous ADF result on the first ``n0 <= n`` of these
        points: learning continues with points ``n0, ..., n - 1`` (presented once,
        in data order), so a fit in several calls equals one fit on all the data
        (with ``n_sweeps=1`` and the fixed order).  ValueError if it is not such a
        state.

    Returns
    -------
    InferenceResult
        ``posterior`` in explicit form (:class:`gpc.posterior.ExplicitPosterior`);
        ``log_evidence`` the sum over the first presentation of every example of
        ``log p(y_t | y_1, ..., y_{t-1})`` (the chain rule of the evidence, each
        factor under the ADF posterior); ``state = {"alpha", "C", "log_evidence"}``;
        ``info`` holds ``n_sweeps``, ``n_new`` (examples presented for the first
        time in this call), ``sweep_log_evidence`` (the sum of log predictive
        probabilities of each sweep) and ``log_predictive`` (per example and sweep,
        in presentation order).

    Examples
    --------
    >>> import numpy as np
    >>> import gpc
    >>> X = np.linspace(-2, 2, 8)[:, None]
    >>> K = np.exp(-0.5 * (X - X.T) ** 2)
    >>> y = np.where(X[:, 0] > 0, 1, -1)
    >>> res = gpc.infer(K, y, method="adf", likelihood="probit")
    >>> bool(np.all(np.sign(K @ res.posterior.alpha) == y))
    True
    >>> first = gpc.infer(K[:5, :5], y[:5], method="adf", likelihood="probit")
    >>> both = gpc.infer(K, y, method="adf", likelihood="probit",
    ...                  resume=first.state)
    >>> bool(np.allclose(both.posterior.alpha, res.posterior.alpha))
    True
    """
    if order not in ("fixed", "random"):
        raise ValueError(f"order must be 'fixed' or 'random', got {order!r}.")
    if not (isinstance(n_sweeps, (int, np.integer)) and n_sweeps >= 1):
        raise ValueError(f"n_sweeps must be a positive integer, got {n_sweeps!r}.")
    n = K.shape[0]
    _check_init(init, n)
    alpha = np.zeros(n)
    C = np.zeros((n, n), order="F")
    n0, evidence0 = 0, 0.0
    state = None if resume is None else _checked_state(resume, n)
    if state is not None:
        n0 = state["alpha"].shape[0]
        alpha[:n0] = state["alpha"]
        C[:n0, :n0] = state["C"]
        evidence0 = float(state["log_evidence"])
    if state is not None:
        orders = [np.arange(n0, n, dtype=np.intc)]
    else:
        rng = check_random_state(random_state)
        orders = [np.arange(n, dtype=np.intc) if order == "fixed"
                  else rng.permutation(n).astype(np.intc) for _ in range(n_sweeps)]
    model = _model.likelihood_model(likelihood)
    t_active = n0
    sums, log_pred = [], []
    for sweep, idx in enumerate(orders):
        logz = np.empty(idx.shape[0])
        status, n_done, t_active, total, _ = _online.adf_sweep(
            K, y, model, alpha, C, idx, 0, t_active, logz)
        if status != _online.STATUS_OK:
            what = ("its predictive variance came out negative"
                    if status == _online.STATUS_NEGATIVE_VARIANCE
                    else "a moment of its predictive distribution is not finite")
            raise NumericalError(
                f"ADF: example {int(idx[n_done])} (sweep {sweep + 1}): {what}; the "
                "kernel matrix is badly scaled or not positive semi-definite (which "
                "gpc.infer checks unless check_psd=False).", "adf")
        sums.append(float(total))
        log_pred.append(logz)
    # C holds its lower triangle: make it symmetric for prediction and the state.
    _online.fill_upper(C)
    log_evidence = evidence0 + sums[0]
    return InferenceResult(
        posterior=ExplicitPosterior(alpha, C),
        log_evidence=log_evidence,
        dK=None,
        dlik=None,
        state={"alpha": alpha, "C": C, "log_evidence": log_evidence},
        info={"method": "adf", "likelihood": likelihood.name,
              "n_sweeps": len(orders), "n_iter": len(orders), "n_new": n - n0,
              "sweep_log_evidence": sums, "log_predictive": log_pred,
              "converged": True, "jitter": 0.0},
    )


def _check_init(init, n):
    """Refuse an ``init`` other than None, an empty dict or the state of an ADF
    result on these n points (every method accepts its own result's state)."""
    if init is None or (isinstance(init, dict) and not init):
        return
    try:
        own = _checked_state(init, n)["alpha"].shape[0] == n
    except ValueError:
        own = False
    if not own:
        raise ValueError(
            f"method='adf' has no state to warm-start from: init must be None or the "
            f"state of an ADF result on these {n} points (which it ignores), got "
            f"{reprlib.repr(init)}. To continue an ADF fit on more points, pass its "
            "state as resume.")


def _checked_state(state, n):
    """An ADF state over n0 <= n points, checked."""
    if not (isinstance(state, dict)
            and all(k in state for k in ("alpha", "C", "log_evidence"))):
        raise ValueError("resume must be the state of an ADF result (a dict with "
                         "'alpha', 'C' and 'log_evidence').")
    a, C = np.asarray(state["alpha"], float), np.asarray(state["C"], float)
    n0 = a.shape[0] if a.ndim == 1 else -1
    if not 0 <= n0 <= n or C.shape != (n0, n0):
        raise ValueError(f"resume holds a state over {n0} points with C of shape "
                         f"{C.shape}; it must cover at most the {n} points given.")
    if not (np.isfinite(a).all() and np.isfinite(C).all()):
        raise ValueError("resume holds non-finite values.")
    return {"alpha": a, "C": C, "log_evidence": state["log_evidence"]}
