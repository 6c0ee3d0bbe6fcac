# Likelihood moments shared by every inference loop.
#
# Every function here is `cdef inline`, so each extension that cimports this file
# compiles its own copy: no cross-extension C-API, no runtime import (the extensions
# are installed inside the `gpc` package while this folder is not a package).
# `_moments.pyx` wraps them for Python (tests, the likelihood classes).
#
# Labels are y in {-1, +1} for the classification likelihoods; the regression
# likelihoods (Gaussian, Laplace, one-sided exponential) take any real y.  Likelihood
# codes are the LIK_* constants below; `par` points at the likelihood's parameters
# (noisy threshold: par[0] = eps, the label-flip probability; Gaussian: par[0] = s2 > 0,
# the noise variance; Laplace and one-sided exponential: par[0] = lam > 0, the rate;
# the others ignore it).  `quad` is a probabilists' Gauss-Hermite rule for
# N(0, 1): E[g(u)] ~ sum_k exp(logw[k]) g(x[k]), sum_k exp(logw[k]) = 1.
#
# Numerical notes
# ---------------
# * Everything that can underflow is carried in log space; derivatives of log Z are
#   written with the inverse Mills ratio r(z) = N(z)/Phi(z) and the shift
#   s(z) = z + r(z) > 0.  For z < -4 (z < -2 for the third derivative of log Phi)
#   both come from Laplace's continued fraction
#       Phi(z)/N(z) = 1/(x + 1/(x + 2/(x + 3/(x + ...)))),  x = -z,
#   written as r = x + C1, C_k = k/(x + C_{k+1}); then s = C1 exactly, with no
#   cancellation, and d^3/dz^3 log Phi(z) = 2 r C1^2 (C3 - C2)/(x + C3).
# * Logit Gaussian moments, F(mu, v) = E[sigma(z)], z ~ N(mu, v), mu = y m:
#     - F(mu) = 1 - F(-mu), so only mu <= 0 is integrated (the other side is log1p).
#     - v <= GPC_LOGIT_GH_VMAX: the caller's Gauss-Hermite rule, in log space.  Plain GH
#       degrades fast for larger v (the integrand becomes a step on the scale of the
#       node spacing: ~1e-2 absolute error in log Z at v = 100 with 64 nodes).
#     - v > GPC_LOGIT_GH_VMAX: the logistic law is a normal scale mixture, sigma(z) =
#       E_tau[Phi(z / sqrt(tau))] with tau = (2K)^2, K Kolmogorov distributed, whose
#       density is sum_k (-1)^(k+1) k^2 exp(-k^2 tau / 2).  Hence
#       F(mu, v) = E_tau[Phi(mu / sqrt(tau + v))], integrated with the fixed 64-node
#       Gauss rule for tau below (discretised Stieltjes + Christoffel weights).  This
#       is accurate for mu in [-v/2, 0]; further out the exact identity
#       F(mu) = exp(mu + v/2) (1 - F(mu + v))  (from sigma(z) = e^z sigma(-z))
#       maps the point back into [-v/2, 0] in at most ~40/v + 3 steps.

from libc.math cimport (exp, log, log1p, expm1, sqrt, erf, tanh, ceil, floor, fabs,
                        pow, INFINITY, NAN)
from scipy.special.cython_special cimport erfcx, ndtr, log_expit

cdef enum:
    LIK_PROBIT = 0
    LIK_LOGIT = 1
    LIK_NOISY_THRESHOLD = 2
    LIK_STEP = 3
    LIK_GAUSSIAN = 4
    LIK_LAPLACE = 5
    LIK_ONE_SIDED = 6

# Number of parameters (in `par`) of a likelihood code; -1 for an unknown code.
cdef inline int lik_n_params(int lik) noexcept nogil:
    if lik == LIK_PROBIT or lik == LIK_LOGIT or lik == LIK_STEP:
        return 0
    if (lik == LIK_NOISY_THRESHOLD or lik == LIK_GAUSSIAN or lik == LIK_LAPLACE
            or lik == LIK_ONE_SIDED):
        return 1
    return -1


# Whether lik_derivs gives the derivatives of a likelihood code (Laplace's method).
cdef inline bint lik_differentiable(int lik) noexcept nogil:
    return lik == LIK_PROBIT or lik == LIK_LOGIT or lik == LIK_GAUSSIAN


ctypedef struct Quad:
    int n
    const double* x
    const double* logw

# Fixed Gauss rule for the logistic scale-mixture variable tau (see the notes above):
# nodes tau_j and log weights (weights sum to 1).
cdef extern from *:
    """
    #define GPC_LSM_N 64
    /* Logit: variances up to this use the Gauss-Hermite rule, above it the mixture. */
    #define GPC_LOGIT_GH_VMAX 1.5
    #define GPC_SQRT2 1.4142135623730951
    #define GPC_SQRT_2_OVER_PI 0.7978845608028654
    #define GPC_INV_SQRT_2PI 0.3989422804014327
    #define GPC_LOG_HALF (-0.6931471805599453)
    #define GPC_LOG_2PI 1.8378770664093453
    /* Below this z the Mills ratio comes from the continued fraction. */
    #define GPC_CF_Z (-4.0)
    /* ... and below this z for the third derivative of log Phi. */
    #define GPC_CF_Z3 (-2.0)
    /* Tempered probit and logit integrals: Gauss-Legendre panels on each side of
       the mode, reaching where the log integrand has fallen by this much. */
    #define GPC_TQ_PANELS 8
    #define GPC_TQ_DROP 40.0
    #define GPC_TQ_CORE 10
    #define GPC_TQ_GEOMETRIC 16
    /* 10-point Gauss-Legendre rule on [-1, 1]: positive nodes and their weights. */
    static const double GPC_GL10_X[5] = {
    0.1488743389816312, 0.4333953941292472, 0.6794095682990244,
    0.8650633666889845, 0.9739065285171717,
    };
    static const double GPC_GL10_W[5] = {
    0.2955242247147529, 0.2692667193099963, 0.2190863625159820,
    0.1494513491505806, 0.0666713443086881,
    };
    static const double GPC_LSM_TAU[GPC_LSM_N] = {
    0.5101051070967215, 0.7971602554169014, 1.181178990853699,
    1.6879390961121508, 2.334874798743345, 3.132582723950363,
    4.086117211381508, 5.196992300703298, 6.465330361391654,
    7.89122014769667, 9.475110104059224, 11.217761749511068,
    13.120153200902843, 15.183426663658913, 17.408867634044817,
    19.79789844540262, 22.35207810235146, 25.073105318548432,
    27.962823539240826, 31.023227432238894, 34.25647063195243,
    37.66487466966104, 41.25093910684764, 45.01735294265713,
    48.96700740750218, 53.10301029069172, 57.42870198532965,
    61.94767347164299, 66.66378650270799, 71.5811963064336,
    76.70437717696761, 82.0381514001253, 87.58772204434223,
    93.35871025523966, 99.35719782360857, 105.58977596057731,
    112.06360141933031, 118.78646136254163, 125.76684870560392,
    133.01405009084286, 140.53824919900293, 148.35064882569253,
    156.46361610477834, 164.89085653746287, 173.64762421503667,
    182.75097799692475, 192.22009671168016, 202.076671127631,
    212.3453971801731, 223.05460484418577, 234.2370719062396,
    245.93109476488536, 258.1819245694706, 271.0437360776733,
    284.58239661766294, 298.8794791767203, 314.0382916286218,
    330.19334087515114, 347.52602361826433, 366.2925338457014,
    386.8783911366517, 409.92017063335464, 436.63981198843567,
    470.1952603914278,
    };
    static const double GPC_LSM_LOGW[GPC_LSM_N] = {
    -6.219128807466467, -3.607137772086576, -2.3299510736294455,
    -1.7656835358501504, -1.6219668440890538, -1.736719424366582,
    -2.02018263536235, -2.426513865288869, -2.9349783965312217,
    -3.5369888228643376, -4.228860383295059, -5.008757599271465,
    -5.875652476946082, -6.828978763398836, -7.868491253360609,
    -8.994191178474036, -10.2062801802921, -11.505130185076451,
    -12.891263317371765, -14.365338586324292, -15.928143366637613,
    -17.580588424011612, -19.323705676107846, -21.15864816111389,
    -23.086691872904733, -25.109239251594207, -27.22782421274042,
    -29.444118671084055, -31.75994057417827, -34.177263513575966,
    -36.69822803074875, -39.32515478512692, -42.06055980569369,
    -44.907172108540955, -47.86795403409491, -50.946124743348676,
    -54.145187417378786, -57.46896083508593, -60.92161616897956,
    -64.50772004934971, -68.23228521900322, -72.10083045562035,
    -76.11945190735491, -80.29490861330291, -84.63472582738993,
    -89.1473209256162, -93.84215829275635, -98.72994186997349,
    -103.82285733398511, -109.13488070568201, -114.68217742648113,
    -120.48362706869979, -126.56152642740554, -132.94255240459177,
    -139.65911454958717, -146.75131255061822, -154.26987228664373,
    -162.28074548815906, -170.8727173030375, -180.17089649338823,
    -190.36297138637622, -201.757511832993, -214.94280490061968,
    -231.41928252067848,
    };
    """
    const int GPC_LSM_N
    const double GPC_LOGIT_GH_VMAX
    const double GPC_SQRT2
    const double GPC_SQRT_2_OVER_PI
    const double GPC_INV_SQRT_2PI
    const double GPC_LOG_HALF
    const double GPC_LOG_2PI
    const double GPC_CF_Z
    const double GPC_CF_Z3
    const int GPC_TQ_PANELS
    const int GPC_TQ_CORE
    const int GPC_TQ_GEOMETRIC
    const double GPC_TQ_DROP
    const double GPC_GL10_X[5]
    const double GPC_GL10_W[5]
    const double GPC_LSM_TAU[64]
    const double GPC_LSM_LOGW[64]

