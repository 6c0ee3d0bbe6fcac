# The model every compiled loop fits: the likelihood (its LIK_* code, parameters and
# quadrature rule) and, for the Gaussian-site loop (_site_loop.pyx), how its sites
# are fitted.  EP, posterior linearisation, Laplace, ADF and the sparse online GP
# all take it as one `const Model*`, and ask it for the likelihood's moments and
# derivatives through model_moments and model_derivs only: the one place where a
# likelihood's code selects its closed forms (in _lik.pxd), or, for a likelihood
# without them (LIK_PYTHON), calls back into its Python methods.
#
# Python builds it once, as a gpc._model.LikelihoodModel (_model.pyx), which owns
# the struct and the arrays it points into; an entry point reads the struct with
# model_of.  Every function here is `cdef inline`, so cimporting this file adds no
# runtime import (the extensions are installed inside the `gpc` package while this
# folder is not a package).

from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid

from _lik cimport Quad, lik_derivs, lik_gauss_moments, lik_tempered_moments, lik_tempers


cdef enum:
    RULE_EP = 0         # sites by moment matching at the cavity (EP)
    RULE_PL = 1         # sites by statistical linear regression at the marginal (PL)
    LIK_PYTHON = -1     # a likelihood without compiled closed forms (its methods)


# The Python path (_model.pyx): the likelihood's gauss_moments and derivatives,
# called with the GIL for one site.  A call that raises stores the exception in the
# LikelihoodModel ``owner`` and gives NaN (model_raise re-raises it); so do all
# later calls, which then skip Python.
ctypedef void (*PythonMoments)(void* owner, double y, double m, double v, double* logZ,
                               double* dlogZ, double* d2logZ,
                               double* dpar) noexcept nogil
ctypedef int (*PythonDerivs)(void* owner, double y, double f, double* lp, double* d1,
                             double* d2, double* d3) noexcept nogil


cdef struct Model:
    int lik             # LIK_* code
    const double* par   # its parameters (NULL when it has none)
    Quad quad           # its Gauss-Hermite rule (logit moments; n = 0 without one)
    int rule            # RULE_EP or RULE_PL (the Gaussian-site loop only)
    Quad evq            # PL: the Gauss-Hermite rule of the evidence correction
    void* owner         # LIK_PYTHON: the LikelihoodModel (borrowed; it owns the struct)
    const double* w     # the examples' weights (NULL: all 1; see model_site_derivs)
    int n_w             # their number (0 when w is NULL)
    PythonMoments py_moments
    PythonDerivs py_derivs


cdef inline const Model* model_of(object model) except NULL:
    """The struct of a gpc._model.LikelihoodModel, valid while ``model`` lives."""
    cap = getattr(model, "_capsule", None)
    if not PyCapsule_IsValid(cap, b"gpc._model.Model"):
        raise TypeError("expected a gpc._model.LikelihoodModel, got "
                        f"{type(model).__name__}.")
    return <const Model*> PyCapsule_GetPointer(cap, b"gpc._model.Model")


cdef inline int model_check_weights(const Model* md, Py_ssize_t n) except -1:
    """Refuse weights whose number is not the number of examples n (every entry
    point that reads md.w calls it)."""
    if md.w != NULL and md.n_w != n:
        raise ValueError(f"the model holds {md.n_w} weights for {n} examples.")
    return 0


cdef inline int model_raise(object model) except -1:
    """Raise the exception a Python likelihood raised during the last loop, if any
    (every entry point calls it once its loop is done)."""
    model.raise_pending()
    return 0


cdef inline void model_moments(const Model* md, double y, double m, double v,
                               double* logZ, double* dlogZ, double* d2logZ,
                               double* dpar) noexcept nogil:
    """log Z = log int p(y|f) N(f; m, v) df, its first two derivatives in m and its
    derivative in par[0] (``lik_gauss_moments``, or the likelihood's Python
    ``gauss_moments``)."""
    if md.lik == LIK_PYTHON:
        md.py_moments(md.owner, y, m, v, logZ, dlogZ, d2logZ, dpar)
        return
    lik_gauss_moments(md.lik, y, m, v, md.par, &md.quad, logZ, dlogZ, d2logZ, dpar)


