"""Bounds on a fitted classifier's evidence, computed from its fitted state.

:class:`UpperBound` completes the variational method (``method="vb"``): the
classifier learns its hyperparameters by the Jaakkola-Jordan lower bound, and
this gives the upper bound at them (:func:`gpc.inference.variational.upper_bound`
on the fitted kernel matrix) and the predictive of the upper bound's posterior.
"""

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from .inference.variational import upper_bound
from .likelihoods import Logit


class UpperBound:
    """The Jaakkola-Jordan upper bound of a fitted ``method="vb"`` logit classifier.

    The classifier learns its hyperparameters by the lower bound and predicts from
    it; this gives, at those hyperparameters, the upper bound on the log evidence
    and the predictive of the upper bound's posterior.

    Parameters
    ----------
    classifier : GaussianProcessClassifier
        Fitted with ``method="vb"`` and ``likelihood="logit"`` on two classes.

    Attributes
    ----------
    log_evidence : float
        ``log Z''`` (paper eq. 38) at the classifier's fitted hyperparameters: an
        upper bound on the log evidence, as the classifier's
        ``log_marginal_likelihood_value_`` is a lower one.
    posterior : ExplicitPosterior
        The upper bound's posterior ``N(K b, K)`` on the training inputs.

    Notes
    -----
    The bound is minimised over its variational parameters by
    :func:`gpc.inference.variational.upper_bound` (one run of L-BFGS-B over n
    parameters, each step a product with K); it has no finite minimum over the signal variance, which is
    why the hyperparameters come from the lower bound.

    Examples
    --------
    >>> import numpy as np
    >>> import gpc
    >>> from gpc.bounds import UpperBound
    >>> X = np.linspace(-2, 2, 20)[:, None]
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = gpc.GaussianProcessClassifier(method="vb", likelihood="logit").fit(X, y)
    >>> upper = UpperBound(clf)
    >>> bool(clf.log_marginal_likelihood_value_ < upper.log_evidence)
    True
    >>> upper.predict_proba(X[:2]).shape
    (2, 2)
    """

    def __init__(self, classifier):
        check_is_fitted(classifier)
        method = getattr(classifier, "method", None)
        if method != "vb":
            raise ValueError("the upper bound applies to method='vb' (the "
                             f"Jaakkola-Jordan bounds), not to method={method!r}.")
        if len(classifier.classes_) != 2:
            raise ValueError("the upper bound is for binary problems only.")
        binary = classifier.base_estimator_
        if not isinstance(binary.likelihood_, Logit):
            raise ValueError("the upper bound (Jaakkola-Jordan) is for the logit "
                             f"likelihood, not {binary.likelihood_.name!r}.")
        K = np.asarray(binary.kernel_(binary.X_train_), dtype=np.float64)
        self.classifier = classifier
        y = 2.0 * binary.y_train_ - 1.0
        self.log_evidence, self.posterior, _ = upper_bound(K, y)

    def predict_proba(self, X):
        """Class probabilities for X under the upper bound's posterior, columns in
        the order of the classifier's ``classes_``."""
        clf = self.classifier
        X = validate_data(clf, X, reset=False, **clf._validation_kwargs())
        return clf.base_estimator_.proba_from(self.posterior, X)