cdef inline double _exp_mhalf_sq(double z) noexcept nogil:
    # exp(-z^2/2) to a few ulp: z = zh + zl with zh on a 2^-16 grid, so zh^2 is exact
    # (|z| < 40) and the rounding of z^2 (relative error ~eps z^2/2) is avoided.
    cdef double zh, zl
    if not (fabs(z) < 40.0):
        return 0.0 if z == z else z
    zh = floor(z * 65536.0) / 65536.0
    zl = z - zh
    return exp(-0.5 * zh * zh) * exp(-zl * (zh + 0.5 * zl))


cdef inline double _npdf(double z) noexcept nogil:
    return GPC_INV_SQRT_2PI * _exp_mhalf_sq(z)


cdef inline double _expit(double a) noexcept nogil:
    # sigma(a) for a in [-inf, inf] (NaN passes through).
    if a >= 0.0:
        return 1.0 / (1.0 + exp(-a))
    return exp(a) / (1.0 + exp(a))


cdef inline double _clamp(double z) noexcept nogil:
    # Keep +-inf (e.g. m / sqrt(v) with v -> 0) out of products like 0 * inf.
    if z > 1e300:
        return 1e300
    if z < -1e300:
        return -1e300
    return z


# log Phi(z) and N(z)/Phi(z), stable for z down to -1e300 (erfcx for z << 0).
cdef inline double log_ndtr_stable(double z) noexcept nogil:
    if z > 5.0:
        # log1p(-Phi(-z)); Phi(-z) from erfcx keeps its gradual underflow (z ~ 38).
        return log1p(-0.5 * erfcx(z / GPC_SQRT2) * _exp_mhalf_sq(z))
    if z > 0.0:
        return log1p(-ndtr(-z))
    if z > -5.0:
        return log(ndtr(z))
    # Phi(z) = erfcx(-z/sqrt2) exp(-z^2/2) / 2; z^2 overflows only where the true
    # value is below -1.8e308 anyway (-inf is then the correctly rounded answer).
    return log(0.5 * erfcx(-z / GPC_SQRT2)) - 0.5 * z * z

cdef inline double inv_mills(double z) noexcept nogil:
    if z >= 0.0:
        return _npdf(z) / ndtr(z)
    # N(z)/Phi(z) = sqrt(2/pi) / erfcx(-z/sqrt2): ~ -z for z << 0, finite down to
    # -DBL_MAX (erfcx(x) ~ 1/(sqrt(pi) x) stays a normal number).
    return GPC_SQRT_2_OVER_PI / erfcx(-z / GPC_SQRT2)


cdef inline void _mills_cf(double x, double* c1, double* c2, double* c3) noexcept nogil:
    # Tails C1, C2, C3 of Laplace's continued fraction (x >= 2), evaluated backwards
    # with enough terms for double precision in C1..C3 and in C3 - C2 (measured).
    cdef int k, n
    cdef double c = 0.0
    if x < 2.5:
        n = 200
    elif x < 3.0:
        n = 128
    elif x < 4.0:
        n = 96
    elif x < 5.0:
        n = 64
    elif x < 6.0:
        n = 48
    elif x < 8.0:
        n = 32
    elif x < 12.0:
        n = 24
    elif x < 20.0:
        n = 16
    else:
        n = 12
    for k in range(n, 3, -1):
        c = k / (x + c)
    c3[0] = 3.0 / (x + c)
    c2[0] = 2.0 / (x + c3[0])
    c1[0] = 1.0 / (x + c2[0])


cdef inline void _mills(double z, double* r, double* s) noexcept nogil:
    # r = N(z)/Phi(z) and s = z + r (> 0); relative error below ~4e-15 for every z
    # (the direct difference in [-4, 0) loses at most ~eps z^2).
    cdef double c1, c2, c3
    if z >= GPC_CF_Z:
        r[0] = inv_mills(z)
        s[0] = z + r[0]
    else:
        _mills_cf(-z, &c1, &c2, &c3)
        r[0] = -z + c1
        s[0] = c1


cdef inline void _probit_derivs_z(double z, double* lp, double* d1, double* d2,
                                  double* d3) noexcept nogil:
    # log Phi(z) and its first three derivatives in z.
    cdef double r, s, c1, c2, c3, x
    lp[0] = log_ndtr_stable(z)
    # The direct d3 loses ~eps x^4 / 16 relative (1e-13 at x = 2): the continued
    # fraction takes over already at z = -2 here.
    if z > GPC_CF_Z3:
        r = inv_mills(z)
        s = z + r
        d3[0] = (r * s) * (s + r) - r          # r (s (s + r) - 1)
    else:
        x = -z
        _mills_cf(x, &c1, &c2, &c3)
        r = x + c1
        s = c1
        d3[0] = 2.0 * ((r * c1) * c1) * (c3 - c2) / (x + c3)
    d1[0] = r
    d2[0] = -r * s


