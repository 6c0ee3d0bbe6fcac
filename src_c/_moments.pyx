"""Python wrappers over the likelihood kernels of ``_lik.pxd``.

Private module: the public interface is :mod:`gpc.likelihoods`.  Every array
argument is converted to a C-contiguous float64 1-D array; arrays of one call must
have equal length (the likelihood classes broadcast before calling).  The loops run
without the GIL.  Targets ``y`` are not checked here: labels in {-1, +1} for the
classification codes, any real numbers for the regression codes ``LIK_GAUSSIAN``
(par[0] = noise variance > 0), ``LIK_LAPLACE`` and ``LIK_ONE_SIDED`` (par[0] = rate
> 0); a non-positive parameter gives NaN.
"""
import numpy as np
from scipy.special import roots_hermitenorm

cimport _lik
from _lik cimport (Quad, log_ndtr_stable, inv_mills, lik_derivs, lik_tempered_moments,
                   lik_predict, lik_em_stat, _mills, GPC_LSM_TAU,
                   GPC_LSM_LOGW, GPC_LSM_N, GPC_LOGIT_GH_VMAX)

LIK_PROBIT = _lik.LIK_PROBIT
LIK_LOGIT = _lik.LIK_LOGIT
LIK_NOISY_THRESHOLD = _lik.LIK_NOISY_THRESHOLD
LIK_STEP = _lik.LIK_STEP
LIK_GAUSSIAN = _lik.LIK_GAUSSIAN
LIK_LAPLACE = _lik.LIK_LAPLACE
LIK_ONE_SIDED = _lik.LIK_ONE_SIDED

#: Logit Gaussian moments use the Gauss-Hermite rule for v <= this variance and a
#: fixed 64-node logistic scale-mixture rule above it (see ``_lik.pxd``).
LOGIT_GH_VMAX = float(GPC_LOGIT_GH_VMAX)

_NAMES = {LIK_PROBIT: "probit", LIK_LOGIT: "logit",
          LIK_NOISY_THRESHOLD: "noisy_threshold", LIK_STEP: "step",
          LIK_GAUSSIAN: "gaussian", LIK_LAPLACE: "laplace",
          LIK_ONE_SIDED: "one_sided_exponential"}
_NPAR = {LIK_PROBIT: 0, LIK_LOGIT: 0, LIK_NOISY_THRESHOLD: 1, LIK_STEP: 0,
         LIK_GAUSSIAN: 1, LIK_LAPLACE: 1, LIK_ONE_SIDED: 1}
#: Codes with an EM statistic (``em_statistic``).
_EM_CODES = (LIK_GAUSSIAN, LIK_LAPLACE, LIK_ONE_SIDED)
_EMPTY = np.zeros(0)
_EMPTY.flags.writeable = False


