"""Data in row chunks, held in this process or by Dask workers.

The sparse model's work is a sum over chunks of M-vectors and M x M matrices, so
this is the one place where it is spread: a task runs on a chunk where the chunk
lives (in this process, or on the Dask worker that holds it) and only the small
results come back.  The two executors have one interface, so the algorithms are
written once:

* :class:`Immediate` runs each task at once, here;
* ``gpc.sparse._dask.DaskExecutor`` submits it to a ``distributed`` client;
  chunks, per-chunk sites and whitened features stay on the workers as futures
  (``gpc.sparse._dask`` holds everything that knows of Dask).

Random nested subsets (the stages of evidence maximisation) draw one uniform key
per row, kept beside the chunk: the subset of fraction f is the rows with key < f,
so a larger fraction's rows contain a smaller one's, in the same order.  A row's
key depends only on the seed and its position in the data, not on the chunks
(:func:`_keys`): the same data and seed give the same subsets, here or on
workers, however they are chunked.
"""


import numpy as np
from sklearn.utils import check_random_state


class Immediate:
    """Runs each task at once in this process; a "future" is the value itself.

    (Chunks side by side in threads gain nothing: SciPy's OpenBLAS serialises
    calls from different threads, while one call's own BLAS threads do speed up
    a chunk's products.)"""

    def submit(self, fn, *args):
        return fn(*args)

    def map(self, fn, shared, per_chunk):
        return [fn(*shared, *args) for args in zip(*per_chunk)]

    def item(self, value, i):
        return value[i]

    def gather(self, values):
        return list(values)

    def share(self, value):
        return value


def _rows(part, keys, fraction):
    return part[keys < fraction]


def _carry(keys, fraction, sites):
    """A subset's sites from those of a smaller nested subset (``keys < fraction``
    of this subset's rows); zeros for the rows new to it."""
    E, beta = np.zeros(keys.size), np.zeros(keys.size)
    old = keys < fraction
    E[old], beta[old] = sites
    return E, beta


def _zero_sites(size):
    return np.zeros(size), np.zeros(size)


class ChunkedData:
    """Rows ``(X, y)`` in chunks, with each row's uniform subset key and weight.

    Attributes
    ----------
    executor : Immediate or gpc.sparse._dask.DaskExecutor
    X, y, keys : lists of per-chunk arrays (or futures of them)
    w : list of per-chunk arrays (or futures), or of None
        The rows' weights (None: all 1).
    sizes : list of int
        Rows per chunk.
    n : int
        Rows in all.
    fraction : float
        The fraction of the full data these rows are (1 for the full data).
    """

    def __init__(self, executor, X, y, keys, sizes, fraction=1.0, chunk_size=None,
                 w=None):
        self.executor, self.X, self.y, self.keys = executor, X, y, keys
        self.w = [None] * len(sizes) if w is None else w
        self.sizes = [int(s) for s in sizes]
        self.n = sum(self.sizes)
        self.fraction = float(fraction)
        self.chunk_size = chunk_size

    @classmethod
    def from_arrays(cls, X, y, chunk_size, random_state=None, w=None):
        """Chunks of in-memory arrays (views, no copy); ``w`` the rows' weights
        (None: all 1)."""
        cuts = _cuts(X.shape[0], chunk_size)
        seed = _seed(random_state)
        keys = [_keys(seed, c.start, c.stop - c.start) for c in cuts]
        return cls(Immediate(), [X[c] for c in cuts], [y[c] for c in cuts], keys,
                   [c.stop - c.start for c in cuts], chunk_size=chunk_size,
                   w=None if w is None else [w[c] for c in cuts])

    def subset(self, fraction):
        """The nested random subset of ``fraction`` of the full data's rows.

        Chunks held here are cut anew to ``chunk_size`` rows (a subset's chunks
        would otherwise be small, and the work per chunk inefficient); Dask's
        chunks stay where they are, each keeping its share of rows."""
        if fraction >= 1.0:
            return self
        weighted = any(w is not None for w in self.w)
        if self.chunk_size is not None:
            keys = np.concatenate(self.keys)
            rows = keys < fraction
            X, y = np.concatenate(self.X)[rows], np.concatenate(self.y)[rows]
            w = np.concatenate(self.w)[rows] if weighted else None
            cuts = _cuts(X.shape[0], self.chunk_size)

            def cut(a):
                return None if a is None else [a[c] for c in cuts]

            return ChunkedData(self.executor, cut(X), cut(y), cut(keys[rows]),
                               [c.stop - c.start for c in cuts], fraction,
                               self.chunk_size, w=cut(w))
        ex = self.executor

        def part(chunks):
            return [ex.submit(_rows, p, k, fraction) for p, k in zip(chunks, self.keys)]

        sizes = ex.gather(ex.submit(_count, k, fraction) for k in self.keys)
        return ChunkedData(ex, part(self.X), part(self.y), part(self.keys), sizes,
                           fraction, w=part(self.w) if weighted else None)


    def zero_sites(self):
        return [self.executor.submit(_zero_sites, s) for s in self.sizes]

    def carry(self, sites, fraction):
        """These rows' sites from those of the nested subset of ``fraction``
        (``sites`` per chunk of that subset, in the order of its rows)."""
        if self.chunk_size is not None:
            E, beta = _carry(np.concatenate(self.keys), fraction,
                             [np.concatenate(a) for a in zip(*sites)])
            cuts = np.cumsum(self.sizes)[:-1]
            return list(zip(np.split(E, cuts), np.split(beta, cuts)))
        return [self.executor.submit(_carry, k, fraction, s)
                for k, s in zip(self.keys, sites)]

    def map(self, fn, *per_chunk, shared=()):
        """``fn(*shared, *chunk_args)`` on every chunk, where the chunk lives;
        ``per_chunk`` are lists with one entry per chunk."""
        return self.executor.map(fn, tuple(shared), per_chunk)


def _cuts(n, chunk_size):
    return [slice(i, min(i + chunk_size, n)) for i in range(0, n, chunk_size)]


def _seed(random_state):
    """The one seed of the rows' subset keys."""
    return int(check_random_state(random_state).randint(2 ** 31 - 1))


def _keys(seed, start, size):
    """The subset keys of rows ``start, ..., start + size - 1``: uniform draws of
    one PCG64 stream, advanced to ``start``, so a row's key is the same whatever
    chunk holds it."""
    bits = np.random.PCG64(seed)
    bits.advance(start)
    return np.random.Generator(bits).random(size)


def _count(keys, fraction):
    return int(np.count_nonzero(keys < fraction))
