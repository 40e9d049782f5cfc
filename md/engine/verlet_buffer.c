/* The pair-list buffer from an energy-drift tolerance: the estimate and the choice (the model
 * and its assumptions: verlet_buffer.h), and the public halox_md_verlet_drift() and
 * halox_md_config_verlet(). */
#include "engine/verlet_buffer.h"

#include <math.h>

#include "halox/md.h"
#include "halox/status.h"

const int md__vbuf_candidates[] = {10, 20, 25, 40, 50, 80, 100};
const int md__vbuf_ncandidates = (int)(sizeof md__vbuf_candidates / sizeof md__vbuf_candidates[0]);

/* strict C11 has no M_PI */
#define MD_VBUF_PI    3.14159265358979323846
#define MD_VBUF_SQRT2 1.41421356237309504880

/* Simpson intervals over the integration range (even): the range is at most about 12 s or
 * rc - r_core wide, so that Q (which varies on the scale s) and U (on the scale r / 12 near the
 * core) both get tens of points per scale */
#define MD_VBUF_INTERVALS 2000
/* Gaussian widths beyond which Q is below 1e-31 */
#define MD_VBUF_TAIL_WIDTHS 12.0

/* |U(r)|: the LJ 12-6 energy of a pair at r, shifted by V(rc) or not */
static double md__vbuf_u(double r, double vrc)
{
    const double i6 = 1.0 / (r * r * r * r * r * r);
    return fabs(4.0 * (i6 * i6 - i6) - vrc);
}

/* Q(r): the probability that the point at distance r from the centre, displaced by an isotropic
 * Gaussian of width s per dimension, lies outside the sphere of radius rl (r < rl, s > 0). Both
 * terms are >= 0: no cancellation, so tiny probabilities keep their digits. */
static double md__vbuf_q(double r, double rl, double s)
{
    const double a = (rl - r) / (MD_VBUF_SQRT2 * s), c = (rl + r) / (MD_VBUF_SQRT2 * s);
    const double tail = 0.5 * (erfc(a) + erfc(c));
    const double edge = s / (r * sqrt(2.0 * MD_VBUF_PI)) * (exp(-a * a) - exp(-c * c));
    return tail + edge;
}

double md__vbuf_drift(const md_vbuf_system_t *sy, int nstlist, double buffer)
{
    const double rc = sy->cutoff, rl = rc + buffer;
    const double t = nstlist * sy->dt;
    const double s = sqrt(2.0 * sy->temp / sy->mass) * t; /* relative displacement, per dim */
    if (!(s > 0))
        return 0.0; /* nothing moves */
    const double core = fmin(1.0, 0.5 * rc);
    const double lo = fmax(core, rl - MD_VBUF_TAIL_WIDTHS * s);
    if (!(lo < rc))
        return 0.0; /* no pair from beyond rl reaches rc within 12 widths */
    const double vrc = sy->shifted ? 4.0 * (pow(rc, -12.0) - pow(rc, -6.0)) : 0.0;
    const int m = MD_VBUF_INTERVALS;
    const double h = (rc - lo) / m;
    double sum = 0.0;
    for (int k = 0; k <= m; k++) {
        const double r = k == m ? rc : lo + k * h;
        const double w = k == 0 || k == m ? 1.0 : k % 2 ? 4.0 : 2.0;
        sum += w * 4.0 * MD_VBUF_PI * r * r * md__vbuf_q(r, rl, s) * md__vbuf_u(r, vrc);
    }
    const double per_rebuild = 0.5 * sy->density * sum * h / 3.0; /* energy per atom */
    return per_rebuild / t;
}

double md__vbuf_cost(double cutoff, double buffer, int nstlist, double rebuild_cost)
{
    const double g = (cutoff + buffer) / cutoff;
    return g * g * g * (1.0 + rebuild_cost / nstlist);
}

/* the buffer of grid point k: k hundredths of the cut-off */
static double md__vbuf_at(const md_vbuf_system_t *s, int k)
{
    return k * (MD_VBUF_STEP * s->cutoff);
}

