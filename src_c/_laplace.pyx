cimport _blas
from _lik cimport lik_derivs
def ping():
    cdef double a, b, c, d
    return lik_derivs(0, 1.0, 0.0, NULL, &a, &b, &c, &d)
