"""EP in 50-digit arithmetic: an independent reference for gpc's EP gradient where
double precision barely resolves the evidence.

Sequential EP (fixed order, undamped, to a site change of 1e-30) written out with
mpmath on scikit-learn's GPC test data (30 inputs on a line, labels in four runs)
with ``RBF(l)`` and the noisy threshold (``eps > 0``) or the step (``eps = 0``).
Its evidence is differentiated in log l by central differences of step 1e-12 (at
50 digits their error is far below double precision), each side refitted from the
centre's sites, and compared with gpc's analytic gradient in double precision.
There Richardson differences of gpc's own evidence resolve the derivative only to
``info["evidence_rounding"] / h`` (about 5e-6 at l = 31.6 for the threshold).

``python bench/ep_multiprecision.py EPS LENGTH_SCALE`` (e.g. ``0.1 31.6`` or
``0 10``; needs mpmath) prints both, in 3 to 8 minutes.
"""

import argparse
import warnings

import mpmath as mp
import numpy as np
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.tests import test_gpc as skt

from gpc.evidence import EvidenceObjective
from gpc.likelihoods import NoisyThreshold, Step

X = skt.X[:, 0]
Y = np.where(skt.y > 0, 1.0, -1.0)


def kernel_matrix(ls):
    ls, x = mp.mpf(ls), [mp.mpf(float(v)) for v in X]
    return mp.matrix([[mp.exp(-(a - b) ** 2 / (2 * ls * ls)) for b in x] for a in x])


def moments(y, m, v, eps):
    """log Z and its first two derivatives in m of eps + (1 - 2 eps) Phi(y f)
    under N(f; m, v)."""
    sv = mp.sqrt(v)
    z = y * m / sv
    Z = eps + (1 - 2 * eps) * mp.ncdf(z)
    d1 = (1 - 2 * eps) * mp.npdf(z) * y / sv / Z
    d2 = -(1 - 2 * eps) * mp.npdf(z) * z / v / Z - d1 * d1
    return mp.log(Z), d1, d2


def posterior(K, tau):
    """``(Sigma, log det(I + K T))`` of the sites' precisions tau."""
    A = mp.eye(K.rows) + K * mp.diag(tau)
    return mp.inverse(A) * K, mp.log(mp.det(A))


def cavity(Sigma, mu, tau, nu, i):
    """Site i's cavity ``(mean, variance)``, or None when it is improper."""
    tc = 1 / Sigma[i, i] - tau[i]
    return None if tc <= 0 else ((mu[i] / Sigma[i, i] - nu[i]) / tc, 1 / tc)


def ep(K, eps, tau=None, nu=None, tol=mp.mpf(10) ** -30, max_sweeps=2000):
    """Sequential EP from the sites (tau, nu) (the prior when None): ``(tau, nu)``."""
    n = K.rows
    tau = [mp.mpf(0)] * n if tau is None else list(tau)
    nu = [mp.mpf(0)] * n if nu is None else list(nu)
    for _ in range(max_sweeps):
        Sigma, _ = posterior(K, tau)
        change = 0
        for i in range(n):
            cav = cavity(Sigma, Sigma * mp.matrix(nu), tau, nu, i)
            if cav is None:
                continue                       # skipped, as gpc does
            mc, vc = cav
            _, d1, d2 = moments(Y[i], mc, vc, eps)
            t_new = -d2 / (1 + d2 * vc)
            n_new = (d1 - mc * d2) / (1 + d2 * vc)
            change = max(change, abs(t_new - tau[i]) / (1 + abs(t_new)),
                         abs(n_new - nu[i]) / (1 + abs(n_new)))
            dt = t_new - tau[i]
            col = Sigma[:, i]
            Sigma -= (dt / (1 + dt * Sigma[i, i])) * (col * col.T)
            tau[i], nu[i] = t_new, n_new
        if change < tol:
            return tau, nu
    raise RuntimeError("multiple-precision EP did not converge")


def log_evidence(K, tau, nu, eps):
    """EP's log evidence at the sites (the form of Rasmussen & Williams, 3.65)."""
    Sigma, logdet = posterior(K, tau)
    mu = Sigma * mp.matrix(nu)
    total = -logdet / 2 + mp.fsum(nu[i] * mu[i] for i in range(K.rows)) / 2
    for i in range(K.rows):
        cav = cavity(Sigma, mu, tau, nu, i)
        if cav is None:
            raise RuntimeError(f"site {i}'s cavity is improper at the fixed point")
        mc, vc = cav
        t, v = tau[i], nu[i]
        total += (moments(Y[i], mc, vc, eps)[0] + mp.log(1 + t * vc) / 2
                  - (v * v * vc + 2 * v * mc - t * mc * mc) / (2 * (1 + t * vc)))
    return total


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("eps", type=float, help="label-flip probability (0: the step)")
    ap.add_argument("length_scale", type=float)
    args = ap.parse_args(argv)
    mp.mp.dps = 50
    eps, ls, h = mp.mpf(args.eps), args.length_scale, mp.mpf(10) ** -12
    tau, nu = ep(kernel_matrix(ls), eps)
    sides = []
    for s in (1, -1):
        Kh = kernel_matrix(mp.mpf(ls) * mp.exp(s * h))
        sides.append(log_evidence(Kh, *ep(Kh, eps, tau, nu), eps))
    exact = (sides[0] - sides[1]) / (2 * h)
    lik = NoisyThreshold(args.eps) if args.eps > 0 else Step()
    obj = EvidenceObjective(RBF(ls), skt.X, Y, lik, "ep")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, grad = obj(obj.theta)
    reference = log_evidence(kernel_matrix(ls), tau, nu, eps)
    print(f"eps {args.eps:g}, RBF({ls:g}): log evidence {mp.nstr(reference, 17)} "
          f"(50 digits), {value!r} (gpc)")
    print(f"d/d log length scale: {mp.nstr(exact, 15)} (50 digits), {grad[0]!r} (gpc), "
          f"relative difference {abs(grad[0] - float(exact)) / abs(float(exact)):.2e}")


if __name__ == "__main__":
    main()
