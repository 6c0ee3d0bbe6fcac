"""Hardening of the estimators: persistence, failure atomicity, warm
starts that never cross data sets, the memory guard, threads and the GIL.

Every estimator configuration is in ``ESTIMATORS``: a new method is covered by
adding it there (``GaussianProcessClassifier`` takes every method of
``gpc.available_methods()`` automatically).
"""

import contextlib
import copy
import io
import os
import pickle
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import joblib
import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C

import gpc
from gpc import GaussianProcessClassifier, SparseGPClassifier, SparseGPRegressor
from gpc import _validation
from gpc.inference import get_method


def _configs():
    """name -> (estimator class, parameters) of every configuration tested."""
    out = {}
    for method in gpc.available_methods():
        likelihood = "probit" if method in ("ep", "pl", "adf") else "logit"
        updates = ["sequential", "parallel"] if method in ("ep", "pl") else [None]
        for u in updates:
            out[method + (f"-{u}" if u else "")] = (GaussianProcessClassifier, dict(
                method=method, likelihood=likelihood,
                inference_options={"updates": u} if u else None))
    # The sparse estimators' default (sparse EP) picks inducing inputs by k-means++:
    # seeded, so that repeated fits are the same computation.
    out["sparse-classifier"] = (SparseGPClassifier, dict(max_basis=15, random_state=0))
    out["sparse-regressor"] = (SparseGPRegressor, dict(max_basis=15, random_state=0))
    out["sparse-online-classifier"] = (SparseGPClassifier, dict(
        method="adf", max_basis=15, n_em=2))
    out["sparse-online-regressor"] = (SparseGPRegressor, dict(
        method="adf", max_basis=15, n_em=2))
    return out


ESTIMATORS = _configs()
# Hyperparameter learning needs an evidence gradient; methods without one are always
# fitted with the kernel fixed (the others only where a test asks for learning).
NO_GRADIENT = {name for name, (cls, p) in ESTIMATORS.items()
               if cls is GaussianProcessClassifier
               and not get_method(p["method"]).has_gradient}


def _data(seed, n=40, n_classes=2, regression=False):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 2)
    if regression:
        return X, np.sin(X[:, 0]) + 0.1 * rng.randn(n)
    f = X[:, 0] + 0.5 * np.sin(3 * X[:, 1])
    if n_classes == 2:
        return X, (f + 0.3 * rng.randn(n) > 0).astype(int)
    return X, np.digitize(f, np.quantile(f, np.linspace(0, 1, n_classes + 1)[1:-1]))


def _kernel(name, kernel=None):
    """``kernel`` (default ``C * RBF``), with a noise term for the ensemble mean
    field, which refuses the nearly singular K of the RBF alone on these data."""
    kernel = C(1.0) * RBF(1.0) if kernel is None else kernel
    if ESTIMATORS[name][1].get("method") == "mean_field":
        return kernel + WhiteKernel(1e-2)
    return kernel


def _make(name, **kw):
    cls, params = ESTIMATORS[name]
    params = {**params, "kernel": _kernel(name), "optimizer": None, **kw}
    if name in NO_GRADIENT:
        params["optimizer"] = None
    return cls(**params)


def _fit(name, seed=0, n_classes=2, **kw):
    X, y = _data(seed, n_classes=n_classes, regression=name.endswith("regressor"))
    return _make(name, **kw).fit(X, y), X


def _outputs(est, X):
    """Everything an estimator predicts at X, as arrays."""
    if isinstance(est, SparseGPRegressor):
        return list(est.predict(X, return_std=True))
    return [est.predict_proba(X), est.predict(X)]