# ---------------------------------------------------------------------------------
# Gaussian (regression) likelihood p(y|f) = N(y; f, s2): log density and derivatives,
# and the exact Gaussian integral Z = N(y; m, v + s2).

cdef inline void _gauss_lik(double y, double f, double s2, double* lp, double* d1,
                            double* d2, double* d3) noexcept nogil:
    cdef double r
    if not (s2 > 0.0):
        lp[0] = NAN
        d1[0] = NAN
        d2[0] = NAN
        d3[0] = NAN
        return
    r = (y - f) / s2
    # (y - f)^2 / s2 as r (y - f): no overflow of (y - f)^2 before the division.
    lp[0] = -0.5 * (GPC_LOG_2PI + log(s2) + r * (y - f))
    d1[0] = r
    d2[0] = -1.0 / s2
    d3[0] = 0.0


cdef inline void _gauss_moments(double y, double m, double v, double s2, double* logZ,
                                double* dlogZ, double* d2logZ,
                                double* dlogZ_dpar) noexcept nogil:
    # S = v + s2: log Z = log N(y; m, S), d/dm = (y - m)/S, d2/dm2 = -1/S and
    # d log Z / d s2 = d log Z / d S = ((y - m)^2/S^2 - 1/S)/2.
    cdef double S, r
    if not (s2 > 0.0):
        logZ[0] = NAN
        dlogZ[0] = NAN
        d2logZ[0] = NAN
        dlogZ_dpar[0] = NAN
        return
    S = v + s2
    r = (y - m) / S
    logZ[0] = -0.5 * (GPC_LOG_2PI + log(S) + r * (y - m))
    dlogZ[0] = r
    d2logZ[0] = -1.0 / S
    dlogZ_dpar[0] = 0.5 * (r * r - 1.0 / S)


# log p(y|f) and its first three derivatives in f.  Returns 0, or -1 when the
# likelihood has no derivatives (step, noisy threshold, Laplace, one-sided
# exponential); outputs are then undefined.
# Gaussian: log N(y; f, s2), (y - f)/s2, -1/s2, 0.
# (Implementation detail: for the likelihoods without derivatives lp is still
# log p(y|f) and d1..d3 are NaN: step / noisy threshold with p(y|0) = 1/2, Laplace
# log(lam/2) - lam |y - f|, one-sided log(lam) - lam (y - f) for y > f and -inf for
# y <= f; a rate lam <= 0 or NaN gives lp = NaN.  Gaussian with s2 <= 0 or NaN: NaN
# outputs, return value 0.)
cdef inline int lik_derivs(int lik, double y, double f, const double* par,
                           double* lp, double* d1, double* d2, double* d3) noexcept nogil:
    cdef double z = y * f, e, sp, sm, eps, lam
    if lik == LIK_GAUSSIAN:
        _gauss_lik(y, f, par[0], lp, d1, d2, d3)
        return 0
    if lik == LIK_PROBIT:
        _probit_derivs_z(z, lp, d1, d2, d3)
        d1[0] = y * d1[0]
        d3[0] = y * d3[0]
        return 0
    if lik == LIK_LOGIT:
        # One exp for sigma(z), sigma(-z) and log sigma(z).
        if z >= 0.0:
            e = exp(-z)
            sp = 1.0 / (1.0 + e)
            sm = e * sp
            lp[0] = -log1p(e)
        else:
            e = exp(z)
            sm = 1.0 / (1.0 + e)
            sp = e * sm
            lp[0] = z - log1p(e)
        if z != z:
            lp[0] = z
        d1[0] = y * sm
        d2[0] = -sp * sm
        d3[0] = y * (sp * sm) * tanh(0.5 * z)   # sigma(z) - sigma(-z) = tanh(z/2)
        return 0
    d1[0] = NAN
    d2[0] = NAN
    d3[0] = NAN
    if lik == LIK_STEP:
        if z > 0.0:
            lp[0] = 0.0
        elif z < 0.0:
            lp[0] = -INFINITY
        elif z == 0.0:
            lp[0] = GPC_LOG_HALF
        else:
            lp[0] = NAN
        return -1
    if lik == LIK_NOISY_THRESHOLD:
        eps = par[0]
        if z > 0.0:
            lp[0] = log1p(-eps)
        elif z < 0.0:
            lp[0] = log(eps)
        elif z == 0.0:
            lp[0] = GPC_LOG_HALF
        else:
            lp[0] = NAN
        return -1
    if lik == LIK_LAPLACE or lik == LIK_ONE_SIDED:
        lam = par[0]
        z = y - f
        if not (lam > 0.0):
            lp[0] = NAN
        elif lik == LIK_LAPLACE:
            lp[0] = log(0.5 * lam) - lam * fabs(z)
        elif z > 0.0:
            lp[0] = log(lam) - lam * z
        elif z <= 0.0:
            lp[0] = -INFINITY
        else:
            lp[0] = NAN
        return -1
    lp[0] = NAN
    return -1


# ---------------------------------------------------------------------------------
# Logit Gaussian integral F(mu, v) = E[sigma(z)], z ~ N(mu, v): log F and its first
# two mu-derivatives.

cdef inline void _tilted_add(double a, double g, double h, double* mx, double* W,
                             double* mean, double* m2, double* hmean) noexcept nogil:
    # Online log-sum-exp plus weighted mean/variance (West's update) of g and the
    # weighted mean of h, under weights exp(a).  W and m2 are scaled by exp(-mx).
    cdef double w, sc, wn, delta
    if a == -INFINITY or a != a:
        if a != a:
            mx[0] = NAN
        return
    if a > mx[0]:
        sc = exp(mx[0] - a)
        W[0] *= sc
        m2[0] *= sc
        mx[0] = a
    w = exp(a - mx[0])
    wn = W[0] + w
    delta = g - mean[0]
    mean[0] += (w / wn) * delta
    m2[0] += w * delta * (g - mean[0])
    hmean[0] += (w / wn) * (h - hmean[0])
    W[0] = wn


cdef inline void _logit_gh(double mu, double v, const Quad* q, double* L, double* D1,
                           double* D2) noexcept nogil:
    # Gauss-Hermite in log space (mu <= 0, small v).  With tilted weights
    # t_k ~ w_k p_k: d log Z = E_t[(log p)'], d2 log Z = E_t[(log p)''] + Var_t[(log p)'].
    # Var_t[sigma(-z)] = Var_t[sigma(z)] is formed from sigma(z) (small here).
    cdef int k
    cdef double sv = sqrt(v), z, e, sp, sm, lp
    cdef double mx = -INFINITY, W = 0.0, mean = 0.0, m2 = 0.0, hmean = 0.0
    for k in range(q.n):
        z = mu + sv * q.x[k]
        if z >= 0.0:
            e = exp(-z)
            sp = 1.0 / (1.0 + e)
            sm = e * sp
            lp = -log1p(e)
        else:
            e = exp(z)
            sm = 1.0 / (1.0 + e)
            sp = e * sm
            lp = z - log1p(e)
        _tilted_add(q.logw[k] + lp, sp, -sp * sm, &mx, &W, &mean, &m2, &hmean)
    L[0] = mx + log(W)
    D1[0] = 1.0 - mean
    D2[0] = hmean + m2 / W


