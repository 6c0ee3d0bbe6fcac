# Ctrl-C inside the compiled loops.  A loop that runs without the GIL never returns
# to the interpreter, so Python's signal handlers (KeyboardInterrupt for SIGINT)
# would only run when it ends.  The long loops call check_signals between blocks of
# work (sweeps, Newton steps, blocks of sites or examples); at most every
# SIGNAL_INTERVAL_MS it takes the GIL for a moment and runs the pending handlers.
# The clock keeps the GIL out of the way: taking it is cheap on its own, but while
# another thread runs Python code it can mean waiting for that thread's switch
# interval.  A handler's exception propagates through the caller's error path
# (declare it ``except -1``; the def functions free their buffers in a
# ``finally``), so an interrupted loop returns nothing and the Python layer, which
# stores a result only once it has one, keeps its previous state.

from cpython.exc cimport PyErr_CheckSignals


cdef extern from "_platform.h" nogil:
    double gpc_monotonic_ms()


cdef enum:
    SIGNAL_BLOCK = 16          # sites or examples between two calls in per-item loops
    SIGNAL_INTERVAL_MS = 100   # between two looks at the handlers


cdef inline int check_signals(double* next_check) except -1 nogil:
    """Run Python's pending signal handlers once ``next_check[0]`` (monotonic
    milliseconds; start it at 0) has passed, and set it SIGNAL_INTERVAL_MS ahead.
    Returns -1 with the handler's exception set (e.g. KeyboardInterrupt) when one
    raised.  Outside the main thread no handler runs (Python runs them in the main
    thread only)."""
    cdef double now = gpc_monotonic_ms()
    if now < next_check[0]:
        return 0
    next_check[0] = now + SIGNAL_INTERVAL_MS
    with gil:
        PyErr_CheckSignals()
    return 0
