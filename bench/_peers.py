"""Peer SVGP classifiers for the large-data benchmark: GPflow and GPyTorch.

Each peer is run the way its documentation shows a user: an SVGP with an ARD
squared-exponential kernel with a signal variance, a Bernoulli likelihood, learnt
inducing inputs, each library's default whitening, Adam on minibatches drawn by
shuffling the training set each epoch. The training clock runs only while the
optimiser steps; it stops while the model is evaluated on the test set.

This module does not import gpc, and imports tensorflow, gpflow, torch and gpytorch
only inside the functions that use them, so it imports without them. Run each peer
in a process of its own (TensorFlow and PyTorch each bring their own thread pools,
and TensorFlow's thread counts can be set only before its first operation).
"""

import importlib
import time

import numpy as np

_CLIP = 1e-12


def available():
    """Versions of the peer libraries.

    Returns
    -------
    dict
        ``{"gpflow": version or None, "gpytorch": version or None}``; None when the
        package cannot be imported.
    """
    out = {}
    for name in ("gpflow", "gpytorch"):
        try:
            out[name] = importlib.import_module(name).__version__
        except Exception:  # ImportError, or a broken TensorFlow/PyTorch underneath
            out[name] = None
    return out


def test_scores(p, y):
    """Test error and log loss of predictive probabilities.

    Parameters
    ----------
    p : ndarray of shape (n,)
        Predictive probabilities of class 1.
    y : ndarray of shape (n,)
        Labels in {0, 1}.

    Returns
    -------
    error : float
        Fraction of points where ``(p >= 0.5) != y``.
    log_loss : float
        Mean of ``-log p(y | x)``, with ``p`` clipped to [1e-12, 1 - 1e-12].
    """
    p = np.clip(np.asarray(p, dtype=float).ravel(), _CLIP, 1.0 - _CLIP)
    y = np.asarray(y).ravel()
    error = float(np.mean((p >= 0.5) != (y == 1)))
    log_loss = float(-np.mean(np.where(y == 1, np.log(p), np.log1p(-p))))
    return error, log_loss


def seconds_to_within(trajectory, final_log_loss, tol=0.005):
    """First training time at which the test log loss is within ``tol`` of the final.

    Parameters
    ----------
    trajectory : list of (train_seconds, test_error, test_log_loss)
    final_log_loss : float
    tol : float, default 0.005

    Returns
    -------
    float or None
        The first ``train_seconds`` with ``log_loss <= final_log_loss + tol``; None
        if there is none.
    """
    for seconds, _, log_loss in trajectory:
        if log_loss <= final_log_loss + tol:
            return seconds
    return None


def _train(step, predict, n, y_test, *, minibatch, max_seconds, max_epochs,
           eval_every_seconds, seed):
    """Shuffled-minibatch training loop shared by the peers.

    ``step(idx)`` takes one optimiser step on the training rows ``idx``;
    ``predict()`` returns the test probabilities. The clock runs only inside
    ``step``; the model is evaluated at 0 s, every ``eval_every_seconds`` of
    training time and at the end.
    """
    rng = np.random.RandomState(seed)
    trajectory = [(0.0, *test_scores(predict(), y_test))]
    train_seconds, seen, first_step = 0.0, 0, None
    next_eval = eval_every_seconds
    done = False
    while not done:
        order = rng.permutation(n)
        for start in range(0, n, minibatch):
            t0 = time.perf_counter()
            step(order[start:start + minibatch])
            elapsed = time.perf_counter() - t0
            first_step = elapsed if first_step is None else first_step
            train_seconds += elapsed
            seen += min(minibatch, n - start)
            done = (train_seconds >= max_seconds
                    or (max_epochs is not None and seen >= max_epochs * n))
            if done or train_seconds >= next_eval:
                trajectory.append((train_seconds, *test_scores(predict(), y_test)))
                next_eval = (np.floor(train_seconds / eval_every_seconds) + 1) \
                    * eval_every_seconds
            if done:
                break
    _, final_error, final_log_loss = trajectory[-1]
    return dict(trajectory=trajectory, final_error=final_error,
                final_log_loss=final_log_loss, train_seconds=train_seconds,
                epochs=seen / n, first_step_seconds=first_step)


def _gpflow_setup(threads, seed):
    """Import TensorFlow and GPflow with ``threads`` threads and seed ``seed``."""
    import tensorflow as tf
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:  # the runtime has started: the counts are fixed
        pass
    tf.random.set_seed(seed)
    import gpflow
    import gpflow.keras
    return tf, gpflow


