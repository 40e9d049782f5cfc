/* The GPU MD engine against LAMMPS and against the CPU engine, under MPI (1 or 2 ranks, one GPU
 * per rank when there are enough; several ranks may share a GPU), on a GPU transport:
 *   1. step 0 of the LAMMPS bench/in.lj system (lammps-lj, 20x20x20 cells, 32000 atoms): PE/atom
 * and pressure within 1e-5 relative of LAMMPS (-6.7733681, -5.0197073), in single precision;
 *   2. 100 steps of lammps-lj with 8x8x8 cells (2048 atoms), lists rebuilt every 10 steps with a
 *      skin of 1.0: every thermo record (pe, ke, etotal, temp, press) within 2e-4 relative of the
 *      CPU engine (float, 1 rank, threads), every final position within 2e-3 (periodic distance),
 *      and the relative drift of the total energy over the run (about 2e-3: the potential is
 *      unshifted) within 1e-4 of the CPU engine's.
 *      The skin is wide enough that no atom moves skin/2 between rebuilds (about 0.3 at most
 *      here), so neither engine's lists ever miss a pair: with lammps-lj's own skin 0.3 and
 *      rebuilds every 20 steps both miss a few pairs, and different ones (the GPU's cluster
 *      lists hold more than rl), which is a real difference, not rounding. Here both engines are
 *      single precision with different summation orders, and the trajectory is chaotic: the
 *      differences start at ~1e-7 and grow over the run; the bounds leave about a factor 10
 *      over what such runs show.
 *   3. part 2 ran its plain steps as CUDA graphs (the default); the same 100 steps without
 *      (--no-graph): positions and thermo records as with them, to rounding (atomics make any
 *      two GPU runs differ in rounding); with graphs most steps must have run as graphs (nccl,
 *      NVSHMEM), on mpi-staged and hybrid none (they cannot be captured: the run goes on
 *      without graphs), and every other step timed its parts.
 *   4. the same 100 steps with HALOX_MD_DEVICE_REBUILD=1 (the default: every rebuild after the
 *      first on the device, the library's migration and plan build on the device arrays; parts
 *      2 and 3 run with 0, rebuilds through the host): positions and
 *      thermo records as with host rebuilds, to rounding; as many rebuilds; atoms migrated on 2
 *      ranks as on the host path, within a few (rounding moves an atom across a boundary or
 *      not).
 *   5. a start WITH forces (2048 atoms placed at random, without overlaps: a lattice has none,
 *      which hid a first half kick that read forces never written): the step-0 forces of
 *      halox_md_gather within 1e-4 (relative to the largest) of a brute-force double sum over
 *      all pairs, then 30 steps with a halox_md_thermo_now in the middle (a recomputation must
 *      not add into the next step's forces): every thermo record within 2e-4 of the CPU engine
 *      and the final positions within 2e-3.
 *   6. nvshmem-inline on several ranks on a system wide enough (3 cells per rank) that every
 *      rank exchanges inside the kernels on every step: 100 steps against the CPU engine, then
 *      again with the overlap probe after the last step (its times present, the run as the CPU's).
 * Usage: test_gpu_md [--transport NAME] (default: every GPU transport in the build; hybrid with
 * HALOX_HYBRID_UNREACHABLE=all in the environment sends every pair through MPI). Exit 77
 * (skipped) when no GPU is visible. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halox/endpoint.h"
#include "halox/md.h"
#include "halox/transport.h"
#include "mpi_common.h"
#include "test_gpu_common.h"
#include "test_md_common.h"

static int g_rank;

/* A GPU run of cfg on the transport; result on rank 0. Returns nonzero on failure. */
static int gpu_run(halox_md_config_t *cfg, const char *transport, int P, int want_state,
                   halox_md_result_t *r)
{
    cfg->transport = transport;
    cfg->device = HALOX_MD_DEVICE_GPU;
    char grid[32];
    snprintf(grid, sizeof grid, "%dx1x1", P);
    halox_grid_parse(grid, &cfg->grid);
    halox_comm_args_t args = {.real = HALOX_FLOAT, .stride = 3, .device = -1};
    halox_comm_t *comm = NULL;
    memset(r, 0, sizeof *r);
    r->want_state = want_state;
    halox_status_t st = halox_comm_create(transport, &args, &comm);
    if (st == HALOX_OK)
        st = halox_md_rank_run(cfg, comm, NULL, NULL, r);
    if (st != HALOX_OK)
        fprintf(stderr, "rank %d: GPU run on %s failed: %s (%s)\n", g_rank, transport,
                halox_status_string(st), g_rank == 0 ? r->error : halox_last_error());
    CHECK(st == HALOX_OK);
    halox_comm_destroy(comm);
    return st != HALOX_OK;
}

