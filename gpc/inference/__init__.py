"""Approximate inference methods, all behind :func:`gpc.infer`."""

import importlib
import pkgutil

from ._base import (INFO_KEYS, InferenceMethod, InferenceResult, NumericalError,
                    available_methods, check_kernel_psd, check_options,
                    checked_kernel_matrix, get_method, infer, register, unregister,
                    with_jitter)
# Every public module of this package is imported here, so that the methods it
# registers are available: adding a method is adding a module (CONTRIBUTING.md).
for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")
del _module

__all__ = ["INFO_KEYS", "InferenceMethod", "InferenceResult", "NumericalError",
           "available_methods", "check_kernel_psd", "check_options", "checked_kernel_matrix", "get_method",
           "infer", "register", "unregister", "with_jitter"]