def _assert_identical(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


# --- persistence ----------------------------------------------------------------


@pytest.mark.parametrize("name", ESTIMATORS)
def test_pickle_and_joblib_round_trips_give_identical_predictions(name, tmp_path):
    est, X = _fit(name, optimizer="fmin_l_bfgs_b")
    Xq = np.random.RandomState(9).randn(25, 2)
    before = _outputs(est, Xq)
    loaded = [pickle.loads(pickle.dumps(est))]
    joblib.dump(est, tmp_path / "est.joblib")
    loaded.append(joblib.load(tmp_path / "est.joblib"))
    buf = io.BytesIO()
    joblib.dump(est, buf, compress=3)
    buf.seek(0)
    loaded.append(joblib.load(buf))
    for other in loaded:
        _assert_identical(_outputs(other, Xq), before)
        assert (other.log_marginal_likelihood_value_
                == est.log_marginal_likelihood_value_)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_pickled_model_is_unaffected_by_refitting_another(name):
    kernel = _kernel(name)                 # one kernel object shared by both
    first, _ = _fit(name, seed=0, kernel=kernel)
    Xq = np.random.RandomState(9).randn(25, 2)
    before = _outputs(first, Xq)
    blob = pickle.dumps(first)
    # Another estimator with the same parameters (and kernel object), refitted
    # twice on other data.
    second, _ = _fit(name, seed=1, kernel=kernel)
    second.fit(*_data(2, regression=name.endswith("regressor")))
    _assert_identical(_outputs(pickle.loads(blob), Xq), before)
    _assert_identical(_outputs(first, Xq), before)
    assert kernel.get_params() == _kernel(name).get_params()


GPC_CONFIGS = [name for name, (cls, _) in ESTIMATORS.items()
               if cls is GaussianProcessClassifier]


@pytest.mark.parametrize("name", GPC_CONFIGS)
def test_warm_start_never_crosses_data_sets(name):
    """A warm-started refit on other data equals a fresh fit on that data (bit for
    bit: an iteration started from other sites ends elsewhere within its tol)."""
    X1, y1 = _data(0)
    X2, y2 = _data(1)
    warm = _make(name, warm_start=True).fit(X1, y1).fit(X2, y2)
    fresh = _make(name, warm_start=True).fit(X2, y2)
    Xq = np.random.RandomState(9).randn(25, 2)
    _assert_identical(_outputs(warm, Xq), _outputs(fresh, Xq))
    assert warm.log_marginal_likelihood_value_ == fresh.log_marginal_likelihood_value_


# --- failure atomicity ------------------------------------------------------------


class _Interrupting(RBF):
    """An RBF that raises KeyboardInterrupt on its ``fail_at``-th evaluation
    (counted across clones, which the estimators make)."""

    calls = [0]

    def __init__(self, length_scale=1.0, length_scale_bounds=(1e-5, 1e5), fail_at=2):
        super().__init__(length_scale, length_scale_bounds)
        self.fail_at = fail_at

    def __call__(self, X, Y=None, eval_gradient=False):
        self.calls[0] += 1
        if self.calls[0] >= self.fail_at:
            raise KeyboardInterrupt
        return super().__call__(X, Y, eval_gradient)


def _snapshot(est):
    return dict(vars(est))


def _assert_untouched(est, snapshot, outputs, Xq):
    assert set(vars(est)) == set(snapshot)
    for k, v in snapshot.items():
        assert vars(est)[k] is v, k
    _assert_identical(_outputs(est, Xq), outputs)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("when", ["first", "last"])
def test_an_interrupted_fit_leaves_the_fitted_estimator_as_it_was(name, n_classes,
                                                                   when):
    # Interrupted at the fit's first or last kernel evaluation (a binary fit with
    # fixed hyperparameters evaluates the kernel once or a few times; with three
    # classes the last one is in the last binary problem).
    if ESTIMATORS[name][0] is SparseGPRegressor and n_classes == 3:
        pytest.skip("regression has no classes")
    est, _ = _fit(name, n_classes=n_classes)
    Xq = np.random.RandomState(9).randn(25, 2)
    outputs, snapshot = _outputs(est, Xq), _snapshot(est)
    X, y = _data(5, n=30, n_classes=n_classes, regression=name.endswith("regressor"))
    counting = copy.deepcopy(est).set_params(
        kernel=_kernel(name, _Interrupting(fail_at=np.inf)))
    _Interrupting.calls[0] = 0
    counting.fit(X, y)
    fail_at = 1 if when == "first" else _Interrupting.calls[0]
    est.set_params(kernel=_kernel(name, _Interrupting(fail_at=fail_at)))
    _Interrupting.calls[0] = 0
    with pytest.raises(KeyboardInterrupt):
        est.fit(X, y)
    assert _Interrupting.calls[0] >= fail_at          # it did get into the fit
    est.set_params(kernel=snapshot.get("kernel", est.kernel))
    _assert_untouched(est, snapshot, outputs, Xq)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("Estimator", ["adf", "sparse-classifier"])
def test_an_interrupted_partial_fit_leaves_the_estimator_as_it_was(Estimator, n_classes,
                                                                   monkeypatch):
    X, y = _data(0, n_classes=n_classes)
    classes = np.unique(y)
    est = _make(Estimator, optimizer=None)
    est.partial_fit(X[:20], y[:20], classes=classes)
    Xq = np.random.RandomState(9).randn(25, 2)
    outputs, snapshot = _outputs(est, Xq), _snapshot(est)
    # Interrupt the second binary problem's update (the only one for two classes).
    from gpc.sparse import estimators as sparse_module

    calls = [0]
    if Estimator == "sparse-classifier":
        original = sparse_module.online_pass

        def interrupted(*args, **kwargs):
            calls[0] += 1
            if calls[0] >= min(2, n_classes - 1):
                raise KeyboardInterrupt
            return original(*args, **kwargs)

        monkeypatch.setattr(sparse_module, "online_pass", interrupted)
    else:
        from gpc import classifier as classifier_module

        original = classifier_module._BinaryGaussianProcessClassifier.partial_fit

        def interrupted(self, *args, **kwargs):
            calls[0] += 1
            if calls[0] >= min(2, n_classes - 1):
                raise KeyboardInterrupt
            return original(self, *args, **kwargs)

        monkeypatch.setattr(classifier_module._BinaryGaussianProcessClassifier,
                            "partial_fit", interrupted)
    with pytest.raises(KeyboardInterrupt):
        est.partial_fit(X[20:], y[20:])
    assert calls[0] == min(2, n_classes - 1)
    monkeypatch.undo()
    _assert_untouched(est, snapshot, outputs, Xq)
    # ... and it still learns from the same data afterwards.
    est.partial_fit(X[20:], y[20:])
    whole = _make(Estimator, optimizer=None).partial_fit(X, y, classes=classes)
    np.testing.assert_allclose(est.predict_proba(Xq), whole.predict_proba(Xq),
                               rtol=1e-8, atol=1e-10)


# --- memory guard -----------------------------------------------------------------


@pytest.mark.parametrize("method", gpc.available_methods())
def test_a_fit_too_large_for_memory_fails_fast(method):
    # 300,000 points need 3 x 720 GB; the data themselves are 2.4 MB.
    rng = np.random.RandomState(0)
    X = rng.randn(300_000, 1)
    y = (X[:, 0] > 0).astype(int)
    have = _validation.available_memory()
    if have is None or have > 3 * 8 * 300_000.0 ** 2:
        pytest.skip("available memory unknown (or absurdly large)")
    t0 = time.perf_counter()
    with pytest.raises(MemoryError, match=r"n = 300000.*TB.*SparseGPClassifier"):
        GaussianProcessClassifier(RBF(1.0), method=method, optimizer=None).fit(X, y)
    assert time.perf_counter() - t0 < 30        # no n x n allocation was attempted


def test_memory_guard_message_and_threshold(monkeypatch):
    monkeypatch.setattr(_validation, "available_memory", lambda: 10 * 2**30)
    # 3 x 8 x 20000^2 bytes = 8.9 GiB fits in 10 GiB; 25000 (14 GiB) does not.
    _validation.check_full_fit_memory(20_000, "test")
    with pytest.raises(MemoryError, match=r"test with n = 25000 .*14\.0 GB.*10\.0 GB"):
        _validation.check_full_fit_memory(25_000, "test")
    monkeypatch.setattr(_validation, "available_memory", lambda: None)
    _validation.check_full_fit_memory(10**9, "test")   # unknown memory: no guard


def test_memory_guard_reads_memory_only_for_large_needs(monkeypatch):
    # A small gpc.infer call does not pay for reading /proc/meminfo: needs of at
    # most 1 % of the physical memory are not probed.
    probes = []
    monkeypatch.setattr(_validation, "available_memory",
                        lambda: probes.append(1) or 2**20)
    monkeypatch.setattr(_validation, "physical_memory", lambda: 2**40)
    _validation.check_full_fit_memory(100, "test")            # 240 KB of 1 TB
    assert not probes
    with pytest.raises(MemoryError):
        _validation.check_full_fit_memory(200_000, "test")    # 960 GB
    assert probes
    monkeypatch.setattr(_validation, "physical_memory", lambda: None)
    with pytest.raises(MemoryError):                          # unknown size: probed
        _validation.check_full_fit_memory(1000, "test")


# --- threads, the GIL and BLAS threads -----------------------------------------------


def _fit_predict(name, seed, Xq):
    est, _ = _fit(name, seed=seed)
    return _outputs(est, Xq) + [np.array(est.log_marginal_likelihood_value_)]


@pytest.mark.parametrize("name", ESTIMATORS)
def test_two_threads_give_the_results_of_one_after_the_other(name):
    # With the default BLAS threads: each thread's calls are the same sums in
    # the same order whether or not another thread computes meanwhile.
    Xq = np.random.RandomState(9).randn(25, 2)
    serial = [_fit_predict(name, seed, Xq) for seed in (0, 1)]
    with ThreadPoolExecutor(2) as pool:
        threaded = list(pool.map(lambda s: _fit_predict(name, s, Xq), (0, 1)))
    for a, b in zip(serial, threaded):
        _assert_identical(a, b)


def _longest_pause(work):
    """Run ``work`` in a thread; the longest the main thread (running Python) was
    kept waiting meanwhile, and the work's duration."""
    go, done, span = threading.Event(), threading.Event(), []

    def run():
        go.wait()
        t0 = time.perf_counter()
        try:
            work()
            span.append(time.perf_counter() - t0)
        finally:
            done.set()                                # a failed work ends the wait

    worker = threading.Thread(target=run)
    worker.start()
    longest, last = 0.0, time.perf_counter()
    go.set()                                          # the clock runs before the work
    while not done.is_set():
        sum(range(200))                               # pure Python: needs the GIL
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    worker.join()
    return longest, span[0]


def test_the_pause_measurement_sees_a_held_gil():
    """The control: math.factorial is one C call that keeps the GIL throughout."""
    import math

    longest, span = _longest_pause(lambda: math.factorial(120_000))
    assert longest > 0.5 * span, (longest, span)


@pytest.mark.parametrize("method, options", [
    ("laplace", {}), ("ep", {"updates": "parallel"}), ("ep", {"updates": "sequential"}),
    ("pl", {"updates": "parallel"}), ("pl", {"updates": "sequential"}), ("adf", {}),
    ("naive_mean_field", {}), ("mean_field", {}), ("vb", {})])
def test_heavy_loops_release_the_gil(method, options):
    from threadpoolctl import threadpool_limits

    rng = np.random.RandomState(0)
    n = 400
    X = rng.randn(n, 3)
    K = np.exp(-0.5 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1) / 2.0) * 2.0
    K += 1e-2 * np.eye(n)          # the ensemble mean field refuses a K near singular
    y = np.sign(X[:, 0] + 0.3 * rng.randn(n))
    lik = "logit" if method in ("laplace", "vb", "mean_field", "naive_mean_field") \
        else "probit"
    with threadpool_limits(1):
        longest, span = _longest_pause(
            lambda: [gpc.infer(K, y, method=method, likelihood=lik, **options)
                     for _ in range(2)])
    # Holding the GIL through a compiled loop would stall the main thread for
    # about that loop's duration; released, the stalls are the interpreter's
    # switch interval (5 ms) and the Python glue between calls.
    assert longest < max(0.25 * span, 0.05), (longest, span)


