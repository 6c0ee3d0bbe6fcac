"""Learning the sparse EP model's hyperparameters (and inducing inputs) by
maximising its log evidence."""

import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..inference import NumericalError
from ..evidence import Evidence
from ..optimize import TOL_PER_EXAMPLE, learning_starts, log_prior, maximize_evidence
from ._chunked import ChunkedData
from .ep import sparse_ep


class SparseEvidence(Evidence):
    """The sparse EP log evidence of hyperparameters, per example, warm-started.

    The sparse model's :class:`gpc.evidence.Evidence`: ``objective(theta) ->
    (value, gradient)`` with ``theta`` the kernel's log-hyperparameters followed by the
    logs of the likelihood's free parameters and, with ``learn_inducing``, the
    inducing inputs (row by row).  The value is the log evidence
    divided by the number of examples, so that the optimiser's tolerances mean
    the same at every n.  Each call starts EP from the sites of the last
    successful one; the best call is kept (``best``), so that an interrupted
    optimisation loses nothing.

    Parameters
    ----------
    kernel, likelihood : the model at its initial parameters
    X, y, Z : data and inducing inputs
        ``X`` may be a ``gpc.sparse._chunked.ChunkedData`` (then ``y`` is None):
        data held in chunks, here or by Dask workers.
    learn_likelihood : bool
        Whether the likelihood's free parameters are part of theta.
    learn_inducing : bool, default=False
        Whether the inducing inputs are part of theta (Z is then their start).
    verbose : int
        One line per evaluation when > 0 (log evidence, gradient norm, time).
    **options
        Passed to :func:`~gpc.sparse.sparse_ep` (jitter, tol, max_iter, damping,
        cache_bytes; chunk_size for arrays).
    """

    def __init__(self, kernel, likelihood, X, y, Z, *, learn_likelihood=False,
                 learn_inducing=False, priors=None, verbose=0, **options):
        super().__init__(kernel, likelihood, learn_likelihood)
        self.learn_inducing = bool(learn_inducing)
        self.data = (X if isinstance(X, ChunkedData) else
                     ChunkedData.from_arrays(X, y, options.pop("chunk_size", 2048)))
        options.pop("chunk_size", None)
        self.Z = Z
        self.options = options
        self.verbose = verbose
        self.best = None            # (value, theta, result)
        self.history = []
        self.failure = None         # the last evaluation's NumericalError
        self.t0 = time.perf_counter()
        # The priors of the kernel's theta; none on the likelihood and Z.
        self.priors = None if priors is None else \
            list(priors) + [None] * (self.theta.shape[0] - len(priors))

    @property
    def sites(self):
        """The EP sites (per chunk) that the next run starts from."""
        return self.state

    @sites.setter
    def sites(self, sites):
        self.state = sites

    @property
    def theta(self):
        own = [self.Z.ravel()] if self.learn_inducing else []
        return np.concatenate([super().theta, *own])

    @property
    def bounds(self):
        own = [np.full((self.Z.size, 2), [-np.inf, np.inf])] if self.learn_inducing \
            else []
        return np.vstack([self.params.bounds, *own])

    def set_theta(self, theta):
        theta = np.asarray(theta, dtype=np.float64)
        super().set_theta(theta[:self._n_model])
        self.Z = self.inducing_inputs(theta)
        self._at = theta.copy()         # as given (the kernel's own round-trips)

    def model(self, theta):
        """``(kernel, likelihood)`` at theta."""
        return self.params.model(np.asarray(theta)[:self._n_model])

    def inducing_inputs(self, theta):
        """The inducing inputs at theta: Z itself unless they are learnt."""
        if not self.learn_inducing:
            return self.Z
        return np.asarray(theta, dtype=np.float64)[self._n_model:].reshape(self.Z.shape)

    @property
    def _n_model(self):
        return self.params.theta.shape[0]

    def run(self, theta, compute_gradient=True):
        """:func:`~gpc.sparse.sparse_ep` at theta from the kept sites (a line per sweep
        when verbose), the sites kept as they were."""
        return self.infer(theta, compute_gradient)[0]

    def _run(self, compute_gradient, workspace):
        # An evaluation for the optimiser prints one line (and one per sweep
        # when verbose > 1), a run without the gradient one per sweep.
        verbose = max(self.verbose - 1, 0) if compute_gradient else self.verbose
        try:
            res = sparse_ep(self.kernel, self.likelihood, self.data, None, self.Z,
                            sites=self.sites, compute_gradient=compute_gradient,
                            inducing_gradient=self.learn_inducing, verbose=verbose,
                            **self.options)
        except NumericalError as exc:
            self.failure = exc              # for the message if every one fails
            raise
        return res, None

    def _value_and_gradient(self, res, _):
        n = self.data.n
        grad = self.params.gradient(res.grad, res.dlik, self.likelihood) / n
        if self.learn_inducing:
            grad = np.concatenate([grad, res.dZ.ravel() / n])
        value = res.log_evidence / n
        if not (np.isfinite(value) and np.all(np.isfinite(grad))):
            self.failure = NumericalError("sparse EP: non-finite evidence or "
                                          "gradient.", "sparse_ep")
            raise self.failure
        self._kept(res.sites)
        self.history.append(res.log_evidence)
        score = value + log_prior(self.priors, self._at)[0] / n
        if self.best is None or score > self.best[0]:
            self.best = (score, self._at, res)
        if self.verbose:
            print(f"[gpc sparse EP] n = {n}, evaluation {len(self.history)}: log "
                  f"evidence {res.log_evidence:.6g}, |gradient| "
                  f"{np.linalg.norm(grad) * n:.3g}, {res.info['passes']} passes, "
                  f"{time.perf_counter() - self.t0:.1f} s", flush=True)
        return value, grad


