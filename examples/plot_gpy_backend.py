"""
=====================================
gpc as the engine of a GPy model
=====================================

:class:`gpc.backends.gpy.GPCInference` is an inference method that GPy's models
accept (``pip install "gpc[gpy]"``). The model keeps GPy's kernels, parameter
handling and optimiser; each evaluation of its log likelihood and gradient runs
gpc's compiled EP instead of GPy's own. We build the same model twice, once with
GPy's expectation propagation and once with gpc's, compare their log likelihoods
and gradients, time one evaluation of each, and optimise the gpc-backed model.
"""

import time

import GPy
import matplotlib.pyplot as plt
import numpy as np
from GPy.inference.latent_function_inference.expectation_propagation import EP

from gpc.backends.gpy import GPCInference

rng = np.random.default_rng(0)
X = rng.uniform(-3, 3, size=(200, 1))
Y = (np.sin(2 * X) + 0.5 * rng.normal(size=X.shape) > 0).astype(float)


def model(inference):
    kernel = GPy.kern.RBF(1, variance=2.0, lengthscale=0.5)
    return GPy.core.GP(X, Y, kernel, GPy.likelihoods.Bernoulli(),
                       inference_method=inference)


# %%
# The same model, two inference engines. GPy's EP runs in its ``nested`` mode to a
# tight tolerance so that both reach the fixed point. Then one evaluation of each
# model is timed (``parameters_changed``: the kernel matrix, EP from the prior,
# the gradient), with a fresh inference object so that neither warm-starts.
theirs = model(EP(ep_mode="nested", epsilon=1e-12, max_iters=1000))
ours = model(GPCInference("ep", {"tol": 1e-10}))
print(f"log likelihood: GPy's EP {theirs.log_likelihood():.8f}, "
      f"gpc's {ours.log_likelihood():.8f}")
print("gradient (variance, length scale): GPy's", np.round(theirs.gradient, 6),
      "gpc's", np.round(ours.gradient, 6))


def seconds(m, inference):
    m.inference_method = inference
    t0 = time.perf_counter()
    m.parameters_changed()
    return time.perf_counter() - t0


t_gpy = seconds(theirs, EP(ep_mode="nested"))
t_gpc = seconds(ours, GPCInference("ep", warm_start=False))
print(f"one evaluation at the default tolerances: GPy's EP {t_gpy:.3f} s, "
      f"gpc's {t_gpc:.3f} s")

# %%
# GPy's optimiser, gpc's inference: each evaluation warm-starts from the last.
ours.optimize()
print(f"optimised: variance {float(ours.kern.variance[0]):.2f}, length scale "
      f"{float(ours.kern.lengthscale[0]):.2f}, log likelihood "
      f"{ours.log_likelihood():.3f}")

# %%
# GPy's predictions and plots work unchanged.
xs = np.linspace(-3, 3, 300)[:, None]
p = ours.predict(xs)[0][:, 0]
mean, var = ours.predict_noiseless(xs)
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
ax1.plot(xs, p, label="p(y = 1 | x), gpc's EP in GPy")
ax1.scatter(X, Y, s=8, c="k", alpha=0.4, label="labels")
ax1.set(xlabel="x", ylabel="probability", title="Predictive probability")
ax1.legend(loc="center right", fontsize=8)
sd = np.sqrt(var[:, 0])
ax2.plot(xs, mean[:, 0], label="latent mean")
ax2.fill_between(xs[:, 0], mean[:, 0] - 2 * sd, mean[:, 0] + 2 * sd, alpha=0.3,
                 label="2 standard deviations")
ax2.set(xlabel="x", ylabel="f(x)", title="Latent function")
ax2.legend(loc="lower left")
fig.tight_layout()
plt.show()
