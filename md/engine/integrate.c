/* Velocity Verlet on the home atoms (mass 1): half kick v += dt/2 f, drift x += dt v, the
 * displacement check of the optional "rebuild when an atom moved more than half the skin", and
 * the kinetic energy and velocity scaling of the thermostat and thermo output. All
 * in the atoms' precision; velocities live in the atoms' per-atom extra data so that they move
 * with the atoms on migration. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/md_internal.h"
#include "halox/status.h"

#define MD_DEFINE_KICK(T, NAME)                                                                    \
    static void NAME(T *restrict v, const T *restrict f, size_t n3, T h)                           \
    {                                                                                              \
        for (size_t k = 0; k < n3; k++)                                                            \
            v[k] += h * f[k];                                                                      \
    }
MD_DEFINE_KICK(float, md__kick_float)
MD_DEFINE_KICK(double, md__kick_double)

void md__kick(halox_md_t *md, double half_dt)
{
    size_t n3 = 3 * (size_t)md->atoms.n_home;
    if (md->atoms.real == HALOX_FLOAT)
        md__kick_float(md->atoms.extra, md->f, n3, (float)half_dt);
    else
        md__kick_double(md->atoms.extra, md->f, n3, half_dt);
}

void md__drift(halox_md_t *md, double dt)
{
    /* the same loop: x += dt * v */
    size_t n3 = 3 * (size_t)md->atoms.n_home;
    if (md->atoms.real == HALOX_FLOAT)
        md__kick_float(md->atoms.x, md->atoms.extra, n3, (float)dt);
    else
        md__kick_double(md->atoms.x, md->atoms.extra, n3, dt);
}

void md__scale_velocities(halox_md_t *md, double alpha)
{
    size_t n3 = 3 * (size_t)md->atoms.n_home;
    if (md->atoms.real == HALOX_FLOAT) {
        float *v = md->atoms.extra, s = (float)alpha;
        for (size_t k = 0; k < n3; k++)
            v[k] *= s;
    } else {
        double *v = md->atoms.extra;
        for (size_t k = 0; k < n3; k++)
            v[k] *= alpha;
    }
}

void md__save_reference(halox_md_t *md)
{
    if (!md->cfg.rebuild_check)
        return;
    int n = md->atoms.n_home;
    size_t bytes = md__rs(md) * 3 * (size_t)(n > 0 ? n : 1);
    if (n + 1 > md->xref_cap) {
        void *q = realloc(md->x_ref, bytes * 2);
        if (!q) {
            /* without a reference the check cannot run: force rebuilds instead */
            md->force_rebuild = 1;
            return;
        }
        md->x_ref = q;
        md->xref_cap = 2 * (n > 0 ? n : 1);
    }
    memcpy(md->x_ref, md->atoms.x, md__rs(md) * 3 * (size_t)n);
}

double md__max_displacement2(const halox_md_t *md)
{
    size_t n = (size_t)md->atoms.n_home;
    double m = 0;
    if (md->atoms.real == HALOX_FLOAT) {
        const float *x = md->atoms.x, *r = md->x_ref;
        for (size_t i = 0; i < n; i++) {
            double dx = (double)x[3 * i] - (double)r[3 * i],
                   dy = (double)x[3 * i + 1] - (double)r[3 * i + 1],
                   dz = (double)x[3 * i + 2] - (double)r[3 * i + 2];
            double d2 = dx * dx + dy * dy + dz * dz;
            m = d2 > m ? d2 : m;
        }
    } else {
        const double *x = md->atoms.x, *r = md->x_ref;
        for (size_t i = 0; i < n; i++) {
            double dx = x[3 * i] - r[3 * i], dy = x[3 * i + 1] - r[3 * i + 1],
                   dz = x[3 * i + 2] - r[3 * i + 2];
            double d2 = dx * dx + dy * dy + dz * dz;
            m = d2 > m ? d2 : m;
        }
    }
    return m;
}

/* Largest speed squared of the home atoms, +inf when one is not finite; *id_p gets its id. */
double md__max_speed2(const halox_md_t *md, int *id_p)
{
    size_t n = (size_t)md->atoms.n_home;
    double m = 0;
    int who = -1;
    for (size_t i = 0; i < n; i++) {
        double v2 = 0;
        for (int d = 0; d < 3; d++) {
            size_t k = 3 * i + (size_t)d;
            double v = md->atoms.real == HALOX_FLOAT ? (double)((const float *)md->atoms.extra)[k]
                                                     : ((const double *)md->atoms.extra)[k];
            v2 += v * v;
        }
        if (!(v2 <= m)) { /* also true for NaN */
            m = v2 == v2 ? v2 : HUGE_VAL;
            who = md->atoms.id[i];
        }
    }
    *id_p = who;
    return m;
}

/* Kinetic energy of the home atoms (mass 1), summed in double in atom order. */
double md__kinetic_local(const halox_md_t *md)
{
    size_t n3 = 3 * (size_t)md->atoms.n_home;
    double s = 0;
    if (md->atoms.real == HALOX_FLOAT) {
        const float *v = md->atoms.extra;
        for (size_t k = 0; k < n3; k++)
            s += (double)v[k] * (double)v[k];
    } else {
        const double *v = md->atoms.extra;
        for (size_t k = 0; k < n3; k++)
            s += v[k] * v[k];
    }
    return 0.5 * s;
}

/* The blow-up bound: an atom that crosses half the smallest box edge in one step makes the run
 * meaningless (its pairs are no longer the ones the lists hold, nor any physical ones). */
double md__speed_limit(const double box[3], double dt)
{
    return 0.5 * fmin(box[0], fmin(box[1], box[2])) / dt;
}

double md__outside_limit(const double box[3], long long steps)
{
    return (double)(steps > 1 ? steps : 1) * 0.5 * fmin(box[0], fmin(box[1], box[2]));
}

halox_status_t md__blown_up(const halox_md_t *md, const char *who, double speed,
                            const char *unwritten)
{
    const double half = 0.5 * fmin(md->box.len[0], fmin(md->box.len[1], md->box.len[2]));
    char what[160] = "";
    if (unwritten)
        snprintf(what, sizeof what, ", found before %s: nothing is written from this state",
                 unwritten);
    return halox_set_error(HALOX_ERR_COORDINATE,
                           "step %lld: the system blew up: %s moves %.3g per step, more than half "
                           "the box (%.3g)%s; use a smaller time step (--dt), or start from a "
                           "configuration without overlaps",
                           md->step, who, speed * md->cfg.dt, half, what);
}