def stage_sizes(n, n_inducing, smallest=5000, factor=10):
    """The data sizes of staged evidence maximisation: ``n, n / factor, ...``
    while above ``max(smallest, 10 n_inducing)``, and that smallest size itself
    when the last is more than twice it; smallest first.

    A stage on a random subset costs a fraction of the full data's and ends near
    the full optimum, so the stages on more data start close and take few
    evaluations; the last stage is always the whole data."""
    smallest = max(smallest, 10 * n_inducing)
    sizes, s = [n], n // factor
    while s >= smallest:
        sizes.append(s)
        s //= factor
    if sizes[-1] > 2 * smallest:
        sizes.append(smallest)
    return sizes[::-1]


def maximize_sparse_evidence(kernel, likelihood, data, Z, *, learn_likelihood,
                             learn_inducing=False, distance=None, smallest_stage=5000,
                             gtol=TOL_PER_EXAMPLE, priors=None, n_restarts=0,
                             random_state=None, verbose=0, **options):
    """Staged L-BFGS-B maximisation of the sparse EP evidence.

    The stages (:func:`stage_sizes`) run on nested random subsets of ``data`` (a
    ``gpc.sparse._chunked.ChunkedData``), each starting from the previous stage's
    optimum and, for the examples they share, from its sites; the last stage is
    the whole data.  The last stage runs L-BFGS-B until the largest absolute
    projected gradient of the log evidence per example is at most ``gtol``
    (:func:`gpc.optimize.lbfgsb`; or its quasi-Newton model predicts a gain
    below a hundredth of that, :func:`gpc.optimize.stationarity`): the log
    evidence is the sum of the examples' sequential predictive log
    probabilities, so its gradient per example is on the scale of a test log
    loss's, and the same tolerance means the same at every n.  The stages on
    subsets, whose evaluations cost a fraction of the whole data's, run to a
    tenth of ``gtol``, so that the whole data's stage starts close to its end.
    The first stage is :func:`gpc.optimize.staged_lbfgsb`'s: from the kernel's
    own start and, with ``distance`` (the inputs' median distance),
    from length scales set to it, first with every vector hyperparameter tied
    (an ARD kernel as the isotropic one), then free.  While the hyperparameters
    move, EP stops at a site change of 1e-4 (``max(tol, 1e-4)``: the evidence's
    error is second order in the sites'), so the returned result is EP to that;
    continue it from its sites for a tighter ``tol``.  With ``learn_inducing`` a
    further stage on the whole data moves the inducing inputs (from Z) with the
    parameters, from the end of the last: its evidence is at least that of
    the fit with Z fixed.

    Returns
    -------
    theta : ndarray
        The best parameters found (``SparseEvidence.theta`` layout).
    result : SparseEPResult or None
        The evaluation at theta (its sites per chunk, EP to ``max(tol,
        1e-4)``): on the whole data, or when interrupted on the subset of
        ``info["result_rows"]`` rows of the last stage that completed one;
        None when no stage did.
    info : dict
        ``interrupted`` (a KeyboardInterrupt stopped the optimisation; it is not
        re-raised, the best parameters so far are returned), ``stages`` (sizes;
        with ``learn_inducing`` the whole data's twice),
        ``result_rows`` (the rows of ``result``'s data), ``n_evaluations``,
        ``history`` (log evidence of every evaluation, per
        stage), ``projected_gradient`` (the largest absolute one per example at
        the end of the last stage, None when it was interrupted), ``gtol`` and
        ``stationary`` (:func:`gpc.optimize.stationarity`'s verdict there).
    """
    n = data.n
    theta, sites, done, result, newton = None, None, None, None, None
    info = {"interrupted": False, "n_evaluations": 0, "history": [],
            "projected_gradient": None, "gtol": gtol, "stationary": None,
            "result_rows": None,
            "stages": stage_sizes(n, Z.shape[0], smallest=smallest_stage)}
    if learn_inducing:
        info["stages"].append(n)
    for k, size in enumerate(info["stages"]):
        moves_z = learn_inducing and k == len(info["stages"]) - 1
        if moves_z:                 # the parameters, then Z: from the fixed Z's end
            theta, newton = np.concatenate([theta, Z.ravel()]), None
        stage = data.subset(size / n)
        stage_options = dict(options, tol=max(options.get("tol", 1e-6), 1e-4))
        objective = SparseEvidence(kernel, likelihood, stage, None, Z,
                                   learn_likelihood=learn_likelihood,
                                   learn_inducing=moves_z, priors=priors,
                                   verbose=verbose, **stage_options)
        if sites is not None:
            objective.sites = stage.carry(sites, done)
        try:
            tol = gtol if size == n else 0.1 * gtol      # subsets: cheap
            restarts = None if k else dict(n_restarts=n_restarts,
                                           random_state=random_state)
            run = _stage(objective, theta, kernel, distance, tol, newton, moves_z,
                         restarts)
            newton = _per_example(run.newton, stage.n)
            info["stationary"] = run.stationary
            info["projected_gradient"] = run.projected_gradient / stage.n
        except KeyboardInterrupt:
            info["interrupted"] = True
            info["projected_gradient"] = info["stationary"] = None
        info["n_evaluations"] += len(objective.history)
        info["history"].append(objective.history)
        if objective.best is not None:
            _, theta, result = objective.best
            sites = result.sites
            done, info["result_rows"] = stage.fraction, stage.n
        if info["interrupted"]:
            break
    if theta is None:
        if info["interrupted"]:
            raise KeyboardInterrupt
        raise NumericalError("sparse EP: every evaluation of the evidence failed; "
                             f"the last: {objective.failure}", "sparse_ep")
    if learn_inducing and not moves_z:      # interrupted before Z's stage: Z as is
        theta = np.concatenate([theta, Z.ravel()])
    return theta, result, info