def test_blas_thread_limit_is_respected():
    """With threadpoolctl limiting BLAS to one thread, a BLAS-bound fit uses one
    core: its CPU time is about its wall time."""
    from threadpoolctl import threadpool_limits

    rng = np.random.RandomState(0)
    n = 1200
    X = rng.randn(n, 3)
    K = np.exp(-0.5 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1) / 2.0) * 2.0
    K += 1e-2 * np.eye(n)          # the ensemble mean field refuses a K near singular
    y = np.sign(X[:, 0] + 0.3 * rng.randn(n))
    with threadpool_limits(1):
        wall, cpu = time.perf_counter(), time.process_time()
        gpc.infer(K, y, method="ep", likelihood="probit", updates="parallel")
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert cpu < 1.25 * wall, (cpu, wall)


def _worker_ticks():
    """CPU clock ticks used so far by every thread of this process but the
    calling one (Linux); BLAS worker threads run only when a call wakes them."""
    import os

    me, ticks = threading.get_native_id(), 0
    for tid in os.listdir("/proc/self/task"):
        if int(tid) != me:
            with open(f"/proc/self/task/{tid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])       # utime + stime
    return ticks


def _ticks_during(work, seconds=0.4):
    """Worker ticks while ``work`` runs again and again for ``seconds``, after
    the workers of earlier calls stopped spinning."""
    time.sleep(0.3)
    before, t0 = _worker_ticks(), time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        work()
    return _worker_ticks() - before


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc")
@pytest.mark.parametrize("method, lik", [("laplace", "logit"), ("vb", "logit"),
                                         ("ep", "probit"), ("naive_mean_field", "logit")])
def test_small_inference_stays_in_the_calling_thread(method, lik):
    # On a machine busy with other work, a BLAS call that wakes worker threads can
    # wait a scheduler period for them: at n = 100 these methods (EP with its
    # default parallel updates) call only routines that run in the calling thread.  The control, LAPACK's blocked inverse at the
    # same order, wakes the workers whenever BLAS has more than one thread.
    from scipy.linalg import lapack

    rng = np.random.RandomState(0)
    n = 100
    X = rng.randn(n, 3)
    K = np.exp(-0.5 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1) / 2.0) * 2.0
    y = np.sign(X[:, 0] + 0.3 * rng.randn(n))
    L = np.asfortranarray(np.linalg.cholesky(K + np.eye(n)))
    if _ticks_during(lambda: lapack.dpotri(L, lower=1)) == 0:
        pytest.skip("BLAS runs one thread here: no workers to wake")
    assert _ticks_during(lambda: gpc.infer(K, y, method=method, likelihood=lik)) == 0


