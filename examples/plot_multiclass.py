"""
===============================================
Three classes: one joint model or one-vs-rest
===============================================

With more than two classes, ``multi_class="one_vs_rest"`` (scikit-learn's way)
fits one binary model per class and normalises their probabilities, while
``multi_class="multinomial"`` fits one joint model: a latent function per class
and one evidence for all of them, with the softmax likelihood (Laplace, vb) or
the multinomial probit (nested EP). We fit them on three overlapping 2-D
classes, each learning ``C * RBF`` by its own evidence, and draw each model's
probabilities as colours (red, green and blue for the three classes; pale where
the model is unsure).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_blobs
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.metrics import accuracy_score, log_loss

import gpc

X, y = make_blobs(n_samples=450, centers=[[-1.5, 0], [1.5, 0], [0, 2.2]],
                  cluster_std=1.0, random_state=0)
X_train, y_train, X_test, y_test = X[:150], y[:150], X[150:], y[150:]

models = {
    "one-vs-rest (Laplace)": gpc.GaussianProcessClassifier(C(1.0) * RBF(1.0)),
    "multinomial, Laplace": gpc.GaussianProcessClassifier(
        C(1.0) * RBF(1.0), multi_class="multinomial"),
    "multinomial, vb": gpc.GaussianProcessClassifier(
        C(1.0) * RBF(1.0), multi_class="multinomial", method="vb"),
    "multinomial probit, EP": gpc.GaussianProcessClassifier(
        C(1.0) * RBF(1.0), multi_class="multinomial", method="ep",
        likelihood="probit"),
}
for name, clf in models.items():
    clf.fit(X_train, y_train)
    p = clf.predict_proba(X_test)
    print(f"{name:24s} test log loss {log_loss(y_test, p):.3f}, accuracy "
          f"{accuracy_score(y_test, clf.predict(X_test)):.3f}, kernel {clf.kernel_}")

# %%
# The joint model's latent predictive at a test point is a C-dimensional Gaussian:
# ``latent_mean_and_variance`` returns means of shape (m, C) and covariances of
# shape (m, C, C).
mean, cov = models["multinomial probit, EP"].latent_mean_and_variance(X_test[:1])
print("latent mean at the first test point:", np.round(mean[0], 2))
print("latent standard deviations:", np.round(np.sqrt(np.diag(cov[0])), 2))

# %%
# Each pixel's colour mixes red, green and blue by the three class probabilities.
g0, g1 = np.linspace(-5, 5, 50), np.linspace(-3.5, 6, 50)
G = np.array(np.meshgrid(g0, g1)).reshape(2, -1).T
colours = np.array([[0.85, 0.2, 0.2], [0.2, 0.65, 0.2], [0.2, 0.3, 0.9]])
fig, axes = plt.subplots(1, 4, figsize=(16, 4.2), sharey=True)
for ax, (name, clf) in zip(axes, models.items()):
    P = clf.predict_proba(G)
    ax.imshow((P @ colours).reshape(len(g1), len(g0), 3), origin="lower",
              extent=(g0[0], g0[-1], g1[0], g1[-1]), aspect="auto")
    ax.scatter(X_train[:, 0], X_train[:, 1], c=colours[y_train], edgecolor="k", s=18)
    ax.set(title=name, xlabel="$x_1$")
axes[0].set_ylabel("$x_2$")
fig.tight_layout()
plt.show()