def _per_example(newton, n):
    """A stage's quasi-Newton step ``H g`` for the total evidence of its n
    examples as a function of the gradient per example (the same on any
    subset)."""
    return lambda g: newton(np.asarray(g) * n)


def _stage(objective, theta, kernel, distance, gtol, newton, moves_z=False,
           restarts=None):
    """One stage of :func:`maximize_sparse_evidence`: evidence maximisation
    (:func:`gpc.optimize.maximize_evidence`, its stationarity warning left to
    the caller) of the stage's total log evidence (the per-example objective
    times n) until the projected gradient per example is at most ``gtol``.
    The first stage (``theta`` None) runs from the candidate starts of
    :func:`gpc.optimize.learning_starts`, its first steps one unit long, with
    ``restarts`` (``n_restarts`` and ``random_state`` of
    :func:`gpc.optimize.maximize_evidence`); a later one from theta, its first
    step the quasi-Newton step of the previous stage's curvature (``newton``,
    per example), within [0.05, 1].  Every stage adds the objective's
    ``priors``.
    The stage that moves the inducing inputs (``moves_z``) stops when an
    iteration gains at most ``gtol / 100`` per example
    (:func:`gpc.optimize.stationarity`'s gain): an inducing input's gradient
    sums over the few examples near it, so a small largest gradient leaves
    much to gain over thousands of them."""
    n = objective.data.n

    def total(t):
        value, grad = objective(t)
        return n * value, n * grad

    tol = gtol * n
    if moves_z:
        options = dict(gtol=0.0, min_gain=0.01 * tol)
    elif theta is not None:
        options = dict(gtol=tol, first_step=lambda g: min(
            max(float(np.linalg.norm(newton(g / n))), 0.05), 1.0))
    else:
        theta = objective.theta
        learn = learning_starts([kernel], theta, distance, n)
        options = dict(gtol=tol, groups=learn["groups"], starts=learn["starts"],
                       **(restarts or {}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return maximize_evidence(total, theta, objective.bounds, tol=tol,
                                 priors=objective.priors, **options)
