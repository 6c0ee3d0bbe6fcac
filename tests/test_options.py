"""What :func:`gpc.infer` does with its options and ``init`` for every method of the
registry: an option of the wrong name or type, and an ``init`` that is
not the method's state on these examples, are refused with an error that names
them; none is silently ignored."""

import inspect

import numpy as np
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


@pytest.mark.parametrize("method", METHODS)
def test_a_wrong_init_is_refused_and_the_own_state_accepted(method):
    K, y = _problem()
    res = gpc.infer(K, y, method=method, likelihood="probit")
    again = gpc.infer(K, y, method=method, likelihood="probit", init=res.state)
    assert again.log_evidence == pytest.approx(res.log_evidence, rel=1e-6)
    with pytest.raises(ValueError, match="init must be the state of a previous "
                                         f"method='{method}' result"):
        gpc.infer(K, y, method=method, likelihood="probit", init=[1, 2])
    if method == "adf":               # reads nothing from init (it has resume)
        return
    small = gpc.infer(K[:5, :5], y[:5], method=method, likelihood="probit")
    with pytest.raises(ValueError, match=r"init\['\w+'\] must be a finite array "
                                         r"of shape \(12,\)"):
        gpc.infer(K, y, method=method, likelihood="probit", init=small.state)
    other = {"unrelated": np.zeros(12)}
    with pytest.raises(ValueError, match="init must be the state"):
        gpc.infer(K, y, method=method, likelihood="probit", init=other)
