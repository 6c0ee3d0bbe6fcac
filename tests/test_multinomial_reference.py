"""Multinomial (softmax) Laplace against an independent dense reference.

The reference below implements Rasmussen & Williams (GPML, section 3.5) from the
definitions, in the full C*n-dimensional latent space: C latent functions with
independent GP priors K_c, p(y_i = c | f_i) = softmax(f_i)_c.  It deliberately does
NOT use the book's n x n reductions (Algorithms 3.3 and 3.4), so that it shares no
algebra with an implementation that does: every matrix is the plain Cn x Cn one.

Latent vectors are stacked class-major, f = [f^1; ...; f^C] (length C n), the prior
covariance is K = blockdiag(K_1, ..., K_C), and y is one-hot in the same layout.

Two groups of tests:

* ``test_selfcheck_*`` check the reference itself (against brute-force formulas, a
  generic optimiser with a finite-difference Hessian, the same evidence in 40-digit
  arithmetic, and gpc's binary logit Laplace for C = 2).  They need only what gpc
  has today.
* ``test_api_*`` compare gpc's multinomial Laplace (``likelihood="softmax"`` in
  :func:`gpc.infer`, ``multi_class="multinomial"`` in the estimator) to the
  reference.  They need that API; select the groups with ``-k selfcheck`` and
  ``-k "not selfcheck"``.
"""

from types import SimpleNamespace

import mpmath as mp
import numpy as np
import pytest
from scipy import optimize
from scipy.linalg import block_diag
from scipy.special import expit, logsumexp, softmax
from threadpoolctl import threadpool_limits

import gpc
from gpc.kernels import SquaredExponential


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # Every matrix here is at most 120 x 120: BLAS threads only add overhead, and on
    # a busy 2-core machine they made the finite-difference tests 30x slower.
    with threadpool_limits(limits=1, user_api="blas"):
        yield


# ---------------------------------------------------------------------------
# Data and kernels
# ---------------------------------------------------------------------------


def se(X, ell, sf2, Z=None):
    """Squared exponential k(x, z) = sf2 exp(-|x - z|^2 / (2 ell^2)), in numpy."""
    Z = X if Z is None else Z
    d2 = ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    return sf2 * np.exp(-0.5 * d2 / ell ** 2)


def se_theta_derivatives(X, ell, sf2):
    """dK/dlog(ell) and dK/dlog(sf2), the order of SquaredExponential's theta."""
    K = se(X, ell, sf2)
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return [K * d2 / ell ** 2, K]


def make_data(n, C, seed, spread, m=5):
    """Training inputs, labels 0..C-1 (each class present) and m test inputs.

    Class centres lie on a circle of radius ``spread``: about 1 gives overlapping
    classes, 10 with a very large signal variance gives class probabilities within
    ~1e-6 of 0 or 1 (W nearly zero), the regime where a softmax Laplace fails first.
    The test inputs are the centres (ambiguous or confident) and one far point
    (where the predictive is the prior).
    """
    rng = np.random.RandomState(seed)
    angles = 2 * np.pi * (np.arange(C) + 0.3 * rng.rand(C)) / C
    centres = spread * np.c_[np.cos(angles), np.sin(angles)]
    y = rng.permutation(np.arange(n) % C)
    X = centres[y] + 0.8 * rng.randn(n, 2)
    Xs = np.vstack([centres, rng.randn(m - C - 1, 2), [[40.0, -40.0]]])[:m]
    return X, y, Xs


# Each case: n, C, seed, spread, and the kernel hyperparameters (ell, sf2) -- one
# pair (a kernel shared by all classes) or one pair per class.  In the "separated"
# cases the probability of the observed class is within 1e-5..1e-7 of one (W nearly
# zero, K entries up to 1e6): the GP prior shrinks the mode, so only a very large
# signal variance gets there (1 - pi ~ f / (k sf2) for k points in a cluster).
CASES = {
    "C2-shared": (12, 2, 0, 1.0, (1.0, 1.0)),
    "C3-shared": (20, 3, 1, 2.0, (0.7, 4.0)),
    "C4-per-class": (30, 4, 2, 1.5, [(0.5, 1.0), (1.0, 3.0), (2.0, 0.5), (1.3, 8.0)]),
    "C2-per-class": (10, 2, 5, 1.0, [(0.6, 2.0), (1.5, 0.7)]),
    "C3-per-class-separated": (25, 3, 3, 10.0, [(3.0, 1e5), (4.0, 3e4), (3.5, 5e4)]),
    "C4-shared-separated": (24, 4, 4, 10.0, (3.0, 1e6)),
    "C2-shared-separated": (20, 2, 6, 10.0, (3.0, 1e6)),
}


def hyper_list(hyp, C):
    """Per-class (ell, sf2) pairs from a shared pair or a list of pairs."""
    return [hyp] * C if isinstance(hyp, tuple) else list(hyp)


def problem(name):
    """(X, y, Xs, C, per-class hyperparameters, shared?) for a named case."""
    n, C, seed, spread, hyp = CASES[name]
    X, y, Xs = make_data(n, C, seed, spread)
    return X, y, Xs, C, hyper_list(hyp, C), isinstance(hyp, tuple)


def gram_stacks(X, Xs, hyps):
    """K (C, n, n), K_cross (C, n, m) and k_diag (C, m) for per-class kernels."""
    K = np.stack([se(X, ell, sf2) for ell, sf2 in hyps])
    Kx = np.stack([se(X, ell, sf2, Xs) for ell, sf2 in hyps])
    kd = np.stack([np.full(len(Xs), sf2) for _, sf2 in hyps])
    return K, Kx, kd