static void test_lammps_step0(const char *transport, int P)
{
    /* LAMMPS' bench/in.lj: 20x20x20 cells, 32000 atoms (the pressure's kinetic part depends on
     * N through the 3N-3 degrees of freedom) */
    halox_md_config_t cfg;
    md_test_preset(&cfg, "lammps-lj", 20);
    cfg.steps = 0;
    halox_md_result_t r;
    if (gpu_run(&cfg, transport, P, 0, &r) == 0 && g_rank == 0) {
        CHECK(r.n_thermo == 1);
        const halox_md_thermo_t *t = &r.thermo[0];
        printf("%s, %d rank(s): step 0 pe %.8f (LAMMPS -6.7733681, rel %.2e), press %.8f "
               "(LAMMPS -5.0197073, rel %.2e)\n",
               transport, P, t->pe, md_rel(t->pe, -6.7733681), t->press,
               md_rel(t->press, -5.0197073));
        CHECK_MSG(md_rel(t->pe, -6.7733681) < 1e-5, "pe %.10f", t->pe);
        CHECK_MSG(md_rel(t->press, -5.0197073) < 1e-5, "press %.10f", t->press);
        CHECK_NEAR(t->temp, 1.44, 1e-6);
    }
    halox_md_result_free(&r);
}

/* The reference: the CPU engine, 1 rank on the threads transport, cfg's settings otherwise;
 * with its final state. */
static halox_status_t cpu_run(const halox_md_config_t *cfg, halox_md_result_t *cr)
{
    halox_md_config_t cc = *cfg;
    cc.transport = "threads";
    cc.device = HALOX_MD_DEVICE_CPU;
    halox_grid_parse("1x1x1", &cc.grid);
    cr->want_state = 1;
    halox_status_t st = halox_md_threads_run(&cc, NULL, cr);
    CHECK_MSG(st == HALOX_OK, "CPU run: %s", cr->error);
    return st;
}

/* How far run b ends from run a (lammps-lj at density 0.8442): the largest periodic distance of
 * a final position, and the largest relative difference of pe, ke or press over the records. */
static void run_diff(const halox_md_result_t *a, const halox_md_result_t *b, double *dx,
                     double *dth)
{
    const double L = cbrt((double)a->natoms / 0.8442);
    *dx = *dth = 0;
    for (long long i = 0; i < 3 * a->natoms && a->x && b->x; i++) {
        double e = fabs(a->x[i] - b->x[i]);
        *dx = fmax(*dx, fmin(e, fabs(L - e)));
    }
    CHECK(b->x && b->v && b->natoms == a->natoms);
    CHECK(b->n_thermo == a->n_thermo);
    for (int k = 0; k < b->n_thermo && k < a->n_thermo; k++)
        *dth = fmax(*dth, fmax(md_rel(b->thermo[k].pe, a->thermo[k].pe),
                               fmax(md_rel(b->thermo[k].ke, a->thermo[k].ke),
                                    md_rel(b->thermo[k].press, a->thermo[k].press))));
}

