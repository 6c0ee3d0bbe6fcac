"""Sparse Gaussian processes: classification and regression on a set of
inducing inputs (basis vectors) of bounded size, for data sets of any size.

The estimators :class:`~gpc.SparseGPClassifier` and
:class:`~gpc.SparseGPRegressor` have
two methods.  The default, ``method="ep"``, fixes the inducing inputs
(k-means++, or given) and learns the hyperparameters by maximising the sparse EP
evidence with its exact gradient.  ``method="adf"`` is the sparse online GP of
Csató & Opper (2002), which is also what ``partial_fit`` runs on streams.

The package keeps the algorithms apart from the estimators, and Dask apart from
both:

* :mod:`gpc.sparse.ep`: expectation propagation on inducing inputs
  (:func:`~gpc.sparse.sparse_ep`), its evidence and exact gradient;
* :mod:`gpc.sparse.learning`: evidence maximisation for it, in stages on
  growing random subsets of the data;
* :mod:`gpc.sparse.online`: the sparse online GP, its EP sweeps and EM step;
* :mod:`gpc.sparse.estimators` and :mod:`gpc.sparse.classifier`: the
  scikit-learn estimators;
* ``gpc.sparse._chunked`` holds the data in row chunks, and ``gpc.sparse._dask``
  runs a chunk's work on the Dask worker that holds it.
"""

from .ep import SparseEPResult, sparse_ep
from .classifier import SparseGPClassifier
from .estimators import SparseGPRegressor
from .online import SparseState, ep_sweeps, online_pass

__all__ = ["SparseEPResult", "SparseGPClassifier", "SparseGPRegressor",
           "SparseState", "ep_sweeps", "online_pass", "sparse_ep"]