# ---------------------------------------------------------------------------
# The reference: Cn-dimensional Laplace from the definitions
# ---------------------------------------------------------------------------


def one_hot(y, C):
    """Class-major one-hot labels (length C n)."""
    Y = np.zeros((C, len(y)))
    Y[y, np.arange(len(y))] = 1.0
    return Y.ravel()


def class_probabilities(f, C):
    """pi = softmax over the classes at each point, and q = 1 - pi, class-major.

    q is summed from the other classes' probabilities: 1 - pi by subtraction
    loses the digits of a pi near one, and the separated cases' mode (through
    y - pi) and W (through pi (1 - pi)) depend on them.  Subtracting cost the
    evidence 3e-9 at sf2 = 3e7 against a 40-digit computation; summing, 1e-14."""
    P = softmax(f.reshape(C, -1), axis=0)
    Q = np.array([np.delete(P, c, axis=0).sum(0) for c in range(C)])
    return P.ravel(), Q.ravel()


def log_lik_gradient(Yv, pi, q):
    """d log p(y|f) / df = y - pi, as 1 - pi = q where y is one."""
    return np.where(Yv == 1, q, -pi)


def log_lik(f, Yv, C):
    """sum_i [f_i,y_i - log sum_c exp f_i,c] (logsumexp keeps large |f| finite)."""
    return Yv @ f - logsumexp(f.reshape(C, -1), axis=0).sum()


def neg_hessian(pi, q, C):
    """W = -d^2 log p(y|f) / df df': per point diag(pi_i) - pi_i pi_i'.

    In the class-major layout that is diag(pi) - P P' with P the Cn x n stack of
    diag(pi^c): P P' pairs (c, i) with (c', j) only when i = j.  Its diagonal,
    pi - pi^2, is written as pi q (see class_probabilities)."""
    n = len(pi) // C
    P = np.vstack([np.diag(p) for p in pi.reshape(C, n)])
    W = -(P @ P.T)
    np.fill_diagonal(W, pi * q)
    return W


def newton_mode(Kb, Yv, C, max_iter=200):
    """Maximise psi(f) = log p(y|f) - f' K^{-1} f / 2 over f = K a.

    The parametrisation f = K a needs no K^{-1} (f' K^{-1} f = a' K a), so a nearly
    singular K (long length scales) is harmless.  The Newton step in f,
    f_new = (K^{-1} + W)^{-1} (W f + y - pi), is a_new = (I + W K)^{-1} (W f + y - pi);
    psi is concave, so halving the step whenever psi drops makes it globally
    convergent.  Once the step is below 1e-9, two more full steps reach machine
    precision (quadratic convergence)."""
    D = len(Yv)
    a = np.zeros(D)
    psi_of = lambda a: log_lik(Kb @ a, Yv, C) - 0.5 * a @ Kb @ a  # noqa: E731
    psi, final_steps = psi_of(a), None
    for _ in range(max_iter):
        f = Kb @ a
        pi, q = class_probabilities(f, C)
        W = neg_hessian(pi, q, C)
        b = W @ f + log_lik_gradient(Yv, pi, q)
        step = np.linalg.solve(np.eye(D) + W @ Kb, b) - a
        s = 1.0
        while s > 1e-12:
            psi_new = psi_of(a + s * step)
            # A rounding-level decrease near the mode is not a reason to backtrack.
            if psi_new >= psi - 1e-13 * (1.0 + abs(psi)):
                break
            s /= 2
        a, psi = a + s * step, psi_new
        small = np.max(np.abs(Kb @ (s * step))) < 1e-9 * (1 + np.max(np.abs(f)))
        if final_steps is None and small:
            final_steps = 2
        if final_steps is not None:
            final_steps -= 1
            if final_steps < 0:
                return a
    raise RuntimeError("reference Newton iteration did not converge")


def stack_classes(K, C):
    """(C, n, n) from a shared (n, n) matrix or a per-class stack."""
    K = np.asarray(K, dtype=float)
    return np.broadcast_to(K, (C,) + K.shape) if K.ndim == 2 else K


def reference_laplace(K, y, C):
    """Laplace approximation for softmax GP classification, dense in Cn.

    Returns the mode f_hat, a = y - pi(f_hat) (= K^{-1} f_hat), W at the mode, the
    block-diagonal K and the Laplace log evidence
    psi(f_hat) - log det(I + K W) / 2."""
    y = np.asarray(y)
    Kb = block_diag(*stack_classes(K, C))
    Yv = one_hot(y, C)
    a_iter = newton_mode(Kb, Yv, C)
    f = Kb @ a_iter
    pi, q = class_probabilities(f, C)
    W = neg_hessian(pi, q, C)
    sign, logdet = np.linalg.slogdet(np.eye(len(f)) + Kb @ W)
    assert sign > 0
    psi = log_lik(f, Yv, C) - 0.5 * a_iter @ f
    return SimpleNamespace(f=f, a=log_lik_gradient(Yv, pi, q), pi=pi, W=W, Kb=Kb,
                           C=C, n=len(y), log_evidence=psi - 0.5 * logdet, psi=psi)


def cross_stack(ref, K_cross, k_diag):
    """Per-class cross covariances (C, n, m) and prior variances (C, m)."""
    K_cross = stack_classes(K_cross, ref.C)
    k_diag = np.broadcast_to(np.asarray(k_diag, dtype=float), (ref.C, K_cross.shape[2]))
    return K_cross, k_diag