def _spd(n, seed=0, dtype=np.float64):
    X = np.random.RandomState(seed).randn(n, n + 3)
    return np.asfortranarray(X @ X.T / n + np.eye(n), dtype=dtype)


@pytest.mark.parametrize("dtype, atol", [(np.float64, 1e-13), (np.float32, 2e-6)])
def test_tiled_cholesky_is_lapacks_on_any_number_of_threads(dtype, atol):
    # The factorisation behind every Cholesky of order above 128: 64-wide tiles
    # whose BLAS calls run in the thread that makes them, shared out to gpc's
    # own threads.  Every tile is the same calls whichever thread runs it, so
    # the factor is the same bits for 1, 2 or 3 threads (OpenBLAS's dpotrf is
    # not: its blocks follow its thread count).
    from scipy.linalg import lapack

    from gpc import _checks

    for n in (1, 63, 64, 65, 130, 300, 700):
        A = _spd(n, dtype=dtype)
        factors = []
        for threads in (1, 2, 3, 0):                 # 0: as gpc chooses
            B = A.copy(order="F")
            assert _checks._tiled("cholesky", B, threads) == 0
            factors.append(B)
        np.testing.assert_allclose(np.tril(factors[0]),
                                   np.linalg.cholesky(A.astype(np.float64)),
                                   rtol=0, atol=atol)
        assert np.array_equal(np.triu(factors[0], 1), np.triu(A, 1))   # untouched
        for B in factors[1:]:
            assert np.array_equal(B, factors[0])
    for threads in (1, 2):                           # LAPACK's info on failure
        A = np.asfortranarray(np.diag([1.0, 2.0, -1.0] + [3.0] * 200))
        assert _checks._tiled("cholesky", A, threads) == lapack.dpotrf(A)[1] == 3
        A = _spd(300)
        A[200, 200] = -1.0
        assert _checks._tiled("cholesky", A, threads) == lapack.dpotrf(A)[1]


