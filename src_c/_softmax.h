/* The loop over the points of the softmax predictive's rule, for one test point
 * (_softmax.pyx says what it computes; gpc.likelihoods.Softmax documents the rule).
 *
 * For each point u (the columns of Ut, d x n, one row per coordinate) and class c:
 *
 *     g = mean + R u,  a = mean + (R - Q) u,
 *     h_c = Lambda(a_c - logsumexp(g_{-c}), s2_c),   z = sum_c h_c - 1,
 *
 * and the sums of h_c, h_c z, z and z^2 over the points are returned.  The points
 * are taken in blocks of GPC_SMX_BLOCK, each step a loop over the block that the
 * compiler turns into SIMD code (GPC_CLONES adds an AVX2 clone): the matrix-vector
 * products, the exponentials relative to the largest g (_vexp.h), the logarithms
 * below, and the table look-ups of Lambda.  logsumexp(g_{-c}) - max g is
 * log(S - e_c) with e = exp(g - max g) and S its sum; for the top class, whose own
 * term is 1, the sum of the others is formed without it, and where even that
 * underflows (the top class ahead of all others by more than about 640) it is
 * recomputed relative to the runner-up, one point at a time.
 */
#ifndef GPC_SOFTMAX_H
#define GPC_SOFTMAX_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include "_platform.h"
#include "_vexp.h"

#define GPC_SMX_BLOCK 64

/* Work space (doubles) that gpc_softmax_sums needs for C classes. */
#define GPC_SMX_WORK(C) (3 * (long) (C) * GPC_SMX_BLOCK + 5 * GPC_SMX_BLOCK)

/* log(x) for a normal positive x, branch-free: x = 2^e m with m in [sqrt(1/2),
 * sqrt(2)), log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172, by its series to
 * s^19 (truncation below 3e-17 relative); within a few ulp. */
GPC_ALWAYS_INLINE double gpc_smx_log(double x)
{
    const double ln2_hi = 6.93147180369123816490e-01;   /* 32 significant bits */
    const double ln2_lo = 1.90821492927058770002e-10;
    const double two52 = 4503599627370496.0;
    uint64_t b, eb, mb;
    double m, e, s, z, r, q, e1, mh;
    memcpy(&b, &x, sizeof b);
    eb = (b >> 52) | 0x4330000000000000ULL;            /* 2^52 + biased exponent */
    mb = (b & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;
    memcpy(&e, &eb, sizeof e);
    memcpy(&m, &mb, sizeof m);                          /* in [1, 2) */
    e -= two52 + 1023.0;
    e1 = e + 1.0;                      /* both sides computed: a select, no branch */
    mh = 0.5 * m;
    e = m > 1.4142135623730951 ? e1 : e;
    m = m > 1.4142135623730951 ? mh : m;
    s = (m - 1.0) / (m + 1.0);
    z = s * s;
    r = 2.0 * s;
    q = (1.0 / 3.0 + z * (1.0 / 5.0 + z * (1.0 / 7.0 + z * (1.0 / 9.0))))
        + (z * z) * (z * z) * (1.0 / 11.0 + z * (1.0 / 13.0 + z * (1.0 / 15.0
           + z * (1.0 / 17.0 + z * (1.0 / 19.0)))));
    return e * ln2_hi + (r + (r * z * q + e * ln2_lo));
}

/* The cubic of each interval of a table slice (values sv and node spacing times
 * derivatives sd at nx nodes): coef[4 j + k] is the coefficient of t^k on interval
 * j, t in [0, 1] (cubic Hermite interpolation). */
GPC_CLONES
static void gpc_smx_coef(const double *restrict sv, const double *restrict sd, int nx,
                         double *restrict coef)
{
    int j;
    for (j = 0; j < nx - 1; j++) {
        double dv = sv[j + 1] - sv[j];
        coef[4 * j] = sv[j];
        coef[4 * j + 1] = sd[j];
        coef[4 * j + 2] = 3.0 * dv - 2.0 * sd[j] - sd[j + 1];
        coef[4 * j + 3] = sd[j] + sd[j + 1] - 2.0 * dv;
    }
}

/* h[p] = the cubic of interval J[p] at t = T[p], for p < nb. */
GPC_ALWAYS_INLINE void gpc_smx_eval(const double *restrict coef, const int *restrict J,
                                    const double *restrict T, int nb, double *restrict h)
{
    int p = 0;
#ifdef GPC_VECTOR
    for (; p + 4 <= nb; p += 4) {
        /* the four cubics' coefficients, transposed in registers */
        gpc_v4 k0 = gpc_v4_load(coef + 4 * J[p]), k1 = gpc_v4_load(coef + 4 * J[p + 1]);
        gpc_v4 k2 = gpc_v4_load(coef + 4 * J[p + 2]), k3 = gpc_v4_load(coef + 4 * J[p + 3]);
        gpc_v4 t0 = __builtin_shufflevector(k0, k1, 0, 4, 2, 6);
        gpc_v4 t1 = __builtin_shufflevector(k0, k1, 1, 5, 3, 7);
        gpc_v4 t2 = __builtin_shufflevector(k2, k3, 0, 4, 2, 6);
        gpc_v4 t3 = __builtin_shufflevector(k2, k3, 1, 5, 3, 7);
        gpc_v4 c0 = __builtin_shufflevector(t0, t2, 0, 1, 4, 5);
        gpc_v4 c1 = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);
        gpc_v4 c2 = __builtin_shufflevector(t0, t2, 2, 3, 6, 7);
        gpc_v4 c3 = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
        gpc_v4 t = gpc_v4_load(T + p);
        *(gpc_v4u *) (h + p) = c0 + t * (c1 + t * (c2 + t * c3));
    }
#endif
    for (; p < nb; p++) {
        const double *k = coef + 4 * J[p];
        double t = T[p];
        h[p] = k[0] + t * (k[1] + t * (k[2] + t * k[3]));
    }
}

