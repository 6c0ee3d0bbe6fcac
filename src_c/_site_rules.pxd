# The site rules of the Gaussian-site methods, EP and posterior linearisation (PL):
# how one site is refitted from its marginal, and the log evidence at a set of sites.
# The loop that runs them over all sites (factorisations, marginals, parallel and
# sequential sweeps) is shared, in _site_loop.pyx; it asks a Model which rule to use.
#
# * EP (RULE_EP): the site that matches the tilted moments at the cavity (R&W
#   section 3.6); its evidence is R&W eq. 3.65.
# * PL (RULE_PL): the site of the statistical linear regression of the label on f
#   under the marginal (Garcia-Fernandez et al. 2019); its evidence is the linearised
#   model's times a one-dimensional correction per label.
#
# Every function is `cdef inline` (as in _lik.pxd), so the loop compiles its own copy
# and calls it with no indirection; _pl.pyx wraps PL's for Python.  The Model
# (the likelihood, the rule and PL's evidence rule) is the one of _model.pxd.

from libc.math cimport exp, fabs, log, log1p, sqrt, isfinite, INFINITY, M_PI, NAN

from _lik cimport (LIK_GAUSSIAN, LIK_NOISY_THRESHOLD, LIK_STEP, Quad, _clamp, _ell,
                   lik_tempered_eps, lik_tempered_moments)
from _model cimport (Model, RULE_EP, RULE_PL, model_derivs, model_moments,
                    model_site_moments, model_site_power, model_site_root,
                    model_weight)


# ---- posterior linearisation's rule

cdef inline bint _slr(const Model* md, double yi, double v, double m, double* tau,
                      double* nu, double* dpos, double* dneg, double* x) noexcept nogil:
    """Posterior linearisation's site at the marginal N(f; m, v): the statistical
    linear regression y ~ A f + b + e, e ~ N(0, Omega), of the label on f, as the
    Gaussian site tau = A^2 / Omega, nu = A (y - b) / Omega.

    Labels +-1 (conditional mean E[y|f] = 2 p(+1|f) - 1, variance 1 - E[y|f]^2):
    with Z_s = E[p(s|f)] and d_s = d log Z_s / dm (the moments EP uses) for s = y and
    -y, and x = -v d_y d_{-y} in [0, 1):  A = 2 y Z_y d_y,  y - b = 2 y Z_{-y}
    (1 - m d_{-y}),  Omega = 4 Z_y Z_{-y} (1 - x) (the regression error: positive), so

        tau = -d_y d_{-y} / (1 - x),   nu = d_y (1 - m d_{-y}) / (1 - x),

    which involve no difference of nearly equal numbers and no division by a
    vanishing Z or d.  Also returns dpos = d_y and dneg = d_{-y} (for the
    evidence).  The Gaussian likelihood (conditional mean f, variance s2) gives
    A = 1, b = 0, Omega = s2: the exact site.  Returns False where the moments are
    not finite."""
    cdef double lzy, lzn, dy, dn, d2, dpar
    if md.lik == LIK_GAUSSIAN:
        tau[0] = 1.0 / md.par[0]
        nu[0] = yi / md.par[0]
        dpos[0] = 0.0
        dneg[0] = 0.0
        x[0] = 0.0
        return True
    model_moments(md, yi, m, v, &lzy, &dy, &d2, &dpar)
    model_moments(md, -yi, m, v, &lzn, &dn, &d2, &dpar)
    x[0] = -v * dy * dn
    if not (isfinite(lzy) and isfinite(lzn) and isfinite(dy) and isfinite(dn)
            and 0.0 <= x[0] < 1.0):
        return False
    tau[0] = -dy * dn / (1.0 - x[0])
    nu[0] = dy * (1.0 - m * dn) / (1.0 - x[0])
    dpos[0] = dy
    dneg[0] = dn
    return True


