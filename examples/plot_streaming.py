"""
=========================================
Streaming data with the sparse online GP
=========================================

Examples arrive in batches and are seen once. The sparse online Gaussian process
of Csató and Opper (``SparseGPClassifier(method="adf")``) updates its posterior
with each example and keeps it on at most ``max_basis`` basis vectors, so its
memory stays fixed however long the stream runs. We follow the test log loss as
the stream goes on, against a full Gaussian process fitted on all the data at
once, and draw where the basis vectors ended up.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.metrics import log_loss

import gpc


def sample(n, rng):
    """Two classes separated by a wavy boundary, with 10 % of labels flipped."""
    X = rng.uniform(-3, 3, size=(n, 2))
    y = (X[:, 1] > np.sin(1.5 * X[:, 0])).astype(int)
    flip = rng.random(n) < 0.1
    return X, np.where(flip, 1 - y, y)


rng = np.random.default_rng(0)
X_test, y_test = sample(2000, rng)
kernel = C(4.0) * RBF(1.0)          # fixed hyperparameters: the stream only updates f

# %%
# The stream: 20 batches of 100 examples, one ``partial_fit`` each.
stream = gpc.SparseGPClassifier(kernel, method="adf", max_basis=40,
                                optimizer=None, likelihood="probit")
seen, losses, X_all, y_all = [], [], [], []
for batch in range(20):
    X, y = sample(100, rng)
    stream.partial_fit(X, y, classes=[0, 1])
    X_all.append(X)
    y_all.append(y)
    seen.append(100 * (batch + 1))
    losses.append(log_loss(y_test, stream.predict_proba(X_test)))
print(f"after {seen[-1]} examples: test log loss {losses[-1]:.3f}, "
      f"{stream.n_basis_} basis vectors")

# %%
# The full Gaussian process on the same 2000 examples (EP, the same fixed kernel).
X_all, y_all = np.vstack(X_all), np.concatenate(y_all)
full = gpc.GaussianProcessClassifier(kernel, method="ep", likelihood="probit",
                                     optimizer=None).fit(X_all, y_all)
full_loss = log_loss(y_test, full.predict_proba(X_test))
print(f"full GP on all {len(y_all)} examples: test log loss {full_loss:.3f}")

# %%
# Left: the stream's test log loss approaches the full GP's. Right: the final
# predictive probability, and the basis vectors that carry it.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
ax1.plot(seen, losses, "o-", label="sparse online GP (40 basis vectors)")
ax1.axhline(full_loss, color="k", ls="--", label="full GP, all data at once")
ax1.set(xlabel="examples seen", ylabel="test log loss", title="Learning from a stream")
ax1.legend()

g = np.linspace(-3, 3, 120)
G = np.array(np.meshgrid(g, g)).reshape(2, -1).T
p = stream.predict_proba(G)[:, 1].reshape(len(g), len(g))
im = ax2.contourf(g, g, p, levels=np.linspace(0, 1, 11), cmap="RdBu_r")
ax2.plot(g, np.sin(1.5 * g), "k--", lw=1, label="true boundary")
bv = stream.basis_vectors_
ax2.scatter(bv[:, 0], bv[:, 1], c="yellow", edgecolor="k", s=40,
            label="basis vectors")
ax2.set(xlabel="$x_1$", ylabel="$x_2$", title="p(y = 1 | x) after the stream")
ax2.legend(loc="lower left", fontsize=8)
fig.colorbar(im, ax=ax2)
fig.tight_layout()
plt.show()
