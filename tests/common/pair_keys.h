/* Helpers of the plan tests that check the pair rules against brute force: every pair of atoms
 * within the cut-off, with the periodic image it takes, as one 64-bit key; the caller's pair
 * vector of two local atoms; the brute-force set of all pairs of a system. */
#ifndef HALOX_TEST_PAIR_KEYS_H
#define HALOX_TEST_PAIR_KEYS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check/checksys.h"
#include "halox/plan.h"

/* A pair of global atoms a < b and the image of b, n in -2..2 per dimension: the pair vector is
 * x_a - (x_b + n L). */
static inline uint64_t pair_key(int a, int b, const int n[3])
{
    int m[3] = {n[0], n[1], n[2]};
    if (a > b) {
        int t = a;
        a = b;
        b = t;
        for (int d = 0; d < 3; d++)
            m[d] = -m[d];
    }
    uint64_t code = 0;
    for (int d = 2; d >= 0; d--)
        code = code * 5 + (uint64_t)(m[d] + 2);
    return (uint64_t)a << 40 | (uint64_t)b << 8 | code;
}

static inline void keys_push(chk_pairs_t *s, uint64_t k)
{
    if (chk_pairs_add(s, k) != 0) {
        fprintf(stderr, "no memory\n");
        exit(1);
    }
}

/* The pair vector of local atoms a, b as the caller computes it: minimum image in the shift
 * dimensions, plain difference in the others. Returns its square. */
static inline double local_dx(const halox_plan_t *plan, const halox_atoms_t *at, int a, int b,
                              double dx[3])
{
    double r2 = 0;
    for (int d = 0; d < 3; d++) {
        double L = plan->params.box.len[d];
        double v = halox_atoms_get(at, a, d) - halox_atoms_get(at, b, d);
        if (plan->shift_dims >> d & 1)
            v -= L * round(v / L);
        dx[d] = v;
        r2 += v * v;
    }
    return r2;
}

/* Every pair of the system within rc (minimum image), brute force. */
static inline void global_pairs(const chk_system_t *sys, double rc, chk_pairs_t *out)
{
    const double *L = sys->box.len;
    for (int i = 0; i < sys->n; i++)
        for (int j = i + 1; j < sys->n; j++) {
            double r2 = 0;
            int n[3];
            for (int d = 0; d < 3; d++) {
                double dg = sys->x[3 * i + d] - sys->x[3 * j + d];
                n[d] = (int)round(dg / L[d]);
                double v = dg - n[d] * L[d];
                r2 += v * v;
            }
            if (r2 < rc * rc)
                keys_push(out, pair_key(i, j, n));
        }
}

#endif
