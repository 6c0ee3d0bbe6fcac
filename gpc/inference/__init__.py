"""Approximate inference methods, all behind :func:`gpc.infer`."""

from ._base import (InferenceMethod, InferenceResult, NumericalError, available_methods,
                    get_method, infer, register, unregister)
from . import ep as _ep_module  # noqa: F401  (registers "ep")
from . import laplace as _laplace_module  # noqa: F401  (registers "laplace")
from . import pl as _pl_module  # noqa: F401  (registers "pl")
from . import meanfield as _meanfield_module  # noqa: F401  (registers the mean fields)
from . import online as _online_module  # noqa: F401  (registers "adf")
from . import variational as _variational_module  # noqa: F401  (registers "vb")

__all__ = ["InferenceMethod", "InferenceResult", "NumericalError", "available_methods",
           "get_method", "infer", "register", "unregister"]
