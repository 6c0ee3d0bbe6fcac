/* Passes over n x n matrices (column-major, lower triangle) for EP and posterior
 * linearisation, where memory traffic, not arithmetic, sets the cost: each entry
 * read takes a few flops, and the matrices outgrow the caches.
 *
 * 1. One pass over K that forms the site matrix of a factorisation and, on the way, the
 * matrix-vector product the marginals need next (EP and posterior linearisation):
 *
 *   B = I + diag(s) K diag(s)   (lower triangle, B_ij = (s_i K_ij) s_j),
 *   t = K x                     (K symmetric, its lower triangle read).
 *
 * Both steps are memory-bound once K's lower triangle (4 n^2 bytes) outgrows the
 * caches, so reading it once instead of twice (B formed, then a dsymv) saves a pass
 * over K at every factorisation.
 * B goes to a double (gpc_site_matrix_symv) or a single-precision buffer
 * (gpc_site_matrix_symv_f); t is always summed in double.  The column's dot product
 * runs in four partial sums (so that the loop vectorises without reassociation
 * flags); t therefore differs from a BLAS dsymv by rounding only.
 *
 * 2. The chord model's pass over the single-precision B^{-1} (gpc_model_pass): the
 * strictly lower triangle scaled to off-diagonal posterior covariances and/or
 * its squares written to the upper triangle, in 8 x 8 blocks whose transposition
 * stays in registers (GPC_VECTOR in _platform.h; the plain build gets the same
 * values, more slowly, from plain loops).
 */
#ifndef GPC_PASSES_H
#define GPC_PASSES_H

#include "_platform.h"

/* The pass of gpc_site_matrix_symv(_f): B to L (F NULL) or to F (L NULL). */
GPC_ALWAYS_INLINE void
gpc_site_matrix_symv_body(const double *restrict K, const double *restrict s,
                          const double *restrict x, double *restrict L,
                          float *restrict F, double *restrict t, long n)
{
    long i, j;
    for (i = 0; i < n; i++)
        t[i] = 0.0;
    for (j = 0; j < n; j++) {
        const double *kc = K + j * n;
        double sj = s[j], xj = x[j], a[4] = {0.0, 0.0, 0.0, 0.0};
        int r;
        for (i = j + 1; i + 3 < n; i += 4) {
            for (r = 0; r < 4; r++) {
                double k = kc[i + r], v = s[i + r] * k * sj;
                if (F)
                    F[i + r + j * n] = (float) v;
                else
                    L[i + r + j * n] = v;
                t[i + r] += k * xj;
                a[r] += k * x[i + r];
            }
        }
        for (; i < n; i++) {
            double k = kc[i], v = s[i] * k * sj;
            if (F)
                F[i + j * n] = (float) v;
            else
                L[i + j * n] = v;
            t[i] += k * xj;
            a[0] += k * x[i];
        }
        if (F)
            F[j + j * n] = (float) ((double) (float) (sj * kc[j] * sj) + 1.0);
        else
            L[j + j * n] = sj * kc[j] * sj + 1.0;
        t[j] += ((a[0] + a[1]) + (a[2] + a[3])) + kc[j] * xj;
    }
}

/* B into L (n x n, double, lower triangle) and t = K x. */
GPC_CLONES
static void gpc_site_matrix_symv(const double *restrict K, const double *restrict s,
                                 const double *restrict x, double *restrict L,
                                 double *restrict t, long n)
{
    gpc_site_matrix_symv_body(K, s, x, L, (float *) 0, t, n);
}

/* B into F (n x n, single precision, lower triangle) and t = K x. */
GPC_CLONES
static void gpc_site_matrix_symv_f(const double *restrict K, const double *restrict s,
                                   const double *restrict x, float *restrict F,
                                   double *restrict t, long n)
{
    gpc_site_matrix_symv_body(K, s, x, (double *) 0, F, t, n);
}