def reference_predict(ref, K_cross, k_diag):
    """Latent predictive mean (m, C) and covariance (m, C, C) at test points.

    mean_c = k_c(x*)' (y^c - pi^c) and
    Sigma* = diag(k_c(x*, x*)) - K*' (K + W^{-1})^{-1} K*, where W is singular
    (pi_i sums to one, so W_i 1 = 0) and (K + W^{-1})^{-1} is taken as
    (I + W K)^{-1} W, which is what it equals whenever W is invertible.
    K* for one test point is Cn x C, block-diagonal by class: column c holds
    k_c(X, x*) in block c, so the contraction below runs over (class, point)."""
    K_cross, k_diag = cross_stack(ref, K_cross, k_diag)
    C, n = ref.C, ref.n
    M = np.linalg.solve(np.eye(C * n) + ref.W @ ref.Kb, ref.W).reshape(C, n, C, n)
    mean = np.einsum("cnm,cn->mc", K_cross, ref.a.reshape(C, n))
    cov = -np.einsum("cim,cidk,dkm->mcd", K_cross, M, K_cross)
    cov += np.einsum("cd,cm->mcd", np.eye(C), k_diag)
    return mean, cov


# ---------------------------------------------------------------------------
# What rounding allows: tolerances from the conditioning of each case
# ---------------------------------------------------------------------------

EPS = np.finfo(np.float64).eps


def rounding_tol(kappa, size, terms):
    """The most rounding can move a computed result by: a sum of ``terms`` terms
    is off by up to ``terms`` eps times the sum of their magnitudes (``size``),
    and solving with a factorised matrix of condition number ``kappa`` amplifies
    that by kappa.  Measured over 20 permutations of the points and four BLAS
    kernel sets (OPENBLAS_CORETYPE), the errors of the comparisons below were
    0.06 to 14 eps kappa size; ``terms`` (C n, at least 16) covers them and
    stays far below a one-term mistake (test_selfcheck_tolerances_*)."""
    return terms * EPS * kappa * size


def condition(A):
    """2-norm condition number (A symmetric positive definite)."""
    w = np.linalg.eigvalsh(A)
    return w[-1] / w[0]


def reference_condition(ref):
    """The condition number of the reference's Cn x Cn system I + W K."""
    return np.linalg.cond(np.eye(ref.C * ref.n) + ref.W @ ref.Kb)


def softmax_route_condition(ref):
    """The largest condition number of what the n x n route (GPML Algorithm 3.3,
    gpc's) factorises at the mode: B_c = I + D_c^1/2 K_c D_c^1/2 with D = diag(pi)
    (~ sf2 times a cluster's size when classes are separated), and
    P = sum_c D_c^1/2 B_c^-1 D_c^1/2."""
    C, n = ref.C, ref.n
    kappa, P = 1.0, np.zeros((n, n))
    for c in range(C):
        sd = np.sqrt(ref.pi[c * n:(c + 1) * n])
        B = np.eye(n) + sd[:, None] * ref.Kb[c * n:(c + 1) * n, c * n:(c + 1) * n] * sd
        kappa = max(kappa, condition(B))
        P += sd[:, None] * np.linalg.inv(B) * sd
    return max(kappa, condition(P))


def logit_route_condition(K2, g):
    """The condition number of B = I + W^1/2 K W^1/2 of the binary logit Laplace
    (prior K2, mode g, W = sigma(g) (1 - sigma(g)))."""
    p = expit(g)
    sW = np.sqrt(p * (1.0 - p))
    return condition(np.eye(len(g)) + sW[:, None] * K2 * sW)


def term_sizes(ref, K_cross, k_diag):
    """The magnitudes of the terms summed into each result, from the reference:
    the evidence's three terms (log p(y|f), a'f / 2, log det / 2), |K||a| for the
    mode f = K a, |k*||a| for the predictive mean, and the prior variance for the
    predictive covariance k** - k*' A k* (whose subtracted term is no larger)."""
    K_cross, k_diag = cross_stack(ref, K_cross, k_diag)
    quad = 0.5 * abs(ref.a @ ref.f)
    return SimpleNamespace(
        evidence=abs(ref.psi + quad) + quad + abs(ref.psi - ref.log_evidence),
        mode=np.max(np.abs(ref.Kb) @ np.abs(ref.a)),
        mean=np.max(np.einsum("cnm,cn->mc", np.abs(K_cross),
                              np.abs(ref.a.reshape(ref.C, ref.n)))),
        cov=np.max(k_diag))


def tolerances(ref, K_cross, k_diag, kappa):
    """rounding_tol of the evidence, mode, predictive mean and covariance."""
    size = term_sizes(ref, K_cross, k_diag)
    # Sums over the C n latent values; at least 16, for the few ulps of a
    # softmax's exp, log and division however small the problem (n = 1).
    terms = max(ref.C * ref.n, 16)
    return SimpleNamespace(**{k: rounding_tol(kappa, v, terms)
                              for k, v in vars(size).items()})


def difference_tolerances(ref, K_cross, k_diag, kappa):
    """The tolerances for g = f^1 - f^0 (C = 2): a difference doubles the size of
    the mode's and mean's terms, and var(g) = S_00 + S_11 - 2 S_01 sums four
    times the covariance's."""
    tol = tolerances(ref, K_cross, k_diag, kappa)
    return SimpleNamespace(evidence=tol.evidence, mode=2 * tol.mode,
                           mean=2 * tol.mean, var=4 * tol.cov)


