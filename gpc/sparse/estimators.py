"""The sparse estimators: :class:`~gpc.SparseGPClassifier` and
:class:`~gpc.SparseGPRegressor` (see :mod:`gpc.sparse`)."""

import copy
import time
import warnings
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.multiclass import OneVsRestClassifier
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.multiclass import check_classification_targets
from sklearn.cluster import kmeans_plusplus
from sklearn.utils import check_array, check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .._linalg import solve_lower
from .._validation import check_integer, check_real
from .._binary import classes_from_proba, kernel_at_bounds, warn_if_all_tied
from ..inference import check_kernel_psd
from ..kernels import as_kernel, contract, cross_covariance_chunks
from ..likelihoods import get_likelihood
from ..optimize import maximize_evidence, median_distance
from ._chunked import ChunkedData
from ._dask import as_float, dask_data, is_dask, label_values
from .learning import SparseEvidence, maximize_sparse_evidence
from .online import (SparseState, _noise_moments, _refresh_factor, _store_full,
                     bv_prior_em, ep_sweeps, online_pass)


# How many times the online sparse GP's EM goes halfway back from an M-step
# that lowered the log evidence before it stops.
_EM_HALVINGS = 3


class _EMModel(NamedTuple):
    """An E-step of the online sparse GP's EM and the model it was run at."""
    kernel: object
    likelihood: object
    state: object
    info: dict
    ep: dict


class _EMProgress(NamedTuple):
    """Every E-step's log evidence (``history``), printed when verbose."""
    n_em: int
    history: list
    t0: float
    verbose: int

    def record(self, it, model):
        self.history.append(float(model.info["log_evidence"]))
        if self.verbose:
            print(f"[gpc sparse] EM {it}/{self.n_em}: log evidence "
                  f"{self.history[-1]:.6g}, {model.state.d} basis vectors, "
                  f"{time.perf_counter() - self.t0:.1f} s", flush=True)


def _halfway(model, proposal):
    """The (kernel, likelihood) halfway between two: the kernels' log
    hyperparameters and the likelihoods' parameters averaged."""
    (k0, l0), (k1, l1) = model, proposal
    kernel = k1.clone_with_theta(0.5 * (k0.theta + k1.theta)) if k1.n_dims else k1
    lik = l1.with_params(0.5 * (l0.params + l1.params)) if len(l1.params) else l1
    return kernel, lik


def _learnable_likelihood(likelihood):
    bounds = np.asarray(likelihood.param_bounds, dtype=np.float64).reshape(-1, 2)
    return bool(len(bounds)) and bool(np.any(bounds[:, 0] < bounds[:, 1]))


def _kmeans_centres(M, seed, *parts):
    """M rows of the data chosen by k-means++, run on the data divided by a
    power of two near its largest magnitude: the same choice (k-means++ does not
    see a common scale, and the division is exact), but squared distances that
    do not overflow, as those of inputs beyond about 1e154 do."""
    X = np.concatenate(parts)
    if X.shape[0] <= M:
        return X
    top = float(np.max(np.abs(X)))
    scale = 2.0 ** np.frexp(top)[1] if np.isfinite(top) and top > 0 else 1.0
    return X[kmeans_plusplus(X / scale, M, random_state=seed)[1]]


def _warn_if_unfinished(opt):
    """Warn when the sparse model's evidence maximisation (its ``info``) was
    interrupted or ended above its gradient tolerance."""
    if opt["interrupted"]:
        rows = opt.get("result_rows")
        on = "" if rows is None else (f": their EP fit (site changes below "
                                      f"1e-4) on {rows} rows of the data")
        warnings.warn("sparse GP: fit interrupted; the model is fitted with "
                      f"the best hyperparameters evaluated so far{on}.",
                      RuntimeWarning, stacklevel=4)
    elif opt.get("stationary") is False:
        warnings.warn(
            "sparse GP: evidence maximisation stopped where the projected gradient "
            f"of the log evidence per example is {opt['projected_gradient']:.2g} "
            f"(tolerance {opt['gtol']:g}), not at a stationary point: L-BFGS-B "
            "could not improve the evidence further from there.",
            ConvergenceWarning, stacklevel=4)


def _median_distance_of(*parts):
    return median_distance(np.concatenate(parts))