/* One entry of gpc_model_pass (the plain path, and the vector path's edges). */
static inline void gpc_model_entry(float *M, const float *sf, const float *r, long n,
                                   long i, long j, int scale, int square)
{
    float v = M[i + j * n];
    if (scale) {
        v = v * (r[i] * -r[j]);
        if (!(sf[i] * sf[j] >= 1e-6f))
            v = 0.0f;
        M[i + j * n] = v;
    }
    if (square)
        M[j + i * n] = v * v;
}

/* Over the strictly lower triangle of M (n x n, single precision): with ``scale``,
 * M_ij <- -M_ij r_i r_j (r = 1 / s), set to 0 where sf_i sf_j < 1e-6 (sf = s: there
 * rounding would dominate); with ``square``, M_ji <- M_ij^2 (upper triangle) and the
 * diagonal zeroed. */
GPC_CLONES
static void gpc_model_pass(float *restrict M, const float *restrict sf,
                           const float *restrict r, long n, int scale, int square)
{
    long j0, i0, i, j, nb = n / 8 * 8;
#ifdef GPC_VECTOR
    for (j0 = 0; j0 < nb; j0 += 8) {
        for (i0 = j0 + 8; i0 < nb; i0 += 8) {
            gpc_v8f ri, si, c[8], t[8], u[8];
            int k;
            memcpy(&ri, r + i0, sizeof ri);
            memcpy(&si, sf + i0, sizeof si);
            for (k = 0; k < 8; k++) {
                float *col = M + i0 + (j0 + k) * n;
                gpc_v8f v;
                memcpy(&v, col, sizeof v);
                if (scale) {
                    gpc_v8i keep = si * sf[j0 + k] >= 1e-6f;
                    v = v * (ri * -r[j0 + k]);
                    v = (gpc_v8f) ((gpc_v8i) v & keep);
                    memcpy(col, &v, sizeof v);
                }
                c[k] = v * v;
            }
            if (!square)
                continue;
            /* 8 x 8 transposition: row k of the block's transpose from the c's */
            for (k = 0; k < 8; k += 2) {
                t[k] = __builtin_shufflevector(c[k], c[k + 1], 0, 8, 1, 9, 4, 12, 5, 13);
                t[k + 1] = __builtin_shufflevector(c[k], c[k + 1], 2, 10, 3, 11, 6, 14,
                                                   7, 15);
            }
            for (k = 0; k < 8; k += 4) {
                u[k] = __builtin_shufflevector(t[k], t[k + 2], 0, 1, 8, 9, 4, 5, 12, 13);
                u[k + 1] = __builtin_shufflevector(t[k], t[k + 2], 2, 3, 10, 11, 6, 7,
                                                   14, 15);
                u[k + 2] = __builtin_shufflevector(t[k + 1], t[k + 3], 0, 1, 8, 9, 4, 5,
                                                   12, 13);
                u[k + 3] = __builtin_shufflevector(t[k + 1], t[k + 3], 2, 3, 10, 11, 6,
                                                   7, 14, 15);
            }
            for (k = 0; k < 4; k++) {
                gpc_v8f lo = __builtin_shufflevector(u[k], u[k + 4], 0, 1, 2, 3, 8, 9,
                                                     10, 11);
                gpc_v8f hi = __builtin_shufflevector(u[k], u[k + 4], 4, 5, 6, 7, 12, 13,
                                                     14, 15);
                memcpy(M + j0 + (i0 + k) * n, &lo, sizeof lo);
                memcpy(M + j0 + (i0 + k + 4) * n, &hi, sizeof hi);
            }
        }
        /* the diagonal block and the rows below the last full block */
        for (j = j0; j < j0 + 8; j++) {
            for (i = j + 1; i < j0 + 8; i++)
                gpc_model_entry(M, sf, r, n, i, j, scale, square);
            for (i = nb; i < n; i++)
                gpc_model_entry(M, sf, r, n, i, j, scale, square);
        }
    }
#else
    nb = 0;
    (void) j0;
    (void) i0;
#endif
    for (j = nb; j < n; j++)
        for (i = j + 1; i < n; i++)
            gpc_model_entry(M, sf, r, n, i, j, scale, square);
    if (square)
        for (j = 0; j < n; j++)
            M[j + j * n] = 0.0f;
}

#endif
