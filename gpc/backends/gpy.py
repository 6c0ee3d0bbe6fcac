"""gpc's EP and Laplace as the inference method of GPy's models.

GPy builds a model from inputs, targets, a kernel, a likelihood and an inference
method; each time the hyperparameters change it asks the inference method for the
posterior, the log marginal likelihood and its derivative with respect to the
kernel matrix. :class:`GPCInference` answers with :func:`gpc.infer`, so a GPy
classification model keeps its kernels, priors, optimisers and plots and runs gpc's
compiled inference.

Needs GPy (``pip install "gpc[gpy]"``).

Examples
--------
>>> import numpy as np
>>> import GPy
>>> from gpc.backends.gpy import GPCInference
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(50, 2))
>>> Y = (X[:, :1] + 0.3 * rng.normal(size=(50, 1)) > 0).astype(float)
>>> model = GPy.core.GP(X, Y, GPy.kern.RBF(2), GPy.likelihoods.Bernoulli(),
...                     inference_method=GPCInference("ep"))
>>> bool(np.isfinite(model.log_likelihood()))
True
>>> probabilities = model.predict(X[:3])[0]        # p(y = 1), shape (3, 1)
"""

import numpy as np

from ..inference import get_method, infer

try:
    from GPy.inference.latent_function_inference import LatentFunctionInference
    from GPy.inference.latent_function_inference.posterior import Posterior
    from GPy.likelihoods import Bernoulli
    from GPy.likelihoods.link_functions import Heaviside, Probit
except ImportError as exc:      # pragma: no cover - depends on the environment
    raise ImportError("gpc.backends.gpy needs GPy: pip install 'gpc[gpy]' (or "
                      "pip install GPy).") from exc

__all__ = ["GPCInference"]

#: GPy's Bernoulli links and the gpc likelihoods that are the same model.
_LINKS = ((Probit, "probit"), (Heaviside, "step"))


def _gpc_likelihood(likelihood):
    """The name of the gpc likelihood that equals GPy's ``likelihood``."""
    if type(likelihood) is Bernoulli:
        for link, name in _LINKS:
            if type(likelihood.gp_link) is link:
                return name
    raise ValueError(
        "GPCInference serves GPy's Bernoulli likelihood with the Probit or the "
        f"Heaviside link; got {type(likelihood).__name__} with "
        f"{type(getattr(likelihood, 'gp_link', None)).__name__}. For a Gaussian "
        "likelihood GPy's own exact inference is the right method.")


def _labels(Y):
    """GPy's Bernoulli targets (one column of 0/1, or -1/+1) as gpc's -1/+1."""
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim != 2 or Y.shape[1] != 1:
        raise ValueError(f"GPCInference takes one column of targets, got shape "
                         f"{Y.shape}.")
    y = Y[:, 0]
    if not np.all((y == 1) | (y == 0) | (y == -1)):
        raise ValueError("Bernoulli targets must be 1 for the positive class and 0 "
                         "(or -1) for the negative one; got other values.")
    return np.where(y == 1, 1.0, -1.0)


class _SitePosterior(Posterior):
    """GPy's posterior of a gpc result: the mean weights at once, the matrix
    ``(K + W^-1)^-1`` of the predictive variances only when GPy asks for it."""

    def __init__(self, posterior, K):
        # GPy's constructor insists on a Woodbury matrix or factor up front; give it
        # a placeholder and compute the real one lazily in woodbury_inv.
        super().__init__(woodbury_vector=posterior.alpha[:, None], K=K,
                         woodbury_inv=np.zeros((0, 0)))
        self._woodbury_inv = None
        self._site = posterior

    @property
    def woodbury_inv(self):
        """``(K + W^-1)^-1``, from the site form (see
        :meth:`gpc.SitePosterior.woodbury_inverse`)."""
        if self._woodbury_inv is None:
            self._woodbury_inv = self._site.woodbury_inverse()
        return self._woodbury_inv


