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
# unblocked ones).  Above them, each call is planned when it starts (gpc_plan in
# _pool.h): LAPACK or BLAS itself when its threads have cores that other processes
# leave free, else a tiled version: BLAS calls on tiles small enough to run in the
# calling thread, shared out to gpc's own threads.
from cython cimport floating
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy
from scipy.linalg.cython_blas cimport (ddot, dgemm, dgemv, dsymm, dsymv, dsyrk,
                                      dtrmm, dtrmv, dtrsm, dtrsv, sgemm, sgemv,
                                      ssymv, ssyrk)
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
    int gpc_plan(double work)
    void gpc_set_threads(int cap, int blas)
    void gpc_atomic_min(int* p, int v)


cdef inline int sync_threads(Py_ssize_t n) except -1:
    """Before a computation of order n, with the GIL: tell gpc_plan the calling
    thread's limit and the BLAS thread count (``gpc._threads.limits``), where
    threads may run (n above UNBLOCKED_MAX); a few microseconds."""
    if n > UNBLOCKED_MAX:
        from gpc._threads import limits
        cap, blas = limits()
        gpc_set_threads(cap, blas)
    return 0


cdef enum:
    # Level-1 calls are made on at most this many entries: OpenBLAS runs ddot
    # and daxpy of up to 10,000 in the calling thread and shares longer ones out.
    VEC = 4096


cdef inline double dot_here(Py_ssize_t n, const double* x,
                            const double* y) noexcept nogil:
    """x' y by ddot on pieces of at most VEC entries, in the calling thread."""
    cdef int one = 1, h
    cdef double s = 0.0
    while n > 0:
        h = VEC if n > VEC else <int> n
        s += ddot(&h, <double*> x, &one, <double*> y, &one)
        x += h
        y += h
        n -= h
    return s


cdef enum:
    # Edge of the tiles of the tiled routines: OpenBLAS runs a dgemm of at most
    # 64 x 64 x 64 multiply-adds in the calling thread.
    TILE = 64


cdef inline int _edge(int n, int i) noexcept nogil:
    """The edge of the tile that starts at row or column i of n."""
    return TILE if n - i > TILE else n - i


cdef inline void _lower_tile_copy(const floating* a, int n, int k,
                                  floating* t) noexcept nogil:
    """t (TILE x TILE) <- the lower triangle of the diagonal block at k, zero above."""
    cdef int r, c, b = _edge(n, k)
    for c in range(b):
        for r in range(b):
            t[r + c * TILE] = a[k + r + <size_t> (k + c) * n] if r >= c else 0.0


cdef inline void _gemm(char* ta, char* tb, int m, int n, int k, floating alpha,
                       const floating* a, int lda, const floating* b, int ldb,
                       floating beta, floating* c, int ldc) noexcept nogil:
    """dgemm or sgemm by the precision of the arguments."""
    if floating is double:
        dgemm(ta, tb, &m, &n, &k, &alpha, <double*> a, &lda, <double*> b, &ldb, &beta,
              c, &ldc)
    else:
        sgemm(ta, tb, &m, &n, &k, &alpha, <float*> a, &lda, <float*> b, &ldb, &beta,
              c, &ldc)


cdef inline void _syrk(char* trans, int n, int k, floating alpha, const floating* a,
                       int lda, floating beta, floating* c, int ldc) noexcept nogil:
    """dsyrk or ssyrk on the lower triangle by the precision of the arguments."""
    cdef char lo = b'L'
    if floating is double:
        dsyrk(&lo, trans, &n, &k, &alpha, <double*> a, &lda, &beta, c, &ldc)
    else:
        ssyrk(&lo, trans, &n, &k, &alpha, <float*> a, &lda, &beta, c, &ldc)


cdef inline void _tile_store(const floating* t, floating* a, int n, int i, int j,
                             int h, int w) noexcept nogil:
    """The h x w block of `a` at rows i, columns j <- the scratch tile t."""
    cdef int r, c
    for c in range(w):
        for r in range(h):
            a[i + r + <size_t> (j + c) * n] = t[r + c * TILE]


cdef inline void _lower_tile_store(const floating* t, floating* a, int n,
                                   int k) noexcept nogil:
    """The lower triangle of the diagonal block of `a` at k <- that of tile t."""
    cdef int r, c, b = _edge(n, k)
    for c in range(b):
        for r in range(c, b):
            a[k + r + <size_t> (k + c) * n] = t[r + c * TILE]


cdef struct TileJob:
    # One step of a tiled routine, shared by the tasks of gpc_pool_run.
    void* a         # the n x n Fortran matrix
    int n
    int k           # the step's block column
    void* inv       # the inverse of its diagonal block, TILE x TILE, zero above
    void* inv_next  # that of the next block column, written by task 0
    int info_next   # LAPACK's info of the next diagonal block
    bint single     # float (else double)
    int phase       # which tasks the job runs (_chol_task, _tri_task)


cdef inline void _tile_times_inverse(floating* a, int n, int i, int k,
                                     const floating* inv) noexcept nogil:
    """A[i, k] <- A[i, k] inv' for the block at rows i, columns k (one dgemm into
    a scratch tile, copied back)."""
    cdef char nt = b'N'
    cdef char tr = b'T'
    cdef floating panel[TILE * TILE]
    cdef int h = _edge(n, i), b = _edge(n, k)
    _gemm(&nt, &tr, h, b, b, 1.0, a + i + <size_t> k * n, n, inv, TILE, 0.0, panel,
          TILE)
    _tile_store(panel, a, n, i, k, h, b)