cdef inline void _logit_lsm(double mu, double v, double* L, double* D1,
                            double* D2) noexcept nogil:
    # Scale-mixture rule: F = sum_j w_j Phi(mu / sqrt(tau_j + v)), mu in [-v/2, 0].
    cdef int j
    cdef double s2, s, x, r, sh
    cdef double mx = -INFINITY, W = 0.0, mean = 0.0, m2 = 0.0, hmean = 0.0
    for j in range(GPC_LSM_N):
        s2 = GPC_LSM_TAU[j] + v
        s = sqrt(s2)
        x = mu / s
        _mills(x, &r, &sh)
        _tilted_add(GPC_LSM_LOGW[j] + log_ndtr_stable(x), r / s, -r * sh / s2,
                    &mx, &W, &mean, &m2, &hmean)
    L[0] = mx + log(W)
    D1[0] = mean
    D2[0] = hmean + m2 / W


cdef inline void _logit_near(double mu, double v, double* L, double* D1,
                             double* D2) noexcept nogil:
    # mu in [-v, 0] (a rounding step past -v is harmless), v large.
    cdef double l, d1, d2
    if mu >= -0.5 * v:
        _logit_lsm(mu, v, L, D1, D2)
    else:
        # F(mu) = exp(mu + v/2) F(-(mu + v)), -(mu + v) in (-v/2, 0].
        _logit_lsm(-(mu + v), v, &l, &d1, &d2)
        L[0] = mu + 0.5 * v + l
        D1[0] = 1.0 - d1
        D2[0] = d2


cdef inline void _logit_step(double mu, double v, double l, double d1, double d2,
                             double* L, double* D1, double* D2) noexcept nogil:
    # From (log G, dlog G, d2log G) with G = F(mu + v) <= 1/2 to F(mu) =
    # exp(mu + v/2) (1 - G).
    cdef double G = exp(l), omg = -expm1(l), a
    a = G * d1 / omg
    L[0] = mu + 0.5 * v + log1p(-G)
    D1[0] = 1.0 - a
    D2[0] = -G * (d2 + d1 * d1) / omg - a * a


cdef inline int _logit_neg(double mu, double v, const Quad* quad, double* L, double* D1,
                           double* D2) noexcept nogil:
    # log F(mu, v) and mu-derivatives for mu <= 0.  Returns -1 (NaN outputs) when a
    # Gauss-Hermite rule is needed but missing.
    cdef int K, k
    cdef double l, d1, d2
    if v <= GPC_LOGIT_GH_VMAX:
        if quad == NULL or quad.n < 1:
            L[0] = NAN
            D1[0] = NAN
            D2[0] = NAN
            return -1
        _logit_gh(mu, v, quad, L, D1, D2)
        return 0
    if mu >= -v:
        _logit_near(mu, v, L, D1, D2)
        return 0
    if mu + 2.5 * v < -40.0:
        # F(mu + 2v) < e^-40: F(mu + v) = exp(mu + 1.5 v) to relative 1e-17.
        _logit_step(mu, v, mu + 1.5 * v, 1.0, 0.0, L, D1, D2)
        return 0
    # Here K <= 40/v + 2.5 steps; mu + K v lands in [-v, 0).
    K = <int>ceil(-mu / v - 1.0)
    if K < 1:
        K = 1
    _logit_near(mu + K * v, v, &l, &d1, &d2)
    for k in range(K - 1, -1, -1):
        _logit_step(mu + k * v, v, l, d1, d2, &l, &d1, &d2)
    L[0] = l
    D1[0] = d1
    D2[0] = d2
    return 0


cdef inline int _logit_logF(double mu, double v, const Quad* quad, double* L, double* D1,
                            double* D2) noexcept nogil:
    # Any mu: F(mu) = 1 - F(-mu) for mu > 0, so the integral is always the small side.
    cdef double l, d1, d2, G, omg, a
    cdef int rc
    if v == 0.0:
        lik_derivs(LIK_LOGIT, 1.0, mu, NULL, L, D1, D2, &l)
        return 0
    if mu <= 0.0:
        return _logit_neg(mu, v, quad, L, D1, D2)
    rc = _logit_neg(-mu, v, quad, &l, &d1, &d2)
    G = exp(l)
    omg = -expm1(l)
    a = G * d1 / omg
    L[0] = log1p(-G)
    D1[0] = a
    D2[0] = -G * (d2 + d1 * d1) / omg - a * a
    return rc


# ---------------------------------------------------------------------------------
# Closed forms: Z = Phi(z) with z = y m / s (probit: s^2 = 1 + v, step: s^2 = v), and
# the noisy threshold Z = eps + (1 - 2 eps) Phi(y m / sqrt v).

cdef inline void _phi_moments(double y, double m, double s2, double* logZ, double* dlogZ,
                              double* d2logZ) noexcept nogil:
    cdef double s = sqrt(s2), z, r, sh
    z = _clamp(y * m / s)
    _mills(z, &r, &sh)
    logZ[0] = log_ndtr_stable(z)
    dlogZ[0] = y * r / s
    d2logZ[0] = -(r * sh) / s2


cdef inline void _step_point(double y, double m, double eps, double* logZ,
                             double* dlogZ_dpar) noexcept nogil:
    # v == 0: Z = eps + (1 - 2 eps) H(y m), with H(0) = 1/2 (so Z = 1/2 at m == 0).
    cdef double z = y * m
    if z > 0.0:
        logZ[0] = log1p(-eps)
        dlogZ_dpar[0] = -1.0 / (1.0 - eps)
    elif z < 0.0:
        logZ[0] = log(eps)
        dlogZ_dpar[0] = 1.0 / eps
    elif z == 0.0:
        logZ[0] = GPC_LOG_HALF
        dlogZ_dpar[0] = 0.0
    else:
        logZ[0] = NAN
        dlogZ_dpar[0] = NAN


