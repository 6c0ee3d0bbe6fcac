"""Everything of the sparse models that knows of Dask: the executor that runs a
chunk's task on the worker holding it, the chunks of Dask arrays as
``gpc.sparse._chunked.ChunkedData``, and the checks of the estimators' Dask
inputs.  Dask itself is imported only when Dask data are fitted."""

import functools
import operator
from concurrent.futures import CancelledError

import numpy as np
from sklearn.utils import assert_all_finite

from ._chunked import ChunkedData, _keys, _seed


def is_dask(a):
    """Whether ``a`` is a Dask collection."""
    return type(a).__module__.startswith("dask.")


def as_float(block):
    """A block of regression targets as float64."""
    return np.asarray(block, dtype=np.float64)


def label_values(block):
    """A block's distinct labels; float labels must be finite, as in memory."""
    if block.dtype.kind == "f":
        assert_all_finite(block, input_name="y")
    return np.unique(block)


def _check_chunk(estimator, likelihood, Xc, yc):
    """Refuse a chunk (where it lives) of non-finite inputs or of targets that
    ``likelihood`` does not take, with the in-memory fit's messages."""
    assert_all_finite(Xc, input_name="X", estimator_name=estimator)
    assert_all_finite(yc, input_name="y")
    likelihood.check_targets(yc)


def _client():
    """The current ``distributed`` client, or a ValueError that says how to
    make one."""
    try:
        from distributed import get_client
        return get_client()
    except (ImportError, ValueError):
        raise ValueError("fitting Dask arrays needs dask.distributed and a "
                         "Client (e.g. distributed.Client(LocalCluster())).") \
            from None


def dask_data(X, y, encoder, likelihood, estimator, random_state):
    """Dask data as ``ChunkedData`` on the current client's workers.

    Parameters
    ----------
    X, y : see :func:`dask_inputs`
    encoder : callable
        ``encoder(y)`` (y as a Dask array) gives the map of a block of targets
        to the model's float64 ones.
    likelihood : Likelihood
        Checks each block's targets where it lives.
    estimator : str
        The estimator's name, for the messages.
    random_state : int, RandomState or None
        Seeds the rows' subset keys.

    Returns
    -------
    data : ChunkedData
    n_features : int
    columns : Index or None
        A DataFrame X's column names.
    """
    client = _client()
    X, y, columns = dask_inputs(X, y)
    targets = y.map_blocks(encoder(y), dtype=np.float64)
    check = functools.partial(_check_chunk, estimator, likelihood)
    data = chunked_from_dask(client, X.astype(np.float64), targets, random_state,
                             check)
    return data, int(X.shape[1]), columns


class DaskExecutor:
    """Runs each task on a Dask ``distributed`` client's workers.

    Attributes
    ----------
    client : distributed.Client
    workers : set of str
        The workers' addresses when it was made: those missing when a result
        is lost are named in the error.
    """

    def __init__(self, client):
        self.client = client
        self.workers = set(client.nthreads())

    def submit(self, fn, *args):
        return self.client.submit(fn, *args, pure=False)

    def map(self, fn, shared, per_chunk):
        return [self.submit(fn, *shared, *args) for args in zip(*per_chunk)]

    def item(self, future, i):
        return self.client.submit(operator.getitem, future, i, pure=False)

    def gather(self, futures):
        """The results, here.

        Raises
        ------
        RuntimeError
            When distributed cancelled them: their data, or that of a task they
            need, went with a worker that left, and cannot be recomputed.
        """
        try:
            return self.client.gather(list(futures))
        except CancelledError as exc:
            raise RuntimeError(self._lost(exc)) from exc

    def _lost(self, cause):
        """The message of a fit that lost data with a worker."""
        try:
            gone = sorted(self.workers - set(self.client.nthreads()))
        except Exception:               # the scheduler itself may be gone
            gone = []
        who = (f"the Dask worker(s) {', '.join(gone)} left the cluster" if gone
               else "a Dask worker was lost")
        return (f"The fit lost data it keeps on the Dask workers: {who} during the "
                "fit, holding chunks of the data or results derived from them that "
                f"cannot be recomputed (distributed: {type(cause).__name__}: "
                f"{cause}). The fit must be rerun: persist the data first "
                "(X = X.persist(), y = y.persist()) so that the rerun does not "
                "read it again, and if the worker ran out of memory, give the "
                "workers more memory or cut the data into smaller chunks.")

    def share(self, value):
        """Send a value to every worker once (not with every task)."""
        return self.client.scatter(value, broadcast=True, hash=False)



