"""Exact (MCMC) posterior predictive of the joint multinomial GP on wine or digits,
at the hyperparameters learnt by Laplace's approximation and by the variational bound,
against those approximations' own ``predict_proba``; or, with ``--model probit``,
of the multinomial probit model at the hyperparameters learnt by nested EP,
against EP's ``predict_proba``.

Question: at Laplace's learnt hyperparameters (signal variance ~800, length ~10),
is the joint softmax model itself fine and only Laplace's Gaussian approximation
of the posterior underconfident?  And with ``--model probit``: how far is EP's
predictive from the exact one of its model, and how much of the gap is EP's
Gaussian posterior and how much the nested-EP predictive integral?

Protocol:

* data: scikit-learn's wine (178 cases, 13 inputs, 3 classes), stratified
  ``--folds``-fold CV (shuffled, seed 0), inputs standardised with the training
  fold's statistics (``_common.standardise``), exactly as
  ``bench/bench_multinomial.py``;
* or, with ``--data digits``: scikit-learn's digits (10 classes, 64 inputs), the
  one split of ``bench/bench_real_data.py``'s ``problem("digits", 700)`` (the
  first 700 cases train, the next 300 test, standardised), kernel
  ``1.0 * RBF(1.0)`` (gpc's start; its hyperparameters learnt), no CV folds;
  methods "laplace" by default;
* per fold, ``gpc.GaussianProcessClassifier(C(1) * RBF(sqrt(d)),
  multi_class="multinomial")`` with method "laplace" and, separately, "vb"
  (Bohning's bound); each fit's learnt ``kernel_`` (shared by the classes) fixes
  K on the training inputs;
* exact posterior ``p(F | y) ∝ prod_i softmax(F[:, i])[y_i] prod_c N(F_c; 0, K)``
  (C x n latent values) sampled by elliptical slice sampling (Murray, Adams &
  MacKay 2010) in the prior's whitened coordinates ``v_c = L^{-1} F_c``
  (``L L' = K``; jitter only if the Cholesky factorisation fails), with the
  ellipses centred on a Gaussian reference q, Laplace's approximation at the same
  hyperparameters (mode from ``gpc.infer(K, y, likelihood="softmax")``, whitened
  precision ``I + L_b' W L_b``, W the block softmax Hessian at the mode, built
  densely, Cn x Cn), the slice taken under ``p(y | F) N(F; 0, K) / q(F)`` (the
  target is unchanged); ``--chains`` independent chains started from q,
  ``--burn-in`` steps discarded, then ``--samples`` kept states per chain
  (every ``--thin``-th step);
* predictive at the test points: for each kept state,
  ``f*_c | F ~ N(k*' K^{-1} F_c, k** - k*' K^{-1} k*)`` independently per class;
  ``E[softmax(f*)]`` per state by ``--inner`` fresh Monte Carlo draws (the
  estimate) and, for the diagnostics, by 64 common draws per test point (a
  deterministic function of F); the predictive is the average over all states;
* diagnostics: rank-normalised split R-hat and bulk effective sample size
  (Vehtari et al. 2021) of the per-state class probabilities at every test point
  and of ``log p(y | F)``, across chains: the largest R-hat and the smallest ESS;
  the Monte Carlo standard error of the log loss from the spread of the chains'
  estimates (delta method);
* sanity check: the Laplace Gaussian itself pushed through the same predictive
  code (independent draws of F from q) against ``predict_proba`` (largest
  absolute difference, beside its largest Monte Carlo standard error), and the
  test latent mean and covariance it implies against
  ``latent_mean_and_variance`` (largest difference);
* scores: test log loss (probabilities clipped to [1e-15, 1 - 1e-15] as
  ``sklearn.metrics.log_loss``), per fold and pooled over all test cases; for
  reference also gpc's one-vs-rest Laplace model (its own learnt kernels);
* validation (before the folds): n = 2 training points, C = 3, one test point,
  the sampler's posterior mean of F and predictive against brute-force
  importance sampling from the prior (``--validate-draws`` draws).

With ``--model probit`` (wine only; method "ep"), the same protocol for the
multinomial probit model ``p(y = c | f) = E_u[prod_{j != c} Phi(u + f_c - f_j)]``:

* per fold, ``gpc.GaussianProcessClassifier(C(1) * RBF(sqrt(d)),
  multi_class="multinomial", method="ep", likelihood="probit")`` (nested EP,
  the kernel shared by the classes) fixes K;
* the sampler's target ``p(y | F) N(F; 0, K)`` with ``log p(y | F)`` of
  ``MultinomialProbit.log_lik`` (all chains' states in one call), the ellipses
  centred on EP's Gaussian at the same hyperparameters (``gpc.infer(K, y,
  method="ep", likelihood="multinomial_probit")`` from zero sites): mean EP's,
  whitened precision ``I + L_b' Pi L_b`` with Pi block-diagonal of the sites' C x C
  precisions ``D - d d' / sum(d)`` (``outer_sites``), built densely;
* predictive per kept state exactly, not by f* draws: ``f*_c | F ~ N(m_c, s2)``
  independently with one s2 for all classes, and the probit's noises are
  independent standard normals, so ``f*_c + e_c = m_c + sqrt(1 + s2) e'_c`` and
  ``E[p(y* = c | f*) | F] = p(y* = c | m / sqrt(1 + s2))`` (``MultinomialProbit.
  log_lik``, its integral over u by adaptive Gauss-Hermite); ``--inner`` unused, the
  R-hat / ESS on these probabilities;
* sanity check: EP's test latent Gaussian integrated exactly against the probit
  (C = 3: a bivariate normal orthant probability by 1-D adaptive quadrature,
  ``probit_gaussian_predictive``) against ``predict_proba``, which approximates
  the same integral by nested EP (``MultinomialProbit.predict``), and EP's Gaussian
  through the sampler's predictive code (draws of F from it, the exact integral
  over f* | F each) against that exact integral; the test log losses of all
  three reported, so that EP's gap to the exact predictive splits into the
  posterior approximation's part (the Gaussian's exact integral against MCMC)
  and the predictive integral's (``predict_proba`` against the exact integral);
* validation: also at signal variance 1e5, ``p(y | f)`` of the brute-force draws
  (training and test points) by ``MultinomialProbit.log_lik`` of the drawn f
  (independent of the closed form above);
* report: ``bench/results/multinomial_exact_probit.md`` by default.

Usage::

    python bench/multinomial_exact.py --folds 5 --samples 2500 \\
        --write bench/results/multinomial_exact.md
    python bench/multinomial_exact.py --data digits --skip-validation \\
        --write bench/results/multinomial_exact_digits.md
    python bench/multinomial_exact.py --model probit --folds 5 --burn-in 1000 \\
        --samples 1500 --thin 5 --write bench/results/multinomial_exact_probit.md
"""