def test_tiled_inverse_and_gram_are_lapacks_on_any_number_of_threads():
    # The triangular inverse and L'L behind B^{-1} above order 128, tiled like
    # the Cholesky factorisation: LAPACK's answers, the same bits on any number
    # of threads, LAPACK's info for a singular triangle.
    from scipy.linalg import lapack

    from gpc import _checks

    for n in (1, 63, 64, 65, 130, 300, 700):
        A = _spd(n, seed=1)
        L = np.asfortranarray(np.linalg.cholesky(A))
        L += np.triu(np.full((n, n), 7.0), 1)      # the upper triangle is not read
        for op, ref in (("inverse", lapack.dtrtri(np.tril(L), lower=1)[0]),
                        ("gram", np.tril(np.tril(L).T @ np.tril(L)))):
            outs = []
            for threads in (1, 2, 3, 0):
                B = L.copy(order="F")
                assert _checks._tiled(op, B, threads) == 0
                outs.append(B)
            scale = np.abs(ref).max()
            np.testing.assert_allclose(np.tril(outs[0]), ref, rtol=0, atol=1e-13 * scale)
            assert np.array_equal(np.triu(outs[0], 1), np.triu(L, 1))
            for B in outs[1:]:
                assert np.array_equal(B, outs[0])
    for threads in (1, 2):
        L = np.asfortranarray(np.tril(_spd(300)))
        L[150, 150] = 0.0
        assert _checks._tiled("inverse", L.copy(order="F"), threads) == \
            lapack.dtrtri(L, lower=1)[1] == 151


def test_panel_products_are_blas():
    # symv and trmv above order 64: dsymv on the diagonal blocks and dgemv on
    # the panels below them, in row chunks small enough for the calling thread.
    from gpc import _checks

    rng = np.random.RandomState(3)
    for n in (1, 64, 65, 130, 2100, 4500):
        A = np.asfortranarray(rng.randn(n, n))
        x = rng.randn(n)
        S = np.tril(A) + np.tril(A, -1).T
        for op, ref in (("symv", S @ x), ("trmv", np.tril(A) @ x),
                        ("trmv_t", np.tril(A).T @ x)):
            np.testing.assert_allclose(_checks._blas2(op, A, x), ref, rtol=0,
                                       atol=1e-12 * np.sqrt(n) * np.abs(ref).max())
        # symv on the leading block of a larger array (the sparse GP's BV set
        # inside its capacity)
        P = np.asfortranarray(rng.randn(n + 7, n + 3))
        P[:n, :n] = A
        np.testing.assert_allclose(_checks._blas2("symv", P, x), S @ x, rtol=0,
                                   atol=1e-12 * np.sqrt(n) * np.abs(S @ x).max())


def _layouts(X):
    """X C-ordered, Fortran-ordered and strided (neither)."""
    strided = np.zeros((X.shape[0], 2 * X.shape[1]))[:, ::2]
    strided[...] = X
    return np.ascontiguousarray(X), np.asfortranarray(X), strided


def test_tiled_matrix_products_are_blas():
    # gpc._linalg.matmul and gram, which gpc's Python code multiplies with: the
    # tiles (threads > 0) are the same bits on any number of threads and agree
    # with numpy's product in every memory layout; the planned route (0) too.
    from gpc._linalg import gram, matmul

    rng = np.random.RandomState(5)
    from threadpoolctl import threadpool_limits

    for m, k, n in ((1, 1, 1), (5, 3, 7), (64, 64, 64), (65, 130, 1), (300, 200, 150),
                    (700, 513, 1), (700, 513, 90)):
        A, B = rng.randn(m, k), rng.randn(k, n)
        ref = A @ B
        atol = 1e-14 * np.sqrt(k) * np.abs(A).max() * np.abs(B).max() * k
        for a in _layouts(A):
            for b in (B, np.asfortranarray(B)):
                outs = [matmul(a, b, threads) for threads in (0, 1, 2, 3)]
                for out in outs:
                    np.testing.assert_allclose(out, ref, rtol=0, atol=atol)
                assert all(np.array_equal(outs[1], o) for o in outs[2:])
    assert matmul(A, B).flags.c_contiguous
    with threadpool_limits(1):              # BLAS's route: one column by dgemv
        x = rng.randn(k, 1)
        for a in _layouts(A):
            np.testing.assert_allclose(matmul(a, x), A @ x, rtol=0, atol=1e-12 * k)
    assert matmul(np.zeros((3, 0)), np.zeros((0, 2))).tolist() == [[0.0] * 2] * 3
    with pytest.raises(ValueError, match="do not align"):
        matmul(np.ones((2, 3)), np.ones((2, 3)))
    for d in (7, 130):                      # gram: every layout, both routes
        Z = rng.randn(300, d)
        for limit in (None, 1):
            with gpc.thread_limit(limit) if limit else contextlib.nullcontext():
                for z in _layouts(Z):
                    G = gram(z)
                    assert np.array_equal(G, G.T)
                    np.testing.assert_allclose(G, Z @ Z.T, rtol=0,
                                               atol=1e-13 * np.abs(Z @ Z.T).max())


