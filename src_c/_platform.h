/* What gpc's hand-written C takes from the compiler and the platform, decided in one
 * place.  Every other header includes this one and nothing else of the kind.
 *
 * Two variants of the C exist, and CI builds and tests both (README, .ci/run):
 *
 * - the default build, with GCC >= 12 or Clang: blocks transposed in registers and
 *   sums formed in GCC/Clang vector types (GPC_VECTOR), and on x86-64 with GCC and
 *   glibc an AVX2 clone of each hot loop beside the baseline SSE2 one, chosen when
 *   the module loads (GPC_CLONES); large scratch buffers 2 MB-aligned by
 *   posix_memalign and, on Linux, marked for transparent huge pages;
 * - the plain build (meson option `simd=false`, which defines GPC_PLAIN), which any
 *   C99 compiler gets: the same values from plain loops, no attributes, malloc.
 *
 * The plain loops give the same values as the vector ones up to the order of
 * summation (tests compare both against NumPy, in each build).
 */
#ifndef GPC_PLATFORM_H
#define GPC_PLATFORM_H

#include <stdlib.h>
#include <string.h>

#if !defined(GPC_PLAIN) && (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12))
#define GPC_VECTOR 1
#endif

#if !defined(GPC_PLAIN) && defined(__GNUC__) && !defined(__clang__) \
    && defined(__x86_64__) && defined(__GLIBC__) && __GNUC__ >= 8
#define GPC_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define GPC_CLONES
#endif

#if !defined(GPC_PLAIN) && (defined(__GNUC__) || defined(__clang__))
#define GPC_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define GPC_ALWAYS_INLINE static inline
#endif

#ifdef GPC_VECTOR
/* Four doubles and eight floats in one 32-byte vector (two SSE2 registers in the
 * baseline clone, one AVX2 register in the other), and their unaligned loads
 * (a dereference, not a function returning a vector, whose ABI would differ
 * between the clones). */
typedef double gpc_v4 __attribute__((vector_size(32)));
typedef double gpc_v4u __attribute__((vector_size(32), aligned(8), may_alias));
typedef float gpc_v8f __attribute__((vector_size(32)));
typedef int gpc_v8i __attribute__((vector_size(32)));
#define gpc_v4_load(p) (*(const gpc_v4u *) (p))
#endif

#if !defined(GPC_PLAIN) && (defined(__unix__) || defined(__APPLE__))
#include <unistd.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#endif

/* Milliseconds on a monotonic clock, for the signal checks of the long loops
 * (src_c/_signals.pxd): POSIX's clock_gettime, or on Windows, which has none,
 * GetTickCount64 (its 10-16 ms steps are ample for checks 100 ms apart). */
#if defined(_WIN32)
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
static inline double gpc_monotonic_ms(void)
{
    return (double) GetTickCount64();
}
#else
#include <time.h>
static inline double gpc_monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double) ts.tv_sec + 1e-6 * (double) ts.tv_nsec;
}
#endif

/* An n x n scratch buffer that is first written where 4 KB pages would fault once
 * per page: 2 MB-aligned and, on Linux, marked for transparent huge pages (honoured
 * where they are enabled, as NumPy does for its large arrays); plain malloc in the
 * plain build and off POSIX.  Freed with free(); NULL when out of memory. */
static inline void *gpc_big_alloc(size_t size)
{
    void *p = NULL;
#if !defined(GPC_PLAIN) && defined(_POSIX_VERSION)
    size_t align = size >= ((size_t) 1 << 21) ? (size_t) 1 << 21 : 64;
    if (posix_memalign(&p, align, size ? size : 1) != 0)
        return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    (void) madvise(p, size, MADV_HUGEPAGE);
#endif
#else
    p = malloc(size ? size : 1);
#endif
    return p;
}

#endif