import argparse
import math
import os
import sys
import time
import warnings

import numpy as np
from _common import RESULTS, footer, publish, standardise
from scipy.linalg import cho_solve, cholesky, solve_triangular
from scipy.special import log_softmax, logsumexp, softmax
from scipy.stats import norm, rankdata
from sklearn.datasets import load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.model_selection import StratifiedKFold

import gpc
from gpc.likelihoods import MultinomialProbit, Softmax
from gpc.likelihoods._multinomial_probit import outer_sites

JITTERS = (0.0, 1e-10, 1e-8, 1e-6)


def _kernel(d):
    return C(1.0) * RBF(np.sqrt(d))


def _log_loss(proba, y):
    p = np.clip(proba[np.arange(len(y)), y], 1e-15, 1 - 1e-15)
    return -np.log(p)


def chol_jitter(K):
    """(lower Cholesky factor of K + jitter I, jitter), jitter only if needed."""
    scale = float(np.mean(np.diag(K)))
    for rel in JITTERS:
        try:
            L = cholesky(K + rel * scale * np.eye(len(K)), lower=True)
            return L, rel * scale
        except np.linalg.LinAlgError:
            continue
    raise np.linalg.LinAlgError("K not positive definite even with jitter")


# ---------------------------------------------------------------------------------
# the model in whitened coordinates: v (C, n), F_c = L v_c
# ---------------------------------------------------------------------------------

class Problem:
    """Softmax (``model="softmax"``) or multinomial probit (``model="probit"``) GP
    posterior at fixed K (shared by the C classes) with a Gaussian reference q =
    N(mu, P^{-1}) in whitened coordinates (vectors of length C n, class-major):
    Laplace's approximation of the softmax model, EP's of the probit model."""

    def __init__(self, K, y, n_classes, reference="laplace", model="softmax"):
        self.K = np.asarray(K, dtype=np.float64)
        self.y = np.asarray(y)
        self.C = n_classes
        self.n = len(y)
        self.model = model
        self.L, self.jitter = chol_jitter(self.K)
        if model == "softmax":
            res = gpc.infer(self.K, self.y, likelihood=Softmax(n_classes=n_classes),
                            method="laplace")
            F = np.asarray(res.posterior.marginal_mean).T         # (C, n) the mode
            d = softmax(F, axis=0)                                # W = diag(pi) - pi pi'
        else:
            self.lik = MultinomialProbit(n_classes=n_classes)
            res = gpc.infer(self.K, self.y, likelihood=self.lik, method="ep")
            F = np.asarray(res.posterior.marginal_mean).T         # (C, n) EP's mean
            # EP's site precision per point: W = D - d d' / sum(d)
            d = outer_sites(self.y, res.state["tau"], res.state["nu"])[0]
        self.approx = res
        alpha = np.asarray(res.posterior.alpha)                   # (C, n)
        self.mode = F
        mu = self.L.T @ alpha.T                                   # (n, C) = L^{-1} K alpha
        self.mu = mu.T.reshape(-1)                                # (C n,)
        n, Cc = self.n, self.C
        P = np.eye(Cc * n)
        L = self.L
        dsum = d.sum(axis=0)                                      # 1 for the softmax
        for c in range(Cc):
            for e in range(Cc):
                w = (d[c] if c == e else 0.0) - d[c] * d[e] / dsum   # (n,)
                P[c * n:(c + 1) * n, e * n:(e + 1) * n] += L.T @ (w[:, None] * L)
        P = 0.5 * (P + P.T)
        self.G = cholesky(P, lower=True)                          # P = G G'
        if reference == "prior":                                  # plain ESS
            self.mu = np.zeros_like(self.mu)
            self.G = np.eye(Cc * n)
        self.Y = np.zeros((Cc, n))
        self.Y[self.y, np.arange(n)] = 1.0

    # F (C n, c) from v (C n, c)
    def f_of_v(self, V):
        n, Cc = self.n, self.C
        out = np.empty_like(V)
        for c in range(Cc):
            out[c * n:(c + 1) * n] = self.L @ V[c * n:(c + 1) * n]
        return out

    def log_lik(self, Fs):
        """log p(y | F) of states Fs (C n, c)."""
        n, Cc = self.n, self.C
        F3 = Fs.reshape(Cc, n, -1)
        if self.model == "probit":                  # all states in one call
            k = F3.shape[2]
            return self.lik.log_lik(np.repeat(self.y, k),
                                    F3.reshape(Cc, n * k)).reshape(n, k).sum(0)
        return (np.einsum("cn,cnk->k", self.Y, F3) - logsumexp(F3, axis=0).sum(0))

    def draw_q(self, c, rng):
        """c whitened states v from q, shape (C n, c)."""
        W = rng.standard_normal((self.C * self.n, c))
        return self.mu[:, None] + solve_triangular(self.G, W, lower=True, trans="T")


