"""The log evidence of hyperparameters on fixed data: what evidence
maximisation (:func:`gpc.maximize_evidence`) and the estimators evaluate.

:class:`Evidence` is the base of every model's objective: it maps theta (the
kernels' log-hyperparameters, then the logs of the likelihood's free
parameters: :class:`ModelParameters`) to the model, runs the model's inference
warm-started from the state of the previous run, and returns the log evidence
and its gradient in theta.  :class:`EvidenceObjective` is the GP on full
kernel matrices (one latent function, or the joint model of C classes), and
:class:`gpc.sparse.learning.SparseEvidence` the sparse model.
:func:`data_fingerprint` keys a fit's warm-start state to its data.
"""

import hashlib

import numpy as np

from .inference import InferenceMethod, NumericalError, get_method
from .kernels import contract, kernel_matrix


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
    """The kernels' log-hyperparameters one after another, then the logs of the
    likelihood's free parameters: the vector that evidence maximisation moves.

    Parameters
    ----------
    kernel : kernel or list of kernels
        One kernel, or several (e.g. one per class); :meth:`model` gives back
        the same form.
    likelihood : Likelihood
    learn_likelihood : bool
        Whether the likelihood's non-fixed parameters are part of theta.

    Examples
    --------
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from gpc.likelihoods import get_likelihood
    >>> from gpc.evidence import ModelParameters
    >>> p = ModelParameters(RBF(2.0), get_likelihood("noisy_threshold"), True)
    >>> p.theta.round(3)
    array([ 0.693, -2.303])
    >>> round(p.model([0.0, -1.0])[1].eps, 4)
    0.3679
    """

    def __init__(self, kernel, likelihood, learn_likelihood):
        self._many = isinstance(kernel, (list, tuple))
        kernels = list(kernel) if self._many else [kernel]
        self.kernels = [k.clone_with_theta(k.theta) for k in kernels]
        self.likelihood = likelihood
        bounds = np.asarray(likelihood.param_bounds, dtype=np.float64).reshape(-1, 2)
        self.free = (bounds[:, 0] < bounds[:, 1]) if learn_likelihood else \
            np.zeros(len(bounds), dtype=bool)
        self._lik_bounds = bounds[self.free]
        if (self._lik_bounds[:, 0] <= 0).any():
            raise ValueError("likelihood parameters are learnt in log space: their lower "
                             f"bounds must be > 0, got {self._lik_bounds[:, 0]}.")
        self._cuts = np.cumsum([0] + [k.theta.shape[0] for k in self.kernels])

    @property
    def kernel(self):
        """The kernel (or list of kernels) at the start."""
        return self.kernels if self._many else self.kernels[0]

    @property
    def theta(self):
        """The kernels' thetas, then the logs of the free likelihood parameters."""
        return self.theta_of(self.kernel, self.likelihood)

    def theta_of(self, kernel, likelihood):
        """theta of another kernel (or list) and likelihood of the same structure."""
        kernels = kernel if self._many else [kernel]
        lik = np.log(np.asarray(likelihood.params, dtype=np.float64)[self.free])
        return np.concatenate([k.theta for k in kernels] + [lik])

    @property
    def bounds(self):
        """Log-space bounds aligned with :attr:`theta`."""
        return np.vstack([k.bounds.reshape(-1, 2) for k in self.kernels]
                         + [np.log(self._lik_bounds).reshape(-1, 2)])

    def model(self, theta):
        """``(kernel, likelihood)`` at theta (new objects; a list of kernels
        when given a list)."""
        theta = np.asarray(theta, dtype=np.float64)
        nk = self._cuts[-1]
        if theta.shape != (nk + int(self.free.sum()),):
            raise ValueError(f"theta must have shape ({nk + int(self.free.sum())},), "
                             f"got {theta.shape}.")
        likelihood = self.likelihood
        if self.free.any():
            params = np.asarray(likelihood.params, dtype=np.float64).copy()
            params[self.free] = np.exp(theta[nk:])
            likelihood = likelihood.with_params(params)
        kernels = [k.clone_with_theta(theta[a:b])
                   for k, a, b in zip(self.kernels, self._cuts[:-1], self._cuts[1:])]
        return (kernels if self._many else kernels[0]), likelihood

    def gradient(self, kernel_grad, dlik, likelihood):
        """theta's gradient from the kernels' and ``dlik`` (d/d parameter) at
        ``likelihood``: d/d log p = p d/dp."""
        params = np.asarray(likelihood.params, dtype=np.float64)
        if not self.free.any():
            return np.asarray(kernel_grad, dtype=np.float64)
        return np.concatenate([kernel_grad, (params * dlik)[self.free]])