cdef inline void _tile_downdate(floating* a, int n, int i, int j,
                                int k) noexcept nogil:
    """A[i, j] -= A[i, k] A[j, k]' for the blocks at rows i, j and column k
    (dsyrk on the lower triangle when i == j, else dgemm)."""
    cdef char nt = b'N'
    cdef char tr = b'T'
    cdef int h = _edge(n, i), w = _edge(n, j), b = _edge(n, k)
    if i == j:
        _syrk(&nt, h, b, -1.0, a + i + <size_t> k * n, n, 1.0, a + i + <size_t> i * n, n)
    else:
        _gemm(&nt, &tr, h, w, b, -1.0, a + i + <size_t> k * n, n,
              a + j + <size_t> k * n, n, 1.0, a + i + <size_t> j * n, n)


cdef inline int _chol_diagonal(floating* a, int n, int k,
                               floating* inv) noexcept nogil:
    """Factorise the (updated) diagonal block of block column k and, when blocks
    remain below it, put its factor's inverse in inv (zero above the diagonal).
    dpotrf and dtrtri of order TILE run in the calling thread (and in OpenBLAS's
    fast kernels, unlike the unblocked dpotf2).  Returns LAPACK's info."""
    cdef char lo = b'L'
    cdef char diag = b'N'
    cdef int info = 0, tile = TILE, b = _edge(n, k)
    if floating is double:
        dpotrf(&lo, &b, a + k + <size_t> k * n, &n, &info)
    else:
        spotrf(&lo, &b, a + k + <size_t> k * n, &n, &info)
    if info != 0 or k + b == n:
        return info
    _lower_tile_copy(a, n, k, inv)
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


cdef inline void _chol_task(void* ctx, int t) noexcept nogil:
    """Task t of the step's phase (0: the panel, 1: the update), either precision."""
    cdef TileJob* job = <TileJob*> ctx
    if job.single:
        if job.phase == 0:
            _chol_panel(<float*> job.a, job, t)
        else:
            _chol_update(<float*> job.a, job, t)
    elif job.phase == 0:
        _chol_panel(<double*> job.a, job, t)
    else:
        _chol_update(<double*> job.a, job, t)


