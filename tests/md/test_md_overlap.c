/* The overlap probe (cfg.overlap_probe) fills the summary and leaves no trace: a run with it ends
 * with the same bits as the same run without it: positions, velocities and forces of every atom
 * (the probe repeats force computations and lone force exchanges, which add the halo forces into
 * the home atoms once more, so the engine must recompute the forces after it), the thermo of the
 * final state and the run's halo byte count.
 *
 * Cases: float on 2x1x1 thread ranks ending on a plain step (20 steps, rebuilds every 10) and on a
 * rebuild step (21), double on 1 rank, NVT on 2x2x1. Each rank runs the step-by-step API in its
 * own thread, so that the final forces can be gathered. */
#include <pthread.h>
#include <stdlib.h>

#include "test_md_common.h"

typedef struct rank_arg {
    const halox_md_config_t *cfg;
    const halox_md_system_t *sys;
    halox_team_t *team;
    int rank;
    double *x, *v, *f; /* rank 0: the final state by id */
    halox_md_summary_t summary;
    halox_md_thermo_t thermo;
    halox_status_t st;
    char error[512];
} rank_arg_t;

static void *rank_main(void *p)
{
    rank_arg_t *a = p;
    halox_comm_args_t args = {.real = a->cfg->real,
                              .stride = 3,
                              .timeout_s = a->cfg->timeout_s,
                              .team = a->team,
                              .rank = a->rank};
    halox_comm_t *comm = NULL;
    halox_md_t *md = NULL;
    halox_status_t st = halox_comm_create("threads", &args, &comm);
    if (st == HALOX_OK)
        st = halox_md_create(a->cfg, comm, a->sys, NULL, &md);
    if (st == HALOX_OK)
        st = halox_md_run(md);
    if (st == HALOX_OK)
        st = halox_md_summary(md, &a->summary);
    if (st == HALOX_OK)
        st = halox_md_thermo_now(md, &a->thermo);
    if (st == HALOX_OK)
        st = halox_md_gather(md, a->x, a->v, a->f, 0);
    a->st = st;
    if (st != HALOX_OK) {
        snprintf(a->error, sizeof a->error, "rank %d: %s", a->rank, halox_last_error());
        halox_team_abort(a->team, a->rank, a->error);
    }
    halox_md_destroy(md);
    halox_comm_destroy(comm);
    return NULL;
}

typedef struct final_state {
    long long n;
    double *x, *v, *f;
    halox_md_summary_t summary;
    halox_md_thermo_t thermo;
} final_state_t;

static void final_free(final_state_t *s)
{
    free(s->x);
    free(s->v);
    free(s->f);
}

/* One run, a thread per rank; 0 on success. */
static int run(const halox_md_config_t *cfg, const halox_md_system_t *sys, final_state_t *out)
{
    int P = halox_grid_size(&cfg->grid);
    memset(out, 0, sizeof *out);
    out->n = sys->natoms;
    out->x = calloc(3 * (size_t)out->n, sizeof(double));
    out->v = calloc(3 * (size_t)out->n, sizeof(double));
    out->f = calloc(3 * (size_t)out->n, sizeof(double));
    rank_arg_t *ra = calloc((size_t)P, sizeof *ra);
    pthread_t *th = calloc((size_t)P, sizeof *th);
    halox_team_t *team = NULL;
    int bad = !out->x || !out->v || !out->f || !ra || !th;
    if (!bad)
        bad = halox_team_create(P, cfg->timeout_s, &team) != HALOX_OK;
    int started = 0;
    for (int r = 0; r < P && !bad; r++) {
        ra[r] = (rank_arg_t){.cfg = cfg, .sys = sys, .team = team, .rank = r};
        if (r == 0) {
            ra[r].x = out->x;
            ra[r].v = out->v;
            ra[r].f = out->f;
        }
        if (pthread_create(&th[r], NULL, rank_main, &ra[r]) != 0) {
            halox_team_abort(team, r, "thread start failed");
            bad = 1;
            break;
        }
        started++;
    }
    for (int r = 0; r < started; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < started; r++)
        if (ra[r].st != HALOX_OK) {
            fprintf(stderr, "run failed: %s: %s\n", halox_status_string(ra[r].st), ra[r].error);
            bad = 1;
        }
    if (!bad) {
        out->summary = ra[0].summary;
        out->thermo = ra[0].thermo;
    }
    halox_team_destroy(team);
    free(ra);
    free(th);
    if (bad)
        halox_test_failures++;
    return bad;
}

