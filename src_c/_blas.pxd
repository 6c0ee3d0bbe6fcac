# Thin nogil wrappers over scipy.linalg.cython_blas / cython_lapack.
#
# Convention for the whole package: matrices handed to these helpers are Fortran
# (column-major) n x n buffers with leading dimension n; symmetric matrices use (and
# factorisations fill) the LOWER triangle.  SciPy's Cython BLAS uses plain `int`
# for dimensions (no ILP64 `blas_int` is exposed by the SciPy versions we support).
#
# Threads.  SciPy's OpenBLAS decides by itself how many threads a call uses, from
# the call's size, and its workers spin-wait on each other: on a machine whose
# cores are busy with other work, a call that wakes them can take a scheduler
# period (milliseconds) instead of microseconds.  Below the orders where two threads
# pay, gpc therefore calls routines that always run in the calling thread (LAPACK's
# unblocked ones).  Above them, Cholesky factorisations are tiled (chol_lower_tiled):
# BLAS calls on tiles small enough to run in the calling thread, shared out to
# gpc's own threads (_pool.h) as many as the cores other processes leave free.
# The other blocked routines still use OpenBLAS's threads.
from cython cimport floating
from libc.stdlib cimport free, malloc
from scipy.linalg.cython_blas cimport dgemm, dsymv, dsyrk, dtrmv, sgemm, ssyrk
from scipy.linalg.cython_lapack cimport (dlauu2, dlauum, dpotf2, dpotrf, dpotrs,
                                         dtrti2, dtrtri, slauu2, slauum, spotf2,
                                         spotrf, strti2, strtri)


cdef enum:
    # Orders up to which Cholesky factorisations, triangular inverses and L^T L
    # products run unblocked, in the calling thread (OpenBLAS threads dpotrf from
    # about 128, dtrtri from 192 and dlauum from 32).
    UNBLOCKED_MAX = 128


cdef extern from "_pool.h" nogil:
    ctypedef void (*gpc_task_fn)(void* ctx, int task) noexcept nogil
    void gpc_pool_run(int nthreads, gpc_task_fn fn, void* ctx, int ntasks)
    int gpc_threads(double work)
    void gpc_set_thread_cap(int cap)


cdef inline int sync_threads(Py_ssize_t n) except -1:
    """Before a computation of order n, with the GIL: set the calling thread's cap
    on gpc's threads (``gpc._threads.cap``), where threads may run (n above
    UNBLOCKED_MAX); a few microseconds."""
    if n > UNBLOCKED_MAX:
        from gpc._threads import cap
        gpc_set_thread_cap(cap())
    return 0


cdef enum:
    # Edge of the tiles of the tiled routines: OpenBLAS runs a dgemm of at most
    # 64 x 64 x 64 multiply-adds in the calling thread.
    TILE = 64


cdef inline int _edge(int n, int i) noexcept nogil:
    """The edge of the tile that starts at row or column i of n."""
    return TILE if n - i > TILE else n - i


cdef struct TileJob:
    # One step of a tiled routine, shared by the tasks of gpc_pool_run.
    void* a         # the n x n Fortran matrix
    int n
    int k           # the step's block column
    void* inv       # the inverse of its diagonal block, TILE x TILE, zero above
    void* inv_next  # that of the next block column, written by task 0
    int info_next   # LAPACK's info of the next diagonal block


cdef inline void _tile_times_inverse(floating* a, int n, int i, int k,
                                     const floating* inv) noexcept nogil:
    """A[i, k] <- A[i, k] inv' for the block at rows i, columns k (one dgemm into
    a scratch tile, copied back)."""
    cdef char nt = b'N'
    cdef char tr = b'T'
    cdef floating one = 1.0, zero = 0.0
    cdef floating panel[TILE * TILE]
    cdef int h = _edge(n, i), b = _edge(n, k), r, c, tile = TILE
    if floating is double:
        dgemm(&nt, &tr, &h, &b, &b, &one, a + i + <size_t> k * n, &n, inv, &tile,
              &zero, panel, &tile)
    else:
        sgemm(&nt, &tr, &h, &b, &b, &one, a + i + <size_t> k * n, &n, inv, &tile,
              &zero, panel, &tile)
    for c in range(b):
        for r in range(h):
            a[i + r + <size_t> (k + c) * n] = panel[r + c * tile]


