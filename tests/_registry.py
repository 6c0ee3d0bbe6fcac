"""The method x schedule x likelihood combinations, from gpc's registries: a new
method or likelihood is covered by every harness that uses these."""

import inspect

import numpy as np

import gpc
from gpc.inference import get_method
from gpc.likelihoods._base import _REGISTRY as LIKELIHOOD_REGISTRY

#: Every likelihood of one latent value that :func:`gpc.get_likelihood` knows by
#: name (the multinomial model's softmax has its own tests).
LIKELIHOODS = sorted(k for k, cls in LIKELIHOOD_REGISTRY.items() if not cls.multinomial)


def variants(method):
    """The schedules of a method: ``[None]``, or its ``updates`` values."""
    param = inspect.signature(get_method(method)).parameters.get("updates")
    return [None] if param is None else ["sequential", "parallel"]


def options(updates):
    """The inference options of a schedule."""
    return {} if updates is None else {"updates": updates}


def support(method, updates, likelihood):
    """None if the pair runs on a trivial problem, else the ValueError's message."""
    try:
        gpc.infer(np.eye(2), np.array([-1.0, 1.0]), method=method,
                  likelihood=likelihood, **options(updates))
    except ValueError as exc:
        return str(exc)
    return None


COMBINATIONS = [(m, u, lik) for m in gpc.available_methods() for u in variants(m)
                for lik in LIKELIHOODS]
SUPPORTED = [c for c in COMBINATIONS if support(*c) is None]