def richardson_gradient(fun, theta, h=1e-2):
    """Central differences in log-hyperparameters with one Richardson step.

    Truncation error is O(h^4): about 1e-9 here at h = 1e-2, and the reference's
    rounding noise contributes ~1e-12 / h.  The fairly large step also leaves room
    for a noisier evidence (gpc's, when its own is differenced)."""
    theta = np.asarray(theta, dtype=float)
    grad = np.empty_like(theta)
    for k in range(len(theta)):
        e = np.zeros_like(theta)
        e[k] = 1.0

        def central(step):
            return (fun(theta + step * e) - fun(theta - step * e)) / (2 * step)

        grad[k] = (4 * central(h / 2) - central(h)) / 3
    return grad


def hyps_from_theta(theta, C, shared):
    """Per-class (ell, sf2) from log-hyperparameters: one pair, or C pairs in
    class order (the layout of SquaredExponential's theta, concatenated)."""
    pairs = np.exp(np.asarray(theta, dtype=float)).reshape(-1, 2)
    return [tuple(pairs[0])] * C if shared else [tuple(p) for p in pairs]


def theta_of(hyps, shared):
    return np.log(np.array(hyps[:1] if shared else hyps, dtype=float)).ravel()


def reference_evidence_at(X, y, C, shared):
    """theta -> reference log evidence, the mode re-converged at each theta."""
    def evidence(theta):
        hyps = hyps_from_theta(theta, C, shared)
        return reference_laplace(np.stack([se(X, *h) for h in hyps]), y, C).log_evidence
    return evidence


def theta_derivatives(X, hyps, shared):
    """dK_c/dtheta_k as a list over theta of (C, n, n) stacks."""
    C, n = len(hyps), len(X)
    per_class = [se_theta_derivatives(X, *h) for h in hyps]
    if shared:
        return [np.stack([per_class[c][k] for c in range(C)]) for k in range(2)]
    out = []
    for c in range(C):
        for k in range(2):
            D = np.zeros((C, n, n))
            D[c] = per_class[c][k]
            out.append(D)
    return out


# ---------------------------------------------------------------------------
# The reference checked against itself and against gpc's binary Laplace
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("C", [2, 3, 4])
def test_selfcheck_W_is_the_finite_difference_hessian(seed, C):
    # Guards the block formula for W (the part of the reference easiest to get wrong).
    rng = np.random.RandomState(seed)
    n = 4
    f, y = 2 * rng.randn(C * n), rng.randint(C, size=n)
    Yv = one_hot(y, C)
    grad = lambda g: log_lik_gradient(Yv, *class_probabilities(g, C))  # noqa: E731
    h = 1e-5
    H = np.column_stack([(grad(f + h * e) - grad(f - h * e)) / (2 * h)
                         for e in np.eye(C * n)])
    np.testing.assert_allclose(-H, neg_hessian(*class_probabilities(f, C), C), atol=1e-9)
    # ... and the gradient itself, against finite differences of log_lik.
    g_fd = [(log_lik(f + h * e, Yv, C) - log_lik(f - h * e, Yv, C)) / (2 * h)
            for e in np.eye(C * n)]
    np.testing.assert_allclose(grad(f), g_fd, atol=1e-9)


@pytest.mark.parametrize("name", ["C2-shared", "C3-shared", "C2-per-class"])
def test_selfcheck_against_generic_optimiser_and_explicit_inverses(name):
    """A second, cruder Laplace: scipy's BFGS on psi(f) with an explicit K^{-1},
    the Hessian by finite differences of the gradient (no W formula), and the
    evidence as psi - log det K / 2 - log det(-Hessian) / 2.  Only for the
    well-conditioned cases (explicit inverses)."""
    X, y, Xs, C, hyps, _ = problem(name)
    K, Kx, kd = gram_stacks(X, Xs, hyps)
    ref = reference_laplace(K, y, C)
    Kinv = np.linalg.inv(ref.Kb)
    Yv = one_hot(y, C)

    def neg_psi(f):
        return -(log_lik(f, Yv, C) - 0.5 * f @ Kinv @ f)

    def neg_grad(f):
        return Kinv @ f - log_lik_gradient(Yv, *class_probabilities(f, C))

    opt = optimize.minimize(neg_psi, np.zeros(C * len(y)), jac=neg_grad, method="BFGS",
                            options={"gtol": 1e-11, "maxiter": 10000})
    np.testing.assert_allclose(opt.x, ref.f, atol=1e-6)
    h = 1e-5
    A = np.column_stack([(neg_grad(ref.f + h * e) - neg_grad(ref.f - h * e)) / (2 * h)
                         for e in np.eye(C * len(y))])
    A = 0.5 * (A + A.T)
    evidence = (-neg_psi(ref.f) - 0.5 * np.linalg.slogdet(ref.Kb)[1]
                - 0.5 * np.linalg.slogdet(A)[1])
    # The differenced gradients carry the rounding of K^-1 f, eps |K^-1||f| at
    # most, so A's entries carry that over h; half log det A moves by
    # tr(A^-1 dA) / 2, the entries' errors adding up like independent ones.
    # (Measured: 0.05 of this at most over 30 orders of the points; central
    # differences' truncation, ~h^2 = 1e-10, is below it.)
    dA = EPS * np.max(np.abs(Kinv) @ np.abs(ref.f)) / h
    tol = 0.5 * np.linalg.norm(np.linalg.inv(A)) * dA
    assert abs(evidence - ref.log_evidence) < tol
    # Predictive as plain Gaussian conditioning on q(f) = N(f_hat, (K^{-1} + W)^{-1}).
    S = np.linalg.inv(Kinv + ref.W)
    mean, cov = reference_predict(ref, Kx, kd)
    for j in range(len(Xs)):
        Ks = block_diag(*[Kx[c][:, [j]] for c in range(C)])
        P = Kinv @ Ks
        np.testing.assert_allclose(mean[j], P.T @ ref.f, atol=1e-8)
        np.testing.assert_allclose(cov[j], np.diag(kd[:, j]) - Ks.T @ P + P.T @ S @ P,
                                   atol=1e-8)


