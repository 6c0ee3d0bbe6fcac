"""Sparse EP on Dask arrays: the per-chunk work on the workers of a LocalCluster
(worker processes), the same fit as in this process, and no data brought back."""

import re

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

import gpc
from gpc.likelihoods import get_likelihood
from gpc.sparse import sparse_ep
from gpc.sparse._dask import DaskExecutor, chunked_from_dask

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

ROWS, CHUNKS, D = 2048, 3, 3


def _block(seed):
    """One chunk of data, generated wherever it is called."""
    rng = np.random.RandomState(seed)
    X = rng.randn(ROWS, D)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + 0.3 * rng.randn(ROWS) > 0).astype(np.int64)
    return X, y


def _dask_data():
    blocks = [dask.delayed(_block)(seed) for seed in range(CHUNKS)]
    X = da.concatenate([da.from_delayed(b[0], (ROWS, D), dtype=float) for b in blocks])
    y = da.concatenate([da.from_delayed(b[1], (ROWS,), dtype=np.int64)
                        for b in blocks])
    return X, y


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _model(**kw):
    return gpc.SparseGPClassifier(C(1.0) * RBF(np.ones(D)), max_basis=20,
                                  random_state=0, **kw)


def test_dask_fit_equals_the_in_process_fit_and_gathers_no_data(client, monkeypatch):
    X, y = _dask_data()
    gathered = []
    original = distributed.Client.gather

    def watched(self, futures, *args, **kwargs):
        out = original(self, futures, *args, **kwargs)
        gathered.extend(a for a in _arrays(out))
        return out

    monkeypatch.setattr(distributed.Client, "gather", watched)
    on_workers = _model().fit(X, y)
    monkeypatch.undo()
    # Nothing with a row per example came back: only M x M statistics, M-vectors,
    # the inducing inputs and scalars (the largest is a 20 x 20 matrix here).
    assert gathered and max(a.size for a in gathered) <= 20 * 20
    parts = [_block(seed) for seed in range(CHUNKS)]
    local = _model().fit(np.concatenate([p[0] for p in parts]),
                         np.concatenate([p[1] for p in parts]))
    np.testing.assert_allclose(on_workers.kernel_.theta, local.kernel_.theta,
                               rtol=0, atol=1e-8)
    assert on_workers.log_marginal_likelihood_value_ == pytest.approx(
        local.log_marginal_likelihood_value_, rel=0, abs=1e-8)
    np.testing.assert_allclose(on_workers.basis_vectors_, local.basis_vectors_)
    np.testing.assert_allclose(on_workers.alpha_, local.alpha_, rtol=0, atol=1e-8)
    Xs = np.random.RandomState(5).randn(50, D)
    np.testing.assert_allclose(on_workers.predict_proba(Xs), local.predict_proba(Xs),
                               atol=1e-8)
    np.testing.assert_array_equal(on_workers.classes_, [0, 1])


def test_dask_inducing_gradient_equals_the_in_process_one(client):
    # What a fit that learns the inducing inputs adds on the workers, once: their
    # gradient, summed from the chunks' statistics (the whole fit is the slow
    # test below).
    X, y = _dask_data()
    parts = [_block(seed) for seed in range(CHUNKS)]
    Xl = np.concatenate([p[0] for p in parts])
    yl = 2.0 * np.concatenate([p[1] for p in parts]) - 1.0
    Z = Xl[::300]
    kernel, lik = C(1.0) * RBF(np.ones(D)), get_likelihood("probit")
    on_workers = sparse_ep(kernel, lik, chunked_from_dask(client, X, 2.0 * y - 1.0),
                           None, Z, inducing_gradient=True)
    local = sparse_ep(kernel, lik, Xl, yl, Z, inducing_gradient=True, chunk_size=ROWS)
    assert np.abs(local.dZ).max() > 1.0
    assert on_workers.log_evidence == pytest.approx(local.log_evidence, rel=0, abs=1e-8)
    np.testing.assert_allclose(on_workers.dZ, local.dZ, rtol=0,
                               atol=1e-8 * np.abs(local.dZ).max())


