"""
======================================================================
A paper's figure: lower and upper variational bounds (Gibbs & MacKay)
======================================================================

Gibbs and MacKay's variational Gaussian process classifier bounds the logistic
likelihood from below and from above, which bounds the evidence from both sides.
Their 1-D toy problem has a sharp transition on the left and a gentle one on the
right: the class probability is 0 below 13, 1 from 13 to 29, then falls linearly
to 0 at 43. As in their figure we learn ``C * RBF`` by maximising the lower bound
(``method="vb"``) and draw the predictive probabilities of the lower bound's
posterior and of the upper bound's (:class:`gpc.bounds.UpperBound`),
with MacKay's approximation of the predictive integral.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

import gpc
from gpc.bounds import UpperBound

rng = np.random.RandomState(0)
x = np.sort(rng.uniform(5, 50, 60))
p_true = np.where(x < 13, 0.0, np.where(x < 29, 1.0, np.clip((43 - x) / 14, 0, 1)))
y = (rng.uniform(size=60) < p_true).astype(int)

# %%
# The lower bound is maximised over the hyperparameters; the upper bound is then
# minimised over its own variational parameters at those hyperparameters.
mackay = gpc.likelihoods.Logit(predictive="mackay")
clf = gpc.GaussianProcessClassifier(C(1.0) * RBF(5.0), method="vb",
                                    likelihood=mackay).fit(x[:, None], y)
upper = UpperBound(clf)
print(f"kernel {clf.kernel_}")
print(f"log evidence between {clf.log_marginal_likelihood_value_:.3f} (lower bound) "
      f"and {upper.log_evidence:.3f} (upper bound)")

# %%
# Far from the data both return to 1/2; over the data the lower bound's posterior
# is the more confident of the two.
grid = np.linspace(-50, 110, 641)[:, None]
lower_p = clf.predict_proba(grid)[:, 1]
upper_p = upper.predict_proba(grid)[:, 1]
fig, ax = plt.subplots(figsize=(8, 3.8))
ax.plot(grid[:, 0], lower_p, label="lower bound's posterior")
ax.plot(grid[:, 0], upper_p, label="upper bound's posterior")
ax.plot(np.sort(x), p_true, "k--", lw=1, label="true p(y = 1 | x)")
ax.plot(x, y, "k.", ms=5, label="labels")
ax.set(xlabel="x", ylabel="p(y = 1 | x)", title="Gibbs & MacKay's 1-D toy problem")
ax.legend(fontsize=8, loc="center right")
fig.tight_layout()
plt.show()