/* Does every step of a run of cfg on P x 1 x 1 ranks exchange inside the kernels? nvshmem-inline
 * on several ranks whose slabs are at least rc + skin wide (narrower ones forward atoms received
 * by an earlier pulse, and such a rank exchanges with the transport's kernels). */
static int all_inline(const char *transport, int P, const halox_md_config_t *cfg, long long natoms)
{
    const double L = cbrt((double)natoms / 0.8442); /* lammps-lj: fcc at density 0.8442 */
    return strcmp(transport, "nvshmem-inline") == 0 && P > 1 && L / P >= cfg->cutoff + cfg->skin;
}

#ifdef HALOX_TEST_EMU_GPU
/* over the host emulation (test_md_emu), where a step of 2048 atoms takes seconds: 30 steps of
 * the trajectory parts, and no 32000-atom step 0 */
enum { MD_TRAJ_STEPS = 30 };
#else
enum { MD_TRAJ_STEPS = 100 };
#endif

/* lammps-lj of `cells` fcc cells per edge, 100 steps, thermo and rebuilds every 10, skin 1.0
 * (the trajectory parts' run; the file's comment says why that skin) */
static void trajectory_config(halox_md_config_t *cfg, int cells)
{
    md_test_preset(cfg, "lammps-lj", cells);
    cfg->steps = MD_TRAJ_STEPS;
    cfg->thermo_every = 10;
    cfg->rebuild_every = 10;
    cfg->skin = 1.0;
}

