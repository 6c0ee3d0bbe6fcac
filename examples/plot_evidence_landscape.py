"""
=====================================
The evidence over two hyperparameters
=====================================

The kernel hyperparameters of a Gaussian process classifier are learnt by
maximising the (approximate) log evidence, log p(y | X, theta). This example
maps the log evidence of Laplace's approximation and of expectation
propagation (EP) over a grid of signal variance and length scale on part of
the ionosphere data, marks each map's maximum and the hyperparameters that
``GaussianProcessClassifier.fit`` learns, and shows where the two
approximations disagree.

Look for two things: each fitted estimator lands at the maximum of its own map
(to within the grid's spacing), and Laplace's evidence is lower than EP's
everywhere on this grid, increasingly so at large signal variances, so that
Laplace prefers a smaller variance than EP.
"""

# %%
# The evidence on a grid, from the covariance matrix
# --------------------------------------------------
# :func:`gpc.infer` works at the level of the covariance matrix: it takes
# ``K`` and labels in {-1, +1} and returns, among others, the log evidence.
# Each grid point's inference starts from the previous one's result
# (``init=``), which saves EP some sweeps; ``check_psd=False`` skips the
# check that K is positive semi-definite, which it is by construction here.
# The first 120 cases of the ionosphere data keep the example fast.
import matplotlib.pyplot as plt
import numpy as np
from scipy.spatial.distance import cdist
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

import gpc
from gpc.datasets import load_ionosphere

X, y = load_ionosphere()
X, y = X[:120], y[:120]
X = (X - X.mean(axis=0)) / X.std(axis=0)
y_pm1 = 2.0 * y - 1.0
sq_dist = cdist(X, X, "sqeuclidean")

variances = np.logspace(0, 4, 21)
length_scales = np.logspace(0, np.log10(30), 21)
evidence = {}
for method in ["laplace", "ep"]:
    evidence[method] = np.empty((len(length_scales), len(variances)))
    for i, ell in enumerate(length_scales):
        state = None
        for j, var in enumerate(variances):
            K = var * np.exp(-0.5 * sq_dist / ell**2)  # C(var) * RBF(ell)
            res = gpc.infer(K, y_pm1, method=method, likelihood="probit",
                            init=state, compute_gradient=False, check_psd=False)
            evidence[method][i, j] = res.log_evidence
            state = res.state

# %%
# The hyperparameters learnt by the estimator
# -------------------------------------------
# The estimator maximises the same evidence with its exact gradient, from
# ``C(1.0) * RBF(1.0)``; ``kernel_`` holds the result.
fitted = {}
for method in ["laplace", "ep"]:
    clf = gpc.GaussianProcessClassifier(C(1.0) * RBF(1.0), method=method,
                                        likelihood="probit").fit(X, y)
    fitted[method] = (clf.kernel_.k1.constant_value, clf.kernel_.k2.length_scale)
    i, j = np.unravel_index(evidence[method].argmax(), evidence[method].shape)
    print(f"{method:>7}: grid maximum {evidence[method][i, j]:.2f} at variance "
          f"{variances[j]:.1f}, length scale {length_scales[i]:.2f}; fit: "
          f"{clf.log_marginal_likelihood_value_:.2f} at variance "
          f"{fitted[method][0]:.1f}, length scale {fitted[method][1]:.2f}")
gap = evidence["ep"] - evidence["laplace"]
print(f"EP's log evidence minus Laplace's: {gap.min():.3f} to {gap.max():.2f} nats; "
      f"at variance {variances[0]:g}, {gap[:, 0].min():.3f} to {gap[:, 0].max():.2f}; "
      f"at variance {variances[-1]:g}, {gap[:, -1].min():.2f} to "
      f"{gap[:, -1].max():.2f}")

# %%
# The two maps
# ------------
# Both panels show the log evidence minus EP's maximum, with the same contour
# levels, so that the colours compare across panels.
top = evidence["ep"].max()
levels = [-100, -60, -40, -20, -10, -5, -2, -1, 0]
fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True, layout="constrained")
for ax, method in zip(axes, ["laplace", "ep"]):
    Z = evidence[method] - top
    cs = ax.contourf(variances, length_scales, Z, levels=levels, cmap="viridis",
                     extend="min")
    ax.contour(variances, length_scales, Z, levels=levels, colors="k",
               linewidths=0.5)
    i, j = np.unravel_index(Z.argmax(), Z.shape)
    ax.plot(variances[j], length_scales[i], "w*", ms=18, mec="k",
            label="maximum on the grid")
    ax.plot(*fitted[method], "r+", ms=18, mew=2.5, label="learnt by fit")
    ax.set(xscale="log", yscale="log", xlabel="signal variance",
           title=f"{method}: log evidence")
    ax.legend(loc="upper left")
axes[0].set_ylabel("length scale")
fig.colorbar(cs, ax=axes, label="log evidence minus EP's maximum (nats)")
plt.show()