@pytest.mark.parametrize("name", list(CASES))
def test_selfcheck_identities_at_the_mode(name):
    X, y, Xs, C, hyps, shared = problem(name)
    K, Kx, kd = gram_stacks(X, Xs, hyps)
    ref = reference_laplace(K, y, C)
    # The mode condition f = K (y - pi), in a form that needs no K^{-1}.
    assert np.max(np.abs(ref.Kb @ ref.a - ref.f)) < 1e-10 * (1 + np.max(np.abs(ref.f)))
    if shared:
        # a sums to zero over classes, so with one K for all classes so does f.
        assert np.max(np.abs(ref.f.reshape(C, -1).sum(0))) < 1e-9
    # log det(I + K W) by a symmetric route: W^{1/2} K W^{1/2}'s eigenvalues.
    w, V = np.linalg.eigh(ref.W)
    sW = (V * np.sqrt(np.clip(w, 0, None))) @ V.T
    logdet = np.log1p(np.linalg.eigvalsh(sW @ ref.Kb @ sW)).sum()
    assert abs(ref.psi - 0.5 * logdet - ref.log_evidence) < 1e-12
    _, cov = reference_predict(ref, Kx, kd)
    np.testing.assert_allclose(cov, cov.transpose(0, 2, 1), atol=1e-12)
    assert np.all(np.linalg.eigvalsh(cov) > -1e-10)


@pytest.mark.parametrize("name", list(CASES))
def test_selfcheck_tolerances_are_far_below_one_term_errors(name):
    # The rounding tolerances stay at least 1000 times below the effect of leaving
    # out one term: the cross-class part -pi pi' of W (a diagonal curvature, in the
    # evidence and the predictive covariance), or the largest single term of the
    # sums f = K a and mean = k*' a.
    X, y, Xs, C, hyps, _ = problem(name)
    K, Kx, kd = gram_stacks(X, Xs, hyps)
    ref = reference_laplace(K, y, C)
    tol = tolerances(ref, Kx, kd, max(softmax_route_condition(ref),
                                      reference_condition(ref)))
    diag = SimpleNamespace(**{**vars(ref), "W": np.diag(np.diag(ref.W))})
    logdet_diag = np.linalg.slogdet(np.eye(C * ref.n) + ref.Kb @ diag.W)[1]
    assert 1000 * tol.evidence < abs(ref.psi - 0.5 * logdet_diag - ref.log_evidence)
    _, S = reference_predict(ref, Kx, kd)
    _, S_diag = reference_predict(diag, Kx, kd)
    assert 1000 * tol.cov < np.max(np.abs(S_diag - S))
    assert 1000 * tol.mode < np.max(np.abs(ref.Kb * ref.a))
    Kx_c, _ = cross_stack(ref, Kx, kd)
    assert 1000 * tol.mean < np.max(np.abs(Kx_c * ref.a.reshape(C, -1, 1)))


def binary_equivalent(K, y, Kx, kd):
    """gpc's binary logit Laplace for the difference g = f^1 - f^0 (C = 2).

    p(y = 1 | f) = softmax(f)_1 = sigma(f^1 - f^0), so the likelihood sees only g.
    g ~ GP(0, K_0 + K_1) (2K for a shared K, when s = f^0 + f^1 is independent of g).
    The map (f^0, f^1) -> (g, s) is linear and invertible, and the Laplace
    approximation commutes with such maps: the mode maps to the mode, the Hessian
    becomes J' H J, and the |det J| it adds to det(H) cancels the one of the prior
    density.  The s-part is Gaussian given g (with per-class K, s | g has a mean
    linear in g and a fixed covariance), so its Laplace integral is exact and
    leaves the Laplace evidence of the binary problem in g alone (the Hessian's
    Schur complement on g is that of the profiled psi(g)).  Labels: class 1 -> +1."""
    K = stack_classes(K, 2)
    Kx, kd = np.asarray(Kx), np.asarray(kd)
    res = gpc.infer(K[0] + K[1], 2 * np.asarray(y) - 1, method="laplace",
                    likelihood="logit")
    mean, var = res.posterior.latent_mean_and_variance(Kx[0] + Kx[1], kd[0] + kd[1])
    return res, mean, var


