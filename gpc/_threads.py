"""How many threads gpc's large factorisations use: :func:`thread_limit`.

Above order 128, each factorisation, inverse or product that OpenBLAS would share
out to its threads is planned when it starts (``gpc_plan`` in ``src_c/_pool.h``).
When every thread OpenBLAS would use has a core that other processes leave free
(Linux: measured from ``/proc/stat`` over the last tenth of a second or more) and
the calling thread's :func:`thread_limit` allows them, gpc calls LAPACK or BLAS:
idle, their blocked routines are the fastest.  Otherwise it runs its own tiled
version: BLAS calls on tiles small enough for OpenBLAS to run them in the calling
thread, shared out to gpc's own threads, as many as the free cores and the limit
allow (one on a fully busy machine).  A tiled result is the same bits on any
number of threads; it can differ from LAPACK's in the last bits.
"""

import numbers
import threading
from contextlib import contextmanager

_local = threading.local()
_controller = None


def _blas_threads():
    """The smallest thread count among the process's BLAS libraries (0: unknown)."""
    global _controller
    if _controller is None:
        try:
            from threadpoolctl import ThreadpoolController

            _controller = [c for c in ThreadpoolController().lib_controllers
                           if c.user_api == "blas"]
        except Exception:                   # no threadpoolctl, or it cannot look
            _controller = []
    counts = [c.get_num_threads() for c in _controller]
    counts = [c for c in counts if c is not None and c > 0]
    return min(counts) if counts else 0


def limits():
    """(the calling thread's :func:`thread_limit`, the BLAS thread count), each
    0 when not set or unknown: what the compiled routines plan with."""
    return getattr(_local, "limit", None) or 0, _blas_threads()


@contextmanager
def thread_limit(n_threads):
    """Limit the threads of gpc's computations in the calling thread.

    gpc plans each large factorisation, inverse or product (orders above 128)
    when it starts: LAPACK's own threaded routine when its threads have cores
    that other processes leave free, otherwise gpc's tiled version on the free
    cores, whose BLAS calls never wake OpenBLAS's threads.  Inside this
    context the computations started by the calling thread use at most
    ``n_threads`` threads (LAPACK only if its thread count is within it); other
    threads of the process are not affected.  The process-wide BLAS thread
    count (``threadpoolctl.threadpool_limits``, ``OMP_NUM_THREADS`` or
    ``OPENBLAS_NUM_THREADS``) limits gpc's threads too.

    Parameters
    ----------
    n_threads : int
        At least 1; 1 keeps every computation in the calling thread.

    Examples
    --------
    >>> import numpy as np
    >>> import gpc
    >>> X = np.random.RandomState(0).randn(300, 2)
    >>> y = (X[:, 0] > 0).astype(int)
    >>> with gpc.thread_limit(1):
    ...     clf = gpc.GaussianProcessClassifier(optimizer=None).fit(X, y)
    """
    if isinstance(n_threads, bool) or not isinstance(n_threads, numbers.Integral):
        raise TypeError(f"n_threads must be an integer, got {n_threads!r}")
    if n_threads < 1:
        raise ValueError(f"n_threads must be at least 1, got {n_threads}")
    with _limit(int(n_threads)):
        yield


@contextmanager
def _tiles(n_threads):
    """Benchmark and test hook, not API: inside, the calling thread's planned
    computations take gpc's tiled route on ``n_threads`` threads (one below a
    million multiply-adds) whatever the machine's load, the route of a busy
    machine with ``n_threads`` free cores."""
    with _limit(-int(n_threads)):
        yield


@contextmanager
def _limit(value):
    """The calling thread's limit as ``limits`` reports it, for the block."""
    old = getattr(_local, "limit", None)
    _local.limit = value
    try:
        yield
    finally:
        _local.limit = old
