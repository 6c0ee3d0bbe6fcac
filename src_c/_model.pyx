# The Python side of the one Model struct (_model.pxd): LikelihoodModel builds and
# checks it once, and every compiled loop's entry point reads it (model_of).

from cpython.buffer cimport PyBUF_C_CONTIGUOUS, PyBuffer_Release, PyObject_GetBuffer
from cpython.pycapsule cimport PyCapsule_New

import numpy as np

from libc.math cimport NAN

from _lik cimport Quad, lik_n_params
from _model cimport LIK_PYTHON, Model, RULE_EP, RULE_PL

RULE_EXPECTATION_PROPAGATION = RULE_EP
RULE_POSTERIOR_LINEARISATION = RULE_PL
#: The code of a likelihood without compiled closed forms (the Python path).
PYTHON = LIK_PYTHON


# The default of PL's evidence rule: none (shared, read-only).
_EMPTY = np.zeros(0)
_EMPTY.flags.writeable = False


cdef const double* _data(object a, int* n) except? NULL:
    """The first entry of a contiguous float64 array that the caller holds (NULL
    when it is empty) and its length in n: a plain buffer request, cheaper than a
    typed memoryview, as a model is built once per fit."""
    cdef Py_buffer view
    cdef const double* p
    PyObject_GetBuffer(a, &view, PyBUF_C_CONTIGUOUS)
    n[0] = <int> (view.len // sizeof(double))
    p = <const double*> view.buf if view.len > 0 else NULL
    PyBuffer_Release(&view)
    return p


cdef int _quad(Quad* q, object x, object logw) except -1:
    """Point q at the rule (x, logw); refuse lengths that differ."""
    cdef int n_w
    q.x = _data(x, &q.n)
    q.logw = _data(logw, &n_w)
    if n_w != q.n:
        raise ValueError("quadrature nodes and weights must have equal lengths")
    if q.n == 0:
        q.x = q.logw = NULL
    return 0


cdef void _python_moments(void* owner, double y, double m, double v, double* logZ,
                          double* dlogZ, double* d2logZ, double* dpar) noexcept nogil:
    cdef double out[4]
    with gil:
        (<LikelihoodModel> owner)._call(0, y, m, v, out)
    logZ[0], dlogZ[0], d2logZ[0], dpar[0] = out[0], out[1], out[2], out[3]


cdef int _python_derivs(void* owner, double y, double f, double* lp, double* d1,
                        double* d2, double* d3) noexcept nogil:
    cdef double out[4]
    cdef int status
    with gil:
        status = (<LikelihoodModel> owner)._call(1, y, f, 0.0, out)
    lp[0], d1[0], d2[0], d3[0] = out[0], out[1], out[2], out[3]
    return status


cdef class LikelihoodModel:
    """The model a compiled loop fits, built once in Python and passed to every
    entry point that evaluates a likelihood (EP, posterior linearisation,
    Laplace, ADF, the sparse online GP).

    It holds the likelihood's ``code`` (a ``LIK_*`` code of ``_lik.pxd``, which
    selects its compiled closed forms), its parameters ``par``, its Gauss-Hermite
    rule ``quad_x`` and ``quad_logw`` (probabilists', log weights), and for the
    Gaussian-site loop its ``rule`` (``RULE_EXPECTATION_PROPAGATION`` or
    ``RULE_POSTERIOR_LINEARISATION``) with PL's evidence rule ``evq_x`` and
    ``evq_logw`` (empty by default), and the examples' ``weights`` (None, or
    one finite non-negative number per example: the weighted likelihood
    ``prod_i p(y_i | f_i)^(w_i)``, see ``model_site_derivs`` and
    ``model_site_root`` in ``_model.pxd``).  The arrays are held as given when they are
    contiguous float64 (else converted): they must not change while the model is
    used.  The C struct (``Model``) points into them; the loops read it through
    ``_capsule``.

    A likelihood without compiled closed forms has ``code == PYTHON``: then
    ``likelihood`` is the object, and the loops call its ``gauss_moments`` and
    ``derivatives`` for one site at a time (with the GIL).  An exception raised
    there is kept, the loop goes on with NaN in its place (and without calling
    Python again), and :meth:`raise_pending`, which every entry point calls once
    its loop is done, raises it."""

    cdef Model md
    cdef readonly int code, rule
    cdef readonly object par, quad_x, quad_logw, evq_x, evq_logw, _capsule
    cdef readonly object likelihood, weights
    cdef object _moments, _derivs, _error

    def __init__(self, int code, par, quad_x, quad_logw, int rule=RULE_EP,
                 evq_x=None, evq_logw=None, likelihood=None, weights=None):
        cdef int n_par = 0 if code == LIK_PYTHON else lik_n_params(code), n_given
        if n_par < 0:
            raise ValueError(f"unknown likelihood code {code}")
        if (code == LIK_PYTHON) != (likelihood is not None):
            raise ValueError("a likelihood object goes with code PYTHON, and only "
                             "with it")
        if rule != RULE_EP and rule != RULE_PL:
            raise ValueError(f"unknown site rule {rule}.")
        self.par = np.ascontiguousarray(par, dtype=np.float64)
        self.quad_x = np.ascontiguousarray(quad_x, dtype=np.float64)
        self.quad_logw = np.ascontiguousarray(quad_logw, dtype=np.float64)
        self.evq_x = _EMPTY if evq_x is None else np.ascontiguousarray(
            evq_x, dtype=np.float64)
        self.evq_logw = _EMPTY if evq_logw is None else np.ascontiguousarray(
            evq_logw, dtype=np.float64)
        self.md.par = _data(self.par, &n_given)
        if n_given < n_par:
            raise ValueError("this likelihood needs its parameter in par[0]")
        _quad(&self.md.quad, self.quad_x, self.quad_logw)
        self._set_weights(weights)
        _quad(&self.md.evq, self.evq_x, self.evq_logw)
        self.code = code
        self.rule = rule
        self.md.lik = code
        self.md.rule = rule
        self.likelihood = likelihood
        if likelihood is not None:
            self._moments = likelihood.gauss_moments
            self._derivs = likelihood.derivatives
            self.md.owner = <void*> self
            self.md.py_moments = _python_moments
            self.md.py_derivs = _python_derivs
        self._capsule = PyCapsule_New(&self.md, b"gpc._model.Model", NULL)

    cdef int _set_weights(self, weights) except -1:
        """Point the struct at the examples' weights (None: unweighted), finite
        and non-negative."""
        self.md.w = NULL
        self.md.n_w = 0
        self.weights = None
        if weights is None:
            return 0
        self.weights = np.ascontiguousarray(weights, dtype=np.float64)
        if self.weights.ndim != 1 or not (np.isfinite(self.weights).all()
                                          and (self.weights >= 0).all()):
            raise ValueError("weights must be a 1-D array of finite non-negative "
                             "numbers.")
        self.md.w = _data(self.weights, &self.md.n_w)
        if self.md.w == NULL:
            self.md.n_w = 0
        return 0

    cdef int _call(self, int which, double y, double a, double b,
                   double* out) noexcept:
        """out = gauss_moments(y, a, b) (which 0) or derivatives(y, a) (1) of the
        likelihood; 0, or -1 with NaN after an exception (kept for raise_pending)."""
        cdef int k
        if self._error is None:
            try:
                res = self._moments(y, a, b) if which == 0 else self._derivs(y, a)
                for k in range(4):
                    out[k] = res[k]
                return 0
            except BaseException as exc:   # KeyboardInterrupt included
                self._error = exc
        for k in range(4):
            out[k] = NAN
        return -1

    def raise_pending(self):
        """Raise (once) the exception that the likelihood's Python methods raised
        during a loop, if any."""
        exc, self._error = self._error, None
        if exc is not None:
            raise exc

    def __repr__(self):
        return (f"LikelihoodModel(code={self.code}, n_par={self.par.shape[0]}, "
                f"n_quad={self.md.quad.n}, rule={self.rule}, n_evq={self.md.evq.n})")


def likelihood_model(likelihood, int rule=RULE_EP, evidence_rule=None, weights=None):
    """The :class:`LikelihoodModel` of a likelihood object (its ``code``,
    ``params``, ``quad_x`` and ``quad_logw``), with the site ``rule``, PL's
    evidence rule ``(x, logw)`` (or None) and the examples' ``weights`` (or
    None: all 1)."""
    evq_x, evq_logw = (None, None) if evidence_rule is None else evidence_rule
    return LikelihoodModel(likelihood.code, likelihood.params, likelihood.quad_x,
                           likelihood.quad_logw, rule, evq_x, evq_logw,
                           likelihood if likelihood.code == LIK_PYTHON else None,
                           weights)
