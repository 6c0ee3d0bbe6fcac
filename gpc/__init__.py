"""gpc: Gaussian process classification with approximate inference.

The K-level API (:func:`infer`) takes a covariance matrix and labels and returns the
posterior, the log evidence and its derivative with respect to K; the estimator
(:class:`GaussianProcessClassifier`) is a drop-in for scikit-learn's.
"""

import os as _os


def _refuse_source_tree():
    """Raise an ImportError that explains itself when this is the source folder.

    The compiled extensions (``gpc._kern`` and the others) exist only in a built
    package; a plain ``gpc/`` folder of the repository, found first on ``sys.path``
    (Python run from the repository root), would otherwise fail on its first
    compiled import with a bare ``ModuleNotFoundError``.  The installed package has
    no ``meson.build``, so there this costs one ``stat``; an editable install finds
    the extensions and passes.
    """
    here = _os.path.dirname(_os.path.abspath(__file__))
    if not _os.path.exists(_os.path.join(here, "meson.build")):
        return
    from importlib.util import find_spec

    if find_spec(__name__ + "._kern") is not None:
        return
    from importlib import metadata

    try:
        where = metadata.distribution(__name__).locate_file(__name__)
        advice = (f"An installed gpc is at {where}: run Python from another "
                  "directory to use it.")
    except metadata.PackageNotFoundError:
        advice = ("No gpc is installed in this environment: install it with "
                  f"`python -m pip install .` (from {_os.path.dirname(here)}), then "
                  "run Python from another directory.")
    raise ImportError(
        f"gpc was imported from its source tree ({here}) instead of the installed "
        "package, which holds the compiled extensions (gpc._kern and the others, "
        "built when the package is installed): the source folder shadows the "
        "installed package when Python runs from the repository root or has that "
        f"folder first on sys.path. {advice}", name=__name__, path=here)


_refuse_source_tree()
del _os, _refuse_source_tree

from . import kernels, likelihoods
from ._threads import thread_limit
from ._validation import NotPositiveDefiniteError
from .classifier import GaussianProcessClassifier
from .inference import InferenceResult, NumericalError, available_methods, infer
from .likelihoods import get_likelihood
from .optimize import GammaPrior, LogNormalPrior, maximize_evidence
from .posterior import ExplicitPosterior, SitePosterior
from .sparse import SparseGPClassifier, SparseGPRegressor

from ._version import version as __version__

__all__ = [
    "GammaPrior",
    "GaussianProcessClassifier",
    "InferenceResult",
    "LogNormalPrior",
    "NotPositiveDefiniteError",
    "NumericalError",
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
    "thread_limit",
]
