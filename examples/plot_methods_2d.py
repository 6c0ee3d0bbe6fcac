"""
===============================================================
Decision boundaries and predictive uncertainty of each method
===============================================================

gpc offers several approximations to the same Gaussian process classifier. This
example fits each of them on one two-dimensional problem with the same kernel
and draws, for every method, the predictive probability p(y=1 | x) with its 0.5
contour, and the standard deviation of the latent function.

Look for two things: the decision boundaries (black lines) are nearly the same
for all methods, and so is the latent uncertainty, small near the data and
growing towards the prior's away from it, except for the variational bound
("vb"), whose posterior is much narrower than the others'. Laplace's
probabilities are a little less confident than EP's.
"""

# %%
# Data and a kernel learnt once
# -----------------------------
# The two interleaved half-moons, standardised. The kernel's signal variance and
# length scale are learnt once, by maximising EP's evidence with the probit
# likelihood; every method below then uses this fixed kernel, so that the
# differences come from the approximations alone.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_moons
from sklearn.gaussian_process.kernels import RBF, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.metrics import log_loss

import gpc

X, y = make_moons(n_samples=120, noise=0.25, random_state=0)
X = (X - X.mean(axis=0)) / X.std(axis=0)

learnt = gpc.GaussianProcessClassifier(C(1.0) * RBF(1.0), method="ep",
                                       likelihood="probit").fit(X, y)
kernel = learnt.kernel_
print("kernel learnt by EP:", kernel)

# %%
# One classifier per method
# -------------------------
# ``optimizer=None`` keeps the kernel fixed. The mean field needs a
# well-conditioned kernel matrix and refuses this one, so it gets a small fixed
# white-noise term (a slightly different model). ADF makes a single pass over
# the data and is meant for fixed hyperparameters anyway.
methods = ["laplace", "ep", "pl", "vb", "mean_field", "adf"]
classifiers = {}
for method in methods:
    k = kernel + WhiteKernel(1e-2, "fixed") if method == "mean_field" else kernel
    clf = gpc.GaussianProcessClassifier(k, method=method, likelihood="probit",
                                        optimizer=None).fit(X, y)
    classifiers[method] = clf
    train_loss = log_loss(y, clf.predict_proba(X)[:, 1])
    sd_train = np.sqrt(clf.latent_mean_and_variance(X)[1]).mean()
    print(f"{method:>10}: training log loss {train_loss:.4f}, "
          f"log evidence {clf.log_marginal_likelihood_value_:8.3f}, "
          f"mean latent sd at the training inputs {sd_train:.3f}")

# %%
# The evidence of "vb" and "mean_field" is a lower bound (the mean field's on
# the model with the white-noise term), hence well below the others; Laplace's
# is a little lower than EP's. ADF's is the sum of its one-pass sequential
# predictive log probabilities.
#
# Predictive probabilities and latent uncertainty
# -----------------------------------------------
# ``latent_mean_and_variance`` gives the Gaussian approximation of the latent
# function at new inputs; its square root is drawn in the second row.
xx, yy = np.meshgrid(np.linspace(-2.5, 2.5, 100), np.linspace(-2.5, 2.5, 100))
grid = np.column_stack([xx.ravel(), yy.ravel()])

fig, axes = plt.subplots(2, len(methods), figsize=(18, 6.2), sharex=True,
                         sharey=True, layout="constrained")
for j, (method, clf) in enumerate(classifiers.items()):
    proba = clf.predict_proba(grid)[:, 1].reshape(xx.shape)
    _, var = clf.latent_mean_and_variance(grid)
    sd = np.sqrt(var).reshape(xx.shape)

    top, bottom = axes[0, j], axes[1, j]
    pc = top.contourf(xx, yy, proba, levels=np.linspace(0, 1, 11), cmap="RdBu_r")
    sc = bottom.contourf(xx, yy, sd, levels=np.linspace(0, 3.2, 17), cmap="viridis")
    for ax in (top, bottom):
        ax.contour(xx, yy, proba, levels=[0.5], colors="k", linewidths=1.5)
        ax.scatter(*X[y == 0].T, c="w", edgecolors="k", s=18, label="y = 0")
        ax.scatter(*X[y == 1].T, c="k", marker="^", s=18, label="y = 1")
    top.set_title(method)
    bottom.set_xlabel("$x_1$")
axes[0, 0].set_ylabel("$x_2$")
axes[1, 0].set_ylabel("$x_2$")
axes[0, 0].legend(loc="lower left")
fig.colorbar(pc, ax=axes[0], label="p(y=1 | x)")
fig.colorbar(sc, ax=axes[1], label="latent standard deviation")
plt.show()