static void test_trajectory(const char *transport, int P)
{
    halox_md_config_t cfg;
    trajectory_config(&cfg, 8);
    halox_md_result_t gr, cr;
    memset(&cr, 0, sizeof cr);
    if (gpu_run(&cfg, transport, P, 1, &gr) != 0) {
        halox_md_result_free(&gr);
        return;
    }
    if (g_rank == 0) {
        halox_status_t st = cpu_run(&cfg, &cr);
        if (st == HALOX_OK) {
            CHECK(gr.n_thermo == cr.n_thermo);
            double worst = 0;
            for (int k = 0; k < gr.n_thermo && k < cr.n_thermo; k++) {
                const halox_md_thermo_t *g = &gr.thermo[k], *c = &cr.thermo[k];
                CHECK(g->step == c->step);
                double d[5] = {md_rel(g->pe, c->pe), md_rel(g->ke, c->ke),
                               md_rel(g->etotal, c->etotal), md_rel(g->temp, c->temp),
                               md_rel(g->press, c->press)};
                for (int q = 0; q < 5; q++) {
                    CHECK_MSG(d[q] < 2e-4, "step %lld quantity %d: GPU vs CPU rel %.3e", g->step, q,
                              d[q]);
                    worst = fmax(worst, d[q]);
                }
            }
            double dx = 0;
            double L = cbrt((double)gr.natoms / 0.8442); /* fcc at density 0.8442 */
            for (long long i = 0; i < 3 * gr.natoms && gr.x && cr.x; i++) {
                double e = fabs(gr.x[i] - cr.x[i]);
                e = fmin(e, fabs(L - e));
                dx = fmax(dx, e);
            }
            /* lammps-lj is unshifted at rc 2.5: its total energy is not conserved exactly (both
             * engines drift by about 2e-3 over these 100 steps); the GPU must drift as the CPU */
            const halox_md_thermo_t *a = &gr.thermo[0], *b = &gr.thermo[gr.n_thermo - 1];
            const halox_md_thermo_t *ca = &cr.thermo[0], *cb = &cr.thermo[cr.n_thermo - 1];
            double drift = (b->etotal - a->etotal) / fabs(a->etotal);
            double cdrift = (cb->etotal - ca->etotal) / fabs(ca->etotal);
            printf("%s, %d rank(s): %d steps vs CPU: thermo max rel %.2e, positions max %.2e, "
                   "energy drift GPU %.3e CPU %.3e; %.4f ms/step\n",
                   transport, P, MD_TRAJ_STEPS, worst, dx, drift, cdrift, gr.summary.ms_per_step);
            CHECK_MSG(dx < 2e-3, "positions differ by %.3e", dx);
            CHECK_MSG(fabs(drift - cdrift) < 1e-4, "energy drift GPU %.3e vs CPU %.3e", drift,
                      cdrift);
            /* the skin holds (no atom moves skin / 2 between rebuilds here): no step on
             * outgrown lists, as the device counts them; the CPU engine does not count */
            CHECK_MSG(gr.summary.stale_steps == 0, "%lld steps on outgrown lists",
                      gr.summary.stale_steps);
            CHECK(cr.summary.stale_steps == -1);
            /* nvshmem-inline on several ranks with slabs wide enough not to forward atoms
             * (2 ranks here; 4 forward): every step exchanged inside the engine's kernels;
             * elsewhere none */
            const long long want = all_inline(transport, P, &cfg, gr.natoms) ? gr.summary.steps : 0;
            CHECK_MSG(gr.summary.inline_steps == want, "%lld steps exchanged inside the kernels",
                      gr.summary.inline_steps);
        }
    }
    halox_md_result_free(&cr);

    /* 3. the run without graphs (--no-graph) against part 2's, which ran its plain steps as
     * CUDA graphs wherever the transport can be captured (the default): the same to rounding
     * (the force kernels add the j forces with atomics, whose order varies from run to run, so
     * no two runs of the GPU engine are bit-identical; they agree as the GPU agrees with the
     * CPU) */
    halox_md_result_t gn;
    cfg.graph = HALOX_MD_GRAPH_OFF;
    if (gpu_run(&cfg, transport, P, 1, &gn) == 0 && g_rank == 0) {
        const halox_md_result_t gg = gr; /* the graph run: part 2's */
        double dx = 0, dth = 0;
        run_diff(&gn, &gg, &dx, &dth);
        CHECK_MSG(gn.summary.graph_steps == 0, "--no-graph: %lld graph steps",
                  gn.summary.graph_steps);
        CHECK(gn.summary.timed_steps == gn.summary.steps);
        printf("%s, %d rank(s): graphs: %lld of %lld steps as graphs, positions max %.2e, "
               "thermo max rel %.2e from the run without; %.4f ms/step (without: %.4f)\n",
               transport, P, gg.summary.graph_steps, gg.summary.steps, dx, dth,
               gg.summary.ms_per_step, gn.summary.ms_per_step);
        CHECK_MSG(dx < 2e-3 && dth < 2e-4, "graphs: positions %.3e, thermo %.3e", dx, dth);
        /* the steps outside the graph timed their parts (the split's sample) */
        CHECK(gg.summary.timed_steps == gg.summary.steps - gg.summary.graph_steps);
        /* nccl and NVSHMEM can be captured; mpi-staged and hybrid (host MPI inside) cannot */
        if (strcmp(transport, "mpi-staged") != 0 && strcmp(transport, "hybrid") != 0)
            CHECK_MSG(gg.summary.graph_steps >= gg.summary.steps / 2, "only %lld graph steps",
                      gg.summary.graph_steps);
        else
            CHECK(gg.summary.graph_steps == 0);
        /* after each rebuild the step is captured again and moves the executable to the new
         * capture: always on one rank (no exchange in the graph); on
         * several ranks when the captured exchange owns nothing in the graph (not NCCL's) and
         * the kernels line up (the same pulses, the same way of exchanging: N x 1 x 1 here) */
        /* ... and where the step's exchange takes nothing of the plan as values (one rank, or
         * nvshmem-inline) the graph outlives the rebuilds whose counts fit its spans
         * (HALOX_MD_GRAPH_SPAN): no capture after them (graph_kept) */
        if (gg.summary.graph_steps > 0) {
            const long long c = gg.summary.graph_captures, u = gg.summary.graph_updates;
            const long long kept = gg.summary.graph_kept;
            const int keeps = P == 1 || strcmp(transport, "nvshmem-inline") == 0;
            const long long launches = gg.summary.graph_launches;
            printf("%s, %d rank(s): graphs: %lld rebuilds, %lld captures, %lld updates, kept "
                   "across %lld rebuilds; %lld steps in %lld launches\n",
                   transport, P, gg.summary.rebuilds, c, u, kept, gg.summary.graph_steps, launches);
            CHECK(c >= 1 && u >= 0 && u <= c - 1 && kept >= 0);
            CHECK(launches >= 1 && launches <= gg.summary.graph_steps);
            /* one rank runs stretches of plain steps in one launch (two graphs per capture,
             * each instantiated once and updated at every later capture), several ranks one
             * step per launch */
            if (P == 1)
                CHECK_MSG(u == c - 2 && launches < gg.summary.graph_steps,
                          "one rank: %lld captures, %lld updates, %lld launches", c, u, launches);
            else
                CHECK(launches == gg.summary.graph_steps);
            if (P > 1 && strcmp(transport, "nccl") == 0)
                CHECK_MSG(u == 0, "nccl: %lld updates", u);
            else if (P > 1)
                CHECK_MSG(c < 2 || u >= 1, "%s: %lld captures, no update", transport, c);
            if (!keeps)
                CHECK_MSG(kept == 0, "%s: the graph kept across %lld rebuilds", transport, kept);
            /* a step follows every rebuild: it captured or kept the graph */
            CHECK_MSG(c + kept >= 2 || gg.summary.rebuilds < 3,
                      "%lld rebuilds but %lld captures and %lld kept", gg.summary.rebuilds, c,
                      kept);
            /* the counts of one rank hardly change, those of the ranks of nvshmem-inline (every
             * step inside the kernels) by a few migrating atoms: the spans hold */
            if (P == 1 || (keeps && all_inline(transport, P, &cfg, gg.natoms)))
                CHECK_MSG(kept >= 1 || gg.summary.rebuilds < 3,
                          "%s, %d rank(s): %lld rebuilds, %lld captures, none kept", transport, P,
                          gg.summary.rebuilds, c);
        }
        if (all_inline(transport, P, &cfg, gg.natoms)) /* the captured steps too */
            CHECK_MSG(gg.summary.inline_steps == gg.summary.steps,
                      "graphs: %lld of %lld steps exchanged inside the kernels",
                      gg.summary.inline_steps, gg.summary.steps);
    }
    halox_md_result_free(&gn);

    /* 4. rebuilds on the device against rebuilds through the host */
    halox_md_result_t gd;
    cfg.graph = HALOX_MD_GRAPH_AUTO;
    setenv("HALOX_MD_DEVICE_REBUILD", "1", 1);
    int drc = gpu_run(&cfg, transport, P, 1, &gd);
    setenv("HALOX_MD_DEVICE_REBUILD", "0", 1); /* parts 2 and 3 of the next transport */
    if (drc == 0 && g_rank == 0) {
        double dx = 0, dth = 0;
        run_diff(&gr, &gd, &dx, &dth);
        printf("%s, %d rank(s): rebuilds on the device: positions max %.2e, thermo max rel %.2e "
               "from host rebuilds; %lld rebuilds (host path %lld), %lld atoms migrated (host "
               "path %lld); %.4f ms/step (host path %.4f)\n",
               transport, P, dx, dth, gd.summary.rebuilds, gr.summary.rebuilds, gd.summary.migrated,
               gr.summary.migrated, gd.summary.ms_per_step, gr.summary.ms_per_step);
        CHECK_MSG(dx < 2e-3 && dth < 2e-4, "device rebuilds: positions %.3e, thermo %.3e", dx, dth);
        CHECK(gd.summary.rebuilds == gr.summary.rebuilds);
        CHECK_MSG(llabs(gd.summary.migrated - gr.summary.migrated) <= 8 &&
                      (P == 1 || gd.summary.migrated > 0),
                  "migrated %lld on the device, %lld through the host", gd.summary.migrated,
                  gr.summary.migrated);
    }
    halox_md_result_free(&gd);
    halox_md_result_free(&gr);
}

