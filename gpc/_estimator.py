"""The skeleton that gpc's classifiers share.

:class:`ClassifierFront` is the public side of a classifier: it checks the
parameters, validates the data, finds the classes, fits a binary (or joint)
estimator directly or through scikit-learn's one-vs-rest / one-vs-one wrapper,
restores the estimator's state when a fit fails (:func:`fit_atomically`), and
predicts from the fitted probabilities.  :class:`gpc.GaussianProcessClassifier`
and :class:`gpc.SparseGPClassifier` are fronts over their binary estimators.
The helpers here (defaults, priors, ties) are shared by every estimator.
"""

import copy
import warnings
from collections.abc import Mapping, Sequence
from contextlib import contextmanager

import numpy as np
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.gaussian_process.kernels import RBF, CompoundKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

#: Every estimator's default likelihood (scikit-learn's model).
DEFAULT_LIKELIHOOD = "logit"
#: Class probabilities closer than this count as tied (see ``warn_if_all_tied``).
_TIE_TOL = 1e-12
#: The multi-class modes, and what each wraps a binary estimator in.
_WRAPPERS = {"one_vs_rest": OneVsRestClassifier, "one_vs_one": OneVsOneClassifier}


@contextmanager
def fit_atomically(estimator):
    """Run the body (a fit) and, if it raises, put back every attribute of
    ``estimator`` as it was before: a failed or interrupted fit changes nothing
    (scikit-learn's ``validate_data`` sets ``n_features_in_`` before the fit
    proper starts)."""
    saved = dict(estimator.__dict__)
    try:
        yield
    except BaseException:
        estimator.__dict__.clear()
        estimator.__dict__.update(saved)
        raise


def check_optimizer(optimizer, callables=True):
    """Refuse an optimizer other than "fmin_l_bfgs_b", None or (when
    ``callables``) a callable with scikit-learn's signature."""
    if optimizer is None or (isinstance(optimizer, str) and optimizer == "fmin_l_bfgs_b"):
        return
    if callables and callable(optimizer):
        return
    allowed = "'fmin_l_bfgs_b', a callable or None" if callables else \
        "'fmin_l_bfgs_b' or None"
    raise ValueError(f"optimizer must be {allowed}, got {optimizer!r}.")


def classes_from_proba(classes, proba):
    """``predict`` from ``predict_proba``: with two classes ``classes[1]`` exactly
    where ``proba[:, 1] >= 0.5`` (a tie goes to ``classes[1]``, as scikit-learn's
    tests require), with more the class of largest probability."""
    if len(classes) == 2:
        return np.where(proba[:, 1] >= 0.5, classes[1], classes[0])
    return classes[np.argmax(proba, axis=1)]


def warn_if_all_tied(proba, at_bounds=(), stacklevel=3):
    """Warn when every row of ``proba`` (two or more) has its two largest class
    probabilities tied; ``at_bounds``: the learnt hyperparameters that ended
    at a bound, named in the warning; ``stacklevel``: as the caller would give
    it to ``warnings.warn``."""
    if proba.shape[0] < 2:
        return
    top2 = np.sort(proba, axis=1)[:, -2:]
    if np.any(top2[:, 1] - top2[:, 0] > _TIE_TOL):
        return
    where = (f"; evidence maximisation ended at the bounds of {sorted(at_bounds)}"
             if at_bounds else "")
    warnings.warn(
        f"All {proba.shape[0]} inputs get tied class probabilities (to within "
        f"{_TIE_TOL:g}), so the model predicts nothing for them and predict's "
        f"classes follow from ties{where}. The kernel gives these inputs no "
        "covariance with the training data: scale the inputs (e.g. "
        "sklearn.preprocessing.StandardScaler) or widen the bounds.",
        UserWarning, stacklevel=stacklevel + 1)


def at_bounds(estimator, atol=1e-6):
    """Names of the learnt kernel hyperparameters of a fitted binary (or joint)
    estimator that ended at one of their bounds (none when it learns
    nothing)."""
    if getattr(estimator, "optimizer", None) is None:
        return []
    return kernel_at_bounds(estimator.kernel_, atol)


def kernel_at_bounds(kernel, atol=1e-6):
    """Names of a kernel's free hyperparameters at one of their bounds."""
    if not kernel.n_dims:
        return []
    names = [h.name if h.n_elements == 1 else f"{h.name}[{k}]"
             for h in kernel.hyperparameters if not h.fixed
             for k in range(h.n_elements)]
    theta, bounds = kernel.theta, kernel.bounds
    close = (np.isclose(theta, bounds[:, 0], rtol=0.0, atol=atol)
             | np.isclose(theta, bounds[:, 1], rtol=0.0, atol=atol))
    return [name for name, c in zip(names, close) if c]