cdef inline void _tile_downdate(floating* a, int n, int i, int j,
                                int k) noexcept nogil:
    """A[i, j] -= A[i, k] A[j, k]' for the blocks at rows i, j and column k
    (dsyrk on the lower triangle when i == j, else dgemm)."""
    cdef char lo = b'L'
    cdef char nt = b'N'
    cdef char tr = b'T'
    cdef floating one = 1.0, minus = -1.0
    cdef int h = _edge(n, i), w = _edge(n, j), b = _edge(n, k)
    if i == j:
        if floating is double:
            dsyrk(&lo, &nt, &h, &b, &minus, a + i + <size_t> k * n, &n, &one,
                  a + i + <size_t> i * n, &n)
        else:
            ssyrk(&lo, &nt, &h, &b, &minus, a + i + <size_t> k * n, &n, &one,
                  a + i + <size_t> i * n, &n)
    elif floating is double:
        dgemm(&nt, &tr, &h, &w, &b, &minus, a + i + <size_t> k * n, &n,
              a + j + <size_t> k * n, &n, &one, a + i + <size_t> j * n, &n)
    else:
        sgemm(&nt, &tr, &h, &w, &b, &minus, a + i + <size_t> k * n, &n,
              a + j + <size_t> k * n, &n, &one, a + i + <size_t> j * n, &n)


cdef inline int _chol_diagonal(floating* a, int n, int k,
                               floating* inv) noexcept nogil:
    """Factorise the (updated) diagonal block of block column k and, when blocks
    remain below it, put its factor's inverse in inv (zero above the diagonal).
    dpotrf and dtrtri of order TILE run in the calling thread (and in OpenBLAS's
    fast kernels, unlike the unblocked dpotf2).  Returns LAPACK's info."""
    cdef char lo = b'L'
    cdef char diag = b'N'
    cdef int r, c, info = 0, tile = TILE, b = _edge(n, k)
    if floating is double:
        dpotrf(&lo, &b, a + k + <size_t> k * n, &n, &info)
    else:
        spotrf(&lo, &b, a + k + <size_t> k * n, &n, &info)
    if info != 0 or k + b == n:
        return info
    for c in range(b):
        for r in range(b):
            inv[r + c * tile] = a[k + r + <size_t> (k + c) * n] if r >= c else 0.0
    if floating is double:
        dtrtri(&lo, &diag, &b, inv, &tile, &info)
    else:
        strtri(&lo, &diag, &b, inv, &tile, &info)
    return info


cdef inline void _chol_panel(floating* a, TileJob* job, int t) noexcept nogil:
    """Task t of a block column's panel: its block t + 1 below the diagonal."""
    _tile_times_inverse(a, job.n, job.k + (t + 1) * TILE, job.k,
                        <floating*> job.inv)


cdef inline void _chol_update(floating* a, TileJob* job, int t) noexcept nogil:
    """Task t of a block column's update of the blocks right of it, numbered
    down each block column of the trailing lower triangle; task 0, the next
    diagonal block, also factorises that block (a step ahead, while the other
    tasks run)."""
    cdef int rows = (job.n - job.k - 1) // TILE, jj = 0
    while t >= rows - jj:              # column jj of the trailing blocks has
        t -= rows - jj                 # rows - jj of them
        jj += 1
    _tile_downdate(a, job.n, job.k + (jj + t + 1) * TILE, job.k + (jj + 1) * TILE,
                   job.k)
    if jj == 0 and t == 0:
        job.info_next = _chol_diagonal(a, job.n, job.k + TILE,
                                       <floating*> job.inv_next)


cdef inline void _chol_panel_d(void* ctx, int t) noexcept nogil:
    _chol_panel(<double*> (<TileJob*> ctx).a, <TileJob*> ctx, t)


cdef inline void _chol_panel_s(void* ctx, int t) noexcept nogil:
    _chol_panel(<float*> (<TileJob*> ctx).a, <TileJob*> ctx, t)


cdef inline void _chol_update_d(void* ctx, int t) noexcept nogil:
    _chol_update(<double*> (<TileJob*> ctx).a, <TileJob*> ctx, t)


cdef inline void _chol_update_s(void* ctx, int t) noexcept nogil:
    _chol_update(<float*> (<TileJob*> ctx).a, <TileJob*> ctx, t)


cdef inline int chol_lower_tiled(floating* a, int n) noexcept nogil:
    """In-place lower Cholesky of the n x n Fortran buffer `a`, right-looking in
    TILE-wide block columns, every BLAS and LAPACK call on a tile small enough to
    run in the calling thread: for each block column, the blocks below the
    diagonal times the diagonal block's inverse, then the update of every block
    right of it, each block a task of gpc's pool on gpc_threads(n^3 / 3) threads
    (the next diagonal block factorised by the first task, a step ahead).  Each
    block is the same calls, in the same order, on any thread, so the factor is
    the same bits for any number of threads.  The upper triangle is not touched.
    Returns LAPACK's info (the order of the failed leading minor)."""
    return chol_lower_tiled_on(a, n, gpc_threads(<double> n * n * n / 3.0))


