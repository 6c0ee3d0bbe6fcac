"""The multinomial (softmax) Gaussian process classifier: one joint model of C
latent functions, behind ``GaussianProcessClassifier(multi_class="multinomial")``."""

from collections.abc import Sequence

import numpy as np
from sklearn.base import clone
from sklearn.gaussian_process.kernels import CompoundKernel
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.validation import check_is_fitted

from ._binary import Setup, _BinaryGaussianProcessClassifier
from ._estimator import default_kernel, kernel_priors
from ._validation import check_full_fit_memory, multinomial_fit_arrays
from .kernels import as_kernel, cross_covariance_chunks
from .likelihoods import (Logit, MultinomialProbit, Probit, Softmax,
                          get_likelihood)

#: The joint models' likelihoods, by their binary likelihood (either is accepted).
_JOINT = {Logit: Softmax, Softmax: Softmax, Probit: MultinomialProbit,
          MultinomialProbit: MultinomialProbit}


def _joint_class(likelihood):
    """The class of the joint model's likelihood for the likelihood given."""
    return next(j for b, j in _JOINT.items() if isinstance(likelihood, b))


class _MultinomialGaussianProcessClassifier(_BinaryGaussianProcessClassifier):
    """The joint model of every class, softmax or multinomial probit (used by
    :class:`GaussianProcessClassifier` with ``multi_class="multinomial"``);
    ``kernel`` may be a list, one per class."""

    def _model_likelihood(self):
        """The joint likelihood class the parameters describe (it selects the
        multinomial model's variant of the inference method)."""
        return _joint_class(get_likelihood(self.likelihood))

    def _setup(self):
        """Check the parameters; return the model they describe (a
        :class:`gpc._binary.Setup` with the fresh kernels, one when shared)."""
        kernel = self.kernel
        shared = kernel is None or not isinstance(kernel, Sequence)
        if shared:
            kernels = [default_kernel() if kernel is None else clone(as_kernel(kernel))]
        else:
            if len(kernel) < 2:
                raise ValueError("kernel must be one kernel or a list of one kernel per "
                                 f"class (at least 2), got {len(kernel)}.")
            kernels = [clone(as_kernel(k)) for k in kernel]
        likelihood = get_likelihood(self.likelihood)
        if not isinstance(likelihood, tuple(_JOINT)):
            raise ValueError("multi_class='multinomial' is the softmax model (whose two-"
                             "class form is the logit) or the multinomial probit model "
                             f"(the probit): likelihood={likelihood.name!r} is not "
                             "available for it (use 'logit' or 'probit').")
        inference, options = self._check_fit_params()
        inference.check_likelihood(self._model_likelihood()())
        return Setup(kernels, likelihood, inference, options,
                     kernel_priors(self.priors, kernels), shared=shared)

    @staticmethod
    def _joint_likelihood(likelihood, n_classes):
        """The model's likelihood of ``n_classes`` classes: the Softmax for the
        logit, the MultinomialProbit for the probit, with the other parameters
        of a joint likelihood given as ``likelihood``; ValueError when that one
        was given another number of classes."""
        joint = _joint_class(likelihood)
        if not isinstance(likelihood, joint):
            return joint(n_classes=n_classes)
        if likelihood.n_classes not in (None, n_classes):
            raise ValueError(f"likelihood is {type(likelihood).__name__}(n_classes="
                             f"{likelihood.n_classes}), but y has {n_classes} classes.")
        return clone(likelihood).set_params(n_classes=n_classes)

    def fit(self, X, y, sample_weight=None):
        """Fit the joint model (all state is set only once fitting succeeded);
        ``sample_weight`` only for a method that takes weights."""
        kernels, likelihood, inference, options, priors, shared = self._checked()
        encoder = LabelEncoder()
        labels = encoder.fit_transform(y)
        classes = encoder.classes_
        if classes.size < 2:
            raise ValueError("the multinomial model requires 2 or more classes; got "
                             f"{classes.size}.")
        if not shared and len(kernels) != classes.size:
            raise ValueError(f"kernel is a list of {len(kernels)} kernels, but y has "
                             f"{classes.size} classes (one kernel per class).")
        self._check_memory(len(labels), classes.size)
        objective, result, optimum, key = self._fit_evidence(
            X, labels, self._targets(labels), kernels,
            self._joint_likelihood(likelihood, classes.size), inference, options, priors,
            sample_weight)
        self.kernels_ = objective.kernels
        self._shared = shared
        self._store_result(objective.likelihood, objective.X, labels, classes,
                           objective.jitters, result, optimum, key)
        return self

    def _check_memory(self, n, n_classes):
        """MemoryError, before any n x n allocation, when a joint fit of
        ``n_classes`` classes on n points cannot fit in memory."""
        check_full_fit_memory(n, "GaussianProcessClassifier(multi_class='multinomial')",
                              multinomial_fit_arrays(n_classes))

    @staticmethod
    def _targets(codes):
        """The inference methods' labels: the class indices themselves."""
        return codes

    def _fitted_kernel(self):
        """The fitted kernels (a list: one shared, or one per class)."""
        return self.kernels_

    @property
    def kernel_(self):
        """The fitted kernel: the shared one, or a CompoundKernel of the classes'."""
        check_is_fitted(self, "kernels_")
        return self.kernels_[0] if self._shared else CompoundKernel(self.kernels_)

    def _cross_chunks(self, X):
        """``(slice, K_cross, k_diag)`` per block of X, K_cross of shape (n, m) when
        the kernel is shared, else (C, n, m)."""
        chunk = max(1, (1 << 22) // (max(len(self.X_train_), 1) * len(self.kernels_)))
        streams = [cross_covariance_chunks(k, self.X_train_, X, chunk)
                   for k in self.kernels_]
        for blocks in zip(*streams):
            start, m = blocks[0][0], blocks[0][1].shape[1]
            if self._shared:
                yield slice(start, start + m), blocks[0][1], blocks[0][2]
            else:
                yield (slice(start, start + m), np.stack([b[1] for b in blocks]),
                       np.stack([b[2] for b in blocks]))

    def latent_mean_and_variance(self, X):
        """Latent means (m, C) and covariances (m, C, C) at X."""
        check_is_fitted(self)
        C = self.classes_.size
        mean, cov = np.empty((len(X), C)), np.empty((len(X), C, C))
        for sl, K_cross, k_diag in self._cross_chunks(X):
            mean[sl], cov[sl] = self.posterior_.latent_mean_and_variance(K_cross,
                                                                         k_diag)
        return mean, cov

    def predict_proba(self, X):
        """Class probabilities (m, C), columns in the order of ``classes_``."""
        check_is_fitted(self)
        return self.likelihood_.predict(*self.latent_mean_and_variance(X))