class Evidence:
    """The base of the evidence objectives: ``objective(theta) -> (log
    evidence, gradient)``, each run warm-started from the state the previous
    one left.

    It holds the model at the current theta (``kernel``, ``likelihood``) and
    the map between the two (:class:`ModelParameters`).  A model's objective
    implements ``_run`` (its inference at the current model) and
    ``_value_and_gradient`` (the objective from a run).

    Parameters
    ----------
    kernel : kernel or list of kernels
    likelihood : Likelihood
    learn_likelihood : bool, default=False
        Append the log of the likelihood's non-fixed parameters to theta.
    state : object, optional
        The initial warm-start state.

    Attributes
    ----------
    state : object
        The warm-start state of the last successful run.
    n_calls : int
        The runs so far.
    """

    def __init__(self, kernel, likelihood, learn_likelihood=False, state=None):
        self.params = ModelParameters(kernel, likelihood, learn_likelihood)
        self.kernel, self.likelihood = self.params.kernel, likelihood
        self.state = state
        self.n_calls = 0

    @property
    def theta(self):
        """The current theta."""
        return self.params.theta_of(self.kernel, self.likelihood)

    @property
    def bounds(self):
        """Log-space bounds aligned with :attr:`theta`."""
        return self.params.bounds

    def set_theta(self, theta):
        """Move the model to theta."""
        self.kernel, self.likelihood = self.params.model(theta)

    def infer(self, theta=None, compute_gradient=True):
        """Run the inference at theta (the current one if None); returns the
        result and what the model's gradient needs beside it."""
        if theta is not None:
            self.set_theta(theta)
        return self._run(compute_gradient, None)

    def __call__(self, theta):
        """``(log_evidence, d log_evidence / d theta)`` at theta."""
        self.set_theta(theta)
        return self._value_and_gradient(*self._run(True, self._workspace()))

    def _workspace(self):
        """Reusable buffers for the runs of :meth:`__call__` (None: none)."""
        return None

    def _kept(self, state):
        """Keep a successful run's warm-start state; count the run."""
        self.state = state
        self.n_calls += 1

    def _run(self, compute_gradient, workspace):
        raise NotImplementedError

    def _value_and_gradient(self, result, extra):
        raise NotImplementedError