def chunked_from_dask(client, X, y, random_state=None, check=None):
    """The blocks of Dask arrays ``X`` (chunked by rows only) and ``y``, computed
    and kept on the workers; the keys are drawn there too.

    Parameters
    ----------
    client : distributed.Client
    X : dask.array.Array of shape (n, n_features)
    y : dask.array.Array of shape (n,)
        With known chunk sizes; y is cut as X is.
    random_state : int, RandomState or None
        Seeds the rows' subset keys.
    check : callable, optional
        ``check(X_chunk, y_chunk)``, run on every chunk where it lives before
        anything else; it refuses the data by raising (nothing but its
        exception comes back).

    Returns
    -------
    ChunkedData
        Chunks of no rows are left out: they add nothing to the fit.
    """
    if len(X.chunks[1]) != 1:
        X = X.rechunk({1: -1})
    y = y.rechunk((X.chunks[0],))
    ex = DaskExecutor(client)
    sizes = X.chunks[0]
    starts = np.cumsum((0,) + sizes[:-1])
    full = [i for i, size in enumerate(sizes) if size > 0]
    Xf, yf = (client.compute(list(a.to_delayed().ravel()[full])) for a in (X, y))
    if check is not None:
        ex.gather(ex.map(check, (), (Xf, yf)))
    seed = _seed(random_state)
    keys = [ex.submit(_keys, seed, int(starts[i]), int(sizes[i])) for i in full]
    return ChunkedData(ex, Xf, yf, keys, [sizes[i] for i in full])


def dask_inputs(X, y):
    """Data for :func:`chunked_from_dask`: X and y as Dask arrays of known
    chunk sizes, and a DataFrame X's column names.

    Parameters
    ----------
    X : Dask array or DataFrame, or array-like, of shape (n, n_features)
    y : Dask array or Series, or array-like, of shape (n,)
        At least one of them Dask's.  A DataFrame's or Series' partitions are its
        chunks (their row counts computed where they live); a Dask array whose
        chunk sizes are unknown (after boolean indexing, say) has them computed,
        which runs its graph once more unless it was persisted; a NumPy side is
        cut into the other side's chunks.

    Returns
    -------
    X : dask.array.Array of shape (n, n_features)
    y : dask.array.Array of shape (n,)
    columns : Index or None
    """
    import dask.array as da

    columns = getattr(X, "columns", None)
    X, y = (_known_chunks(a) if type(a).__module__.startswith("dask.")
            else np.asarray(a) for a in (X, y))
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X must be 2-D and y 1-D with as many rows; got shapes "
                         f"{X.shape} and {y.shape}.")
    if X.shape[0] == 0:
        raise ValueError("X and y have no rows: there is nothing to fit.")
    if isinstance(X, np.ndarray):
        X = da.from_array(X, chunks=(y.chunks[0], -1))
    if isinstance(y, np.ndarray):
        y = da.from_array(y, chunks=(X.chunks[0],))
    return X, y, columns


def _known_chunks(a):
    """A Dask collection as a Dask array of known chunk sizes."""
    if hasattr(a, "to_dask_array"):         # DataFrame, Series
        return a.to_dask_array(lengths=True)
    return a.compute_chunk_sizes() if np.isnan(a.shape).any() else a
