"""
=====================================================
The K-level API: gpc with a covariance of your own
=====================================================

:func:`gpc.infer` takes a covariance matrix and labels and returns the posterior,
the log evidence and its derivative ``dK`` with respect to the matrix. Whatever
produced the matrix (here a periodic covariance written in a few lines of NumPy,
in a library that would be its own kernel code) gets the evidence gradient of
its parameters from one elementwise product per parameter:
``d log Z / dt = sum(dK * dK/dt)``. We learn a period this way with SciPy's
optimiser, warm-starting each inference from the previous one.
"""

import matplotlib.pyplot as plt
import numpy as np
from scipy.optimize import minimize

import gpc

rng = np.random.default_rng(1)
x = np.sort(rng.uniform(0, 10, 80))
y = np.where(np.sin(2 * np.pi * x / 2.5) + 0.4 * rng.normal(size=80) > 0, 1, -1)


def periodic(theta, a, b):
    """``s2 exp(-2 sin^2(pi |a - b| / p) / l^2)`` and its derivatives in the log
    parameters theta = (log s2, log p, log l)."""
    s2, p, ell = np.exp(theta)
    r = np.pi * np.abs(a[:, None] - b[None, :]) / p
    S = np.sin(r) ** 2
    K = s2 * np.exp(-2 * S / ell ** 2)
    dS_dlogp = -2 * np.sin(r) * np.cos(r) * r          # d sin^2(r) / d log p
    return K, [K, K * (-2 / ell ** 2) * dS_dlogp, K * 4 * S / ell ** 2]


state = {}


def objective(theta):
    """Negative log evidence (EP, probit) and its gradient, warm-started."""
    K, dK_dtheta = periodic(theta, x, x)
    res = gpc.infer(K, y, method="ep", likelihood="probit", init=state.get("ep"))
    state["ep"] = res.state
    return -res.log_evidence, -np.array([np.sum(res.dK * D) for D in dK_dtheta])


# %%
# Check the gradient against central differences.
theta0 = np.log([1.0, 2.0, 1.0])
_, grad = objective(theta0)
h = 1e-5
fd = [(objective(theta0 + h * e)[0] - objective(theta0 - h * e)[0]) / (2 * h)
      for e in np.eye(3)]
print("gradient:          ", np.round(grad, 6))
print("finite differences:", np.round(fd, 6))

# %%
# The evidence of a period has a narrow peak at the true period (and others at its
# multiples), so a gradient method needs a start inside it: scan the period on a
# grid first (each inference warm-started from its neighbour's), then optimise
# all three parameters from the best point.
periods = np.linspace(1.0, 4.0, 150)
evidence = [-objective(np.log([1.0, p, 1.0]))[0] for p in periods]
best = periods[np.argmax(evidence)]
bounds = np.log([(0.01, 100.0), (1.0, 4.0), (0.1, 10.0)])
fit = minimize(objective, np.log([1.0, best, 1.0]), jac=True, method="L-BFGS-B",
               bounds=bounds)
s2, period, ell = np.exp(fit.x)
print(f"best period on the grid {best:.3f}; learnt period {period:.3f} (true 2.5), "
      f"signal variance {s2:.2f}, length scale {ell:.2f}; log evidence {-fit.fun:.2f}")

# %%
# The evidence over the period (signal variance and length scale 1) and the
# predictive probability of the learnt model, from ``result.posterior``.
K, _ = periodic(fit.x, x, x)
res = gpc.infer(K, y, method="ep", likelihood="probit")
xs = np.linspace(0, 10, 400)
K_cross, _ = periodic(fit.x, x, xs)
prob = res.posterior.predict_proba(K_cross, np.full(len(xs), s2), "probit")

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
ax1.plot(periods, evidence)
ax1.axvline(period, color="k", ls="--", label=f"learnt period {period:.2f}")
ax1.set(xlabel="period", ylabel="log evidence (EP)",
        title="Evidence over the period (s2 = l = 1)")
ax1.legend()
ax2.plot(xs, prob, label="p(y = +1 | x)")
ax2.scatter(x, (y + 1) / 2, c=y, cmap="coolwarm", edgecolor="k", s=20, label="labels")
ax2.set(xlabel="x", ylabel="probability", title="Predictive of the learnt model")
ax2.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2)
fig.tight_layout()
plt.show()