int md__vbuf_min_buffer(const md_vbuf_system_t *s, int nstlist, double tol, double *buffer,
                        double *drift)
{
    double d = md__vbuf_drift(s, nstlist, 0.0);
    if (d <= tol) {
        *buffer = 0.0;
        *drift = d;
        return 0;
    }
    double d_hi = md__vbuf_drift(s, nstlist, md__vbuf_at(s, MD_VBUF_MAX_STEPS));
    if (!(d_hi <= tol)) {
        *drift = d_hi;
        return -1;
    }
    /* bisection on the grid (the estimate falls with the buffer): lo above tol, hi within */
    int lo = 0, hi = MD_VBUF_MAX_STEPS;
    while (hi - lo > 1) {
        const int mid = lo + (hi - lo) / 2;
        const double dm = md__vbuf_drift(s, nstlist, md__vbuf_at(s, mid));
        if (dm <= tol) {
            hi = mid;
            d_hi = dm;
        } else {
            lo = mid;
        }
    }
    *buffer = md__vbuf_at(s, hi);
    *drift = d_hi;
    return 0;
}

int md__vbuf_choose(const md_vbuf_system_t *s, double tol, double rebuild_cost, const int *cand,
                    int n, int *nstlist, double *buffer, double *drift)
{
    int found = 0;
    double best = 0;
    for (int i = 0; i < n; i++) {
        double b, d;
        if (md__vbuf_min_buffer(s, cand[i], tol, &b, &d) != 0)
            continue;
        const double cost = md__vbuf_cost(s->cutoff, b, cand[i], rebuild_cost);
        /* ties: the longer interval (fewer rebuilds at the same cost) */
        if (!found || cost < best || (cost == best && cand[i] > *nstlist)) {
            found = 1;
            best = cost;
            *nstlist = cand[i];
            *buffer = b;
            *drift = d;
        }
    }
    return found ? 0 : -1;
}

/* ---- public -------------------------------------------------------------------------------- */

static int md__vbuf_finite_pos(double v) { return isfinite(v) && v > 0; }

double halox_md_verlet_drift(double temp, double density, double cutoff, double dt, int shift,
                             int rebuild_every, double skin)
{
    if (!(isfinite(temp) && temp >= 0) || !md__vbuf_finite_pos(density) ||
        !md__vbuf_finite_pos(cutoff) || !md__vbuf_finite_pos(dt) || rebuild_every < 1 ||
        !(isfinite(skin) && skin >= 0))
        return NAN;
    const md_vbuf_system_t s = {.temp = temp,
                                .density = density,
                                .mass = 1.0,
                                .cutoff = cutoff,
                                .dt = dt,
                                .shifted = shift != 0};
    return md__vbuf_drift(&s, rebuild_every, skin);
}