def test_planned_factorisations_and_solves_are_lapacks():
    # gpc._linalg's Cholesky, inverse from the factor, triangular solve and symv
    # on both routes: as gpc plans them and pinned to the tiles by the limit.
    from scipy.linalg import cho_solve, solve_triangular

    from gpc import _linalg

    rng = np.random.RandomState(6)
    for n in (1, 60, 130, 400):
        A = _spd(n) if n > 1 else np.array([[2.0]])
        L = np.linalg.cholesky(A)
        B = rng.randn(n, 3)
        x = rng.randn(n)
        for limit in (None, 1):
            with gpc.thread_limit(limit) if limit else contextlib.nullcontext():
                F = A.copy(order="F")
                assert _linalg.cholesky(F) == 0
                np.testing.assert_allclose(np.tril(F), L, rtol=0, atol=1e-13 * n)
                assert _linalg.cho_inverse(F) == 0
                inverse = cho_solve((L, True), np.eye(n))
                np.testing.assert_allclose(np.tril(F), np.tril(inverse), rtol=1e-9,
                                           atol=1e-12)
                np.testing.assert_allclose(_linalg.factor_inverse(L), inverse,
                                           rtol=1e-9, atol=1e-12)
                for rhs in (B, x):
                    np.testing.assert_allclose(
                        _linalg.solve_lower(L, rhs),
                        solve_triangular(L, rhs, lower=True), rtol=1e-10, atol=1e-12)
                np.testing.assert_allclose(_linalg.symv(A, x), A @ x, rtol=0,
                                           atol=1e-12 * n)
    F = np.asfortranarray(-np.eye(3))
    assert _linalg.cholesky(F) == 1
    for limit in (None, 1):
        with gpc.thread_limit(limit) if limit else contextlib.nullcontext():
            with pytest.raises(np.linalg.LinAlgError, match=r"L\[3, 3\] is 0"):
                _linalg.solve_lower(np.diag([1.0] * 3 + [0.0] * 197), np.ones(200))


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 63, 64, 65, 130, 257])
def test_mirror_lower_copies_the_lower_triangle_exactly(n):
    # In place, on one tile and several, with the vectorised 4 x 4 blocks and
    # the rows and columns left over from them.
    from gpc._linalg import mirror_lower

    A = np.asfortranarray(np.random.RandomState(n).randn(n, n))
    expected = np.tril(A) + np.tril(A, -1).T
    assert mirror_lower(A) is A
    np.testing.assert_array_equal(A, expected)
    with pytest.raises(ValueError, match="square"):
        mirror_lower(np.zeros((3, 2), order="F"))
    with pytest.raises(ValueError):
        mirror_lower(np.zeros((3, 3), order="C")[:, :2])


@pytest.mark.parametrize("n", [1, 7, 65, 300])
def test_planned_cholesky_and_solves_are_scipys(n):
    # The copying Cholesky, the transposed solve and the Cholesky solve of
    # gpc._linalg that replace SciPy's cholesky, solve_triangular and cho_solve:
    # on both routes (as planned, and the tiles by the limit; 65 and 300 take
    # several tiles), in every memory layout, reading one triangle only.
    from scipy.linalg import cho_solve, cholesky, solve_triangular

    from gpc import _linalg

    rng = np.random.RandomState(n)
    A = _spd(n, seed=n)
    L = cholesky(A, lower=True)
    junk = np.triu(rng.randn(n, n), 1)              # above the diagonal: not read
    B = rng.randn(n, 5)
    for limit in (None, 1):
        with gpc.thread_limit(limit) if limit else contextlib.nullcontext():
            for a in _layouts(np.tril(A) + junk):
                kept = a.copy()
                np.testing.assert_allclose(_linalg.lower_cholesky(a), L, rtol=0,
                                           atol=1e-13 * n)
                assert np.array_equal(a, kept)
            for lj in _layouts(L + junk):
                for rhs in _layouts(B) + (B[:, 0], B[:, :1]):
                    for trans in "NT":
                        np.testing.assert_allclose(
                            _linalg.solve_lower(lj, rhs, trans=trans == "T"),
                            solve_triangular(L, rhs, lower=True, trans=trans),
                            rtol=1e-12, atol=1e-13)
                    np.testing.assert_allclose(_linalg.cho_solve(lj, rhs),
                                               cho_solve((L, True), rhs),
                                               rtol=1e-12, atol=1e-13)
            F = np.asfortranarray(B)
            assert _linalg.cho_solve(L, F, overwrite_b=True) is F
            assert _linalg.solve_lower(L, F, overwrite_b=True, trans=True) is F


def test_planned_cholesky_and_solves_refuse_what_scipys_refuse():
    from gpc import _linalg

    indefinite = _spd(200)
    indefinite[150, 150] = -1.0
    singular = np.diag([1.0] * 3 + [0.0] * 197)
    for limit in (None, 1):
        with gpc.thread_limit(limit) if limit else contextlib.nullcontext():
            for A, order in ((-np.eye(3), 1), (indefinite, 151)):
                with pytest.raises(np.linalg.LinAlgError, match=f"order {order} is"):
                    _linalg.lower_cholesky(A)
            for solve in (lambda L, B: _linalg.solve_lower(L, B, trans=True),
                          _linalg.cho_solve):
                for rhs in (np.ones(200), np.ones((200, 3))):
                    with pytest.raises(np.linalg.LinAlgError, match=r"L\[3, 3\] is 0"):
                        solve(singular, rhs)
                with pytest.raises(ValueError, match="do not align"):
                    solve(np.eye(3), np.ones(4))
    with pytest.raises(ValueError, match="square"):
        _linalg.lower_cholesky(np.ones((2, 3)))

