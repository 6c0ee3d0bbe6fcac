"""gpc: Gaussian process classification with approximate inference.

The K-level API (:func:`infer`) takes a covariance matrix and labels and returns the
posterior, the log evidence and its derivative with respect to K; the estimator
(:class:`GaussianProcessClassifier`) is a drop-in for scikit-learn's.
"""

from . import kernels, likelihoods
from ._validation import NotPositiveDefiniteError
from .classifier import GaussianProcessClassifier
from .inference import InferenceResult, available_methods, infer
from .likelihoods import get_likelihood
from .optimize import GammaPrior, LogNormalPrior, maximize_evidence
from .posterior import ExplicitPosterior, SitePosterior
from .sparse import SparseGPClassifier, SparseGPRegressor

__version__ = "0.1.0"

__all__ = [
    "GammaPrior",
    "GaussianProcessClassifier",
    "InferenceResult",
    "LogNormalPrior",
    "NotPositiveDefiniteError",
    "SitePosterior",
    "SparseGPClassifier",
    "SparseGPRegressor",
    "ExplicitPosterior",
    "available_methods",
    "get_likelihood",
    "infer",
    "kernels",
    "likelihoods",
    "maximize_evidence",
]