/* The LJ forces (unit epsilon and sigma, cut at rc, minimum image in a cube of edge L) of every
 * atom, by a double loop over all pairs, in double precision: the independent reference. */
static void brute_forces(const double *x, long long n, double L, double rc, double *f)
{
    memset(f, 0, sizeof(double) * 3 * (size_t)n);
    for (long long i = 0; i < n; i++)
        for (long long j = i + 1; j < n; j++) {
            double d[3], r2 = 0;
            for (int k = 0; k < 3; k++) {
                d[k] = x[3 * i + k] - x[3 * j + k];
                d[k] -= L * nearbyint(d[k] / L);
                r2 += d[k] * d[k];
            }
            if (r2 >= rc * rc)
                continue;
            const double s2 = 1.0 / r2, s6 = s2 * s2 * s2, fr = (48.0 * s6 - 24.0) * s6 * s2;
            for (int k = 0; k < 3; k++) {
                f[3 * i + k] += fr * d[k];
                f[3 * j + k] -= fr * d[k];
            }
        }
}

static void test_start_with_forces(const char *transport, int P)
{
    halox_md_config_t cfg;
    md_test_random(&cfg, 2048, 0.8, 11);
    cfg.cutoff = 2.5;
    md_test_lists(&cfg, 1.0, 10, 0);
    cfg.steps = 30;
    cfg.thermo_every = 10;
    cfg.transport = transport;
    cfg.device = HALOX_MD_DEVICE_GPU;
    char grid[32];
    snprintf(grid, sizeof grid, "%dx1x1", P);
    halox_grid_parse(grid, &cfg.grid);
    const long long n = cfg.natoms;
    const double L = cbrt((double)n / cfg.density);
    double *x0 = calloc(3 * (size_t)n, sizeof(double)), *f0 = calloc(3 * (size_t)n, sizeof(double));
    double *fb = calloc(3 * (size_t)n, sizeof(double)), *x1 = calloc(3 * (size_t)n, sizeof(double));
    CHECK(x0 && f0 && fb && x1);
    halox_comm_args_t args = {.real = HALOX_FLOAT, .stride = 3, .device = -1};
    halox_comm_t *comm = NULL;
    halox_md_system_t *sys = NULL;
    halox_md_t *md = NULL;
    halox_md_thermo_t mid;
    halox_status_t st = halox_comm_create(transport, &args, &comm);
    if (st == HALOX_OK)
        st = halox_md_system_create(&cfg, &sys);
    if (st == HALOX_OK)
        st = halox_md_create(&cfg, comm, sys, NULL, &md);
    if (st == HALOX_OK)
        st = halox_md_gather(md, x0, NULL, f0, 0);
    if (st == HALOX_OK)
        st = halox_md_run_until(md, 15);
    if (st == HALOX_OK)
        st = halox_md_thermo_now(md, &mid);
    if (st == HALOX_OK)
        st = halox_md_run_until(md, cfg.steps);
    if (st == HALOX_OK)
        st = halox_md_gather(md, x1, NULL, NULL, 0);
    CHECK_MSG(st == HALOX_OK, "%s: %s", transport, halox_last_error());
    halox_md_result_t cr;
    memset(&cr, 0, sizeof cr);
    if (st == HALOX_OK && g_rank == 0) {
        brute_forces(x0, n, L, cfg.cutoff, fb);
        double big = 0, df = 0;
        for (long long i = 0; i < 3 * n; i++) {
            big = fmax(big, fabs(fb[i]));
            df = fmax(df, fabs(f0[i] - fb[i]));
        }
        halox_status_t cst = cpu_run(&cfg, &cr);
        int nrec = 0;
        const halox_md_thermo_t *rec = halox_md_thermo_records(md, &nrec);
        double worst = 0, dx = 0;
        if (cst == HALOX_OK) {
            CHECK(nrec == cr.n_thermo);
            for (int k = 0; k < nrec && k < cr.n_thermo; k++) {
                const halox_md_thermo_t *g = &rec[k], *c = &cr.thermo[k];
                CHECK(g->step == c->step);
                double d = fmax(fmax(md_rel(g->pe, c->pe), md_rel(g->ke, c->ke)),
                                fmax(md_rel(g->etotal, c->etotal), md_rel(g->press, c->press)));
                CHECK_MSG(d < 2e-4, "start with forces: step %lld: GPU vs CPU rel %.3e", g->step,
                          d);
                worst = fmax(worst, d);
            }
            for (long long i = 0; i < 3 * n && cr.x; i++) {
                double e = fabs(x1[i] - cr.x[i]);
                dx = fmax(dx, fmin(e, fabs(L - e)));
            }
        }
        printf("%s, %d rank(s): start with forces (largest %.3g): step-0 forces max %.2e from "
               "the brute-force sum; 30 steps with a thermo_now at step 15: thermo max rel "
               "%.2e, positions max %.2e from the CPU engine\n",
               transport, P, big, df, worst, dx);
        CHECK_MSG(big > 1.0, "the start has forces (largest %.3g)", big);
        CHECK_MSG(df < 1e-4 * big, "step-0 forces differ from the brute-force sum by %.3e", df);
        CHECK_MSG(dx < 2e-3, "start with forces: positions differ by %.3e", dx);
    }
    halox_md_result_free(&cr);
    halox_md_destroy(md);
    halox_md_system_destroy(sys);
    halox_comm_destroy(comm);
    free(x0);
    free(f0);

    free(fb);
    free(x1);
}