cdef inline void _noisy_moments(double y, double m, double v, double eps, double* logZ,
                                double* dlogZ, double* d2logZ,
                                double* dlogZ_dpar) noexcept nogil:
    cdef double s, z, lphi, la, w, omw, r, sh, g
    if eps <= 0.0:
        # eps = 0 is the step likelihood; d log Z / d eps = (1 - 2 Phi) / Phi there.
        if v == 0.0:
            _step_point(y, m, 0.0, logZ, dlogZ_dpar)
            dlogZ[0] = 0.0
            d2logZ[0] = 0.0
            return
        _phi_moments(y, m, v, logZ, dlogZ, d2logZ)
        z = _clamp(y * m / sqrt(v))
        dlogZ_dpar[0] = -erf(z / GPC_SQRT2) * exp(-logZ[0])
        return
    if v == 0.0:
        _step_point(y, m, eps, logZ, dlogZ_dpar)
        dlogZ[0] = 0.0
        d2logZ[0] = 0.0
        return
    s = sqrt(v)
    z = _clamp(y * m / s)
    lphi = log_ndtr_stable(z)
    # la = log of (Gaussian part / eps part); w = (1 - 2 eps) Phi / Z = sigma(la).
    la = log1p(-2.0 * eps) + lphi - log(eps)
    w = _expit(la)
    omw = _expit(-la)
    if z > 0.0:
        logZ[0] = log1p(-(eps + (1.0 - 2.0 * eps) * ndtr(-z)))
    else:
        logZ[0] = log(eps) - log_expit(-la)       # log(eps + (1 - 2 eps) Phi(z))
    _mills(z, &r, &sh)
    # d log Z / dz = g = w r;  d2 log Z / dz2 = -g (z + g), z + g = w s + (1 - w) z.
    g = w * r
    dlogZ[0] = y * g / s
    d2logZ[0] = -g * (w * sh + omw * z) / v
    # d log Z / d eps = (1 - 2 Phi(z)) / Z, 1 - 2 Phi(z) = -erf(z / sqrt 2).
    dlogZ_dpar[0] = -erf(z / GPC_SQRT2) * exp(-logZ[0])


# ---------------------------------------------------------------------------------
# Exponential-noise regression likelihoods, rate lam = par[0] > 0, noise z = y - f:
#     Laplace:      p(y|f) = (lam/2) exp(-lam |z|),
#     one-sided:    p(y|f) = lam exp(-lam z) for z > 0, 0 for z <= 0.
# With f ~ N(m, v) the noise is z ~ N(mu, v), mu = y - m; write s = sqrt(v), t = lam s,
# x = mu/s.  Completing the square,
#     int_0^inf exp(-lam z) N(z; mu, v) dz = exp(-lam mu + t^2/2) Phi(a),  a = x - t,
# and the tilted law of z on that half line is N(mu - lam v, v) truncated to z > 0:
# E[z] = s sh(a), Var[z] = v (1 - r(a) sh(a)) with r = N/Phi and sh = a + r (_mills).
# With ell(a) = log Phi(a) + a^2/2 = log(erfcx(-a/sqrt2)/2) (increasing, ell' = sh) the
# same integral is exp(-x^2/2 + ell(a)); that form is used for a < 0 (no cancellation
# between t^2/2 and log Phi(a) ~ -a^2/2), the first one for a >= 0 (no cancellation
# between -x^2/2 and a^2/2).
#
# One-sided: Z = lam exp(-x^2/2 + ell(a)) and
#     d log Z/dm = lam - r/s = (x - sh)/s  (the first form for a >= 0, the second for
#                  a < 0, where r ~ -a: each is free of cancellation where it is used,
#                  apart from the sign change of the derivative itself),
#     d2 log Z/dm2 = -r sh / v,   d log Z/d lam = 1/lam - E_t[z],   E_t[z] = s sh.
# Laplace: Z = (lam/2)(A + B), A the integral above (z > 0, a1 = x - t) and B its mirror
# image (z < 0, a2 = -x - t).  With d = log A - log B = ell(a1) - ell(a2) (the sign of
# mu; for small |x| the integral of sh over [a2, a1], see _ell_diff), wA = sigma(d) =
# P_t(z > 0) and wB = 1 - wA:
#     d log Z/dm = lam (wA - wB) = lam tanh(d/2)     (= E_t[d log p/df]),
#     d2 log Z/dm2 = -(2 lam/s) wA wB (sh(a1) + sh(a2)),
#     d log Z/d lam = 1/lam - E_t|z|,   E_t|z| = s (wA sh(a1) + wB sh(a2)).
# The second derivative: as a mixture of two truncated normals,
# v d2 = -(wA r1 sh1 + wB r2 sh2) + wA wB (sh1 + sh2)^2, whose terms cancel both for
# small and for large t; but wA r1 = wB r2 (both are N(x)/(A + B)), hence
# wA r1 = wA wB (r1 + r2), and with a1 + a2 = -2t the sum collapses to the product
# -2 t wA wB (sh1 + sh2): positive factors only, no cancellation anywhere.
# v == 0: the point values log p(y|m), with zero m-derivatives (the convention of the
# step likelihood), d log Z/d lam = 1/lam - E|z| and E[z] as the v -> 0 limits (the
# one-sided tilted law tends to a point mass at max(mu, 0)).

cdef inline double _ell(double a) noexcept nogil:
    # log Phi(a) + a^2/2 (+inf for a > ~1.9e154, where a^2 overflows).
    if a >= 0.0:
        return 0.5 * a * a + log_ndtr_stable(a)
    return log(0.5 * erfcx(-a / GPC_SQRT2))


cdef inline double _ell_diff(double x, double t) noexcept nogil:
    # ell(x - t) - ell(-x - t) for x >= 0, t > 0 with a small relative error.  The
    # direct difference loses ~eps |ell| / d, badly for x -> 0 (where d ~ 2 x sh(-t));
    # there d = int sh over [-x - t, x - t] by the 10-point Gauss-Legendre rule, used
    # for x <= (t + 2)/4.  sh is analytic: its singularities (the zeros of Phi) lie in
    # Re a > 1.9, at distance > t + 1.9 from -t, so the rule converges like 7.7^-20.
    cdef int k
    cdef double acc = 0.0, u, r, sh1, sh2
    if x <= 0.25 * (t + 2.0):
        for k in range(5):
            u = x * GPC_GL10_X[k]
            _mills(u - t, &r, &sh1)
            _mills(-u - t, &r, &sh2)
            acc += GPC_GL10_W[k] * (sh1 + sh2)
        return x * acc
    return _ell(x - t) - _ell(-x - t)


cdef inline void _nan_moments(double* logZ, double* dlogZ, double* d2logZ,
                              double* dlogZ_dpar, double* em) noexcept nogil:
    logZ[0] = NAN
    dlogZ[0] = NAN
    d2logZ[0] = NAN
    dlogZ_dpar[0] = NAN
    em[0] = NAN


cdef inline void _one_sided_moments(double y, double m, double v, double lam,
                                    double* logZ, double* dlogZ, double* d2logZ,
                                    double* dlogZ_dpar, double* em) noexcept nogil:
    # em: E_t[y - f] under the tilted law p(y|f) N(f; m, v) / Z.
    cdef double mu = y - m, s, x, a, r, sh
    if not (lam > 0.0 and v >= 0.0):
        _nan_moments(logZ, dlogZ, d2logZ, dlogZ_dpar, em)
        return
    if v == 0.0:
        if mu > 0.0:
            logZ[0] = log(lam) - lam * mu
            em[0] = mu
        elif mu <= 0.0:
            logZ[0] = -INFINITY
            em[0] = 0.0
        else:
            _nan_moments(logZ, dlogZ, d2logZ, dlogZ_dpar, em)
            return
        dlogZ[0] = 0.0
        d2logZ[0] = 0.0
        dlogZ_dpar[0] = 1.0 / lam - em[0]
        return
    s = sqrt(v)
    x = _clamp(mu / s)
    a = x - lam * s
    _mills(a, &r, &sh)
    if a >= 0.0:
        logZ[0] = log(lam) - lam * (mu - 0.5 * lam * v) + log_ndtr_stable(a)
        dlogZ[0] = lam - r / s
    else:
        logZ[0] = log(lam) - 0.5 * x * x + log(0.5 * erfcx(-a / GPC_SQRT2))
        dlogZ[0] = (x - sh) / s
    d2logZ[0] = -(r * sh) / v
    em[0] = s * sh
    dlogZ_dpar[0] = 1.0 / lam - em[0]


