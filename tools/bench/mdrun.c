/* MD runs of the water-density preset through the public engine API, one per transport and
 * size: the configuration, the ranks (threads of this process or this MPI process) and the
 * run. Shared by the md and overlap subcommands, which differ only in what they report. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "halox/md_options.h"

int bench_md_preset(const bench_opts_t *o, halox_md_config_t *cfg)
{
    halox_md_config_default(cfg);
    if (halox_md_config_preset(cfg, "water-density") != HALOX_OK)
        return bench_bad("%s", halox_last_error());
    /* the engine's own settings given (--skin, --rebuild-every, ...), after the preset: through
     * the engine's table, as halox-md applies them */
    halox_md_setup_t s;
    halox_md_setup_init(&s);
    s.cfg = *cfg;
    for (int k = 0; k < o->n_engine_opts; k++)
        if (halox_md_setup_option(&s, o->engine_opt[k][0], o->engine_opt[k][1]) != HALOX_OK)
            return bench_bad("%s", halox_last_error());
    *cfg = s.cfg;
    if (cfg->verlet_tolerance > 0) { /* the buffer for the drift, as halox-md chooses it */
        const unsigned keep =
            (halox_md_setup_given(&s, "--skin") ? HALOX_MD_VERLET_KEEP_SKIN : 0u) |
            (halox_md_setup_given(&s, "--rebuild-every") ? HALOX_MD_VERLET_KEEP_REBUILD : 0u);
        halox_md_verlet_t vb;
        if (halox_md_config_verlet(cfg, 0, keep, 0, &vb) != HALOX_OK)
            return bench_bad("%s", halox_last_error());
    }
    return 0;
}

static int setup_config(bench_md_case_t *c, const char *base)
{
    const bench_opts_t *o = c->o;
    halox_md_config_t *cfg = &c->cfg;
    if (bench_md_preset(o, cfg))
        return BENCH_USAGE;
    cfg->natoms = c->natoms;
    cfg->steps = o->steps;
    /* thermo as the preset takes it (every 100 steps, and the last): the timed steps' mean
     * temperature from those samples, at the cost of one energy sum per 100 steps (the GPU:
     * one wait for the device), under 0.2 % of the steps; the preset's equilibration runs
     * before step 0, outside the timings */
    cfg->transport = base;
    cfg->graph = o->graph;
    cfg->device = o->device;
    cfg->timeout_s = o->timeout_s;
    cfg->overlap_probe = c->overlap_probe;
    if (o->grid_set)
        cfg->grid = o->grid;
    else
        bench_make_grid(c->nranks, &cfg->grid);
    if (halox_grid_size(&cfg->grid) != c->nranks)
        return bench_bad("--grid %dx%dx%d has %d ranks but %s runs %d", cfg->grid.n[0],
                         cfg->grid.n[1], cfg->grid.n[2], halox_grid_size(&cfg->grid), c->label,
                         c->nranks);
    if (cfg->device == HALOX_MD_DEVICE_GPU && !halox_transport_on_gpu(base))
        return bench_bad("--device gpu runs on a GPU transport (mpi-staged, nccl, nvshmem-*), "
                         "not '%s'",
                         base);
    if (halox_md_config_check(cfg) != HALOX_OK)
        return bench_bad("%s", halox_last_error());
    return 0;
}

int bench_md_sane(const halox_md_result_t *res, long long natoms, long long steps)
{
    const halox_md_summary_t *s = &res->summary;
    int ok = s->natoms == natoms && s->steps == steps && res->n_thermo > 0;
    for (int i = 0; i < res->n_thermo; i++)
        ok &= isfinite(res->thermo[i].etotal) && isfinite(res->thermo[i].press);
    return ok;
}