/* log(sum_{j != top} exp(g_j)) - max g for one point (column p of G, stride B) whose
 * other classes' exponentials relative to the top one underflow. */
static double gpc_smx_lse_top(const double *G, int C, int p, double M)
{
    int j, top = 0;
    double m2 = -INFINITY, s = 0.0;
    while (G[top * GPC_SMX_BLOCK + p] < M)
        top++;
    for (j = 0; j < C; j++)
        if (j != top && G[j * GPC_SMX_BLOCK + p] > m2)
            m2 = G[j * GPC_SMX_BLOCK + p];
    for (j = 0; j < C; j++)
        if (j != top)
            s += exp(G[j * GPC_SMX_BLOCK + p] - m2);
    return (m2 - M) + log(s);
}

/* g (G) and a (A) for the points p0 .. p0 + nb - 1. */
GPC_ALWAYS_INLINE void gpc_smx_affine(int C, int d, long n, long p0, int nb,
                                      const double *restrict Ut,
                                      const double *restrict mean,
                                      const double *restrict R,
                                      const double *restrict RQ,
                                      double *restrict G, double *restrict A)
{
    int j, k, p;
    for (j = 0; j < C; j++) {
        double *restrict g = G + j * GPC_SMX_BLOCK, *restrict a = A + j * GPC_SMX_BLOCK;
        for (p = 0; p < nb; p++) {
            g[p] = mean[j];
            a[p] = mean[j];
        }
        for (k = 0; k < d; k++) {
            const double *restrict u = Ut + k * n + p0;
            double r = R[j * d + k], q = RQ[j * d + k];
            for (p = 0; p < nb; p++) {
                g[p] += r * u[p];
                a[p] += q * u[p];
            }
        }
    }
}

/* L_c = logsumexp(g_{-c}) - max g into E, for one block (G as above; E, M, S, Sx and
 * T scratch). */