def ess_run(prob, n_chains, burn_in, n_keep, thin, rng, verbose=False, recompute_every=1):
    """Elliptical slice sampling of p(v | y) around q; returns (v samples
    (chains, kept, C n), log-lik (chains, kept), evaluations per step).

    h = G' x is recomputed from x every ``recompute_every`` steps (every step by
    default); in between it is carried along the accepted ellipse point,
    h cos + w sin (G' d = w), which saves one Cn x Cn product per step."""
    mu = prob.mu[:, None]
    fmean = prob.f_of_v(mu)
    X = prob.draw_q(n_chains, rng) - mu                     # x = v - mu
    D = X.shape[0]

    def r_of(Fx, Xv, H):
        ll = prob.log_lik(fmean + Fx)
        V = mu + Xv
        return ll - 0.5 * np.einsum("ij,ij->j", V, V) + 0.5 * np.einsum("ij,ij->j", H, H), ll

    samples = np.empty((n_chains, n_keep, D))
    lls = np.empty((n_chains, n_keep))
    n_steps = burn_in + n_keep * thin
    evals = 0
    kept = 0
    t0 = time.perf_counter()
    H = None
    for s in range(1, n_steps + 1):
        if H is None or (s - 1) % recompute_every == 0:
            H = prob.G.T @ X                                # h = G' x, (v-mu)'P(v-mu) = |h|^2
        FX = prob.f_of_v(X)
        r, _ = r_of(FX, X, H)
        Wd = rng.standard_normal((D, n_chains))
        Dd = solve_triangular(prob.G, Wd, lower=True, trans="T")   # d ~ N(0, P^{-1})
        FD = prob.f_of_v(Dd)
        level = r + np.log(rng.random(n_chains))
        theta = rng.random(n_chains) * 2 * math.pi
        lo, hi = theta - 2 * math.pi, theta.copy()
        acc = np.zeros(n_chains)
        todo = np.arange(n_chains)
        while todo.size:
            th = theta[todo]
            cs, sn = np.cos(th), np.sin(th)
            rp, _ = r_of(FX[:, todo] * cs + FD[:, todo] * sn,
                         X[:, todo] * cs + Dd[:, todo] * sn,
                         H[:, todo] * cs + Wd[:, todo] * sn)
            evals += todo.size
            ok = rp > level[todo]
            acc[todo[ok]] = th[ok]
            rej, t = todo[~ok], th[~ok]
            neg = t < 0
            lo[rej[neg]] = t[neg]
            hi[rej[~neg]] = t[~neg]
            rej = rej[(hi[rej] - lo[rej]) > 1e-12]      # else keep the state (angle 0)
            theta[rej] = lo[rej] + rng.random(rej.size) * (hi[rej] - lo[rej])
            todo = rej
        X = X * np.cos(acc) + Dd * np.sin(acc)
        if recompute_every > 1:
            H = H * np.cos(acc) + Wd * np.sin(acc)
        if s > burn_in and (s - burn_in) % thin == 0:
            samples[:, kept] = (mu + X).T
            lls[:, kept] = prob.log_lik(fmean + prob.f_of_v(X))
            kept += 1
        if verbose and s % max(1, n_steps // 5) == 0:
            print(f"    ess step {s}/{n_steps}, {time.perf_counter() - t0:.0f} s, "
                  f"{evals / (s * n_chains):.2f} evals/step", flush=True)
    return samples, lls, evals / (n_steps * n_chains)


# ---------------------------------------------------------------------------------
# predictive
# ---------------------------------------------------------------------------------

class TestSide:
    """Conditional f* | F at m test points: mean A' v_c, variance s2 (shared)."""

    def __init__(self, prob, K_cross, k_diag):
        self.A = solve_triangular(prob.L, K_cross, lower=True)       # (n, m)
        self.s2 = np.maximum(k_diag - np.einsum("ij,ij->j", self.A, self.A), 0.0)
        self.prob = prob
        #: whether :meth:`expected` is exact (a deterministic function of F)
        self.exact = prob.model == "probit"

    def expected(self, M, rng, inner, Z=None):
        """E[p(y* = c | f*)] per state (S, m, C): the softmax's by Monte Carlo
        (:meth:`expected_softmax`), the probit's exactly (:meth:`expected_probit`,
        ``inner`` and Z unused)."""
        if self.exact:
            return self.expected_probit(M)
        return self.expected_softmax(M, rng, inner, Z=Z)

    def expected_probit(self, M, batch=20000):
        """E[p(y* = c | f*)] per state, f* ~ N(M, s2 I), for the multinomial
        probit, exactly: ``f*_c + e_c = M_c + sqrt(1 + s2) e'_c`` with e' standard
        normal, so the expectation is ``p(y* = c | M / sqrt(1 + s2))``
        (``MultinomialProbit.log_lik``, its integral over u by adaptive
        Gauss-Hermite).  M (S, m, C) -> (S, m, C)."""
        S, m, Cc = M.shape
        G = (M / np.sqrt(1.0 + self.s2)[None, :, None]).reshape(S * m, Cc)
        out = np.empty((S * m, Cc))
        lik = self.prob.lik
        for a in range(0, S * m, batch):
            Gt = G[a:a + batch].T                                     # (C, b)
            for c in range(Cc):
                out[a:a + batch, c] = np.exp(lik.log_lik(np.full(Gt.shape[1], c), Gt))
        return out.reshape(S, m, Cc)

    def means(self, V):
        """Test latent means (S, m, C) of whitened states V (S, C n)."""
        n, Cc = self.prob.n, self.prob.C
        V3 = V.reshape(V.shape[0], Cc, n)
        return np.einsum("scn,nm->smc", V3, self.A)

    def expected_softmax(self, M, rng, inner, Z=None, batch=2000):
        """E[softmax(f*)] per state, f* ~ N(M, s2 I): (S, m, C).  With Z (inner, m,
        C) common draws, else fresh ones."""
        S, m, Cc = M.shape
        out = np.empty_like(M)
        sd = np.sqrt(self.s2)[None, :, None]
        for a in range(0, S, batch):
            Mb = M[a:a + batch]
            acc = np.zeros_like(Mb)
            for r in range(inner):
                z = Z[r][None] if Z is not None else rng.standard_normal(Mb.shape)
                acc += softmax(Mb + sd * z, axis=2)
            out[a:a + batch] = acc / inner
        return out


def probit_gaussian_predictive(mean, cov):
    """E[p(y = c | f)] of the multinomial probit for f ~ N(mean, cov), C = 3,
    by 1-D quadrature: class c wins when ``w_j = g_c - g_j > 0`` for both other
    classes j, g = f + e ~ N(mean, cov + I), a bivariate normal orthant
    probability ``int_{t > -a_1 / s_1} phi(t) Phi((a_2 + s_2 rho t) / (s_2 sqrt(1 -
    rho^2))) dt`` (adaptive, absolute tolerance 1e-14).  mean (m, 3), cov (m, 3, 3)
    -> (m, 3)."""
    from scipy.integrate import quad
    from scipy.special import log_ndtr

    m, Cc = mean.shape
    assert Cc == 3, "the orthant integral is for three classes"
    out = np.empty((m, Cc))
    for c in range(Cc):
        A = np.zeros((2, Cc))
        A[:, c] = 1.0
        A[[0, 1], [j for j in range(Cc) if j != c]] = -1.0
        for i in range(m):
            a = A @ mean[i]
            B = A @ (cov[i] + np.eye(Cc)) @ A.T
            s1, s2 = np.sqrt(np.diag(B))
            rho = B[0, 1] / (s1 * s2)
            beta = rho / math.sqrt(1.0 - rho * rho)
            alpha = a[1] / (s2 * math.sqrt(1.0 - rho * rho))
            lo, hi = max(-a[0] / s1, -40.0), 40.0
            if lo >= hi:
                out[i, c] = 0.0
                continue
            step = -alpha / beta if beta != 0 else np.inf      # where Phi switches
            pts = [step] if lo < step < hi else None
            out[i, c] = quad(lambda t: math.exp(-0.5 * t * t + float(log_ndtr(
                alpha + beta * t))) / math.sqrt(2 * math.pi), lo, hi, points=pts,
                epsabs=1e-14, epsrel=1e-10, limit=200)[0]
    return out


# ---------------------------------------------------------------------------------
# diagnostics (Vehtari, Gelman, Simpson, Carpenter & Buerkner 2021)
# ---------------------------------------------------------------------------------

def _split(x):
    """(chains, draws, ...) -> (2 chains, draws // 2, ...)."""
    h = x.shape[1] // 2
    return np.concatenate([x[:, :h], x[:, x.shape[1] - h:]], axis=0)


def _rank_normalise(x):
    M, N = x.shape[:2]
    flat = x.reshape(M * N, -1)
    r = np.apply_along_axis(rankdata, 0, flat)
    return norm.ppf((r - 0.375) / (M * N + 0.25)).reshape(x.shape)


def rhat(x):
    """Rank-normalised split R-hat of every quantity, x (chains, draws, q)."""
    z = _split(_rank_normalise(x))
    M, N = z.shape[:2]
    means = z.mean(1)
    B = N * means.var(0, ddof=1)
    W = z.var(1, ddof=1).mean(0)
    var = (N - 1) / N * W + B / N
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.sqrt(var / W)
    return np.where(W > 0, out, 1.0)


def ess(x):
    """Bulk ESS (rank-normalised, split chains, Geyer's initial monotone sequence)
    of every quantity, x (chains, draws, q)."""
    z = _split(_rank_normalise(x))
    M, N = z.shape[:2]
    zc = z - z.mean(1, keepdims=True)
    nfft = 1 << (2 * N - 1).bit_length()
    f = np.fft.rfft(zc, n=nfft, axis=1)
    acov = np.fft.irfft(f * np.conj(f), n=nfft, axis=1)[:, :N] / N   # (M, N, q)
    W = z.var(1, ddof=1).mean(0)
    var = (N - 1) / N * W + N * z.mean(1).var(0, ddof=1) / N
    out = np.empty(z.shape[2])
    for j in range(z.shape[2]):
        if var[j] <= 0:
            out[j] = M * N
            continue
        rho = 1.0 - (W[j] - acov[:, :, j].mean(0)) / var[j]
        rho[0] = 1.0
        tau, prev = -1.0, np.inf
        for t in range(0, N - 1, 2):
            pair = rho[t] + rho[t + 1]
            if pair < 0:
                break
            pair = min(pair, prev)
            prev = pair
            tau += 2 * pair
        out[j] = M * N / max(tau, 1.0 / math.log10(M * N))
    return out


# ---------------------------------------------------------------------------------
# one fit
# ---------------------------------------------------------------------------------

def _reference_method(args):
    """The approximation whose Gaussian centres the sampler: Laplace's for the
    softmax, EP's for the multinomial probit."""
    return "ep" if args.model == "probit" else "laplace"


def exact_vs_approx(clf, Xtr, ytr, Xte, yte, args, rng, label):
    kern = clf.kernel_
    K = kern(Xtr)
    n_cls = len(clf.classes_)
    assert np.array_equal(clf.classes_, np.arange(n_cls)), "labels must be 0..C-1"
    prob = Problem(K, ytr, n_cls, model=args.model)
    side = TestSide(prob, kern(Xtr, Xte), kern.diag(Xte))
    if args.reference == "prior":
        sampler_prob = Problem(K, ytr, n_cls, reference="prior", model=args.model)
    else:
        sampler_prob = prob
    out = {"variance": kern.k1.constant_value, "length": kern.k2.length_scale,
           "jitter": prob.jitter, "ref_info": prob.approx.info}
    approx = clf.predict_proba(Xte)
    out["approx"] = _log_loss(approx, yte)
    out["y"] = np.asarray(yte)

    # sanity: the reference Gaussian (Laplace's, or EP's for the probit) at these
    # hyperparameters, our code vs gpc
    if clf.method == _reference_method(args):
        lap_mean, lap_cov = clf.latent_mean_and_variance(Xte)
        n, Cc, m = prob.n, n_cls, len(yte)
        Ablk = np.zeros((Cc * n, m * Cc))
        for c in range(Cc):
            Ablk[c * n:(c + 1) * n, c::Cc] = side.A
        Zt = solve_triangular(prob.G, Ablk, lower=True)          # G^{-1} A_b
        cov = (Zt.T @ Zt).reshape(m, Cc, m, Cc)[np.arange(m), :, np.arange(m), :]
        cov = cov + side.s2[:, None, None] * np.eye(Cc)
        mean = side.means(prob.mu[None])[0]
        out["check_moments"] = max(np.abs(mean - lap_mean).max(),
                                   np.abs(cov - lap_cov).max() / max(1.0, np.abs(lap_cov).max()))
        tot, tot2, S = 0.0, 0.0, 0
        for _ in range(args.check_batches):
            V = prob.draw_q(args.check_batch_size, rng).T
            P = side.expected(side.means(V), rng, 1)
            tot, tot2, S = tot + P.sum(0), tot2 + (P ** 2).sum(0), S + len(P)
        mc = tot / S
        out["check_proba"] = np.abs(mc - approx).max()
        se = np.sqrt(np.maximum(tot2 / S - mc ** 2, 0) / S)
        out["check_ll"] = _log_loss(mc, yte)                    # the Gaussian's own
        p_true = mc[np.arange(len(yte)), yte]                  # delta-method s.e.
        out["check_ll_var"] = np.sum((se[np.arange(len(yte)), yte] / p_true) ** 2)
        out["check_se"] = se.max()
        if args.model == "probit":
            # the same code against the Gaussian's exact integral, where the MC
            # s.e. means something: a probability of 1e-6 is a rare draw's
            # contribution, which 5e4 draws see too rarely for their spread to
            # measure the error
            exact = probit_gaussian_predictive(lap_mean, lap_cov)    # gpc's moments
            big = exact >= 1e-3
            out["check_exact"] = _log_loss(exact, yte)
            out["check_vs_exact"] = np.abs(mc - exact).max()
            out["approx_vs_exact"] = np.abs(approx - exact).max()
            out["check_z"] = (np.abs(mc - exact)[big] / np.maximum(se[big], 1e-12)).max()
        else:
            out["check_z"] = (np.abs(mc - approx) / np.maximum(se, 1e-12)).max()
        out["check_n"] = S

    t0 = time.perf_counter()
    V, lls, eps = ess_run(sampler_prob, args.chains, args.burn_in, args.samples, args.thin, rng,
                          verbose=args.verbose, recompute_every=args.recompute_every)
    out["ess_seconds"] = time.perf_counter() - t0
    out["evals_per_step"] = eps
    Mch, Nk = V.shape[:2]
    Mt = side.means(V.reshape(Mch * Nk, -1))                    # (S, m, C)
    P_est = side.expected(Mt, rng, args.inner).reshape(Mch, Nk, len(yte), n_cls)
    if side.exact:                                  # already a function of F
        P_crn = P_est
    else:
        Z = rng.standard_normal((64, len(yte), n_cls))
        P_crn = side.expected(Mt, rng, 64, Z=Z).reshape(Mch, Nk, len(yte), n_cls)
    proba = P_est.mean((0, 1))
    out["exact"] = _log_loss(proba, yte)
    # chain-level estimates of p(y_i) for the log-loss standard error
    pc = P_est.mean(1)[:, np.arange(len(yte)), yte]           # (chains, m)
    p = proba[np.arange(len(yte)), yte]
    out["chain_ratio"] = pc / p                                # delta method pieces
    diag = np.concatenate([P_crn.reshape(Mch, Nk, -1), lls[:, :, None]], axis=2)
    rh, es = rhat(diag), ess(diag)
    out["rhat_max"], out["ess_min"] = float(rh.max()), float(es.min())
    out["rhat_ll"], out["ess_ll"] = float(rh[-1]), float(es[-1])
    out["proba"] = proba
    out["approx_proba"] = approx
    out["mode_ll"] = float(prob.log_lik(prob.mode.reshape(-1, 1))[0])
    out["mean_ll"] = float(lls.mean())
    print(f"  {label}: var {out['variance']:.4g} len {out['length']:.3g}  "
          f"approx {out['approx'].mean():.4f}  exact {out['exact'].mean():.4f}  "
          f"R-hat {out['rhat_max']:.3f}  ESS {out['ess_min']:.0f}  "
          f"{eps:.2f} evals/step  {out['ess_seconds']:.0f} s", flush=True)
    return out


# ---------------------------------------------------------------------------------
# validation on a tiny problem
# ---------------------------------------------------------------------------------

def validate(args, rng):
    """n = 2, C = 3, one test point: sampler vs brute-force importance sampling
    from the prior.  Returns report lines."""
    lines = ["| signal variance | quantity | MCMC | brute force | abs. difference | "
             "MC s.e. (both) |", "|---|---|---|---|---|---|"]
    Xs = np.array([[0.0], [1.0], [0.5]])
    ytr = np.array([0, 1])
    worst_z = 0.0
    # with the probit also the scale of the signal variances EP learns on wine
    for variance in (4.0, 100.0, 800.0) + ((1e5,) if args.model == "probit" else ()):
        Kall = variance * np.exp(-0.5 * (Xs - Xs.T) ** 2 / 1.0 ** 2)
        K, kx, kd = Kall[:2, :2], Kall[:2, 2:], np.diag(Kall)[2:]
        prob = Problem(K, ytr, 3, model=args.model)
        side = TestSide(prob, kx, kd)
        V, _, _ = ess_run(prob, 16, 1000, args.validate_samples, 1, rng)
        Fs = np.stack([prob.f_of_v(v.T).T for v in V])          # (chains, N, C n)
        P = side.expected(side.means(V.reshape(-1, V.shape[2])), rng, 4)
        P = P.reshape(V.shape[0], V.shape[1], 3)
        mc_vals = np.concatenate([Fs.mean(1), P[:, :, :].mean(1)], axis=1)  # per chain
        mc = mc_vals.mean(0)
        mc_se = mc_vals.std(0, ddof=1) / math.sqrt(mc_vals.shape[0])
        # brute force: joint prior over (train, test) for each class, weights p(y|F)
        Lall = cholesky(Kall + 1e-12 * variance * np.eye(3), lower=True)
        tot_w = np.zeros(1)
        acc = np.zeros(9)
        acc2 = []
        chunk = 500_000 if args.model == "softmax" else 100_000
        for _ in range(args.validate_draws // chunk):
            Z = rng.standard_normal((3, 3, chunk))                 # (class, point, draw)
            Fall = np.einsum("ij,cjk->cik", Lall, Z)
            if args.model == "softmax":
                lw = log_softmax(Fall[:, :2], axis=0)[ytr, np.arange(2)].sum(0)
                pstar = softmax(Fall[:, 2], axis=0)
            else:       # p(y | f) at the draws of f themselves (no closed form)
                lik = prob.lik
                lw = sum(lik.log_lik(np.full(chunk, ytr[i]), Fall[:, i])
                         for i in range(2))
                pstar = np.exp([lik.log_lik(np.full(chunk, c), Fall[:, 2])
                                for c in range(3)])
            w = np.exp(lw)
            q = np.concatenate([Fall[:, :2].reshape(6, -1), pstar])
            acc += (q * w).sum(1)
            tot_w += w.sum()
            acc2.append(((q * w).sum(1), w.sum()))
        bf = acc / tot_w
        b = np.array([a for a, _ in acc2]) / np.array([s for _, s in acc2])[:, None]
        bf_se = b.std(0, ddof=1) / math.sqrt(len(b))
        names = [f"E[F_{c}(x_{i})]" for c in range(3) for i in (1, 2)] + \
                [f"p(y*={c})" for c in range(3)]
        for j, name in enumerate(names):
            se = math.hypot(mc_se[j], bf_se[j])
            worst_z = max(worst_z, abs(mc[j] - bf[j]) / se)
            lines.append(f"| {variance:g} | {name} | {mc[j]:.4f} | {bf[j]:.4f} | "
                         f"{abs(mc[j] - bf[j]):.4f} | {se:.4f} |")
    print("\n".join(lines), flush=True)
    return lines, worst_z


# ---------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folds", type=int, default=5,
                    help="number of CV folds (all are run)")
    ap.add_argument("--only-folds", type=int, default=None,
                    help="run only the first this many of the --folds folds")
    ap.add_argument("--samples", type=int, default=2500, help="kept states per chain")
    ap.add_argument("--chains", type=int, default=8)
    ap.add_argument("--burn-in", type=int, default=2500)
    ap.add_argument("--thin", type=int, default=10)
    ap.add_argument("--inner", type=int, default=8,
                    help="fresh f* draws per kept state for the predictive (unused "
                         "with --model probit, whose integral over f* is exact)")
    ap.add_argument("--data", choices=("wine", "digits"), default="wine",
                    help="wine (stratified CV) or digits (bench_real_data's one split "
                         "of 700 training and 300 test cases)")
    ap.add_argument("--model", choices=("softmax", "probit"), default="softmax",
                    help="softmax: the joint softmax model, its hyperparameters from "
                         "Laplace and vb, the sampler centred on Laplace's Gaussian; "
                         "probit: the multinomial probit model, its hyperparameters "
                         "from nested EP, the sampler centred on EP's Gaussian")
    ap.add_argument("--check-batches", type=int, default=None,
                    help="batches of --check-batch-size draws from the reference "
                         "Gaussian for the sanity check (default 50 on wine, 5 on "
                         "digits or with --model probit)")
    ap.add_argument("--check-batch-size", type=int, default=None,
                    help="reference draws per sanity-check batch (default 20000 on "
                         "wine, 2000 on digits, 10000 with --model probit)")
    ap.add_argument("--validate-draws", type=int, default=None,
                    help="brute-force prior draws of the validation (default 2e7, "
                         "4e5 with --model probit)")
    ap.add_argument("--validate-samples", type=int, default=None,
                    help="kept states per chain (16 chains) in the validation "
                         "(default 10000, 2000 with --model probit)")
    ap.add_argument("--recompute-every", type=int, default=1,
                    help="recompute h = G'x from x every this many sampler steps "
                         "(1: every step, as the wine report; more: h carried along "
                         "the ellipse in between, about half the cost per step)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reference", choices=("laplace", "prior"), default="laplace",
                    help="centre of the ellipses: Laplace's Gaussian, or the prior "
                         "(plain elliptical slice sampling, started from the prior)")
    ap.add_argument("--methods", default=None,
                    help="comma-separated fit methods (default laplace,vb on wine, "
                         "laplace on digits, ep with --model probit)")
    ap.add_argument("--skip-validation", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--write", default=None,
                    help="the Markdown report (default bench/results/multinomial_exact.md"
                         ", bench/results/multinomial_exact_probit.md with --model "
                         "probit)")
    argv = sys.argv if argv is None else argv
    args = ap.parse_args(argv[1:])
    wine = args.data == "wine"
    probit = args.model == "probit"
    if args.write is None:
        args.write = os.path.join(RESULTS, "multinomial_exact_probit.md" if probit
                                  else "multinomial_exact.md")
    if args.methods is None:
        args.methods = "ep" if probit else "laplace,vb" if wine else "laplace"
    if _reference_method(args) not in args.methods.split(","):
        ap.error(f"--methods must include {_reference_method(args)} with --model "
                 f"{args.model}")
    if args.check_batches is None:
        args.check_batches = 50 if wine and not probit else 5
    if args.check_batch_size is None:
        args.check_batch_size = 10000 if probit else 20000 if wine else 2000
    if args.validate_draws is None:
        args.validate_draws = 400_000 if probit else 20_000_000
    if args.validate_samples is None:
        args.validate_samples = 2000 if probit else 10_000
    if probit and not wine:
        ap.error("--model probit runs on wine (its sanity check is for three classes)")
    t0 = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        val_lines, worst_z = ([], float("nan")) if args.skip_validation else \
            validate(args, rng)
        res = {m: [] for m in args.methods.split(",")}
        ovr = []
        n_run = (args.only_folds or args.folds) if wine else 1
        for k, (Xtr, ytr, Xte, yte, kernel) in enumerate(_splits(args, n_run)):
            for method in args.methods.split(","):
                extra = {"likelihood": "probit"} if probit else {}
                clf = gpc.GaussianProcessClassifier(kernel(), multi_class="multinomial",
                                                    method=method, **extra)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", ConvergenceWarning)
                    clf.fit(Xtr, ytr)
                fit_warnings = sorted({str(w.message) for w in caught
                                       if issubclass(w.category, ConvergenceWarning)})
                for w in caught:                      # the others shown as before
                    if not issubclass(w.category, ConvergenceWarning):
                        warnings.warn_explicit(w.message, w.category, w.filename,
                                               w.lineno)
                label = f"fold {k + 1} {method}" if wine else f"digits {method}"
                r = exact_vs_approx(clf, Xtr, ytr, Xte, yte, args, rng, label)
                r["fit_warnings"] = fit_warnings
                res[method].append(r)
            o = gpc.GaussianProcessClassifier(kernel())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                o.fit(Xtr, ytr)
            ovr.extend(_log_loss(o.predict_proba(Xte), yte))
    text = report(args, res, ovr, val_lines, worst_z, n_run, argv, t0)
    publish(text, args.write)


def _splits(args, n_run):
    """(X_train, y_train, X_test, y_test, kernel factory) of each split run: wine's
    first n_run stratified CV folds, or digits' one split."""
    if args.data == "digits":
        from bench_real_data import problem

        Xtr, ytr, Xte, yte = problem("digits", 700)
        yield Xtr, ytr, Xte, yte, lambda: 1.0 * RBF(1.0)
        return
    X, y = load_wine(return_X_y=True)
    d = X.shape[1]
    split = StratifiedKFold(args.folds, shuffle=True, random_state=0)
    for k, (tr, te) in enumerate(split.split(X, y)):
        if k >= n_run:
            break
        Xtr, Xte = standardise(X[tr], X[te])
        yield Xtr, y[tr], Xte, y[te], lambda: _kernel(d)


def _pooled_se(rows):
    """Standard error of the pooled exact log loss: per fold, delta method over
    chains (-mean log p, so se of mean_i p_b(y_i)/p(y_i) over chains), folds
    independent, weighted by their test sizes."""
    N = sum(r["exact"].size for r in rows)
    var = 0.0
    for r in rows:
        g = r["chain_ratio"].mean(1)
        var += (r["exact"].size / N) ** 2 * g.var(ddof=1) / g.size
    return math.sqrt(var)


def report(args, res, ovr, val_lines, worst_z, n_run, argv, t0):
    if args.data == "wine":
        setup = (f"Stratified {args.folds}-fold CV as `bench/bench_multinomial.py` "
                 f"({n_run} of {args.folds} folds run), kernel `C(1) * RBF(sqrt(13))` ")
        where = "over the fold's test cases"
    else:
        setup = ("scikit-learn's digits (10 classes, 64 inputs), the one split of "
                 "`bench/bench_real_data.py`'s `problem(\"digits\", 700)` (the first "
                 "700 cases train, the next 300 test, inputs standardised with the "
                 "training set's statistics; C x n = 7000 latent values), kernel "
                 "`1.0 * RBF(1.0)` (gpc's start) ")
        where = "over the 300 test cases"
    probit = args.model == "probit"
    ref = "EP" if probit else "Laplace"
    methods = " or by the vb bound" if "vb" in res else ""
    if probit:
        model = "multinomial probit model"
        learnt = ("learnt by nested EP's evidence (`gpc.GaussianProcessClassifier(..., "
                  "multi_class=\"multinomial\", method=\"ep\", likelihood=\"probit\")`,"
                  " the kernel shared by the classes); at those hyperparameters the "
                  "exact posterior of the C x n latent values, `p(F | y) ∝ prod_i "
                  "p(y_i | f_i) prod_c N(F_c; 0, K)` with the probit's `p(y | f)` of "
                  "`MultinomialProbit.log_lik`, by elliptical slice ")
        centre = ("sampling around EP's Gaussian (whitened coordinates; EP's mean, "
                  "covariance `(K^-1 + Pi)^-1`, Pi block-diagonal of the sites' C x C "
                  "precisions `D - d d' / sum(d)`, built densely), ")
        predictive = ("); predictive per state exact: `f*_c | F ~ N(m_c, s2)` "
                      "independently with one s2 for all classes, so `E[p(y* = c | "
                      "f*) | F] = p(y* = c | m / sqrt(1 + s2))` (the probit's noise "
                      "absorbs f*'s), by `MultinomialProbit.log_lik` (its integral over "
                      "u by adaptive Gauss-Hermite).  R-hat / ESS: rank-normalised split "
                      "R-hat (largest) and bulk ESS (smallest) over the per-state class "
                      "probabilities at every test point and log p(y | F).  ")
    else:
        model = "joint multinomial model"
        learnt = (f"learnt by Laplace's evidence{methods}; at those hyperparameters "
                  "the exact posterior of the C x n latent values by elliptical slice ")
        centre = "sampling around Laplace's Gaussian (whitened coordinates), "
        predictive = (f"); predictive by {args.inner} fresh "
                      "draws of f* | F per state.  R-hat / ESS: rank-normalised split "
                      "R-hat (largest) and bulk ESS (smallest) over the per-state class "
                      "probabilities at every test point (64 common f* draws) and "
                      "log p(y | F).  ")
    approx_col = "EP `predict_proba` log loss" if probit else \
        "approx. `predict_proba` log loss"
    lines = [f"## Exact (MCMC) predictive of the {model} on {args.data}",
             "", setup + learnt
             + (centre if args.reference == "laplace" else
                "sampling from the prior (plain ESS, chains started from the prior), ")
             + 
             f"{args.chains} chains x {args.samples} kept states (burn-in "
             f"{args.burn_in}, thin {args.thin}"
             + (f"; h = G'x recomputed every {args.recompute_every} steps, carried "
                "along the ellipse in between" if args.recompute_every > 1 else "")
             + predictive +
             f"Log loss: mean {where}; `±` one Monte Carlo s.e. "
             "(spread of the chains).", "",
             f"| hyperparameters from | {'fold' if args.data == 'wine' else 'split'} | "
             "signal variance | length scale | "
             f"{approx_col} | exact (MCMC) log loss | "
             + ("ratio EP / exact | " if probit else "") + "R-hat max | "
             "ESS min | R-hat / ESS of log p(y\\|F) | evals / step | MCMC time (s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if probit else "")]
    for method, rows in res.items():
        for k, r in enumerate(rows):
            g = r["chain_ratio"].mean(1)
            se = g.std(ddof=1) / math.sqrt(g.size)
            ratio = (f"{r['approx'].mean() / r['exact'].mean():.2f} | " if probit
                     else "")
            lines.append(
                f"| {method} | {k + 1} | {r['variance']:.4g} | {r['length']:.3g} | "
                f"{r['approx'].mean():.4f} | {r['exact'].mean():.4f} ± {se:.4f} | "
                + ratio +
                f"{r['rhat_max']:.3f} | {r['ess_min']:.0f} | {r['rhat_ll']:.3f} / "
                f"{r['ess_ll']:.0f} | {r['evals_per_step']:.2f} | "
                f"{r['ess_seconds']:.0f} |")
    unmixed = [r for rows in res.values() for r in rows
               if r["rhat_max"] > 1.01 or r["ess_min"] < 400]
    if unmixed:
        lines += ["", f"Convergence: {len(unmixed)} of the runs above have not fully "
                  "mixed by the usual thresholds (R-hat at most 1.01, bulk ESS at "
                  "least 400): their exact log loss is that run's estimate, and its "
                  "`±` (the spread of the chains' means) understates its error."]
    lap = res[_reference_method(args)]
    n_test = sum(r['exact'].size for r in lap)
    lines += ["", (f"Pooled over the {n_run} folds' test cases ({n_test} cases):"
                   if args.data == "wine" else f"All {n_test} test cases:"), ""]
    if probit:
        lines += ["| hyperparameters from | EP `predict_proba` log loss | EP's Gaussian, "
                  "exact predictive integral (sanity check below) | exact (MCMC) log "
                  "loss | ratio EP `predict_proba` / exact | accuracy EP / exact |",
                  "|---|---|---|---|---|---|"]
    else:
        lines += ["| hyperparameters from | approx. `predict_proba` log loss | "
                  "exact (MCMC) log loss | accuracy approx. / exact |",
                  "|---|---|---|---|"]
    for method, rows in res.items():
        a = np.concatenate([r["approx"] for r in rows])
        e = np.concatenate([r["exact"] for r in rows])
        acc_a = np.mean(np.concatenate([np.argmax(r["approx_proba"], 1) for r in rows])
                        == np.concatenate([_labels(r) for r in rows]))
        acc_e = np.mean(np.concatenate([np.argmax(r["proba"], 1) for r in rows])
                        == np.concatenate([_labels(r) for r in rows]))
        if probit:
            se_e = _pooled_se(rows)
            g = np.concatenate([r["check_exact"] for r in rows]).mean()
            lines.append(f"| {method} | {a.mean():.4f} | {g:.4f} | "
                         f"{e.mean():.4f} ± {se_e:.4f} | {a.mean() / e.mean():.2f} ± "
                         f"{a.mean() * se_e / e.mean() ** 2:.2f} | "
                         f"{acc_a:.4f} / {acc_e:.4f} |")
        else:
            lines.append(f"| {method} | {a.mean():.4f} | {e.mean():.4f} ± "
                         f"{_pooled_se(rows):.4f} | {acc_a:.4f} / {acc_e:.4f} |")
    lines.append(f"| (gpc one-vs-rest, Laplace, its own kernels) | {np.mean(ovr):.4f} "
                 "| - | - |" + (" - | - |" if probit else ""))
    if probit:
        lines += ["", "Sanity check at EP's hyperparameters: EP's test latent Gaussian "
                  "(gpc's `latent_mean_and_variance`) integrated exactly against the "
                  "probit (C = 3: a bivariate normal orthant probability, by 1-D "
                  "adaptive quadrature to 1e-14), against `predict_proba` (the nested-EP "
                  "approximation of the same integral): the predictive integral's own "
                  "error; and EP's Gaussian built here from EP's sites through the "
                  "sampler's predictive code "
                  f"({lap[0]['check_n'] if lap else 0} independent draws of F, the "
                  "exact integral over f* | F each) against that exact integral "
                  "(|difference| / s.e. over the probabilities of at least 1e-3: a "
                  "smaller one is the contribution of draws too rare for the spread "
                  "of these to measure); its moments against gpc's; and the test log "
                  "losses:", "",
                  f"| {'fold' if args.data == 'wine' else 'split'} | "
                  "`predict_proba` vs exact integral: largest abs. difference | "
                  "same code (MC) vs exact integral: largest abs. difference | "
                  "largest MC s.e. | largest abs. difference / its s.e. | "
                  "largest moment difference (mean abs., cov. relative) | "
                  "log loss: exact integral | same code (MC) | `predict_proba` |",
                  "|---|---|---|---|---|---|---|---|---|"]
    else:
        lines += ["", "Sanity check at Laplace's hyperparameters: the Laplace Gaussian "
                  "(mean and covariance built here from the mode) through the same "
                  f"predictive code, {lap[0]['check_n'] if lap else 0} independent draws "
                  "(one f* draw each), against `predict_proba`; "
                  "and its test latent moments against `latent_mean_and_variance`:", "",
                  f"| {'fold' if args.data == 'wine' else 'split'} | "
                  "largest abs. difference of probabilities | largest MC s.e. | "
                  "largest abs. difference / its s.e. | "
                  "largest moment difference (mean abs., cov. relative) |",
                  "|---|---|---|---|---|"]
    for k, r in enumerate(lap):
        if probit:
            lines.append(
                f"| {k + 1} | {r['approx_vs_exact']:.1e} | {r['check_vs_exact']:.1e} | "
                f"{r['check_se']:.1e} | {r['check_z']:.2f} | "
                f"{r['check_moments']:.1e} | {r['check_exact'].mean():.5f} | "
                f"{r['check_ll'].mean():.5f} ± "
                f"{math.sqrt(r['check_ll_var']) / r['check_ll'].size:.5f} | "
                f"{r['approx'].mean():.5f} |")
            continue
        lines.append(f"| {k + 1} | {r['check_proba']:.1e} | {r['check_se']:.1e} | "
                     f"{r['check_z']:.2f} | "
                     f"{r['check_moments']:.1e} |")
    jit = [r["jitter"] for rows in res.values() for r in rows]
    lines += ["", f"Jitter added to K: largest {max(jit):.1e}."]
    if probit:
        info = [r["ref_info"] for r in lap]
        iters = [i["n_iter"] for i in info]
        lines += ["", f"EP at the learnt hyperparameters (from zero sites, as the "
                  f"sampler's centre): converged in {sum(i['converged'] for i in info)} "
                  f"of {len(info)} fits, {min(iters)} to {max(iters)} outer "
                  f"iterations, {sum(i['n_skipped'] for i in info)} inner updates "
                  "skipped in the last iterations."]
        warned = {}
        for k, r in enumerate(lap):
            for w in r["fit_warnings"]:
                warned.setdefault(w, []).append(k + 1)
        for w, folds in warned.items():
            lines += ["", f"Warning of the fit in fold(s) "
                      f"{', '.join(map(str, folds))}: \"{w}\""]
    lines += ["",
              "Validation of the sampler (n = 2 training points at x = 0, 1 with "
              "labels 0, 1, C = 3, test point x = 0.5, RBF length 1): 16 chains x "
              f"{args.validate_samples} states (burn-in 1000), {ref}-centred, "
              f"against importance sampling from the prior "
              f"({args.validate_draws:.0e} draws"
              + ("; p(y* | f*) of the drawn f* by `MultinomialProbit.log_lik`, "
                 "without the sampler's closed form" if probit else "")
              + f"); largest |difference| / s.e. = {worst_z:.2f}.", ""] + val_lines
    return "\n".join(lines + footer(argv, t0))


def _labels(r):
    # the test labels are recoverable from the clipped per-case loss and the proba
    return r["y"]


if __name__ == "__main__":
    main()