cdef inline int chol_lower_tiled_on(floating* a, int n, int threads) noexcept nogil:
    """chol_lower_tiled on at most `threads` threads."""
    cdef floating inv[2 * TILE * TILE]
    cdef TileJob job
    cdef int rows
    job.a = a
    job.n = n
    job.inv = inv
    job.inv_next = inv + TILE * TILE
    job.k = 0
    job.info_next = _chol_diagonal(a, n, 0, inv)
    while True:
        if job.info_next != 0:
            return job.info_next + job.k
        rows = (n - job.k - 1) // TILE           # blocks below the diagonal
        if rows == 0:
            return 0
        if floating is double:
            gpc_pool_run(threads, _chol_panel_d, &job, rows)
            gpc_pool_run(threads, _chol_update_d, &job, rows * (rows + 1) // 2)
        else:
            gpc_pool_run(threads, _chol_panel_s, &job, rows)
            gpc_pool_run(threads, _chol_update_s, &job, rows * (rows + 1) // 2)
        job.k += TILE
        job.inv, job.inv_next = job.inv_next, job.inv


cdef inline int chol_lower(floating* a, int n) noexcept nogil:
    """In-place lower Cholesky of the n x n Fortran buffer `a` (double or single
    precision); returns LAPACK info.  Unblocked up to UNBLOCKED_MAX (OpenBLAS
    threads dpotrf from about 128)."""
    cdef char uplo = b'L'
    cdef int info = 0
    if n > UNBLOCKED_MAX:
        return chol_lower_tiled(a, n)
    if floating is double:
        dpotf2(&uplo, &n, a, &n, &info)
    else:
        spotf2(&uplo, &n, a, &n, &info)
    return info


cdef inline int tri_inverse_lower(floating* a, int n) noexcept nogil:
    """Overwrite the lower triangular n x n `a` with its inverse (LAPACK's trtri,
    double or single precision); returns LAPACK info.  Unblocked up to
    UNBLOCKED_MAX."""
    cdef char uplo = b'L'
    cdef char diag = b'N'
    cdef int info = 0
    if floating is double:
        if n <= UNBLOCKED_MAX:
            dtrti2(&uplo, &diag, &n, a, &n, &info)
        else:
            dtrtri(&uplo, &diag, &n, a, &n, &info)
    else:
        if n <= UNBLOCKED_MAX:
            strti2(&uplo, &diag, &n, a, &n, &info)
        else:
            strtri(&uplo, &diag, &n, a, &n, &info)
    return info


cdef inline int lower_gram(floating* a, int n) noexcept nogil:
    """Overwrite the lower triangle of the lower triangular `a` = M with that of
    M^T M (LAPACK's lauum, double or single precision); returns LAPACK info.
    Unblocked up to UNBLOCKED_MAX."""
    cdef char uplo = b'L'
    cdef int info = 0
    if floating is double:
        if n <= UNBLOCKED_MAX:
            dlauu2(&uplo, &n, a, &n, &info)
        else:
            dlauum(&uplo, &n, a, &n, &info)
    else:
        if n <= UNBLOCKED_MAX:
            slauu2(&uplo, &n, a, &n, &info)
        else:
            slauum(&uplo, &n, a, &n, &info)
    return info


cdef inline void trmv_lower(const double* a, int n, double* x,
                            bint transpose) noexcept nogil:
    """x <- A x (or A' x) for the lower triangular n x n `a`, in place.  In the
    calling thread up to UNBLOCKED_MAX (OpenBLAS threads dtrmv from about 32):
    column updates from the last column, or dot products from the first."""
    cdef char uplo = b'L'
    cdef char trans = b'T' if transpose else b'N'
    cdef char diag = b'N'
    cdef int i, j, one = 1
    cdef double s
    cdef const double* col
    if n > UNBLOCKED_MAX:
        dtrmv(&uplo, &trans, &diag, &n, <double*> a, &n, x, &one)
    elif transpose:
        for j in range(n):                   # x_j = sum_{i >= j} a_ij x_i
            col = a + <size_t> j * n
            s = col[j] * x[j]
            for i in range(j + 1, n):
                s += col[i] * x[i]
            x[j] = s
    else:
        for j in range(n - 1, -1, -1):       # x_i += a_ij x_j for i > j, then x_j
            col = a + <size_t> j * n
            s = x[j]
            for i in range(j + 1, n):
                x[i] += col[i] * s
            x[j] = col[j] * s


cdef inline int chol_inverse_lower(double* a, int n) noexcept nogil:
    """Given the lower Cholesky factor L in `a`, overwrite its lower triangle with
    (L L^T)^{-1} = L^{-T} L^{-1} (LAPACK's potri, in two steps so that small
    orders stay in the calling thread); returns LAPACK info."""
    cdef int info = tri_inverse_lower(a, n)
    if info == 0:
        info = lower_gram(a, n)
    return info


cdef inline int chol_solve_lower(const double* l, int n, double* b, int nrhs) noexcept nogil:
    """Solve (L L^T) x = b in place for `nrhs` right-hand sides (Fortran, ld n)."""
    cdef char uplo = b'L'
    cdef int info = 0
    dpotrs(&uplo, &n, &nrhs, <double*> l, &n, b, &n, &info)
    return info


cdef inline void symv_lower(const double* a, int n, const double* x, double* y,
                            double alpha, double beta) noexcept nogil:
    """y <- alpha A x + beta y for symmetric A stored in the lower triangle."""
    cdef char uplo = b'L'
    cdef int one = 1
    dsymv(&uplo, &n, &alpha, <double*> a, &n, <double*> x, &one, &beta, y, &one)


cdef inline void syr_lower(int n, double alpha, const double* x, double* a) noexcept nogil:
    """a <- a + alpha x x' on the lower triangle of the n x n Fortran buffer a, in the
    calling thread.  The rank-one updates of a sequential sweep run one after
    another, each too small to share among threads: BLAS's threaded dsyr wakes its
    workers for every one, and on a busy machine each wake-up waits for a core."""
    cdef int i, j
    cdef double s
    cdef double* col
    for j in range(n):
        s = alpha * x[j]
        if s != 0.0:
            col = a + <size_t> j * n
            for i in range(j, n):
                col[i] += s * x[i]


cdef inline int site_inverse(const double* L, double* R, int n) noexcept nogil:
    """Lower triangle of R = B^{-1} from the lower factor L of B (copy, then dpotri).
    Returns LAPACK info."""
    cdef int i, j
    for j in range(n):
        for i in range(j, n):
            R[i + j * n] = L[i + j * n]
    return chol_inverse_lower(R, n)


cdef inline void scale_site_inverse(double* R, const double* s, int n) noexcept nogil:
    """R <- diag(s) R diag(s) on the lower triangle (B^{-1} -> S B^{-1} S)."""
    cdef int i, j
    for j in range(n):
        for i in range(j, n):
            R[i + j * n] *= s[i] * s[j]


cdef struct Tiles:
    # A walk over the lower triangle of an n x n matrix in square tiles: tile (i0:i1,
    # j0:j1) with i0 >= j0, down each column of tiles in turn.  Element loops over a
    # tile keep both (i, j) and its mirror (j, i) in cache, so a pass that reads or
    # writes both triangles runs at the speed of a contiguous one.
    int n, size, i0, i1, j0, j1


cdef inline void tiles_start(Tiles* t, int n, int size) noexcept nogil:
    """Start the walk (``size`` < 1 means 64); then ``while tiles_next(&t)``, and
    within a tile ``for j in range(t.j0, t.j1): for i in range(max(t.i0, j), t.i1)``
    (``j + 1`` for the strictly lower triangle)."""
    t.n = n
    t.size = size if size > 0 else 64
    t.i0 = 0
    t.i1 = 0
    t.j0 = 0
    t.j1 = 0


cdef inline bint tiles_next(Tiles* t) noexcept nogil:
    """Advance to the next tile; False when the walk is over."""
    if t.j1 > 0 and t.i1 < t.n:
        t.i0 = t.i1
    else:
        if t.j1 >= t.n:
            return False
        t.j0 = t.j1
        t.j1 = t.j0 + t.size if t.j0 + t.size < t.n else t.n
        t.i0 = t.j0
    t.i1 = t.i0 + t.size if t.i0 + t.size < t.n else t.n
    return True


cdef inline void fill_site_dK(double* R, const double* b, const double* u,
                              const double* s, int n) noexcept nogil:
    """R holds S B^{-1} S (lower triangle), or B^{-1} when the site scales ``s`` are
    given (then S = diag(s) is applied in the same pass); overwrite it, both
    triangles, with dK = (b b' - S B^{-1} S)/2 + (u b' + b u')/2 (u may be NULL: no
    implicit term).  The gradient of every site-form method (R&W Alg. 5.1, 5.2).
    One pass in 64 x 64 tiles of the lower triangle, so that the mirrored writes
    stay in cache."""
    cdef int i, j
    cdef double g, r
    cdef Tiles t
    tiles_start(&t, n, 64)
    while tiles_next(&t):
        for j in range(t.j0, t.j1):
            for i in range(t.i0 if t.i0 > j else j, t.i1):
                r = R[i + j * n]
                if s != NULL:
                    r = r * (s[i] * s[j])
                g = b[i] * b[j] - r
                if u != NULL:
                    g += u[i] * b[j] + b[i] * u[j]
                g *= 0.5
                R[i + j * n] = g
                R[j + i * n] = g
