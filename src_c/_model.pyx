# The Python side of the one Model struct (_model.pxd): LikelihoodModel builds and
# checks it once, and every compiled loop's entry point reads it (model_of).

from cpython.buffer cimport PyBUF_C_CONTIGUOUS, PyBuffer_Release, PyObject_GetBuffer
from cpython.pycapsule cimport PyCapsule_New

import numpy as np

from _lik cimport Quad, lik_n_params
from _model cimport Model, RULE_EP, RULE_PL

RULE_EXPECTATION_PROPAGATION = RULE_EP
RULE_POSTERIOR_LINEARISATION = RULE_PL


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


cdef class LikelihoodModel:
    """The model a compiled loop fits, built once in Python and passed to every
    entry point that evaluates a likelihood (EP, posterior linearisation,
    Laplace, ADF, the sparse online GP).

    It holds the likelihood's ``code`` (a ``LIK_*`` code of ``_lik.pxd``, which
    selects its compiled closed forms), its parameters ``par``, its Gauss-Hermite
    rule ``quad_x`` and ``quad_logw`` (probabilists', log weights), and for the
    Gaussian-site loop its ``rule`` (``RULE_EXPECTATION_PROPAGATION`` or
    ``RULE_POSTERIOR_LINEARISATION``) with PL's evidence rule ``evq_x`` and
    ``evq_logw`` (empty by default).  The arrays are held as given when they are
    contiguous float64 (else converted): they must not change while the model is
    used.  The C struct (``Model``) points into them; the loops read it through
    ``_capsule``."""

    cdef Model md
    cdef readonly int code, rule
    cdef readonly object par, quad_x, quad_logw, evq_x, evq_logw, _capsule

    def __init__(self, int code, par, quad_x, quad_logw, int rule=RULE_EP,
                 evq_x=None, evq_logw=None):
        cdef int n_par = lik_n_params(code), n_given
        if n_par < 0:
            raise ValueError(f"unknown likelihood code {code}")
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
        _quad(&self.md.evq, self.evq_x, self.evq_logw)
        self.code = code
        self.rule = rule
        self.md.lik = code
        self.md.rule = rule
        self._capsule = PyCapsule_New(&self.md, b"gpc._model.Model", NULL)

    def __repr__(self):
        return (f"LikelihoodModel(code={self.code}, n_par={self.par.shape[0]}, "
                f"n_quad={self.md.quad.n}, rule={self.rule}, n_evq={self.md.evq.n})")


def likelihood_model(likelihood, int rule=RULE_EP, evidence_rule=None):
    """The :class:`LikelihoodModel` of a likelihood object (its ``code``,
    ``params``, ``quad_x`` and ``quad_logw``), with the site ``rule`` and PL's
    evidence rule ``(x, logw)`` (or None)."""
    evq_x, evq_logw = (None, None) if evidence_rule is None else evidence_rule
    return LikelihoodModel(likelihood.code, likelihood.params, likelihood.quad_x,
                           likelihood.quad_logw, rule, evq_x, evq_logw)