cdef inline void _laplace_moments(double y, double m, double v, double lam,
                                  double* logZ, double* dlogZ, double* d2logZ,
                                  double* dlogZ_dpar, double* em) noexcept nogil:
    # em: E_t|y - f| under the tilted law.  The computation runs on the side of the
    # sign of mu ("d", the larger weight) and the other one ("o"): d = ell(ad) -
    # ell(ao) >= 0, and log Z = log(lam/2) + log Ad + log1p(exp(-d)).
    cdef double mu = y - m, s, t, x, ad, ao, rd, shd, ro, sho, d, e, wd, wo, lad
    if not (lam > 0.0 and v >= 0.0):
        _nan_moments(logZ, dlogZ, d2logZ, dlogZ_dpar, em)
        return
    if v == 0.0:
        em[0] = fabs(mu)
        logZ[0] = log(0.5 * lam) - lam * em[0]
        dlogZ[0] = 0.0 if mu == mu else NAN
        d2logZ[0] = dlogZ[0]
        dlogZ_dpar[0] = 1.0 / lam - em[0]
        return
    s = sqrt(v)
    t = lam * s
    x = fabs(_clamp(mu / s))
    ad = x - t
    ao = -x - t
    _mills(ad, &rd, &shd)
    _mills(ao, &ro, &sho)
    d = _ell_diff(x, t)
    e = exp(-d)
    wd = 1.0 / (1.0 + e)
    wo = e * wd
    if ad >= 0.0:
        lad = -lam * (fabs(mu) - 0.5 * lam * v) + log_ndtr_stable(ad)
    else:
        lad = -0.5 * x * x + log(0.5 * erfcx(-ad / GPC_SQRT2))
    logZ[0] = log(0.5 * lam) + lad + log1p(e)
    dlogZ[0] = lam * tanh(0.5 * d)
    if mu < 0.0:
        dlogZ[0] = -dlogZ[0]
    d2logZ[0] = -(2.0 * lam / s) * (wd * wo) * (shd + sho)
    em[0] = s * (wd * shd + wo * sho)
    dlogZ_dpar[0] = 1.0 / lam - em[0]


# Z = int p(y|f) N(f; m, v) df: log Z, d log Z/dm, d^2 log Z/dm^2 and d log Z/d par[0]
# (0 for likelihoods without parameters).  v >= 0; v == 0 gives the point values.
# Gaussian (par[0] = s2): exact, Z = N(y; m, v + s2), d log Z/d s2 =
# ((y - m)^2/(v + s2)^2 - 1/(v + s2))/2.  Laplace / one-sided exponential (par[0] =
# lam): closed forms through log Phi and the Mills ratio (see above), finite wherever
# the true value is; d log Z/d lam = 1/lam - E_t|y - f| (resp. E_t[y - f]).
# (Implementation detail: v < 0 or NaN gives NaN, as does a rate lam <= 0 or NaN.
# Laplace / one-sided at v == 0: log p(y|m) (-inf for the one-sided with y <= m), zero
# m-derivatives and d log Z/d lam = 1/lam - |y - m| (resp. 1/lam - max(y - m, 0)), the
# v -> 0 limit.  Step / noisy threshold at v == 0
# return the point values with zero m-derivatives: Z = eps + (1 - 2 eps) H(y m) with
# H(0) = 1/2, so log Z = log(1/2) at m == 0, where the v -> 0 limit of the
# derivatives diverges, and log Z = -inf for the step with y m < 0 (there too the
# limit of d log Z/dm is infinite, 0 is returned).  Logit with v <= GPC_LOGIT_GH_VMAX needs `quad`;
# without it (NULL or n == 0) the outputs are NaN.)
cdef inline void lik_gauss_moments(int lik, double y, double m, double v, const double* par,
                                   const Quad* quad, double* logZ, double* dlogZ,
                                   double* d2logZ, double* dlogZ_dpar) noexcept nogil:
    cdef double L, D1, D2
    dlogZ_dpar[0] = 0.0
    if not (v >= 0.0):
        logZ[0] = NAN
        dlogZ[0] = NAN
        d2logZ[0] = NAN
        dlogZ_dpar[0] = NAN
        return
    if lik == LIK_PROBIT:
        _phi_moments(y, m, 1.0 + v, logZ, dlogZ, d2logZ)
    elif lik == LIK_LOGIT:
        _logit_logF(y * m, v, quad, &L, &D1, &D2)
        logZ[0] = L
        dlogZ[0] = y * D1
        d2logZ[0] = D2
    elif lik == LIK_STEP:
        if v == 0.0:
            _step_point(y, m, 0.0, logZ, &L)
            dlogZ[0] = 0.0
            d2logZ[0] = 0.0
        else:
            _phi_moments(y, m, v, logZ, dlogZ, d2logZ)
    elif lik == LIK_NOISY_THRESHOLD:
        _noisy_moments(y, m, v, par[0], logZ, dlogZ, d2logZ, dlogZ_dpar)
    elif lik == LIK_GAUSSIAN:
        _gauss_moments(y, m, v, par[0], logZ, dlogZ, d2logZ, dlogZ_dpar)
    elif lik == LIK_LAPLACE:
        _laplace_moments(y, m, v, par[0], logZ, dlogZ, d2logZ, dlogZ_dpar, &L)
    elif lik == LIK_ONE_SIDED:
        _one_sided_moments(y, m, v, par[0], logZ, dlogZ, d2logZ, dlogZ_dpar, &L)
    else:
        logZ[0] = NAN
        dlogZ[0] = NAN
        d2logZ[0] = NAN
        dlogZ_dpar[0] = NAN


# ---------------------------------------------------------------------------------
# Tempered likelihoods: the Gaussian integral of p(y|f)^c, 0 < c < 1 (EP's site of an
# example whose weight c is below 1, see _model.pxd).  The step is unchanged (its p is
# 0 or 1); the noisy threshold, Gaussian, Laplace and one-sided exponential are
# constants times the same likelihoods with other parameters; the probit and the logit
# are integrated numerically.

cdef inline void _sort(double* x, int n) noexcept nogil:
    # Insertion sort of a few numbers, ascending.
    cdef int i, j
    cdef double t
    for i in range(1, n):
        t = x[i]
        j = i - 1
        while j >= 0 and x[j] > t:
            x[j + 1] = x[j]
            j -= 1
        x[j + 1] = t


cdef inline double _tempered_h(int lik, double y, double m, double v, double c,
                               double f) noexcept nogil:
    # c log p(y|f) - (f - m)^2 / (2v) for the probit or the logit.
    cdef double lp = log_ndtr_stable(y * f) if lik == LIK_PROBIT else log_expit(y * f)
    return c * lp - 0.5 * (f - m) * (f - m) / v


