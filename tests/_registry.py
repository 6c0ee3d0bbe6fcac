"""The method x schedule x likelihood combinations, from gpc's registries: a new
method or likelihood is covered by every harness that uses these."""

import inspect

import numpy as np

import gpc
from gpc.inference import get_method
from gpc.likelihoods._base import _REGISTRY as LIKELIHOOD_REGISTRY

#: Every likelihood of one latent value that :func:`gpc.get_likelihood` knows by
#: name (the multinomial model's softmax has its own tests).
LIKELIHOODS = sorted(k for k, cls in LIKELIHOOD_REGISTRY.items() if not cls.multinomial)


def variants(method):
    """The schedules of a method: ``[None]``, or its ``updates`` values."""
    param = inspect.signature(get_method(method)).parameters.get("updates")
    return [None] if param is None else ["sequential", "parallel"]


def options(updates):
    """The inference options of a schedule."""
    return {} if updates is None else {"updates": updates}


def support(method, updates, likelihood):
    """None if the pair runs on a trivial problem, else the ValueError's message."""
    try:
        gpc.infer(np.eye(2), np.array([-1.0, 1.0]), method=method,
                  likelihood=likelihood, **options(updates))
    except ValueError as exc:
        return str(exc)
    return None


COMBINATIONS = [(m, u, lik) for m in gpc.available_methods() for u in variants(m)
                for lik in LIKELIHOODS]
SUPPORTED = [c for c in COMBINATIONS if support(*c) is None]


#: scikit-learn's estimator checks that fit with ``sample_weight``.
_SAMPLE_WEIGHT_CHECKS = (
    "check_sample_weights_pandas_series", "check_sample_weights_not_an_array",
    "check_sample_weights_list", "check_all_zero_sample_weights_error",
    "check_sample_weights_shape", "check_sample_weights_not_overwritten",
    "check_sample_weight_equivalence_on_dense_data",
    "check_classifiers_one_label_sample_weights")


def expected_failed_checks(weighted, class_weight=True):
    """The ``expected_failed_checks`` of scikit-learn's ``check_estimator`` for
    a classifier whose fit takes sample weights (``weighted``) or refuses them
    (ValueError), and that has a ``class_weight`` parameter or not."""
    # The class-weight check fits its classes' blobs (standard deviation 20)
    # with weights 1000 and 1e-4 and wants 87 % of the test points given the
    # first class; the default kernel, scikit-learn's fixed RBF of length 1,
    # sees no training point near most of them and gives them the prior
    # probabilities (tied), whatever the weights.  With the kernel's
    # hyperparameters learnt, every test point goes to the first class.
    expected = {"check_class_weight_classifiers": "the fixed default kernel "
                "predicts ties far from the data"} if class_weight else {}
    if not weighted:
        reason = "the estimator refuses sample weights (ValueError)"
        expected.update(dict.fromkeys(_SAMPLE_WEIGHT_CHECKS, reason))
        if class_weight:
            expected["check_class_weight_classifiers"] = reason
    return expected
