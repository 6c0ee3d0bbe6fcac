"""The contract every inference method implements, and the dispatcher `infer`."""

import inspect
import numbers
import reprlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Optional

import numpy as np

from .._checks import factorises
from .._validation import (NotPositiveDefiniteError, as_kernel_matrix,
                           check_full_fit_memory, is_integer, is_real,
                           multinomial_fit_arrays)
from ..kernels import is_psd_by_construction, kernel_matrix
from ..likelihoods import get_likelihood

#: The registered methods by name: the variant for likelihoods of one latent
#: value (binary problems) and the variant for those of C latent values (the
#: multinomial model), either of which may be missing.
_METHODS = {}

#: Jitter tried, relative to the mean prior variance, when a factorisation fails.
JITTER_LADDER = (1e-10, 1e-8, 1e-6, 1e-4)


class NumericalError(FloatingPointError):
    """An inference method could not reach a finite answer in floating point.

    Raised, for example, when the posterior runs into a region where the
    likelihood's moments underflow, or when a matrix the method needs is too close
    to singular.  A subclass of :class:`FloatingPointError`, so code that catches
    that catches this too.

    Parameters
    ----------
    message : str
        What went wrong, and where possible what to try instead.
    method : str
        The name of the method that raised it: one of
        :func:`gpc.available_methods`, or ``"sparse_ep"`` or ``"sparse_online"``
        for the sparse estimators.

    Attributes
    ----------
    method : str
        The name of the method that raised it.

    Examples
    --------
    >>> import gpc
    >>> try:
    ...     raise gpc.NumericalError("EP: the log evidence is not finite.", "ep")
    ... except FloatingPointError as exc:
    ...     print(exc.method, "|", exc)
    ep | EP: the log evidence is not finite.
    """

    def __init__(self, message, method):
        super().__init__(message)
        self.method = method

    def __reduce__(self):
        return type(self), (self.args[0], self.method)


#: The keys of every method's ``InferenceResult.info``, and the type of each value.
INFO_KEYS = {"method": str, "likelihood": str, "converged": bool,
             "n_iter": numbers.Integral, "jitter": numbers.Real}


