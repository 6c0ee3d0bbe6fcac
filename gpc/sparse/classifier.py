"""The sparse GP classifier: :class:`~gpc.SparseGPClassifier` (the public
front, shared with :class:`~gpc.GaussianProcessClassifier`: classes, the
multi-class wrapper, rollback) over a binary sparse GP."""

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.validation import check_is_fitted

from .._estimator import (DEFAULT_LIKELIHOOD, ClassifierFront, classes_from_proba,
                          fit_atomically)
from ._dask import is_dask, label_values
from .estimators import _SparseGP, refuse_dask_weights


class _BinarySparseGPClassifier(ClassifierMixin, _SparseGP):
    """The sparse GP of one binary problem (what :class:`SparseGPClassifier`
    fits, directly or through its multi-class wrapper); parameters are the
    front's less ``multi_class`` and ``n_jobs``."""

    _classification = True
    _default_likelihood = DEFAULT_LIKELIHOOD
    _name = "SparseGPClassifier"            # in messages: the public estimator

    def fit(self, X, y, sample_weight=None):
        """Fit on two classes (arrays, or Dask collections without weights)."""
        if is_dask(X) or is_dask(y):
            refuse_dask_weights(sample_weight)
            return self._fit_dask(X, y)
        encoder = LabelEncoder().fit(y)
        if encoder.classes_.size != 2:
            raise ValueError(f"{self._name} needs exactly 2 classes, got "
                             f"{encoder.classes_}.")
        X = np.asarray(X)
        self.n_features_in_ = X.shape[1]
        self._fit(X, 2.0 * encoder.transform(y) - 1.0,
                  self._checked_weights(sample_weight, X.shape[0]))
        self.classes_ = encoder.classes_
        return self

    def _dask_encoder(self, y):
        """The map of a block of Dask labels ``y`` to -1, +1, from the two classes
        (the only values of y brought to the client; kept as ``classes_``)."""
        classes = np.unique(np.asarray(y.map_blocks(label_values).compute()))
        if classes.size != 2:
            raise ValueError(f"Dask arrays are fitted for two classes; y has "
                             f"{classes.size} ({classes}).")
        self.classes_ = classes
        return lambda b: 2.0 * np.searchsorted(classes, b) - 1.0

    def partial_fit(self, X, y, classes=None):
        """Present more examples once each (online), hyperparameters kept."""
        if classes is not None:
            self.classes_ = np.unique(classes)
        check_is_fitted(self, "classes_")
        X = np.asarray(X)
        self.n_features_in_ = X.shape[1]
        self._partial_fit(X, 2.0 * np.searchsorted(self.classes_, y) - 1.0)
        return self

    def predict_proba(self, X):
        """Probabilities of the two classes, columns in the order of ``classes_``."""
        mean, var = self.latent_mean_and_variance(X)
        p1 = np.clip(self.likelihood_.predict(mean, var), 0.0, 1.0)
        return np.column_stack([1.0 - p1, p1])

    def predict(self, X):
        return classes_from_proba(self.classes_, self.predict_proba(X))


class _OfTheBinaryProblem:
    """A fitted attribute of the binary sparse GP, read through the front for
    two classes."""

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, front, owner=None):
        if front is None:
            return self
        check_is_fitted(front)
        if front.n_classes_ != 2:
            raise AttributeError(f"{self.name} is an attribute of each binary "
                                 "problem's sparse GP: see base_estimator_.estimators_.")
        return getattr(front.base_estimator_, self.name)


