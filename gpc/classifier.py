"""scikit-learn compatible Gaussian process classifiers."""

import numpy as np
from sklearn.gaussian_process.kernels import CompoundKernel
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ._binary import _DEFAULT_METHOD, _BinaryGaussianProcessClassifier, _is_online
from ._estimator import DEFAULT_LIKELIHOOD, ClassifierFront
from ._multinomial import _MultinomialGaussianProcessClassifier


class GaussianProcessClassifier(ClassifierFront):
    """Gaussian process classification with a choice of approximate inference.

    A drop-in for :class:`sklearn.gaussian_process.GaussianProcessClassifier`: the
    same parameters with the same defaults and meaning, the same fitted attributes
    and methods, plus ``method`` (the inference approximation) and ``likelihood``.
    Evidence gradients are exact (including the implicit term through the Laplace
    mode), the mode is converged tightly so the evidence is smooth, and the
    optimiser warm-starts each inference from the previous one.

    Parameters
    ----------
    kernel : kernel instance or list of kernels, default=None
        Any scikit-learn kernel or :mod:`gpc.kernels` kernel. None means
        ``1.0 * RBF(1.0)`` with both hyperparameters fixed (scikit-learn's default).
        With ``multi_class="multinomial"`` it is shared by the classes' latent
        functions, or a list of one kernel per class (in the order of
        ``classes_``), each with its own hyperparameters.
    optimizer : "fmin_l_bfgs_b", callable or None, default="fmin_l_bfgs_b"
        Maximises the log evidence over the kernel's log-hyperparameters; a callable
        has the signature ``optimizer(obj_func, initial_theta, bounds) ->
        (theta_opt, func_min)``. None keeps the kernel's hyperparameters.
    n_restarts_optimizer : int, default=0
        Extra optimiser starts drawn uniformly within the log-bounds.
    max_iter_predict : int, default=100
        Maximum number of iterations of the inference (Newton steps for Laplace
        and the mean fields, sweeps for EP and PL).  An iteration limit given in
        ``inference_options`` (``max_iter``, or ``max_sweeps`` for EP and PL)
        takes precedence.
    warm_start : bool, default=False
        Start the inference of a refit on the same data from the previous fit's
        state, and a refit on other data afresh.  With more than two classes
        one-vs-rest or one-vs-one this holds for each binary problem (a class
        against the rest, or a pair of classes): one whose inputs and labels
        are unchanged starts from its state in the previous fit.
        (Within one fit, evaluations are always warm-started.)
    copy_X_train : bool, default=True
        Store a copy of the training inputs.
    random_state : int, RandomState instance or None, default=None
        Seeds the optimiser's random restarts.
    multi_class : {"one_vs_rest", "one_vs_one", "multinomial"}, default="one_vs_rest"
        How more than two classes are handled.  "one_vs_rest" and "one_vs_one"
        fit binary models (scikit-learn's choices); "multinomial" fits one joint
        model of one latent function per class, its evidence shared by the
        classes: with the default ``likelihood="logit"`` the softmax model
        (``method="laplace"`` or ``"vb"``; with two classes the binary logit
        model with twice the kernel), with ``likelihood="probit"`` the
        multinomial probit model (``method="ep"``; with two classes the binary
        probit model with the same kernel).  See Notes.
    n_jobs : int, default=None
        Parallel jobs for the one-vs-rest and one-vs-one binary problems.
    class_weight : dict or "balanced", default=None
        Weights of the classes, as in scikit-learn's classifiers: a dict
        ``{class_label: weight}``, or "balanced" for ``n_samples / (n_classes *
        np.bincount(y))``, which gives every class the same total weight (for
        imbalanced data).  Each example's weight is its class's times its
        ``sample_weight`` in :meth:`fit`.  Only for methods that take weights
        ("laplace", "ep", "pl" and "vb"; with ``multi_class="multinomial"``,
        "laplace" and "vb"); the others raise ValueError in :meth:`fit`.
    method : str, default="laplace"
        Approximate inference method: "laplace", "ep", "pl" (posterior
        linearisation), "mean_field" (variational, its free energy maximised as
        the evidence; it learns hyperparameters only with a white-noise term in
        the kernel, and raises ValueError otherwise; with fixed hyperparameters
        too, a K close to singular raises gpc.NumericalError),
        "naive_mean_field", "adf"
        (Bayesian online learning: one sweep, no evidence gradient, so use it
        with ``optimizer=None`` or fixed hyperparameters; :meth:`partial_fit`
        adds data), "vb" (the Jaakkola-Jordan lower bound for the logit, a
        curvature lower bound for the probit; the logit's upper bound is
        :class:`gpc.bounds.UpperBound`) (see
        :func:`gpc.available_methods`).
    likelihood : str or Likelihood, default="logit"
        "logit", "probit", "noisy_threshold", "step" (the last two need a method
        other than "laplace"), or a :mod:`gpc.likelihoods` object. Its parameters whose
        bounds are not "fixed" (the noisy threshold's eps) are learnt with the
        kernel's when ``optimizer`` is set; ``likelihood_`` of the binary estimators
        holds the fitted values.
    inference_options : dict, default=None
        Further options of the inference method, e.g.
        ``{"updates": "parallel"}`` for EP: the keyword arguments of its function
        in :mod:`gpc.inference` (see :func:`gpc.infer`).  ``fit`` refuses an
        option the method does not have (ValueError) or a value of another type
        than its default's (TypeError).
    priors : dict or sequence, default=None
        Priors on log-hyperparameters added to the optimised objective: a dict
        mapping hyperparameter names (e.g. ``"k2__length_scale"``) to
        :class:`gpc.LogNormalPrior` / :class:`gpc.GammaPrior` (or any object with
        a ``log_density(theta)`` method; None for no prior), or a sequence of
        them aligned with ``kernel.theta``.
    verbose : int, default=0
        Progress of the optimisation: 1 per start, 2 per evaluation.

    Attributes
    ----------
    base_estimator_ : estimator
        The binary classifier, the one-vs-rest / one-vs-one wrapper around it, or
        the multinomial model.
    kernel_ : kernel
        The kernel with the fitted hyperparameters (a CompoundKernel for more than two
        classes one-vs-rest or one-vs-one, and for a multinomial model with one
        kernel per class).
    log_marginal_likelihood_value_ : float
        Log evidence at the fitted hyperparameters (mean over the binary problems for
        more than two classes one-vs-rest or one-vs-one; the joint evidence of a
        multinomial model).
    classes_ : ndarray of shape (n_classes,)
    n_classes_ : int
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from gpc import GaussianProcessClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> gpc = GaussianProcessClassifier(1.0 * RBF(1.0), random_state=0).fit(X, y)
    >>> round(gpc.score(X, y), 4)
    0.9867
    >>> gpc.predict_proba(X[:1, :]).round(3)
    array([[0.836, 0.032, 0.132]])

    One joint model instead of three binary ones (the softmax by default; the
    multinomial probit with ``method="ep", likelihood="probit"``):

    >>> joint = GaussianProcessClassifier(1.0 * RBF(1.0), multi_class="multinomial")
    >>> round(joint.fit(X, y).score(X, y), 4)
    0.9867
    >>> mean, cov = joint.latent_mean_and_variance(X[:1, :])
    >>> mean.shape, cov.shape
    ((1, 3), (1, 3, 3))

    Notes
    -----
    With ``multi_class="multinomial"`` the C latent functions have independent
    GP priors and ``p(y = c | f) = softmax(f)_c``.  Laplace's approximation of
    their joint posterior (Rasmussen & Williams 2006, section 3.5) needs only
    n x n factorisations, C of them per Newton step; its evidence, maximised
    with its exact gradient, is that of the one model.  ``method="vb"``
    maximises Bohning's lower bound on that evidence instead: the same mode,
    with a constant curvature that gives a narrower posterior (see
    :func:`gpc.inference.multinomial.vb_multinomial`).  With
    ``likelihood="probit"``, ``p(y = c | f)`` is the multinomial probit
    (:class:`gpc.likelihoods.MultinomialProbit`) and ``method="ep"`` runs nested
    expectation propagation (:func:`gpc.inference.multinomial_ep.multinomial_ep`),
    whose posterior is close to the exact one; its ``predict_proba`` is the
    nested EP approximation of the predictive integral.  ``predict_proba``
    averages the softmax over the C-dimensional latent posterior with a fixed
    quasi-Monte Carlo rule (:class:`gpc.likelihoods.Softmax`), deterministic
    and within 1e-3 of long Monte Carlo averages in the benchmark's tests.
    """

    def __init__(self, kernel=None, *, optimizer="fmin_l_bfgs_b", n_restarts_optimizer=0,
                 max_iter_predict=100, warm_start=False, copy_X_train=True,
                 random_state=None, multi_class="one_vs_rest", n_jobs=None,
                 class_weight=None, method=_DEFAULT_METHOD,
                 likelihood=DEFAULT_LIKELIHOOD, inference_options=None,
                 priors=None, verbose=0):
        self.kernel = kernel
        self.optimizer = optimizer
        self.n_restarts_optimizer = n_restarts_optimizer
        self.max_iter_predict = max_iter_predict
        self.warm_start = warm_start
        self.copy_X_train = copy_X_train
        self.random_state = random_state
        self.multi_class = multi_class
        self.n_jobs = n_jobs
        self.class_weight = class_weight
        self.method = method
        self.likelihood = likelihood
        self.inference_options = inference_options
        self.priors = priors
        self.verbose = verbose

    def _multinomial(self):
        return self.multi_class == "multinomial"

    def _vector_input(self):
        kernels = self.kernel if isinstance(self.kernel, (list, tuple)) else [self.kernel]
        return all(k is None or k.requires_vector_input for k in kernels)

    def _validation_kwargs(self):
        return (dict(ensure_2d=True, dtype="numeric") if self._vector_input()
                else dict(ensure_2d=False, dtype=None))

    def _warm(self, binary):
        """With ``warm_start``, give the binary (or joint) estimator the states of
        the fitted ones of its type, by data fingerprint: it, or each binary
        problem of the wrapper (its clones), starts from the state of the
        previous fit's problem on the same data."""
        previous = getattr(self, "base_estimator_", None)
        if self.warm_start and previous is not None:
            fitted = getattr(previous, "estimators_", [previous])
            binary._warm_starts = dict(e._warm_state for e in fitted
                                       if type(e) is type(binary))
        return binary

    @available_if(_is_online)
    def partial_fit(self, X, y, classes=None):
        """Add examples to an online fit (``method="adf"``) without refitting.

        Only available with ``method="adf"``.  Each call presents the new examples
        once, after those seen before, with the kernel's hyperparameters kept; the data given in several calls give the
        model of one ``fit`` on all of it (with the default ``n_sweeps=1``).
        Nothing on the estimator changes unless the call succeeds.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object
        y : array-like of shape (n_samples,)
        classes : array-like of shape (n_classes,), default=None
            All the classes of the stream; required on the first call (as in
            scikit-learn), optional afterwards.

        Returns
        -------
        self : object

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.gaussian_process.kernels import RBF
        >>> from gpc import GaussianProcessClassifier
        >>> rng = np.random.RandomState(0)
        >>> X = rng.randn(60, 2)
        >>> y = (X[:, 0] > 0).astype(int)
        >>> clf = GaussianProcessClassifier(RBF(1.0), method="adf", optimizer=None,
        ...                                 likelihood="probit")
        >>> clf = clf.partial_fit(X[:30], y[:30], classes=[0, 1])
        >>> clf = clf.partial_fit(X[30:], y[30:])
        >>> full = GaussianProcessClassifier(RBF(1.0), method="adf", optimizer=None,
        ...                                  likelihood="probit").fit(X, y)
        >>> bool(np.allclose(clf.predict_proba(X), full.predict_proba(X)))
        True
        """
        return super().partial_fit(X, y, classes)

    def _check_params(self):
        """Check every parameter before the data; return the binary (or joint)
        estimator to fit, its own parameters checked."""
        if isinstance(self.kernel, CompoundKernel):
            raise ValueError("kernel cannot be a CompoundKernel")
        self._check_multi_class(("one_vs_rest", "one_vs_one", "multinomial"))
        if isinstance(self.kernel, (list, tuple)) and not self._multinomial():
            raise ValueError("a list of kernels (one per class) needs "
                             "multi_class='multinomial'.")
        binary = self._binary()
        binary._prepared = binary._setup()
        return binary

    def _binary(self):
        """The estimator fitted to the data: the joint model, or the binary one
        (that the one-vs-rest and one-vs-one wrappers copy)."""
        estimator = (_MultinomialGaussianProcessClassifier if self._multinomial()
                     else _BinaryGaussianProcessClassifier)
        return estimator(
            kernel=self.kernel, optimizer=self.optimizer,
            n_restarts_optimizer=self.n_restarts_optimizer,
            max_iter_predict=self.max_iter_predict, warm_start=self.warm_start,
            copy_X_train=self.copy_X_train, random_state=self.random_state,
            method=self.method, likelihood=self.likelihood,
            inference_options=self.inference_options, priors=self.priors,
            verbose=self.verbose)

    def log_marginal_likelihood(self, theta=None, eval_gradient=False, clone_kernel=True):
        """Log evidence of kernel hyperparameters theta for the training data.

        Parameters
        ----------
        theta : array-like of shape (n_kernel_params,), default=None
            Log-hyperparameters; None returns the value at the fitted ones. For more
            than two classes one-vs-rest or one-vs-one, theta may be one kernel's
            (shared by all binary problems) or the compound kernel's, and the mean
            is returned.  For the multinomial model: the shared kernel's theta,
            or the classes' kernels' thetas one after another (``kernel_.theta``);
            the joint evidence is returned.
        eval_gradient : bool, default=False
            Also return the gradient (binary problems and the multinomial model).
        clone_kernel : bool, default=True
            Evaluate on a copy of the kernel (False sets ``kernel_.theta``).

        Returns
        -------
        log_likelihood : float
        log_likelihood_gradient : ndarray of shape (n_kernel_params,), optional
        """
        check_is_fitted(self)
        if theta is None:
            if eval_gradient:
                raise ValueError("Gradient can only be evaluated for theta!=None")
            return self.log_marginal_likelihood_value_
        theta = np.asarray(theta, dtype=np.float64)
        if not self._is_wrapper():
            return self.base_estimator_.log_marginal_likelihood(
                theta, eval_gradient, clone_kernel=clone_kernel)
        if eval_gradient:
            raise NotImplementedError("Gradient of log-marginal-likelihood not "
                                      "implemented for multi-class GPC.")
        estimators = self.base_estimator_.estimators_
        n_dims = estimators[0].kernel_.n_dims
        if theta.shape[0] == n_dims:
            parts = [theta] * len(estimators)
        elif theta.shape[0] == n_dims * len(estimators):
            parts = [theta[n_dims * i:n_dims * (i + 1)] for i in range(len(estimators))]
        else:
            raise ValueError(f"Shape of theta must be either {n_dims} or "
                             f"{n_dims * len(estimators)}. Obtained theta with shape "
                             f"{theta.shape[0]}.")
        return np.mean([e.log_marginal_likelihood(t, clone_kernel=clone_kernel)
                        for e, t in zip(estimators, parts)])
