/* halox-check: plan + exchange for a given grid, box and system, verified against brute force
 * (like nccl-tests' -c). Checks, in order:
 *   1. the reference plan: every pair within the cut-off computed by exactly one rank;
 *   2. reference forces after the reverse exchange equal a serial brute-force computation;
 *   3. the transport: plans identical to the reference, halo coordinates bit-identical to the
 *      reference exchange and forces bit-identical to the reference force exchange, for several
 *      steps with moving atoms, and equal to brute force within tolerance.
 * Exit status: 0 pass, 1 a check failed, 2 bad usage or a run-time error. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HALOX_HAVE_MPI
#include <mpi.h>
#endif

#include "check/check_args.h"
#include "check/checksys.h"
#include "halox/build.h"
#include "halox/collectives.h"
#include "halox/endpoint.h"
#include "halox/env.h"
#include "halox/features.h"
#include "halox/plan.h"
#include "halox/topology.h"
#include "tool_agree.h"
#include "tool_common.h"

/* What every rank of this process shares: the reference, recomputed per step by the leader. */
typedef struct {
    chk_opts_t o;
    int P;
    chk_system_t sys;
    halox_atoms_t *ref_atoms;
    halox_plan_t *ref_plans;
    void **ref_f;
    double *global_f;
    double ftol;
    long long ref_failures;
    halox_team_t *team; /* threads transport */
    halox_status_t *rank_status;
    long long *rank_failures;
    double *rank_seconds;
} shared_t;

static double fval(const void *f, halox_real_t real, size_t k)
{
    return real == HALOX_FLOAT ? (double)((const float *)f)[k] : ((const double *)f)[k];
}

/* Atoms move by at most a quarter of the buffer over all steps: the halo stays complete. */
static double jiggle_amp(const chk_opts_t *o) { return o->prm.buffer / (4.0 * o->steps); }

/* Leader: move the reference atoms for step s and recompute its exchanges and forces. */
static int reference_step(shared_t *S, int s)
{
    const chk_opts_t *o = &S->o;
    size_t rs = halox_real_size(o->real) * (size_t)o->stride;
    for (int r = 0; r < S->P; r++)
        chk_jiggle(&S->ref_plans[r], &S->ref_atoms[r], o->seed, s, jiggle_amp(o));
    void **x = malloc(sizeof(void *) * (size_t)S->P);
    for (int r = 0; r < S->P; r++)
        x[r] = S->ref_atoms[r].x;
    halox_reference_coords(S->ref_plans, S->P, o->real, o->stride, x);
    free(x);
    for (int r = 0; r < S->P; r++) {
        free(S->ref_f[r]);
        S->ref_f[r] = malloc(rs * (size_t)(S->ref_atoms[r].n_total + 1));
        if (!S->ref_f[r] ||
            chk_rank_forces(&S->ref_plans[r], &S->ref_atoms[r], o->prm.cutoff, S->ref_f[r]) != 0)
            return -1;
    }
    halox_reference_forces(S->ref_plans, S->P, o->real, o->stride, S->ref_f);
    /* brute force on the moved system, from the owners' home atoms */
    for (int r = 0; r < S->P; r++)
        for (int i = 0; i < S->ref_atoms[r].n_home; i++)
            for (int d = 0; d < 3; d++)
                S->sys.x[3 * S->ref_atoms[r].id[i] + d] = halox_atoms_get(&S->ref_atoms[r], i, d);
    return chk_global_forces(&S->sys, o->prm.cutoff, S->global_f);
}