halox_status_t halox_md_config_verlet(halox_md_config_t *cfg, double density, unsigned keep,
                                      double rebuild_cost, halox_md_verlet_t *out)
{
    if (!cfg || !out)
        return halox_set_error(HALOX_ERR_INVALID_ARG, "Verlet buffer: NULL argument");
    const double tol = cfg->verlet_tolerance;
    if (!md__vbuf_finite_pos(tol))
        return halox_set_error(HALOX_ERR_INVALID_ARG,
                               "Verlet-buffer tolerance %g: give a finite energy drift > 0 (energy "
                               "per atom per unit time, reduced units)",
                               tol);
    if (!(density > 0))
        density = cfg->density;
    if (!md__vbuf_finite_pos(density))
        return halox_set_error(HALOX_ERR_INVALID_ARG,
                               "Verlet-buffer tolerance: density %g: the estimate needs the "
                               "system's finite density > 0",
                               density);
    if (!(isfinite(cfg->temp) && cfg->temp >= 0))
        return halox_set_error(HALOX_ERR_INVALID_ARG,
                               "Verlet-buffer tolerance: temperature %g: give a finite temperature "
                               ">= 0",
                               cfg->temp);
    if (!md__vbuf_finite_pos(cfg->cutoff) || !md__vbuf_finite_pos(cfg->dt))
        return halox_set_error(HALOX_ERR_INVALID_ARG,
                               "Verlet-buffer tolerance: cut-off %g and time step %g: give both "
                               "finite and > 0",
                               cfg->cutoff, cfg->dt);
    if ((keep & HALOX_MD_VERLET_KEEP_SKIN) && !(isfinite(cfg->skin) && cfg->skin >= 0))
        return halox_set_error(HALOX_ERR_INVALID_ARG, "skin %g: give a finite skin >= 0",
                               cfg->skin);
    if ((keep & HALOX_MD_VERLET_KEEP_REBUILD) && cfg->rebuild_every < 1)
        return halox_set_error(HALOX_ERR_INVALID_ARG, "rebuild every %d steps: give a number >= 1",
                               cfg->rebuild_every);
    if (!(rebuild_cost > 0))
        rebuild_cost = HALOX_MD_VERLET_REBUILD_COST;
    if (!isfinite(rebuild_cost))
        return halox_set_error(HALOX_ERR_INVALID_ARG,
                               "Verlet-buffer rebuild cost %g: give a finite number of steps > 0",
                               rebuild_cost);
    const md_vbuf_system_t s = {.temp = cfg->temp,
                                .density = density,
                                .mass = 1.0,
                                .cutoff = cfg->cutoff,
                                .dt = cfg->dt,
                                .shifted = cfg->shift != 0};
    const double b_max = MD_VBUF_MAX_STEPS * MD_VBUF_STEP * cfg->cutoff;
    int n = cfg->rebuild_every;
    double b = cfg->skin, d = 0;
    const int keep_b = (keep & HALOX_MD_VERLET_KEEP_SKIN) != 0;
    const int keep_n = (keep & HALOX_MD_VERLET_KEEP_REBUILD) != 0;
    if (keep_b && keep_n) {
        d = md__vbuf_drift(&s, n, b); /* nothing to choose: the estimate of what was given */
    } else if (keep_n) {
        if (md__vbuf_min_buffer(&s, n, tol, &b, &d) != 0)
            return halox_set_error(
                HALOX_ERR_INVALID_ARG,
                "Verlet-buffer tolerance %g: no skin up to the cut-off (%g) keeps "
                "the estimated drift of lists rebuilt every %d steps within it "
                "(%g at skin %g): rebuild more often or give a larger tolerance",
                tol, cfg->cutoff, n, d, b_max);
    } else if (keep_b) {
        /* the longest interval within the tolerance (the cost falls with it at a fixed skin):
         * the largest candidate, else the longest below the smallest candidate */
        int got = 0;
        for (int i = md__vbuf_ncandidates - 1; i >= 0 && !got; i--)
            if ((d = md__vbuf_drift(&s, md__vbuf_candidates[i], b)) <= tol) {
                n = md__vbuf_candidates[i];
                got = 1;
            }
        for (int k = md__vbuf_candidates[0] - 1; k >= 1 && !got; k--)
            if ((d = md__vbuf_drift(&s, k, b)) <= tol) {
                n = k;
                got = 1;
            }
        if (!got)
            return halox_set_error(
                HALOX_ERR_INVALID_ARG,
                "Verlet-buffer tolerance %g: skin %g is too small even for lists "
                "rebuilt every step (estimated drift %g): give a larger skin, "
                "leave out --skin, or give a larger tolerance",
                tol, b, d);
    } else if (md__vbuf_choose(&s, tol, rebuild_cost, md__vbuf_candidates, md__vbuf_ncandidates, &n,
                               &b, &d) != 0) {
        return halox_set_error(
            HALOX_ERR_INVALID_ARG,
            "Verlet-buffer tolerance %g: no skin up to the cut-off (%g) keeps the "
            "estimated drift within it for any rebuild interval from %d to %d "
            "steps: give a larger tolerance or a shorter time step",
            tol, b_max, md__vbuf_candidates[0], md__vbuf_candidates[md__vbuf_ncandidates - 1]);
    }
    cfg->skin = b;
    cfg->rebuild_every = n;
    out->skin = b;
    out->rebuild_every = n;
    out->drift = d;
    out->tolerance = tol;
    out->temp = cfg->temp;
    out->density = density;
    out->rebuild_cost = rebuild_cost;
    out->chose_skin = !keep_b;
    out->chose_rebuild = !keep_n;
    return HALOX_OK;
}