def fit_gpflow_svgp(X, y, X_test, y_test, Z, *, minibatch=1024, lr=0.01,
                    max_seconds=120.0, max_epochs=None, eval_every_seconds=2.0,
                    seed=0, threads=2):
    """Train a GPflow SVGP classifier (float64, whitened, probit Bernoulli).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Training inputs.
    y : ndarray of shape (n,)
        Training labels in {0, 1}.
    X_test, y_test : ndarray
        Test inputs and labels, for the trajectory.
    Z : ndarray of shape (M, d)
        Initial inducing inputs (learnt).
    minibatch : int, default 1024
    lr : float, default 0.01
        Adam's learning rate.
    max_seconds : float, default 120.0
        Training-time budget (evaluation time excluded).
    max_epochs : float or None, default None
    eval_every_seconds : float, default 2.0
    seed : int, default 0
        Seed of the epoch shuffles and of TensorFlow.
    threads : int, default 2
        TensorFlow's intra- and inter-op thread counts.

    Returns
    -------
    dict
        ``trajectory`` (list of (train_seconds, test_error, test_log_loss)),
        ``final_error``, ``final_log_loss``, ``train_seconds``, ``epochs``,
        ``first_step_seconds`` (includes tracing the compiled step), ``version``.
    """
    tf, gpflow = _gpflow_setup(threads, seed)
    X, Xt = np.asarray(X, np.float64), np.asarray(X_test, np.float64)
    Y = np.asarray(y, np.float64).reshape(-1, 1)
    model = gpflow.models.SVGP(
        kernel=gpflow.kernels.SquaredExponential(lengthscales=np.ones(X.shape[1])),
        likelihood=gpflow.likelihoods.Bernoulli(),
        inducing_variable=np.array(Z, np.float64), num_data=X.shape[0])
    # GPflow's Keras-2 shim (tf_keras under TensorFlow >= 2.16, whose Keras 3
    # optimisers have no ``minimize``)
    optimizer = gpflow.keras.tf_keras.optimizers.Adam(learning_rate=lr)
    spec = (tf.TensorSpec([None, X.shape[1]], tf.float64),
            tf.TensorSpec([None, 1], tf.float64))

    @tf.function(input_signature=spec)
    def adam_step(xb, yb):
        optimizer.minimize(lambda: model.training_loss((xb, yb)),
                           model.trainable_variables)

    def step(idx):
        adam_step(X[idx], Y[idx])

    def predict():
        return model.predict_y(Xt)[0].numpy()

    out = _train(step, predict, X.shape[0], y_test, minibatch=minibatch,
                 max_seconds=max_seconds, max_epochs=max_epochs,
                 eval_every_seconds=eval_every_seconds, seed=seed)
    return dict(out, version=gpflow.__version__)


def _gpytorch_model(Z, d):
    """The GPyTorch tutorial's SVGP classifier on inducing inputs ``Z``."""
    import gpytorch

    class SVGPClassifier(gpytorch.models.ApproximateGP):
        def __init__(self):
            dist = gpytorch.variational.CholeskyVariationalDistribution(Z.size(0))
            strategy = gpytorch.variational.VariationalStrategy(
                self, Z, dist, learn_inducing_locations=True)
            super().__init__(strategy)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(
                gpytorch.kernels.RBFKernel(ard_num_dims=d))

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(
                self.mean_module(x), self.covar_module(x))

    return SVGPClassifier()


def fit_gpytorch_svgp(X, y, X_test, y_test, Z, *, minibatch=1024, lr=0.01,
                      max_seconds=120.0, max_epochs=None, eval_every_seconds=2.0,
                      seed=0, threads=2):
    """Train a GPyTorch SVGP classifier (float32, PyTorch's default; whitened).

    The model is the GPyTorch SVGP tutorial's: ``ConstantMean``,
    ``ScaleKernel(RBFKernel(ard_num_dims=d))``, ``CholeskyVariationalDistribution``,
    ``VariationalStrategy(learn_inducing_locations=True)`` (whitened),
    ``BernoulliLikelihood`` (probit) and ``VariationalELBO(num_data=n)``.

    Parameters
    ----------
    X, y, X_test, y_test, Z, minibatch, lr, max_seconds, max_epochs,
    eval_every_seconds
        As for :func:`fit_gpflow_svgp`.
    seed : int, default 0
        Seed of the epoch shuffles and of PyTorch.
    threads : int, default 2
        ``torch.set_num_threads``.

    Returns
    -------
    dict
        As for :func:`fit_gpflow_svgp`.
    """
    import gpytorch
    import torch
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    X, Xt = torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(
        X_test, dtype=torch.float32)
    Y = torch.as_tensor(y, dtype=torch.float32)
    model = _gpytorch_model(torch.tensor(Z, dtype=torch.float32), X.shape[1])
    likelihood = gpytorch.likelihoods.BernoulliLikelihood()
    mll = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=X.shape[0])
    optimizer = torch.optim.Adam(
        [{"params": model.parameters()}, {"params": likelihood.parameters()}], lr=lr)
    model.train(), likelihood.train()

    def step(idx):
        idx = torch.from_numpy(idx)
        optimizer.zero_grad()
        loss = -mll(model(X[idx]), Y[idx])
        loss.backward()
        optimizer.step()

    def predict():
        model.eval(), likelihood.eval()
        with torch.no_grad(), gpytorch.settings.fast_pred_var():
            p = likelihood(model(Xt)).mean.double().numpy()
        model.train(), likelihood.train()
        return p

    out = _train(step, predict, X.shape[0], y_test, minibatch=minibatch,
                 max_seconds=max_seconds, max_epochs=max_epochs,
                 eval_every_seconds=eval_every_seconds, seed=seed)
    return dict(out, version=gpytorch.__version__)