static int same_bits(const double *a, const double *b, long long n)
{
    return memcmp(a, b, sizeof(double) * 3 * (size_t)n) == 0;
}

static void probe_case(const char *what, halox_real_t real, const char *grid, long long steps,
                       halox_md_ensemble_t ensemble)
{
    halox_md_config_t cfg;
    md_test_config(&cfg, 5); /* 500 atoms */
    cfg.real = real;
    cfg.steps = steps;
    cfg.rebuild_every = 10;
    cfg.ensemble = ensemble;
    CHECK_OK(halox_grid_parse(grid, &cfg.grid));
    halox_md_system_t *sys = NULL;
    CHECK_OK(halox_md_system_create(&cfg, &sys));
    if (!sys)
        return;
    final_state_t plain, probed;
    int bad = run(&cfg, sys, &plain);
    cfg.overlap_probe = 7;
    bad |= run(&cfg, sys, &probed);
    if (!bad) {
        const halox_md_summary_t *s = &probed.summary;
        printf("%s (%s, %s, %lld steps): t_local %.4f ms, t_halo %.4f ms, t_both %.4f ms, "
               "overlap %.1f %% over %d repetitions\n",
               what, test_real_name(real), grid, steps, s->overlap_local_ms, s->overlap_halo_ms,
               s->overlap_both_ms, s->overlap_percent, s->overlap_reps);
        CHECK(plain.summary.overlap_reps == 0);
        CHECK(s->overlap_reps == 7);
        CHECK(isfinite(s->overlap_local_ms) && s->overlap_local_ms > 0);
        CHECK(isfinite(s->overlap_halo_ms) && s->overlap_halo_ms > 0);
        CHECK(isfinite(s->overlap_both_ms) && s->overlap_both_ms > 0);
        CHECK_NEAR(s->overlap_percent,
                   100.0 * (s->overlap_halo_ms + s->overlap_local_ms - s->overlap_both_ms) /
                       s->overlap_halo_ms,
                   1e-9 * fabs(s->overlap_percent) + 1e-12);
        CHECK_MSG(same_bits(plain.x, probed.x, plain.n), "%s: final positions differ", what);
        CHECK_MSG(same_bits(plain.v, probed.v, plain.n), "%s: final velocities differ", what);
        CHECK_MSG(same_bits(plain.f, probed.f, plain.n), "%s: final forces differ", what);
        CHECK_MSG(memcmp(&plain.thermo, &probed.thermo, sizeof plain.thermo) == 0,
                  "%s: final thermo differs: pe %.17g vs %.17g, press %.17g vs %.17g", what,
                  plain.thermo.pe, probed.thermo.pe, plain.thermo.press, probed.thermo.press);
        CHECK(plain.summary.halo_bytes == s->halo_bytes);
        CHECK(plain.summary.steps == s->steps && plain.summary.rebuilds == s->rebuilds);
    }
    final_free(&plain);
    final_free(&probed);
    halox_md_system_destroy(sys);
}

int main(void)
{
    probe_case("plain last step", HALOX_FLOAT, "2x1x1", 20, HALOX_MD_NVE);
    probe_case("rebuild last step", HALOX_FLOAT, "2x1x1", 21, HALOX_MD_NVE);
    probe_case("one rank", HALOX_DOUBLE, "1x1x1", 20, HALOX_MD_NVE);
    probe_case("nvt", HALOX_FLOAT, "2x2x1", 20, HALOX_MD_NVT);

    /* bad values are refused with a message */
    halox_md_config_t cfg;
    md_test_config(&cfg, 5);
    cfg.overlap_probe = -1;
    CHECK_STATUS(halox_md_config_check(&cfg), HALOX_ERR_INVALID_ARG);
    CHECK(strstr(halox_last_error(), "overlap probe") != NULL);
    TEST_DONE();
}
