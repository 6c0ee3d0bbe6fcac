"""
================================================
Label noise with the noisy threshold likelihood
================================================

When some training labels are simply wrong, the probit and logit likelihoods
can only explain them by bending the latent function towards each of them.
The noisy threshold likelihood, p(y | f) = eps + (1 - 2 eps) H(y f), says
instead that every label is flipped with probability eps, and gpc learns eps
together with the kernel by maximising EP's evidence.

This example flips 10 % of the labels of a one-dimensional problem and compares
the two likelihoods with the true class probability. Look for the learnt flip
rate next to the true one, and for the probit model's wiggles, which follow the
flipped labels, against the noisy threshold's flat plateaus near 0.1 and 0.9.
"""

# %%
# Data with flipped labels
# ------------------------
# The clean label is 1 where sin(1.5 x) > 0; each label is then flipped with
# probability 0.1, so the true p(y=1 | x) is 0.9 or 0.1.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

import gpc

rng = np.random.RandomState(0)
x = np.sort(rng.uniform(-3, 3, 200))
clean = (np.sin(1.5 * x) > 0).astype(int)
flipped = rng.rand(x.size) < 0.1
y = np.where(flipped, 1 - clean, clean)
X = x[:, None]
print(f"labels flipped: {flipped.sum()} of {x.size} ({flipped.mean():.3f})")

# %%
# Two classifiers
# ---------------
# Both use EP and learn the kernel ``C(1.0) * RBF(1.0)``; the noisy threshold
# also learns eps, which the fitted binary estimator keeps in ``likelihood_``.
# Since this likelihood depends on the sign of f only, the signal variance
# cannot be learnt from it and stays at its initial value.
grid = np.linspace(-3, 3, 400)
p_true = np.where(np.sin(1.5 * grid) > 0, 0.9, 0.1)
curves = {}
for likelihood in ["noisy_threshold", "probit"]:
    clf = gpc.GaussianProcessClassifier(C(1.0) * RBF(1.0), method="ep",
                                        likelihood=likelihood).fit(X, y)
    curves[likelihood] = clf.predict_proba(grid[:, None])[:, 1]
    error = np.abs(curves[likelihood] - p_true).mean()
    print(f"{likelihood:>15}: {clf.kernel_}, log evidence "
          f"{clf.log_marginal_likelihood_value_:.2f}, mean |p - p_true| on the "
          f"grid {error:.3f}")
    if likelihood == "noisy_threshold":
        eps = clf.base_estimator_.likelihood_.eps
        print(f"learnt flip rate {eps:.3f} (true 0.1)")

# %%
# The predictive probabilities
# ----------------------------
# The flipped labels are drawn as crosses. The noisy threshold's probabilities
# level off at about eps and 1 - eps and switch where the clean labels do; the
# probit model, with a short learnt length scale, turns towards the flipped
# labels in between.
fig, ax = plt.subplots(figsize=(9, 4.2), layout="constrained")
ax.plot(grid, p_true, "k:", lw=2, label="true p(y=1 | x)")
ax.plot(grid, curves["noisy_threshold"], lw=2,
        label=f"noisy threshold (learnt eps = {eps:.3f})")
ax.plot(grid, curves["probit"], lw=2, label="probit")
jitter = 0.03 * rng.randn(x.size)
ax.scatter(x[~flipped], y[~flipped] + jitter[~flipped], s=12, c="0.4",
           label="training labels")
ax.scatter(x[flipped], y[flipped] + jitter[flipped], s=40, c="r", marker="x",
           label="flipped labels")
ax.set(xlabel="x", ylabel="p(y=1 | x)", ylim=(-0.1, 1.1))
ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))
plt.show()