cdef inline int model_derivs(const Model* md, double y, double f, double* lp,
                             double* d1, double* d2, double* d3) noexcept nogil:
    """log p(y|f) and its first three derivatives in f (``lik_derivs``, or the
    likelihood's Python ``derivatives``); non-zero where they are not available."""
    if md.lik == LIK_PYTHON:
        return md.py_derivs(md.owner, y, f, lp, d1, d2, d3)
    return lik_derivs(md.lik, y, f, md.par, lp, d1, d2, d3)


# ---- the examples' weights: the weighted likelihood prod_i p(y_i | f_i)^(w_i)

cdef inline double model_weight(const Model* md, int i) noexcept nogil:
    """The weight w_i of example i (1 without weights)."""
    return 1.0 if md.w == NULL else md.w[i]


cdef inline int model_site_derivs(const Model* md, int i, double y, double f,
                                  double* lp, double* d1, double* d2,
                                  double* d3) noexcept nogil:
    """``model_derivs`` of example i's weighted term w_i log p(y_i | f): all four
    values times w_i, and exactly 0 for a zero weight (even where log p is
    -inf), so that such an example drops out of Laplace's objective."""
    cdef int status = model_derivs(md, y, f, lp, d1, d2, d3)
    cdef double w
    if md.w == NULL:
        return status
    w = md.w[i]
    if w == 0.0:
        lp[0] = d1[0] = d2[0] = d3[0] = 0.0
        return 0
    lp[0] *= w
    d1[0] *= w
    d2[0] *= w
    d3[0] *= w
    return status


cdef inline double model_site_power(const Model* md, int i) noexcept nogil:
    """The power s_i of example i's site: the site t_i approximates p(y_i | f)^(w_i)
    by power EP of power 1 / s_i, its cavity q / t_i^(1 / s_i), its tilted law the
    cavity times p(y_i | f)^(w_i / s_i), the new site the moment-matched one raised
    to s_i, and its evidence term s_i times the power-1 term (PL: its sites are
    its regressions raised to w_i; s_i sets the root and the power in its
    evidence correction).  s_i = w_i (the tilted law has p itself; k copies of an
    example at one input share this fixed point), except for a likelihood of
    tempered integrals (``lik_tempers``) and 0 < w_i < 1: there s_i = 1 (plain
    EP on the tempered likelihood p^(w_i), see lik_tempered_moments), because
    the power 1 / w_i > 1 would leave the cavity improper wherever the site's
    precision per unit weight exceeds the marginal's.  1 without weights, 0 for a
    zero weight (the site is held at 1)."""
    cdef double w = model_weight(md, i)
    if 0.0 < w < 1.0 and lik_tempers(md.lik):
        return 1.0
    return w


cdef inline double model_site_root(const Model* md, int i, double x) noexcept nogil:
    """The part x / s_i of a Gaussian site's natural parameter x that the cavity of
    example i removes (``model_site_power``); 0 for a zero weight."""
    cdef double s = model_site_power(md, i)
    return x / s if s != 0.0 else 0.0


cdef inline void model_site_moments(const Model* md, int i, double y, double m,
                                    double v, double* logZ, double* dlogZ,
                                    double* d2logZ, double* dpar) noexcept nogil:
    """``model_moments`` of example i's tilted law: the likelihood to the power
    w_i / s_i (``model_site_power``), which is 1 unless the likelihood is
    tempered."""
    cdef double c = model_weight(md, i) / model_site_power(md, i)
    if md.w == NULL or not (c < 1.0):
        model_moments(md, y, m, v, logZ, dlogZ, d2logZ, dpar)
        return
    lik_tempered_moments(md.lik, y, m, v, md.par, c, &md.quad, logZ, dlogZ, d2logZ,
                         dpar)
