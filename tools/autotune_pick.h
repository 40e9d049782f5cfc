/* The decision of halox-md --autotune, apart from MPI and the runs (tools/autotune_pick.c), so
 * that it is tested on its own (tests/tools/test_autotune_pick.c). */
#ifndef HALOX_TOOLS_AUTOTUNE_PICK_H
#define HALOX_TOOLS_AUTOTUNE_PICK_H

#define AUTOTUNE_NOISE_MIN 0.02 /* candidates closer than 2 % are ties whatever the rounds say */

/* ms[i * rounds + r]: candidate i's ms/step in round r (<= 0: did not run). med[i] gets the
 * median of its rounds (0 when it never ran), spread[i] (max - min) / median. Returns the index
 * of the choice (-1 when no candidate ran): the fastest median, unless candidate `rule` (-1:
 * none) ran and is within the noise of it, where noise is the largest spread of a candidate
 * (at least AUTOTUNE_NOISE_MIN): then `rule`. *noise_p gets the noise, *fastest_p the index of
 * the fastest median. */
int autotune_pick(const double *ms, int n, int rounds, int rule, double *med, double *spread,
                  double *noise_p, int *fastest_p);

#endif