cdef inline double _pl_correction_threshold(const Model* md, double yi, double m,
                                            double v, double tau, double nu,
                                            double power, double* sums) noexcept nogil:
    """``_pl_correction`` in closed form for p(y|f) = eps + (1 - 2 eps) H(y f) (the
    noisy threshold; eps = 0: the step).  N(f; m, v) exp(tau f^2 / 2 - nu f) =
    C N(f; mc, vc), the marginal's cavity: with a = 1 - tau v,

      vc = v / a,   mc = (m - v nu) / a,
      log C = -log(a) / 2 + (mc^2 / vc - m^2 / v) / 2
            = -log(a) / 2 + (v nu^2 - 2 m nu + tau m^2) / (2 a),

    so c = log C + log Z(mc, vc), Z = eps + (1 - 2 eps) Phi(zc), zc = y mc / sqrt(vc):
    EP's evidence term at that cavity (its moments by ``lik_gauss_moments``).  For
    zc < 0, C Phi(zc) is written as exp(-log(a) / 2 - m^2 / (2 v) + ell(zc)) with
    ell = log Phi + z^2 / 2 (no cancellation between a large log C and log Phi), and
    c = log(eps C + (1 - 2 eps) C Phi(zc)).  The derivatives with the site held
    fixed follow from the Gaussian's, dc/dm = (E[f] - m) / v and dc/dv = ((E[f] -
    m)^2 + Var f - v) / (2 v^2) under the tilted law N(mc, vc) p(y|f), with
    E[f] = mc + vc d1 and Var f = vc + vc^2 d2 (d1, d2 the derivatives of log Z in
    mc): dc/dm = (tau m - nu + d1) / a, dc/dv = ((dc/dm)^2 + tau / a + d2 / a^2) / 2.
    Unlike a rule's sums they include the step's delta function at f = 0.
    dc/d eps = d log Z / d eps.  A cavity that is not proper (a <= 0) makes the
    integral diverge: +inf (sums NaN).  The likelihood to a ``power`` below 1 is
    A times the noisy threshold of eps' (``lik_tempered_eps``; the step is
    unchanged): the same with eps' and log A added (Z and its derivatives from
    ``lik_tempered_moments``)."""
    cdef double eps = md.par[0] if md.lik == LIK_NOISY_THRESHOLD else 0.0
    cdef double a = 1.0 - tau * v, vc, mc, zc, lc, lz, d1, d2, dpar, a1, a2, c, gm, ef
    cdef double log_a = 0.0, big_a
    cdef int k
    if power < 1.0 and eps > 0.0:
        eps = lik_tempered_eps(eps, power, &big_a)
        log_a = log(big_a)
    if not (a > 0.0):
        if sums != NULL:
            for k in range(5):
                sums[k] = NAN
        return INFINITY
    vc = v / a
    mc = (m - v * nu) / a
    zc = _clamp(yi * mc / sqrt(vc))
    lc = -0.5 * log(a) + (v * nu * nu - 2.0 * m * nu + tau * m * m) / (2.0 * a)
    lik_tempered_moments(md.lik, yi, mc, vc, md.par, power, &md.quad, &lz, &d1, &d2,
                         &dpar)
    if zc >= 0.0:
        c = lc + lz
    else:
        a1 = log(eps) + lc if eps > 0.0 else -INFINITY
        a2 = log1p(-2.0 * eps) - 0.5 * log(a) - 0.5 * (m / v) * m + _ell(zc)
        c = a1 if a1 > a2 else a2
        if c > -INFINITY:
            c += log1p(exp(-fabs(a1 - a2))) + log_a
    if sums != NULL:
        gm = (tau * m - nu + d1) / a
        ef = m + v * gm
        sums[0] = gm
        sums[1] = 0.5 * (gm * gm + tau / a + d2 / (a * a))
        sums[2] = ef
        sums[3] = ef * ef + vc + vc * vc * d2
        sums[4] = dpar
    return c


