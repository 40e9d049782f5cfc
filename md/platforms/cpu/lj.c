/* Lennard-Jones 12-6 forces over the half pair list, in the atoms' precision (float by default,
 * like the GPU engine; double for validation). Energies and virial are accumulated in double,
 * per atom i and then per rank, and only on steps that need them (a separate instantiation of
 * the kernel, so force-only steps pay nothing).
 *
 *   U(r) = 4 (r^-12 - r^-6) [- U(rc) when shifted],  F(r) = 48 r^-14 - 24 r^-8 times the vector,
 *   virial W = sum over pairs of r . F = r^2 * fpair.
 */
#include <math.h>
#include <string.h>

#include "engine/md_internal.h"

double halox_md_tail_energy(double rho, double rc)
{
    double ri3 = 1.0 / (rc * rc * rc), ri9 = ri3 * ri3 * ri3;
    return 8.0 / 3.0 * MD_PI * rho * (ri9 / 3.0 - ri3);
}

double halox_md_tail_pressure(double rho, double rc)
{
    double ri3 = 1.0 / (rc * rc * rc), ri9 = ri3 * ri3 * ri3;
    return 16.0 / 3.0 * MD_PI * rho * rho * (2.0 / 3.0 * ri9 - ri3);
}

/* The kernel, once per precision and per energy flag. No function pointers and no branch in the
 * inner loop (the cut-off test multiplies by 0 or 1). Pairs in the skin (r >= rc) add exact
 * zeros, so the results are those of a loop that skips them. Periodic shifts: atom i's
 * neighbours come in segments of one image each (neighbour.c, md_nlist_t), the unshifted ones
 * first; over a shifted segment the same inner loop runs with x_i minus the segment's shift. */
#define MD_DEFINE_LJ(T, NAME, ENERGY)                                                              \
    static void NAME(const T *restrict x, T *restrict f, const md_nlist_t *nl, int n, T rc2,       \
                     const T(*sh)[3], double *pe_p, double *vir_p, long long *ncut_p)              \
    {                                                                                              \
        const int *restrict start = nl->start;                                                     \
        const int32_t *restrict list = nl->list;                                                   \
        const int *restrict seg_first = nl->seg_first;                                             \
        const int *restrict seg_at = nl->seg_at;                                                   \
        const uint8_t *restrict seg_code = nl->seg_code;                                           \
        double e = 0, w = 0;                                                                       \
        long long ncut = 0;                                                                        \
        for (int i = 0; i < n; i++) {                                                              \
            const T xi = x[3 * (size_t)i], yi = x[3 * (size_t)i + 1], zi = x[3 * (size_t)i + 2];   \
            T fxi = 0, fyi = 0, fzi = 0;                                                           \
            double ei = 0, wi = 0;                                                                 \
            int ni = 0;                                                                            \
            const int kend = start[i + 1];                                                         \
            int k = start[i], s = seg_first[i];                                                    \
            const int s1 = seg_first[i + 1];                                                       \
            T xa = xi, ya = yi, za = zi;                                                           \
            for (;;) {                                                                             \
                const int k1 = s < s1 ? seg_at[s] : kend;                                          \
                for (; k < k1; k++) {                                                              \
                    const size_t j = (size_t)list[k];                                              \
                    const T dx = xa - x[3 * j], dy = ya - x[3 * j + 1], dz = za - x[3 * j + 2];    \
                    const T r2 = dx * dx + dy * dy + dz * dz;                                      \
                    /* branch-free cut-off: about a third of the listed pairs lie in the skin, at  \
                     * random, and a mispredicted branch costs more than the arithmetic */         \
                    const T in = r2 < rc2 ? (T)1 : (T)0;                                           \
                    const T sr2 = (T)1 / r2;                                                       \
                    const T sr6 = sr2 * sr2 * sr2;                                                 \
                    const T fpair = in * (T)48 * sr6 * (sr6 - (T)0.5) * sr2;                       \
                    const T fx = dx * fpair, fy = dy * fpair, fz = dz * fpair;                     \
                    fxi += fx;                                                                     \
                    fyi += fy;                                                                     \
                    fzi += fz;                                                                     \
                    f[3 * j] -= fx;                                                                \
                    f[3 * j + 1] -= fy;                                                            \
                    f[3 * j + 2] -= fz;                                                            \
                    if (ENERGY) {                                                                  \
                        ei += (double)(in * (T)4 * sr6 * (sr6 - (T)1));                            \
                        wi += (double)(r2 * fpair);                                                \
                        ni += r2 < rc2;                                                            \
                    }                                                                              \
                }                                                                                  \
                if (s >= s1)                                                                       \
                    break;                                                                         \
                const T *q = sh[seg_code[s++]];                                                    \
                xa = xi - q[0];                                                                    \
                ya = yi - q[1];                                                                    \
                za = zi - q[2];                                                                    \
            }                                                                                      \
            f[3 * (size_t)i] += fxi;                                                               \
            f[3 * (size_t)i + 1] += fyi;                                                           \
            f[3 * (size_t)i + 2] += fzi;                                                           \
            if (ENERGY) {                                                                          \
                e += ei;                                                                           \
                w += wi;                                                                           \
                ncut += ni;                                                                        \
            }                                                                                      \
        }                                                                                          \
        if (ENERGY) {                                                                              \
            *pe_p = e;                                                                             \
            *vir_p = w;                                                                            \
            *ncut_p = ncut;                                                                        \
        }                                                                                          \
    }

MD_DEFINE_LJ(float, md__lj_float, 0)
MD_DEFINE_LJ(float, md__lj_float_energy, 1)
MD_DEFINE_LJ(double, md__lj_double, 0)
MD_DEFINE_LJ(double, md__lj_double_energy, 1)

void md__lj_forces(halox_md_t *md, int want_energy)
{
    const halox_atoms_t *a = &md->atoms;
    int n = a->n_total;
    memset(md->f, 0, md__rs(md) * 3 * (size_t)n);
    const md_nlist_t *nl = &md->nl;
    /* the list covers the atoms of the last build; the halo count does not change in between */
    int ni = nl->n < n ? nl->n : n;
    double pe = 0, vir = 0;
    long long ncut = 0;
    if (a->real == HALOX_FLOAT) {
        float rc2 = (float)md->rc2, sh[27][3];
        for (int c = 0; c < 27; c++)
            for (int d = 0; d < 3; d++)
                sh[c][d] = (float)nl->shift[c][d]; /* as the list build took them */
        if (want_energy)
            md__lj_float_energy(a->x, md->f, nl, ni, rc2, (const float(*)[3])sh, &pe, &vir, &ncut);
        else
            md__lj_float(a->x, md->f, nl, ni, rc2, (const float(*)[3])sh, &pe, &vir, &ncut);
    } else {
        const double(*sh)[3] = (const double(*)[3])nl->shift;
        if (want_energy)
            md__lj_double_energy(a->x, md->f, nl, ni, md->rc2, sh, &pe, &vir, &ncut);
        else
            md__lj_double(a->x, md->f, nl, ni, md->rc2, sh, &pe, &vir, &ncut);
    }
    if (want_energy) {
        md->pe_local = pe - md->eshift * (double)ncut;
        md->vir_local = vir;
        md->have_energy = 1;
        md->energy_step = md->step;
    } else {
        md->have_energy = 0;
    }
}