/* One rank's whole check on the transport. Returns failures; *st_p gets run-time errors. */
static long long rank_check(shared_t *S, int rank, halox_comm_t *comm, int leader,
                            halox_status_t *st_p, double *seconds_p)
{
    const chk_opts_t *o = &S->o;
    long long fail = 0;
    halox_status_t st;
    halox_atoms_t a;
    halox_plan_t plan;
    void *f = NULL;
    halox_plan_init(&plan);
    halox_atoms_init(&a, o->real, o->stride, 0);
    /* this rank's home atoms: same rounding and order as the reference distribution */
    {
        halox_atoms_t *all = calloc((size_t)S->P, sizeof *all);
        for (int r = 0; r < S->P; r++)
            halox_atoms_init(&all[r], o->real, o->stride, 0);
        chk_system_t sys0;
        chk_system_make(&sys0, &o->prm.box, o->n, o->dist, o->seed);
        chk_system_round(&sys0, o->real);
        chk_distribute(&sys0, &o->prm.grid, all);
        a = all[rank];
        for (int r = 0; r < S->P; r++)
            if (r != rank)
                halox_atoms_free(&all[r]);
        free(all);
        chk_system_free(&sys0);
    }
    size_t rs = halox_real_size(o->real) * (size_t)o->stride;
    st = halox_comm_build_plan(comm, &o->prm, &a, &plan);
    if (st != HALOX_OK)
        goto out;
    /* the plan must equal the reference's, entry by entry */
    const halox_plan_t *rp = &S->ref_plans[rank];
    const halox_atoms_t *ra = &S->ref_atoms[rank];
    int same =
        plan.n_total == rp->n_total && plan.n_pulses == rp->n_pulses && a.n_total == ra->n_total;
    for (int k = 0; same && k < plan.n_pulses; k++) {
        const halox_pulse_t *p = &plan.pulse[k], *q = &rp->pulse[k];
        same = p->send_count == q->send_count && p->recv_count == q->recv_count &&
               p->recv_offset == q->recv_offset && p->dep_offset == q->dep_offset &&
               p->dep_mask == q->dep_mask && p->shift == q->shift && p->send_rank == q->send_rank &&
               p->recv_rank == q->recv_rank &&
               !memcmp(p->send_index, q->send_index, sizeof(int) * (size_t)p->send_count);
    }
    same = same && !memcmp(plan.zone, rp->zone, (size_t)plan.n_total) &&
           !memcmp(a.id, ra->id, sizeof(int32_t) * (size_t)a.n_total);
    if (!same) {
        fprintf(stderr, "rank %d: plan differs from the reference plan\n", rank);
        fail++;
    }
    f = malloc(rs * (size_t)(a.n_total + 1));
    if ((st = halox_comm_bind(comm, &plan, a.x, f)) != HALOX_OK)
        goto out;
    for (int s = 1; s <= o->steps; s++) {
        /* leader prepares the reference for this step while the others wait */
        if (leader && reference_step(S, s) != 0) {
            st = HALOX_ERR_NO_MEMORY;
            goto out;
        }
        if ((st = halox_comm_barrier(comm)) != HALOX_OK)
            goto out;
        chk_jiggle(&plan, &a, o->seed, s, jiggle_amp(o));
        if ((st = halox_comm_coords(comm)) != HALOX_OK)
            goto out;
        if (memcmp(a.x, ra->x, rs * (size_t)a.n_total)) {
            long long nd = 0;
            for (size_t k = 0; k < (size_t)a.n_total * o->stride; k++)
                nd += fval(a.x, o->real, k) != fval(ra->x, o->real, k);
            fprintf(stderr, "rank %d step %d: %lld coordinates differ from the reference\n", rank,
                    s, nd);
            fail++;
        }
        if (chk_rank_forces(&plan, &a, o->prm.cutoff, f) != 0) {
            fprintf(stderr,
                    "rank %d step %d: no forces: out of memory or a halo coordinate is not "
                    "finite\n",
                    rank, s);
            fail++;
        }
        if ((st = halox_comm_forces(comm)) != HALOX_OK)
            goto out;
        long long nd = 0;
        double maxerr = 0;
        for (int i = 0; i < a.n_home; i++)
            for (int d = 0; d < 3; d++) {
                size_t k = (size_t)i * o->stride + d;
                nd += memcmp((char *)f + k * halox_real_size(o->real),
                             (char *)S->ref_f[rank] + k * halox_real_size(o->real),
                             halox_real_size(o->real)) != 0;
                maxerr = fmax(maxerr, fabs(fval(f, o->real, k) - S->global_f[3 * a.id[i] + d]));
            }
        if (nd) {
            fprintf(stderr, "rank %d step %d: %lld home forces differ from the reference\n", rank,
                    s, nd);
            fail++;
        }
        if (maxerr > S->ftol) {
            fprintf(stderr, "rank %d step %d: force error %.3g vs brute force exceeds %.3g\n", rank,
                    s, maxerr, S->ftol);
            fail++;
        }
        /* the leader changes the reference next step: wait until everyone compared */
        if ((st = halox_comm_barrier(comm)) != HALOX_OK)
            goto out;
    }
    halox_comm_stats_t stats;
    halox_comm_get_stats(comm, &stats);
    *seconds_p = (stats.coord_seconds + stats.force_seconds) / o->steps;
out:
    *st_p = st;
    free(f);
    halox_atoms_free(&a);
    halox_plan_free(&plan);
    return fail;
}

