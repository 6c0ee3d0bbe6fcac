/* exp over a contiguous array, in a loop the compiler can vectorise.
 *
 * The squared-exponential kernel matrix takes one exp per entry, and the C
 * library's exp is a scalar function call, which keeps the loop around it from
 * being vectorised.  This one is branch-free arithmetic, so GCC turns the loop into
 * SIMD code (with an AVX2 clone where _platform.h provides one).
 *
 * Method: x = k ln2 + r with k = round(x / ln2) (by the 1.5 * 2^52 rounding trick)
 * and |r| <= ln2 / 2 (Cody-Waite: ln2 split in a high part exact in k ln2_hi and a
 * low part); exp(r) by its Taylor polynomial of degree 13 (truncation below 4e-18
 * relative); 2^k applied as two exact powers of two 2^k1 2^k2 (k1 = k / 2 rounded),
 * so that results in the subnormal range are rounded once and k up to +-1077 needs
 * no special case.  The caller keeps the inputs in [-746, 710] (beyond them exp
 * is 0 or inf anyway; inside the loop a clamp would stop the vectorisation); NaN
 * propagates.  Accuracy: within 2 ulp of the C library's exp from 0 down to the
 * subnormal range (tests/test_kernels.py, test_compiled_exp_is_accurate_to_a_few_ulp).
 */
#ifndef GPC_VEXP_H
#define GPC_VEXP_H

#include <stdint.h>
#include "_platform.h"

/* x[i] <- scale * exp(x[i]) for i < n (x[i] in [-746, 710] or NaN). */
GPC_CLONES
static void gpc_scaled_exp(double *restrict x, int n, double scale)
{
    const double log2e = 1.4426950408889634;
    const double ln2_hi = 6.93147180369123816490e-01;  /* 32 significant bits */
    const double ln2_lo = 1.90821492927058770002e-10;
    const double shift = 6755399441055744.0;            /* 1.5 * 2^52 */
    int64_t shift_bits, bias = 1023;
    int i;
    memcpy(&shift_bits, &shift, sizeof shift_bits);
    for (i = 0; i < n; i++) {
        double v = x[i], t, t1, k, r, r2, r4, r8, p, s1, s2;
        int64_t kb, k1b, e1, e2;
        t = v * log2e + shift;          /* shift + k, k = round(v / ln2) */
        k = t - shift;
        r = (v - k * ln2_hi) - k * ln2_lo;
        /* Taylor polynomial by Estrin's scheme (short dependency chains) */
        r2 = r * r;
        r4 = r2 * r2;
        r8 = r4 * r4;
        p = ((1.0 + r) + r2 * (0.5 + r * (1.0 / 6.0)))
            + r4 * ((1.0 / 24.0 + r * (1.0 / 120.0)) + r2 * (1.0 / 720.0 + r * (1.0 / 5040.0)))
            + r8 * (((1.0 / 40320.0 + r * (1.0 / 362880.0))
                     + r2 * (1.0 / 3628800.0 + r * (1.0 / 39916800.0)))
                    + r4 * (1.0 / 479001600.0 + r * (1.0 / 6227020800.0)));
        t1 = k * 0.5 + shift;           /* shift + k1, k1 = round(k / 2) */
        memcpy(&kb, &t, sizeof kb);
        memcpy(&k1b, &t1, sizeof k1b);
        kb -= shift_bits;
        k1b -= shift_bits;
        e1 = (k1b + bias) << 52;        /* 2^k1 and 2^(k - k1), both normal */
        e2 = (kb - k1b + bias) << 52;
        memcpy(&s1, &e1, sizeof s1);
        memcpy(&s2, &e2, sizeof s2);
        x[i] = scale * ((p * s1) * s2);
    }
}

#endif
