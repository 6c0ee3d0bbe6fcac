/* Squared coordinate differences over the pairs of points, for stationary kernels:
 * a column of scaled squared distances (gpc_neg_half_sqdist_col, for the kernel
 * matrix), and weighted sums over the pairs of a symmetric kernel matrix in one
 * pass without an n x n temporary (gpc_pair_sqdiff_sum, for its gradients):
 *
 *   g_k += sum_{i > j} m_ij (z_ik - z_jk)^2,   m_ij = (W_ij + W_ji) K_ij,
 *
 * and the sum of the m_ij is returned (K may be NULL: K_ij = 1).  This is the
 * contraction behind a stationary kernel's length-scale gradients (see
 * weighted_sqdist_sum in _kern.pyx).  W and K are n x n, Fortran ordered; only the
 * lower triangle of K is read.  Z is n x DP, row major, with DP a multiple of 4 up to
 * 16 (the caller pads the coordinates with zero columns, which add nothing).
 *
 * The differences are formed pair by pair, so nothing cancels (the identity
 * sum_i z_ik (r_i z_ik - (M Z)_ik) of the general path loses digits to cancellation
 * and needs M written out for a BLAS product).  The lower triangle is walked in
 * 64 x 64 tiles so that the transposed reads W_ji stay in cache; inside a tile four
 * rows are handled at a time with separate accumulators, and the coordinate loop,
 * of constant length, becomes SIMD code in vector types (GPC_VECTOR and
 * GPC_CLONES in _platform.h); the plain build gets the same sums in plain loops.
 */
#ifndef GPC_PAIRS_H
#define GPC_PAIRS_H

#include <math.h>
#include "_platform.h"

#define GPC_PAIRS_TILE 64

/* col[i] = -0.5 sum_k (z_ik - z_jk)^2 for i0 <= i < i1, one row at a time (the
 * plain version of gpc_neg_half_sqdist_col below, and its last rows). */
static inline void gpc_neg_half_sqdist_rows(double *col, const double *Zf, long n,
                                            int d, int j, int i0, int i1)
{
    int i, k;
    for (i = i0; i < i1; i++) {
        double acc = 0.0;
        for (k = 0; k < d; k++) {
            double dz = Zf[k * n + i] - Zf[k * n + j];
            acc += dz * dz;
        }
        col[i] = -0.5 * acc;
    }
}

#ifdef GPC_VECTOR

GPC_ALWAYS_INLINE double
gpc_pairs_body(const double *restrict W, const double *restrict K,
               const double *restrict Z, int n, const int NV, const int weighted,
               double *restrict g)
{
    const int DP = 4 * NV;
    gpc_v4 acc[4][4];                  /* [row of the unrolled four][coordinates] */
    double t[4] = {0.0, 0.0, 0.0, 0.0};
    long nn = n;
    int ib, jb, i, j, r, v;
    for (r = 0; r < 4; r++)
        for (v = 0; v < NV; v++)
            acc[r][v] = (gpc_v4) {0.0, 0.0, 0.0, 0.0};
    for (jb = 0; jb < n; jb += GPC_PAIRS_TILE) {
        int j1 = jb + GPC_PAIRS_TILE < n ? jb + GPC_PAIRS_TILE : n;
        for (ib = jb; ib < n; ib += GPC_PAIRS_TILE) {
            int i1 = ib + GPC_PAIRS_TILE < n ? ib + GPC_PAIRS_TILE : n;
            for (j = jb; j < j1; j++) {
                const double *wc = W + j * nn;      /* column j: W_ij */
                const double *kc = K + j * nn;
                gpc_v4 zj[4];
                for (v = 0; v < NV; v++)
                    zj[v] = gpc_v4_load(Z + (long) j * DP + 4 * v);
                i = ib > j + 1 ? ib : j + 1;
                for (; i + 3 < i1; i += 4) {
                    for (r = 0; r < 4; r++) {
                        const double *zi = Z + (long) (i + r) * DP;
                        double m = wc[i + r] + W[j + (i + r) * nn];
                        if (weighted)
                            m *= kc[i + r];
                        t[r] += m;
                        for (v = 0; v < NV; v++) {
                            gpc_v4 d = gpc_v4_load(zi + 4 * v) - zj[v];
                            acc[r][v] += m * (d * d);
                        }
                    }
                }
                for (; i < i1; i++) {
                    const double *zi = Z + (long) i * DP;
                    double m = wc[i] + W[j + i * nn];
                    if (weighted)
                        m *= kc[i];
                    t[0] += m;
                    for (v = 0; v < NV; v++) {
                        gpc_v4 d = gpc_v4_load(zi + 4 * v) - zj[v];
                        acc[0][v] += m * (d * d);
                    }
                }
            }
        }
    }
    for (v = 0; v < NV; v++) {
        gpc_v4 s = (acc[0][v] + acc[1][v]) + (acc[2][v] + acc[3][v]);
        g[4 * v] += s[0];
        g[4 * v + 1] += s[1];
        g[4 * v + 2] += s[2];
        g[4 * v + 3] += s[3];
    }
    return (t[0] + t[1]) + (t[2] + t[3]);
}

/* The instances for DP = 4, 8, 12, 16; returns the sum of the m_ij, or NAN for an
 * unsupported DP (the caller only passes those four). */