/* One rank of the threads check (halox_team_run: a failure aborts the team). */
static halox_status_t thread_main(int rank, halox_team_t *team, void *vp)
{
    shared_t *S = vp;
    halox_comm_args_t args = {.real = S->o.real,
                              .stride = S->o.stride,
                              .timeout_s = S->o.timeout,
                              .team = team,
                              .rank = rank};
    halox_comm_t *comm = NULL;
    halox_status_t st = halox_comm_create(S->o.transport, &args, &comm);
    double secs = 0;
    long long fail = 0;
    if (st == HALOX_OK)
        fail = rank_check(S, rank, comm, rank == 0, &st, &secs);
    if (st != HALOX_OK)
        fprintf(stderr, "halox-check: rank %d: %s: %s\n", rank, halox_status_string(st),
                halox_last_error());
    S->rank_status[rank] = st;
    S->rank_failures[rank] = fail;
    S->rank_seconds[rank] = secs;
    halox_comm_destroy(comm);
    return st;
}

int main(int argc, char **argv)
{
    tool_ignore_file_limit_signal();
    shared_t S;
    memset(&S, 0, sizeof S);
    int rc = chk_parse_args(argc, argv, &S.o);
    if (rc)
        return rc == 1 ? 0 : 2;
    const chk_opts_t *o = &S.o;
    S.P = halox_grid_size(&o->prm.grid);
    int use_mpi = !o->caps.threads;
    int my_rank = 0;
#ifdef HALOX_HAVE_MPI
    if (use_mpi) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
        int nproc = 1;
        MPI_Comm_size(MPI_COMM_WORLD, &nproc);
        /* first: every later step depends on the ranks having the same inputs */
        if (tool_agree_inputs()) {
            MPI_Finalize();
            return 2;
        }
        if (nproc != S.P) {
            if (my_rank == 0)
                fprintf(stderr,
                        "halox-check: grid %dx%dx%d has %d ranks but %d MPI processes run: start "
                        "with mpirun -np %d\n",
                        o->prm.grid.n[0], o->prm.grid.n[1], o->prm.grid.n[2], S.P, nproc, S.P);
            MPI_Finalize();
            return 2;
        }
    }
