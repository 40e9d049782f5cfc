/* The pair-list buffer (skin) and rebuild interval from a tolerance for the energy drift that
 * missed pairs cause (the idea of GROMACS' verlet-buffer-tolerance, written here from
 * the physics). Internal to the md layer: pure C11, no printing.
 *
 * What is estimated. A list built at step s holds the pairs within rl = rc + b (b: the buffer,
 * the skin) and serves the forces and energies of steps s .. s + n - 1 (n = nstlist, the rebuild
 * interval); the next list, built at s + n, finds every pair then within rc. A pair that was
 * beyond rl at s and is within rc at s + n had neither force nor energy before and has energy
 * U(r) at once: the total energy jumps by the sum of U over those pairs at every rebuild. Pairs
 * that enter and leave the cut-off between two rebuilds change the trajectory, not the energy the
 * lists conserve, and are not counted. The drift is the mean jump per atom over the time between
 * rebuilds, t = n dt.
 *
 * Model, reduced LJ units (sigma = epsilon = k_B = 1, mass m; energies per atom, time in tau):
 *   - every atom moves ballistically, x(t) = x(0) + v t, with Maxwell velocities at temperature T:
 *     each component of its displacement is Gaussian with variance T t^2 / m; the two atoms of a
 *     pair move independently, so their relative displacement has variance
 *         s^2 = 2 T t^2 / m   per dimension;
 *   - at the build, the partners of an atom beyond rl are uniform at the density rho (g(r) = 1:
 *     within a few per cent beyond rc = 2.5 in an LJ liquid);
 *   - a relative position r now came from |r - D| > rl with D ~ N(0, s^2 I): the density of missed
 *     partners at distance r < rc is rho Q(r), where Q is the probability that an isotropic
 *     Gaussian of width s about a point at distance r from the centre of the sphere of radius rl
 *     lies outside it (the non-central chi distribution with 3 degrees of freedom), in closed
 *     form, with a = (rl - r) / (sqrt(2) s), c = (rl + r) / (sqrt(2) s):
 *         Q(r) = [erfc(a) + erfc(c)] / 2 + s / (r sqrt(2 pi)) [exp(-a^2) - exp(-c^2)];
 *   - the energy of a missed pair that arrives at r is U(r) = V(r) - V(rc) (shifted) or V(r)
 *     (unshifted), V(r) = 4 (r^-12 - r^-6); its magnitude is counted.
 * Then, per atom per unit time (each pair is shared by two atoms: the 1/2),
 *         drift(n, b) = (rho / 2) / (n dt) * integral_{r_core}^{rc} 4 pi r^2 Q(r) |U(r)| dr,
 * evaluated by composite Simpson over [max(r_core, rl - 12 s), rc] (below rl - 12 s, Q < 1e-31),
 * where r_core = min(1, rc / 2): closer pairs are neglected, since the repulsive core excludes
 * them (g(r) is about 0 below 0.9 sigma) and |U| diverges there where no pair goes.
 *
 * Why it is an upper-side estimate: real displacements in a liquid fall behind the ballistic ones
 * after a few collisions (within tenths of tau in a dense liquid), neighbours move together
 * (correlated, less relative displacement), |U| counts every missed pair with the sign that adds
 * up, while near rc U has one sign (< 0 for the shifted potential: the energy drifts down) and
 * pairs also leave. Neglected: forces during t (the displacement is the velocity's alone), the
 * structure of g(r) beyond rl, the missed pairs' effect on the trajectory, and the unshifted
 * potential's own drift (listed pairs crossing rc jump by V(rc): no buffer removes that; use the
 * shifted potential for conservation). T is the temperature given: a run that heats up (a random
 * start without equilibration) moves faster. With s well below rc - r_core the estimate grows with
 * n and falls with b; once s spans the whole shell the energy per rebuild saturates (every pair
 * within rc has been replaced) and the drift per unit time falls again with n.
 *
 * Choice. The buffer is the smallest multiple of MD_VBUF_STEP (0.01 rc) up to rc whose estimate
 * is at most the tolerance; the rebuild interval the one of a candidate set (md__vbuf_candidates)
 * that minimises the cost of a step in this model:
 *         cost(n, b) = ((rc + b) / rc)^3 (1 + R / n),
 * the pairs a step evaluates growing as (rc + b)^3 and a rebuild costing R steps' pair work
 * (R: the rebuild cost parameter; by default HALOX_MD_VERLET_REBUILD_COST = 5 (include/halox/md.h):
 * about what the CPU engine's neighbour search, migration and plan cost in steps of pair forces,
 * docs/MD-DESIGN.md#verlet-buffer-and-dynamic-pruning).
 */
#ifndef HALOX_MD_VERLET_BUFFER_H
#define HALOX_MD_VERLET_BUFFER_H

/** What the estimate depends on (reduced LJ units). */
typedef struct md_vbuf_system {
    double temp;    /**< k_B T (0: nothing moves, no drift) */
    double density; /**< N / V */
    double mass;    /**< atom mass (1 in halox-md) */
    double cutoff;  /**< LJ cut-off rc */
    double dt;      /**< time step */
    int shifted;    /**< energy shifted to zero at rc */
} md_vbuf_system_t;

/** Buffers are multiples of this fraction of the cut-off ... */
#define MD_VBUF_STEP 0.01
/** ... up to this many: at most the cut-off itself. */
#define MD_VBUF_MAX_STEPS 100
/** The candidate rebuild intervals, ascending, and their count. */
extern const int md__vbuf_candidates[];
extern const int md__vbuf_ncandidates;

/** The estimated drift (energy per atom per unit time, >= 0) of lists with buffer b rebuilt every
 *  nstlist steps; 0 when nothing can be missed. Arguments are assumed valid (finite, rc, dt,
 *  density, mass > 0, T, b >= 0, nstlist >= 1). */
double md__vbuf_drift(const md_vbuf_system_t *s, int nstlist, double buffer);

/** Cost of a step in the model above (1 for an unbuffered list never rebuilt). */
double md__vbuf_cost(double cutoff, double buffer, int nstlist, double rebuild_cost);

/** The smallest buffer k MD_VBUF_STEP rc (k = 0 .. MD_VBUF_MAX_STEPS) whose estimate for
 *  nstlist is at most tol: 0 with *buffer and *drift set, -1 when not even the largest meets it
 *  (*drift: the estimate at the largest). */
int md__vbuf_min_buffer(const md_vbuf_system_t *s, int nstlist, double tol, double *buffer,
                        double *drift);

/** Over the candidates (n of them, any order), the interval and buffer of the least cost whose
 *  estimate is at most tol: 0 with the three set, -1 when no candidate has one. */
int md__vbuf_choose(const md_vbuf_system_t *s, double tol, double rebuild_cost, const int *cand,
                    int n, int *nstlist, double *buffer, double *drift);

#endif
