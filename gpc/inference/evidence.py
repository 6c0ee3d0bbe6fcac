"""The log evidence of a kernel's hyperparameters on fixed data.

:class:`EvidenceObjective` is what evidence maximisation
(:func:`gpc.optimize.maximize_evidence`) and the estimators evaluate: the kernel
matrix at theta, an inference method warm-started from the previous call, and the
gradient through the kernel.  :class:`ModelParameters` maps a kernel and a
likelihood to the theta it moves, and :func:`data_fingerprint` keys a fit's
warm-start state to its data.
"""

import hashlib

import numpy as np

from ..kernels import kernel_matrix
from ..kernels import contract
from ._base import NumericalError, get_method


def data_fingerprint(X, y):
    """A digest of the training data, keying warm-start state to it."""
    h = hashlib.blake2b(digest_size=16)
    for a in (X, y):
        a = np.asarray(a)
        h.update(str((a.shape, a.dtype.str)).encode())
        if a.dtype.kind in "biufc":
            h.update(np.ascontiguousarray(a).tobytes())
        else:
            h.update(repr(a.tolist()).encode())
    return h.hexdigest()


def jittered_kernel_matrix(kernel, X, jitter, K=None):
    """``kernel(X)`` (or K, when given) plus ``jitter`` on the diagonal, Fortran
    ordered.  A kernel that overflows raises FloatingPointError with the
    message of gpc.infer, so that evidence maximisation steps back."""
    if K is None:
        K = kernel_matrix(kernel, X, error=FloatingPointError)
    if jitter:
        K = np.array(K, order="F", copy=True)
        K[np.diag_indices_from(K)] += jitter
    return K


def checked_contraction(kernel, X, dK, K, method):
    """``d log_evidence / d theta`` of the kernel from ``dK``; NumericalError if
    it is not finite.  dK and K are the method's and the kernel's own: checked
    through the gradient (O(p)) rather than entry by entry (two passes over
    n x n)."""
    grad = contract(kernel, X, dK, K=K, check_finite=False)
    if not np.isfinite(grad).all():
        K_finite = "" if K is None else f", K finite: {bool(np.isfinite(K).all())}"
        raise NumericalError(
            f"the evidence gradient of method {method!r} is not finite "
            f"(dK finite: {bool(np.isfinite(dK).all())}{K_finite}).", method)
    return grad


class ModelParameters:
    """A kernel's log-hyperparameters followed by the logs of its likelihood's free
    parameters: the vector that evidence maximisation moves.

    Parameters
    ----------
    kernel : kernel
    likelihood : Likelihood
    learn_likelihood : bool
        Whether the likelihood's non-fixed parameters are part of theta.

    Examples
    --------
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from gpc.likelihoods import get_likelihood
    >>> from gpc.inference.evidence import ModelParameters
    >>> p = ModelParameters(RBF(2.0), get_likelihood("noisy_threshold"), True)
    >>> p.theta.round(3)
    array([ 0.693, -2.303])
    >>> round(p.model([0.0, -1.0])[1].eps, 4)
    0.3679
    """

    def __init__(self, kernel, likelihood, learn_likelihood):
        self.kernel = kernel.clone_with_theta(kernel.theta)
        self.likelihood = likelihood
        bounds = np.asarray(likelihood.param_bounds, dtype=np.float64).reshape(-1, 2)
        self.free = (bounds[:, 0] < bounds[:, 1]) if learn_likelihood else \
            np.zeros(len(bounds), dtype=bool)
        self._lik_bounds = bounds[self.free]
        if (self._lik_bounds[:, 0] <= 0).any():
            raise ValueError("likelihood parameters are learnt in log space: their lower "
                             f"bounds must be > 0, got {self._lik_bounds[:, 0]}.")

    @property
    def theta(self):
        """The kernel's theta, then the logs of the free likelihood parameters."""
        return self.theta_of(self.kernel, self.likelihood)

    def theta_of(self, kernel, likelihood):
        """theta of another kernel and likelihood of the same structure."""
        lik = np.log(np.asarray(likelihood.params, dtype=np.float64)[self.free])
        return np.concatenate([kernel.theta, lik])

    @property
    def bounds(self):
        """Log-space bounds aligned with :attr:`theta`."""
        return np.vstack([self.kernel.bounds.reshape(-1, 2),
                          np.log(self._lik_bounds).reshape(-1, 2)])

    def model(self, theta):
        """``(kernel, likelihood)`` at theta (new objects)."""
        theta = np.asarray(theta, dtype=np.float64)
        nk = self.kernel.theta.shape[0]
        if theta.shape[0] != nk + int(self.free.sum()):
            raise ValueError(f"theta has {theta.shape[0]} entries; expected "
                             f"{nk + int(self.free.sum())}.")
        likelihood = self.likelihood
        if self.free.any():
            params = np.asarray(likelihood.params, dtype=np.float64).copy()
            params[self.free] = np.exp(theta[nk:])
            likelihood = likelihood.with_params(params)
        return self.kernel.clone_with_theta(theta[:nk]), likelihood

    def gradient(self, kernel_grad, dlik, likelihood):
        """theta's gradient from the kernel's and ``dlik`` (d/d parameter) at
        ``likelihood``: d/d log p = p d/dp."""
        params = np.asarray(likelihood.params, dtype=np.float64)
        if not self.free.any():
            return np.asarray(kernel_grad, dtype=np.float64)
        return np.concatenate([kernel_grad, (params * dlik)[self.free]])