def kernel_priors(priors, kernels):
    """``priors`` (dict by hyperparameter name, or a sequence aligned with the
    kernels' thetas one after another) checked and made a list aligned with
    them; None without priors.  A name given in the dict applies to that
    hyperparameter of every kernel."""
    if priors is None:
        return None
    free = [h for k in kernels for h in k.hyperparameters if not h.fixed]
    names = [h.name for h in free]
    n_theta = sum(len(k.theta) for k in kernels)
    if isinstance(priors, Mapping):
        unknown = set(priors) - set(names)
        if unknown:
            raise ValueError(f"priors names unknown hyperparameters {sorted(unknown)}"
                             f"; the free ones are {sorted(set(names))}.")
        entries = priors.items()
        out = [priors.get(h.name) for h in free for _ in range(h.n_elements)]
    elif isinstance(priors, (Sequence, np.ndarray)) and not isinstance(priors, str):
        entries = enumerate(priors)
        out = list(priors)
        if len(out) != n_theta:
            raise ValueError(f"priors has {len(out)} entries; the kernel has "
                             f"{n_theta} free log-hyperparameters.")
    else:
        raise TypeError("priors must be a dict by hyperparameter name or a "
                        f"sequence aligned with kernel.theta, got {priors!r}.")
    for key, prior in entries:
        if not (prior is None or callable(getattr(prior, "log_density", None))):
            raise TypeError(f"priors[{key!r}] must be None or a prior such as "
                            "gpc.LogNormalPrior or gpc.GammaPrior (an object with "
                            f"log_density(theta)), got {prior!r}.")
    return out


def default_kernel():
    """The kernel of every estimator given none: ``1.0 * RBF(1.0)`` with both
    hyperparameters fixed (scikit-learn's default)."""
    return C(1.0, constant_value_bounds="fixed") * RBF(1.0, length_scale_bounds="fixed")