/* 6. nvshmem-inline on several ranks with every step exchanged inside the kernels: lammps-lj with
 * 3 cells per rank along x (at least 8), so that no rank forwards atoms (part 2's 8 cells do on 4
 * ranks: narrower slabs than rc + skin), 100 steps against the CPU engine (thermo records within
 * 2e-4 relative, positions within 2e-3, as part 2). */
static void test_inline_wide(const char *transport, int P)
{
    if (strcmp(transport, "nvshmem-inline") != 0 || P < 2)
        return;
    halox_md_config_t cfg;
    trajectory_config(&cfg, 3 * P > 8 ? 3 * P : 8);
    halox_md_result_t gr, cr;
    memset(&cr, 0, sizeof cr);
    if (gpu_run(&cfg, transport, P, 1, &gr) == 0 && g_rank == 0 && cpu_run(&cfg, &cr) == HALOX_OK) {
        double dx, th;
        run_diff(&cr, &gr, &dx, &th);
        printf("%s, %d rank(s), %lld atoms: vs CPU positions max %.2e, thermo max rel %.2e; %lld "
               "of %lld steps inside the kernels; %.4f ms/step\n",
               transport, P, gr.natoms, dx, th, gr.summary.inline_steps, gr.summary.steps,
               gr.summary.ms_per_step);
        CHECK_MSG(dx < 2e-3 && th < 2e-4, "vs CPU: positions %.3e, thermo %.3e", dx, th);
        CHECK(all_inline(transport, P, &cfg, gr.natoms));
        CHECK_MSG(gr.summary.inline_steps == gr.summary.steps,
                  "%lld of %lld steps inside the kernels", gr.summary.inline_steps,
                  gr.summary.steps);
    }
    /* the same run with the overlap probe after its last step (whose "both" part exchanges
     * inside the kernels and waits for the returned forces before the local forces join): the
     * probe's times present and ordered, every probe exchange complete (a wait left pending
     * would hang or fail the final gather) and the run as the CPU's */
    halox_md_result_t pr;
    cfg.overlap_probe = 5;
    if (gpu_run(&cfg, transport, P, 1, &pr) == 0 && g_rank == 0 && cr.x) {
        double dx, th;
        run_diff(&cr, &pr, &dx, &th);
        const halox_md_summary_t *s = &pr.summary;
        printf("%s, %d rank(s), with the overlap probe: vs CPU positions max %.2e, thermo max rel "
               "%.2e; local %.1f us, halo %.1f us, both %.1f us, overlap %.1f %%\n",
               transport, P, dx, th, 1e3 * s->overlap_local_ms, 1e3 * s->overlap_halo_ms,
               1e3 * s->overlap_both_ms, s->overlap_percent);
        CHECK_MSG(dx < 2e-3 && th < 2e-4, "with the probe vs CPU: positions %.3e, thermo %.3e", dx,
                  th);
        CHECK(s->overlap_reps == 5);
        CHECK_MSG(s->overlap_local_ms > 0 && s->overlap_halo_ms > 0 && isfinite(s->overlap_both_ms),
                  "probe times %g %g %g ms", s->overlap_local_ms, s->overlap_halo_ms,
                  s->overlap_both_ms);
        /* the exchanges add work to the local forces' stream pair: never much less than it */
        CHECK_MSG(s->overlap_both_ms >= 0.5 * s->overlap_local_ms, "both %g ms, local %g ms",
                  s->overlap_both_ms, s->overlap_local_ms);
        CHECK_MSG(s->inline_steps == s->steps, "with the probe: %lld of %lld steps inline",
                  s->inline_steps, s->steps);
    }
    halox_md_result_free(&pr);
    halox_md_result_free(&gr);
    halox_md_result_free(&cr);
}