@dataclass
class InferenceResult:
    """What every inference method returns.

    Attributes
    ----------
    posterior : SitePosterior
        How to predict: latent mean ``K_cross^T alpha`` and variance.
    log_evidence : float
        The method's approximation of ``log p(y | K, likelihood)``.
    dK : ndarray of shape (n, n) or None
        The total derivative of ``log_evidence`` with respect to ``K`` (symmetric);
        for a kernel parameter t, ``d log_evidence / dt = sum(dK * dK/dt)``.
        None when the gradient was not requested.
    dlik : ndarray
        Derivative of ``log_evidence`` with respect to the likelihood's parameters
        (empty when it has none).
    state : dict
        What lets the next call warm-start (pass it back as ``init``).
    info : dict
        Diagnostics.  Every method's holds the keys of ``INFO_KEYS``:
        ``method`` (str, its registered name), ``likelihood`` (str, the
        likelihood's name), ``converged`` (bool), ``n_iter`` (int, the
        iterations made, as the method counts them) and ``jitter`` (float,
        added to the diagonal of K for the factorisations to succeed).  Each
        method documents its further keys.  The posterior marginals at the
        training points are the posterior's ``marginal_mean`` and
        ``marginal_var``, not part of ``info``.
    """

    posterior: object
    log_evidence: float
    dK: np.ndarray = None
    dlik: np.ndarray = field(default_factory=lambda: np.zeros(0))
    state: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class InferenceMethod:
    """The registered description of an inference method.

    :func:`register` makes one per method, and :func:`get_method` returns it.  It
    is callable like the method's function, with the same signature.

    Attributes
    ----------
    name : str
        The name accepted by :func:`gpc.infer`'s ``method``.
    function : callable
        ``function(K, y, likelihood, *, init=None, compute_gradient=True,
        **options)``, returning an :class:`~gpc.InferenceResult`.
    options : mapping
        The method's options and their defaults: the keyword-only parameters of
        ``function`` other than ``init`` and ``compute_gradient``.
    max_iter_option : str or None
        The option that limits the method's iterations, which the estimators set
        from ``max_iter_predict``; None if it has none.
    has_gradient : bool
        Whether the method returns ``dK``, which evidence maximisation needs.
    lower_bound : bool
        Whether its log evidence is a lower bound on the exact one (a variational
        method), raised by each of its iterations.
    learning_needs_noise : bool
        Whether its evidence guides a kernel's hyperparameters only when the kernel
        has a white-noise term (the estimators then refuse to learn them without
        one).
    accepts_workspace : bool
        Whether ``function`` takes a ``workspace`` dict of buffers to reuse across
        calls (see ``gpc.inference._base.workspace_array``).
    state_keys : tuple of str
        The arrays, one value per example, that the method reads from ``init``
        (those of its result's ``state``); ``gpc.inference._base.check_init``
        checks them.
    posterior_dK : callable or None
        ``posterior_dK(posterior, info)`` returns the ``dK`` of a result computed
        without it, from that result's posterior and info alone (None when the
        result does not allow it).  The estimators use it for the evidence
        gradient at the fitted hyperparameters.
    likelihoods : tuple of classes or None
        The likelihood classes the method handles (None: every likelihood of
        one latent value, or the method checks itself).
    accepts_sample_weight : bool
        Whether ``function`` takes ``sample_weight`` (one non-negative weight
        per example: the weighted likelihood ``prod_i p(y_i | f_i)^(w_i)``).
    multinomial : bool
        Whether it is a method of the multinomial model (its likelihoods are of
        C latent values, see :class:`gpc.likelihoods.MultinomialLikelihood`):
        ``K`` is then a sequence of C matrices, ``y`` integer labels, the state
        arrays of shape (C, n) and ``dK`` of shape (C, n, n).
    """

    name: str
    function: Callable
    options: Mapping
    max_iter_option: Optional[str] = "max_iter"
    has_gradient: bool = True
    lower_bound: bool = False
    learning_needs_noise: bool = False
    accepts_workspace: bool = False
    state_keys: tuple = ()
    posterior_dK: Optional[Callable] = None
    likelihoods: Optional[tuple] = None
    accepts_sample_weight: bool = False

    def __post_init__(self):
        # inspect.signature (and so help()) follows __wrapped__ to the function.
        object.__setattr__(self, "__wrapped__", self.function)

    @property
    def multinomial(self):
        """Whether it is a method of the multinomial model."""
        return _of_multinomial(self.likelihoods)

    def check_likelihood(self, likelihood):
        """Raise ValueError unless the method handles ``likelihood``."""
        if self.likelihoods is not None and not isinstance(likelihood,
                                                           self.likelihoods):
            names = " or ".join(repr(c.name) for c in self.likelihoods)
            model = "the multinomial model" if self.multinomial else "binary problems"
            raise ValueError(f"method={self.name!r} of {model} needs the {names} "
                             f"likelihood, got {likelihood.name!r}.")

    def check_sample_weight(self, sample_weight, n):
        """``sample_weight`` as a float64 array of n finite non-negative
        numbers, not all 0 (None stays None); ValueError if the method takes
        no weights or they are not such numbers."""
        if sample_weight is None:
            return None
        if not self.accepts_sample_weight:
            takers = sorted(m.name for v in _METHODS.values() for m in v
                            if m.accepts_sample_weight
                            and m.multinomial == self.multinomial)
            model = "the multinomial model" if self.multinomial else "binary problems"
            raise ValueError(f"method={self.name!r} of {model} does not take sample "
                             "weights; " + (f"the methods that do: {takers}."
                                            if takers else "none of its methods does "
                                            "yet (one-vs-rest does)."))
        return check_sample_weight(sample_weight, n)

    def __call__(self, *args, **kwargs):
        return self.function(*args, **kwargs)

    def __repr__(self):
        return f"<inference method {self.name!r}>"


#: Parameters every method's function has besides its options.
_CALL_PARAMETERS = ("init", "compute_gradient")
#: The parameter of the functions of methods that take weights.
_WEIGHTS = "sample_weight"


