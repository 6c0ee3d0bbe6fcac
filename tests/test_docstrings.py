"""Every public module's docstring examples run (against the installed package)."""

import doctest
import importlib

import pytest

MODULES = ["gpc", "gpc._kern", "gpc.classifier", "gpc.datasets", "gpc.inference._base",
           "gpc.inference.laplace", "gpc.inference.pl", "gpc.kernels", "gpc.likelihoods",
           "gpc.optimize", "gpc.posterior"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE
                             | doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0


def test_public_names_are_documented():
    import gpc

    for name in gpc.__all__:
        assert getattr(gpc, name).__doc__, name
