# Likelihood moments shared by every inference loop.
#
# Every function here is `cdef inline`, so each extension that cimports this file
# compiles its own copy: no cross-extension C-API, no runtime import (the extensions
# are installed inside the `gpc` package while this folder is not a package).
# `_moments.pyx` wraps them for Python (tests, the likelihood classes).
#
# Labels are y in {-1, +1}.  Likelihood codes are the LIK_* constants below; `par`
# points at the likelihood's parameters (noisy threshold: par[0] = eps, the label-flip
# probability; the others ignore it).  `quad` is a probabilists' Gauss-Hermite rule for
# N(0, 1): E[g(u)] ~ sum_k exp(logw[k]) g(x[k]), sum_k exp(logw[k]) = 1.

cdef enum:
    LIK_PROBIT = 0
    LIK_LOGIT = 1
    LIK_NOISY_THRESHOLD = 2
    LIK_STEP = 3

ctypedef struct Quad:
    int n
    const double* x
    const double* logw

# log Phi(z) and N(z)/Phi(z), stable for z down to -1e300 (erfcx for z << 0).
cdef inline double log_ndtr_stable(double z) noexcept nogil:
    return 0.0  # STUB
cdef inline double inv_mills(double z) noexcept nogil:
    return 0.0  # STUB

# log p(y|f) and its first three derivatives in f.  Returns 0, or -1 when the
# likelihood has no derivatives (step, noisy threshold); outputs are then undefined.
cdef inline int lik_derivs(int lik, double y, double f, const double* par,
                           double* lp, double* d1, double* d2, double* d3) noexcept nogil:
    return -1  # STUB

# Z = int p(y|f) N(f; m, v) df: log Z, d log Z/dm, d^2 log Z/dm^2 and d log Z/d par[0]
# (0 for likelihoods without parameters).  v >= 0; v == 0 gives the point values.
cdef inline void lik_gauss_moments(int lik, double y, double m, double v, const double* par,
                                   const Quad* quad, double* logZ, double* dlogZ,
                                   double* d2logZ, double* dlogZ_dpar) noexcept nogil:
    pass  # STUB

# p(y = +1) under f ~ N(m, v).
cdef inline double lik_predict(int lik, double m, double v, const double* par,
                               const Quad* quad) noexcept nogil:
    return 0.5  # STUB