def check_sample_weight(sample_weight, n):
    """``sample_weight`` as a new float64 array of n finite non-negative
    numbers with a positive one (ValueError otherwise)."""
    try:
        w = np.array(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        w = np.asarray(np.nan)
    if w.shape != (n,) or not (np.isfinite(w).all() and (w >= 0).all()):
        raise ValueError(f"sample_weight must be {n} finite non-negative numbers (one "
                         f"per example), got {reprlib.repr(sample_weight)}.")
    if not (w > 0).any():
        raise ValueError("sample_weight is zero for every example: there is nothing "
                         "to fit.")
    return w


def _signature_options(name, fn):
    """The options of ``fn`` (its keyword-only parameters but ``init`` and
    ``compute_gradient``), checking that it has the signature of a method."""
    params = inspect.signature(fn).parameters
    positional = [p.name for p in params.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if positional[:3] != ["K", "y", "likelihood"] or any(
            params.get(k) is None or params[k].kind != params[k].KEYWORD_ONLY
            for k in _CALL_PARAMETERS):
        raise TypeError(f"method {name!r}: its function must have the signature "
                        "(K, y, likelihood, *, init=None, compute_gradient=True, "
                        "**options).")
    return MappingProxyType({k: p.default for k, p in params.items()
                             if p.kind == p.KEYWORD_ONLY
                             and k not in _CALL_PARAMETERS + (_WEIGHTS,)})


def register(name, max_iter_option="max_iter", has_gradient=True, workspace=False,
             lower_bound=False, learning_needs_noise=False, state=(),
             posterior_dK=None, likelihoods=None, sample_weight=False):
    """Decorator registering an inference function under ``name``.

    The function is returned unchanged; :func:`get_method` returns the
    :class:`InferenceMethod` made from it.  See :class:`InferenceMethod` for the
    meaning of the arguments (``workspace`` sets ``accepts_workspace``, ``state``
    sets ``state_keys``, ``sample_weight`` sets ``accepts_sample_weight``: the
    function then has a keyword-only ``sample_weight=None``, given an array of
    non-negative weights checked by :func:`gpc.infer`).
    ``likelihoods`` restricts a method to some
    likelihood classes; one name may have a variant for binary problems and a
    variant for the multinomial model (``likelihoods`` of C latent values),
    which :func:`get_method` chooses by the likelihood.

    Raises
    ------
    ValueError
        If ``name`` is already registered for the same model, or
        ``max_iter_option``, ``workspace`` or ``sample_weight`` names a
        parameter that the function does not have.
    TypeError
        If the function does not have a method's signature.

    Examples
    --------
    >>> import numpy as np
    >>> from gpc.inference import InferenceResult, register, unregister
    >>> from gpc.posterior import ExplicitPosterior
    >>> @register("prior_only", max_iter_option=None, has_gradient=False)
    ... def prior_only(K, y, likelihood, *, init=None, compute_gradient=True):
    ...     n = K.shape[0]
    ...     logz = likelihood.gauss_moments(y, np.zeros(n), np.diag(K))[0]
    ...     info = {"method": "prior_only", "likelihood": likelihood.name,
    ...             "converged": True, "n_iter": 0, "jitter": 0.0}
    ...     return InferenceResult(ExplicitPosterior(np.zeros(n), np.zeros((n, n))),
    ...                            float(np.sum(logz)), info=info)
    >>> import gpc
    >>> round(gpc.infer(np.eye(2), [1, -1], method="prior_only").log_evidence, 4)
    -1.3863
    >>> unregister("prior_only")
    """

    if likelihoods is not None:
        likelihoods = tuple(likelihoods)

    def deco(fn):
        if _variant(name, _of_multinomial(likelihoods)) is not None:
            raise ValueError(f"an inference method {name!r} is already registered.")
        options = _signature_options(name, fn)
        if sample_weight and _WEIGHTS not in inspect.signature(fn).parameters:
            raise ValueError(f"method {name!r}: sample_weight=True, but its function "
                             "has no parameter 'sample_weight'.")
        for what, option in (("max_iter_option", max_iter_option),
                             ("workspace", "workspace" if workspace else None)):
            if option is not None and option not in options:
                raise ValueError(f"method {name!r}: {what} names {option!r}, which "
                                 "is not an option of its function.")
        method = InferenceMethod(
            name=name, function=fn, options=options, max_iter_option=max_iter_option,
            has_gradient=has_gradient, lower_bound=lower_bound,
            learning_needs_noise=learning_needs_noise, accepts_workspace=workspace,
            state_keys=tuple(state), posterior_dK=posterior_dK, likelihoods=likelihoods,
            accepts_sample_weight=bool(sample_weight))
        _METHODS.setdefault(name, []).append(method)
        return fn

    return deco


def _of_multinomial(likelihoods):
    """Whether a method restricted to these likelihood classes is one of the
    multinomial model."""
    return likelihoods is not None and all(c.multinomial for c in likelihoods)


def _variant(name, multinomial):
    """The method registered as ``name`` for the model, or None."""
    return next((m for m in _METHODS.get(name, ()) if m.multinomial == multinomial),
                None)


def _is_multinomial(likelihood):
    """Whether ``likelihood`` (None: a binary one) is of C latent values."""
    return likelihood is not None and get_likelihood(likelihood).multinomial


def unregister(name, likelihood=None):
    """Remove the method ``name`` for the model of ``likelihood`` (None: for
    binary problems) from the registry (ValueError if unknown)."""
    method = get_method(name, likelihood)
    _METHODS[name].remove(method)
    if not _METHODS[name]:
        del _METHODS[name]


def workspace_array(workspace, key, shape):
    """A Fortran-ordered float64 array of ``shape``: ``workspace[key]`` when the
    dict ``workspace`` holds one of that shape (with whatever the last call left in
    it), else a new zero array, stored there; without a workspace (None), a new
    zero array.

    Evidence maximisation calls a method hundreds of times at one n; its n x n
    buffers, allocated afresh each time, are handed back to the system and
    page-faulted in again at the next call.  A method given a workspace keeps
    them.  Arrays of its result may then be workspace
    buffers: they are only valid until the next call with the same workspace.
    """
    if workspace is None:
        return np.zeros(shape, order="F")
    a = workspace.get(key)
    if a is None or a.shape != tuple(shape):
        a = workspace[key] = np.zeros(shape, order="F")
    return a


def available_methods(likelihood=None):
    """Names accepted by :func:`~gpc.infer`'s ``method`` with ``likelihood``: the
    methods of its model (None: of binary problems) that handle it.

    Examples
    --------
    >>> import gpc
    >>> gpc.available_methods("multinomial_probit")
    ['ep']
    """
    multinomial = _is_multinomial(likelihood)
    lik = None if likelihood is None else get_likelihood(likelihood)
    return sorted(m.name for variants in _METHODS.values() for m in variants
                  if m.multinomial == multinomial and (
                      lik is None or m.likelihoods is None
                      or isinstance(lik, m.likelihoods)))


def get_method(method, likelihood=None):
    """The :class:`~gpc.inference.InferenceMethod` registered as ``method`` for
    the model of ``likelihood`` (None: binary problems); ValueError if none."""
    multinomial = _is_multinomial(likelihood)
    found = _variant(method, multinomial) if isinstance(method, str) else None
    if found is None:
        model = "the multinomial model" if multinomial else "binary problems"
        names = sorted(n for n, v in _METHODS.items()
                       if any(m.multinomial == multinomial for m in v))
        raise ValueError(f"Unknown inference method {method!r} for {model}; choose "
                         f"one of {names}.")
    return found


def method_options(method, likelihood=None):
    """The options of ``method`` (for the model of ``likelihood``, see
    :func:`get_method`) and their defaults (a new dict)."""
    return dict(get_method(method, likelihood).options)


def _option_type(default):
    """(description, test) of the values an option with this default takes; None
    for a None default (any value: the method checks it)."""
    if isinstance(default, (bool, np.bool_)):
        return "a bool", lambda v: isinstance(v, (bool, np.bool_))
    if isinstance(default, numbers.Integral):
        return "an integer", is_integer
    if isinstance(default, numbers.Real):
        return "a real number", is_real
    if isinstance(default, str):
        return "a string", lambda v: isinstance(v, str)
    return None


def check_options(method, options, reserved=(), likelihood=None):
    """The options of ``method`` as a new dict, their names and types checked.

    Each option takes values of the type of its default (a bool, an integer, a
    real number or a string; an option whose default is None is left to the
    method).  Ranges (``tol > 0``, ``max_iter >= 0``, ...) are checked by the
    method when it runs.  ``reserved`` names options that the caller sets itself
    and refuses as unknown.

    Raises
    ------
    TypeError
        If ``options`` is not a mapping, or an option has a value of another type.
    ValueError
        If an option is not one of the method's.
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError("the inference options must be a dict of option names and "
                        f"values, got {reprlib.repr(options)}.")
    known = {k: v for k, v in method_options(method, likelihood).items()
             if k not in reserved}
    for name, value in options.items():
        if name not in known:
            raise ValueError(f"{name!r} is not an option of method={method!r}; its "
                             f"options are {sorted(known)}.")
        kind = _option_type(known[name])
        if kind is not None and not kind[1](value):
            raise TypeError(f"option {name!r} of method={method!r} must be {kind[0]} "
                            f"(default {known[name]!r}), got {reprlib.repr(value)}.")
    return dict(options)


def check_init(method, init, shape, likelihood=None):
    """Refuse an ``init`` that ``method`` cannot warm-start from.

    ``init`` must be None or a mapping holding the method's state arrays (see
    :func:`register`), each finite and of ``shape``: ``(n,)``, one value per
    example, or ``(C, n)`` for the multinomial model.

    Raises
    ------
    ValueError
        Naming what was expected and what was given.
    """
    if init is None:
        return
    keys = get_method(method, likelihood).state_keys
    shape = tuple(shape)
    if not (isinstance(init, Mapping) and all(k in init for k in keys)):
        what = (f"keys {list(init)}" if isinstance(init, Mapping)
                else reprlib.repr(init))
        spec = f"a dict with {list(keys)}" if keys else "a dict"
        raise ValueError(f"init must be the state of a previous method={method!r} "
                         f"result ({spec}), got {what}.")
    for key in keys:
        try:
            a = np.asarray(init[key], dtype=np.float64)
        except (TypeError, ValueError):
            a = np.asarray(np.nan)
        if a.shape != shape or not np.isfinite(a).all():
            raise ValueError(f"init[{key!r}] must be a finite array of shape {shape}, "
                             f"got {reprlib.repr(init[key])}.")


def psd_jitter(K, what="K"):
    """Check that K is positive semi-definite up to rounding; return the jitter that
    a factorisation of K needs (0.0 when ``K + 1e-10 * mean(diag) I`` factorises).

    Climbs :func:`with_jitter`'s ladder from its first non-zero rung (rounding, so
    reported as 0.0) and raises :class:`NotPositiveDefiniteError` (naming ``what``)
    when even the largest fails or the diagonal is not positive.  One compiled
    copy and Cholesky of K (O(n^3 / 3)) per rung tried.
    """
    if K.shape[0] == 0:
        return 0.0
    scale = float(np.mean(np.diag(K)))
    if not scale > 0:
        raise NotPositiveDefiniteError(
            f"{what} is not positive semi-definite (its mean diagonal is not "
            "positive): it is not a valid covariance.")
    work = np.empty(K.shape, order="F")
    for k, rel in enumerate(JITTER_LADDER):
        if factorises(K, rel * scale, work):
            return 0.0 if k == 0 else rel * scale
    raise _ladder_failed(what, JITTER_LADDER[-1])


def check_kernel_psd(kernel, X):
    """Check ``kernel(X)`` before any method runs: a finite symmetric matrix
    (ValueError with :func:`infer`'s message, naming the kernel), then
    :func:`psd_jitter`, whose jitter is returned (0.0 without a factorisation
    for kernels positive semi-definite by construction)."""
    return checked_kernel_matrix(kernel, X)[1]


def checked_kernel_matrix(kernel, X):
    """``(K, jitter)``: the Fortran matrix ``kernel(X)`` that
    :func:`check_kernel_psd` checks, and its jitter."""
    K = kernel_matrix(kernel, X)
    if is_psd_by_construction(kernel):
        return K, 0.0
    return K, psd_jitter(K, f"The kernel {kernel!r} gives a covariance matrix that")


def infer(K, y, method="laplace", likelihood="probit", *, sample_weight=None,
          init=None, compute_gradient=True, check_psd=True, **options):
    """Approximate GP classification posterior and evidence for a covariance matrix.

    The K-level entry point of gpc: another library hands over a prior covariance
    matrix and labels and gets back the posterior, the log evidence and its total
    derivative with respect to K.

    Parameters
    ----------
    K : array-like of shape (n, n), or (C, n, n) for the multinomial model
        Prior covariance of the latent function at the training inputs (symmetric,
        positive semi-definite).  With a multinomial likelihood, one matrix
        shared by the C latent functions or one per class.
    y : array-like of shape (n,)
        Labels in {-1, +1}; real targets for the "gaussian" (regression)
        likelihood (checked by the likelihood's ``check_targets``); class
        labels ``0 .. C - 1`` for the multinomial likelihoods.
    method : str, default="laplace"
        Inference method; see :func:`available_methods`.
    likelihood : str or Likelihood, default="probit"
        "probit", "logit", "noisy_threshold", "step", "gaussian" or a likelihood
        object; for the multinomial model of C classes, whose ``dK`` has shape
        (C, n, n), "softmax" (:class:`gpc.likelihoods.Softmax`; methods
        "laplace" and "vb") or "multinomial_probit"
        (:class:`gpc.likelihoods.MultinomialProbit`; method "ep").
    sample_weight : array-like of shape (n,), optional
        One finite non-negative weight per example: the method then fits the
        weighted likelihood ``prod_i p(y_i | f_i)^(w_i)``.  A zero weight
        drops the example, an integer weight counts it as that many copies
        (exactly for Laplace; EP fits a weighted site by power EP, which
        approximates the copies).  Only the methods whose
        :class:`~gpc.inference.InferenceMethod` has ``accepts_sample_weight``
        take weights.
    init : dict, optional
        ``state`` of a previous result of the same method on as many examples, to
        warm-start from.
    compute_gradient : bool, default=True
        Whether to compute ``dK`` (and ``dlik``).
    check_psd : bool, default=True
        Verify with one Cholesky that K is positive semi-definite (up to the jitter
        ladder) and raise :class:`gpc.NotPositiveDefiniteError` otherwise. Methods
        such as EP never factorise K itself and would not notice; pass False to skip
        the O(n^3 / 3) check for a K known to be valid.
    **options
        Method options (for Laplace: ``tol``, ``max_iter``), each of the type of
        its default in the method's signature.

    Returns
    -------
    InferenceResult
        Finite ``log_evidence``, ``dK`` and ``dlik`` (``dK`` and ``dlik`` are None
        where the method has no gradient, ADF, or when not requested; Laplace's
        ``dlik`` is None for a likelihood with parameters).

    Raises
    ------
    ValueError
        For an unknown method or likelihood, a method/likelihood pair the method
        does not support (e.g. Laplace with a likelihood without derivatives,
        "vb" with anything but the logit and probit), an unknown or out-of-range
        option, an ``init`` that is not such a state, weights that are not n
        finite non-negative numbers with a positive one or are given to a
        method that takes none, a K that is not a finite
        square symmetric matrix or is empty (no examples), or labels the
        likelihood does not accept.
    TypeError
        For an option of the wrong type (e.g. a string ``tol``).
    gpc.NotPositiveDefiniteError
        If K is not positive semi-definite, even with the jitter of the ladder
        (up to ``1e-4 * mean(diag(K))``) added.  Also a ValueError and a
        :class:`numpy.linalg.LinAlgError`.
    gpc.NumericalError
        If the method cannot reach a finite answer in floating point (e.g. the
        noise-free step likelihood with labels that a singular K gives zero
        probability, where the evidence is 0).  Its ``method`` attribute names the
        method and its message says what went wrong.  Also a
        :class:`FloatingPointError`.

    Warns
    -----
    sklearn.exceptions.ConvergenceWarning
        When the method's iterations ran out (the results are approximate).
    RuntimeWarning
        When some sites had to be left out of the evidence or clipped (EP, PL).

    Examples
    --------
    >>> import numpy as np
    >>> import gpc
    >>> X = np.linspace(-2, 2, 5)[:, None]
    >>> K = np.exp(-0.5 * (X - X.T) ** 2)
    >>> res = gpc.infer(K, [-1, -1, 1, 1, 1], likelihood="logit")
    >>> res.info["converged"]
    True
    >>> Ks = np.exp(-0.5 * (X - 0.5) ** 2)          # covariances with x* = 0.5
    >>> p = res.posterior.predict_proba(Ks, [1.0], "logit")
    >>> bool(0.5 < p[0] < 1)
    True
    """
    lik = get_likelihood(likelihood)
    fn = get_method(method, lik)
    fn.check_likelihood(lik)
    options = check_options(method, options, likelihood=lik)
    if lik.multinomial:
        Kf, yv = multinomial_problem(K, y, lik)
        shape, distinct = (len(Kf), yv.shape[0]), {id(k): k for k in Kf}.values()
    else:
        Kf = as_kernel_matrix(K)
        if Kf.shape[0] == 0:
            raise ValueError("K is 0 x 0: gpc.infer needs at least one example.")
        yv = lik.check_targets(y, Kf.shape[0])
        shape, distinct = (Kf.shape[0],), (Kf,)
    check_init(method, init, shape, lik)
    weights = fn.check_sample_weight(sample_weight, shape[-1])
    if weights is not None:
        options[_WEIGHTS] = weights
    # K exists; the method needs at least a factorisation and an inverse besides
    # (per class for the multinomial model).
    check_full_fit_memory(shape[-1], f"gpc.infer(method={method!r})",
                          arrays=multinomial_fit_arrays(shape[0]) if lik.multinomial
                          else 2)
    if check_psd:
        for Kc in distinct:
            psd_jitter(Kc)
    return fn(Kf, yv, lik, init=init, compute_gradient=compute_gradient, **options)


def multinomial_problem(K, y, likelihood):
    """``(K, labels)`` of a multinomial problem checked: K as a tuple of C
    Fortran matrices (one matrix repeated when it is shared) and the labels
    ``0 .. C - 1`` as integers.  C is the number of matrices of a 3-D K, else
    the likelihood's ``n_classes``, else the largest label plus one."""
    K = np.asarray(K)
    if K.ndim == 3:
        Ks = tuple(as_kernel_matrix(Kc, f"K[{c}]") for c, Kc in enumerate(K))
    else:
        Ks = (as_kernel_matrix(K),)
    n = Ks[0].shape[0]
    if n == 0:
        raise ValueError("K is 0 x 0: gpc.infer needs at least one example.")
    if any(Kc.shape[0] != n for Kc in Ks):
        raise ValueError(f"K must hold C n x n matrices, got shape {K.shape}.")
    y = likelihood.check_targets(y, n)
    C = len(Ks) if K.ndim == 3 else likelihood.n_classes or int(y.max()) + 1
    if likelihood.n_classes not in (None, C):
        raise ValueError(f"K holds {C} matrices (one per class), but the likelihood "
                         f"has n_classes={likelihood.n_classes}.")
    if C < 2:
        raise ValueError("the multinomial model needs 2 or more classes, but "
                         f"{'K holds one matrix' if K.ndim == 3 else 'every label is 0'}"
                         ": give labels 0 .. C - 1 of C >= 2 classes, with a 2-D K "
                         "shared by the classes or a 3-D K of one matrix per class.")
    if y.max() >= C:
        raise ValueError(f"y holds label {int(y.max())}, but there are {C} classes "
                         f"(labels 0 .. {C - 1}).")
    return (Ks if K.ndim == 3 else Ks * C), y


def _jitter_scale(K):
    """The unit of the jitter ladder: the mean prior variance (1 if not positive)."""
    scale = float(np.mean(np.diag(K))) if K.shape[0] else 1.0
    return scale if scale > 0 else 1.0


def with_jitter(K, attempt, what="K", rungs=(0.0,) + JITTER_LADDER):
    """Run ``attempt(K)``; if it reports a failed factorisation (returns None),
    retry with growing jitter on the diagonal of K.

    The jitters tried are ``rungs`` (by default 0, then ``JITTER_LADDER``) times
    the mean of K's diagonal; each jittered matrix is a new Fortran-ordered copy,
    which ``attempt`` may overwrite (K itself, at a zero rung, it must not).

    Returns ``(result, jitter)``; raises :class:`NotPositiveDefiniteError`
    (naming ``what``) when the whole ladder fails.
    """
    n = K.shape[0]
    scale = None                     # computed when a jittered rung is needed
    for rel in rungs:
        Kj = K
        if rel:
            scale = _jitter_scale(K) if scale is None else scale
            Kj = np.array(K, order="F", copy=True)
            Kj[np.diag_indices(n)] += rel * scale
        res = attempt(Kj)
        if res is not None:
            return res, rel * scale if rel else 0.0
    raise _ladder_failed(what, rungs[-1])


def _ladder_failed(what, largest):
    """The error when K + ``largest`` x mean(diag(K)) I does not factorise."""
    return NotPositiveDefiniteError(
        f"{what} is not positive semi-definite: the factorisation failed even with "
        f"jitter {largest:g} x mean(diag(K)) added to the diagonal.")