def _blas_thread_counts():
    """(library, thread count) of every BLAS library threadpoolctl sees."""
    from threadpoolctl import threadpool_info

    return tuple(sorted((i["filepath"], i["num_threads"]) for i in threadpool_info()
                        if i["user_api"] == "blas"))


def _blas_threads_seen_during(work):
    """The BLAS thread counts that threadpoolctl reports in a second thread
    while ``work`` runs in this one (read over and over), and after it."""
    counts = _blas_thread_counts
    seen, done = set(), threading.Event()

    def watch():
        while not done.is_set():
            seen.add(counts())

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        work()
    finally:
        done.set()
        watcher.join()
    seen.add(counts())
    return seen


def test_no_gpc_call_changes_the_blas_threads_other_threads_see():
    from gpc import mcmc

    before = {_blas_thread_counts()}
    if all(count == 1 for _, count in next(iter(before))):
        pytest.skip("BLAS runs one thread here: a change to one would not show")
    X, y = _data(0, n=300)
    K = RBF(1.0)(X)
    calls = {
        "online sparse GP": lambda: gpc.SparseGPClassifier(
            RBF(1.0), method="adf", max_basis=150, optimizer=None).fit(X, y),
        "sparse EP": lambda: gpc.SparseGPClassifier(
            RBF(1.0), method="ep", max_basis=150, optimizer=None).fit(X, y),
        "elliptical slice": lambda: mcmc.elliptical_slice(
            K, 2 * y - 1, n_samples=20, n_chains=4, random_state=0),
        "ais": lambda: mcmc.ais(K, 2 * y - 1, n_chains=4, n_temperatures=20,
                                random_state=0),
        "dense EP fit": lambda: gpc.GaussianProcessClassifier(
            RBF(1.0), method="ep", optimizer=None).fit(X, y),
    }
    for name, call in calls.items():
        assert _blas_threads_seen_during(call) == before, name


def test_tiled_right_solve_is_lapacks():
    from scipy.linalg import solve_triangular

    from gpc import _checks

    rng = np.random.RandomState(4)
    for m, n in ((1, 5), (3, 300), (70, 200), (130, 400)):
        L = np.asfortranarray(np.linalg.cholesky(_spd(m, seed=m)))
        B = np.asfortranarray(rng.randn(n, m))
        ref = solve_triangular(L, B.T, lower=True).T            # B L^{-T}
        assert _checks._solve_right_tiled(L, B) == 0
        np.testing.assert_allclose(B, ref, rtol=0, atol=1e-12 * np.abs(ref).max())


def _busy_route_available():
    from gpc import _threads

    if _threads.limits()[1] == 1:
        pytest.skip("one BLAS thread: LAPACK's route is the calling thread's")


def test_a_thread_limit_below_the_blas_threads_takes_the_tiled_route():
    from gpc import _checks

    _busy_route_available()
    A = _spd(300)
    planned = np.empty((300, 300), order="F")
    with gpc.thread_limit(1):
        assert _checks.factorises(A, 0.0, planned)
    tiled = A.copy(order="F")
    _checks._tiled("cholesky", tiled, 1)
    assert np.array_equal(np.tril(planned), np.tril(tiled))


@pytest.mark.parametrize("method, options, lik", [
    ("laplace", {}, "logit"), ("ep", {"updates": "parallel"}, "probit"),
    ("ep", {"updates": "sequential"}, "probit"), ("vb", {}, "logit")])
def test_the_busy_route_gives_the_idle_routes_answer(method, options, lik):
    # Under a thread limit below the BLAS thread count every large call takes
    # gpc's tiled route (what a busy machine gets); with one BLAS thread, LAPACK's
    # (what an idle one gets).  The same inference to rounding.
    from threadpoolctl import threadpool_limits

    _busy_route_available()
    rng = np.random.RandomState(0)
    n = 300
    X = rng.randn(n, 20)
    kernel = gpc.kernels.SquaredExponential(length_scale=np.full(20, 4.0), variance=2.0)
    y = np.sign(X[:, 0] + 0.3 * rng.randn(n))
    results = []
    for limit in (lambda: threadpool_limits(1), lambda: gpc.thread_limit(1)):
        with limit():
            K = kernel(X)
            results.append((K, gpc.infer(K, y, method=method, likelihood=lik,
                                         **options)))
    (K, idle), (Kb, busy) = results
    np.testing.assert_allclose(Kb, K, rtol=0, atol=1e-14)
    np.testing.assert_allclose(busy.log_evidence, idle.log_evidence, rtol=1e-10)
    # vb's bound is maximised iteratively: rounding moves where it stops, within
    # its tolerance (measured: 1.6e-8 of max |dK|).
    atol = (1e-6 if method == "vb" else 1e-9) * np.abs(idle.dK).max()
    np.testing.assert_allclose(busy.dK, idle.dK, rtol=0, atol=atol)