cdef inline int chol_lower_tiled_on(floating* a, int n, int threads) noexcept nogil:
    """In-place lower Cholesky of the n x n Fortran buffer `a`, right-looking in
    TILE-wide block columns, every BLAS and LAPACK call on a tile small enough to
    run in the calling thread: for each block column, the blocks below the
    diagonal times the diagonal block's inverse, then the update of every block
    right of it, each block a task of gpc's pool on at most `threads` threads
    (the next diagonal block factorised by the first task, a step ahead).  Each
    block is the same calls, in the same order, on any thread, so the factor is
    the same bits for any number of threads.  The upper triangle is not touched.
    Returns LAPACK's info (the order of the failed leading minor)."""
    cdef floating inv[2 * TILE * TILE]
    cdef TileJob job
    cdef int rows
    job.a = a
    job.n = n
    job.single = floating is float
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
        job.phase = 0
        gpc_pool_run(threads, _chol_task, &job, rows)
        job.phase = 1
        gpc_pool_run(threads, _chol_task, &job, rows * (rows + 1) // 2)
        job.k += TILE
        job.inv, job.inv_next = job.inv_next, job.inv


cdef inline int chol_lower(floating* a, int n) noexcept nogil:
    """In-place lower Cholesky of the n x n Fortran buffer `a` (double or single
    precision); returns LAPACK info.  Unblocked up to UNBLOCKED_MAX (OpenBLAS
    threads dpotrf from about 128); above, dpotrf where gpc_plan gives its
    threads free cores, else chol_lower_tiled_on gpc_plan's threads."""
    cdef char uplo = b'L'
    cdef int info = 0, threads
    if n <= UNBLOCKED_MAX:
        if floating is double:
            dpotf2(&uplo, &n, a, &n, &info)
        else:
            spotf2(&uplo, &n, a, &n, &info)
        return info
    threads = gpc_plan(<double> n * n * n / 3.0)
    if threads > 0:
        return chol_lower_tiled_on(a, n, threads)
    if floating is double:
        dpotrf(&uplo, &n, a, &n, &info)
    else:
        spotrf(&uplo, &n, a, &n, &info)
    return info


cdef struct TriJob:
    # One step of tri_inverse_tiled or lower_gram_tiled.
    void* a         # the n x n Fortran matrix (double or float)
    int n
    int nb          # its blocks per side
    int j           # the step's block (column or row)
    void* diag      # TILE x TILE tiles, zero above the diagonal
    void* panel     # the step's results
    int info        # the first failed diagonal block's LAPACK info (1-based row)
    bint single     # float (else double)
    int phase       # which tasks the job runs (_chol_task, _tri_task)


cdef inline void _tri_diag(floating* a, TriJob* job, int t) noexcept nogil:
    """Invert diagonal block t into its zero-padded tile (dtrtri of order TILE
    runs in the calling thread)."""
    cdef char lo = b'L'
    cdef char nd = b'N'
    cdef int info = 0, tile = TILE, b = _edge(job.n, t * TILE)
    cdef floating* d = <floating*> job.diag + <size_t> t * TILE * TILE
    _lower_tile_copy(a, job.n, t * TILE, d)
    if floating is double:
        dtrtri(&lo, &nd, &b, d, &tile, &info)
    else:
        strtri(&lo, &nd, &b, d, &tile, &info)
    if info != 0:
        gpc_atomic_min(&job.info, t * TILE + info)


cdef inline void _tri_column(floating* a, TriJob* job, int t) noexcept nogil:
    """Block (i, j) of X = L^{-1}, bottom block first: -(sum_{k=j+1..i} X_ik L_kj)
    X_jj into the panel, with X right of column j final and column j still L."""
    cdef char nt = b'N'
    cdef floating beta = 0.0
    cdef floating acc[TILE * TILE]
    cdef floating* diag = <floating*> job.diag
    cdef int n = job.n, j = job.j * TILE, i = (job.nb - 1 - t) * TILE, k = j + TILE
    cdef int h = _edge(n, i), w = _edge(n, j)
    while k < i:
        _gemm(&nt, &nt, h, w, _edge(n, k), 1.0, a + i + <size_t> k * n, n,
              a + k + <size_t> j * n, n, beta, acc, TILE)
        beta = 1.0
        k += TILE
    _gemm(&nt, &nt, h, w, h, 1.0, diag + <size_t> (i // TILE) * TILE * TILE, TILE,
          a + i + <size_t> j * n, n, beta, acc, TILE)
    _gemm(&nt, &nt, h, w, w, -1.0, acc, TILE, diag + <size_t> job.j * TILE * TILE,
          TILE, 0.0, <floating*> job.panel + i, n)


cdef inline int tri_inverse_tiled(floating* a, int n, int threads) noexcept nogil:
    """Overwrite the lower triangular n x n `a` with its inverse, in TILE-wide
    block columns from the last, each block below the diagonal a task of gpc's
    pool (on at most `threads` threads) built of dgemm calls on tiles, the
    diagonal blocks inverted by dtrtri of order TILE: all in the calling thread as
    far as OpenBLAS is concerned, the same bits for any number of threads.
    Returns LAPACK's info (-1 when memory ran out)."""
    cdef TriJob job
    cdef int r, c, k
    cdef floating* diag
    cdef floating* panel
    job.a = a
    job.n = n
    job.single = floating is float
    job.nb = (n + TILE - 1) // TILE
    job.info = 0
    diag = <floating*> malloc((<size_t> job.nb * TILE * TILE + <size_t> n * TILE)
                              * sizeof(floating))
    if diag == NULL:
        return -1
    panel = diag + <size_t> job.nb * TILE * TILE
    job.diag = diag
    job.panel = panel
    job.phase = 0
    gpc_pool_run(threads, _tri_task, &job, job.nb)
    job.phase = 1
    job.j = job.nb - 2
    while job.info == 0 and job.j >= 0:
        gpc_pool_run(threads, _tri_task, &job, job.nb - 1 - job.j)
        for c in range(TILE):                # the panel into column block j
            for r in range((job.j + 1) * TILE, n):
                a[r + <size_t> (job.j * TILE + c) * n] = panel[r + <size_t> c * n]
        job.j -= 1
    if job.info == 0:
        for k in range(job.nb):              # the inverted diagonal blocks
            _lower_tile_store(diag + <size_t> k * TILE * TILE, a, n, k * TILE)
    free(diag)
    return job.info


cdef inline void _gram(floating* a, TriJob* job, int t) noexcept nogil:
    """Block (i, t) of M^T M for the step's block row i: sum_{k >= i} M_ki' M_kt,
    the k = i term through the zero-padded M_ii; the diagonal block (t = i) into
    the panel (M_ii is read by every task of the row), the others in place."""
    cdef char nt = b'N'
    cdef char tr = b'T'
    cdef floating acc[TILE * TILE]
    cdef int n = job.n, i = job.j * TILE, j = t * TILE, k = i + TILE
    cdef int h = _edge(n, i), w = _edge(n, j), bk
    cdef floating* d = <floating*> job.diag          # M_ii, zero above the diagonal
    cdef floating* out = <floating*> job.panel if i == j else acc
    _gemm(&tr, &nt, h, w, h, 1.0, d, TILE,
          d if i == j else a + i + <size_t> j * n, TILE if i == j else n, 0.0, out, TILE)
    while k < n:
        bk = _edge(n, k)
        if i != j:
            _gemm(&tr, &nt, h, w, bk, 1.0, a + k + <size_t> i * n, n,
                  a + k + <size_t> j * n, n, 1.0, out, TILE)
        else:
            _syrk(&tr, h, bk, 1.0, a + k + <size_t> i * n, n, 1.0, out, TILE)
        k += TILE
    if i != j:
        _tile_store(acc, a, n, i, j, h, w)


cdef inline void _tri_task(void* ctx, int t) noexcept nogil:
    """Task t of the step's phase (0: a diagonal block's inverse, 1: a block of
    the inverse's column, 2: a block of L'L), either precision."""
    cdef TriJob* job = <TriJob*> ctx
    if job.single:
        if job.phase == 0:
            _tri_diag(<float*> job.a, job, t)
        elif job.phase == 1:
            _tri_column(<float*> job.a, job, t)
        else:
            _gram(<float*> job.a, job, t)
    elif job.phase == 0:
        _tri_diag(<double*> job.a, job, t)
    elif job.phase == 1:
        _tri_column(<double*> job.a, job, t)
    else:
        _gram(<double*> job.a, job, t)


cdef inline void lower_gram_tiled(floating* a, int n, int threads) noexcept nogil:
    """Overwrite the lower triangle of the lower triangular `a` = M with that of
    M^T M, block row by block row from the first, the blocks of a row tasks of
    gpc's pool (on at most `threads` threads) built of dgemm and dsyrk calls on
    tiles: all in the calling thread as far as OpenBLAS is concerned, the same
    bits for any number of threads.  (The k = i term of the diagonal block goes
    through dgemm too: M_ii' M_ii with M_ii zero-padded.)"""
    cdef TriJob job
    cdef floating tiles[2 * TILE * TILE]
    cdef int k
    job.a = a
    job.n = n
    job.single = floating is float
    job.phase = 2
    job.nb = (n + TILE - 1) // TILE
    job.diag = tiles
    job.panel = tiles + TILE * TILE
    for k in range(job.nb):
        job.j = k
        _lower_tile_copy(a, n, k * TILE, tiles)
        gpc_pool_run(threads, _tri_task, &job, k + 1)
        _lower_tile_store(tiles + TILE * TILE, a, n, k * TILE)


cdef struct TrmmJob:
    # One block row of trmm_lower_tiled.
    const double* l # the n x n lower triangular factor
    double* b       # the n x m right-hand side, overwritten
    int n
    int m
    int i           # the step's block row
    bint trans
    double* diag    # L_ii, TILE x TILE, zero above the diagonal


cdef inline void _trmm_task(void* ctx, int t) noexcept nogil:
    """Block (i, t) of L B (sum_{k <= i} L_ik B_kt) or L' B (sum_{k >= i}
    L_ki' B_kt), through a scratch tile: the rows of B it reads are not yet
    overwritten (block rows go bottom-up for L B, top-down for L' B)."""
    cdef TrmmJob* job = <TrmmJob*> ctx
    cdef char nt = b'N'
    cdef char tr = b'T'
    cdef char* ta = &tr if job.trans else &nt
    cdef double acc[TILE * TILE]
    cdef int n = job.n, i = job.i * TILE, c = t * TILE, k
    cdef int h = _edge(n, i), w = _edge(job.m, c)
    _gemm(ta, &nt, h, w, h, 1.0, job.diag, TILE, job.b + i + <size_t> c * n, n, 0.0,
          acc, TILE)
    k = i + TILE if job.trans else 0
    while k < (n if job.trans else i):
        _gemm(ta, &nt, h, w, _edge(n, k), 1.0,
              job.l + (k + <size_t> i * n if job.trans else i + <size_t> k * n), n,
              job.b + k + <size_t> c * n, n, 1.0, acc, TILE)
        k += TILE
    _tile_store(acc, job.b, n, i, c, h, w)


cdef inline void trmm_lower(const double* l, int n, double* b, int m,
                            bint trans) noexcept nogil:
    """B <- L B (or L' B) for the lower triangular n x n `l` and the n x m `b`
    (leading dimension n), in place: dtrmm where gpc_plan(n^2 m / 2) gives its
    threads free cores; else block row by block row, the blocks of a row tasks of
    gpc's pool built of dgemm calls on tiles, in the calling thread as far as
    OpenBLAS is concerned (it threads dtrmm from about order 32), the same bits
    for any number of threads."""
    cdef TrmmJob job
    cdef double diag[TILE * TILE]
    cdef int threads = gpc_plan(0.5 * n * n * m), nb = (n + TILE - 1) // TILE, k
    cdef char side = b'L'
    cdef char lo = b'L'
    cdef char tr = b'T' if trans else b'N'
    cdef char nd = b'N'
    cdef double one = 1.0
    if n == 0 or m == 0:
        return
    if threads == 0:
        dtrmm(&side, &lo, &tr, &nd, &n, &m, &one, <double*> l, &n, b, &n)
        return
    job.l = l
    job.b = b
    job.n = n
    job.m = m
    job.trans = trans
    job.diag = diag
    for k in range(nb):
        job.i = k if trans else nb - 1 - k
        _lower_tile_copy(l, n, job.i * TILE, diag)
        gpc_pool_run(threads, _trmm_task, &job, (m + TILE - 1) // TILE)


cdef struct SyrkJob:
    # syrk_lower: C (lower) <- alpha A'A (or A A') + beta C, one task per block of C.
    const void* a   # A: k x n (A'A) or n x k (A A'), leading dimension lda
    int lda
    int n
    int k
    bint outer      # A A' instead of A'A
    double alpha
    double beta
    void* c         # the n x n C (leading dimension n)
    bint single     # float (else double)


cdef inline void _syrk_block(const floating* a, floating* cm, SyrkJob* job,
                             int t) noexcept nogil:
    """Block (i, j), i >= j, numbered down the block columns, of C <- alpha A'A
    (A A') + beta C: sum over TILE-wide steps of the inner dimension of dgemm
    (dsyrk on the diagonal blocks), beta applied by the first."""
    cdef char nt = b'N'
    cdef char tr = b'T'
    cdef char* ta = &nt if job.outer else &tr
    cdef char* tb = &tr if job.outer else &nt
    cdef floating alpha = job.alpha, beta = job.beta
    cdef int rows = (job.n + TILE - 1) // TILE, j = 0, i, kk = 0, bk, h, w
    cdef int lda = job.lda, n = job.n
    cdef const floating* ai
    cdef const floating* aj
    while t >= rows - j:
        t -= rows - j
        j += 1
    i = (j + t) * TILE
    j *= TILE
    h = _edge(n, i)
    w = _edge(n, j)
    while kk < job.k:
        bk = _edge(job.k, kk)
        if job.outer:                        # rows i (j) of A, columns kk
            ai = a + i + <size_t> kk * lda
            aj = a + j + <size_t> kk * lda
        else:                                # rows kk of A, columns i (j)
            ai = a + kk + <size_t> i * lda
            aj = a + kk + <size_t> j * lda
        if i != j:
            _gemm(ta, tb, h, w, bk, alpha, ai, lda, aj, lda, beta,
                  cm + i + <size_t> j * n, n)
        else:
            _syrk(ta, h, bk, alpha, ai, lda, beta, cm + i + <size_t> i * n, n)
        beta = 1.0
        kk += TILE


cdef inline void _syrk_task(void* ctx, int t) noexcept nogil:
    cdef SyrkJob* job = <SyrkJob*> ctx
    if job.single:
        _syrk_block(<const float*> job.a, <float*> job.c, job, t)
    else:
        _syrk_block(<const double*> job.a, <double*> job.c, job, t)


cdef inline void syrk_lower(bint outer, const floating* a, int k, int lda, int n,
                            double alpha, double beta, floating* c) noexcept nogil:
    """C <- alpha A'A + beta C (A the k x n `a`, k >= 1), or with ``outer``
    alpha A A' + beta C (A the n x k `a`), on the lower triangle of the n x n
    `c`: syrk where
    gpc_plan(n^2 k / 2) gives its threads free cores; else each block of C a task
    of gpc's pool built of syrk and gemm calls on tiles, in the calling thread as
    far as OpenBLAS is concerned, the same bits for any number of threads."""
    cdef SyrkJob job
    cdef int rows = (n + TILE - 1) // TILE, threads = gpc_plan(0.5 * n * n * k)
    cdef char tr = b'N' if outer else b'T'
    if n == 0 or k == 0:
        return
    if threads == 0:
        _syrk(&tr, n, k, <floating> alpha, a, lda, <floating> beta, c, n)
        return
    job.a = a
    job.lda = lda
    job.n = n
    job.k = k
    job.outer = outer
    job.alpha = alpha
    job.beta = beta
    job.c = c
    job.single = floating is float
    gpc_pool_run(threads, _syrk_task, &job, rows * (rows + 1) // 2)


cdef enum:
    # What the left solves apply to B: L^{-1}, L^{-T}, or both in turn, which is
    # (L L^T)^{-1} for a Cholesky factor L.
    SOLVE_N = 1
    SOLVE_T = 2
    SOLVE_CHOLESKY = 3


cdef inline int solve_left_tiled(const double* l, int m, double* b, int nrhs,
                                 int ops) noexcept nogil:
    """B <- L^{-1} B, L^{-T} B or both in turn (``ops``: SOLVE_N, SOLVE_T,
    SOLVE_CHOLESKY) for the lower triangular m x m `l` and the m x nrhs `b`
    (leading dimension m): tri_inverse_lower on a copy of L, then trmm_lower by
    the inverse (transposed for SOLVE_T).  Returns LAPACK's info of the inversion
    (-1 when memory ran out)."""
    cdef int info
    cdef double* inv = <double*> malloc(<size_t> m * m * sizeof(double))
    if inv == NULL:
        return -1
    memcpy(inv, l, <size_t> m * m * sizeof(double))
    info = tri_inverse_lower(inv, m)
    if info == 0 and ops & SOLVE_N:
        trmm_lower(inv, m, b, nrhs, False)
    if info == 0 and ops & SOLVE_T:
        trmm_lower(inv, m, b, nrhs, True)
    free(inv)
    return info


cdef inline void _trsm_left(const double* l, int m, double* b, int nrhs,
                            bint trans) noexcept nogil:
    """B <- L^{-1} B (or L^{-T} B): dtrsv for one column (OpenBLAS runs it in the
    calling thread at any order, and faster than dtrsm), else dtrsm."""
    cdef char left = b'L'
    cdef char lo = b'L'
    cdef char nd = b'N'
    cdef char tr = b'T' if trans else b'N'
    cdef double one = 1.0
    cdef int inc = 1
    if nrhs == 1:
        dtrsv(&lo, &tr, &nd, &m, <double*> l, &m, b, &inc)
    else:
        dtrsm(&left, &lo, &tr, &nd, &m, &nrhs, &one, <double*> l, &m, b, &m)


cdef inline int solve_left_lower(const double* l, int m, double* b, int nrhs,
                                 int ops) noexcept nogil:
    """B <- L^{-1} B, L^{-T} B or both in turn (``ops``: SOLVE_N, SOLVE_T,
    SOLVE_CHOLESKY) for the lower triangular m x m `l` and the m x nrhs `b`
    (leading dimension m): dtrsv for one column, dtrsm up to order TILE and where
    gpc_plan(m^2 nrhs / 2 a solve) gives its threads free cores, else
    solve_left_tiled.  Returns LAPACK's info (-1 when memory ran out)."""
    cdef double work = 0.5 * m * m * nrhs * (2 if ops == SOLVE_CHOLESKY else 1)
    if nrhs > 1 and m > TILE and gpc_plan(work) != 0:
        return solve_left_tiled(l, m, b, nrhs, ops)
    if ops & SOLVE_N:
        _trsm_left(l, m, b, nrhs, False)
    if ops & SOLVE_T:
        _trsm_left(l, m, b, nrhs, True)
    return 0


cdef inline int solve_right_tiled(const double* l, int m, double* b,
                                  int n) noexcept nogil:
    """B <- B L^{-T} for the lower triangular m x m `l` and the n x m `b` (leading
    dimension n), as (B L^{-T})' = L^{-1} B': solve_left_tiled on a transposed
    copy.  Returns LAPACK's info of the inversion (-1 when memory ran out)."""
    cdef int r, c, info
    cdef double* bt = <double*> malloc(<size_t> n * m * sizeof(double))
    if bt == NULL:
        return -1
    for c in range(m):
        for r in range(n):
            bt[c + <size_t> r * m] = b[r + <size_t> c * n]
    info = solve_left_tiled(l, m, bt, n, SOLVE_N)
    if info == 0:
        for c in range(m):
            for r in range(n):
                b[r + <size_t> c * n] = bt[c + <size_t> r * m]
    free(bt)
    return info


cdef inline int solve_right_lower_t(const double* l, int m, double* b,
                                    int n) noexcept nogil:
    """B <- B L^{-T} for the lower triangular m x m `l` and the n x m `b` (leading
    dimension n): dtrsm where gpc_plan(n m^2) gives its threads free cores, else
    solve_right_tiled.  Returns LAPACK's info (-1 when memory ran out)."""
    cdef char right = b'R'
    cdef char lo = b'L'
    cdef char tr = b'T'
    cdef char nd = b'N'
    cdef double one = 1.0
    if gpc_plan(<double> n * m * m) != 0:
        return solve_right_tiled(l, m, b, n)
    dtrsm(&right, &lo, &tr, &nd, &n, &m, &one, <double*> l, &m, b, &n)
    return 0


cdef struct SymmJob:
    # symm_lower: C <- alpha A B + beta C, one task per block of C.
    const double* a # the n x n symmetric A, lower triangle
    const double* b # the n x m B (leading dimension ldb)
    double* c       # the n x m C (leading dimension ldc)
    int n
    int m
    int ldb
    int ldc
    double alpha
    double beta


cdef inline void _symm_task(void* ctx, int t) noexcept nogil:
    """Block (i, q) of C, numbered down the block columns: sum_k A_ik B_kq, A_ik
    read from the lower triangle (A_ki' above it, the diagonal block mirrored into
    a scratch tile)."""
    cdef SymmJob* job = <SymmJob*> ctx
    cdef char nt = b'N'
    cdef char tr = b'T'
    cdef double one = 1.0
    cdef double full[TILE * TILE]
    cdef int n = job.n, rows = (n + TILE - 1) // TILE, tile = TILE, r, c
    cdef int i = (t % rows) * TILE, q = (t // rows) * TILE, k = 0, bk
    cdef int h = _edge(n, i), w = _edge(job.m, q)
    cdef double beta = job.beta
    cdef double* out = job.c + i + <size_t> q * job.ldc
    while k < n:
        bk = _edge(n, k)
        if k < i:
            dgemm(&nt, &nt, &h, &w, &bk, &job.alpha, <double*> job.a + i + <size_t> k * n,
                  &n, <double*> job.b + k + <size_t> q * job.ldb, &job.ldb, &beta, out,
                  &job.ldc)
        elif k > i:
            dgemm(&tr, &nt, &h, &w, &bk, &job.alpha, <double*> job.a + k + <size_t> i * n,
                  &n, <double*> job.b + k + <size_t> q * job.ldb, &job.ldb, &beta, out,
                  &job.ldc)
        else:
            for c in range(h):
                for r in range(h):
                    full[r + c * tile] = job.a[i + r + <size_t> (i + c) * n] if r >= c \
                        else job.a[i + c + <size_t> (i + r) * n]
            dgemm(&nt, &nt, &h, &w, &h, &job.alpha, full, &tile,
                  <double*> job.b + k + <size_t> q * job.ldb, &job.ldb, &beta, out, &job.ldc)
        beta = 1.0
        k += TILE


cdef inline void symm_lower(const double* a, int n, const double* b, int ldb, int m,
                            double alpha, double beta, double* c,
                            int ldc) noexcept nogil:
    """C <- alpha A B + beta C for the symmetric n x n `a` (lower triangle read),
    the n x m `b` and `c`: dsymm where gpc_plan(n^2 m) gives its threads free
    cores; else each block of C a task of gpc's pool built of dgemm calls on
    tiles, in the calling thread as far as OpenBLAS is concerned (it threads dsymm
    from about order 64), the same bits for any number of threads."""
    cdef SymmJob job
    cdef int rows = (n + TILE - 1) // TILE, threads = gpc_plan(<double> n * n * m)
    cdef char side = b'L'
    cdef char lo = b'L'
    if n == 0 or m == 0:
        return
    if threads == 0:
        dsymm(&side, &lo, &n, &m, &alpha, <double*> a, &n, <double*> b, &ldb, &beta,
              c, &ldc)
        return
    job.a = a
    job.b = b
    job.c = c
    job.n = n
    job.m = m
    job.ldb = ldb
    job.ldc = ldc
    job.alpha = alpha
    job.beta = beta
    gpc_pool_run(threads, _symm_task, &job, rows * ((m + TILE - 1) // TILE))


cdef struct GemmJob:
    # gemm_planned: C <- alpha op(A) op(B) + beta C, one task per block of C.
    const double* a
    const double* b
    double* c
    int m
    int n
    int k
    int lda
    int ldb
    int ldc
    bint ta         # op(A) = A' (A is k x m)
    bint tb         # op(B) = B' (B is n x k)
    double alpha
    double beta


cdef inline void _gemm_task(void* ctx, int t) noexcept nogil:
    """Block (i, q) of C, numbered down the block columns: the sum over
    TILE-wide steps of the inner dimension (k >= 1) of dgemm on tiles, beta
    applied by the first."""
    cdef GemmJob* job = <GemmJob*> ctx
    cdef char nt = b'N'
    cdef char tr = b'T'
    cdef int rows = (job.m + TILE - 1) // TILE, kk = 0, bk
    cdef int i = (t % rows) * TILE, q = (t // rows) * TILE
    cdef int h = _edge(job.m, i), w = _edge(job.n, q)
    cdef double beta = job.beta
    cdef double* out = job.c + i + <size_t> q * job.ldc
    cdef const double* ai
    cdef const double* bq
    while kk < job.k:
        bk = _edge(job.k, kk)
        ai = job.a + (kk + <size_t> i * job.lda if job.ta else i + <size_t> kk * job.lda)
        bq = job.b + (q + <size_t> kk * job.ldb if job.tb else kk + <size_t> q * job.ldb)
        _gemm(&tr if job.ta else &nt, &tr if job.tb else &nt, h, w, bk, job.alpha,
              ai, job.lda, bq, job.ldb, beta, out, job.ldc)
        beta = 1.0
        kk += TILE


cdef inline void gemm_planned(bint ta, bint tb, int m, int n, int k, double alpha,
                              const double* a, int lda, const double* b, int ldb,
                              double beta, double* c, int ldc,
                              int threads) noexcept nogil:
    """C <- alpha op(A) op(B) + beta C (op(A) m x k, op(B) k x n, C m x n, k >= 1;
    all column-major with the leading dimensions given): dgemm where gpc_plan(m n k)
    gives its threads free cores; else each block of C a task of gpc's pool
    built of dgemm calls on tiles, in the calling thread as far as OpenBLAS is
    concerned (it threads dgemm from 64 x 64 x 64: up to that, dgemm runs in
    the calling thread on any route), the same bits for any number of threads.
    ``threads`` > 0 takes the tiles on that many threads instead of planning
    (1: all in the calling thread).  One column on BLAS's route: dgemv."""
    cdef GemmJob job
    cdef char nt = b'N'
    cdef char tr = b'T'
    cdef double work = <double> m * n * k
    cdef int inc = 1
    if m == 0 or n == 0:
        return
    if threads <= 0:
        threads = 0 if work <= <double> TILE * TILE * TILE else gpc_plan(work)
    if threads == 0 and n == 1 and work > <double> TILE * TILE * TILE:
        # one column where BLAS's threads have free cores: dgemv, several
        # times faster than dgemm there
        dgemv(&tr if ta else &nt, &k if ta else &m, &m if ta else &k, &alpha,
              <double*> a, &lda, <double*> b, &ldb if tb else &inc, &beta, c, &inc)
        return
    if threads == 0:
        _gemm(&tr if ta else &nt, &tr if tb else &nt, m, n, k, alpha, a, lda, b, ldb,
              beta, c, ldc)
        return
    job.a = a
    job.b = b
    job.c = c
    job.m = m
    job.n = n
    job.k = k
    job.lda = lda
    job.ldb = ldb
    job.ldc = ldc
    job.ta = ta
    job.tb = tb
    job.alpha = alpha
    job.beta = beta
    gpc_pool_run(threads, _gemm_task, &job,
                 ((m + TILE - 1) // TILE) * ((n + TILE - 1) // TILE))


cdef inline int tri_inverse_lower(floating* a, int n) noexcept nogil:
    """Overwrite the lower triangular n x n `a` with its inverse; returns LAPACK
    info.  Unblocked up to UNBLOCKED_MAX; above, dtrtri where gpc_plan gives its
    threads free cores, else tri_inverse_tiled."""
    cdef char uplo = b'L'
    cdef char diag = b'N'
    cdef int info = 0, threads
    if n <= UNBLOCKED_MAX:
        if floating is double:
            dtrti2(&uplo, &diag, &n, a, &n, &info)
        else:
            strti2(&uplo, &diag, &n, a, &n, &info)
        return info
    threads = gpc_plan(<double> n * n * n / 6.0)
    if threads > 0:
        return tri_inverse_tiled(a, n, threads)
    if floating is double:
        dtrtri(&uplo, &diag, &n, a, &n, &info)
    else:
        strtri(&uplo, &diag, &n, a, &n, &info)
    return info


cdef inline int lower_gram(floating* a, int n) noexcept nogil:
    """Overwrite the lower triangle of the lower triangular `a` = M with that of
    M^T M; returns LAPACK info (0).  Unblocked up to UNBLOCKED_MAX (LAPACK's
    lauu2); above, dlauum where gpc_plan gives its threads free cores, else
    lower_gram_tiled."""
    cdef char uplo = b'L'
    cdef int info = 0, threads
    if n <= UNBLOCKED_MAX:
        if floating is double:
            dlauu2(&uplo, &n, a, &n, &info)
        else:
            slauu2(&uplo, &n, a, &n, &info)
        return info
    threads = gpc_plan(<double> n * n * n / 6.0)
    if threads > 0:
        lower_gram_tiled(a, n, threads)
        return 0
    if floating is double:
        dlauum(&uplo, &n, a, &n, &info)
    else:
        slauum(&uplo, &n, a, &n, &info)
    return info


cdef inline void _trmv_tile(const double* a, int n, int j, int w, double* x,
                            bint transpose) noexcept nogil:
    """x[j:j+w] <- T x[j:j+w] (or T' x[j:j+w]) for the lower triangular diagonal
    block T at j of width w, in the calling thread."""
    cdef int i, c
    cdef double s
    cdef const double* col
    if transpose:
        for c in range(j, j + w):            # x_c = sum_{c <= i < j+w} a_ic x_i
            col = a + <size_t> c * n
            s = col[c] * x[c]
            for i in range(c + 1, j + w):
                s += col[i] * x[i]
            x[c] = s
    else:
        for c in range(j + w - 1, j - 1, -1):   # x_i += a_ic x_c for i > c, then x_c
            col = a + <size_t> c * n
            s = x[c]
            for i in range(c + 1, j + w):
                x[i] += col[i] * s
            x[c] = col[c] * s


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


cdef enum:
    # Rows of the panels of dgemv calls in trmv_lower and symv_lower: OpenBLAS
    # runs a dgemv of at most 2048 x 64 entries in the calling thread (it threads
    # from about 1024 x 1024).
    GEMV_ROWS = 2048


cdef inline void _panel_gemv(bint transpose, int m, int w, floating alpha,
                                 const floating* a, int n, const floating* x,
                                 floating* y) noexcept nogil:
    """y += alpha P x (P' x when transposed) for the m x w panel P at `a`
    (leading dimension n), in row chunks of at most GEMV_ROWS."""
    cdef char tr = b'T' if transpose else b'N'
    cdef int r = 0, h, one = 1
    cdef floating pone = 1.0
    while r < m:
        h = GEMV_ROWS if m - r > GEMV_ROWS else m - r
        if floating is double:
            if transpose:
                dgemv(&tr, &h, &w, &alpha, <double*> a + r, &n, <double*> x + r, &one,
                      &pone, y, &one)
            else:
                dgemv(&tr, &h, &w, &alpha, <double*> a + r, &n, <double*> x, &one,
                      &pone, y + r, &one)
        else:
            if transpose:
                sgemv(&tr, &h, &w, &alpha, <float*> a + r, &n, <float*> x + r, &one,
                      &pone, y, &one)
            else:
                sgemv(&tr, &h, &w, &alpha, <float*> a + r, &n, <float*> x, &one,
                      &pone, y + r, &one)
        r += GEMV_ROWS


cdef inline void symv_panels(bint upper, const floating* a, int n, int lda,
                             const floating* x, floating* y, floating alpha,
                             floating beta) noexcept nogil:
    """y <- alpha A x + beta y for the symmetric n x n A (leading dimension lda)
    stored in the lower (or upper) triangle, in the calling thread: TILE-wide
    block columns, symv on the diagonal blocks, gemv both ways on the panels
    below (above) them."""
    cdef char uplo = b'U' if upper else b'L'
    cdef int i, j = 0, w, m, one = 1
    cdef floating pone = 1.0
    cdef const floating* panel
    for i in range(n):
        y[i] = 0.0 if beta == 0.0 else beta * y[i]
    while j < n:
        w = _edge(n, j)
        if floating is double:
            dsymv(&uplo, &w, &alpha, <double*> a + j + <size_t> j * lda, &lda,
                  <double*> x + j, &one, &pone, y + j, &one)
        else:
            ssymv(&uplo, &w, &alpha, <float*> a + j + <size_t> j * lda, &lda,
                  <float*> x + j, &one, &pone, y + j, &one)
        if upper:                            # the panel above: rows 0 .. j
            panel = a + <size_t> j * lda
            m = j
            if m > 0:
                _panel_gemv(False, m, w, alpha, panel, lda, x + j, y)
                _panel_gemv(True, m, w, alpha, panel, lda, x, y + j)
        else:                                # the panel below: rows j + w .. n
            panel = a + j + w + <size_t> j * lda
            m = n - j - w
            if m > 0:
                _panel_gemv(False, m, w, alpha, panel, lda, x + j, y + j + w)
                _panel_gemv(True, m, w, alpha, panel, lda, x + j + w, y + j)
        j += TILE


cdef inline void symv_any(bint upper, const floating* a, int n, const floating* x,
                          floating* y, floating alpha, floating beta) noexcept nogil:
    """y <- alpha A x + beta y for symmetric A stored in the lower (or upper)
    triangle: BLAS's symv up to order TILE and where gpc_plan gives its threads
    free cores, else symv_panels (OpenBLAS threads dsymv and ssymv from about
    256)."""
    cdef char uplo = b'U' if upper else b'L'
    cdef int one = 1
    if n > TILE and gpc_plan(<double> n * n) != 0:
        symv_panels(upper, a, n, n, x, y, alpha, beta)
    elif floating is double:
        dsymv(&uplo, &n, &alpha, <double*> a, &n, <double*> x, &one, &beta, y, &one)
    else:
        ssymv(&uplo, &n, &alpha, <float*> a, &n, <float*> x, &one, &beta, y, &one)


cdef inline void symv_lower(const double* a, int n, const double* x, double* y,
                            double alpha, double beta) noexcept nogil:
    """y <- alpha A x + beta y for symmetric A stored in the lower triangle
    (symv_any)."""
    symv_any(False, a, n, x, y, alpha, beta)


cdef inline void trmv_panels(const double* a, int n, double* x,
                             bint transpose) noexcept nogil:
    """x <- A x (or A' x) for the lower triangular n x n `a`, in place, in the
    calling thread: TILE-wide block columns, the diagonal blocks by loops, the
    panels below them by dgemv."""
    cdef int j, w, m
    if transpose:
        j = 0
        while j < n:                         # x_j <- T_jj' x_j + P_j' x_below
            w = _edge(n, j)
            _trmv_tile(a, n, j, w, x, True)
            m = n - j - w
            if m > 0:
                _panel_gemv(True, m, w, 1.0, a + j + w + <size_t> j * n, n,
                            x + j + w, x + j)
            j += TILE
    else:
        j = ((n - 1) // TILE) * TILE
        while j >= 0:                        # x_below += P_j x_j, then x_j <- T_jj x_j
            w = _edge(n, j)
            m = n - j - w
            if m > 0:
                _panel_gemv(False, m, w, 1.0, a + j + w + <size_t> j * n, n,
                            x + j, x + j + w)
            _trmv_tile(a, n, j, w, x, False)
            j -= TILE


cdef inline void trmv_lower(const double* a, int n, double* x,
                            bint transpose) noexcept nogil:
    """x <- A x (or A' x) for the lower triangular n x n `a`, in place: BLAS's
    dtrmv above UNBLOCKED_MAX where gpc_plan gives its threads free cores, else
    trmv_panels (OpenBLAS threads dtrmv from about 32)."""
    cdef char uplo = b'L'
    cdef char tr = b'T' if transpose else b'N'
    cdef char nd = b'N'
    cdef int one = 1
    if n > UNBLOCKED_MAX and gpc_plan(0.5 * n * n) == 0:
        dtrmv(&uplo, &tr, &nd, &n, <double*> a, &n, x, &one)
    else:
        trmv_panels(a, n, x, transpose)


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
