"""scikit-learn compatible Gaussian process classifiers."""

import copy
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.gaussian_process.kernels import RBF, CompoundKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from ._validation import (NotPositiveDefiniteError, check_full_fit_memory,
                          check_integer)
from .inference import get_method
from .inference._base import (InferenceResult, check_options,
                              checked_kernel_matrix)
from .kernels import (as_kernel, cross_covariance_chunks, has_white_noise,
                      kernel_matrix)
from .likelihoods import get_likelihood
from .inference.evidence import EvidenceObjective, data_fingerprint
from .optimize import maximize_evidence

_DEFAULT_METHOD = "laplace"
#: Elements (float64) of one block of cross-covariances in prediction (32 MB).
_PREDICT_BLOCK = 1 << 22
#: Class probabilities closer than this count as tied (see ``predict_proba``).
_TIE_TOL = 1e-12


def _is_online(estimator):
    """partial_fit exists only for the online method."""
    return estimator.method == "adf"


def _concatenate(a, b):
    """Training inputs followed by new ones (arrays, or lists for other kernels)."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return np.concatenate([a, b])
    return list(a) + list(b)


def classes_from_proba(classes, proba):
    """``predict`` from ``predict_proba``: with two classes ``classes[1]`` exactly
    where ``proba[:, 1] >= 0.5`` (a tie goes to ``classes[1]``, as scikit-learn's
    tests require), with more the class of largest probability."""
    if len(classes) == 2:
        return np.where(proba[:, 1] >= 0.5, classes[1], classes[0])
    return classes[np.argmax(proba, axis=1)]


def _at_bounds(estimator, atol=1e-6):
    """Names of the learnt kernel hyperparameters of a fitted binary estimator
    that ended at one of their bounds (none when nothing was learnt)."""
    if getattr(estimator, "optimizer_result_", None) is None:
        return []
    kernel = estimator.kernel_
    names = [h.name if h.n_elements == 1 else f"{h.name}[{k}]"
             for h in kernel.hyperparameters if not h.fixed
             for k in range(h.n_elements)]
    theta, bounds = kernel.theta, kernel.bounds
    close = (np.isclose(theta, bounds[:, 0], rtol=0.0, atol=atol)
             | np.isclose(theta, bounds[:, 1], rtol=0.0, atol=atol))
    return [name for name, c in zip(names, close) if c]


def _default_kernel():
    return C(1.0, constant_value_bounds="fixed") * RBF(1.0, length_scale_bounds="fixed")


class _BinaryGaussianProcessClassifier(ClassifierMixin, BaseEstimator):
    """Binary GP classifier on any inference method of gpc (used by the public class).

    Parameters are those of :class:`GaussianProcessClassifier` less ``multi_class``
    and ``n_jobs``.
    """

    def __init__(self, kernel=None, *, optimizer="fmin_l_bfgs_b", n_restarts_optimizer=0,
                 max_iter_predict=100, warm_start=False, copy_X_train=True,
                 random_state=None, method=_DEFAULT_METHOD, likelihood="logit",
                 inference_options=None, priors=None, verbose=0):
        self.kernel = kernel
        self.optimizer = optimizer
        self.n_restarts_optimizer = n_restarts_optimizer
        self.max_iter_predict = max_iter_predict
        self.warm_start = warm_start
        self.copy_X_train = copy_X_train
        self.random_state = random_state
        self.method = method
        self.likelihood = likelihood
        self.inference_options = inference_options
        self.priors = priors
        self.verbose = verbose

    def _check_memory(self, n):
        """MemoryError, before any n x n allocation, when a fit on n points cannot
        fit in memory (see ``check_full_fit_memory``)."""
        check_full_fit_memory(n, f"GaussianProcessClassifier(method={self.method!r})")

    def _inference_options(self):
        """``inference_options`` checked, with the method's iteration limit set
        from ``max_iter_predict`` unless they give it."""
        options = check_options(self.method, self.inference_options,
                                reserved=("workspace", "resume"))
        option = get_method(self.method).max_iter_option
        if option is not None:
            options.setdefault(option, self.max_iter_predict)
        return options

    def _setup(self):
        """Check the parameters (at the start of fit and partial_fit, and of
        GaussianProcessClassifier's fit through its ``_check_params``); return a
        fresh kernel, the likelihood, the registered inference method
        (:class:`gpc.inference.InferenceMethod`) and the priors aligned with the
        kernel's theta (None without priors)."""
        kernel = _default_kernel() if self.kernel is None else clone(as_kernel(self.kernel))
        likelihood = get_likelihood(self.likelihood)
        if not likelihood.is_classification:
            raise ValueError(f"likelihood {likelihood.name!r} is a regression likelihood;"
                             " GaussianProcessClassifier needs a classification one "
                             "(logit, probit, noisy_threshold, step).")
        inference = get_method(self.method)
        check_integer(self.max_iter_predict, "max_iter_predict", 1)
        check_integer(self.n_restarts_optimizer, "n_restarts_optimizer", 0)
        optimizer = self.optimizer
        if not (optimizer is None or callable(optimizer)
                or (isinstance(optimizer, str) and optimizer == "fmin_l_bfgs_b")):
            raise ValueError(f"optimizer must be 'fmin_l_bfgs_b', a callable or None, "
                             f"got {optimizer!r}.")
        self._inference_options()
        if (optimizer is not None and inference.learning_needs_noise
                and kernel.n_dims > 0 and not has_white_noise(kernel)):
            raise ValueError(
                f"method={self.method!r} learns a kernel's hyperparameters only when "
                "the kernel has a white-noise term: without one its free energy "
                "rises towards the noise-free limit (an unbounded signal variance, "
                "short length scales) and gives poor probabilities.  Add a noise "
                "term (e.g. + WhiteKernel(1e-2)), or learn the hyperparameters with "
                "another method (e.g. 'ep') and pass its kernel_ with optimizer=None.")
        return kernel, likelihood, inference, self._kernel_priors(kernel)

    def fit(self, X, y):
        """Fit the binary classifier (all state is set only once fitting succeeded).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object
        y : array-like of shape (n_samples,), two classes

        Returns
        -------
        self
        """
        kernel, likelihood, inference, priors = self._setup()
        encoder = LabelEncoder()
        y01 = encoder.fit_transform(y)
        classes = encoder.classes_
        if classes.size > 2:
            raise ValueError(f"{type(self).__name__} supports only binary classification;"
                             f" y contains classes {classes}.")
        if classes.size == 1:
            raise ValueError(f"{type(self).__name__} requires 2 classes; got 1 class.")
        y_pm = 2.0 * y01 - 1.0
        self._check_memory(len(y01))
        X_train = np.copy(X) if self.copy_X_train else X
        key = data_fingerprint(X_train, y01)
        state = None
        previous = getattr(self, "_warm_state", None)
        if self.warm_start and previous is not None and previous[0] == key:
            state = previous[1]

        K, jitter = checked_kernel_matrix(kernel, X_train)
        objective = EvidenceObjective(kernel, X_train, y_pm, likelihood, self.method,
                                      self._inference_options(), state=state,
                                      jitter=jitter,
                                      learn_likelihood=self.optimizer is not None, K=K)
        del K     # the objective's first evaluation uses it (then drops it)
        learn = self.optimizer is not None and objective.theta.shape[0] > 0
        if learn and not inference.has_gradient:
            raise ValueError(
                f"method={self.method!r} has no evidence gradient, so the optimizer "
                "cannot learn the kernel's hyperparameters: pass optimizer=None (or "
                "fix them in the kernel), e.g. with hyperparameters learnt by another "
                "method (its kernel_).")
        optimum = None
        try:
            if learn:
                if priors is not None:    # none on learnt likelihood parameters
                    priors = priors + [None] * (objective.theta.shape[0] - len(priors))
                optimum = maximize_evidence(
                    objective, objective.theta, objective.bounds,
                    optimizer=self.optimizer, n_restarts=self.n_restarts_optimizer,
                    random_state=self.random_state, priors=priors,
                    verbose=self.verbose)
                objective._set_theta(optimum.theta)
                kernel.theta = objective.kernel.theta
                likelihood = objective.likelihood
                if kernel.n_dims:
                    kernel._check_bounds_params()
            result, _ = objective.infer(objective.theta, compute_gradient=False)
        except NotPositiveDefiniteError as exc:
            raise NotPositiveDefiniteError(
                f"The kernel {kernel!r} gives a covariance matrix that is not positive "
                f"semi-definite on the training data: {exc}") from exc
        self._store(kernel, likelihood, X_train, y01, classes, jitter, result, optimum,
                    key)
        return self

    @available_if(_is_online)
    def partial_fit(self, X, y, classes=None):
        """Add examples to an online (``method="adf"``) fit without refitting.

        The new examples are presented once each, in order, after those already
        seen; the kernel's hyperparameters are kept (no optimisation).  Fitting the
        data in several calls gives the model of one ``fit`` on all of it (with the
        default ``n_sweeps=1``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object
        y : array-like of shape (n_samples,)
        classes : array-like of shape (2,), default=None
            Both classes; required on the first call (as in scikit-learn), checked
            against ``classes_`` afterwards.

        Returns
        -------
        self
        """
        kernel, likelihood, inference, _ = self._setup()
        fitted = hasattr(self, "posterior_")
        if classes is None and not fitted:
            raise ValueError("classes must be passed on the first call to partial_fit.")
        if classes is not None:
            classes = np.unique(classes)
            if classes.size != 2:
                raise ValueError(f"{type(self).__name__} needs exactly 2 classes, got "
                                 f"{classes}.")
            if fitted and not np.array_equal(classes, self.classes_):
                raise ValueError(f"classes {classes} differ from those of the earlier "
                                 f"calls, {self.classes_}.")
        y = np.asarray(y)
        unknown = np.setdiff1d(y, classes if classes is not None else self.classes_)
        if unknown.size:
            raise ValueError(f"y contains labels {unknown} outside the classes "
                             f"{classes if classes is not None else self.classes_}.")
        X_new = np.copy(X) if self.copy_X_train else X
        if fitted:
            kernel, likelihood, classes = self.kernel_, self.likelihood_, self.classes_
            X_train = _concatenate(self.X_train_, X_new)
            y01 = np.concatenate([self.y_train_, np.searchsorted(classes, y)])
            resume = self._warm_state[1]
        else:
            X_train, y01, resume = X_new, np.searchsorted(classes, y), None
        self._check_memory(len(y01))
        K = kernel_matrix(kernel, X_train)
        options = dict(self._inference_options(), n_sweeps=1, resume=resume)
        result = inference(K, 2.0 * y01 - 1.0, likelihood, compute_gradient=False, **options)
        self._store(kernel, likelihood, X_train, y01, classes, 0.0, result, None,
                    data_fingerprint(X_train, y01))
        return self

    def _store(self, kernel, likelihood, X_train, y01, classes, jitter, result, optimum,
               key):
        self.kernel_ = kernel
        self.likelihood_ = likelihood
        self.X_train_ = X_train
        self.y_train_ = y01
        self.classes_ = classes
        self.jitter_ = jitter
        self.posterior_ = result.posterior
        self.log_marginal_likelihood_value_ = np.float64(result.log_evidence)
        self.inference_info_ = result.info
        self.optimizer_result_ = optimum
        self._warm_state = (key, result.state)

    def _kernel_priors(self, kernel):
        """``priors`` (dict by hyperparameter name, or a sequence aligned with the
        kernel's theta) checked and made a list aligned with the kernel's theta;
        None without priors."""
        if self.priors is None:
            return None
        names = [h.name for h in kernel.hyperparameters if not h.fixed]
        sizes = [h.n_elements for h in kernel.hyperparameters if not h.fixed]
        if isinstance(self.priors, Mapping):
            unknown = set(self.priors) - set(names)
            if unknown:
                raise ValueError(f"priors names unknown hyperparameters {sorted(unknown)}"
                                 f"; the free ones are {names}.")
            entries = self.priors.items()
            out = []
            for name, size in zip(names, sizes):
                out.extend([self.priors.get(name)] * size)
        elif (isinstance(self.priors, (Sequence, np.ndarray))
              and not isinstance(self.priors, str)):
            entries = enumerate(self.priors)
            out = list(self.priors)
            if len(out) != len(kernel.theta):
                raise ValueError(f"priors has {len(out)} entries; the kernel has "
                                 f"{len(kernel.theta)} free log-hyperparameters.")
        else:
            raise TypeError("priors must be a dict by hyperparameter name or a "
                            "sequence aligned with kernel.theta, got "
                            f"{self.priors!r}.")
        for key, prior in entries:
            if not (prior is None or callable(getattr(prior, "log_density", None))):
                raise TypeError(f"priors[{key!r}] must be None or a prior such as "
                                "gpc.LogNormalPrior or gpc.GammaPrior (an object with "
                                f"log_density(theta)), got {prior!r}.")
        return out

    def _latent_chunks(self, X, posterior):
        """``(slice, mean, var)`` of the latent function at X, block by block of
        the rows of X, so that memory stays flat in the number of test points."""
        chunk = max(1, _PREDICT_BLOCK // max(len(self.X_train_), 1))
        for start, K_cross, k_diag in cross_covariance_chunks(
                self.kernel_, self.X_train_, X, chunk):
            mean, var = posterior.latent_mean_and_variance(K_cross, k_diag,
                                                           overwrite_cross=True)
            yield slice(start, start + mean.shape[0]), mean, var

    def latent_mean_and_variance(self, X):
        """Mean and variance of the latent function at X."""
        check_is_fitted(self)
        mean, var = np.empty(len(X)), np.empty(len(X))
        for sl, mean_c, var_c in self._latent_chunks(X, self.posterior_):
            mean[sl], var[sl] = mean_c, var_c
        return mean, var

    def predict(self, X):
        """The class of largest probability (see :func:`classes_from_proba`)."""
        return classes_from_proba(self.classes_, self.predict_proba(X))

    def predict_proba(self, X):
        """Probabilities of the two classes, columns in the order of ``classes_``."""
        check_is_fitted(self)
        return self.proba_from(self.posterior_, X)

    def proba_from(self, posterior, X):
        """Class probabilities at X under another posterior of the latent function
        on the training inputs (an alternative to the fitted one, such as the
        Jaakkola-Jordan upper bound's), with the fitted kernel and likelihood."""
        p1 = np.empty(len(X))
        for sl, mean, var in self._latent_chunks(X, posterior):
            p1[sl] = self.likelihood_.predict(mean, var)
        np.clip(p1, 0.0, 1.0, out=p1)
        return np.column_stack([1.0 - p1, p1])

    def _fitted_result(self, theta):
        """The fit's result with its ``dK`` when theta is the fitted one and the
        method can give ``dK`` from the fitted posterior without running again
        (see :func:`gpc.inference.register`); else None."""
        posterior_dK = get_method(self.method).posterior_dK
        if posterior_dK is None or not np.array_equal(theta, self.kernel_.theta):
            return None
        dK = posterior_dK(self.posterior_, self.inference_info_)
        if dK is None:
            return None
        return InferenceResult(self.posterior_, self.log_marginal_likelihood_value_,
                               dK=dK)

    def log_marginal_likelihood(self, theta=None, eval_gradient=False, clone_kernel=True):
        """Log evidence at kernel hyperparameters theta (fitted ones if None)."""
        check_is_fitted(self)
        if theta is None:
            if eval_gradient:
                raise ValueError("Gradient can only be evaluated for theta!=None")
            return self.log_marginal_likelihood_value_
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != self.kernel_.theta.shape:
            raise ValueError(f"theta must have shape {self.kernel_.theta.shape}, got "
                             f"{theta.shape}.")
        kernel = self.kernel_.clone_with_theta(theta) if clone_kernel else self.kernel_
        if not clone_kernel:
            kernel.theta = theta
        objective = EvidenceObjective(
            kernel, self.X_train_, 2.0 * self.y_train_ - 1.0, self.likelihood_,
            self.method, self._inference_options(), state=self._warm_state[1],
            jitter=self.jitter_)
        if eval_gradient:
            fitted = self._fitted_result(theta)
            if fitted is not None:
                return np.float64(fitted.log_evidence), objective.gradient(fitted)
            value, grad = objective(theta)
            return np.float64(value), grad
        result, _ = objective.infer(theta, compute_gradient=False)
        return np.float64(result.log_evidence)


class GaussianProcessClassifier(ClassifierMixin, BaseEstimator):
    """Gaussian process classification with a choice of approximate inference.

    A drop-in for :class:`sklearn.gaussian_process.GaussianProcessClassifier`: the
    same parameters with the same defaults and meaning, the same fitted attributes
    and methods, plus ``method`` (the inference approximation) and ``likelihood``.
    Evidence gradients are exact (including the implicit term through the Laplace
    mode), the mode is converged tightly so the evidence is smooth, and the
    optimiser warm-starts each inference from the previous one.

    Parameters
    ----------
    kernel : kernel instance, default=None
        Any scikit-learn kernel or :mod:`gpc.kernels` kernel. None means
        ``1.0 * RBF(1.0)`` with both hyperparameters fixed (scikit-learn's default).
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
        Start the inference of a refit on the same data from the previous fit's state.
        (Within one fit, evaluations are always warm-started.)
    copy_X_train : bool, default=True
        Store a copy of the training inputs.
    random_state : int, RandomState instance or None, default=None
        Seeds the optimiser's random restarts.
    multi_class : {"one_vs_rest", "one_vs_one"}, default="one_vs_rest"
        How more than two classes are handled.
    n_jobs : int, default=None
        Parallel jobs for the multi-class binary problems.
    method : str, default="laplace"
        Approximate inference method: "laplace", "ep", "pl" (posterior
        linearisation), "mean_field" (variational, its free energy maximised as
        the evidence; it learns hyperparameters only with a white-noise term in
        the kernel, and raises ValueError otherwise), "naive_mean_field", "adf"
        (Bayesian online learning: one sweep, no evidence gradient, so use it
        with ``optimizer=None`` or fixed hyperparameters; :meth:`partial_fit`
        adds data), "vb" (the Jaakkola-Jordan lower bound for the logit, a
        curvature lower bound for the probit; the logit's upper bound is
        :class:`gpc.inference.variational.UpperBound`) (see
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
        The binary classifier, or the one-vs-rest / one-vs-one wrapper around it.
    kernel_ : kernel
        The kernel with the fitted hyperparameters (a CompoundKernel for more than two
        classes).
    log_marginal_likelihood_value_ : float
        Log evidence at the fitted hyperparameters (mean over the binary problems for
        more than two classes).
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
    """

    def __init__(self, kernel=None, *, optimizer="fmin_l_bfgs_b", n_restarts_optimizer=0,
                 max_iter_predict=100, warm_start=False, copy_X_train=True,
                 random_state=None, multi_class="one_vs_rest", n_jobs=None,
                 method=_DEFAULT_METHOD, likelihood="logit", inference_options=None,
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
        self.method = method
        self.likelihood = likelihood
        self.inference_options = inference_options
        self.priors = priors
        self.verbose = verbose

    def _vector_input(self):
        return self.kernel is None or self.kernel.requires_vector_input

    def _validation_kwargs(self):
        return (dict(ensure_2d=True, dtype="numeric") if self._vector_input()
                else dict(ensure_2d=False, dtype=None))

    def _validate_X(self, X):
        return validate_data(self, X, reset=False, **self._validation_kwargs())

    def fit(self, X, y):
        """Fit the Gaussian process classifier.

        Nothing on the estimator changes unless fitting succeeds.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object
            Training inputs.
        y : array-like of shape (n_samples,)
            Target classes (any two or more labels).

        Returns
        -------
        self : object
        """
        self._check_params()
        def run():
            X_, y_ = validate_data(self, X, y, multi_output=False,
                                   **self._validation_kwargs())
            classes = np.unique(y_)
            if classes.size == 1:
                raise ValueError(
                    "GaussianProcessClassifier requires 2 or more distinct classes; got "
                    f"1 class (only class {classes[0]} is present)")
            binary = self._binary()
            if self.warm_start and getattr(self, "base_estimator_", None) is not None \
                    and classes.size == 2 and hasattr(self.base_estimator_, "_warm_state"):
                binary._warm_state = self.base_estimator_._warm_state
            base = self._wrap(binary, classes)
            base.fit(X_, y_)
            return base, classes

        return self._fit_keeping_state(run)

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
        self._check_params()
        first = getattr(self, "base_estimator_", None) is None

        def run():
            X_, y_ = validate_data(self, X, y, multi_output=False, reset=first,
                                   **self._validation_kwargs())
            if first:
                if classes is None:
                    raise ValueError("classes must be passed on the first call to "
                                     "partial_fit.")
                all_classes = np.unique(classes)
                if all_classes.size < 2:
                    raise ValueError("partial_fit needs at least 2 classes, got "
                                     f"{all_classes}.")
                base = self._wrap(self._binary(), all_classes)
            else:
                all_classes = self.classes_
                if classes is not None and not np.array_equal(np.unique(classes),
                                                              all_classes):
                    raise ValueError(f"classes {np.unique(classes)} differ from those "
                                     f"of the first call, {all_classes}.")
                base = self.base_estimator_
                if all_classes.size > 2:
                    # The wrapper updates its binary problems one after another: work
                    # on a copy, so that a failure leaves none of them changed.
                    base = copy.deepcopy(base)
            base.partial_fit(X_, y_, classes=all_classes)
            return base, all_classes

        return self._fit_keeping_state(run)

    def _check_params(self):
        """Check every parameter before the data (those of the binary problems by
        their estimator's check)."""
        if isinstance(self.kernel, CompoundKernel):
            raise ValueError("kernel cannot be a CompoundKernel")
        if self.multi_class not in ("one_vs_rest", "one_vs_one"):
            raise ValueError(f"Unknown multi-class mode {self.multi_class!r}; use "
                             "'one_vs_rest' or 'one_vs_one'.")
        self._binary()._setup()

    def _binary(self):
        return _BinaryGaussianProcessClassifier(
            kernel=self.kernel, optimizer=self.optimizer,
            n_restarts_optimizer=self.n_restarts_optimizer,
            max_iter_predict=self.max_iter_predict, warm_start=self.warm_start,
            copy_X_train=self.copy_X_train, random_state=self.random_state,
            method=self.method, likelihood=self.likelihood,
            inference_options=self.inference_options, priors=self.priors,
            verbose=self.verbose)

    def _wrap(self, binary, classes):
        if classes.size == 2:
            return binary
        wrapper = (OneVsRestClassifier if self.multi_class == "one_vs_rest"
                   else OneVsOneClassifier)
        return wrapper(binary, n_jobs=self.n_jobs)

    def _fit_keeping_state(self, run):
        """Run ``run() -> (base, classes)`` and set the fitted attributes; on any
        exception restore what validate_data changed (n_features_in_, ...)."""
        saved = {k: self.__dict__[k] for k in ("n_features_in_", "feature_names_in_")
                 if k in self.__dict__}
        try:
            base, classes = run()
            if classes.size > 2:
                lml = np.mean([e.log_marginal_likelihood() for e in base.estimators_])
            else:
                lml = base.log_marginal_likelihood()
        except BaseException:
            for k in ("n_features_in_", "feature_names_in_"):
                self.__dict__.pop(k, None)
            self.__dict__.update(saved)
            raise
        self.base_estimator_ = base
        self.classes_ = classes
        self.n_classes_ = classes.size
        self.log_marginal_likelihood_value_ = lml
        return self

    def predict(self, X):
        """Predict class labels for X.

        The class of largest probability in :meth:`predict_proba`: with two
        classes ``classes_[1]`` exactly where ``predict_proba(X)[:, 1] >= 0.5``
        (a tie goes to ``classes_[1]``, as scikit-learn's tests require); with
        ``multi_class="one_vs_one"`` the pairwise classifiers' vote.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object

        Returns
        -------
        C : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        if self.n_classes_ > 2 and self.multi_class == "one_vs_one":
            return self.base_estimator_.predict(self._validate_X(X))
        return classes_from_proba(self.classes_, self.predict_proba(X))

    def predict_proba(self, X):
        """Class probabilities for X, columns in the order of ``classes_``.

        A warning (:class:`UserWarning`) says when every input gets tied class
        probabilities, so that the model predicts nothing and ``predict``'s
        classes follow from ties (see Notes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object

        Returns
        -------
        C : ndarray of shape (n_samples, n_classes)

        Notes
        -----
        Tied probabilities everywhere (1/2 with two classes, 1/C with C classes
        one-vs-rest) mean that the kernel gives these inputs no covariance with the
        training data, typically because the inputs are not scaled (say, raw
        pixel values against a unit length scale: standardise them, e.g. with
        :class:`sklearn.preprocessing.StandardScaler`) or because evidence
        maximisation ended at a hyperparameter bound (the warning names them).
        """
        check_is_fitted(self)
        if self.n_classes_ > 2 and self.multi_class == "one_vs_one":
            raise ValueError("one_vs_one multi-class mode does not support predicting "
                             "probability estimates. Use one_vs_rest mode instead.")
        proba = self.base_estimator_.predict_proba(self._validate_X(X))
        self._warn_if_all_tied(proba)
        return proba

    def _warn_if_all_tied(self, proba):
        """Warn when every row of ``proba`` (two or more) has its classes tied."""
        if proba.shape[0] < 2:
            return
        top2 = np.sort(proba, axis=1)[:, -2:]
        if np.any(top2[:, 1] - top2[:, 0] > _TIE_TOL):
            return
        estimators = ([self.base_estimator_] if self.n_classes_ == 2
                      else self.base_estimator_.estimators_)
        at_bounds = sorted({name for e in estimators for name in _at_bounds(e)})
        where = (f"; evidence maximisation ended at the bounds of {at_bounds}"
                 if at_bounds else "")
        warnings.warn(
            f"All {proba.shape[0]} inputs get tied class probabilities (to within "
            f"{_TIE_TOL:g}), so the model predicts nothing for them and predict's "
            f"classes follow from ties{where}. The kernel gives these inputs no "
            "covariance with the training data: scale the inputs (e.g. "
            "sklearn.preprocessing.StandardScaler) or widen the bounds.",
            UserWarning, stacklevel=3)

    @property
    def kernel_(self):
        """The fitted kernel (a CompoundKernel of the binary ones for > 2 classes)."""
        if self.n_classes_ == 2:
            return self.base_estimator_.kernel_
        return CompoundKernel([e.kernel_ for e in self.base_estimator_.estimators_])

    def log_marginal_likelihood(self, theta=None, eval_gradient=False, clone_kernel=True):
        """Log evidence of kernel hyperparameters theta for the training data.

        Parameters
        ----------
        theta : array-like of shape (n_kernel_params,), default=None
            Log-hyperparameters; None returns the value at the fitted ones. For more
            than two classes, theta may be one kernel's (shared by all binary
            problems) or the compound kernel's, and the mean is returned.
        eval_gradient : bool, default=False
            Also return the gradient (binary problems only).
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
        if self.n_classes_ == 2:
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

    def latent_mean_and_variance(self, X):
        """Mean and variance of the latent function at X (binary problems only).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object

        Returns
        -------
        latent_mean, latent_var : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        if self.n_classes_ > 2:
            raise ValueError("Returning the mean and variance of the latent function f "
                             "is only supported for binary classification, received "
                             f"{self.n_classes_} classes.")
        return self.base_estimator_.latent_mean_and_variance(self._validate_X(X))