class EvidenceObjective:
    """The log evidence of kernel hyperparameters for fixed data, warm-started.

    Each call builds ``K = kernel(X)``, runs the inference method from the state the
    previous call left (the optimiser's evaluations are close together, so Newton or
    EP starts near its answer), and turns ``dK`` into the gradient with
    :func:`gpc.kernels.contract` (no n x n x p tensor).  Methods that take a
    ``workspace`` (Laplace, EP, PL) get one kept across calls, so that their n x n
    buffers are not allocated and page-faulted in afresh at every evaluation.
    Also importable as ``gpc.optimize.EvidenceObjective``.

    Parameters
    ----------
    kernel : kernel object
        Copied; its theta is set at each call.
    X : array-like
        Training inputs (as the kernel accepts them).
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    likelihood : Likelihood
    method : str
        A name from :func:`gpc.available_methods`.
    options : dict, optional
        Options of the inference method.
    state : dict, optional
        Initial warm-start state.
    jitter : float, default=0.0
        Added to the diagonal of K.
    learn_likelihood : bool, default=False
        Append the log of the likelihood's non-fixed parameters (e.g. the noisy
        threshold's eps) to theta; their gradient comes from the method's ``dlik``.
    K : ndarray of shape (n, n), optional
        ``kernel(X)`` (without the jitter) when the caller already has it: the
        first evaluation uses it if it is at the kernel's own theta (then drops
        it), instead of building it again.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from gpc.likelihoods import get_likelihood
    >>> from gpc.inference.evidence import EvidenceObjective
    >>> X = np.linspace(-2, 2, 8)[:, None]
    >>> y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> obj = EvidenceObjective(RBF(1.0), X, y, get_likelihood("logit"))
    >>> value, grad = obj(np.log([1.0]))
    >>> grad.shape
    (1,)
    """

    def __init__(self, kernel, X, y, likelihood, method="laplace", options=None,
                 state=None, jitter=0.0, learn_likelihood=False, K=None):
        self.kernel = kernel.clone_with_theta(kernel.theta)
        self.X = X
        self.y = y
        self.likelihood = likelihood
        self.method = method
        self._method = get_method(method)
        self._infer = self._method
        self.options = dict(options or {})
        self.state = state
        self.jitter = float(jitter)
        self.n_calls = 0
        self._workspace = {}
        self._params = ModelParameters(kernel, likelihood, learn_likelihood)
        self._K_start = None if K is None else (self.theta, K)

    @property
    def theta(self):
        """Current log-hyperparameters: the kernel's, then the free likelihood
        parameters' (when ``learn_likelihood``)."""
        return self._params.theta_of(self.kernel, self.likelihood)

    @property
    def bounds(self):
        """Log-space bounds aligned with :attr:`theta`."""
        return self._params.bounds

    def _set_theta(self, theta):
        self.kernel, self.likelihood = self._params.model(theta)

    def kernel_matrix(self, theta=None):
        """K(X) at theta (or the current theta), jitter included, Fortran view."""
        if theta is not None:
            self._set_theta(theta)
        start, self._K_start = self._K_start, None
        K = start[1] if start is not None and np.array_equal(start[0], self.theta) \
            else None
        return jittered_kernel_matrix(self.kernel, self.X, self.jitter, K)

    def infer(self, theta=None, compute_gradient=True):
        """Run the inference at theta; returns ``(result, K)``."""
        return self._run(theta, compute_gradient, None)

    def _run(self, theta, compute_gradient, workspace):
        K = self.kernel_matrix(theta)
        extra = {} if workspace is None or not self._method.accepts_workspace \
            else {"workspace": workspace}
        res = self._infer(K, self.y, self.likelihood, init=self.state,
                          compute_gradient=compute_gradient, **self.options, **extra)
        self.state = res.state
        self.n_calls += 1
        return res, K

    def __call__(self, theta):
        """Return ``(log_evidence, d log_evidence / d theta)``."""
        # The result lives only inside this call: its n x n arrays may be the
        # workspace's, kept for the next call (no fresh pages to fault in).
        res, K = self._run(theta, True, self._workspace)
        return res.log_evidence, self.gradient(res, K)

    def gradient(self, res, K=None):
        """``d log_evidence / d theta`` at the current theta from a result's ``dK``
        (and ``dlik``); ``K``: the kernel matrix the result was computed from, if
        at hand (it saves rebuilding it)."""
        if self.jitter:
            K = None    # it holds the jitter: the contraction builds its own
        elif K is None:
            K = kernel_matrix(self.kernel, self.X, error=FloatingPointError)
        if res.dK is None:
            raise ValueError(f"method {self.method!r} gives no evidence gradient, so "
                             "its hyperparameters cannot be maximised over.")
        grad = checked_contraction(self.kernel, self.X, res.dK, K, self.method)
        if self._params.free.any():
            if res.dlik is None:
                raise ValueError(f"method {self.method!r} gives no derivatives with "
                                 "respect to likelihood parameters; fix them (bounds "
                                 "'fixed') or use method='ep'.")
            grad = self._params.gradient(grad, res.dlik, self.likelihood)
        return np.asarray(grad, dtype=np.float64)
