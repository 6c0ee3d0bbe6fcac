"""
==============================================
Calibration of Laplace, EP and scikit-learn
==============================================

A classifier's probabilities are calibrated when, among the inputs given
probability p, a fraction p belongs to the positive class. This example draws
the reliability diagram of three Gaussian process classifiers on the Pima
Indians diabetes data (200 training and 332 test cases): gpc with its default
Laplace approximation and logit likelihood, gpc with expectation propagation
(EP) and the probit likelihood, and scikit-learn's
:class:`~sklearn.gaussian_process.GaussianProcessClassifier`.

Look for two things: gpc's default reproduces scikit-learn's classifier (the
same hyperparameters, evidence and probabilities: scikit-learn's curve lies on
gpc Laplace's), and the three classifiers are about equally well calibrated on
this small test set, their curves close to each other and to the diagonal
except in the sparsely filled bins of high probability; EP's test log loss and
Brier score are a little lower.
"""

# %%
# Data and classifiers
# --------------------
# Each classifier learns the signal variance and length scale of
# ``C(1.0) * RBF(1.0)`` by maximising its own approximate evidence.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.calibration import calibration_curve
from sklearn.gaussian_process import GaussianProcessClassifier as SklearnGPC
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.metrics import brier_score_loss, log_loss

import gpc
from gpc.datasets import load_pima

X_train, y_train, X_test, y_test = load_pima()
mean, std = X_train.mean(axis=0), X_train.std(axis=0)
X_train, X_test = (X_train - mean) / std, (X_test - mean) / std

models = {
    "gpc, Laplace (logit)": gpc.GaussianProcessClassifier(C(1.0) * RBF(1.0)),
    "gpc, EP (probit)": gpc.GaussianProcessClassifier(
        C(1.0) * RBF(1.0), method="ep", likelihood="probit"),
    "scikit-learn (Laplace, logit)": SklearnGPC(C(1.0) * RBF(1.0)),
}
proba = {}
for name, model in models.items():
    model.fit(X_train, y_train)
    proba[name] = model.predict_proba(X_test)[:, 1]
    print(f"{name:>30}: {model.kernel_}, log evidence "
          f"{model.log_marginal_likelihood_value_:.3f}, test log loss "
          f"{log_loss(y_test, proba[name]):.4f}, Brier score "
          f"{brier_score_loss(y_test, proba[name]):.4f}")

# %%
# Reliability diagram and histogram
# ---------------------------------
# ``calibration_curve`` sorts the test cases into ten equal-width bins of
# predicted probability and returns each bin's mean prediction and observed
# fraction of positives. With 332 test cases, the sparsely filled bins at high
# probabilities (see the histogram) are noisy.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.6), layout="constrained")
ax1.plot([0, 1], [0, 1], "k:", label="perfectly calibrated")
styles = {"gpc, Laplace (logit)": "o-", "gpc, EP (probit)": "s-",
          "scikit-learn (Laplace, logit)": "x--"}
for name, p in proba.items():
    frac_pos, mean_pred = calibration_curve(y_test, p, n_bins=10)
    ax1.plot(mean_pred, frac_pos, styles[name], label=name)
ax1.set(xlabel="mean predicted probability", ylabel="fraction of positives",
        title="Reliability diagram (test set)")
ax1.legend(loc="upper left")

ax2.hist(list(proba.values()), bins=np.linspace(0, 1, 11), label=list(proba))
ax2.set(xlabel="predicted probability", ylabel="number of test cases",
        title="Predicted probabilities")
ax2.legend()
plt.show()