def _vec(a, name):
    arr = np.ascontiguousarray(a, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {arr.shape}")
    return arr


def _same_length(**arrays):
    n = None
    for name, a in arrays.items():
        if n is None:
            n = a.shape[0]
        elif a.shape[0] != n:
            raise ValueError("arrays must have equal lengths, got "
                             + ", ".join(f"{k}: {v.shape[0]}" for k, v in arrays.items()))
    return n


def _check_lik(lik, par):
    lik = int(lik)
    if lik not in _NAMES:
        raise ValueError(f"unknown likelihood code {lik}; valid codes are "
                         + ", ".join(f"{c} ({n})" for c, n in _NAMES.items()))
    par = _vec(_EMPTY if par is None else par, "par")
    if par.shape[0] < _NPAR[lik]:
        raise ValueError(f"likelihood {_NAMES[lik]!r} needs {_NPAR[lik]} parameter(s), "
                         f"got {par.shape[0]}")
    return lik, par


cdef inline const double* _ptr(const double[::1] a) noexcept:
    return &a[0] if a.shape[0] > 0 else NULL


def log_ndtr(z):
    """log Phi(z), elementwise (the kernel's ``log_ndtr_stable``)."""
    cdef const double[::1] zv = _vec(z, "z")
    out = np.empty(zv.shape[0])
    cdef double[::1] o = out
    cdef Py_ssize_t i
    with nogil:
        for i in range(zv.shape[0]):
            o[i] = log_ndtr_stable(zv[i])
    return out


def mills(z):
    """Inverse Mills ratio r = N(z)/Phi(z) and the shift s = z + r, elementwise.

    Returns ``(r, s)``; ``r`` is the kernel's ``inv_mills`` and ``s`` is formed
    without cancellation for z << 0 (continued fraction).
    """
    cdef const double[::1] zv = _vec(z, "z")
    r = np.empty(zv.shape[0])
    s = np.empty(zv.shape[0])
    cdef double[::1] rv = r, sv = s
    cdef double tmp
    cdef Py_ssize_t i
    with nogil:
        for i in range(zv.shape[0]):
            _mills(zv[i], &tmp, &sv[i])
            rv[i] = inv_mills(zv[i])
    return r, s


def log_lik(int lik, y, f, par=None):
    """log p(y | f) for every likelihood (step / noisy threshold included)."""
    lik, par = _check_lik(lik, par)
    cdef const double[::1] yv = _vec(y, "y"), fv = _vec(f, "f"), pv = par
    cdef Py_ssize_t n = _same_length(y=yv, f=fv), i
    out = np.empty(n)
    cdef double[::1] o = out
    cdef double d1, d2, d3
    cdef const double* pp = _ptr(pv)
    cdef int code = lik
    with nogil:
        for i in range(n):
            lik_derivs(code, yv[i], fv[i], pp, &o[i], &d1, &d2, &d3)
    return out


def loglik_derivs(int lik, y, f, par=None):
    """log p(y|f) and its first three f-derivatives: ``(lp, d1, d2, d3)``.

    Raises ValueError for likelihoods without derivatives (step, noisy threshold,
    Laplace, one-sided exponential).
    """
    lik, par = _check_lik(lik, par)
    if lik in (LIK_STEP, LIK_NOISY_THRESHOLD):
        raise ValueError(f"the {_NAMES[lik]!r} likelihood is not differentiable in f; "
                         "Laplace's method needs a differentiable likelihood (use "
                         "'probit' or 'logit', or EP/ADF for this one)")
    if lik in (LIK_LAPLACE, LIK_ONE_SIDED):
        raise ValueError(f"the {_NAMES[lik]!r} likelihood has no derivatives in f "
                         "(it has a kink at f = y); use EP, ADF or the online methods "
                         "with it")
    cdef const double[::1] yv = _vec(y, "y"), fv = _vec(f, "f"), pv = par
    cdef Py_ssize_t n = _same_length(y=yv, f=fv), i
    lp = np.empty(n)
    d1 = np.empty(n)
    d2 = np.empty(n)
    d3 = np.empty(n)
    cdef double[::1] a = lp, b = d1, c = d2, d = d3
    cdef const double* pp = _ptr(pv)
    cdef int code = lik
    with nogil:
        for i in range(n):
            lik_derivs(code, yv[i], fv[i], pp, &a[i], &b[i], &c[i], &d[i])
    return lp, d1, d2, d3


def _quad(quad_x, quad_logw):
    qx = _vec(_EMPTY if quad_x is None else quad_x, "quad_x")
    qw = _vec(_EMPTY if quad_logw is None else quad_logw, "quad_logw")
    if qx.shape[0] != qw.shape[0]:
        raise ValueError(f"quad_x and quad_logw differ in length "
                         f"({qx.shape[0]} != {qw.shape[0]})")
    return qx, qw


def tempered_moments(int lik, y, m, v, c, par=None, quad_x=None, quad_logw=None):
    """:func:`gauss_moments` of the tempered likelihood p(y|f)^c, each c in (0, 1]
    (``lik_tempered_moments``; c == 1 is the likelihood itself).  Not for Python
    likelihoods."""
    lik, par = _check_lik(lik, par)
    qx, qw = _quad(quad_x, quad_logw)
    cdef const double[::1] yv = _vec(y, "y"), mv = _vec(m, "m"), vv = _vec(v, "v")
    cdef const double[::1] cv = _vec(c, "c")
    cdef const double[::1] pv = par, xv = qx, wv = qw
    cdef Py_ssize_t n = _same_length(y=yv, m=mv, v=vv, c=cv), i
    cdef Quad q
    q.n = <int>xv.shape[0]
    q.x = _ptr(xv)
    q.logw = _ptr(wv)
    logZ = np.empty(n)
    dlogZ = np.empty(n)
    d2logZ = np.empty(n)
    dpar = np.empty(n)
    cdef double[::1] a = logZ, b = dlogZ, d2 = d2logZ, d = dpar
    cdef const double* pp = _ptr(pv)
    cdef int code = lik
    with nogil:
        for i in range(n):
            lik_tempered_moments(code, yv[i], mv[i], vv[i], pp, cv[i], &q, &a[i], &b[i],
                                 &d2[i], &d[i])
    return logZ, dlogZ, d2logZ, dpar


def tempers(int lik):
    """Whether :func:`tempered_moments` has the likelihood's integrals."""
    return bool(_lik.lik_tempers(lik))


def gauss_moments(int lik, y, m, v, par=None, quad_x=None, quad_logw=None):
    """Moments of Z = int p(y|f) N(f; m, v) df.

    Returns ``(logZ, dlogZ, d2logZ, dlogZ_dpar)``: log Z, its first two derivatives
    in m and d log Z / d par[0] (zeros for likelihoods without parameters).  The logit
    likelihood needs the Gauss-Hermite rule ``(quad_x, quad_logw)`` (see
    :func:`gauss_hermite`) whenever some v <= ``LOGIT_GH_VMAX``.
    """
    yv = _vec(y, "y")
    return tempered_moments(lik, yv, m, v, np.ones(yv.shape[0]), par, quad_x,
                            quad_logw)


def em_statistic(int lik, y, m, v, par=None):
    """Tilted expectation of the likelihood's sufficient statistic (for EM).

    Under p_t(f) = p(y|f) N(f; m, v) / Z: E_t[(y - f)^2] (``LIK_GAUSSIAN``),
    E_t[|y - f|] (``LIK_LAPLACE``), E_t[y - f] (``LIK_ONE_SIDED``).  Raises
    NotImplementedError for the other codes.
    """
    lik, par = _check_lik(lik, par)
    if lik not in _EM_CODES:
        raise NotImplementedError(f"the {_NAMES[lik]!r} likelihood has no EM statistic")
    cdef const double[::1] yv = _vec(y, "y"), mv = _vec(m, "m"), vv = _vec(v, "v")
    cdef const double[::1] pv = par
    cdef Py_ssize_t n = _same_length(y=yv, m=mv, v=vv), i
    out = np.empty(n)
    cdef double[::1] o = out
    cdef const double* pp = _ptr(pv)
    cdef int code = lik
    with nogil:
        for i in range(n):
            lik_em_stat(code, yv[i], mv[i], vv[i], pp, &o[i])
    return out


def predict(int lik, m, v, par=None, quad_x=None, quad_logw=None):
    """p(y = +1) under f ~ N(m, v) (NaN for the regression codes, which have no
    classes)."""
    lik, par = _check_lik(lik, par)
    qx, qw = _quad(quad_x, quad_logw)
    cdef const double[::1] mv = _vec(m, "m"), vv = _vec(v, "v")
    cdef const double[::1] pv = par, xv = qx, wv = qw
    cdef Py_ssize_t n = _same_length(m=mv, v=vv), i
    cdef Quad q
    q.n = <int>xv.shape[0]
    q.x = _ptr(xv)
    q.logw = _ptr(wv)
    out = np.empty(n)
    cdef double[::1] o = out
    cdef const double* pp = _ptr(pv)
    cdef int code = lik
    with nogil:
        for i in range(n):
            o[i] = lik_predict(code, mv[i], vv[i], pp, &q)
    return out


_GH_CACHE = {}


def gauss_hermite(order):
    """Probabilists' Gauss-Hermite rule for N(0, 1): ``(x, logw)``.

    ``sum(exp(logw) * g(x))`` approximates E[g(u)], u ~ N(0, 1); the weights sum to 1
    and are stored as logarithms (a weight that underflows is -inf).  Cached per order;
    the returned arrays are read-only.
    """
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)):
        raise TypeError(f"order must be an integer, got {order!r}")
    order = int(order)
    if order < 1:
        raise ValueError(f"order must be >= 1, got {order}")
    rule = _GH_CACHE.get(order)
    if rule is None:
        x, w = roots_hermitenorm(order)
        with np.errstate(divide="ignore"):
            logw = np.log(w) - np.log(np.sum(w))
        x = np.ascontiguousarray(x, dtype=np.float64)
        logw = np.ascontiguousarray(logw, dtype=np.float64)
        x.flags.writeable = False
        logw.flags.writeable = False
        rule = _GH_CACHE.setdefault(order, (x, logw))
    return rule


def scale_mixture_rule():
    """The fixed rule behind logit moments for v > ``LOGIT_GH_VMAX``: ``(tau, logw)``.

    sigma(z) = E[Phi(z / sqrt(tau))] where tau = (2K)^2 and K follows Kolmogorov's
    distribution; ``sum(exp(logw) * g(tau))`` approximates E[g(tau)] (64 nodes).
    """
    tau = np.array([GPC_LSM_TAU[i] for i in range(GPC_LSM_N)])
    logw = np.array([GPC_LSM_LOGW[i] for i in range(GPC_LSM_N)])
    return tau, logw
