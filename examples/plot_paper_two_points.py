"""
=========================================================
A paper's figure: the posterior of two training points
=========================================================

With two training inputs the posterior over their latent values, p(f1, f2 | y),
is a two-dimensional density that can be computed exactly on a grid and drawn
beside its Gaussian approximations. This is the picture behind the comparison
of Laplace's approximation and expectation propagation (EP) by Kuss and
Rasmussen (2005) and section 3.6 of Rasmussen and Williams (2006).

With a probit likelihood and a large prior variance the exact posterior is
skewed away from the origin. Laplace's Gaussian is centred at the exact
posterior's mode, which lies closer to the origin than its mean, and is
narrower than the exact posterior; EP's matches the exact mean closely and is
wider, nearer the exact spread. Look also at the log evidence: Laplace's is
further below the exact one than EP's.
"""

# %%
# The exact posterior on a grid
# -----------------------------
# The prior is N(0, K) with K = 16 [[1, 0.9], [0.9, 1]]: a signal variance of
# 16 and strongly correlated inputs. For each of two label pairs the
# unnormalised posterior N(f; 0, K) Phi(y1 f1) Phi(y2 f2) is evaluated on a
# grid; its sum times the cell area is the evidence p(y). For the probit the
# evidence also has a closed form, an orthant probability of N(0, K + I), which
# checks the quadrature.
import matplotlib.pyplot as plt
import numpy as np
from scipy.special import log_ndtr, logsumexp
from scipy.stats import multivariate_normal

import gpc

K = 16.0 * np.array([[1.0, 0.9], [0.9, 1.0]])
step = 0.1
f = np.arange(-30.0, 30.0 + step / 2, step)
F1, F2 = np.meshgrid(f, f)
log_prior = multivariate_normal(np.zeros(2), K).logpdf(np.dstack([F1, F2]))

label_pairs = [np.array([1.0, 1.0]), np.array([1.0, -1.0])]
exact = []
for y in label_pairs:
    log_joint = log_prior + log_ndtr(y[0] * F1) + log_ndtr(y[1] * F2)
    log_z = logsumexp(log_joint) + 2 * np.log(step)
    post = np.exp(log_joint - log_z)
    mean = np.array([(post * F1).sum(), (post * F2).sum()]) * step**2
    var = ((post * F1**2).sum() * step**2 - mean[0] ** 2)
    i, j = np.unravel_index(post.argmax(), post.shape)
    mode = np.array([F1[i, j], F2[i, j]])
    rho = y[0] * y[1] * K[0, 1] / np.sqrt((K[0, 0] + 1) * (K[1, 1] + 1))
    closed_form = np.log(0.25 + np.arcsin(rho) / (2 * np.pi))
    exact.append((post, mean, mode))
    print(f"labels {y}: exact log evidence {log_z:.4f} (quadrature), "
          f"{closed_form:.4f} (closed form); mean {mean.round(3)}, "
          f"mode {mode.round(1)}, variance of f1 {var:.3f}")

# %%
# The Gaussian approximations
# ---------------------------
# :func:`gpc.infer` returns each approximate posterior in site form: mean
# ``K @ alpha`` and covariance ``K - K A K`` with ``A = (K + W^-1)^-1``, which
# ``woodbury_inverse()`` returns (``latent_mean_and_variance`` gives only the
# diagonal of that covariance).
approx = []
for y in label_pairs:
    approx.append({})
    for method in ["laplace", "ep"]:
        res = gpc.infer(K, y, method=method, likelihood="probit")
        mean = K @ res.posterior.alpha
        cov = K - K @ res.posterior.woodbury_inverse() @ K
        approx[-1][method] = (mean, cov)
        print(f"labels {y}, {method:>7}: log evidence {res.log_evidence:.4f}, "
              f"mean {mean.round(3)}, variance of f1 {cov[0, 0]:.3f}")

# %%
# The figure
# ----------
# Grey: the exact posterior density. Ellipses: the contours two standard
# deviations from each Gaussian approximation's mean, drawn as a circle.
angle = np.linspace(0, 2 * np.pi, 200)
circle = 2 * np.array([np.cos(angle), np.sin(angle)])
fig, axes = plt.subplots(1, 2, figsize=(11, 5), layout="constrained")
for ax, y, (post, mean, mode), gauss, lim in zip(
        axes, label_pairs, exact, approx, [(-5, 13), (-5, 5)]):
    ax.contourf(F1, F2, post, levels=post.max() * np.linspace(0.05, 1, 8),
                cmap="Greys")
    for (method, (m, cov)), colour in zip(gauss.items(), ["tab:red", "tab:blue"]):
        ellipse = m[:, None] + np.linalg.cholesky(cov) @ circle
        ax.fill(*ellipse, fill=False, ec=colour, lw=2,
                label=f"{method}: mean and 2 sd")
        ax.plot(*m, "o", ms=10, mfc="none", mew=2, color=colour)
    ax.plot(*mean, "P", ms=11, mfc="w", mec="k", label="exact mean")
    ax.plot(*mode, "X", ms=9, mfc="w", mec="k", label="exact mode")
    ax.axhline(0, color="0.7", lw=0.8)
    ax.axvline(0, color="0.7", lw=0.8)
    ax.set(xlim=lim, ylim=lim, aspect="equal", xlabel="$f_1$", ylabel="$f_2$",
           title=f"labels $y_1 = {y[0]:+.0f}$, $y_2 = {y[1]:+.0f}$")
    ax.legend(loc="upper left", fontsize="small")
plt.show()