class _SparseGP(BaseEstimator):
    """The estimator machinery shared by :class:`SparseGPClassifier` and
    :class:`SparseGPRegressor` (see :mod:`gpc.sparse`)."""

    _classification = None

    def __init__(self, kernel=None, *, likelihood=None, method="ep", max_basis=100,
                 inducing_points=None, learn_inducing_points=False, jitter=1e-6,
                 novelty_tol=1e-4, n_sweeps=1, damping=1.0, tol=1e-6,
                 optimizer="fmin_l_bfgs_b", n_em=10, chunk_size=512,
                 random_state=None, verbose=0):
        self.kernel = kernel
        self.likelihood = likelihood
        self.method = method
        self.max_basis = max_basis
        self.inducing_points = inducing_points
        self.learn_inducing_points = learn_inducing_points
        self.jitter = jitter
        self.random_state = random_state
        self.novelty_tol = novelty_tol
        self.n_sweeps = n_sweeps
        self.damping = damping
        self.tol = tol
        self.optimizer = optimizer
        self.n_em = n_em
        self.chunk_size = chunk_size
        self.verbose = verbose

    # -- validation ---------------------------------------------------------------
    def _check_params(self):
        for name, low in (("max_basis", 1), ("n_sweeps", 1), ("n_em", 0),
                          ("chunk_size", 1)):
            check_integer(getattr(self, name), name, low)
        if self.method not in ("ep", "online"):
            raise ValueError(f"method must be 'ep' or 'online', got {self.method!r}.")
        check_real(self.jitter, "jitter", 0.0)
        # The novelty of an example, the variance of f(x) that the BV set leaves
        # unexplained, is at most k(x, x): at 1 or more none would join the set.
        check_real(self.novelty_tol, "novelty_tol", 0.0, 1.0, high_open=True)
        check_real(self.damping, "damping", 0.0, 1.0, low_open=True)
        check_real(self.tol, "tol", 0.0, low_open=True)
        if self.optimizer not in (None, "fmin_l_bfgs_b"):
            raise ValueError("optimizer must be 'fmin_l_bfgs_b' or None, got "
                             f"{self.optimizer!r}.")
        if self.learn_inducing_points not in (True, False):
            raise ValueError("learn_inducing_points must be True or False, got "
                             f"{self.learn_inducing_points!r}.")
        if self.learn_inducing_points and (self.method != "ep" or self.optimizer is None):
            raise ValueError("learn_inducing_points=True needs method='ep' and an "
                             "optimizer: the inducing inputs are learnt with the "
                             "hyperparameters by maximising the EP evidence.")
        kernel = (C(1.0, "fixed") * RBF(1.0, "fixed") if self.kernel is None
                  else clone(as_kernel(self.kernel)))
        likelihood = get_likelihood(self._default_likelihood if self.likelihood is None
                                    else self.likelihood)
        if likelihood.is_classification != self._classification:
            kind = "classification" if self._classification else "regression"
            raise ValueError(f"{type(self).__name__} needs a {kind} likelihood, got "
                             f"{likelihood.name!r}.")
        return kernel, likelihood

    # -- inference ----------------------------------------------------------------
    def _e_step(self, kernel, likelihood, X, y):
        """Online pass, then EP sweeps; returns (state, info)."""
        n = X.shape[0]
        state = SparseState(self.max_basis, X.shape[1])
        tau, nu = np.zeros(n), np.zeros(n)
        info = online_pass(kernel, likelihood, X, y, state, self.novelty_tol,
                           self.chunk_size, sites=(tau, nu), verbose=self.verbose)
        info["online_log_evidence"] = info["log_evidence"]
        ep = ep_sweeps(kernel, likelihood, X, y, state, tau, nu, self.n_sweeps - 1,
                       self.damping, self.tol, self.chunk_size, self.verbose)
        if self.n_sweeps > 1 and not np.isfinite(ep["log_evidence"]):
            warnings.warn("sparse GP: the EP sites define an improper posterior; the "
                          "evidence reported is the online pass's.", RuntimeWarning,
                          stacklevel=3)
        elif self.n_sweeps > 1:
            info["log_evidence"] = ep["log_evidence"]
            if not ep["converged"]:
                warnings.warn(f"sparse GP: EP did not converge in {self.n_sweeps - 1} "
                              f"sweeps (largest site change {ep['max_change']:.2e}, "
                              f"tol {self.tol:g}; {ep['n_skipped']} updates skipped in "
                              "the last).", ConvergenceWarning, stacklevel=3)
        info.update(ep_log_evidence=ep["log_evidence"], n_ep_sweeps=ep["n_sweeps"],
                    ep_converged=ep["converged"], n_skipped=ep["n_skipped"])
        return state, info, ep

    def _m_step(self, kernel, likelihood, state, y, ep, learn_kernel, learn_lik):
        if learn_lik and np.all(np.isfinite(ep["cavity_var"])):
            likelihood = likelihood.em_update(y, ep["cavity_mean"], ep["cavity_var"])
        if learn_kernel and state.d:
            bv_X = state.X
            alpha, C_ = state.weights()
            K0 = np.asarray(kernel(bv_X), dtype=np.float64)
            mu = K0 @ alpha
            S = K0 + K0 @ C_ @ K0 + np.outer(mu, mu)       # Sigma + mu mu'
            work = kernel.clone_with_theta(kernel.theta)

            def objective(theta):
                work.theta = theta
                K_bv = np.asarray(work(bv_X), dtype=np.float64)
                value, dK = bv_prior_em(K_bv, S)
                return value, contract(work, bv_X, dK, K=K_bv)

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                opt = maximize_evidence(objective, kernel.theta, kernel.bounds)
            kernel = kernel.clone_with_theta(opt.theta)
        return kernel, likelihood

    def _fit(self, X, y):
        self._check_params()[1].check_targets(y)
        if self.method == "online":
            return self._fit_online(X, y)
        return self._fit_ep(X, y)

    def _inducing_inputs(self, data):
        """The given inducing inputs, or the k-means++ centres of a random subset of
        at most about max(20 max_basis, 10^4) rows (all the rows when there are at
        most max_basis), computed where the data live: only the centres come
        back."""
        if self.inducing_points is not None:
            Z = check_array(self.inducing_points, dtype=np.float64)
            if Z.shape[1] != self.n_features_in_:
                raise ValueError(f"inducing_points has {Z.shape[1]} features; X has "
                                 f"{self.n_features_in_}.")
            return Z
        M = self.max_basis
        sample = data.subset(min(1.0, max(20 * M, 10000) / data.n))
        seed = check_random_state(self.random_state).randint(2 ** 31 - 1)
        ex = data.executor
        return ex.gather([ex.submit(_kmeans_centres, M, seed, *sample.X)])[0]

    @staticmethod
    def _median_distance(data):
        """The median distance between rows of a random subset of about 1000
        rows (:func:`gpc.optimize.median_distance`), computed where the data
        live."""
        sample = data.subset(min(1.0, 1000 / data.n))
        ex = data.executor
        return ex.gather([ex.submit(_median_distance_of, *sample.X)])[0]

    def _fit_dask(self, X, y):
        """Fit on Dask data (NumPy on one side is cut as the other): the chunks
        stay on the workers of the current ``distributed`` client, where they are
        checked as the in-memory fit checks its arrays."""
        if self.method != "ep":
            raise ValueError("Dask arrays are fitted with method='ep' only.")
        data, n_features, columns = dask_data(
            X, y, self._dask_encoder, self._check_params()[1], type(self).__name__,
            self.random_state)
        self.n_features_in_ = n_features
        self.__dict__.pop("feature_names_in_", None)
        if columns is not None and all(isinstance(c, str) for c in columns):
            self.feature_names_in_ = np.asarray(columns, dtype=object)
        return self._fit_ep(data, None)

    def _dask_encoder(self, y):
        """The map of a block of Dask targets ``y`` to the model's (float64 here;
        the classifier's maps two classes to -1, +1)."""
        return as_float

    def _fit_ep(self, X, y):
        """Sparse EP on inducing inputs; hyperparameters by staged L-BFGS-B on its
        evidence (:func:`gpc.sparse.learning.maximize_sparse_evidence`).  ``X`` is an
        array, or a ``gpc.sparse._chunked.ChunkedData`` (then ``y`` is None)."""
        kernel, likelihood = self._check_params()
        data = X if isinstance(X, ChunkedData) else ChunkedData.from_arrays(
            X, y, max(self.chunk_size, 2048), self.random_state)
        Z = self._inducing_inputs(data)
        check_kernel_psd(kernel, Z)         # K(Z, Z) must factorise
        learn = self.optimizer is not None
        learn_lik = learn and _learnable_likelihood(likelihood)
        learning = dict(learn_likelihood=learn_lik,
                        learn_inducing=self.learn_inducing_points)
        options = dict(jitter=self.jitter, tol=self.tol, damping=self.damping)
        theta, res, opt = None, None, {"interrupted": False, "history": [[]]}
        if learn and (kernel.n_dims > 0 or learn_lik or self.learn_inducing_points):
            theta, res, opt = maximize_sparse_evidence(
                kernel, likelihood, data, Z, distance=self._median_distance(data),
                verbose=self.verbose, **learning, **options)
        final = SparseEvidence(kernel, likelihood, data, None, Z, **learning,
                               verbose=self.verbose, **options)
        learnt = theta is not None
        theta = final.theta if theta is None else theta
        kernel, likelihood = final.model(theta)
        Z = final.inducing_inputs(theta)
        if learnt and kernel.n_dims:
            kernel._check_bounds_params()        # scikit-learn's warning at a bound
        if res is None or (res.info["max_change"] >= self.tol
                           and not opt["interrupted"]):
            # EP at theta to tol: from the optimum's sites (the stages stop EP at
            # 1e-4), or afresh when nothing was learnt.  Interrupted, the fit
            # keeps its last good state as it is: a pass over all the data can
            # take many seconds.
            final.sites = None if res is None else res.sites
            try:
                res = final.run(theta, compute_gradient=False)
            except KeyboardInterrupt:
                if res is None:
                    raise
                opt["interrupted"] = True
        _warn_if_unfinished(opt)
        if not res.info["converged"]:
            warnings.warn(f"sparse GP: EP did not converge (largest site change "
                          f"{res.info['max_change']:.2e}, tol {self.tol:g}).",
                          ConvergenceWarning, stacklevel=3)
        state = SparseState(Z.shape[0], Z.shape[1])
        state.X = Z.copy()
        state.alpha[:Z.shape[0]] = res.alpha
        _store_full(state.C, res.C)
        _refresh_factor(kernel, state)
        state.n_seen, state.log_evidence = data.n, res.log_evidence
        info = dict(res.info, log_evidence=res.log_evidence, stages=opt.get("stages"),
                    n_evaluations=opt.get("n_evaluations", 0),
                    projected_gradient=opt.get("projected_gradient"),
                    stationary=opt.get("stationary"),
                    interrupted=opt["interrupted"])
        self._set_fitted(kernel, likelihood, state, info, opt["history"][-1],
                         res.factors)
        return self

    def _fit_online(self, X, y):
        """The online sparse GP; with ``optimizer``, EM whose M-steps are taken
        only where they raise the log evidence (see ``_em_step``)."""
        kernel, likelihood = self._check_params()
        check_kernel_psd(kernel, X[:self.max_basis])
        learn = self.optimizer is not None
        learn_kernel = learn and kernel.n_dims > 0
        learn_lik = learn and _learnable_likelihood(likelihood)
        n_em = self.n_em if (learn_kernel or learn_lik) else 0
        progress = _EMProgress(n_em, [], time.perf_counter(), self.verbose)
        model = _EMModel(kernel, likelihood, *self._e_step(kernel, likelihood, X, y))
        progress.record(0, model)
        n_taken = 0
        for it in range(1, n_em + 1):
            proposal = self._m_step(kernel=model.kernel, likelihood=model.likelihood,
                                    state=model.state, y=y, ep=model.ep,
                                    learn_kernel=learn_kernel, learn_lik=learn_lik)
            better = self._em_step(model, proposal, X, y, it, progress)
            if better is None:
                break
            model, n_taken = better, it
        self._set_fitted(model.kernel, model.likelihood, model.state,
                         dict(model.info, n_em=n_taken), progress.history)
        return self

    def _em_step(self, model, proposal, X, y, it, progress):
        """The E-step at the M-step's ``proposal`` (kernel, likelihood), or at
        points halfway back towards ``model``'s hyperparameters while the log
        evidence is not higher (``_EM_HALVINGS`` times at most): the first model
        that is higher, else None: EM has converged as far as its M-step can
        take it, and a warning says so when not one step was taken.  Csato's
        M-step maximises the basis vectors' expected log prior, not the
        evidence; with few basis vectors it can lower the evidence at every
        step."""
        start = model.info["log_evidence"]
        for _ in range(_EM_HALVINGS + 1):
            trial = _EMModel(*proposal, *self._e_step(*proposal, X, y))
            progress.record(it, trial)
            if trial.info["log_evidence"] > start:
                return trial
            proposal = _halfway((model.kernel, model.likelihood), proposal)
        if it == 1:
            warnings.warn(
                "sparse GP: EM learnt nothing: its first M-step, and "
                f"{_EM_HALVINGS} steps back towards the start, lowered the log "
                f"evidence {start:.6g}, so the model keeps the starting "
                "hyperparameters. With more basis vectors (max_basis) the M-step "
                "follows the evidence more closely; method='ep' maximises the "
                "evidence itself.", ConvergenceWarning, stacklevel=4)
        return None

    def _set_fitted(self, kernel, likelihood, state, info, history, factors=None):
        self._factors = factors
        self.kernel_ = kernel
        self.likelihood_ = likelihood
        self._state = state
        self.basis_vectors_ = state.X.copy()
        alpha, C_ = state.weights()
        self.alpha_ = alpha
        self.C_ = C_
        self.n_basis_ = state.d
        self.log_marginal_likelihood_value_ = float(info["log_evidence"])
        self.evidence_history_ = history
        self.inference_info_ = info

    _FITTED = ("kernel_", "likelihood_", "_state", "_factors", "basis_vectors_",
               "alpha_", "C_",
               "n_basis_", "log_marginal_likelihood_value_", "evidence_history_",
               "inference_info_", "classes_", "one_vs_rest_", "n_features_in_",
               "feature_names_in_")

    @contextmanager
    def _atomic(self):
        """Restore the fitted attributes when the body fails (fit and partial_fit
        set them only at their end, but validate_data sets n_features_in_ first)."""
        saved = {k: self.__dict__[k] for k in self._FITTED if k in self.__dict__}
        try:
            yield
        except BaseException:
            for k in self._FITTED:
                self.__dict__.pop(k, None)
            self.__dict__.update(saved)
            raise

    def _partial_fit(self, X, y):
        fitted = hasattr(self, "_state")
        if fitted:
            kernel, likelihood = self.kernel_, self.likelihood_
            state = self._state.copy()
            history = self.evidence_history_
        else:
            kernel, likelihood = self._check_params()
            check_kernel_psd(kernel, X[:self.max_basis])
            state = SparseState(self.max_basis, X.shape[1])
            history = []
        likelihood.check_targets(y)
        online_pass(kernel, likelihood, X, y, state, self.novelty_tol, self.chunk_size,
                    verbose=self.verbose)
        info = {"log_evidence": state.log_evidence, "n_seen": state.n_seen}
        self._set_fitted(kernel, likelihood, state, info, history)
        return self

    # -- prediction ---------------------------------------------------------------
    def latent_mean_and_variance(self, X):
        """Mean and variance of the latent function at X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        mean, var : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        mean = np.empty(X.shape[0])
        var = np.empty(X.shape[0])
        for start, Kbx, kdiag in cross_covariance_chunks(
                self.kernel_, self.basis_vectors_, X, self.chunk_size):
            sl = slice(start, start + Kbx.shape[1])
            mean[sl] = Kbx.T @ self.alpha_
            if self._factors is None:
                var[sl] = kdiag + np.einsum("ij,ij->j", Kbx, self.C_ @ Kbx)
            else:   # k** - |L_K^{-1} k|^2 + |L_S^{-1} L_K^{-1} k|^2: no cancellation in C_
                W = solve_lower(self._factors[0], Kbx)
                V = solve_lower(self._factors[1], W)
                var[sl] = (kdiag - np.einsum("ij,ij->j", W, W)
                           + np.einsum("ij,ij->j", V, V))
        return mean, np.maximum(var, 0.0)


class SparseGPClassifier(ClassifierMixin, _SparseGP):
    """Binary GP classification on inducing inputs, for data sets of any size.

    The posterior lives on ``max_basis`` inducing inputs (basis vectors): memory
    is O(n_features n + max_basis^2) and a pass over the data O(n max_basis^2),
    so it takes data sets and streams that O(n^3) methods cannot.

    Two methods share the model ``f(x) | f(Z) ~ N(p(x)' f(Z), g(x))``:

    * ``method="ep"`` (default): inducing inputs chosen by k-means++ (or given),
      expectation propagation over all the data in block-sequential sweeps
      (:mod:`gpc.sparse.ep`), and the hyperparameters by maximising its log
      evidence with L-BFGS-B and its exact gradient, in stages on growing random
      subsets that end on the whole data, the last stopping where the
      projected gradient of the log evidence is at most 1e-3 per example
      (``gpc.optimize.TOL_PER_EXAMPLE``; the subsets' to a tenth of that; a
      ConvergenceWarning says when the last stage could not get there).  The
      first stage starts from the kernel's hyperparameters or from length
      scales at the inputs' median distance, whichever has the higher
      evidence, and moves the length scales of an ARD kernel together before
      it frees them (as :func:`gpc.maximize_evidence` does).  This is the way
      to learn hyperparameters.
    * ``method="online"``: the sparse online GP of Csato & Opper (2002), one
      pass that chooses the basis vectors as it goes, optional EP sweeps, and
      EM for the hyperparameters (see :mod:`gpc.sparse`).  :meth:`partial_fit`
      always uses the online pass.

    Parameters
    ----------
    kernel : kernel instance, default=None
        Any scikit-learn or :mod:`gpc.kernels` kernel; None means ``1.0 * RBF(1.0)``
        with both hyperparameters fixed.
    likelihood : str or Likelihood, default=None
        None means "probit"; "probit", "logit" or "step" (noise-free labels; the
        MAP/Laplace approach fails for it, moment matching does not).
    method : {"ep", "online"}, default="ep"
        How the posterior and the hyperparameters are found (see above).
    max_basis : int, default=100
        The number of inducing inputs (``"ep"``), or the capacity of the
        basis-vector set (``"online"``).
    inducing_points : array-like of shape (n_inducing, n_features), default=None
        Inducing inputs for ``"ep"``; None picks ``max_basis`` of them by
        k-means++ on a random subset of at most ``max(20 max_basis, 10^4)`` rows
        (all the rows when there are at most ``max_basis``).
    learn_inducing_points : bool, default=False
        ``"ep"`` with an optimizer: the inducing inputs are learnt with the
        hyperparameters (the evidence's gradient in them is exact), starting
        from ``inducing_points`` or the k-means++ centres; ``basis_vectors_``
        holds the learnt ones.  They add ``max_basis * n_features`` parameters
        to the optimisation.  Needs a squared exponential or Matern kernel
        (with constants, white noise, sums, products, powers).
    jitter : float, default=1e-6
        ``"ep"``: the diagonal of ``K(Z, Z)`` is multiplied by ``1 + jitter``
        (part of the model, so the evidence stays smooth).
    novelty_tol : float in [0, 1), default=1e-4
        ``"online"`` and :meth:`partial_fit`: an example joins the BV set when the
        variance of f(x) left unexplained by the BV set exceeds
        ``novelty_tol * k(x, x)``; otherwise its update is projected.  That
        variance is at most ``k(x, x)``, so at 1 or more no example would join.
    n_sweeps : int, default=1
        ``"online"``: 1 is one online pass; more add up to ``n_sweeps - 1`` EP
        sweeps with the BV set fixed.
    damping : float in (0, 1], default=1.0
        Damping of the EP site updates (``"ep"``: the initial one; it is halved
        when a pass's largest site change grows).
    tol : float, default=1e-6
        Convergence tolerance of EP (largest site change).
    optimizer : "fmin_l_bfgs_b" or None, default="fmin_l_bfgs_b"
        With it, the kernel's free hyperparameters and the likelihood's free
        parameters are learnt (``"ep"``: maximum evidence; ``"online"``: EM);
        None keeps them.
    n_em : int, default=10
        ``"online"``: EM iterations (each E-step is a fresh online pass plus the
        EP sweeps).  An M-step that lowers the log evidence is cut back halfway
        towards the previous hyperparameters, up to three times; when none of
        those raises it, EM stops there (with a warning if it took no step).
    chunk_size : int, default=512
        Examples per block of kernel evaluations (``"ep"`` uses at least 2048).
    random_state : int, RandomState or None, default=None
        Seeds the choice of inducing inputs and the subsets of the stages.
    verbose : int, default=0
        Progress when > 0: ``"ep"`` prints one line per evidence evaluation (log
        evidence, gradient norm, elapsed time; with 2, one per EP sweep too) and
        one per sweep of the final EP on all the data, ``"online"`` the passes,
        sweeps and EM iterations.
    n_jobs : int, default=None
        Parallel jobs (joblib) for the one-vs-rest classes of a multi-class
        problem; None means 1 unless in a ``joblib.parallel_config`` context.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    one_vs_rest_ : OneVsRestClassifier or None
        For more than two classes, the one-vs-rest wrapper of one sparse GP per
        class (the attributes below are then on its ``estimators_``).
    kernel_, likelihood_ : the fitted kernel and likelihood
    basis_vectors_ : ndarray of shape (n_basis, n_features)
    alpha_ : ndarray of shape (n_basis,)
    C_ : ndarray of shape (n_basis, n_basis)
        The posterior: mean ``k(x)' alpha_``, covariance
        ``K(x, x') + k(x)' C_ k(x')``, ``k(x) = K(basis_vectors_, x)``.
    n_basis_ : int
    log_marginal_likelihood_value_ : float
        EP log evidence (``"online"`` with ``n_sweeps = 1``: the online pass's sum
        of log predictive probabilities).
    evidence_history_ : list of float
        ``"ep"``: the log evidence of every optimiser evaluation on the whole
        data; ``"online"``: that of every E-step, the cut-back ones included
        (the fitted model is the last that raised it; ``inference_info_``'s
        ``n_em`` counts the EM steps taken).
    inference_info_ : dict
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from gpc import SparseGPClassifier
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(2000, 2)
    >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
    >>> clf = SparseGPClassifier(1.0 * RBF(1.0), max_basis=50, random_state=0)
    >>> clf = clf.fit(X, y)
    >>> clf.n_basis_
    50
    >>> bool(clf.score(X, y) > 0.9)
    True

    Notes
    -----
    Interrupting a long ``"ep"`` fit (Ctrl-C) keeps the best hyperparameters
    evaluated so far: the fit finishes with them and warns.
    """

    _classification = True
    _default_likelihood = "probit"

    def __init__(self, kernel=None, *, likelihood=None, method="ep", max_basis=100,
                 inducing_points=None, learn_inducing_points=False, jitter=1e-6,
                 novelty_tol=1e-4, n_sweeps=1, damping=1.0, tol=1e-6,
                 optimizer="fmin_l_bfgs_b", n_em=10, chunk_size=512,
                 random_state=None, verbose=0, n_jobs=None):
        super().__init__(kernel, likelihood=likelihood, method=method,
                         max_basis=max_basis, inducing_points=inducing_points,
                         learn_inducing_points=learn_inducing_points, jitter=jitter,
                         novelty_tol=novelty_tol, n_sweeps=n_sweeps,
                         damping=damping, tol=tol, optimizer=optimizer, n_em=n_em,
                         chunk_size=chunk_size, random_state=random_state,
                         verbose=verbose)
        self.n_jobs = n_jobs

    def _binary_or_ovr(self, classes):
        """Fit as it is (two classes) or through one-vs-rest (more)."""
        if classes.size < 2:
            raise ValueError(f"SparseGPClassifier needs 2 or more classes; got "
                             f"{classes.size} class ({classes}).")
        if classes.size == 2:
            return None
        return OneVsRestClassifier(clone(self), n_jobs=self.n_jobs)

    def _set_multiclass(self, ovr, classes):
        """Keep only the one-vs-rest wrapper's state (binary attributes dropped)."""
        for k in self._FITTED:
            if k not in ("n_features_in_", "feature_names_in_"):
                self.__dict__.pop(k, None)
        self.one_vs_rest_ = ovr
        self.classes_ = classes

    def fit(self, X, y):
        """Fit on (X, y) (nothing changes unless it succeeds).

        Two classes are one sparse GP; more are fitted one-vs-rest (one sparse GP
        per class, in ``one_vs_rest_``).

        Parameters
        ----------
        X : array-like, Dask array or Dask DataFrame of shape (n_samples, n_features)
            With Dask arrays (two classes, ``method="ep"``) the blocks are
            computed and kept by the workers of the current ``distributed``
            client, which check them (finite inputs, the targets the in-memory
            fit takes) and do the per-chunk work; only M x M statistics, the
            classes and the inducing inputs come to this process.  A Dask
            DataFrame's partitions are its blocks; blocks of no rows are
            skipped; unknown block sizes (after boolean indexing) are computed
            first, which runs the array's graph once more unless it is
            persisted.  With the same seed and fixed hyperparameters the model
            is the in-memory fit's (to EP's tolerance), however the data are
            cut into blocks.
        y : array-like, Dask array or Dask Series of shape (n_samples,)
            One of X and y may be in memory: it is cut into the other's blocks.

        Returns
        -------
        self

        Raises
        ------
        RuntimeError
            With Dask data, when a worker that held some of them left the
            cluster during the fit and distributed cannot recompute them: the
            fit must be rerun.
        """
        if is_dask(X) or is_dask(y):
            with self._atomic():
                return self._fit_dask(X, y)
        with self._atomic():
            X, y = validate_data(self, X, y, y_numeric=False)
            check_classification_targets(y)
            encoder = LabelEncoder().fit(y)
            classes = encoder.classes_
            ovr = self._binary_or_ovr(classes)
            if ovr is None:
                self._fit(X, 2.0 * encoder.transform(y) - 1.0)
            else:
                ovr.fit(X, y)
        if ovr is None:
            self.one_vs_rest_ = None
            self.classes_ = classes
        else:
            self._set_multiclass(ovr, classes)
        return self

    def _dask_encoder(self, y):
        """The map of a block of Dask labels ``y`` to -1, +1, from the two classes
        (the only values of y brought to the client; kept as ``classes_``)."""
        classes = np.unique(np.asarray(y.map_blocks(label_values).compute()))
        if classes.size != 2:
            raise ValueError(f"Dask arrays are fitted for two classes; y has "
                             f"{classes.size} ({classes}).")
        self.one_vs_rest_, self.classes_ = None, classes
        return lambda b: 2.0 * np.searchsorted(classes, b) - 1.0

    def partial_fit(self, X, y, classes=None):
        """Present more examples once each (online), hyperparameters kept.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like of shape (n_classes,), default=None
            All the classes of the stream; required on the first call.

        Returns
        -------
        self
        """
        first = not hasattr(self, "classes_")
        with self._atomic():
            X, y = validate_data(self, X, y, reset=first, y_numeric=False)
            if first:
                if classes is None:
                    raise ValueError("classes must be passed on the first call to "
                                     "partial_fit.")
                all_classes = np.unique(classes)
                ovr = self._binary_or_ovr(all_classes)
            else:
                all_classes, ovr = self.classes_, self.one_vs_rest_
                if ovr is not None:
                    # Updated class by class: a copy keeps a failure from leaving
                    # some classes updated.
                    ovr = copy.deepcopy(ovr)
                if classes is not None and not np.array_equal(np.unique(classes),
                                                              all_classes):
                    raise ValueError(f"classes {np.unique(classes)} differ from "
                                     f"{all_classes}.")
            unknown = np.setdiff1d(y, all_classes)
            if unknown.size:
                raise ValueError(f"y contains labels {unknown} outside the classes "
                                 f"{all_classes}.")
            if ovr is None:
                self._partial_fit(X, 2.0 * np.searchsorted(all_classes, y) - 1.0)
            else:
                ovr.partial_fit(X, y, classes=all_classes)
        if ovr is None:
            self.one_vs_rest_ = None
            self.classes_ = all_classes
        else:
            self._set_multiclass(ovr, all_classes)
        return self

    def predict_proba(self, X):
        """Class probabilities, columns in the order of ``classes_`` (one-vs-rest
        probabilities normalised for more than two classes).

        A :class:`UserWarning` says when every input gets tied class
        probabilities, as :meth:`gpc.GaussianProcessClassifier.predict_proba`
        does: the kernel gives them no covariance with the basis vectors
        (typically inputs not scaled).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        check_is_fitted(self, "classes_")
        if self.one_vs_rest_ is not None:
            return self.one_vs_rest_.predict_proba(validate_data(self, X, reset=False))
        mean, var = self.latent_mean_and_variance(X)
        p1 = np.clip(self.likelihood_.predict(mean, var), 0.0, 1.0)
        proba = np.column_stack([1.0 - p1, p1])
        learnt = self.optimizer is not None
        warn_if_all_tied(proba, kernel_at_bounds(self.kernel_) if learnt else (),
                         stacklevel=2)
        return proba

    def predict(self, X):
        """The class of largest probability in :meth:`predict_proba`: with two
        classes ``classes_[1]`` exactly where ``predict_proba(X)[:, 1] >= 0.5``
        (a tie goes to ``classes_[1]``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "classes_")
        return classes_from_proba(self.classes_, self.predict_proba(X))


class SparseGPRegressor(RegressorMixin, _SparseGP):
    """Sparse GP regression on inducing inputs, for Gaussian and non-Gaussian
    noise.

    Same methods and parameters as :class:`SparseGPClassifier`; the likelihood is
    a regression one: "gaussian", "laplace" (symmetric, robust) or
    "one_sided_exponential" (``p(y|f) = lambda exp(-lambda (y - f))`` for y > f,
    Csató & Opper's eq. 9), with its noise parameter learnt with the kernel
    (maximum evidence for ``"ep"``, EM for ``"online"``) when ``optimizer`` is set
    and its bounds are not fixed.

    Parameters
    ----------
    kernel, method, max_basis, inducing_points, learn_inducing_points, jitter, \
novelty_tol, n_sweeps, damping, tol, optimizer, n_em, chunk_size, random_state, verbose
        See :class:`SparseGPClassifier`.
    likelihood : str or Likelihood, default=None
        None means "gaussian".

    Attributes
    ----------
    kernel_, likelihood_, basis_vectors_, alpha_, C_, n_basis_, \
log_marginal_likelihood_value_, evidence_history_, inference_info_, n_features_in_
        See :class:`SparseGPClassifier`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from gpc import SparseGPRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (1000, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(1000)
    >>> reg = SparseGPRegressor(RBF(1.0), max_basis=30).fit(X, y)
    >>> round(float(reg.likelihood_.noise_variance), 2)
    0.01
    >>> bool(abs(reg.predict([[0.5]])[0] - np.sin(0.5)) < 0.05)
    True
    """

    _classification = False
    _default_likelihood = "gaussian"

    def fit(self, X, y):
        """Fit on (X, y) (nothing changes unless it succeeds).

        Parameters
        ----------
        X : array-like, Dask array or Dask DataFrame of shape (n_samples, n_features)
            Dask data stay on the workers (see :meth:`SparseGPClassifier.fit`).
        y : array-like, Dask array or Dask Series of shape (n_samples,)
            Finite real targets, at most 1e100 in size.

        Returns
        -------
        self
        """
        if is_dask(X) or is_dask(y):
            with self._atomic():
                return self._fit_dask(X, y)
        with self._atomic():
            X, y = validate_data(self, X, y, y_numeric=True)
            self._fit(X, np.asarray(y, dtype=np.float64))
        return self

    def partial_fit(self, X, y):
        """Present more examples once each (online), hyperparameters kept.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        first = not hasattr(self, "_state")
        with self._atomic():
            X, y = validate_data(self, X, y, reset=first, y_numeric=True)
            self._partial_fit(X, np.asarray(y, dtype=np.float64))
        return self

    def predict(self, X, return_std=False):
        """Predictive mean (and standard deviation) of the target at X.

        The latent mean plus the noise mean (``1 / lambda`` for the one-sided
        exponential noise, 0 otherwise); the standard deviation combines the
        latent variance and the noise variance.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        return_std : bool, default=False

        Returns
        -------
        mean : ndarray of shape (n_samples,)
        std : ndarray of shape (n_samples,), if return_std
        """
        mean, var = self.latent_mean_and_variance(X)
        noise_mean, noise_var = _noise_moments(self.likelihood_)
        if return_std:
            return mean + noise_mean, np.sqrt(var + noise_var)
        return mean + noise_mean