@pytest.mark.parametrize("name", ["C2-shared", "C2-per-class", "C2-shared-separated"])
@pytest.mark.parametrize("sf2", [1.0, 30.0])
def test_selfcheck_two_classes_is_the_binary_logit(name, sf2):
    X, y, Xs, C, hyps, _ = problem(name)
    hyps = [(ell, s * sf2) for ell, s in hyps]
    K, Kx, kd = gram_stacks(X, Xs, hyps)
    ref = reference_laplace(K, y, C)
    res, mean, var = binary_equivalent(K, y, Kx, kd)
    F = ref.f.reshape(2, -1)
    # Both routes are well conditioned here (the binary B at sf2 = 3e7 too: W is
    # ~1e-7 where K is large), but var(g)'s terms are as large as sf2.
    tol = difference_tolerances(ref, Kx, kd, max(
        reference_condition(ref), logit_route_condition(K[0] + K[1], F[1] - F[0])))
    assert abs(res.log_evidence - ref.log_evidence) < tol.evidence
    np.testing.assert_allclose(res.posterior.marginal_mean, F[1] - F[0], rtol=0,
                               atol=tol.mode)
    m, S = reference_predict(ref, Kx, kd)
    np.testing.assert_allclose(mean, m[:, 1] - m[:, 0], rtol=0, atol=tol.mean)
    np.testing.assert_allclose(var, S[:, 0, 0] + S[:, 1, 1] - 2 * S[:, 0, 1], rtol=0,
                               atol=tol.var)


def mp_laplace_evidence(K, y, C, f0, digits=40):
    """The same Cn-dimensional Laplace evidence in 40-digit arithmetic (mpmath),
    Newton started at the float64 mode f0: quadratic convergence from ~1e-12
    needs only a few steps.  Used to measure the float64 reference's rounding."""
    with mp.workdps(digits):
        return _mp_laplace_evidence(K, y, C, f0)


