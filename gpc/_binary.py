"""The binary Gaussian process classifier behind :class:`gpc.GaussianProcessClassifier`."""

from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ._estimator import (DEFAULT_LIKELIHOOD, check_optimizer, classes_from_proba,
                         default_kernel, kernel_priors)
from ._validation import (NotPositiveDefiniteError, check_full_fit_memory,
                          check_integer)
from .evidence import EvidenceObjective, data_fingerprint
from .inference import (InferenceResult, check_options, checked_kernel_matrix,
                        get_method)
from .kernels import (as_kernel, cross_covariance_chunks, has_white_noise,
                      kernel_matrix)
from .likelihoods import get_likelihood
from .optimize import learning_starts, maximize_evidence, median_distance

_DEFAULT_METHOD = "laplace"
#: Elements (float64) of one block of cross-covariances in prediction (32 MB).
_PREDICT_BLOCK = 1 << 22


class Setup(NamedTuple):
    """What a dense estimator's parameters describe, checked: the model to fit."""
    kernel: object          # a fresh kernel, or (multinomial) the list of them
    likelihood: object
    inference: object       # the registered method (gpc.inference.InferenceMethod)
    options: dict           # its checked options
    priors: object = None   # aligned with the kernel's theta, or None
    shared: bool = True     # multinomial: one kernel shared by the classes


def _is_online(estimator):
    """partial_fit exists only for the online method."""
    return estimator.method == "adf"


def _rows(X, rows):
    """The rows of training inputs (an array, or a list for other kernels)."""
    if isinstance(X, np.ndarray):
        return X[rows]
    return [X[i] for i in rows]