@pytest.mark.parametrize("method", ["laplace", "ep"])
def test_the_tiled_route_gives_the_same_bits_on_one_and_two_threads(method):
    # The benchmarks' hook pins the tiled route on k threads whatever the load;
    # each tile is the same calls on any thread, so a whole fit is the same bits
    # on one and on two threads, and on one it is the busy route of a thread
    # limit of one.
    from gpc._threads import _tiles, limits

    X, y = _data(0, n=300)

    def fit(route):
        with route:
            est = GaussianProcessClassifier(C(1.0) * RBF(1.0), method=method,
                                            optimizer=None).fit(X, y)
        return [est.predict_proba(X[:20]), np.array(est.log_marginal_likelihood_value_)]

    one = fit(_tiles(1))
    _assert_identical(fit(_tiles(2)), one)
    if limits()[1] != 1:            # else a limit of one takes LAPACK's route
        _assert_identical(fit(gpc.thread_limit(1)), one)


@pytest.mark.parametrize("method", ["laplace", "ep"])
def test_concurrent_fits_on_the_busy_route_are_bit_identical(method):
    # Two fits at n = 300 through gpc's tiled routines (a busy machine's route,
    # pinned by the limit): the same bits as one after the other.
    _busy_route_available()
    X, y = _data(0, n=300)

    def fit(seed):
        with gpc.thread_limit(1):
            est = GaussianProcessClassifier(C(1.0) * RBF(1.0), method=method,
                                            random_state=seed).fit(X[seed:], y[seed:])
        return [est.predict_proba(X[:20]), np.array(est.log_marginal_likelihood_value_),
                est.kernel_.theta]

    serial = [fit(seed) for seed in (0, 1)]
    with ThreadPoolExecutor(2) as pool:
        threaded = list(pool.map(fit, (0, 1)))
    for a, b in zip(serial, threaded):
        _assert_identical(a, b)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc")
def test_tiled_routines_on_one_thread_wake_no_other():
    # What gpc runs on a busy machine: neither OpenBLAS's workers nor its own.
    from scipy.linalg import lapack

    from gpc import _checks, _linalg

    A = _spd(300)
    L = np.asfortranarray(np.linalg.cholesky(A))
    if _ticks_during(lambda: lapack.dpotri(L, lower=1)) == 0:
        pytest.skip("BLAS runs one thread here: no workers to wake")
    for op in ("cholesky", "inverse", "gram"):
        B = A if op == "cholesky" else L
        assert _ticks_during(lambda: _checks._tiled(op, B.copy(order="F"), 1)) == 0
        with gpc.thread_limit(1):
            assert _ticks_during(lambda: _checks._tiled(op, B.copy(order="F"))) == 0
    x = np.ones(3000)
    big = np.asfortranarray(np.eye(3000))
    for op in ("symv", "trmv", "trmv_t"):
        assert _ticks_during(lambda: _checks._blas2(op, big, x)) == 0
    # gpc._linalg's factor and solves, and a vector's solve on any route (dtrsv)
    B = np.ones((300, 20))
    with gpc.thread_limit(1):
        for work in (lambda: _linalg.lower_cholesky(A), lambda: _linalg.cho_solve(L, B),
                     lambda: _linalg.solve_lower(L, B, trans=True)):
            assert _ticks_during(work) == 0
    assert _ticks_during(lambda: _linalg.cho_solve(big, x)) == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_tiled_cholesky_runs_in_a_child_forked_after_it_ran():
    # A child forked after gpc's threads ran has none of them; the pool starts
    # again there (GNU OpenMP's would hang).
    from gpc import _checks

    A = _spd(400)
    parent = A.copy(order="F")
    _checks._tiled("cholesky", parent, 2)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                      # the child
        child = A.copy(order="F")
        ok = _checks._tiled("cholesky", child, 2) == 0 and np.array_equal(child, parent)
        os.write(w, b"1" if ok else b"0")
        os._exit(0)
    os.close(w)
    done = [False]

    def reap():
        os.waitpid(pid, 0)
        done[0] = True

    waiter = threading.Thread(target=reap, daemon=True)
    waiter.start()
    waiter.join(30)
    if not done[0]:
        os.kill(pid, 9)
        pytest.fail("the forked child hung")
    assert os.read(r, 1) == b"1"


def test_thread_limit_is_per_thread_and_validated():
    from gpc import _threads

    seen = {}
    with gpc.thread_limit(1):
        other = threading.Thread(target=lambda: seen.setdefault("other",
                                                                _threads.limits()[0]))
        other.start()
        other.join()
        inside = _threads.limits()[0]
        with gpc.thread_limit(3):
            assert _threads.limits()[0] == 3
        assert _threads.limits()[0] == 1
    assert (inside, seen["other"], _threads.limits()[0]) == (1, 0, 0)
    for bad, err in ((0, ValueError), (1.5, TypeError), (True, TypeError)):
        with pytest.raises(err):
            with gpc.thread_limit(bad):
                pass


def test_deepcopy_of_a_fitted_estimator_is_independent():
    est, X = _fit("ep-parallel")
    twin = copy.deepcopy(est)
    Xq = np.random.RandomState(9).randn(25, 2)
    before = _outputs(est, Xq)
    twin.fit(*_data(3))
    _assert_identical(_outputs(est, Xq), before)