cdef inline double _pl_correction(const Model* md, double yi, double m, double v,
                                  double tau, double nu, double power,
                                  double* sums) noexcept nogil:
    """log E[p(y | f)^power exp(e(f))] under the marginal N(f; m, v), e(f) = tau f^2
    / 2 - nu f with the label's site (tau, nu): the per-label term of posterior
    linearisation's evidence (see ``_pl_log_evidence``; power 1 but for a weight
    below 1, see ``model_site_power``).  By the rule md.evq,
    log sum_k w_k p(y | f_k) exp(e(f_k)) with f_k = m + sqrt(v) x_k; in closed form
    for the step and the noisy threshold (``_pl_correction_threshold``), whose
    step-shaped integrand makes a rule's sum jump whenever a node crosses f = 0.

    With ``sums`` (5 doubles) and pi_k the normalised terms, also the derivatives
    with the site held fixed, h'(f) = d log p / df + tau f - nu being the derivative
    of the log term in f: sums = (dc/dm = sum_k pi_k h'(f_k), dc/dv = sum_k pi_k
    h'(f_k) x_k / (2 sqrt(v)), E[f] = sum_k pi_k f_k, E[f^2], dc/dpar[0]).  All sums
    are 0 when every term vanishes (then -inf is returned)."""
    cdef const Quad* q = &md.evq
    cdef int k
    cdef double sq = sqrt(v), mx = -INFINITY, acc = 0.0, a, h, f, lp, g1, g2, g3
    if md.lik == LIK_STEP or md.lik == LIK_NOISY_THRESHOLD:
        return _pl_correction_threshold(md, yi, m, v, tau, nu, power, sums)
    for k in range(q.n):
        f = m + sq * q.x[k]
        model_derivs(md, yi, f, &lp, &g1, &g2, &g3)
        a = q.logw[k] + power * lp + f * (0.5 * tau * f - nu)
        if a > mx:
            mx = a
    if sums != NULL:
        for k in range(5):
            sums[k] = 0.0
    if not (mx > -INFINITY):
        return mx
    for k in range(q.n):
        f = m + sq * q.x[k]
        model_derivs(md, yi, f, &lp, &g1, &g2, &g3)
        h = exp(q.logw[k] + power * lp + f * (0.5 * tau * f - nu) - mx)
        acc += h
        if sums == NULL:
            continue
        g1 = power * g1 + tau * f - nu
        sums[0] += h * g1
        sums[1] += h * g1 * q.x[k]
        sums[2] += h * f
        sums[3] += h * f * f
    if sums != NULL:
        for k in range(5):
            sums[k] /= acc
        sums[1] /= 2.0 * sq
    return mx + log(acc)


cdef inline bint _pl_label_ok(const Model* md, double yi, double m, double v,
                              double tau) noexcept nogil:
    """Whether a label enters PL's evidence: its SLR at the marginal is finite
    and its cavity 1/v - tau proper.  The cavity is proper in exact arithmetic;
    where a site is far more precise than the prior (a collapsed marginal, seen
    in unconverged runs at site precisions ~1e12) the rounding of v can hide it."""
    cdef double t, nu, dy, dn, x
    return _slr(md, yi, v, m, &t, &nu, &dy, &dn, &x) and tau * v < 1.0


