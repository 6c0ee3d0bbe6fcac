"""What :func:`gpc.infer` does with its options for every method of the registry
(issue 26): an option of the wrong name or type is refused with an error that
names it."""

import inspect

import pytest

import gpc
from gpc.inference import get_method

from _sites import data, se

METHODS = gpc.available_methods()


def _problem(n=12):
    X, y = data(n, 3)
    return se(X, 1.0, 2.0), y


@pytest.mark.parametrize("method", METHODS)
def test_an_option_of_the_wrong_type_or_name_is_named(method):
    K, y = _problem()
    params = inspect.signature(get_method(method)).parameters.values()
    # Every method has an option with a number as default (tol, max_iter, ...).
    name = next(p.name for p in params if p.kind == p.KEYWORD_ONLY
                and isinstance(p.default, (int, float))
                and not isinstance(p.default, bool))
    with pytest.raises(TypeError, match=f"option '{name}' of method='{method}'"):
        gpc.infer(K, y, method=method, **{name: "abc"})
    with pytest.raises(ValueError, match=f"'nope' is not an option of "
                                         f"method='{method}'"):
        gpc.infer(K, y, method=method, nope=1)
