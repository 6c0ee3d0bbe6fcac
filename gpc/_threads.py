"""How many threads gpc's large factorisations use: :func:`thread_limit`.

gpc's tiled factorisations (Cholesky factors of orders above 128) share their tiles
out to worker threads of gpc's own (``src_c/_pool.h``).  Each computation decides
its number of threads when it starts: at most the calling thread's cap, and no more
than the cores other processes leave free (Linux: measured from ``/proc/stat`` over
the last tenth of a second or more).  The cap is the smallest of the limit set with
:func:`thread_limit` in the calling thread and the thread counts of the process's
BLAS libraries (so ``threadpoolctl.threadpool_limits`` and the ``OPENBLAS_NUM_THREADS``
or ``OMP_NUM_THREADS`` variables limit gpc's threads as they limit BLAS).  The
results are the same bits for any number of threads.
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


def cap():
    """The calling thread's cap on gpc's threads: its :func:`thread_limit` and the
    BLAS libraries' thread counts, the smaller; 0 when neither is known."""
    limit = getattr(_local, "limit", None)
    blas = _blas_threads()
    if limit is None:
        return blas
    return min(limit, blas) if blas else limit


@contextmanager
def thread_limit(n_threads):
    """Limit the threads of gpc's computations in the calling thread.

    gpc chooses for each large factorisation (orders above 128) how many threads
    it runs on: at most the number of cores that other processes leave free, and
    at most the thread count of the process's BLAS libraries (which
    ``threadpoolctl.threadpool_limits`` and the ``OMP_NUM_THREADS`` or
    ``OPENBLAS_NUM_THREADS`` variables set).  Inside this context the computations
    started by the calling thread use at most ``n_threads``; other threads of the
    process are not affected.  Results do not depend on the number of threads:
    every tile is computed by the same calls on whichever thread runs it.

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
    old = getattr(_local, "limit", None)
    _local.limit = int(n_threads)
    try:
        yield
    finally:
        _local.limit = old
