/* One pass over K that forms the site matrix of a factorisation and, on the way, the
 * matrix-vector product the marginals need next (EP and posterior linearisation):
 *
 *   B = I + diag(s) K diag(s)   (lower triangle, B_ij = (s_i K_ij) s_j),
 *   t = K x                     (K symmetric, its lower triangle read).
 *
 * At n = 2000 these steps are memory-bound: K's lower triangle is 16 MB, and reading
 * it once instead of twice (B formed, then a dsymv) saves about 0.8 ms of the 3 ms
 * the two took here, at each of the three factorisations of a warm EP evaluation.
 * B goes to a double (gpc_site_matrix_symv) or a single-precision buffer
 * (gpc_site_matrix_symv_f); t is always summed in double.  The column's dot product
 * runs in four partial sums (so that the loop vectorises without reassociation
 * flags); t therefore differs from a BLAS dsymv by rounding only.
 */
#ifndef GPC_PASSES_H
#define GPC_PASSES_H

#include "_vexp.h"   /* GPC_VEXP_CLONES: the target_clones attribute, or nothing */

static inline __attribute__((always_inline)) void
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
GPC_VEXP_CLONES
static void gpc_site_matrix_symv(const double *restrict K, const double *restrict s,
                                 const double *restrict x, double *restrict L,
                                 double *restrict t, long n)
{
    gpc_site_matrix_symv_body(K, s, x, L, (float *) 0, t, n);
}

/* B into F (n x n, single precision, lower triangle) and t = K x. */
GPC_VEXP_CLONES
static void gpc_site_matrix_symv_f(const double *restrict K, const double *restrict s,
                                   const double *restrict x, float *restrict F,
                                   double *restrict t, long n)
{
    gpc_site_matrix_symv_body(K, s, x, (double *) 0, F, t, n);
}

#endif
