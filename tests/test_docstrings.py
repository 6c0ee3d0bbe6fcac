"""Every public module's docstring examples run (against the installed package)."""

import doctest
import importlib

import pytest

def _modules():
    """Every module of the installed package (Python and compiled)."""
    import pkgutil

    import gpc

    return ["gpc"] + sorted(m.name for m in pkgutil.walk_packages(gpc.__path__, "gpc."))


MODULES = _modules()
#: Modules that need an optional extra, and the package it brings.
NEEDS = {"gpc.backends.gpy": "GPy"}


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    if name in NEEDS:
        pytest.importorskip(NEEDS[name])
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE
                             | doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0


def test_the_modules_with_examples_are_found():
    for name in ("gpc.inference.meanfield", "gpc.inference.online", "gpc.classifier"):
        assert name in MODULES


def test_public_names_are_documented():
    import gpc

    for name in gpc.__all__:
        assert getattr(gpc, name).__doc__, name
