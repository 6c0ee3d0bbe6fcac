# The Python side of the one Model struct (_model.pxd): LikelihoodModel builds and
# checks it once, and every compiled loop's entry point reads it (model_of).

from cpython.pycapsule cimport PyCapsule_New

import numpy as np

from _lik cimport Quad, lik_n_params
from _model cimport Model, RULE_EP, RULE_PL

RULE_EXPECTATION_PROPAGATION = RULE_EP
RULE_POSTERIOR_LINEARISATION = RULE_PL


cdef inline void _quad(Quad* q, const double[::1] x, const double[::1] logw) noexcept:
    q.n = x.shape[0]
    q.x = &x[0] if q.n > 0 else NULL
    q.logw = &logw[0] if q.n > 0 else NULL


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
        cdef int n_par = lik_n_params(code)
        if n_par < 0:
            raise ValueError(f"unknown likelihood code {code}")
        if rule != RULE_EP and rule != RULE_PL:
            raise ValueError(f"unknown site rule {rule}.")
        self.par = np.ascontiguousarray(par, dtype=np.float64)
        self.quad_x = np.ascontiguousarray(quad_x, dtype=np.float64)
        self.quad_logw = np.ascontiguousarray(quad_logw, dtype=np.float64)
        self.evq_x = np.ascontiguousarray(() if evq_x is None else evq_x,
                                          dtype=np.float64)
        self.evq_logw = np.ascontiguousarray(() if evq_logw is None else evq_logw,
                                             dtype=np.float64)
        if self.par.shape[0] < n_par:
            raise ValueError("this likelihood needs its parameter in par[0]")
        if (self.quad_x.shape[0] != self.quad_logw.shape[0]
                or self.evq_x.shape[0] != self.evq_logw.shape[0]):
            raise ValueError("quadrature nodes and weights must have equal lengths")
        cdef const double[::1] pv = self.par
        self.code = code
        self.rule = rule
        self.md.lik = code
        self.md.par = &pv[0] if pv.shape[0] > 0 else NULL
        _quad(&self.md.quad, self.quad_x, self.quad_logw)
        self.md.rule = rule
        _quad(&self.md.evq, self.evq_x, self.evq_logw)
        self._capsule = PyCapsule_New(&self.md, b"gpc._model.Model", NULL)

    def __repr__(self):
        return (f"LikelihoodModel(code={self.code}, n_par={self.par.shape[0]}, "
                f"n_quad={self.quad_x.shape[0]}, rule={self.rule}, "
                f"n_evq={self.evq_x.shape[0]})")


def likelihood_model(likelihood, int rule=RULE_EP, evidence_rule=None):
    """The :class:`LikelihoodModel` of a likelihood object (its ``code``,
    ``params``, ``quad_x`` and ``quad_logw``), with the site ``rule`` and PL's
    evidence rule ``(x, logw)`` (or None)."""
    evq_x, evq_logw = (None, None) if evidence_rule is None else evidence_rule
    return LikelihoodModel(likelihood.code, likelihood.params, likelihood.quad_x,
                           likelihood.quad_logw, rule, evq_x, evq_logw)