GPC_CLONES
static double gpc_pair_sqdiff_sum(const double *W, const double *K, const double *Z,
                                  int n, int dp, double *g)
{
    int w = K != 0;
    switch (dp * 2 + w) {
    case 8:  return gpc_pairs_body(W, K, Z, n, 1, 0, g);
    case 9:  return gpc_pairs_body(W, K, Z, n, 1, 1, g);
    case 16: return gpc_pairs_body(W, K, Z, n, 2, 0, g);
    case 17: return gpc_pairs_body(W, K, Z, n, 2, 1, g);
    case 24: return gpc_pairs_body(W, K, Z, n, 3, 0, g);
    case 25: return gpc_pairs_body(W, K, Z, n, 3, 1, g);
    case 32: return gpc_pairs_body(W, K, Z, n, 4, 0, g);
    case 33: return gpc_pairs_body(W, K, Z, n, 4, 1, g);
    default: return NAN;
    }
}

/* col[i] = -0.5 sum_k (z_ik - z_jk)^2 for i0 <= i < i1, from the d columns of Zf
 * (n x d, Fortran ordered: coordinate k of point i at Zf[k n + i]): the scaled
 * squared distances of one column of a stationary kernel matrix, formed from the
 * differences (no cancellation), eight rows at a time with the coordinates summed in
 * registers. */
GPC_CLONES
static void gpc_neg_half_sqdist_col(double *restrict col, const double *restrict Zf,
                                    long n, int d, int j, int i0, int i1)
{
    int i = i0, k;
    for (; i + 8 <= i1; i += 8) {
        gpc_v4 a = {0.0, 0.0, 0.0, 0.0}, b = a;
        for (k = 0; k < d; k++) {
            const double *zk = Zf + k * n;
            double zj = zk[j];
            gpc_v4 d0 = gpc_v4_load(zk + i) - zj;
            gpc_v4 d1 = gpc_v4_load(zk + i + 4) - zj;
            a += d0 * d0;
            b += d1 * d1;
        }
        a *= -0.5;
        b *= -0.5;
        memcpy(col + i, &a, sizeof a);
        memcpy(col + i + 4, &b, sizeof b);
    }
    gpc_neg_half_sqdist_rows(col, Zf, n, d, j, i, i1);      /* the last < 8 rows */
}

#else   /* the plain build: the same sums, plain loops (not tiled) */

static double gpc_pair_sqdiff_sum(const double *W, const double *K, const double *Z,
                                  int n, int dp, double *g)
{
    double total = 0.0;
    long nn = n;
    int i, j, k;
    for (j = 0; j < n; j++)
        for (i = j + 1; i < n; i++) {
            double m = W[i + j * nn] + W[j + i * nn];
            if (K)
                m *= K[i + j * nn];
            total += m;
            for (k = 0; k < dp; k++) {
                double dz = Z[(long) i * dp + k] - Z[(long) j * dp + k];
                g[k] += m * dz * dz;
            }
        }
    return total;
}

static void gpc_neg_half_sqdist_col(double *col, const double *Zf, long n, int d,
                                    int j, int i0, int i1)
{
    gpc_neg_half_sqdist_rows(col, Zf, n, d, j, i0, i1);
}

#endif

/* x[i] <- max(x[i], lo) for i < n (a loop of its own: inside gpc_scaled_exp's loop
 * the comparison stops GCC's vectorisation). */
GPC_CLONES
static void gpc_clamp_below(double *restrict x, int n, double lo)
{
    int i;
    for (i = 0; i < n; i++)
        x[i] = x[i] < lo ? lo : x[i];
}

/* K[j, i] = K[i, j] for i0 <= i < i1, j0 <= j < j1, i > j (a tile of the lower
 * triangle mirrored to the upper one; n x n, column-major).  Full 4 x 4 blocks
 * strictly below the diagonal are transposed in registers (GPC_VECTOR), the rest
 * entry by entry. */
GPC_CLONES
static void gpc_mirror_tile(double *restrict K, long n, long i0, long i1, long j0,
                            long j1)
{
    long i, j, jb = j0;
#ifdef GPC_VECTOR
    for (; jb + 4 <= j1; jb += 4) {
        long ib = i0 > jb + 4 ? i0 : jb + 4;      /* blocks wholly below the diagonal */
        for (j = jb; j < jb + 4; j++)                 /* rows above the first block */
            for (i = (i0 > j + 1 ? i0 : j + 1); i < ib && i < i1; i++)
                K[j + i * n] = K[i + j * n];
        for (i = ib; i + 4 <= i1; i += 4) {
            gpc_v4 c0, c1, c2, c3, t0, t1, t2, t3, r;
            c0 = gpc_v4_load(K + i + jb * n);
            c1 = gpc_v4_load(K + i + (jb + 1) * n);
            c2 = gpc_v4_load(K + i + (jb + 2) * n);
            c3 = gpc_v4_load(K + i + (jb + 3) * n);
            t0 = __builtin_shufflevector(c0, c1, 0, 4, 2, 6);
            t1 = __builtin_shufflevector(c0, c1, 1, 5, 3, 7);
            t2 = __builtin_shufflevector(c2, c3, 0, 4, 2, 6);
            t3 = __builtin_shufflevector(c2, c3, 1, 5, 3, 7);
            r = __builtin_shufflevector(t0, t2, 0, 1, 4, 5);
            memcpy(K + jb + i * n, &r, sizeof r);
            r = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);
            memcpy(K + jb + (i + 1) * n, &r, sizeof r);
            r = __builtin_shufflevector(t0, t2, 2, 3, 6, 7);
            memcpy(K + jb + (i + 2) * n, &r, sizeof r);
            r = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
            memcpy(K + jb + (i + 3) * n, &r, sizeof r);
        }
        for (j = jb, ib = i; j < jb + 4; j++)         /* the last rows (< 4) */
            for (i = ib; i < i1; i++)
                K[j + i * n] = K[i + j * n];
    }
#endif
    for (j = jb; j < j1; j++)
        for (i = (i0 > j + 1 ? i0 : j + 1); i < i1; i++)
            K[j + i * n] = K[i + j * n];
}

#endif