#endif
    int root = my_rank == 0;

    /* 1. the reference, in this process */
    chk_system_make(&S.sys, &o->prm.box, o->n, o->dist, o->seed);
    chk_system_round(&S.sys, o->real);
    S.ref_atoms = calloc((size_t)S.P, sizeof *S.ref_atoms);
    S.ref_plans = calloc((size_t)S.P, sizeof *S.ref_plans);
    S.ref_f = calloc((size_t)S.P, sizeof *S.ref_f);
    S.global_f = malloc(sizeof(double) * 3 * (size_t)(o->n + 1));
    for (int r = 0; r < S.P; r++) {
        halox_atoms_init(&S.ref_atoms[r], o->real, o->stride, 0);
        halox_plan_init(&S.ref_plans[r]);
    }
    /* errors from here on leave through `out`, which frees everything (sanitizer builds count
     * a leak as a failure) */
    int code = 2;
    chk_pairs_t got = {0}, strict = {0}, loose = {0};
    halox_status_t st = chk_distribute(&S.sys, &o->prm.grid, S.ref_atoms);
    if (st == HALOX_OK)
        st = halox_reference_build(&o->prm, S.ref_atoms, S.ref_plans);
    if (st != HALOX_OK) {
        fprintf(stderr, "halox-check: %s\n", halox_last_error());
        goto out;
    }
    double Lmax = fmax(o->prm.box.len[0], fmax(o->prm.box.len[1], o->prm.box.len[2]));
    double tol = (o->real == HALOX_FLOAT ? 1.6e-6 : 4e-15) * (Lmax + o->prm.cutoff + o->prm.buffer);
    int brute_ok = 1;
    for (int r = 0; r < S.P; r++)
        brute_ok &= chk_rank_pairs(&S.ref_plans[r], &S.ref_atoms[r], o->prm.cutoff, &got) == 0;
    chk_pairs_sort(&got);
    brute_ok &= chk_global_pairs(&S.sys, o->prm.cutoff - tol, 20000, &strict) == 0;
    brute_ok &= chk_global_pairs(&S.sys, o->prm.cutoff + tol, 20000, &loose) == 0;
    chk_pairs_sort(&strict);
    chk_pairs_sort(&loose);
    long long pair_bad = chk_compare_pairs(&got, &strict, &loose, root ? 5 : 0);
    /* reference forces at the start positions vs brute force */
    size_t rs = halox_real_size(o->real) * (size_t)o->stride;
    for (int r = 0; r < S.P; r++) {
        S.ref_f[r] = malloc(rs * (size_t)(S.ref_atoms[r].n_total + 1));
        brute_ok &= S.ref_f[r] && chk_rank_forces(&S.ref_plans[r], &S.ref_atoms[r], o->prm.cutoff,
                                                  S.ref_f[r]) == 0;
    }
    brute_ok &= chk_global_forces(&S.sys, o->prm.cutoff, S.global_f) == 0;
    if (!brute_ok) {
        /* the planner refuses non-finite coordinates, so this is memory */
        fprintf(stderr, "halox-check: the brute-force reference failed: out of memory or a "
                        "coordinate that is not finite\n");
        goto out;
    }
    halox_reference_forces(S.ref_plans, S.P, o->real, o->stride, S.ref_f);
    double fscale = 1, ref_ferr = 0;
    for (int i = 0; i < 3 * o->n; i++)
        fscale = fmax(fscale, fabs(S.global_f[i]));
    S.ftol = (o->real == HALOX_FLOAT ? 2e-5 : 1e-11) * fscale *
             sqrt(1.0 + (double)strict.n / (o->n + 1));
    for (int r = 0; r < S.P; r++)
        for (int i = 0; i < S.ref_atoms[r].n_home; i++)
            for (int d = 0; d < 3; d++)
                ref_ferr =
                    fmax(ref_ferr, fabs(fval(S.ref_f[r], o->real, (size_t)i * o->stride + d) -
                                        S.global_f[3 * S.ref_atoms[r].id[i] + d]));
    long long coord_bytes = 0;
    for (int r = 0; r < S.P; r++)
        coord_bytes += halox_plan_send_bytes(&S.ref_plans[r], o->real, o->stride);

    if (root) {
        printf("halox-check %s: grid %dx%dx%d, box %g x %g x %g, %d atoms (%s, seed %llu), "
               "cut-off %g + buffer %g, %s, stride %d,%s transport %s\n",
               HALOX_VERSION_STRING, o->prm.grid.n[0], o->prm.grid.n[1], o->prm.grid.n[2],
               o->prm.box.len[0], o->prm.box.len[1], o->prm.box.len[2], o->n,
               o->dist == CHK_UNIFORM     ? "uniform"
               : o->dist == CHK_CLUSTERED ? "clustered"
                                          : "slab",
               (unsigned long long)o->seed, o->prm.cutoff, o->prm.buffer,
               o->real == HALOX_FLOAT ? "float" : "double", o->stride,
               o->prm.full_shell ? " full shell," : "", o->transport);
        const halox_plan_t *p0 = &S.ref_plans[0];
        printf("pulses per dimension%s: x %d, y %d, z %d (%d pulses)\n",
               o->prm.full_shell ? " and direction" : "", p0->pulses_per_dim[0],
               p0->pulses_per_dim[1], p0->pulses_per_dim[2], p0->n_pulses);
        if (o->verbose)
            for (int r = 0; r < S.P; r++) {
                printf("  rank %d: %d home, %d halo;", r, S.ref_plans[r].n_home,
                       S.ref_plans[r].n_total - S.ref_plans[r].n_home);
                for (int k = 0; k < S.ref_plans[r].n_pulses; k++)
                    printf(" p%d->%d:%d(%d home)", k, S.ref_plans[r].pulse[k].send_rank,
                           S.ref_plans[r].pulse[k].send_count, S.ref_plans[r].pulse[k].dep_offset);
                printf("\n");
            }
        printf("pairs within the cut-off: %lld by brute force, %lld computed over all ranks: %s\n",
               strict.n, got.n, pair_bad ? "FAIL" : "PASS");
        printf("reference forces vs serial brute force: max error %.3g (tolerance %.3g): %s\n",
               ref_ferr, S.ftol, ref_ferr <= S.ftol ? "PASS" : "FAIL");
        printf("bytes moved per step over all ranks: coordinates %lld, forces %lld\n", coord_bytes,
               coord_bytes);
    }
    S.ref_failures = pair_bad + (ref_ferr > S.ftol);

    /* 2. the transport, starting again from the original positions */
    for (int r = 0; r < S.P; r++) {
        S.ref_atoms[r].n_home = 0;
        S.ref_atoms[r].n_total = 0;
    }
    chk_system_free(&S.sys);
    chk_system_make(&S.sys, &o->prm.box, o->n, o->dist, o->seed);
    chk_system_round(&S.sys, o->real);
    chk_distribute(&S.sys, &o->prm.grid, S.ref_atoms);
    halox_reference_build(&o->prm, S.ref_atoms, S.ref_plans);

    S.rank_status = calloc((size_t)S.P, sizeof *S.rank_status);
    S.rank_failures = calloc((size_t)S.P, sizeof *S.rank_failures);
    S.rank_seconds = calloc((size_t)S.P, sizeof *S.rank_seconds);
    long long tfail = 0;
    halox_status_t tst = HALOX_OK;
    double tsec = 0;
    if (!use_mpi) {
        if ((st = halox_team_create(S.P, o->timeout, &S.team)) != HALOX_OK) {
            fprintf(stderr, "halox-check: %s\n", halox_last_error());
            goto out;
        }
        int started = 0;
        halox_status_t rst = halox_team_run(S.team, S.P, thread_main, &S, NULL, &started);
        if (started < S.P) { /* the ranks never started did not report */
            fprintf(stderr, "halox-check: %s\n", halox_last_error());
            tst = rst;
        }
        for (int r = 0; r < S.P; r++) {
            tfail += S.rank_failures[r];
            if (S.rank_status[r] != HALOX_OK && tst == HALOX_OK)
                tst = S.rank_status[r];
            tsec = fmax(tsec, S.rank_seconds[r]);
        }
        halox_team_destroy(S.team);
    } else {
#ifdef HALOX_HAVE_MPI
        halox_comm_args_t args = {.real = o->real, .stride = o->stride, .timeout_s = o->timeout};
        halox_comm_t *comm = NULL;
        st = halox_comm_create(o->transport, &args, &comm);
        if (st == HALOX_OK)
            tfail = rank_check(&S, my_rank, comm, 1, &tst, &tsec);
        else
            tst = st;
        /* every rank learns whether any failed; the cause is said once, by its rank */
        char line[1400] = "";
        if (tst != HALOX_OK)
            snprintf(line, sizeof line, "halox-check: rank %d: %s: %s", my_rank,
                     halox_status_string(tst), halox_last_error());
        double wait_s = 60;
        halox_timeout_resolve(o->timeout, &wait_s);
        if (tool_agree_outcome(tst != HALOX_OK ? 2 : 0, tst == HALOX_ERR_ABORTED, line, wait_s)) {
            if (tst == HALOX_OK)
                tst = HALOX_ERR_ABORTED;
        } else {
            double v[2] = {(double)tfail, tsec};
            halox_comm_allreduce_max(comm, v, 2);
            tfail = (long long)v[0];
            tsec = v[1];
        }
        halox_comm_destroy(comm);
#endif
    }
    if (root) {
        if (tst != HALOX_OK)
            printf("transport %s: run-time error (see above): FAIL\n", o->transport);
        else
            printf("transport %s: plans identical, halo coordinates and forces bit-identical to "
                   "the reference over %d steps, forces within tolerance of brute force: %s\n",
                   o->transport, o->steps, tfail ? "FAIL" : "PASS");
        printf("exchange wall time per step (coordinates + forces, mean over steps, slowest rank): "
               "%.3f ms\n",
               1e3 * tsec);
        printf("RESULT: %s\n", S.ref_failures || tfail || tst != HALOX_OK ? "FAIL" : "PASS");
    }
    code = tst != HALOX_OK ? 2 : (S.ref_failures || tfail ? 1 : 0);
out:
    for (int r = 0; r < S.P && S.ref_atoms && S.ref_plans && S.ref_f; r++) {
        halox_atoms_free(&S.ref_atoms[r]);
        halox_plan_free(&S.ref_plans[r]);
        free(S.ref_f[r]);
    }
    free(S.ref_atoms);
    free(S.ref_plans);
    free(S.ref_f);
    free(S.global_f);
    free(S.rank_status);
    free(S.rank_failures);
    free(S.rank_seconds);
    chk_pairs_free(&got);
    chk_pairs_free(&strict);
    chk_pairs_free(&loose);
    chk_system_free(&S.sys);
#ifdef HALOX_HAVE_MPI
    if (use_mpi)
        MPI_Finalize();
#endif
    return code;
}