class SparseGPClassifier(ClassifierFront):
    """GP classification on inducing inputs, for data sets of any size.

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
    * ``method="adf"``: the sparse online GP of Csato & Opper (2002), assumed
      density filtering in one pass that chooses the basis vectors as it goes,
      optional EP sweeps, and EM for the hyperparameters (see
      :mod:`gpc.sparse.online`).  :meth:`partial_fit` always uses the online
      pass.  (Its former name ``"online"`` is accepted with a FutureWarning.)

    Two classes are one sparse GP; more are fitted one-vs-rest or one-vs-one
    (``multi_class``), one sparse GP per binary problem.  Parameters, defaults
    and fitted attributes are those of :class:`gpc.GaussianProcessClassifier`
    wherever they mean the same thing (``kernel``, ``likelihood``,
    ``optimizer``, ``n_restarts_optimizer``, ``priors``, ``multi_class``,
    ``random_state``, ``verbose``, ``n_jobs``; ``base_estimator_``,
    ``classes_``, ``n_classes_``, ``kernel_``,
    ``log_marginal_likelihood_value_``).  The differences, and why: the
    default ``method`` is ``"ep"``, as the sparse model has no Laplace
    approximation (the dense default); no joint ``"multinomial"`` model (it is
    dense); ``optimizer`` cannot be a callable
    (the evidence is maximised in stages on growing subsets of the data, each
    warm-started, which a one-shot optimizer cannot do); no ``warm_start``.

    Parameters
    ----------
    kernel : kernel instance, default=None
        Any scikit-learn or :mod:`gpc.kernels` kernel; None means ``1.0 * RBF(1.0)``
        with both hyperparameters fixed.
    likelihood : str or Likelihood, default="logit"
        "logit" (as scikit-learn's), "probit" (whose EP moments have a closed
        form, so each EP pass costs less than the logit's quadrature), "step"
        (noise-free labels; the MAP/Laplace approach fails for it, moment
        matching does not) or any classification likelihood of
        :mod:`gpc.likelihoods`.
    method : {"ep", "adf"}, default="ep"
        How the posterior and the hyperparameters are found (see above).
    max_basis : int, default=100
        The number of inducing inputs (``"ep"``), or the capacity of the
        basis-vector set (``"adf"``).
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
        ``"adf"`` and :meth:`partial_fit`: an example joins the BV set when the
        variance of f(x) left unexplained by the BV set exceeds
        ``novelty_tol * k(x, x)``; otherwise its update is projected.  That
        variance is at most ``k(x, x)``, so at 1 or more no example would join.
    n_sweeps : int, default=1
        ``"adf"``: 1 is one online pass; more add up to ``n_sweeps - 1`` EP
        sweeps with the BV set fixed.
    damping : float in (0, 1], default=1.0
        Damping of the EP site updates (``"ep"``: the initial one; it is halved
        when a pass's largest site change grows).
    tol : float, default=1e-6
        Convergence tolerance of EP (largest site change).
    optimizer : "fmin_l_bfgs_b" or None, default="fmin_l_bfgs_b"
        With it, the kernel's free hyperparameters and the likelihood's free
        parameters are learnt (``"ep"``: maximum evidence; ``"adf"``: EM);
        None keeps them.
    n_restarts_optimizer : int, default=0
        ``"ep"``: further runs of the first stage of evidence maximisation from
        hyperparameters drawn uniformly within the kernel's bounds (which must
        be finite); the best end starts the next stage.
    priors : dict or sequence, default=None
        ``"ep"``: priors on the kernel's log-hyperparameters, as
        :class:`gpc.GaussianProcessClassifier`'s (by name, or aligned with
        ``kernel.theta``): the evidence plus the priors' log density is
        maximised.
    n_em : int, default=10
        ``"adf"``: EM iterations (each E-step is a fresh online pass plus the
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
        one per sweep of the final EP on all the data, ``"adf"`` the passes,
        sweeps and EM iterations.
    multi_class : {"one_vs_rest", "one_vs_one"}, default="one_vs_rest"
        How more than two classes are fitted: one sparse GP per class against
        the rest, or per pair of classes (``predict_proba`` is then not
        available, as in scikit-learn).
    class_weight : dict or "balanced", default=None
        Weights of the classes, as :class:`gpc.GaussianProcessClassifier`'s:
        each example's weight is its class's times its ``sample_weight`` in
        :meth:`fit` (``method="ep"``, data in memory).
    n_jobs : int, default=None
        Parallel jobs (joblib) for the binary problems of a multi-class
        problem; None means 1 unless in a ``joblib.parallel_config`` context.

    Attributes
    ----------
    base_estimator_ : estimator
        The binary sparse GP (two classes), or the ``multi_class`` wrapper of one
        per binary problem (its ``estimators_``).
    classes_ : ndarray of shape (n_classes,)
    n_classes_ : int
    kernel_ : kernel
        The fitted kernel (a CompoundKernel of the binary problems' for more
        than two classes).
    log_marginal_likelihood_value_ : float
        EP log evidence (``"adf"`` with ``n_sweeps = 1``: the online pass's sum
        of log predictive probabilities); the mean over the binary problems for
        more than two classes.
    likelihood_, basis_vectors_, alpha_, C_, n_basis_, evidence_history_, \
inference_info_
        Two classes only (more: on each of ``base_estimator_.estimators_``).
        The fitted likelihood; the posterior: mean ``k(x)' alpha_``, covariance
        ``K(x, x') + k(x)' C_ k(x')``, ``k(x) = K(basis_vectors_, x)``;
        ``n_basis_`` basis vectors; ``evidence_history_``: ``"ep"``: the log
        evidence of every optimiser evaluation on the whole data, ``"adf"``:
        that of every E-step, the cut-back ones included (the fitted model is
        the last that raised it; ``inference_info_``'s ``n_em`` counts the EM
        steps taken).
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

    likelihood_ = _OfTheBinaryProblem()
    basis_vectors_ = _OfTheBinaryProblem()
    alpha_ = _OfTheBinaryProblem()
    C_ = _OfTheBinaryProblem()
    n_basis_ = _OfTheBinaryProblem()
    evidence_history_ = _OfTheBinaryProblem()
    inference_info_ = _OfTheBinaryProblem()

    def __init__(self, kernel=None, *, likelihood=DEFAULT_LIKELIHOOD, method="ep",
                 max_basis=100, inducing_points=None, learn_inducing_points=False,
                 jitter=1e-6, novelty_tol=1e-4, n_sweeps=1, damping=1.0, tol=1e-6,
                 optimizer="fmin_l_bfgs_b", n_restarts_optimizer=0, priors=None,
                 n_em=10, chunk_size=512, multi_class="one_vs_rest",
                 class_weight=None, random_state=None, verbose=0, n_jobs=None):
        self.kernel = kernel
        self.likelihood = likelihood
        self.method = method
        self.max_basis = max_basis
        self.inducing_points = inducing_points
        self.learn_inducing_points = learn_inducing_points
        self.jitter = jitter
        self.novelty_tol = novelty_tol
        self.n_sweeps = n_sweeps
        self.damping = damping
        self.tol = tol
        self.optimizer = optimizer
        self.n_restarts_optimizer = n_restarts_optimizer
        self.priors = priors
        self.n_em = n_em
        self.chunk_size = chunk_size
        self.multi_class = multi_class
        self.class_weight = class_weight
        self.random_state = random_state
        self.verbose = verbose
        self.n_jobs = n_jobs

    def _binary(self):
        params = _BinarySparseGPClassifier().get_params()
        return _BinarySparseGPClassifier(**{k: getattr(self, k) for k in params})

    def _check_params(self):
        """Check every parameter before the data; return the binary sparse GP
        to fit."""
        self._check_multi_class(("one_vs_rest", "one_vs_one"))
        binary = self._binary()
        binary._prepared = binary._check_params()
        return binary

    def fit(self, X, y, sample_weight=None):
        """Fit on (X, y) (nothing changes unless it succeeds).

        Two classes are one sparse GP; more are fitted through ``multi_class``
        (one sparse GP per binary problem, in ``base_estimator_``).

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
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the examples (``method="ep"``, arrays in
            memory): each example's likelihood is raised to its weight, by
            power EP (:func:`gpc.sparse.sparse_ep`), so that an integer weight
            counts an example as that many copies.  Examples of weight 0 are
            left out before anything else: the inducing inputs and the
            learner's subsets are drawn from the others.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            For sample weights with ``method="adf"`` or with Dask data.
        RuntimeError
            With Dask data, when a worker that held some of them left the
            cluster during the fit and distributed cannot recompute them: the
            fit must be rerun.
        """
        if not (is_dask(X) or is_dask(y)):
            return super().fit(X, y, sample_weight)
        binary = self._check_params()
        refuse_dask_weights(sample_weight, self.class_weight)
        with fit_atomically(self):
            binary.fit(X, y)
            self.n_features_in_ = binary.n_features_in_
            self.__dict__.pop("feature_names_in_", None)
            if hasattr(binary, "feature_names_in_"):
                self.feature_names_in_ = binary.feature_names_in_
            self._set_fitted(binary, binary.classes_)
        return self