def _mp_laplace_evidence(K, y, C, f0):
    n = len(y)
    Kb = mp.matrix(block_diag(*stack_classes(K, C)).tolist())
    Yv = [mp.mpf(v) for v in one_hot(y, C)]
    f = mp.matrix([mp.mpf(v) for v in f0])

    def state(f):
        pi = []
        for i in range(n):
            e = [mp.exp(f[c * n + i]) for c in range(C)]
            pi.append([v / mp.fsum(e) for v in e])
        P = mp.matrix([pi[j % n][j // n] for j in range(C * n)])
        W = mp.matrix(C * n, C * n)
        for j in range(C * n):
            for k in range(j % n, C * n, n):
                W[j, k] = (P[j] if j == k else 0) - P[j] * P[k]
        return P, W

    for _ in range(4):
        P, W = state(f)
        b = W * f + mp.matrix([Yv[j] - P[j] for j in range(C * n)])
        f = Kb * mp.lu_solve(mp.eye(C * n) + W * Kb, b)
    P, W = state(f)
    a = mp.matrix([Yv[j] - P[j] for j in range(C * n)])
    log_lik = mp.fsum(Yv[j] * mp.log(P[j]) for j in range(C * n))
    return log_lik - (a.T * f)[0] / 2 - mp.log(mp.det(mp.eye(C * n) + Kb * W)) / 2


@pytest.mark.parametrize("C, spread, sf2",
                         [(3, 1.5, 2.0), (3, 10.0, 1e6), (2, 10.0, 3e7)])
def test_selfcheck_evidence_to_40_digits(C, spread, sf2):
    # Rounding, not algebra: the separated cases lose digits where 1 - pi is formed
    # by subtraction (3e-9 at sf2 = 3e7 before class_probabilities summed it).
    X, y, _ = make_data(3 * C, C, 7, spread)
    K = se(X, 3.0, sf2)
    ref = reference_laplace(K, y, C)
    assert abs(ref.log_evidence - float(mp_laplace_evidence(K, y, C, ref.f))) < 1e-12


@pytest.mark.parametrize("name", ["C4-per-class", "C3-per-class-separated",
                                  "C4-shared-separated"])
def test_selfcheck_gradient_is_smooth_in_the_step(name):
    # Richardson at h and h/10 agree, so the finite differences used as the truth
    # below are limited neither by truncation nor by the mode's convergence.
    X, y, _, C, hyps, shared = problem(name)
    fun = reference_evidence_at(X, y, C, shared)
    theta = theta_of(hyps, shared)
    g1, g2 = richardson_gradient(fun, theta, 1e-2), richardson_gradient(fun, theta, 1e-3)
    np.testing.assert_allclose(g1, g2, rtol=1e-7, atol=1e-9)


# ---------------------------------------------------------------------------
# gpc's multinomial Laplace against the reference
# ---------------------------------------------------------------------------


def gpc_softmax(K, y, C=None, **kw):
    lik = "softmax" if C is None else gpc.likelihoods.Softmax(n_classes=C)
    return gpc.infer(K, y, method="laplace", likelihood=lik, compute_gradient=True, **kw)


def api_tolerances(ref, Kx_ref, kd_ref):
    """What rounding allows gpc's results against the reference: through both
    routes' factorisations (in the separated cases gpc's B_c, ~ sf2 times a
    cluster's size, is the worse conditioned)."""
    kappa = max(softmax_route_condition(ref), reference_condition(ref))
    return tolerances(ref, Kx_ref, kd_ref, kappa)


def assert_matches_reference(res, ref, Kx, kd, Kx_ref, kd_ref):
    """Evidence, mode and latent predictive to what rounding allows in the case
    (inputs passed to gpc as given, to the reference per class)."""
    tol = api_tolerances(ref, Kx_ref, kd_ref)
    assert abs(res.log_evidence - ref.log_evidence) < tol.evidence
    mode = res.posterior.marginal_mean
    assert mode.shape == (ref.n, ref.C)
    np.testing.assert_allclose(mode, ref.f.reshape(ref.C, ref.n).T, rtol=0,
                               atol=tol.mode)
    mean, cov = res.posterior.latent_mean_and_variance(Kx, kd)
    m, S = reference_predict(ref, Kx_ref, kd_ref)
    assert mean.shape == m.shape and cov.shape == S.shape
    np.testing.assert_allclose(mean, m, rtol=0, atol=tol.mean)
    np.testing.assert_allclose(cov, S, rtol=0, atol=tol.cov)


@pytest.mark.parametrize("name", list(CASES))
def test_api_infer_matches_reference(name):
    X, y, Xs, C, hyps, shared = problem(name)
    K, Kx, kd = gram_stacks(X, Xs, hyps)
    ref = reference_laplace(K, y, C)
    # The separated cases (signal variances 3e4 .. 1e6) are at the n x n
    # reductions' rounding floor: gpc's evidence moves by up to 3e-8 when the
    # training points are only permuted, against a reference good to 1e-12 (the
    # 40-digit check); assert_matches_reference's tolerances follow from that
    # route's condition number (rounding_tol).
    # The per-class form always; a shared kernel also as (n, n) matrices.
    assert_matches_reference(gpc_softmax(K, y), ref, Kx, kd, Kx, kd)
    if shared:
        assert_matches_reference(gpc_softmax(K[0], y), ref, Kx[0], kd[0], Kx, kd)
        # Mixed: shared training K, per-class cross covariances (and vice versa).
        assert_matches_reference(gpc_softmax(K[0], y), ref, Kx, kd, Kx, kd)
        assert_matches_reference(gpc_softmax(K, y), ref, Kx[0], kd[0], Kx, kd)


@pytest.mark.parametrize("n, C, labels",
                         [(1, 2, [0]), (1, 3, [2]), (6, 4, [0, 1, 1, 0, 2, 0])])
def test_api_explicit_n_classes(n, C, labels):
    # Classes with no training example still have a latent function (mode driven
    # only by the prior and the softmax normaliser); n = 1 is the smallest problem.
    rng = np.random.RandomState(n + C)
    X, Xs = rng.randn(n, 2), rng.randn(3, 2)
    hyps = [(1.0 + 0.3 * c, 2.0 + c) for c in range(C)]
    K, Kx, kd = gram_stacks(X, Xs, hyps)
    y = np.array(labels)
    ref = reference_laplace(K, y, C)
    assert_matches_reference(gpc_softmax(K, y, C), ref, Kx, kd, Kx, kd)
    K1, Kx1, kd1 = gram_stacks(X, Xs, hyps[:1])
    ref1 = reference_laplace(K1[0], y, C)
    assert_matches_reference(gpc_softmax(K1[0], y, C), ref1, Kx1[0], kd1[0],
                             np.repeat(Kx1, C, 0), np.repeat(kd1, C, 0))


@pytest.mark.parametrize("name", list(CASES))
def test_api_dK_against_finite_differences(name):
    X, y, _, C, hyps, shared = problem(name)
    K = np.stack([se(X, *h) for h in hyps])
    res = gpc_softmax(K[0] if shared else K, y)
    assert res.dK.shape == (C, len(y), len(y))
    np.testing.assert_allclose(res.dK, res.dK.transpose(0, 2, 1), atol=1e-12)
    grad = np.array([np.sum(res.dK * D) for D in theta_derivatives(X, hyps, shared)])
    theta = theta_of(hyps, shared)
    fd_ref = richardson_gradient(reference_evidence_at(X, y, C, shared), theta)
    np.testing.assert_allclose(grad, fd_ref, rtol=1e-5, atol=1e-8)

    def gpc_evidence(t):
        Kt = np.stack([se(X, *h) for h in hyps_from_theta(t, C, shared)])
        return gpc_softmax(Kt, y).log_evidence

    # gpc's own evidence may carry rounding noise of ~1e-9 in the separated cases
    # (see test_api_two_classes_is_the_binary_logit), which differencing turns into
    # ~1e-7: relative to the gradient's largest entry there, not to each entry.
    fd_own = richardson_gradient(gpc_evidence, theta)
    np.testing.assert_allclose(grad, fd_own, rtol=1e-5,
                               atol=1e-5 * np.max(np.abs(fd_own)))


@pytest.mark.parametrize("name", ["C2-shared", "C2-per-class", "C2-shared-separated"])
@pytest.mark.parametrize("sf2", [1.0, pytest.param(30.0, id="30.0")])
def test_api_two_classes_is_the_binary_logit(name, sf2):
    # Why these agree: see binary_equivalent.  gpc's binary Laplace against its
    # multinomial one, no reference in between (it only sizes the tolerances).
    # In the separated case (sf2 = 1e6, 3e7; 1 - pi ~ 1e-6) the binary one is
    # exact to 1e-14 (checked against 40 digits), but the book's n x n route
    # factorises I + D^1/2 K_c D^1/2 with D = diag(pi), not W, whose condition
    # number is ~ sf2 times a cluster's size (2.7e8 at sf2 = 3e7): gpc's evidence
    # moves by up to 4.4e-7 there when the training points are only permuted, the
    # limit of the book's formulation, which the tolerances follow.
    X, y, Xs, C, hyps, _ = problem(name)
    hyps = [(ell, s * sf2) for ell, s in hyps]
    K, Kx, kd = gram_stacks(X, Xs, hyps)
    res_b, mean_b, var_b = binary_equivalent(K, y, Kx, kd)
    res = gpc_softmax(K, y)
    ref = reference_laplace(K, y, C)
    F = ref.f.reshape(2, -1)
    tol = difference_tolerances(ref, Kx, kd, max(
        softmax_route_condition(ref), logit_route_condition(K[0] + K[1], F[1] - F[0])))
    assert abs(res.log_evidence - res_b.log_evidence) < tol.evidence
    mean, cov = res.posterior.latent_mean_and_variance(Kx, kd)
    np.testing.assert_allclose(mean[:, 1] - mean[:, 0], mean_b, rtol=0, atol=tol.mean)
    np.testing.assert_allclose(cov[:, 0, 0] + cov[:, 1, 1] - 2 * cov[:, 0, 1], var_b,
                               rtol=0, atol=tol.var)


def softmax_columns(F):
    """softmax over axis 0 of a (C, draws) array (reducing over the short axis
    is what keeps two million draws fast)."""
    E = np.exp(F - F.max(0))
    return E / E.sum(0)


def monte_carlo_proba(mean, cov, pairs=1_000_000, seed=0, chunk=250_000):
    """E[softmax(f*)] for f* ~ N(mean, cov) per test point, and its standard error.

    Antithetic pairs (mean + d, mean - d) halve the error for the same number of
    softmax evaluations; the pair averages are independent, so the standard error
    comes from their spread.  The square root of cov comes from eigh, which also
    accepts a nearly singular cov."""
    rng = np.random.default_rng(seed)
    m, C = mean.shape
    total, total_sq = np.zeros((m, C)), np.zeros((m, C))
    for j in range(m):
        w, V = np.linalg.eigh(cov[j])
        root = V * np.sqrt(np.clip(w, 0, None))
        mu = mean[j][:, None]
        for start in range(0, pairs, chunk):
            d = root @ rng.standard_normal((C, min(chunk, pairs - start)))
            p = 0.5 * (softmax_columns(mu + d) + softmax_columns(mu - d))
            total[j] += p.sum(1)
            total_sq[j] += (p * p).sum(1)
    avg = total / pairs
    return avg, np.sqrt(np.clip(total_sq / pairs - avg ** 2, 0, None) / pairs)


@pytest.mark.parametrize("name", ["C3-shared", "C4-per-class", "C3-per-class-separated"])
def test_api_predict_proba_against_monte_carlo(name):
    X, y, Xs, C, hyps, shared = problem(name)
    K, Kx, kd = gram_stacks(X, Xs, hyps)
    mean, cov = reference_predict(reference_laplace(K, y, C), Kx, kd)
    mc, se_mc = monte_carlo_proba(mean, cov)
    res = gpc_softmax(K[0] if shared else K, y)
    proba = res.posterior.predict_proba(Kx[0] if shared else Kx, kd[0] if shared else kd)
    assert proba.shape == (len(Xs), C)
    np.testing.assert_allclose(proba.sum(1), 1.0, atol=1e-12)
    # 1e-3 is the accuracy claimed; 5 standard errors (computed: about 1e-4
    # here) keep the fixed-seed MC estimate from deciding the outcome.
    assert np.all(np.abs(proba - mc) <= 1e-3 + 5 * se_mc)


def estimator_kernel(hyps, shared):
    # Bounds wide enough for the separated cases' variances (gpc's default stops
    # at 1e5), so that no hyperparameter sits on a bound.
    kernels = [SquaredExponential(length_scale=ell, variance=sf2,
                                  variance_bounds=(1e-5, 1e8)) for ell, sf2 in hyps]
    return kernels[0] if shared else kernels


@pytest.mark.parametrize("name", ["C3-shared", "C4-per-class", "C2-per-class",
                                  "C3-per-class-separated"])
def test_api_estimator_matches_reference(name):
    X, y, Xs, C, hyps, shared = problem(name)
    # Non-contiguous labels: the classes_ order (sorted) is the order of the
    # per-class kernels and of the columns of the outputs.
    labels = np.array([3, 7, 11, 20])[:C]
    clf = gpc.GaussianProcessClassifier(estimator_kernel(hyps, shared),
                                        multi_class="multinomial", optimizer=None)
    clf.fit(X, labels[y])
    K, Kx, kd = gram_stacks(X, Xs, hyps)
    ref = reference_laplace(K, y, C)
    tol = api_tolerances(ref, Kx, kd)
    assert abs(clf.log_marginal_likelihood_value_ - ref.log_evidence) < tol.evidence
    mean, cov = clf.latent_mean_and_variance(Xs)
    m, S = reference_predict(ref, Kx, kd)
    np.testing.assert_allclose(mean, m, rtol=0, atol=tol.mean)
    np.testing.assert_allclose(cov, S, rtol=0, atol=tol.cov)
    mc, se_mc = monte_carlo_proba(m, S, pairs=250_000)
    assert np.all(np.abs(clf.predict_proba(Xs) - mc) <= 1e-3 + 5 * se_mc)
    # Away from the fitted hyperparameters: value and gradient.
    theta = theta_of(hyps, shared)
    theta = theta + np.random.RandomState(C).uniform(-0.3, 0.3, theta.shape)
    value, grad = clf.log_marginal_likelihood(theta, eval_gradient=True)
    fun = reference_evidence_at(X, y, C, shared)
    hyps_t = hyps_from_theta(theta, C, shared)
    ref = reference_laplace(np.stack([se(X, *h) for h in hyps_t]), y, C)
    assert abs(value - ref.log_evidence) < api_tolerances(ref, Kx, kd).evidence
    np.testing.assert_allclose(grad, richardson_gradient(fun, theta),
                               rtol=1e-5, atol=1e-8)
