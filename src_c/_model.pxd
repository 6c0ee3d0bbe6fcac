# The model every compiled loop fits: the likelihood (its LIK_* code, parameters and
# quadrature rule) and, for the Gaussian-site loop (_site_loop.pyx), how its sites
# are fitted.  EP, posterior linearisation, Laplace, ADF and the sparse online GP
# all take it as one `const Model*`, and ask it for the likelihood's moments and
# derivatives through model_moments and model_derivs only: the one place where a
# likelihood's code selects its closed forms (in _lik.pxd), and where a likelihood
# without compiled closed forms would get its fallback.
#
# Python builds it once, as a gpc._model.LikelihoodModel (_model.pyx), which owns
# the struct and the arrays it points into; an entry point reads the struct with
# model_of.  Every function here is `cdef inline`, so cimporting this file adds no
# runtime import (the extensions are installed inside the `gpc` package while this
# folder is not a package).

from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid

from _lik cimport Quad, lik_derivs, lik_gauss_moments


cdef enum:
    RULE_EP = 0         # sites by moment matching at the cavity (EP)
    RULE_PL = 1         # sites by statistical linear regression at the marginal (PL)


cdef struct Model:
    int lik             # LIK_* code
    const double* par   # its parameters (NULL when it has none)
    Quad quad           # its Gauss-Hermite rule (logit moments; n = 0 without one)
    int rule            # RULE_EP or RULE_PL (the Gaussian-site loop only)
    Quad evq            # PL: the Gauss-Hermite rule of the evidence correction


cdef inline const Model* model_of(object model) except NULL:
    """The struct of a gpc._model.LikelihoodModel, valid while ``model`` lives."""
    cap = getattr(model, "_capsule", None)
    if not PyCapsule_IsValid(cap, b"gpc._model.Model"):
        raise TypeError("expected a gpc._model.LikelihoodModel, got "
                        f"{type(model).__name__}.")
    return <const Model*> PyCapsule_GetPointer(cap, b"gpc._model.Model")


cdef inline void model_moments(const Model* md, double y, double m, double v,
                               double* logZ, double* dlogZ, double* d2logZ,
                               double* dpar) noexcept nogil:
    """log Z = log int p(y|f) N(f; m, v) df, its first two derivatives in m and its
    derivative in par[0] (``lik_gauss_moments``)."""
    lik_gauss_moments(md.lik, y, m, v, md.par, &md.quad, logZ, dlogZ, d2logZ, dpar)


cdef inline int model_derivs(const Model* md, double y, double f, double* lp,
                             double* d1, double* d2, double* d3) noexcept nogil:
    """log p(y|f) and its first three derivatives in f (``lik_derivs``)."""
    return lik_derivs(md.lik, y, f, md.par, lp, d1, d2, d3)
