"""gpc as the inference engine of other Gaussian process libraries.

Each backend is a module of its own, imported on demand, that needs the library it
serves (an optional extra of gpc's):

* :mod:`gpc.backends.gpy`: an ``inference_method`` for GPy's models
  (``pip install "gpc[gpy]"``).

Anything else reaches gpc through :func:`gpc.infer`, which takes a covariance
matrix and labels and returns the posterior, the log evidence and its derivative
with respect to the covariance matrix.
"""