cdef inline double _tempered_slope(int lik, double y, double m, double v, double c,
                                   double f, double* curvature) noexcept nogil:
    # h'(f) of _tempered_h, and h''(f) in curvature.
    cdef double lp, g1, g2, g3
    lik_derivs(lik, y, f, NULL, &lp, &g1, &g2, &g3)
    curvature[0] = c * g2 - 1.0 / v
    return c * g1 - (f - m) / v


cdef inline double _tempered_reach(int lik, double y, double m, double v, double c,
                                   double f, double a, double level, double t,
                                   double scale) noexcept nogil:
    # The t > t0 at which h(f + a t) = level (< h(f + a t0)), h = _tempered_h
    # concave with its maximum at f, by Newton's method from a point past it (on a
    # concave decreasing function Newton's steps then fall monotonically onto the
    # root), to within 5 % of the step t - t0: the point only places a panel's end.
    cdef double hpp, slope, step, t0 = t
    cdef int it
    t = t + scale * sqrt(2.0 * (_tempered_h(lik, y, m, v, c, f + a * t) - level))
    for it in range(100):
        if _tempered_h(lik, y, m, v, c, f + a * t) < level:
            break
        t = t0 + 2.0 * (t - t0)                 # not yet past the level
    for it in range(50):
        slope = a * _tempered_slope(lik, y, m, v, c, f + a * t, &hpp)
        if not (slope < 0.0):
            break
        step = (_tempered_h(lik, y, m, v, c, f + a * t) - level) / slope
        t -= step
        if fabs(step) <= 0.05 * (t - t0) or t <= t0:
            break
    return t if t > t0 else t0 + scale


cdef inline double _tempered_mode(int lik, double y, double m, double v,
                                  double c) noexcept nogil:
    # The maximum of the concave _tempered_h (v > 0), by Newton's method kept inside
    # a bracket [lo, hi] with h'(lo) > 0 > h'(hi).
    cdef double lo = m, hi = m, step, hp, hpp, f
    cdef int it
    step = sqrt(v) + 1.0
    for it in range(200):                                   # h'(lo) > 0
        if _tempered_slope(lik, y, m, v, c, lo, &hpp) > 0.0:
            break
        lo -= step
        step *= 2.0
    step = sqrt(v) + 1.0
    for it in range(200):                                   # h'(hi) < 0
        if _tempered_slope(lik, y, m, v, c, hi, &hpp) < 0.0:
            break
        hi += step
        step *= 2.0
    f = 0.5 * (lo + hi)
    for it in range(200):
        hp = _tempered_slope(lik, y, m, v, c, f, &hpp)
        if hp > 0.0:
            lo = f
        elif hp < 0.0:
            hi = f
        else:
            break
        step = -hp / hpp
        if not (lo < f + step < hi):
            step = 0.5 * (lo + hi) - f
        f += step
        if fabs(step) <= 1e-15 * (fabs(f) + 1.0 / sqrt(-hpp)):
            break
    return f


cdef inline void _tempered_quadrature(int lik, double y, double m, double v, double c,
                                      double* logZ, double* dlogZ,
                                      double* d2logZ) noexcept nogil:
    # Z = int N(f; m, v) p(y|f)^c df for the probit or the logit (v > 0): h =
    # _tempered_h is concave, maximised at f* by Newton's method kept inside a
    # bracket; the integral runs between the points on either side of f* where h
    # has fallen by GPC_TQ_DROP, by 10-point Gauss-Legendre on GPC_TQ_PANELS panels
    # on each side over which h falls by equal steps (so that the integrand changes
    # by the same factor over each, whether it falls as a Gaussian or as the
    # logit's exponential tail), cut further where the likelihood varies on its own
    # scale even where h hardly falls (c small): at every other integer within
    # GPC_TQ_CORE of 0 and geometrically beyond.  d log Z/dm = (E[f] - m)/v and
    # d2 log Z/dm2 = (Var[f] - v)/v^2 under the tilted law.
    cdef double f = _tempered_mode(lik, y, m, v, c), hpp, h0, scale, t, a, x, e
    cdef double half, mid, s0 = 0.0, s1 = 0.0, s2 = 0.0, mean
    cdef double cuts[128]           # >= 2 PANELS + 2 CORE + 2 GEOMETRIC + 1
    cdef double reach[2]
    cdef int side, k, j, n_cuts = 1
    h0 = _tempered_h(lik, y, m, v, c, f)
    _tempered_slope(lik, y, m, v, c, f, &hpp)
    scale = 1.0 / sqrt(-hpp)                               # the Laplace scale
    cuts[0] = f
    for side in range(2):
        a = -1.0 if side == 0 else 1.0
        t = 0.0
        for j in range(1, GPC_TQ_PANELS + 1):
            t = _tempered_reach(lik, y, m, v, c, f, a, h0 - GPC_TQ_DROP * j
                                / GPC_TQ_PANELS, t, scale)
            cuts[n_cuts] = f + a * t
            n_cuts += 1
        reach[side] = t
    for k in range(-GPC_TQ_CORE, GPC_TQ_CORE + 1 if scale > 0.5 else -GPC_TQ_CORE, 2):
        # Where panels can be wider than the likelihood's unit scale: f at every
        # other integer of [-CORE, CORE], then at +-CORE 2^j, where the
        # likelihood's log varies on the scale |f| (log Phi(z) ~ -z^2/2 -
        # log(-z), log sigma(z) ~ -exp(-z)).
        for j in range(GPC_TQ_GEOMETRIC if k * k == GPC_TQ_CORE * GPC_TQ_CORE else 1):
            x = k * pow(2.0, j)
            if f - reach[0] < x < f + reach[1]:
                cuts[n_cuts] = x
                n_cuts += 1
    _sort(cuts, n_cuts)
    for j in range(n_cuts - 1):
        half = 0.5 * (cuts[j + 1] - cuts[j])
        mid = 0.5 * (cuts[j + 1] + cuts[j]) - f              # offsets from f*
        for k in range(10):
            x = mid + half * (GPC_GL10_X[k % 5] if k < 5 else -GPC_GL10_X[k % 5])
            e = half * GPC_GL10_W[k % 5] * exp(
                _tempered_h(lik, y, m, v, c, f + x) - h0)
            s0 += e
            s1 += e * x
            s2 += e * x * x
    mean = s1 / s0
    logZ[0] = h0 + log(s0) - 0.5 * (GPC_LOG_2PI + log(v))
    dlogZ[0] = (f + mean - m) / v
    d2logZ[0] = ((s2 / s0 - mean * mean) - v) / (v * v)


cdef inline double lik_tempered_eps(double e, double c, double* a) noexcept nogil:
    # The noisy threshold of eps = e to the power c is A times that of eps' = e^c /
    # A, A = e^c + (1 - e)^c: eps' (returned) and A.
    a[0] = pow(e, c) + pow(1.0 - e, c)
    return pow(e, c) / a[0]


cdef inline bint lik_tempers(int lik) noexcept nogil:
    # Whether lik_tempered_moments has the likelihood's tempered integrals (a new
    # code is fitted by power EP until it does, see _model.pxd).
    return (lik == LIK_PROBIT or lik == LIK_LOGIT or lik == LIK_STEP
            or lik == LIK_NOISY_THRESHOLD or lik == LIK_GAUSSIAN
            or lik == LIK_LAPLACE or lik == LIK_ONE_SIDED)