/* This MPI process's rank of the run: 0 done, -1 refused by the machine (said), 1 failed. */
static int run_mpi(bench_md_case_t *c, halox_md_result_t *res)
{
    bench_rank_t who = {bench_world_rank(), bench_world_size(), NULL};
    halox_comm_t *comm = NULL;
    halox_md_hooks_t hooks;
    memset(&hooks, 0, sizeof hooks);
    halox_status_t st = bench_comm_create(&who, c->label, c->cfg.real, 3, c->o->timeout_s, &comm);
    if (st == HALOX_ERR_UNAVAILABLE) {
        if (who.rank == 0)
            printf("%-22s refused: %s\n", c->label, halox_last_error());
        return -1;
    }
    if (st == HALOX_OK)
        st = halox_md_rank_run(&c->cfg, comm, NULL, &hooks, res);
    else
        snprintf(res->error, sizeof res->error, "rank %d: %s", who.rank, halox_last_error());
    if (st != HALOX_OK) {
        /* "rank N: why": bench_rank_fail names the rank itself */
        const char *why = res->error, *after = strstr(why, ": ");
        if (!strncmp(why, "rank ", 5) && after)
            why = after + 2;
        char what[1200];
        snprintf(what, sizeof what, "%s: %s", c->label, why);
        bench_rank_fail(&who, what);
    }
    st = bench_mpi_case_end(st, c->o->timeout_s);
    halox_comm_destroy(comm);
    return st == HALOX_OK ? 0 : 1;
}

int bench_md_case(const bench_opts_t *o, const char *label, long long natoms, int overlap_probe,
                  bench_md_report_fn report)
{
    bench_md_case_t c = {.o = o, .label = label, .natoms = natoms, .overlap_probe = overlap_probe};
    char base[64];
    bench_base_name(label, base, sizeof base);
    if (!bench_transport_ranks(o, label, &c.nranks))
        return BENCH_OK;
    if (setup_config(&c, base))
        return BENCH_USAGE;
    halox_md_result_t res;
    memset(&res, 0, sizeof res);
    int rc = 0;
    bench_variant_env(label, 1);
    if (bench_label_caps(base).threads) {
        halox_md_hooks_t hooks;
        memset(&hooks, 0, sizeof hooks);
        if (halox_md_threads_run(&c.cfg, &hooks, &res) != HALOX_OK) {
            fprintf(stderr, "halox-bench: %s: %s\n", label, res.error);
            rc = 1;
        }
    } else {
        rc = run_mpi(&c, &res);
    }
    bench_variant_env(label, 0);
    if (rc == 0 && bench_world_rank() == 0)
        rc = report(&c, &res);
    halox_md_result_free(&res);
    return rc < 0 ? BENCH_OK : rc ? BENCH_FAILED : BENCH_OK;
}

int bench_md_all(const bench_opts_t *o, int overlap_probe, bench_md_report_fn report)
{
    int rc = BENCH_OK;
    for (int i = 0; i < o->n_atoms; i++)
        for (int t = 0; t < o->n_transports; t++) {
            int r = bench_md_case(o, o->transports[t], o->atoms[i], overlap_probe, report);
            if (r == BENCH_USAGE)
                return r;
            if (r != BENCH_OK)
                rc = r;
        }
    return rc;
}

void bench_md_record_start(bench_record_t *r, const bench_md_case_t *c,
                           const halox_md_result_t *res)
{
    const halox_md_summary_t *s = &res->summary;
    rec_init(r);
    rec_common(r, c->o, c->label, s->nranks, &s->grid);
    rec_str(r, "preset", "water-density");
    rec_str(r, "engine_options", c->o->engine_options); /* "" when the preset's alone */
    rec_int(r, "atoms", s->natoms);
    rec_str(r, "device", halox_md_config_device(&c->cfg) == HALOX_MD_DEVICE_GPU ? "gpu" : "cpu");
    rec_str(r, "real", s->real == HALOX_FLOAT ? "float" : "double");
    rec_int(r, "steps", s->steps);
    rec_int(r, "equilibrate_steps", s->equilibrate_steps);
    rec_num(r, "equilibrate_s", s->equilibrate_seconds);
    double tmean;
    const int nt = halox_md_result_mean_temp(res, &tmean);
    rec_num(r, "temp", c->cfg.temp);
    if (nt > 0)
        rec_num(r, "temp_mean", tmean);
    else
        rec_null(r, "temp_mean");
    rec_int(r, "temp_samples", nt);
}