int main(int argc, char **argv)
{
    const char *only = NULL;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--transport") == 0 && i + 1 < argc)
            only = argv[++i];
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    /* parts 2 and 3 rebuild through the host, part 4 on the device (the default), part 5 as
     * the default does */
    setenv("HALOX_MD_DEVICE_REBUILD", "0", 1);
    int P;
    tm_mpi_init(&argc, &argv, &g_rank, &P);
    const int min_dev = tg_min_device_count();
    if (min_dev == 0)
        return tm_mpi_skip("no CUDA device visible");
    static const char *const names[] = {"mpi-staged",    "nccl",          "nvshmem-stream",
                                        "nvshmem-pulse", "nvshmem-fused", "nvshmem-inline",
                                        "hybrid"};
    for (size_t t = 0; t < sizeof names / sizeof names[0]; t++) {
        if ((only && strcmp(only, names[t]) != 0) || !halox_transport_available(names[t]))
            continue;
        /* NCCL allows one rank of a communicator per GPU: on a machine with fewer GPUs than
         * ranks the nccl transport refuses (tested in test_gpu_exchange), so skip it here */
        if (strcmp(names[t], "nccl") == 0 && min_dev < P) {
            ROOT_PRINTF("nccl with %d ranks on %d GPU(s): skipped (one rank per GPU needed)\n", P,
                        min_dev);
            continue;
        }
#ifdef HALOX_TEST_EMU_GPU
        (void)test_lammps_step0; /* 32000 atoms: too long over the emulation */
#else
        test_lammps_step0(names[t], P);
#endif
        test_trajectory(names[t], P);
        unsetenv("HALOX_MD_DEVICE_REBUILD"); /* part 5: the default */
        test_start_with_forces(names[t], P);
        test_inline_wide(names[t], P);
        setenv("HALOX_MD_DEVICE_REBUILD", "0", 1);
    }
    tm_mpi_finish();
    TEST_DONE();
}