cdef inline void lik_tempered_moments(int lik, double y, double m, double v,
                                      const double* par, double c, const Quad* quad,
                                      double* logZ, double* dlogZ, double* d2logZ,
                                      double* dlogZ_dpar) noexcept nogil:
    # lik_gauss_moments of p(y|f)^c (0 < c <= 1; c == 1 is lik_gauss_moments).  The
    # parameter derivative is that of the tempered integral.
    cdef double q, a, e, em, r
    if c == 1.0:
        lik_gauss_moments(lik, y, m, v, par, quad, logZ, dlogZ, d2logZ, dlogZ_dpar)
        return
    dlogZ_dpar[0] = 0.0
    if not (c > 0.0 and c < 1.0 and v >= 0.0):
        _nan_moments(logZ, dlogZ, d2logZ, dlogZ_dpar, &em)
    elif (lik == LIK_PROBIT or lik == LIK_LOGIT) and v == 0.0:
        lik_derivs(lik, y, m, NULL, &a, &e, &r, &q)     # the point values
        logZ[0] = c * a
        dlogZ[0] = c * e
        d2logZ[0] = c * r
    elif lik == LIK_PROBIT or lik == LIK_LOGIT:
        _tempered_quadrature(lik, y, m, v, c, logZ, dlogZ, d2logZ)
    elif lik == LIK_STEP:
        lik_gauss_moments(lik, y, m, v, par, quad, logZ, dlogZ, d2logZ, dlogZ_dpar)
    elif lik == LIK_NOISY_THRESHOLD:
        # lik_tempered_eps; d eps'/d eps = c (eps (1 - eps))^(c-1) / A^2.
        e = par[0]
        _noisy_moments(y, m, v, lik_tempered_eps(e, c, &a), logZ, dlogZ, d2logZ,
                       dlogZ_dpar)
        logZ[0] += log(a)
        dlogZ_dpar[0] = (c * (pow(e, c - 1.0) - pow(1.0 - e, c - 1.0)) / a
                         + dlogZ_dpar[0] * c * pow(e * (1.0 - e), c - 1.0) / (a * a))
    elif lik == LIK_GAUSSIAN:
        # N(y; f, s2)^c = (2 pi s2)^((1 - c)/2) c^(-1/2) N(y; f, s2 / c).
        q = par[0]
        _gauss_moments(y, m, v, q / c, logZ, dlogZ, d2logZ, dlogZ_dpar)
        logZ[0] += 0.5 * (1.0 - c) * (GPC_LOG_2PI + log(q)) - 0.5 * log(c)
        dlogZ_dpar[0] = 0.5 * (1.0 - c) / q + dlogZ_dpar[0] / c
    elif lik == LIK_LAPLACE or lik == LIK_ONE_SIDED:
        # Rate lam: p^c is lam^c / (c lam) (Laplace: (lam/2)^c 2 / (c lam)) times the
        # same likelihood of rate c lam.
        q = par[0]
        r = c * q
        if lik == LIK_LAPLACE:
            _laplace_moments(y, m, v, r, logZ, dlogZ, d2logZ, dlogZ_dpar, &em)
            logZ[0] += c * log(0.5 * q) + log(2.0 / r)
        else:
            _one_sided_moments(y, m, v, r, logZ, dlogZ, d2logZ, dlogZ_dpar, &em)
            logZ[0] += c * log(q) - log(r)
        dlogZ_dpar[0] = (c - 1.0) / q + c * dlogZ_dpar[0]
    else:
        _nan_moments(logZ, dlogZ, d2logZ, dlogZ_dpar, &em)


# p(y = +1) under f ~ N(m, v).  Not meaningful for the regression likelihoods
# (Gaussian, Laplace, one-sided exponential), which have no class +1: NaN is returned
# for them (and for unknown codes); their predictive is the latent N(m, v) plus the
# noise.
# (Implementation detail: step / noisy threshold at v == 0 use H(0) = 1/2; logit
# with v <= GPC_LOGIT_GH_VMAX and no `quad` gives NaN; v < 0 gives NaN.)
cdef inline double lik_predict(int lik, double m, double v, const double* par,
                               const Quad* quad) noexcept nogil:
    cdef double L, D1, D2, h, eps
    if not (v >= 0.0):
        return NAN
    if lik == LIK_PROBIT:
        return ndtr(m / sqrt(1.0 + v))
    if lik == LIK_LOGIT:
        if m == 0.0:
            return 0.5      # exactly, by symmetry (quadrature gives 1/2 +- an ulp)
        if m < 0.0:
            _logit_logF(m, v, quad, &L, &D1, &D2)
            return exp(L)
        _logit_logF(-m, v, quad, &L, &D1, &D2)
        return -expm1(L)
    if lik == LIK_STEP or lik == LIK_NOISY_THRESHOLD:
        if v == 0.0:
            if m > 0.0:
                h = 1.0
            elif m < 0.0:
                h = 0.0
            elif m == 0.0:
                h = 0.5
            else:
                h = NAN
        else:
            h = ndtr(_clamp(m / sqrt(v)))
        if lik == LIK_STEP:
            return h
        eps = par[0]
        return eps + (1.0 - 2.0 * eps) * h
    return NAN


# EM statistic of the likelihood parameter: the expectation of the likelihood's
# sufficient statistic under the tilted law p_t(f) = p(y|f) N(f; m, v) / Z (the exact
# posterior of f for one site; a Gaussian approximation to it would give the one-sided
# likelihood a zero, i.e. log p = -inf, with positive probability):
#     Gaussian:    E_t[(y - f)^2] = (y - m_t)^2 + v_t   (m_t, v_t the tilted moments),
#     Laplace:     E_t[|y - f|],
#     one-sided:   E_t[y - f].
# The M-step maximising sum_i E_t[log p(y_i|f_i)] is closed-form in the mean of the
# statistics: s2 = mean(stat) (Gaussian), lam = 1/mean(stat) (the exponential ones).
# Returns 0, or -1 (stat = NaN) for likelihoods without such a statistic.
# (Implementation detail: v == 0 gives the point value (y - m)^2, |y - m| and, for the
# one-sided, max(y - m, 0), the v -> 0 limit; v < 0 or NaN, or an invalid parameter,
# gives NaN with return value 0.)
cdef inline int lik_em_stat(int lik, double y, double m, double v, const double* par,
                            double* stat) noexcept nogil:
    cdef double a, b, c, d, g, e
    if lik == LIK_GAUSSIAN:
        if not (par[0] > 0.0 and v >= 0.0):
            stat[0] = NAN
            return 0
        # y - m_t = (y - m) s2/(v + s2), v_t = v s2/(v + s2).
        g = par[0] / (v + par[0])
        e = (y - m) * g
        stat[0] = e * e + v * g
        return 0
    if lik == LIK_LAPLACE:
        _laplace_moments(y, m, v, par[0], &a, &b, &c, &d, stat)
        return 0
    if lik == LIK_ONE_SIDED:
        _one_sided_moments(y, m, v, par[0], &a, &b, &c, &d, stat)
        return 0
    stat[0] = NAN
    return -1