class GPCInference(LatentFunctionInference):
    """gpc's inference behind a GPy model (``inference_method=`` of GPy's GPs).

    Parameters
    ----------
    method : {"ep", "laplace"} or str, default="ep"
        The gpc inference method (:func:`gpc.available_methods`): "ep" for
        expectation propagation (accelerated parallel updates), "laplace" for
        Laplace's approximation; any other method with an evidence gradient
        ("pl", "vb", "mean_field", "naive_mean_field") works too.
    inference_options : dict, optional
        Options of the method, passed to :func:`gpc.infer` (e.g. ``{"tol": 1e-10}``
        or ``{"updates": "sequential"}`` for EP).
    warm_start : bool, default=True
        Start each inference from the previous one's state (EP's sites, Laplace's
        mode) when the number of examples is unchanged. An optimiser's small steps
        then cost a few iterations each; the fixed point reached is the same.

    Attributes
    ----------
    result_ : gpc.InferenceResult
        The last inference's result (posterior, ``log_evidence``, ``dK``,
        ``info``), set on each call.

    Notes
    -----
    The likelihood must be GPy's ``Bernoulli`` with the ``Probit`` link (gpc's
    "probit") or the ``Heaviside`` link (gpc's noise-free "step", EP only).
    Targets are one column of 1 and 0 (or -1). Mean functions are not supported:
    gpc's methods take a zero prior mean.

    Unlike GPy's EP in its default ``ep_mode="alternated"``, which keeps the sites
    of the first call while the hyperparameters change, every call runs the method
    to convergence, so the log marginal likelihood and its gradient are those of
    the current hyperparameters (GPy's ``ep_mode="nested"``).

    Examples
    --------
    >>> import numpy as np
    >>> import GPy
    >>> from gpc.backends.gpy import GPCInference
    >>> X = np.linspace(-2, 2, 20)[:, None]
    >>> Y = (X > 0).astype(float)
    >>> model = GPy.core.GP(X, Y, GPy.kern.RBF(1), GPy.likelihoods.Bernoulli(),
    ...                     inference_method=GPCInference("laplace"))
    >>> model.inference_method.result_.info["converged"]
    True
    """

    def __init__(self, method="ep", inference_options=None, warm_start=True):
        super().__init__()
        self.method = method
        self.inference_options = inference_options
        self.warm_start = warm_start
        self._state = None

    def inference(self, kern, X, likelihood, Y, mean_function=None,
                  Y_metadata=None, K=None, **kwargs):
        """Posterior, log marginal likelihood and its gradients, as GPy asks.

        Parameters
        ----------
        kern : GPy.kern.Kern
            The model's kernel.
        X : ndarray of shape (n, d)
            Training inputs.
        likelihood : GPy.likelihoods.Bernoulli
            With the Probit or Heaviside link.
        Y : ndarray of shape (n, 1)
            Targets, 1 or 0 (or -1).
        mean_function : None
            Must be None (zero prior mean).
        Y_metadata : None
            Must be None.
        K : ndarray of shape (n, n), optional
            The kernel matrix, when the caller has it already.
        **kwargs
            Ignored (GPy passes further keywords to some methods).

        Returns
        -------
        posterior : GPy Posterior
            Mean weights and, on demand, the Woodbury inverse for predictions.
        log_marginal : float
            The method's log evidence.
        grad_dict : dict
            ``dL_dK`` (n x n) and ``dL_dthetaL`` (empty: the likelihood has no
            parameters).
        """
        if mean_function is not None:
            raise ValueError("GPCInference does not support mean functions; gpc's "
                             "methods take a zero prior mean.")
        if Y_metadata is not None:
            raise ValueError("GPCInference takes no Y_metadata.")
        if not get_method(self.method).has_gradient:
            raise ValueError(f"GPCInference needs a method with an evidence gradient; "
                             f"{self.method!r} has none.")
        name = _gpc_likelihood(likelihood)
        y = _labels(Y)
        if K is None:
            K = kern.K(X)
        init = self._state if self.warm_start else None
        if init is not None and init["n"] != len(y):
            init = None
        result = infer(K, y, method=self.method, likelihood=name,
                       init=None if init is None else init["state"],
                       **(self.inference_options or {}))
        self._state = {"n": len(y), "state": result.state}
        self.result_ = result
        grad_dict = {"dL_dK": result.dK, "dL_dthetaL": np.zeros(0)}
        return _SitePosterior(result.posterior, K), result.log_evidence, grad_dict