@pytest.mark.slow        # a whole fit; the gradient it follows: the test above
def test_dask_learns_inducing_inputs_as_in_process(client):
    X, y = _dask_data()
    on_workers = _model(learn_inducing_points=True).fit(X, y)
    parts = [_block(seed) for seed in range(CHUNKS)]
    local = _model(learn_inducing_points=True).fit(
        np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
    fixed = _model().fit(np.concatenate([p[0] for p in parts]),
                         np.concatenate([p[1] for p in parts]))
    assert np.abs(local.basis_vectors_ - fixed.basis_vectors_).max() > 1e-3
    # The workers' arithmetic rounds differently (one BLAS thread each, their
    # own sums); over the Z stage's many steps that reaches ~1e-9 of the evidence.
    np.testing.assert_allclose(on_workers.basis_vectors_, local.basis_vectors_,
                               rtol=0, atol=1e-5)
    assert on_workers.log_marginal_likelihood_value_ == pytest.approx(
        local.log_marginal_likelihood_value_, rel=1e-8, abs=0)


@pytest.mark.parametrize("learn", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_dask_dataframe_partitions_are_the_chunks(client, learn):
    # The partitions become the chunks before any fit; learning the kernel on
    # them (slow) only repeats what a fixed kernel's fit checks.
    dd = pytest.importorskip("dask.dataframe")
    X, y = _dask_data()
    frame = dd.from_dask_array(X, columns=["a", "b", "c"])
    labels = dd.from_dask_array(y)
    model = _model if learn else _fixed
    from_frame = model().fit(frame, labels)
    from_arrays = model().fit(X, y)
    assert from_frame.log_marginal_likelihood_value_ == pytest.approx(
        from_arrays.log_marginal_likelihood_value_, rel=0, abs=1e-8)
    np.testing.assert_array_equal(from_frame.feature_names_in_, ["a", "b", "c"])
    assert not hasattr(from_arrays, "feature_names_in_")
    reg = gpc.SparseGPRegressor(RBF(np.ones(D)), max_basis=20, random_state=0)
    assert reg.fit(frame, labels.astype(float)).n_features_in_ == D


def test_dask_input_refuses_what_it_cannot_do(client):
    X, y = _dask_data()
    with pytest.raises(ValueError, match="method='ep'"):
        _model(method="adf").fit(X, y)
    with pytest.raises(ValueError, match="two classes"):
        _model().fit(X, y % 1 + da.arange(y.shape[0], chunks=ROWS) % 3)


def _fixed(**kw):
    """The default (fixed) kernel: no hyperparameters learnt, one EP fit."""
    return gpc.SparseGPClassifier(max_basis=30, random_state=0, **kw)


@pytest.fixture(scope="module")
def large():
    """20,000 rows, twice the subset that k-means++ runs on, and their fit in
    this process."""
    rng = np.random.RandomState(1)
    X = rng.randn(20000, 2)
    y = (X[:, 0] * X[:, 1] + 0.3 * rng.randn(20000) > 0).astype(np.int64)
    return X, y, _fixed().fit(X, y)


def _small(seed=4):
    """3,000 rows (k-means++ on all of them) as NumPy and as Dask arrays."""
    rng = np.random.RandomState(seed)
    X = rng.randn(3000, 2)
    y = (X[:, 0] + 0.3 * rng.randn(3000) > 0).astype(np.int64)
    return X, y, da.from_array(X, chunks=(1000, 2)), da.from_array(y, chunks=1000)


def _assert_same_model(on_workers, local):
    """The same inducing inputs, evidence and predictions.  EP's block-sequential
    sweeps visit the chunks in turn, so other chunks take another path to the
    same sites: the weights agree to EP's tolerance (1e-6), the evidence and
    the predictions to 1e-8."""
    np.testing.assert_array_equal(on_workers.basis_vectors_, local.basis_vectors_)
    assert on_workers.log_marginal_likelihood_value_ == pytest.approx(
        local.log_marginal_likelihood_value_, rel=0, abs=1e-8)
    np.testing.assert_allclose(on_workers.alpha_, local.alpha_, rtol=0,
                               atol=1e-6 * np.abs(local.alpha_).max())
    Xs = np.random.RandomState(5).randn(50, local.n_features_in_)
    np.testing.assert_allclose(on_workers.predict_proba(Xs), local.predict_proba(Xs),
                               rtol=0, atol=1e-8)


def test_dask_chunks_of_other_sizes_give_the_in_process_model(client, large):
    # The random subsets (k-means++'s among them) hold the same rows however
    # the data are chunked.
    X, y, local = large
    on_workers = _fixed().fit(da.from_array(X, chunks=(7000, 2)),
                              da.from_array(y, chunks=7000))
    _assert_same_model(on_workers, local)


def test_dask_chunks_of_no_rows_are_skipped(client, large):
    X, y, local = large
    sizes = (0, 9000, 0, 11000)             # an empty first and middle chunk
    Xd, yd = da.from_array(X, chunks=(sizes, 2)), da.from_array(y, chunks=(sizes,))
    assert chunked_from_dask(client, Xd, yd).sizes == [9000, 11000]
    _assert_same_model(_fixed().fit(Xd, yd), local)


@pytest.mark.parametrize("bad, name", [(np.nan, "NaN"), (np.inf, "infinity")])
def test_dask_non_finite_inputs_are_named_as_in_process(client, bad, name):
    # One bad row of 30,000: k-means++ (on a third of them) may miss it, the
    # check on the workers does not.
    rng = np.random.RandomState(2)
    X = rng.randn(30000, 2)
    y = (X[:, 0] > 0).astype(np.int64)
    X[29000, 1] = bad
    with pytest.raises(ValueError) as local:
        _fixed().fit(X, y)
    with pytest.raises(ValueError, match=f"Input X contains {name}") as on_workers:
        _fixed().fit(da.from_array(X, chunks=(7500, 2)), da.from_array(y, chunks=7500))
    assert str(on_workers.value) == str(local.value)


@pytest.mark.parametrize("estimator, bad", [("regressor", np.nan),
                                            ("regressor", np.inf),
                                            ("regressor", 1e300),
                                            ("classifier", np.nan)])
def test_dask_refuses_the_targets_refused_in_process(client, estimator, bad):
    X, y, Xd, _ = _small()
    y = X[:, 0].copy() if estimator == "regressor" else y.astype(float)
    y[1234] = bad
    model = (gpc.SparseGPRegressor(RBF(1.0), max_basis=10, optimizer=None)
             if estimator == "regressor" else _fixed())
    with pytest.raises(ValueError) as local:
        model.fit(X, y)
    with pytest.raises(ValueError) as on_workers:
        model.fit(Xd, da.from_array(y, chunks=1000))
    assert str(on_workers.value) == str(local.value)
    assert not hasattr(model, "n_features_in_")


def test_dask_and_numpy_sides_mix(client):
    X, y, Xd, yd = _small()
    both = _fixed().fit(Xd, yd)
    for inputs in ((Xd, y), (X, yd)):
        assert _fixed().fit(*inputs).log_marginal_likelihood_value_ == pytest.approx(
            both.log_marginal_likelihood_value_, rel=0, abs=1e-8)
    reg = gpc.SparseGPRegressor(RBF(1.0), max_basis=10, optimizer=None, random_state=0)
    assert reg.fit(Xd, X[:, 0]).log_marginal_likelihood_value_ == pytest.approx(
        reg.fit(Xd, da.from_array(X[:, 0], chunks=1000)).log_marginal_likelihood_value_,
        rel=0, abs=1e-8)
    with pytest.raises(ValueError, match=r"as many rows; got shapes \(3000, 2\) and "
                                         r"\(2999,\)"):
        _fixed().fit(Xd, y[1:])


def test_dask_chunks_of_unknown_size_are_counted(client):
    X, y, Xd, yd = _small()
    keep = Xd[:, 1] > 0
    Xk, yk = Xd[keep], yd[keep]
    assert np.isnan(Xk.shape[0])
    on_workers = _fixed().fit(Xk, yk)
    local = _fixed().fit(X[X[:, 1] > 0], y[X[:, 1] > 0])
    assert on_workers.log_marginal_likelihood_value_ == pytest.approx(
        local.log_marginal_likelihood_value_, rel=0, abs=1e-8)


def test_dask_fit_that_loses_a_worker_names_it(monkeypatch):
    # A cluster of its own, of one worker (in this process), which leaves once
    # the inducing-point prior is on it: the prior, scattered there, cannot be
    # recomputed, and every pass of EP needs it.
    X, y, Xd, yd = _small()
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as own, own.as_current():
        worker = next(iter(cluster.workers.values()))
        address, share = worker.address, DaskExecutor.share

        def share_and_lose_the_worker(self, value):
            shared = share(self, value)
            own.sync(worker.close)
            return shared

        monkeypatch.setattr(DaskExecutor, "share", share_and_lose_the_worker)
        named = rf"worker\(s\) {re.escape(address)} left the cluster during the fit"
        with pytest.raises(RuntimeError, match=named) as err:
            _fixed().fit(Xd, yd)
    assert "must be rerun" in str(err.value)
    assert isinstance(err.value.__cause__, distributed.client.FutureCancelledError)


def _arrays(obj):
    """The numpy arrays inside a (nested) result."""
    if isinstance(obj, np.ndarray):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _arrays(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _arrays(v)