cdef inline double _pl_log_evidence(const Model* md, const double[::1] y,
                                    const double* tau, const double* nu,
                                    const double* var, const double* mu,
                                    const double* L, int n, int* n_bad) noexcept nogil:
    """Posterior linearisation's log evidence (its paper, eq. 18-19): the exact
    evidence of the linearised model times, for each label, the 1-D correction
    E[p(y_i|f) / N(y_i; A_i f + b_i, Omega_i)] under the marginal N(mu_i, P_i).
    With the site form of the linearised model,

      log Z_lin = -log|B|/2 + nu'mu/2 - sum_i [log(2 pi Omega_i) + (y_i - b_i)^2 / Omega_i] / 2,

    the log(2 pi Omega_i)/2 cancels against the correction's, and with u(f) =
    (y - b - A f) / sqrt(Omega), (u(f)^2 - u(0)^2) / 2 = tau f^2 / 2 - nu f for the
    site tau = A^2 / Omega, nu = A (y - b) / Omega, so

      log Z = -log|B|/2 + nu'mu/2 + sum_i log E_{N(mu_i, P_i)}[p(y_i|f) exp(tau_i f^2 / 2 - nu_i f)]

    (``_pl_correction``): EP's evidence expression at PL's sites.  The sites are
    the current ones, equal to the SLR at the marginals at a fixed point; off it
    (an unconverged run) the value is that of the current sites, and finite:
    non-negative sites keep every cavity 1/P_i - tau_i proper, whereas the SLR at a
    marginal can be more precise than the marginal (x >= 1/2 in ``_slr``'s terms,
    e.g. for the step wherever |mu_i| < 0.81 sqrt(P_i), as in the first sweep),
    and the integral then diverges.  Labels left out by ``_pl_label_ok`` are
    counted in n_bad.  The Gaussian likelihood is linear: no correction.

    With weights, label i's site approximates p(y_i|f)^(w_i), and its term is
    s_i times the correction of p^(w_i / s_i) at the site's root t_i^(1 / s_i),
    s_i the site's power (``model_site_power``; power EP's evidence term, see
    ``_log_evidence``); a zero weight adds nothing.  The Gaussian's constant term
    is w_i times its unweighted one."""
    cdef int i
    cdef double total = 0.0, wi, si, ti
    n_bad[0] = 0
    for i in range(n):
        total += 0.5 * nu[i] * mu[i] - log(L[i + i * n])
        wi = model_weight(md, i)
        if wi == 0.0:
            continue
        if md.lik == LIK_GAUSSIAN:
            total -= 0.5 * wi * (log(2.0 * M_PI * md.par[0]) + y[i] * y[i] / md.par[0])
            continue
        si = model_site_power(md, i)
        ti = model_site_root(md, i, tau[i])
        if not _pl_label_ok(md, y[i], mu[i], var[i], ti):
            n_bad[0] += 1
            continue
        total += si * _pl_correction(md, y[i], mu[i], var[i], ti,
                                     model_site_root(md, i, nu[i]), wi / si, NULL)
    return total


# ---- the rule of a run: EP's moment matching, or PL's regression