GPC_ALWAYS_INLINE void gpc_smx_lse_others(int C, int nb, const double *restrict G,
                                          double *restrict E, double *restrict M,
                                          double *restrict S, double *restrict Sx,
                                          double *restrict T)
{
    int j, p, low = 0;
    for (p = 0; p < nb; p++)
        M[p] = G[p];
    for (j = 1; j < C; j++)
        for (p = 0; p < nb; p++)
            M[p] = G[j * GPC_SMX_BLOCK + p] > M[p] ? G[j * GPC_SMX_BLOCK + p] : M[p];
    for (j = 0; j < C; j++) {
        double *e = E + j * GPC_SMX_BLOCK;
        for (p = 0; p < nb; p++) {
            double v = G[j * GPC_SMX_BLOCK + p] - M[p];
            e[p] = v > -746.0 ? v : -746.0;
        }
        gpc_scaled_exp(e, nb, 1.0);
    }
    for (p = 0; p < nb; p++) {
        S[p] = 0.0;
        Sx[p] = 0.0;                       /* the classes below the top */
        T[p] = -1.0;                       /* the top classes but one */
    }
    for (j = 0; j < C; j++)
        for (p = 0; p < nb; p++) {
            double e = E[j * GPC_SMX_BLOCK + p], top = 1.0, zero = 0.0;
            double below = G[j * GPC_SMX_BLOCK + p] < M[p] ? top : zero;
            S[p] += e;
            Sx[p] += below * e;
            T[p] += top - below;
        }
    for (p = 0; p < nb; p++) {
        Sx[p] += T[p];                     /* exp(g_j - max g) = 1 for each tie */
        low |= Sx[p] < 1e-280;
    }
    for (j = 0; j < C; j++)
        for (p = 0; p < nb; p++) {
            double *e = E + j * GPC_SMX_BLOCK, others = S[p] - e[p], below_top = Sx[p];
            double v = G[j * GPC_SMX_BLOCK + p] < M[p] ? others : below_top;
            e[p] = gpc_smx_log(v > 1e-300 ? v : 1e-300);
        }
    if (low)
        for (p = 0; p < nb; p++)
            if (Sx[p] < 1e-280) {
                T[p] = gpc_smx_lse_top(G, C, p, M[p]);
                for (j = 0; j < C; j++)
                    if (G[j * GPC_SMX_BLOCK + p] == M[p])
                        E[j * GPC_SMX_BLOCK + p] = T[p];
            }
}

/* The sums over the n points for one test point: out[c] = sum h_c, out[C + c] =
 * sum h_c z, out[2C] = sum z, out[2C + 1] = sum z^2.  coef: each class's table
 * slice at its r (C x 4 (nx - 1), gpc_smx_coef), on [-X, X] in x = a scale_c with
 * scale_c = 1 / sqrt(s2_c + pi^2 / 3), held at its end values outside; work:
 * GPC_SMX_WORK(C) doubles. */
GPC_CLONES
static void gpc_softmax_sums(int C, int d, long n, const double *restrict Ut,
                             const double *restrict mean, const double *restrict R,
                             const double *restrict RQ, const double *restrict scale,
                             const double *restrict coef, int nx, double X,
                             double *restrict work, double *restrict out)
{
    double *G = work, *A = G + C * GPC_SMX_BLOCK, *E = A + C * GPC_SMX_BLOCK;
    double *M = E + C * GPC_SMX_BLOCK, *S = M + GPC_SMX_BLOCK, *Sx = S + GPC_SMX_BLOCK;
    double *T = Sx + GPC_SMX_BLOCK, *Z = T + GPC_SMX_BLOCK;
    double inv_h = (nx - 1) / (2.0 * X), last = nx - 1.0, sz = 0.0, szz = 0.0;
    int J[GPC_SMX_BLOCK];
    long p0;
    int c, p;
    for (c = 0; c < 2 * C; c++)
        out[c] = 0.0;
    for (p0 = 0; p0 < n; p0 += GPC_SMX_BLOCK) {
        int nb = n - p0 < GPC_SMX_BLOCK ? (int) (n - p0) : GPC_SMX_BLOCK;
        gpc_smx_affine(C, d, n, p0, nb, Ut, mean, R, RQ, G, A);
        gpc_smx_lse_others(C, nb, G, E, M, S, Sx, T);
        for (p = 0; p < nb; p++)
            Z[p] = -1.0;
        for (c = 0; c < C; c++) {
            const double *a = A + c * GPC_SMX_BLOCK;
            double *h = E + c * GPC_SMX_BLOCK, sc = scale[c] * inv_h, acc = 0.0;
            for (p = 0; p < nb; p++) {      /* node position; T the offset in it */
                double fx = (a[p] - M[p] - h[p]) * sc + X * inv_h;
                int j;
                fx = fx > 0.0 ? fx : 0.0;
                fx = fx < last ? fx : last;
                j = (int) fx;
                j = j < nx - 2 ? j : nx - 2;
                J[p] = j;
                T[p] = fx - j;
            }
            gpc_smx_eval(coef + 4L * (nx - 1) * c, J, T, nb, h);
            for (p = 0; p < nb; p++) {
                acc += h[p];
                Z[p] += h[p];
            }
            out[c] += acc;
        }
        for (c = 0; c < C; c++) {
            const double *h = E + c * GPC_SMX_BLOCK;
            double acc = 0.0;
            for (p = 0; p < nb; p++)
                acc += h[p] * Z[p];
            out[C + c] += acc;
        }
        for (p = 0; p < nb; p++) {
            sz += Z[p];
            szz += Z[p] * Z[p];
        }
    }
    out[2 * C] = sz;
    out[2 * C + 1] = szz;
}

#endif