class EvidenceObjective(Evidence):
    """The log evidence of kernel hyperparameters for fixed data, warm-started.

    One objective for the models on full kernel matrices: the GP of one latent
    function (binary and regression likelihoods) and the joint model of C
    classes (a multinomial likelihood: C latent functions, one kernel shared by
    the classes or one per class).  Each call builds the kernel matrices, runs
    the inference method from the state the previous call left (the
    optimiser's evaluations are close together, so Newton or EP starts near its
    answer), and turns ``dK`` into the gradient with :func:`gpc.kernels.contract`
    (no n x n x p tensor).  Methods that take a ``workspace`` (Laplace, EP, PL)
    get one kept across calls, so that their n x n buffers are not allocated
    and page-faulted in afresh at every evaluation.

    Parameters
    ----------
    kernel : kernel object, or list of kernel objects
        Copied; its theta is set at each call.  With a multinomial likelihood
        one kernel shared by the classes (alone or in a list of one), or a list
        of one per class (theta is then their thetas one after another).
    X : array-like
        Training inputs (as the kernels accept them).
    y : ndarray of shape (n,)
        Labels in {-1, +1}; integers 0, ..., C - 1 for a multinomial
        likelihood.
    likelihood : Likelihood or MultinomialLikelihood
    method : str or InferenceMethod
        A name from :func:`gpc.available_methods` (the variant registered for
        the likelihood's model), or a registered method.
    options : dict, optional
        Options of the inference method.
    state : dict, optional
        Initial warm-start state.
    jitter : float or list of float, default=0.0
        Added to the diagonal of the kernel matrix (of each kernel's, with a
        list).
    learn_likelihood : bool, default=False
        Append the log of the likelihood's non-fixed parameters (e.g. the noisy
        threshold's eps) to theta; their gradient comes from the method's ``dlik``.
    K : ndarray of shape (n, n), or list of them, optional
        The kernel matrices (without the jitter) when the caller already has
        them: the first evaluation uses them if it is at the kernels' own theta
        (then drops them), instead of building them again.
    sample_weight : ndarray of shape (n,), optional
        The examples' weights, for a method that takes them (see
        :func:`gpc.infer`).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from gpc.likelihoods import get_likelihood
    >>> from gpc.evidence import EvidenceObjective
    >>> X = np.linspace(-2, 2, 8)[:, None]
    >>> y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> obj = EvidenceObjective(RBF(1.0), X, y, get_likelihood("logit"))
    >>> value, grad = obj(np.log([1.0]))
    >>> grad.shape
    (1,)

    Three classes, one kernel per class (theta: one length scale each):

    >>> labels = np.repeat([0, 1, 2], 3)
    >>> X3 = np.linspace(-2, 2, 9)[:, None]
    >>> obj = EvidenceObjective([RBF(1.0), RBF(1.0), RBF(2.0)], X3, labels,
    ...                         get_likelihood("softmax"))
    >>> obj(obj.theta)[1].shape
    (3,)
    """

    def __init__(self, kernel, X, y, likelihood, method="laplace", options=None,
                 state=None, jitter=0.0, learn_likelihood=False, K=None,
                 sample_weight=None):
        super().__init__(kernel, likelihood, learn_likelihood, state)
        self.X = X
        self.y = y
        self._method = method if isinstance(method, InferenceMethod) else \
            get_method(method, likelihood)
        self.sample_weight = self._method.check_sample_weight(sample_weight, len(y))
        self.method = self._method.name
        self._infer = self._method
        self.options = dict(options or {})
        n_kernels = len(self.kernels)
        if self._method.multinomial and n_kernels == 1 and \
                getattr(likelihood, "n_classes", None) is None:
            raise ValueError(
                f"one kernel shared by the classes needs their number: give the "
                f"likelihood it (e.g. {type(likelihood).__name__}(n_classes=3)) or "
                f"pass one kernel per class.")
        self.jitters = [float(j) for j in jitter] if isinstance(jitter, (list, tuple)) \
            else [float(jitter)] * n_kernels
        if len(self.jitters) != n_kernels:
            raise ValueError(f"{len(self.jitters)} jitters for {n_kernels} kernels.")
        self._buffers = {}
        self._K_start = None if K is None else \
            (self.theta, list(K) if isinstance(K, (list, tuple)) else [K])

    @property
    def kernels(self):
        """The kernels at the current theta, as a list."""
        return self.kernel if isinstance(self.kernel, list) else [self.kernel]

    def _workspace(self):
        return self._buffers

    def kernel_matrices(self, theta=None):
        """The kernels' matrices on X at theta (or the current theta), jitter
        included, Fortran ordered: a list."""
        if theta is not None:
            self.set_theta(theta)
        start, self._K_start = self._K_start, None
        given = start[1] if start is not None and np.array_equal(start[0], self.theta) \
            else [None] * len(self.kernels)
        return [jittered_kernel_matrix(k, self.X, j, K)
                for k, j, K in zip(self.kernels, self.jitters, given)]

    def _method_K(self, Ks):
        """The method's kernel matrix argument: the one latent function's, or
        the C classes' (the shared one repeated)."""
        if not self._method.multinomial:
            return Ks[0]
        return tuple(Ks * self.likelihood.n_classes if len(Ks) == 1 else Ks)

    def _run(self, compute_gradient, workspace):
        """``(result, kernel matrices)`` at the current theta.  With a workspace
        the result's n x n arrays may be its buffers, valid until the next run."""
        Ks = self.kernel_matrices()
        extra = {} if workspace is None or not self._infer.accepts_workspace \
            else {"workspace": workspace}
        if self.sample_weight is not None:
            extra["sample_weight"] = self.sample_weight
        res = self._infer(self._method_K(Ks), self.y, self.likelihood, init=self.state,
                          compute_gradient=compute_gradient, **self.options, **extra)
        self._kept(res.state)
        return res, Ks

    def _value_and_gradient(self, res, Ks):
        return res.log_evidence, self.gradient(res, Ks)

    def gradient(self, res, Ks=None):
        """``d log_evidence / d theta`` at the current theta from a result's ``dK``
        (and ``dlik``); ``Ks``: the kernel matrices the result was computed
        from, if at hand (it saves rebuilding them)."""
        if res.dK is None:
            raise ValueError(f"method {self.method!r} gives no evidence gradient, so "
                             "its hyperparameters cannot be maximised over.")
        if not self._method.multinomial:
            dKs = [res.dK]
        else:
            dKs = [res.dK.sum(axis=0)] if len(self.kernels) == 1 else list(res.dK)
        grads = []
        for k, dK, K, jitter in zip(self.kernels, dKs, Ks or [None] * len(dKs),
                                    self.jitters):
            if jitter:
                K = None    # it holds the jitter: the contraction builds its own
            elif K is None:
                K = kernel_matrix(k, self.X, error=FloatingPointError)
            grads.append(checked_contraction(k, self.X, dK, K, self.method))
        grad = np.concatenate(grads)
        if self.params.free.any():
            if res.dlik is None:
                raise ValueError(f"method {self.method!r} gives no derivatives with "
                                 "respect to likelihood parameters; fix them (bounds "
                                 "'fixed') or use method='ep'.")
            grad = self.params.gradient(grad, res.dlik, self.likelihood)
        return np.asarray(grad, dtype=np.float64)
