/* The fcc lattice of --lattice fcc, built whole in id order. */
#include <math.h>

#include "systems/system.h"

/* fcc: lattice constant (4 / rho)^(1/3), basis (0,0,0) (.5,.5,0) (.5,0,.5) (0,.5,.5), as LAMMPS'
 * `lattice fcc RHO` in reduced units. */
halox_status_t md__fcc(const halox_md_config_t *cfg, halox_md_system_t *sys)
{
    static const double basis[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
    double a = cbrt(4.0 / cfg->density);
    long long n = 4LL * cfg->cells[0] * cfg->cells[1] * cfg->cells[2];
    halox_status_t st = md__system_alloc(sys, n);
    if (st != HALOX_OK)
        return st;
    for (int d = 0; d < 3; d++)
        sys->box.len[d] = a * cfg->cells[d];
    long long k = 0;
    for (int iz = 0; iz < cfg->cells[2]; iz++)
        for (int iy = 0; iy < cfg->cells[1]; iy++)
            for (int ix = 0; ix < cfg->cells[0]; ix++)
                for (int b = 0; b < 4; b++, k++) {
                    sys->x[3 * k + 0] = (ix + basis[b][0]) * a;
                    sys->x[3 * k + 1] = (iy + basis[b][1]) * a;
                    sys->x[3 * k + 2] = (iz + basis[b][2]) * a;
                }
    return HALOX_OK;
}