cdef inline int _site_update(const Model* md, int i, double yi, double tau_i,
                             double nu_i, double var_i, double mu_i, double damping,
                             bint clip, double* tau_new, double* nu_new) noexcept nogil:
    """One update of site i from the marginal (var_i, mu_i).  Returns its flags:
    bit 0 = skipped (improper cavity), bit 1 = clipped (tilted variance rounded to
    <= 0, or, with ``clip``, a negative site precision), bit 2 = non-finite
    moments (skipped).

    With weights, the site approximates p(y_i|f)^(w_i): by power EP of the site's
    power s_i (``model_site_power``), the cavity removes the site's root
    t_i^(1 / s_i), the tilted law is the cavity times p(y_i|f)^(w_i / s_i), and
    the new site is the moment-matched one raised to s_i (its natural parameters
    times s_i); PL's regression site is raised to w_i likewise.  A zero weight
    holds the site at 1 (tau = nu = 0)."""
    cdef double si = model_site_power(md, i)
    cdef double tau_cav = 1.0 / var_i - model_site_root(md, i, tau_i)
    cdef double nu_cav = mu_i / var_i - model_site_root(md, i, nu_i)
    cdef double v_cav, m_cav, logZ, d1, d2, dpar, denom, t_new, n_new
    cdef int flags = 0
    if si == 0.0:
        tau_new[0] = 0.0
        nu_new[0] = 0.0
        return 0
    if md.rule == RULE_PL:
        if not _slr(md, yi, var_i, mu_i, &t_new, &n_new, &d1, &d2, &dpar):
            tau_new[0] = tau_i
            nu_new[0] = nu_i
            return 4
        si = model_weight(md, i)            # PL's site: the regression to w_i
        tau_new[0] = (1.0 - damping) * tau_i + damping * si * t_new
        nu_new[0] = (1.0 - damping) * nu_i + damping * si * n_new
        return 0
    if not (tau_cav > 0.0) or not isfinite(tau_cav):
        tau_new[0] = tau_i
        nu_new[0] = nu_i
        return 1
    v_cav = 1.0 / tau_cav
    m_cav = nu_cav * v_cav
    model_site_moments(md, i, yi, m_cav, v_cav, &logZ, &d1, &d2, &dpar)
    if not (isfinite(d1) and isfinite(d2)):
        tau_new[0] = tau_i
        nu_new[0] = nu_i
        return 4
    denom = 1.0 + d2 * v_cav
    if denom > 0.0 and (d2 <= 0.0 or not clip):
        t_new = -d2 / denom
        n_new = (d1 - m_cav * d2) / denom
    else:
        t_new = 0.0
        n_new = d1
        flags = 2
    tau_new[0] = (1.0 - damping) * tau_i + damping * si * t_new
    nu_new[0] = (1.0 - damping) * nu_i + damping * si * n_new
    return flags


cdef inline double _log_evidence(const Model* md, const double[::1] y,
                                 const double* tau, const double* nu, const double* var,
                                 const double* mu, const double* L, double logdet_c,
                                 double* dlik, int* n_bad) noexcept nogil:
    """EP log evidence at the n = len(y) sites (GPML's arrangement of R&W eq. 3.65,
    zero prior mean; log|I + K T|/2 = sum log L_ii + logdet_c with the negative
    sites) and d log Z_EP / d par[0] = sum_i d log Z_i / d par[0] at the
    cavities (exact at a fixed point).  Sites with an improper cavity are left out
    and counted in n_bad.

    With weights (power EP, see ``_site_update``), site i's term, log Z_i of its
    tilted law minus the log normaliser of the cavity times the site's root
    (tau_i / s_i, nu_i / s_i), is multiplied by the site's power s_i, as is its
    d/d par[0]; a zero weight adds nothing (its site is 1).  The Gaussian terms
    are those of the sites."""
    cdef int i, n = y.shape[0]
    cdef double tau_cav, nu_cav, logZ, d1, d2, dpar, total = 0.0, nu_mu = 0.0
    cdef double si, ti, ni, term
    dlik[0] = 0.0
    n_bad[0] = 0
    if md.rule == RULE_PL:
        return _pl_log_evidence(md, y, tau, nu, var, mu, L, n, n_bad)
    for i in range(n):
        total -= log(L[i + i * n])
        nu_mu += nu[i] * mu[i]
        si = model_site_power(md, i)
        if si == 0.0:
            continue
        ti = model_site_root(md, i, tau[i])
        ni = model_site_root(md, i, nu[i])
        tau_cav = 1.0 / var[i] - ti
        nu_cav = mu[i] / var[i] - ni
        if not (tau_cav > 0.0):
            n_bad[0] += 1
            continue
        model_site_moments(md, i, y[i], nu_cav / tau_cav, 1.0 / tau_cav, &logZ, &d1,
                           &d2, &dpar)
        dlik[0] += si * dpar
        term = logZ + 0.5 * nu_cav * (ti / tau_cav * nu_cav - 2.0 * ni) / (ti + tau_cav)
        term -= 0.5 * ni * ni / (tau_cav + ti)
        term += 0.5 * log(1.0 + ti / tau_cav)
        total += si * term
    return total + 0.5 * nu_mu - logdet_c
