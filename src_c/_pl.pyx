# Posterior linearisation's site rule and evidence correction (_site_rules.pxd) for
# Python: its sites at given marginals (tests) and the corrections' derivatives (its
# evidence gradient, gpc/inference/pl.py).

from libc.math cimport NAN

import numpy as np

from _lik cimport LIK_GAUSSIAN
from _model cimport (Model, model_check_weights, model_of, model_raise,
                    model_site_power, model_site_root, model_weight)
from _site_rules cimport _pl_correction, _pl_label_ok, _slr


def pl_correction_gradients(model, const double[::1] y, const double[::1] mu,
                            const double[::1] var, const double[::1] tau,
                            const double[::1] nu):
    """Posterior linearisation's evidence corrections c_i (``_pl_correction``, with
    the likelihood and the evidence rule of ``model``, a
    ``gpc._model.LikelihoodModel``) at
    the marginals N(mu_i, var_i) and sites (tau_i, nu_i), as in its evidence, and
    their derivatives with the sites held fixed: (dc/dmu, dc/dP, E[f], E[f^2]) per
    label under the tilted law (E[f] and E[f^2] give the derivatives with respect
    to the site: d/dnu = -E[f], d/dtau = E[f^2] / 2), and dc/dpar[0] summed over
    the labels.  Returns (g_mu, g_P, e_f, e_f2, dpar, c); zeros for the Gaussian
    likelihood (no correction) and for the labels left out of the evidence
    (``_pl_label_ok``).

    With the model's weights, label i's term is s_i c_i at the site's root
    (tau_i / s_i, nu_i / s_i), c_i the correction of p^(w_i / s_i), s_i the site's
    power (``model_site_power``), as in the evidence: c_i, dc/dmu, dc/dP and
    dc/dpar are s_i times the root's, E[f] and E[f^2] the root's tilted moments
    (which are again the derivatives with respect to the site (tau_i, nu_i));
    zeros for a zero weight."""
    cdef int n = y.shape[0], i
    cdef const Model* md = model_of(model)
    cdef double dpar = 0.0, wi, si
    cdef double sums[5]
    if mu.shape[0] != n or var.shape[0] != n or tau.shape[0] != n or nu.shape[0] != n:
        raise ValueError("y, mu, var, tau and nu must have the same length.")
    model_check_weights(md, n)
    g_mu = np.zeros(n)
    g_P = np.zeros(n)
    e_f = np.zeros(n)
    e_f2 = np.zeros(n)
    corr = np.zeros(n)
    cdef double[::1] cv = corr
    cdef double[::1] gm = g_mu
    cdef double[::1] gp = g_P
    cdef double[::1] ef = e_f
    cdef double[::1] ef2 = e_f2
    if md.lik == LIK_GAUSSIAN or n == 0 or md.evq.n == 0:
        return g_mu, g_P, e_f, e_f2, dpar, corr
    with nogil:
        for i in range(n):
            wi = model_weight(md, i)
            si = model_site_power(md, i)
            if wi == 0.0 or not _pl_label_ok(md, y[i], mu[i], var[i],
                                             model_site_root(md, i, tau[i])):
                continue
            cv[i] = si * _pl_correction(md, y[i], mu[i], var[i],
                                        model_site_root(md, i, tau[i]),
                                        model_site_root(md, i, nu[i]), wi / si, sums)
            gm[i] = si * sums[0]
            gp[i] = si * sums[1]
            ef[i] = sums[2]
            ef2[i] = sums[3]
            dpar += si * sums[4]
    model_raise(model)
    return g_mu, g_P, e_f, e_f2, dpar, corr


def pl_sites(model, const double[::1] y, const double[::1] mu, const double[::1] var):
    """Posterior linearisation's sites (tau, nu) at the marginals N(mu_i, var_i)
    (``_slr``, with the likelihood of ``model``, a ``gpc._model.LikelihoodModel``);
    NaN where the moments are not finite.  With the model's weights, each site is
    raised to its weight (its natural parameters times w_i), as in PL's update;
    0 for a zero weight."""
    cdef int n = y.shape[0], i
    cdef const Model* md = model_of(model)
    cdef double dy, dn, x
    if mu.shape[0] != n or var.shape[0] != n:
        raise ValueError("y, mu and var must have the same length.")
    model_check_weights(md, n)
    tau = np.empty(n)
    nu = np.empty(n)
    cdef double[::1] tv = tau
    cdef double[::1] nv = nu
    with nogil:
        for i in range(n):
            if model_weight(md, i) == 0.0:
                tv[i] = 0.0                   # the site is held at 1
                nv[i] = 0.0
            elif not _slr(md, y[i], var[i], mu[i], &tv[i], &nv[i], &dy, &dn, &x):
                tv[i] = NAN
                nv[i] = NAN
            else:
                tv[i] *= model_weight(md, i)
                nv[i] *= model_weight(md, i)
    model_raise(model)
    return tau, nu
