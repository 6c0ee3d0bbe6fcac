"""The sparse estimators: :class:`~gpc.SparseGPClassifier` and
:class:`~gpc.SparseGPRegressor` (see :mod:`gpc.sparse`)."""

import time
import warnings
from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.cluster import kmeans_plusplus
from sklearn.utils import check_array, check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .._linalg import solve_lower
from .._validation import check_integer, check_real
from .._estimator import (check_optimizer, default_kernel, fit_atomically,
                          kernel_priors)
from ..inference import check_kernel_psd
from ..inference._base import check_sample_weight
from ..kernels import as_kernel, contract, contract_inputs, cross_covariance_chunks
from ..likelihoods import get_likelihood
from ..optimize import maximize_evidence, median_distance
from ._chunked import ChunkedData
from ._dask import as_float, dask_data, is_dask
from .ep import unreached
from .learning import SparseEvidence, maximize_sparse_evidence
from .online import (SparseState, _refresh_factor, _store_full,
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


def refuse_dask_weights(sample_weight, class_weight=None):
    """ValueError for sample or class weights given with Dask data."""
    if sample_weight is not None or class_weight is not None:
        raise ValueError("sample and class weights are taken with data in memory; "
                         "with Dask data they are not supported yet.")


class _SparseEPWeights:
    """The weights check of sparse EP (as an inference method's)."""

    check_sample_weight = staticmethod(check_sample_weight)


class _SparseGP(BaseEstimator):
    """The estimator machinery shared by :class:`~gpc.SparseGPClassifier` and
    :class:`~gpc.SparseGPRegressor` (see :mod:`gpc.sparse`)."""

    _classification = None

    @property
    def _name(self):
        """The estimator named in messages."""
        return type(self).__name__


    def __init__(self, kernel=None, *, likelihood=None, method="ep", max_basis=100,
                 inducing_points=None, learn_inducing_points=False, jitter=1e-6,
                 novelty_tol=1e-4, n_sweeps=1, damping=1.0, tol=1e-6,
                 optimizer="fmin_l_bfgs_b", n_restarts_optimizer=0, priors=None,
                 n_em=10, chunk_size=512, random_state=None, verbose=0):
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
        self.n_restarts_optimizer = n_restarts_optimizer
        self.priors = priors
        self.n_em = n_em
        self.chunk_size = chunk_size
        self.verbose = verbose

    # -- validation ---------------------------------------------------------------
    def _method(self):
        """The method, by its current name ("online" is the former name of
        "adf")."""
        return "adf" if self.method == "online" else self.method

    def _check_params(self):
        """Check the parameters; return the model they describe: a fresh
        kernel, the likelihood and the priors aligned with the kernel's theta
        (None without priors)."""
        for name, low in (("max_basis", 1), ("n_sweeps", 1), ("n_em", 0),
                          ("chunk_size", 1), ("n_restarts_optimizer", 0)):
            check_integer(getattr(self, name), name, low)
        method = self._method()
        if self.method == "online":
            warnings.warn("method='online' is now called method='adf' (assumed "
                          "density filtering, as in GaussianProcessClassifier); "
                          "'online' will stop working in a future release.",
                          FutureWarning, stacklevel=4)
        if method not in ("ep", "adf"):
            raise ValueError(f"method must be 'ep' or 'adf', got {self.method!r}.")
        check_real(self.jitter, "jitter", 0.0)
        # The novelty of an example, the variance of f(x) that the BV set leaves
        # unexplained, is at most k(x, x): at 1 or more none would join the set.
        check_real(self.novelty_tol, "novelty_tol", 0.0, 1.0, high_open=True)
        check_real(self.damping, "damping", 0.0, 1.0, low_open=True)
        check_real(self.tol, "tol", 0.0, low_open=True)
        check_optimizer(self.optimizer, callables=False)
        if self.learn_inducing_points not in (True, False):
            raise ValueError("learn_inducing_points must be True or False, got "
                             f"{self.learn_inducing_points!r}.")
        if self.learn_inducing_points and (method != "ep" or self.optimizer is None):
            raise ValueError("learn_inducing_points=True needs method='ep' and an "
                             "optimizer: the inducing inputs are learnt with the "
                             "hyperparameters by maximising the EP evidence.")
        if (self.n_restarts_optimizer or self.priors is not None) and method != "ep":
            raise ValueError("n_restarts_optimizer and priors need method='ep' "
                             "(with 'adf' the hyperparameters are learnt by EM).")
        kernel = default_kernel() if self.kernel is None else clone(as_kernel(self.kernel))
        likelihood = get_likelihood(self._default_likelihood if self.likelihood is None
                                    else self.likelihood)
        if likelihood.multinomial:
            raise ValueError(f"{self._name} has no joint multi-class model: the "
                             f"{likelihood.name!r} likelihood is "
                             "GaussianProcessClassifier(multi_class='multinomial')'s.")
        if likelihood.is_classification != self._classification:
            kind = "classification" if self._classification else "regression"
            raise ValueError(f"{self._name} needs a {kind} likelihood, got "
                             f"{likelihood.name!r}.")
        return kernel, likelihood, kernel_priors(self.priors, [kernel])

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

    def _fit(self, X, y, sample_weight=None):
        model = self._checked()
        model[1].check_targets(y)
        if self._method() == "adf":
            return self._fit_online(X, y, model)
        return self._fit_ep(X, y, model, sample_weight)

    def _weighted_method(self):
        """What checks the examples' weights (``check_sample_weight``): sparse
        EP takes them (see :func:`gpc.sparse.sparse_ep`); ValueError for ADF."""
        if self._method() != "ep":
            raise ValueError(f"{self._name}(method='adf') does not take sample "
                             "weights (sample_weight or class_weight); "
                             "method='ep' does.")
        return _SparseEPWeights

    def _checked_weights(self, sample_weight, n):
        """``sample_weight`` checked for n examples (None stays None)."""
        if sample_weight is None:
            return None
        return self._weighted_method().check_sample_weight(sample_weight, n)

    def _checked(self):
        """:meth:`_check_params`'s model: the one the front checked (once), or a
        fresh one (a clone fitted by a multi-class wrapper)."""
        return self.__dict__.pop("_prepared", None) or self._check_params()

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
        if self._method() != "ep":
            raise ValueError("Dask arrays are fitted with method='ep' only.")
        model = self._checked()
        data, n_features, columns = dask_data(
            X, y, self._dask_encoder, model[1], self._name, self.random_state)
        self.n_features_in_ = n_features
        self.__dict__.pop("feature_names_in_", None)
        if columns is not None and all(isinstance(c, str) for c in columns):
            self.feature_names_in_ = np.asarray(columns, dtype=object)
        return self._fit_ep(data, None, model)

    def _dask_encoder(self, y):
        """The map of a block of Dask targets ``y`` to the model's (float64 here;
        the classifier's maps two classes to -1, +1)."""
        return as_float

    def _fit_ep(self, X, y, model, sample_weight=None):
        """Sparse EP on inducing inputs; hyperparameters by staged L-BFGS-B on its
        evidence (:func:`gpc.sparse.learning.maximize_sparse_evidence`).  ``X`` is an
        array, or a ``gpc.sparse._chunked.ChunkedData`` (then ``y`` is None);
        ``model``: the checked ``(kernel, likelihood, priors)``; ``sample_weight``
        (arrays only): the examples of weight 0 are left out before anything
        else (the inducing inputs and the learner's subsets are those of the
        others), the others weight their likelihoods."""
        kernel, likelihood, priors = model
        if sample_weight is not None:
            keep = sample_weight > 0
            X, y, sample_weight = X[keep], y[keep], sample_weight[keep]
        data = X if isinstance(X, ChunkedData) else ChunkedData.from_arrays(
            X, y, max(self.chunk_size, 2048), self.random_state, w=sample_weight)
        Z = self._inducing_inputs(data)
        check_kernel_psd(kernel, Z)         # K(Z, Z) must factorise
        if self.learn_inducing_points:      # refused now, not after the stages
            contract_inputs(kernel, Z[:1], Z[:1], np.zeros((1, 1)))
        learn = self.optimizer is not None
        learn_lik = learn and _learnable_likelihood(likelihood)
        learning = dict(learn_likelihood=learn_lik,
                        learn_inducing=self.learn_inducing_points)
        options = dict(jitter=self.jitter, tol=self.tol, damping=self.damping)
        theta, res, opt = None, None, {"interrupted": False, "history": [[]]}
        if learn and (kernel.n_dims > 0 or learn_lik or self.learn_inducing_points):
            theta, res, opt = maximize_sparse_evidence(
                kernel, likelihood, data, Z, distance=self._median_distance(data),
                priors=priors, n_restarts=self.n_restarts_optimizer,
                random_state=self.random_state, verbose=self.verbose, **learning,
                **options)
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
                with warnings.catch_warnings():     # said once, below
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    res = final.run(theta, compute_gradient=False)
            except KeyboardInterrupt:
                if res is None:
                    raise
                opt["interrupted"] = True
        _warn_if_unfinished(opt)
        message = unreached(res.info, self.tol)
        if message:
            warnings.warn(f"sparse GP: {message}", ConvergenceWarning, stacklevel=3)
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

    def _fit_online(self, X, y, model):
        """The online sparse GP; with ``optimizer``, EM whose M-steps are taken
        only where they raise the log evidence (see ``_em_step``)."""
        kernel, likelihood, _ = model
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

    def _partial_fit(self, X, y):
        fitted = hasattr(self, "_state")
        if fitted:
            kernel, likelihood = self.kernel_, self.likelihood_
            state = self._state.copy()
            history = self.evidence_history_
        else:
            kernel, likelihood, _ = self._checked()
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


class SparseGPRegressor(RegressorMixin, _SparseGP):
    """Sparse GP regression on inducing inputs, for Gaussian and non-Gaussian
    noise.

    Same methods and parameters as :class:`~gpc.SparseGPClassifier`; the likelihood is
    a regression one: "gaussian", "laplace" (symmetric, robust) or
    "one_sided_exponential" (``p(y|f) = lambda exp(-lambda (y - f))`` for y > f,
    Csató & Opper's eq. 9), with its noise parameter learnt with the kernel
    (maximum evidence for ``"ep"``, EM for ``"adf"``) when ``optimizer`` is set
    and its bounds are not fixed.

    Parameters
    ----------
    kernel, method, max_basis, inducing_points, learn_inducing_points, jitter, \
novelty_tol, n_sweeps, damping, tol, optimizer, n_restarts_optimizer, priors, n_em, \
chunk_size, random_state, verbose
        See :class:`~gpc.SparseGPClassifier`.
    likelihood : str or Likelihood, default=None
        None means "gaussian".

    Attributes
    ----------
    kernel_, likelihood_, basis_vectors_, alpha_, C_, n_basis_, \
log_marginal_likelihood_value_, evidence_history_, inference_info_, n_features_in_
        See :class:`~gpc.SparseGPClassifier`.

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

    def fit(self, X, y, sample_weight=None):
        """Fit on (X, y) (nothing changes unless it succeeds).

        Parameters
        ----------
        X : array-like, Dask array or Dask DataFrame of shape (n_samples, n_features)
            Dask data stay on the workers (see :meth:`gpc.SparseGPClassifier.fit`).
        y : array-like, Dask array or Dask Series of shape (n_samples,)
            Finite real targets, at most 1e100 in size.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the examples, ``method="ep"`` with data in
            memory (see :meth:`gpc.SparseGPClassifier.fit`).

        Returns
        -------
        self
        """
        if is_dask(X) or is_dask(y):
            refuse_dask_weights(sample_weight)
            with fit_atomically(self):
                return self._fit_dask(X, y)
        with fit_atomically(self):
            X, y = validate_data(self, X, y, y_numeric=True)
            self._fit(X, np.asarray(y, dtype=np.float64),
                      self._checked_weights(sample_weight, X.shape[0]))
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
        with fit_atomically(self):
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
        noise_mean, noise_var = self.likelihood_.noise_moments()
        if return_std:
            return mean + noise_mean, np.sqrt(var + noise_var)
        return mean + noise_mean