def _concatenate(a, b):
    """Training inputs followed by new ones (arrays, or lists for other kernels)."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return np.concatenate([a, b])
    return list(a) + list(b)


class _BinaryGaussianProcessClassifier(ClassifierMixin, BaseEstimator):
    """Binary GP classifier on any inference method of gpc (used by the public class).

    Parameters are those of :class:`GaussianProcessClassifier` less ``multi_class``
    and ``n_jobs``.
    """

    def _model_likelihood(self):
        """The likelihood that selects the inference method's variant: None,
        the binary one (the joint estimator gives its own)."""
        return None

    def __init__(self, kernel=None, *, optimizer="fmin_l_bfgs_b", n_restarts_optimizer=0,
                 max_iter_predict=100, warm_start=False, copy_X_train=True,
                 random_state=None, method=_DEFAULT_METHOD, likelihood=DEFAULT_LIKELIHOOD,
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

    def __sklearn_clone__(self):
        """A clone (the parameters) that starts from the same earlier states as
        this estimator: a multi-class wrapper fits clones of it."""
        twin = super().__sklearn_clone__()
        if hasattr(self, "_warm_starts"):
            twin._warm_starts = self._warm_starts
        return twin

    def _start_state(self, key):
        """The inference state that a fit on data of fingerprint ``key`` starts
        from: with ``warm_start``, the state of an earlier fit on the same data
        (``_warm_starts``, by fingerprint, which the front hands over), else None
        (a cold start)."""
        if not self.warm_start:
            return None
        return getattr(self, "_warm_starts", {}).get(key)

    def _check_memory(self, n, n_classes=2):
        """MemoryError, before any n x n allocation, when a fit on n points (of
        ``n_classes`` classes: the joint model's need grows with them) cannot
        fit in memory (see ``check_full_fit_memory``)."""
        check_full_fit_memory(n, f"GaussianProcessClassifier(method={self.method!r})")

    def _inference_options(self):
        """``inference_options`` checked, with the method's iteration limit set
        from ``max_iter_predict`` unless they give it."""
        options = check_options(self.method, self.inference_options,
                                reserved=("workspace", "resume"),
                                likelihood=self._model_likelihood())
        option = get_method(self.method, self._model_likelihood()).max_iter_option
        if option is not None:
            options.setdefault(option, self.max_iter_predict)
        return options

    def _check_fit_params(self):
        """Check the parameters that do not depend on the model; return the
        registered inference method and its checked options."""
        inference = get_method(self.method, self._model_likelihood())
        check_integer(self.max_iter_predict, "max_iter_predict", 1)
        check_integer(self.n_restarts_optimizer, "n_restarts_optimizer", 0)
        check_optimizer(self.optimizer)
        return inference, self._inference_options()

    def _checked(self):
        """:meth:`_setup`'s model: the one its front checked (once), or a fresh
        one (a clone fitted by a multi-class wrapper)."""
        return self.__dict__.pop("_prepared", None) or self._setup()

    def _setup(self):
        """Check the parameters; return the model they describe (a
        :class:`Setup`: a fresh kernel, the likelihood, the registered inference
        method, its options and the priors aligned with the kernel's theta)."""
        kernel = default_kernel() if self.kernel is None else clone(as_kernel(self.kernel))
        likelihood = get_likelihood(self.likelihood)
        if likelihood.multinomial:
            raise ValueError(f"the {likelihood.name!r} likelihood is the multinomial "
                             "model's: use multi_class='multinomial' (with "
                             "likelihood='logit' for the softmax, 'probit' for the "
                             "multinomial probit).")
        if not likelihood.is_classification:
            raise ValueError(f"likelihood {likelihood.name!r} is a regression likelihood;"
                             " GaussianProcessClassifier needs a classification one "
                             "(logit, probit, noisy_threshold, step).")
        inference, options = self._check_fit_params()
        optimizer = self.optimizer
        if (optimizer is not None and inference.learning_needs_noise
                and kernel.n_dims > 0 and not has_white_noise(kernel)):
            raise ValueError(
                f"method={self.method!r} learns a kernel's hyperparameters only when "
                "the kernel has a white-noise term: without one its free energy "
                "rises towards the noise-free limit (an unbounded signal variance, "
                "short length scales) and gives poor probabilities.  Add a noise "
                "term (e.g. + WhiteKernel(1e-2)), or learn the hyperparameters with "
                "another method (e.g. 'ep') and pass its kernel_ with optimizer=None.")
        return Setup(kernel, likelihood, inference, options,
                     kernel_priors(self.priors, [kernel]))

    def _weighted_method(self):
        """The registered inference method, whose ``check_sample_weight``
        checks the examples' weights (and refuses them if it takes none)."""
        return get_method(self.method, self._model_likelihood())

    def fit(self, X, y, sample_weight=None):
        """Fit the binary classifier (all state is set only once fitting succeeded).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object
        y : array-like of shape (n_samples,), two classes
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the examples (see
            :meth:`gpc.GaussianProcessClassifier.fit`).

        Returns
        -------
        self
        """
        kernel, likelihood, inference, options, priors, _ = self._checked()
        encoder = LabelEncoder()
        y01 = encoder.fit_transform(y)
        classes = encoder.classes_
        if classes.size > 2:
            raise ValueError(f"{type(self).__name__} supports only binary classification;"
                             f" y contains classes {classes}.")
        if classes.size == 1:
            raise ValueError(f"{type(self).__name__} requires 2 classes; got 1 class.")
        self._check_memory(len(y01))
        objective, result, optimum, key = self._fit_evidence(
            X, y01, self._targets(y01), kernel, likelihood, inference, options, priors,
            sample_weight, learn_likelihood=self.optimizer is not None)
        self._store(objective.kernel, objective.likelihood, objective.X, y01, classes,
                    objective.jitters[0], result, optimum, key)
        return self

    def _fit_evidence(self, X, codes, targets, kernel, likelihood, inference, options,
                      priors, sample_weight=None, learn_likelihood=False):
        """The fit of the model of ``kernel`` (one, or a list: the joint model's)
        to X and the method's ``targets`` (``codes``: the labels as stored),
        the examples weighted by ``sample_weight`` (None: all 1):
        evidence maximisation from the kernels' hyperparameters unless
        ``optimizer`` is None, then the inference at the optimum.  Returns
        ``(objective, result, optimum, key)``: the objective at the optimum
        (its kernel, likelihood, training inputs and jitters those of the
        fitted model), the inference's result, the optimizer's result (None
        when nothing was learnt) and the data's fingerprint."""
        X_train = np.copy(X) if self.copy_X_train else X
        key = data_fingerprint(X_train, codes)
        weights = inference.check_sample_weight(sample_weight, len(codes))
        try:
            fitted = self._learn(X_train, codes, targets, kernel, likelihood, inference,
                                 options, priors, learn_likelihood,
                                 self._start_state(key), weights)
        except NotPositiveDefiniteError as exc:
            which = f"The kernel {kernel!r}" if not isinstance(kernel, list) else \
                f"One of the kernels {kernel!r}"
            raise NotPositiveDefiniteError(
                f"{which} gives a covariance matrix that is not positive semi-definite "
                f"on the training data: {exc}") from exc
        self._sample_weight = weights
        return (*fitted, key)

    def _learn(self, X_train, codes, targets, kernel, likelihood, inference, options,
               priors, learn_likelihood, state, weights):
        """:meth:`_fit_evidence` on the training inputs to keep, from the
        warm-start ``state``, with the checked ``weights`` (or None):
        ``(objective, result, optimum)``."""
        Ks, jitters = zip(*(checked_kernel_matrix(k, X_train) for k in
                            (kernel if isinstance(kernel, list) else [kernel])))
        objective = EvidenceObjective(kernel, X_train, targets, likelihood, inference,
                                      options, state, list(jitters),
                                      learn_likelihood, K=list(Ks),
                                      sample_weight=weights)
        del Ks     # the objective's first evaluation uses them (then drops them)
        learn = self.optimizer is not None and objective.theta.shape[0] > 0
        if learn and not inference.has_gradient:
            raise ValueError(
                f"method={self.method!r} has no evidence gradient, so the optimizer "
                "cannot learn the kernel's hyperparameters: pass optimizer=None (or "
                "fix them in the kernel), e.g. with hyperparameters learnt by another "
                "method (its kernel_).")
        optimum = None
        if learn:
            if priors is not None:    # none on learnt likelihood parameters
                priors = priors + [None] * (objective.theta.shape[0] - len(priors))
            # Examples of zero weight take no part in the start and tolerance.
            kept = np.arange(len(codes)) if weights is None else \
                np.flatnonzero(weights > 0)
            optimum = maximize_evidence(
                objective, objective.theta, objective.bounds, optimizer=self.optimizer,
                n_restarts=self.n_restarts_optimizer, random_state=self.random_state,
                priors=priors, verbose=self.verbose, **learning_starts(
                    objective.kernels, objective.theta,
                    median_distance(_rows(X_train, kept)), len(kept)))
            objective.set_theta(optimum.theta)
            for k in objective.kernels:
                if k.n_dims:
                    k._check_bounds_params()  # scikit-learn's warning at a bound
        result, _ = objective.infer(compute_gradient=False)
        return objective, result, optimum

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
        kernel, likelihood, inference, options, _, _ = self._checked()
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
        options = dict(options, n_sweeps=1, resume=resume)
        result = inference(K, self._targets(y01), likelihood, compute_gradient=False,
                           **options)
        self._store(kernel, likelihood, X_train, y01, classes, 0.0, result, None,
                    data_fingerprint(X_train, y01))
        return self

    def _store(self, kernel, likelihood, X_train, y01, classes, jitter, result, optimum,
               key):
        self.kernel_ = kernel
        self._store_result(likelihood, X_train, y01, classes, jitter, result, optimum,
                           key)

    def _store_result(self, likelihood, X_train, y01, classes, jitter, result, optimum,
                      key):
        """The fitted attributes but the kernel's (shared with the multinomial
        model, whose kernels are stored apart)."""
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
        self.__dict__.pop("_warm_starts", None)   # the fit keeps only its own state

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
        method = get_method(self.method, self._model_likelihood())
        if method.posterior_dK is None or not np.array_equal(theta, self.kernel_.theta):
            return None
        dK = method.posterior_dK(self.posterior_, self.inference_info_)
        if dK is None:
            return None
        return InferenceResult(self.posterior_, self.log_marginal_likelihood_value_,
                               dK=dK)

    @staticmethod
    def _targets(codes):
        """The inference methods' labels from the stored ones: -1 and +1."""
        return 2.0 * codes - 1.0

    def _fitted_kernel(self):
        """The fitted model's kernel as the evidence objective takes it."""
        return self.kernel_

    def log_marginal_likelihood(self, theta=None, eval_gradient=False, clone_kernel=True):
        """Log evidence at kernel hyperparameters theta (fitted ones if None):
        for the joint model the shared kernel's theta, or the classes' thetas
        one after another."""
        check_is_fitted(self)
        if theta is None:
            if eval_gradient:
                raise ValueError("Gradient can only be evaluated for theta!=None")
            return self.log_marginal_likelihood_value_
        theta = np.asarray(theta, dtype=np.float64)
        kernel = self._fitted_kernel()
        objective = EvidenceObjective(
            kernel, self.X_train_, self._targets(self.y_train_), self.likelihood_,
            *self._check_fit_params(), state=self._warm_state[1], jitter=self.jitter_,
            sample_weight=getattr(self, "_sample_weight", None))
        if theta.shape != objective.theta.shape:
            raise ValueError(f"theta must have shape {objective.theta.shape}, got "
                             f"{theta.shape}.")
        if not clone_kernel:           # the fitted kernels take theta themselves
            objective.set_theta(theta)
            for mine, moved in zip(kernel if isinstance(kernel, list) else [kernel],
                                   objective.kernels):
                mine.theta = moved.theta
        if not eval_gradient:
            result, _ = objective.infer(theta, compute_gradient=False)
            return np.float64(result.log_evidence)
        fitted = self._fitted_result(theta)
        if fitted is not None:
            objective.set_theta(theta)
            return np.float64(fitted.log_evidence), objective.gradient(fitted)
        value, grad = objective(theta)
        return np.float64(value), grad