class ClassifierFront(ClassifierMixin, BaseEstimator):
    """The public side of a classifier over a binary (or joint multi-class)
    estimator, which it fits directly for two classes and through the
    ``multi_class`` wrapper for more.

    A subclass gives:

    * ``_binary()``: the unfitted binary estimator its parameters describe;
    * ``_check_params()``: its parameter checks before any data, returning that
      binary estimator (checked, to be fitted);
    * optionally ``_multinomial()`` (the binary estimator is a joint model of
      every class: no wrapper), ``_validation_kwargs()`` and ``_warm(binary)``
      (give a new binary estimator, and so the wrapper's clones of it, the
      states of the fitted ones, for ``warm_start``).

    Fitted attributes: ``base_estimator_`` (the binary estimator, the joint
    model or the wrapper), ``classes_``, ``n_classes_`` and
    ``log_marginal_likelihood_value_`` (the mean over the binary problems of a
    wrapper).
    """

    def _multinomial(self):
        return False

    def _validation_kwargs(self):
        return {}

    def _warm(self, binary):
        """A binary estimator to fit, given the state of the fitted one."""
        return binary

    def _validate_X(self, X):
        return validate_data(self, X, reset=False, **self._validation_kwargs())

    def _check_multi_class(self, allowed):
        if self.multi_class not in allowed:
            raise ValueError(f"Unknown multi-class mode {self.multi_class!r}; use "
                             + ", ".join(repr(a) for a in allowed) + ".")

    def fit(self, X, y, sample_weight=None):
        """Fit the classifier (nothing on the estimator changes unless it
        succeeds).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object
            Training inputs.
        y : array-like of shape (n_samples,)
            Target classes (any two or more labels).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the examples, multiplied by those of
            ``class_weight``: the model's likelihood is then
            ``prod_i p(y_i | f_i)^(w_i)``, so that a zero weight drops an
            example and an integer weight counts it as that many copies (see
            :func:`gpc.infer`).  Only for a method that takes weights
            (``gpc.inference.get_method(name).accepts_sample_weight``); the
            others raise ValueError.

        Returns
        -------
        self : object
        """
        binary = self._check_params()
        with fit_atomically(self):
            X_, y_ = validate_data(self, X, y, multi_output=False,
                                   **self._validation_kwargs())
            check_classification_targets(y_)
            classes = np.unique(y_)
            if classes.size == 1:
                raise ValueError(
                    f"{type(self).__name__} requires 2 or more distinct classes; got "
                    f"1 class (only class {classes[0]} is present)")
            weights = self._fit_weights(binary, y_, sample_weight)
            base = self._wrap(self._warm(binary), classes)
            self._fit_base(base, X_, y_, weights)
            # A wrapper's template keeps no states of the previous fit.
            binary.__dict__.pop("_warm_starts", None)
            self._set_fitted(base, classes)
        return self

    def _fit_weights(self, binary, y, sample_weight):
        """The examples' weights: ``sample_weight`` times those of the
        ``class_weight`` parameter (if the estimator has one), as scikit-learn's
        classifiers take them; None when neither is given."""
        class_weight = getattr(self, "class_weight", None)
        if sample_weight is None and class_weight is None:
            return None
        method = getattr(binary, "_weighted_method", lambda: None)()
        if method is None:
            raise ValueError(f"{type(self).__name__} does not take sample weights "
                             "(sample_weight or class_weight) yet; "
                             "gpc.GaussianProcessClassifier does.")
        weights = np.ones(len(y)) if sample_weight is None else \
            method.check_sample_weight(sample_weight, len(y))
        if class_weight is not None:
            weights = weights * compute_sample_weight(class_weight, y)
        return method.check_sample_weight(weights, len(y))

    @staticmethod
    def _fit_base(base, X, y, weights):
        """Fit the binary estimator, joint model or wrapper, with the weights
        if any (a wrapper hands each binary problem its examples' weights)."""
        if weights is None:
            base.fit(X, y)
        elif not isinstance(base, tuple(_WRAPPERS.values())):
            base.fit(X, y, sample_weight=weights)
        else:
            with config_context(enable_metadata_routing=True):
                base.estimator.set_fit_request(sample_weight=True)
                base.fit(X, y, sample_weight=weights)

    def partial_fit(self, X, y, classes=None):
        """Add examples to the fit without refitting: each is presented once,
        after those seen before, with the hyperparameters kept (nothing on the
        estimator changes unless the call succeeds).

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
        """
        first = getattr(self, "base_estimator_", None) is None
        # A later call updates the fitted estimator, which checks itself: no
        # binary estimator is built to be thrown away.
        binary = self._check_params() if first else None
        with fit_atomically(self):
            X_, y_ = validate_data(self, X, y, multi_output=False, reset=first,
                                   **self._validation_kwargs())
            all_classes = self._stream_classes(classes, first)
            unknown = np.setdiff1d(y_, all_classes)
            if unknown.size:
                raise ValueError(f"y contains labels {unknown} outside the classes "
                                 f"{all_classes}.")
            if first:
                base = self._wrap(binary, all_classes)
            elif self._is_wrapper():
                # A wrapper updates its binary problems one after another: a
                # copy is updated, so that a failure leaves none of them changed.
                base = copy.deepcopy(self.base_estimator_)
            else:
                base = self.base_estimator_     # it sets its state at its end
            base.partial_fit(X_, y_, classes=all_classes)
            self._set_fitted(base, all_classes)
        return self

    def _stream_classes(self, classes, first):
        """The classes of a stream: given on the first call, checked after."""
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call to "
                                 "partial_fit.")
            all_classes = np.unique(classes)
            if all_classes.size < 2:
                raise ValueError("partial_fit needs at least 2 classes, got "
                                 f"{all_classes}.")
            return all_classes
        if classes is not None and not np.array_equal(np.unique(classes),
                                                      self.classes_):
            raise ValueError(f"classes {np.unique(classes)} differ from those of the "
                             f"first call, {self.classes_}.")
        return self.classes_

    def _wrap(self, binary, classes):
        """The binary estimator itself (two classes, or a joint model), or the
        ``multi_class`` wrapper of it."""
        if classes.size == 2 or self._multinomial():
            return binary
        # The wrapper fits clones (parameters only): the template keeps no
        # checked model of its own.
        binary.__dict__.pop("_prepared", None)
        return _WRAPPERS[self.multi_class](binary, n_jobs=self.n_jobs)

    def _is_wrapper(self):
        """Whether the fitted estimator is a ``multi_class`` wrapper of binary
        ones (rather than one model of every class)."""
        return isinstance(self.base_estimator_, tuple(_WRAPPERS.values()))

    def _binaries(self):
        """The fitted binary estimators (one, or the wrapper's)."""
        if not self._is_wrapper():
            return [self.base_estimator_]
        return list(self.base_estimator_.estimators_)

    def _set_fitted(self, base, classes):
        self.base_estimator_ = base
        self.classes_ = classes
        self.n_classes_ = classes.size
        self.log_marginal_likelihood_value_ = np.mean(
            [e.log_marginal_likelihood_value_ for e in self._binaries()])

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
        warn_if_all_tied(proba, {name for e in self._binaries() for name in at_bounds(e)},
                         stacklevel=2)
        return proba

    @property
    def kernel_(self):
        """The fitted kernel: a CompoundKernel of the binary ones for > 2 classes
        one-vs-rest or one-vs-one, and of the classes' kernels for a multinomial
        model with one kernel per class."""
        if not self._is_wrapper():
            return self.base_estimator_.kernel_
        return CompoundKernel([e.kernel_ for e in self._binaries()])

    def latent_mean_and_variance(self, X):
        """Mean and variance of the latent function at X (binary problems and the
        multinomial model).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or list of object

        Returns
        -------
        latent_mean : ndarray of shape (n_samples,), or (n_samples, n_classes)
            for the multinomial model (its C latent functions)
        latent_var : ndarray of shape (n_samples,), or (n_samples, n_classes,
            n_classes) for the multinomial model (the covariance between the
            classes' latent values at each input)
        """
        check_is_fitted(self)
        if self._is_wrapper():
            raise ValueError("Returning the mean and variance of the latent function f "
                             "is only supported for binary classification, received "
                             f"{self.n_classes_} classes.")
        return self.base_estimator_.latent_mean_and_variance(self._validate_X(X))
